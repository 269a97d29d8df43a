#!/usr/bin/env bash
# pkg.deb: builds the .deb packages with cpack, installs them with dpkg -i, checks that
# /usr/bin/zerobox runs and that the man page, completions and docs are where Debian
# looks for them, then removes them with dpkg -r, also when a check fails.
#   deb.sh BUILD_DIR VERSION ZEROBOX
# Root only; skipped (77) without dpkg, or where a zerobox is installed already (it is not
# ours to replace or remove).
set -uo pipefail
build=$1 version=$2 zerobox=$3

[ "$(id -u)" -eq 0 ] || { echo "SKIP: dpkg -i needs root"; exit 77; }
for tool in dpkg dpkg-deb dpkg-shlibdeps cpack; do
  command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (apt-get install dpkg-dev)"; exit 77; }
done
for pkg in zerobox zerobox-dev; do
  if dpkg-query -W -f='${Status}' $pkg 2>/dev/null | grep -q 'ok installed'; then
    echo "SKIP: the package $pkg is installed on this machine already"
    exit 77
  fi
done
[ ! -e /usr/bin/zerobox ] || { echo "SKIP: /usr/bin/zerobox exists already"; exit 77; }

tmp=$(mktemp -d)
installed=0
cleanup() {
  if [ $installed -eq 1 ]; then
    dpkg -r zerobox-dev zerobox >/dev/null 2>&1 || echo "WARNING: dpkg -r zerobox-dev zerobox failed"
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

if ! cpack --config "$build/CPackConfig.cmake" -B "$tmp" >"$tmp/cpack.log" 2>&1; then
  cat "$tmp/cpack.log"
  echo "FAIL: cpack"
  exit 1
fi
arch=$(dpkg --print-architecture)
deb=$tmp/zerobox_${version}_$arch.deb
dev=$tmp/zerobox-dev_${version}_$arch.deb
for f in "$deb" "$dev"; do
  [ -f "$f" ] || { ls "$tmp"; echo "FAIL: cpack made no $(basename "$f")"; exit 1; }
done

field() { dpkg-deb -f "$1" "$2"; }
[ "$(field "$deb" Package)" = zerobox ] || fail "Package: $(field "$deb" Package)"
[ "$(field "$deb" Version)" = "$version" ] || fail "Version: $(field "$deb" Version), not $version"
[ -n "$(field "$deb" Maintainer)" ] || fail "no Maintainer"
[ -n "$(field "$deb" Description)" ] || fail "no Description"
# Depends comes from dpkg-shlibdeps: nothing for a static binary, the libraries otherwise.
depends=$(field "$deb" Depends)
ldd_out=$(ldd "$zerobox" 2>&1)
if grep -qE 'not a dynamic executable|statically linked' <<<"$ldd_out"; then
  [ -z "$depends" ] || fail "the binary is static, yet Depends: $depends"
else
  [ -n "$depends" ] || fail "the binary is dynamic, yet Depends is empty"
fi
echo "zerobox $version: Depends: ${depends:-(none: static binary)}; zerobox-dev: Depends: $(field "$dev" Depends)"

installed=1
if ! dpkg -i "$deb" "$dev" >"$tmp/dpkg.log" 2>&1; then
  cat "$tmp/dpkg.log"
  echo "FAIL: dpkg -i"
  exit 1
fi

out=$(/usr/bin/zerobox --version 2>&1)
[ "$out" = "zerobox $version" ] || fail "/usr/bin/zerobox --version printed '$out'"
for f in /usr/share/man/man1/zerobox.1.gz \
         /usr/share/bash-completion/completions/zerobox \
         /usr/share/zsh/vendor-completions/_zerobox \
         /usr/share/fish/vendor_completions.d/zerobox.fish \
         /usr/share/doc/zerobox/README.md \
         /usr/share/doc/zerobox/usage.md \
         /usr/share/doc/zerobox/cli-reference.md \
         /usr/include/zerobox/zerobox.hpp; do
  [ -s "$f" ] || fail "$f is not installed"
done
find /usr/lib -path '*/cmake/zerobox/zeroboxConfig.cmake' | grep -q . || fail "no zeroboxConfig.cmake under /usr/lib"
if command -v man >/dev/null; then
  [ "$(man -w zerobox 2>/dev/null)" = /usr/share/man/man1/zerobox.1.gz ] || fail "man -w zerobox: $(man -w zerobox 2>&1)"
  MANWIDTH=80 man zerobox 2>/dev/null | grep -q -- '--allow-write' || fail "man zerobox does not show --allow-write"
fi
/usr/bin/zerobox --quiet -- true || fail "/usr/bin/zerobox -- true exited $?"

if dpkg -r zerobox-dev zerobox >"$tmp/dpkg.log" 2>&1; then
  installed=0
else
  cat "$tmp/dpkg.log"
  fail "dpkg -r"
fi
[ ! -e /usr/bin/zerobox ] || fail "/usr/bin/zerobox is still there after dpkg -r"

if [ $failures -gt 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "ok: built, installed and removed zerobox_${version}_$arch.deb and zerobox-dev_${version}_$arch.deb"
