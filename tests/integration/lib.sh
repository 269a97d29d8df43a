# Assertion library for the integration tests; sourced by every t_*.sh.
# The runner (run-as.sh) exports ZEROBOX, PROBE, WORK, HOSTDIR, TESTDIR, MODE, HOME.
set -u
export LC_ALL=C
: "${ZEROBOX:?}" "${PROBE:?}" "${WORK:?}" "${HOSTDIR:?}" "${TESTDIR:?}" "${MODE:?}"

PY=/usr/bin/python3
T_NAME=$(basename "$0" .sh)
T_CHECKS=0
T_FAILED=0
# ZBT_KEEP_GOING=1: report every failing check instead of stopping at the first one.
: "${ZBT_KEEP_GOING:=}"
T_PIDS=()
T_CAP=$(mktemp -d "$WORK/.cap.XXXXXX")
RC=0 OUT= ERR= LAST_CMD=

# Unique token for process names, files and sockets.
UNIQ=$(( $(date +%s%N) % 1000000000 ))$$

_where() {
  local i
  for ((i = 1; i < ${#FUNCNAME[@]}; i++)); do
    if [ "${BASH_SOURCE[$i]}" != "${BASH_SOURCE[0]}" ]; then
      echo "$(basename "${BASH_SOURCE[$i]}"):${BASH_LINENO[$((i - 1))]}"
      return
    fi
  done
  echo "?"
}

fail() {
  {
    echo "FAIL [$MODE] $T_NAME ($(_where)): $*"
    if [ -n "$LAST_CMD" ]; then
      echo "  last command: $LAST_CMD"
      echo "  exit status:  $RC"
      echo "  stdout: $(printf '%s' "$OUT" | head -c 3000 | sed '2,$s/^/          /')"
      echo "  stderr: $(printf '%s' "$ERR" | head -c 3000 | sed '2,$s/^/          /')"
    fi
  } >&2
  if [ -n "$ZBT_KEEP_GOING" ]; then
    T_FAILED=$((T_FAILED + 1))
    return 1
  fi
  exit 1
}

skip() { # a test that cannot run here; never hides a failure already seen
  echo "SKIP [$MODE] $T_NAME: $*" >&2
  [ "$T_FAILED" -gt 0 ] && exit 1
  exit 77
}

ok() {
  T_CHECKS=$((T_CHECKS + 1))
  echo "ok $T_CHECKS - $*"
}

# run CMD...: runs a command with stdin from /dev/null; sets RC, OUT, ERR, LAST_CMD.
run() {
  LAST_CMD=$(printf '%q ' "$@")
  "$@" >"$T_CAP/out" 2>"$T_CAP/err" </dev/null
  RC=$?
  OUT=$(cat "$T_CAP/out")
  ERR=$(cat "$T_CAP/err")
}
# zb ARGS...: run zerobox with these arguments.
zb() { run "$ZEROBOX" "$@"; }
# zb_in DIR ARGS...: the same from the directory DIR (no subshell: RC/OUT/ERR are kept).
zb_in() {
  local d=$1
  shift
  pushd "$d" >/dev/null || fail "cannot cd to $d"
  zb "$@"
  LAST_CMD="(cd $(printf '%q' "$d") && $LAST_CMD)"
  popd >/dev/null || true
}

# check COND_STATUS DESCRIPTION FAILURE: ok if the status is 0, else fail.
_check() {
  if [ "$1" = 0 ]; then ok "$2"; else fail "$2: $3"; fi
}
expect_rc() { # WANT DESCRIPTION
  [ "$RC" = "$1" ]
  _check $? "$2" "expected exit status $1, got $RC"
}
expect_rc_in() { # "A B C" DESCRIPTION
  local x hit=1
  for x in $1; do
    [ "$RC" = "$x" ] && hit=0
  done
  _check $hit "$2" "expected exit status in {$1}, got $RC"
}
expect_rc_not() { # UNWANTED DESCRIPTION
  [ "$RC" != "$1" ]
  _check $? "$2" "exit status must not be $1"
}
# An escape attempt refused: EPERM, EACCES, EROFS (and EBUSY for mount points).
expect_refused() { expect_rc_in "1 13 30 16" "$1"; }
# The same through a tool (sh, cp, mv...): its exit status for a failed call, exactly,
# and on stderr the reason, one of those errnos (not a crash, a missing tool or 125).
expect_tool_refused() { # RC DESCRIPTION
  expect_rc "$1" "$2 (exit $1)"
  case $ERR in
    *"Operation not permitted"* | *"Permission denied"* | *"Read-only file system"* | *"Device or resource busy"*)
      ok "$2 (refused)" ;;
    *) fail "$2: expected EPERM, EACCES, EROFS or EBUSY on stderr" ;;
  esac
}
expect_eq() { # GOT WANT DESCRIPTION
  [ "$1" = "$2" ]
  _check $? "$3" "expected '$2', got '$1'"
}
expect_ne() { # GOT UNWANTED DESCRIPTION
  [ "$1" != "$2" ]
  _check $? "$3" "must not be '$2'"
}
expect_contains() { # HAYSTACK NEEDLE DESCRIPTION
  case $1 in
    *"$2"*) ok "$3" ;;
    *) fail "$3: expected to contain '$2'" ;;
  esac
}
expect_not_contains() { # HAYSTACK NEEDLE DESCRIPTION
  case $1 in
    *"$2"*) fail "$3: must not contain '$2'" ;;
    *) ok "$3" ;;
  esac
}
expect_out() { expect_eq "$OUT" "$1" "$2"; }
expect_out_empty() { expect_eq "$OUT" "" "$1"; }
expect_file_eq() { # FILE CONTENT DESCRIPTION
  if [ -f "$1" ]; then
    expect_eq "$(cat "$1")" "$2" "$3"
  else
    fail "$3: $1 does not exist on the host"
  fi
}
expect_absent() { # PATH DESCRIPTION
  if [ -e "$1" ] || [ -L "$1" ]; then
    rm -rf -- "$1" 2>/dev/null
    fail "$2: $1 exists on the host"
  else
    ok "$2"
  fi
}
expect_present() { # PATH DESCRIPTION
  [ -e "$1" ]
  _check $? "$2" "$1 does not exist on the host"
}
# Exactly one 'zerobox: error:' line on stderr, and N lines in all.
expect_one_error_line() { # TOTAL_LINES DESCRIPTION
  local n total
  n=$(printf '%s\n' "$ERR" | grep -c '^zerobox: error: ')
  total=$(printf '%s\n' "$ERR" | grep -c '')
  [ -z "$ERR" ] && total=0
  [ "$n" = 1 ] && [ "$total" = "$1" ]
  _check $? "$2" "expected one 'zerobox: error:' line and $1 stderr line(s) in all, got $n and $total"
}
expect_usage_error() { # DESCRIPTION: exit 2, one error line plus the --help hint
  expect_rc 2 "$1 (exit 2)"
  expect_one_error_line 2 "$1 (one error line + hint)"
  expect_contains "$ERR" "Try 'zerobox --help'" "$1 (hint)"
}
expect_setup_error() { # DESCRIPTION: exit 125, exactly one error line
  expect_rc 125 "$1 (exit 125)"
  expect_one_error_line 1 "$1 (one error line)"
}

# A listing with owners, modes, sizes, times, link targets and checksums.
tree_state() { # DIR
  (
    cd "$1" || exit 1
    find . -printf '%p|%y|%m|%s|%U|%G|%T@|%l\n' | sort
    find . -type f -exec sha256sum {} + | sort
  )
}

need() { # COMMAND...
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || skip "$c is not installed"
  done
}
need_python() { [ -x "$PY" ] || skip "$PY is not installed"; }

# Background host processes, killed when the script exits.
bg() { # CMD... : starts CMD in the background; its pid is in BG_PID
  "$@" </dev/null &
  BG_PID=$!
  T_PIDS+=("$BG_PID")
}
_cleanup() {
  local p
  for p in ${T_PIDS[@]+"${T_PIDS[@]}"}; do
    kill -KILL "$p" 2>/dev/null
  done
  for p in ${T_PIDS[@]+"${T_PIDS[@]}"}; do
    wait "$p" 2>/dev/null
  done
}
trap _cleanup EXIT

# wait_until SECONDS CMD...: polls CMD every 50 ms until it succeeds; fails after SECONDS.
wait_until() {
  local limit=$(($1 * 20)) i=0
  shift
  until "$@"; do
    i=$((i + 1))
    [ "$i" -ge "$limit" ] && return 1
    sleep 0.05
  done
  return 0
}
file_nonempty() { [ -s "$1" ]; }
# A process whose whole command line is exactly $1 (e.g. "sleep 4123").
no_process() { ! pgrep -x -f -- "$1" >/dev/null; }
has_process() { pgrep -x -f -- "$1" >/dev/null; }

# start_server KIND ARG: python helper servers (servers.py); sets SERVER_INFO.
start_server() {
  need_python
  local ready="$T_CAP/ready.$RANDOM$RANDOM"
  bg "$PY" "$TESTDIR/servers.py" "$1" "$2" "$ready"
  wait_until 20 file_nonempty "$ready" || fail "the $1 test server did not start"
  SERVER_INFO=$(cat "$ready")
}

# make_test_certs DIR SAN: a test CA (DIR/ca.pem, ca.key) and a leaf certificate for the
# names in SAN ("DNS:api.test,DNS:other.test"; DIR/leaf.pem, leaf.key), with what strict
# verifiers want (SKI, AKI, key usages). Fails the test if openssl cannot make them.
make_test_certs() {
  (
    cd "$1" || exit 1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem \
      -days 2 -subj "/CN=zbint test CA $UNIQ" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" &&
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout leaf.key -out leaf.csr \
        -subj "/CN=api.test" &&
      printf '%s\n' "subjectAltName=$2" "basicConstraints=CA:FALSE" \
        "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" \
        "subjectKeyIdentifier=hash" "authorityKeyIdentifier=keyid" >leaf.ext &&
      openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 -extfile leaf.ext
  ) >"$T_CAP/openssl.log" 2>&1 || fail "openssl could not make the test certificates: $(cat "$T_CAP/openssl.log")"
}

# make_dumb_git_repo SRC BARE: a repository at SRC with one commit (file.txt holding
# "zbint-git-$UNIQ"), cloned bare to BARE and prepared to be served over dumb HTTP.
make_dumb_git_repo() {
  local g=(git -c user.name=zbint -c user.email=zbint@example.invalid -c init.defaultBranch=main)
  {
    "${g[@]}" init -q "$1" &&
      echo "zbint-git-$UNIQ" >"$1/file.txt" &&
      "${g[@]}" -C "$1" add file.txt &&
      "${g[@]}" -C "$1" commit -qm "zbint-commit-$UNIQ" &&
      "${g[@]}" clone -q --bare "$1" "$2" &&
      "${g[@]}" -C "$2" update-server-info
  } >"$T_CAP/git.log" 2>&1 || fail "cannot create the test git repository: $(cat "$T_CAP/git.log")"
}

finish() {
  if [ "$T_FAILED" -gt 0 ]; then
    echo "# $T_NAME [$MODE]: $T_FAILED check(s) failed" >&2
    exit 1
  fi
  echo "# $T_NAME [$MODE]: all $T_CHECKS checks passed"
  exit 0
}

# --- Snapshot helpers (t_snapshot.sh) ---
# snap_state DIR: one line per entry below DIR (NUL-safe: newlines in names show as
# \001): type and mode for directories; type, mode, owner, size and mtime for files,
# FIFOs and sockets; owner, mtime and target for symlinks; then an md5 of each file.
# Self-contained (LC_ALL set here) so `declare -f snap_state` can run inside a sandbox.
snap_state() {
  (
    cd "$1" || exit 1
    find . -mindepth 1 \( -type d -printf '%p|d|%m\0' \) \
      -o \( -type l -printf '%p|l|%U:%G|%T@|%l\0' \) \
      -o -printf '%p|%y|%m|%U:%G|%s|%T@\0' | LC_ALL=C sort -z | tr '\n\0' '\001\n'
    find . -mindepth 1 -type f -exec md5sum -z {} + | LC_ALL=C sort -z | tr '\n\0' '\001\n'
  )
}
# snap_expect_state GOT WANT DESCRIPTION: like expect_eq, but a failure shows a diff.
snap_expect_state() {
  if [ "$1" = "$2" ]; then
    ok "$3"
  else
    fail "$3: tree differs (- want, + got):
$(diff <(printf '%s\n' "$2") <(printf '%s\n' "$1") | grep '^[<>]' | sed 's/^</-/; s/^>/+/' | head -40)"
  fi
}
# snap_id: the (short) session id from the last run's 'zerobox: session ID (...)' line.
snap_id() { printf '%s\n' "$ERR" | sed -n 's/^zerobox: session \([0-9a-f]\{1,\}\) (.*/\1/p' | tail -1; }
# snap_artifacts DIR: overlay internals under DIR (whiteouts: char 0:0 devices; any
# user.overlay.* / trusted.overlay.* xattr), one per line; empty when clean.
snap_artifacts() {
  find "$1" -type c -printf 'char device: %p\n'
  "$PY" - "$1" <<'PYEOF'
import os, sys
for root, dirs, files in os.walk(sys.argv[1]):
    for n in [""] + dirs + files:
        p = os.path.join(root, n) if n else root
        try:
            names = os.listxattr(p, follow_symlinks=False)
        except OSError:
            continue
        for x in names:
            if x.startswith(("user.overlay.", "trusted.overlay.")):
                print("xattr %s: %r" % (x, p))
PYEOF
}
