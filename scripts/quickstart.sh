#!/usr/bin/env bash
# From a fresh Debian 12 to a working zerobox: installs only what the binary needs
# (scripts/install-deps.sh build), builds only the binary (scripts/build.sh --binary),
# and runs scripts/demo.sh, which checks every step it shows. Exits non-zero if any of
# it fails. The test suite's dependencies and build are scripts/test.sh's.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
start=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)); }

echo "== [1/3] Debian packages for building zerobox"
"$root/scripts/install-deps.sh" build
echo "== [2/3] building the zerobox binary into $build ($(elapsed) so far)"
"$root/scripts/build.sh" --binary "$build"
echo "== [3/3] the demonstration ($(elapsed) so far)"
ZEROBOX=$build/zerobox "$root/scripts/demo.sh"
echo "quickstart: done in $(elapsed). The binary: $build/zerobox"
