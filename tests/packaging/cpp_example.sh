#!/usr/bin/env bash
# pkg.cpp_example: `cmake --install` of this build into a temporary prefix, then
# examples/cpp configured with CMAKE_PREFIX_PATH=that prefix (find_package(zerobox)),
# built, and run: its sandboxed command must write to its work directory only.
#   cpp_example.sh CMAKE BUILD_DIR EXAMPLE_DIR ZEROBOX
set -euo pipefail
cmake=$1 build=$2 example=$3 zerobox=$4

# The example runs a real sandbox; where this machine cannot make one, neither can it.
if ! "$zerobox" --quiet -- true 2>/dev/null; then
  echo "SKIP: zerobox cannot run a sandbox here: $("$zerobox" -- true 2>&1 | head -1)"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

step() {  # step LOG COMMAND...: runs it, showing its output only when it fails
  local log=$tmp/$1
  shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log"
    echo "FAIL: $*"
    exit 1
  fi
}

step install.log "$cmake" --install "$build" --prefix "$prefix"
for f in bin/zerobox include/zerobox/zerobox.hpp include/zerobox/policy.hpp; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f is not installed"; exit 1; }
done
config=$(find "$prefix" -name zeroboxConfig.cmake)
[ -n "$config" ] || { echo "FAIL: no zeroboxConfig.cmake installed"; exit 1; }
# Only the public headers are installed, and the package is relocatable: nothing in it
# points back into the build or source tree.
if find "$prefix/include" -type f | grep -v '/include/zerobox/[a-z_]*\.hpp$'; then
  echo "FAIL: files other than include/zerobox/*.hpp installed under include/"
  exit 1
fi
if grep -rl -e "$build" -e "$(cd "$example/../.." && pwd)/src" "$(dirname "$config")"; then
  echo "FAIL: the installed CMake package refers to the build or source tree"
  exit 1
fi

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
step configure.log "$cmake" -S "$example" -B "$tmp/build" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix"
step build.log "$cmake" --build "$tmp/build"

set +e
out=$("$tmp/build/zerobox_example" 2>&1)
rc=$?
set -e
echo "$out"
ok=1
[ $rc -eq 0 ] || { echo "FAIL: zerobox_example exited $rc"; ok=0; }
for want in 'exit status: 0' 'result.txt: hello from the sandbox' 'home: read-only' 'network: loopback only'; do
  grep -qxF "$want" <<<"$out" || { echo "FAIL: no line '$want'"; ok=0; }
done
# A command that fails reports its own status.
out=$("$tmp/build/zerobox_example" /bin/sh -c 'exit 7' 2>&1 || true)
grep -qxF 'exit status: 7' <<<"$out" || { echo "$out"; echo "FAIL: exit 7 not reported"; ok=0; }
[ $ok -eq 1 ] && echo "ok: installed to $prefix, built examples/cpp against it and ran it"
[ $ok -eq 1 ]
