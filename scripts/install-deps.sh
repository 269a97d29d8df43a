#!/usr/bin/env bash
# Installs every Debian 12 package that building, testing and benchmarking zerobox needs.
# Idempotent: packages already present are left alone, and apt-get update runs only when
# something is missing.
set -euo pipefail

build=(build-essential cmake ninja-build pkg-config
       libmount-dev libxxhash-dev libsqlite3-dev sqlite3 libcli11-dev doctest-dev
       libseccomp-dev libssl-dev libtomlplusplus-dev nlohmann-json3-dev
       libasio-dev libdtl-dev zlib1g-dev
       ca-certificates)  # the trust bundle a run with secrets shows inside the sandbox
# Tests: setpriv/script (util-linux, bsdutils), a pty, python3 for probe servers, iproute2.
# libFuzzer needs clang 17+ (clang 14 cannot compile std::expected from libstdc++ 12).
test=(util-linux bsdutils python3 curl iproute2 procps psmisc git openssl clang-19 libclang-rt-19-dev dpkg-dev file man-db groff-base zsh fish)
# Benchmarks: the peers and the measuring tools (srt and codex come from npm: docs/performance.md).
bench=(bubblewrap firejail hyperfine time strace socat ripgrep)

want=("${build[@]}" "${test[@]}" "${bench[@]}")
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
