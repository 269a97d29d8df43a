#!/usr/bin/env bash
# Installs what every test needs (scripts/install-deps.sh test), builds zerobox with
# warnings as errors, and runs every test: the unit tests, the integration tests (as root
# and as uid 65534), the fuzzers, the SDKs' suites and the packaging tests, then an
# ASan+UBSan build of the unit tests and of the proxy's and create guard's integration
# tests. A skipped test fails the run (ZEROBOX_ALLOW_SKIPS=1 lists them and goes on):
# run as root, or the root-mode tests skip.
#
# Environment: BUILD_DIR, ASAN_BUILD_DIR, ZEROBOX_SKIP_SANITIZERS=1,
# ZEROBOX_TEST_TIMEOUT_FACTOR and ZEROBOX_RACE_ROUNDS (tests/integration/scaling).
# The race loops at full strength: ctest --test-dir build -C stress -L stress.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
start=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)); }

echo "== dependencies"
"$root/scripts/install-deps.sh" test

build=${BUILD_DIR:-$root/build}
echo "== build ($(elapsed) so far)"
"$root/scripts/build.sh" "$build" -DZEROBOX_WERROR=ON

skipped=()
# run_ctest BUILD_DIR ARGS...: CTest, then the tests it skipped into $skipped.
run_ctest() {
  local dir=$1 log rc=0
  shift
  log=$(mktemp)
  ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" "$@" 2>&1 | tee "$log" || rc=$?
  # Whole names: the unit tests' have spaces in them.
  mapfile -t -O "${#skipped[@]}" skipped < <(sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \(.*[^ ]\) \.*\*\*\*Skipped.*/\1/p' "$log")
  rm -f "$log"
  return "$rc"
}

echo "== tests ($(elapsed) so far)"
run_ctest "$build"

if [ "${ZEROBOX_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== unit tests under ASan+UBSan ($(elapsed) so far)"
  asan=${ASAN_BUILD_DIR:-$root/build-asan}
  log=$(mktemp)
  if ! "$root/scripts/build.sh" "$asan" -DZEROBOX_SANITIZE=ON -DZEROBOX_WERROR=ON -DCMAKE_BUILD_TYPE=Debug >"$log" 2>&1; then
    cat "$log"
    echo "test.sh: the ASan+UBSan build failed (above)" >&2
    exit 1
  fi
  rm -f "$log"
  # Excluded here (it runs, and passes, in the normal build above): with the descriptor
  # table full, UBSan's own runtime cannot check a vptr. It probes the object's memory by
  # writing it into a new pipe (sanitizer_common's IsAccessibleMemoryRange), pipe() fails
  # with EMFILE, and it reports "object has invalid vptr, memory cannot be printed" at the
  # first virtual call, in Asio's scheduler. UBSan suppressions (vptr_check by type or by
  # file) did not silence it here.
  run_ctest "$asan" -R '^unit\.' -E 'running out of file descriptors'
  echo "== the proxy's and the create guard's integration tests with the ASan+UBSan zerobox ($(elapsed) so far)"
  # The proxy, TLS interception and the scrubber under real traffic, and the create guard
  # under guard_attacks.py, as root and as uid 65534 (a sanitizer report aborts zerobox,
  # or the sandbox's init, and fails the test). Their timeouts are three times the normal
  # build's (tests/integration/scaling).
  run_ctest "$asan" -R '^int\.root\.(netfilter|secrets)$|^int\.(root|user)\.protect$'
fi

if [ ${#skipped[@]} -gt 0 ]; then
  echo "test.sh: ${#skipped[@]} test(s) skipped (their output says why):"
  printf '  %s\n' "${skipped[@]}"
  [ "${ZEROBOX_ALLOW_SKIPS:-0}" = 1 ] || exit 1
fi
echo "test.sh: every test passed in $(elapsed)"
