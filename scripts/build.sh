#!/usr/bin/env bash
# Configures and builds zerobox.
# Usage: scripts/build.sh [--binary] [BUILD_DIR] [extra cmake args...]
#   --binary   build only the zerobox binary (the target `zerobox`), not the unit tests,
#              the test probes, the C++ API archive or the man page and completions.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=()
if [ "${1-}" = --binary ]; then
  target=(--target zerobox)
  shift
fi
build=${1:-$root/build}
shift || true
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
elif [ $# -gt 0 ]; then
  cmake -S "$root" -B "$build" "$@" >/dev/null
fi
cmake --build "$build" -j"$(nproc)" "${target[@]}"
