#!/usr/bin/env bash
# bench/sdk.sh - what the SDKs add on top of the zerobox CLI for a trivial command
# (`true`, no policy flags).
#
# Usage: bash bench/sdk.sh           (~30 s with the defaults; root or not)
#        QUICK=1 bash bench/sdk.sh   (smoke run, a few seconds)
#
# Env knobs:
#   ZEROBOX=path      binary under test (else $ZEROBOX_BIN, else build/zerobox of this repo)
#   RUNS=200 WARMUP=10  timed / untimed calls per row (QUICK=1: RUNS=20 WARMUP=2)
#   OUT=file          also write the report to this file
#   RESULTS_ROOT=/var/tmp/zerobox-bench-sdk   raw data goes to $RESULTS_ROOT/<UTC stamp>/
#
# Rows. Interpreter and runtime start-up is in none of them: each SDK is timed by a loop
# inside one long-lived process, next to the CLI started from that same process, the two
# interleaved and their order rotated every iteration.
#   zerobox -- true    hyperfine -N (the CLI on its own)
#   python-cli         subprocess.run([zerobox, "--", "true"]) from bench/sdk/py_bench.py
#   python-sync        zerobox.Sandbox().run("true")
#   python-async       await zerobox.aio.AsyncSandbox().run("true"), one event loop
#   typescript-cli/-sdk  bench/sdk/ts_bench.mjs: child_process.spawn vs Sandbox.run, using
#                      sdks/typescript/dist/esm/index.js (skipped: not built, if missing)
#   rust-cli/-sdk      bench/sdk/rust: std::process::Command vs zerobox::Sandbox::run,
#                      built with `cargo build --release --offline` in the results dir
#                      (skipped: not built, if there is no cargo or it does not build)
# Overhead of an SDK = its median minus the median of the CLI from the same process (and
# the median of the per-iteration differences); also against hyperfine's median.
# Exit status: 0 if every row that ran succeeded; 1 if a driver failed; 2 for a missing
# tool or a bad setting.
set -u -o pipefail

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
ZB=${ZEROBOX:-${ZEROBOX_BIN:-$REPO/build/zerobox}}
RUNS=${RUNS:-200}; WARMUP=${WARMUP:-10}
if [ "${QUICK:-0}" = 1 ]; then RUNS=20; WARMUP=2; fi
OUT=${OUT:-}
RESULTS_ROOT=${RESULTS_ROOT:-/var/tmp/zerobox-bench-sdk}

die() { echo "bench/sdk.sh: $*" >&2; exit 2; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

command -v hyperfine >/dev/null 2>&1 || die "'hyperfine' not found: apt-get install hyperfine"
# a real interpreter, not a pyenv shim: the same one every time
PY=/usr/bin/python3; [ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || die "python3 not found: apt-get install python3"
case $RUNS$WARMUP in *[!0-9]*) die "RUNS and WARMUP must be integers";; esac
[ "$RUNS" -ge 2 ] || die "RUNS must be >= 2"
[ -x "$ZB" ] || die "ZEROBOX=$ZB is not an executable (build it, or set ZEROBOX=path)"
ZB=$(readlink -f "$ZB")
export ZEROBOX_BIN=$ZB

RES=$RESULTS_ROOT/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RES" || die "cannot create $RES"
cd "$RES" || exit 2
status=0
skipped=()

log "hyperfine: $ZB -- true"
hyperfine -N --style none --warmup "$WARMUP" --runs "$RUNS" --export-json "$RES/cli.json" \
  "$ZB -- true" >"$RES/hyperfine.log" 2>&1 || { cat "$RES/hyperfine.log" >&2; die "hyperfine failed"; }

log "python: $PY bench/sdk/py_bench.py"
if ! "$PY" "$HERE/sdk/py_bench.py" "$RUNS" "$WARMUP" >"$RES/python.tsv" 2>"$RES/python.log"; then
  echo "python: FAILED (see $RES/python.log)" >&2; cat "$RES/python.log" >&2; status=1
fi

TS_INDEX=$REPO/sdks/typescript/dist/esm/index.js
if command -v node >/dev/null 2>&1 && [ -f "$TS_INDEX" ]; then
  log "typescript: node bench/sdk/ts_bench.mjs"
  if ! node "$HERE/sdk/ts_bench.mjs" "$TS_INDEX" "$RUNS" "$WARMUP" >"$RES/typescript.tsv" 2>"$RES/typescript.log"; then
    echo "typescript: FAILED (see $RES/typescript.log)" >&2; tail -5 "$RES/typescript.log" >&2; status=1
    rm -f "$RES/typescript.tsv"
  fi
else
  skipped+=("typescript: skipped: not built ($TS_INDEX or node missing; build: cd sdks/typescript && npm run build)")
fi

if command -v cargo >/dev/null 2>&1 && [ -f "$REPO/sdks/rust/Cargo.toml" ]; then
  # built from a copy in the results dir, so no Cargo.lock or target/ lands in the repo
  cp -r "$HERE/sdk/rust" "$RES/rust-bench"
  sed -i "s|path = \"../../../sdks/rust\"|path = \"$REPO/sdks/rust\"|" "$RES/rust-bench/Cargo.toml"
  log "rust: cargo build --release --offline (bench/sdk/rust)"
  if cargo build --release --offline --quiet --manifest-path "$RES/rust-bench/Cargo.toml" \
       --target-dir "$RES/rust-target" >"$RES/rust-build.log" 2>&1; then
    if ! "$RES/rust-target/release/zerobox-sdk-bench" "$RUNS" "$WARMUP" >"$RES/rust.tsv" 2>"$RES/rust.log"; then
      echo "rust: FAILED (see $RES/rust.log)" >&2; tail -5 "$RES/rust.log" >&2; status=1
      rm -f "$RES/rust.tsv"
    fi
  else
    skipped+=("rust: skipped: not built (cargo build failed, see $RES/rust-build.log)")
  fi
else
  skipped+=("rust: skipped: not built (no cargo or no sdks/rust/Cargo.toml)")
fi

report() {
  echo "## SDK overhead ($(date -u '+%Y-%m-%d %H:%M') UTC, $(cd "$REPO" && git describe --always --dirty 2>/dev/null || echo '?'))"
  echo
  echo "\`RUNS=$RUNS WARMUP=$WARMUP bash bench/sdk.sh\`; binary $ZB; $(nproc) CPUs, kernel $(uname -r);"
  echo "$("$PY" --version 2>&1), node $(node --version 2>/dev/null || echo 'n/a'), $(rustc --version 2>/dev/null || echo 'rustc n/a');"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). Raw data: $RES"
  echo
  "$PY" "$HERE/sdk/summarize.py" "$RES" || status=1
  for s in "${skipped[@]}"; do echo "- $s"; done
}
if [ -n "$OUT" ]; then report | tee "$OUT"; else report; fi
exit $status
