#!/usr/bin/env bash
# bench/interleaved.sh - start-up of zerobox against the bare command, unshare and
# bubblewrap, every row sampled round-robin (bench/interleave.c) instead of one
# hyperfine run after another: on a shared VM a slow stretch then hits every row alike,
# and the paired column (each run minus the bare run of the same round) removes most of
# the drift. The rows are bench/run.sh's.
#
# Usage: bash bench/interleaved.sh   (as root; about a minute at RUNS=300)
#   RUNS=300       rounds (each runs every row once)
#   ZEROBOX=path   binary under test (default: build/zerobox of this repository)
#   UNPRIV=1       also the same rows as uid 65534 (setpriv), bare included; 0 = off
#   COPY_BIN=1     run a copy of ZEROBOX taken at start; 0 = run it in place. The linker's
#                  output file starts about 0.5 ms slower on this VM's kernel (6.18, ext4)
#                  than a copy of it (cp) on the same file system, measured as uid 65534:
#                  exec maps it from the page cache as the linker wrote it
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZEROBOX=${ZEROBOX:-$root/build/zerobox}
RUNS=${RUNS:-300}
UNPRIV=${UNPRIV:-1}
COPY_BIN=${COPY_BIN:-1}
BWRAP=${BWRAP:-$(command -v bwrap || true)}
[ -x "$ZEROBOX" ] || { echo "interleaved.sh: $ZEROBOX is missing (build first)" >&2; exit 1; }
[ -x "$BWRAP" ] || { echo "interleaved.sh: bwrap is missing (scripts/install-deps.sh)" >&2; exit 1; }
work=$(mktemp -d /var/tmp/zerobox-interleave.XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/interleave" "$root/bench/interleave.c"
shown=$ZEROBOX
if [ "$COPY_BIN" = 1 ]; then
  cp "$ZEROBOX" "$work/zerobox"
  ZEROBOX=$work/zerobox
fi
TRUE=/bin/true
allow=$work/allow
mkdir -p "$allow"
chmod 755 "$work"
chmod 777 "$allow"
UNSHARE=$(command -v unshare)

rows() { # PREFIX...: the rows, each prefixed (setpriv for uid 65534)
  local p=("$@")
  printf '%s\0' "${p[@]}" "$TRUE" ":::"
  printf '%s\0' "${p[@]}" "$UNSHARE" --user --map-root-user --mount --net --ipc --uts --pid --fork --kill-child -- "$TRUE" ":::"
  printf '%s\0' "${p[@]}" "$BWRAP" --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-all --die-with-parent -- "$TRUE" ":::"
  printf '%s\0' "${p[@]}" "$ZEROBOX" -- "$TRUE" ":::"
  printf '%s\0' "${p[@]}" "$ZEROBOX" --allow-net -- "$TRUE" ":::"
  # A writable directory, as in bench/run.sh: bwrap binds it; zerobox also protects the
  # names inside it (the create guard runs), which --no-protect leaves out.
  printf '%s\0' "${p[@]}" "$BWRAP" --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind "$allow" "$allow" --unshare-all --die-with-parent -- "$TRUE" ":::"
  printf '%s\0' "${p[@]}" "$ZEROBOX" --allow-write="$allow" -- "$TRUE" ":::"
  printf '%s\0' "${p[@]}" "$ZEROBOX" --no-protect --allow-write="$allow" -- "$TRUE"
}

echo "zerobox: $shown ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')); $RUNS rounds; $(date -u +%FT%TZ)$([ "$COPY_BIN" = 1 ] && echo "; run as a copy, $ZEROBOX")"
echo
echo "### \`true\` as $(id -un)"
echo
mapfile -d '' args < <(rows)
"$work/interleave" "$RUNS" "${args[@]}"
if [ "$UNPRIV" = 1 ] && command -v setpriv >/dev/null; then
  echo
  echo "### \`true\` as uid 65534 (setpriv --reuid=65534 --regid=65534 --clear-groups in every row)"
  echo
  mapfile -d '' args < <(rows "$(command -v setpriv)" --reuid=65534 --regid=65534 --clear-groups)
  "$work/interleave" "$RUNS" "${args[@]}"
fi
