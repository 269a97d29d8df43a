#!/usr/bin/env bash
# pkg.wheel: builds the Python wheel with the binary inside (scripts/sdk-packages.sh
# wheel), installs it with pip into an empty venv from the file alone, and runs the
# `zerobox` command and the SDK from there, with no ZEROBOX_BIN and no build directory
# on PATH:
#   wheel.sh ZEROBOX
# Skipped (77) without Debian's python3 with venv, pip, setuptools and wheel
# (python3-venv python3-pip python3-setuptools python3-wheel).
set -uo pipefail
zerobox=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
python=/usr/bin/python3

[ -x $python ] || { echo "SKIP: $python is missing"; exit 77; }
for module in venv ensurepip pip setuptools wheel; do
  $python -c "import $module" 2>/dev/null ||
    { echo "SKIP: $python has no $module module (apt-get install python3-venv python3-pip python3-wheel)"; exit 77; }
done
command -v objcopy >/dev/null || { echo "SKIP: objcopy is not installed (binutils)"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
clean_env=(env -u ZEROBOX_BIN -u PYTHONPATH PATH=/usr/bin:/bin "HOME=$tmp/home")
mkdir -p "$tmp/home"

PYTHON=$python "$root/scripts/sdk-packages.sh" --no-build "$zerobox" "$tmp/out" wheel >"$tmp/pack.log" 2>&1 ||
  { cat "$tmp/pack.log"; echo "FAIL: scripts/sdk-packages.sh wheel"; exit 1; }
version=$("$zerobox" --version | awk '{print $2}')
machine=$(uname -m)
wheel=$tmp/out/zerobox-$version-py3-none-manylinux_2_17_$machine.musllinux_1_1_$machine.whl
[ -f "$wheel" ] || { ls "$tmp/out"; echo "FAIL: no $wheel"; exit 1; }

venv=$tmp/venv
"${clean_env[@]}" $python -m venv "$venv" >"$tmp/venv.log" 2>&1 || { cat "$tmp/venv.log"; echo "FAIL: python3 -m venv"; exit 1; }
"${clean_env[@]}" "$venv/bin/pip" install --quiet --no-index "$wheel" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "pip install $wheel"; }
[ -x "$venv/bin/zerobox" ] || fail "the wheel installed no executable bin/zerobox"

out=$("${clean_env[@]}" "$venv/bin/zerobox" --version 2>&1)
[ "$out" = "zerobox $version" ] || fail "venv/bin/zerobox --version printed '$out'"
# An activated venv: zerobox is on PATH.
out=$(env -u ZEROBOX_BIN PATH="$venv/bin:/usr/bin:/bin" HOME="$tmp/home" zerobox -- sh -c 'echo on PATH' 2>&1)
[ "$out" = "on PATH" ] || fail "zerobox from the venv's PATH printed '$out'"

out=$("${clean_env[@]}" "$venv/bin/python" - "$venv" <<'PY' 2>&1
import sys
import zerobox
bin = zerobox.find_binary()
if bin != sys.argv[1] + "/bin/zerobox":
    sys.exit(f"found {bin}")
r = zerobox.Sandbox().run("sh", ["-c", "echo python: $((6 * 7))"])
print(r.exit_code, r.text().strip())
PY
)
[ "$out" = "0 python: 42" ] || fail "the SDK from the venv: '$out'"

# The venv's python without activating it, and a PATH with no zerobox: the SDK still
# finds the wheel's binary, never one elsewhere.
out=$(cd "$tmp" && env -u ZEROBOX_BIN PATH=/nonexistent HOME="$tmp/home" "$venv/bin/python" -c \
  'import zerobox; print(zerobox.find_binary())' 2>&1)
[ "$out" = "$venv/bin/zerobox" ] || fail "with PATH=/nonexistent the SDK found '$out'"

# As an unprivileged user (uid 65534, no capabilities): the user-namespace path.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  chmod 0755 "$tmp"
  out=$(cd "$tmp" && setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
    "${clean_env[@]}" "$venv/bin/python" -c \
    'import zerobox; print(zerobox.Sandbox().run("sh", ["-c", "echo user: $((6 * 7))"]).text().strip())' 2>&1)
  [ "$out" = "user: 42" ] || fail "the SDK from the venv as uid 65534: '$out'"
fi

if [ $failures -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "wheel: $(basename "$wheel") installs into a venv and runs"
