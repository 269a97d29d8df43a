#!/usr/bin/env bash
# Builds the packages that ship the zerobox binary with an SDK:
#   scripts/sdk-packages.sh [--no-build] ZEROBOX OUTDIR [npm|wheel|all]
#     npm    OUTDIR/zerobox-VERSION.tgz (the TypeScript SDK and the `zerobox` command) and
#            OUTDIR/zerobox-linux-ARCH-VERSION.tgz (the binary), which the first names
#            in its optionalDependencies; `npm install` of both, or of the first from a
#            registry that has both, gives a working `zerobox` and SDK.
#     wheel  OUTDIR/zerobox-VERSION-py3-none-PLATFORM.whl: the Python SDK with the binary,
#            installed as the environment's bin/zerobox.
# ZEROBOX is the binary to ship (a build's, such as build/zerobox); it is copied without
# its symbols. The TypeScript SDK is installed and built first (npm ci from
# package-lock.json when node_modules does not match it), unless --no-build says that
# sdks/typescript/dist is built already (as CTest's sdk.typescript.setup leaves it). The wheel is built with Debian's pip, setuptools and
# wheel (python3-pip python3-setuptools python3-wheel), without reaching an index:
# $PYTHON, else /usr/bin/python3.
set -euo pipefail

usage() { echo "usage: $0 [--no-build] ZEROBOX OUTDIR [npm|wheel|all]" >&2; exit 2; }
build_ts=1
if [ "${1-}" = --no-build ]; then
  build_ts=0
  shift
fi
[ $# -ge 2 ] && [ $# -le 3 ] || usage
zerobox=$1 out=$2 what=${3:-all}
case $what in npm | wheel | all) ;; *) usage ;; esac
[ -f "$zerobox" ] && [ -x "$zerobox" ] || { echo "sdk-packages: $zerobox: not an executable file" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

case $(uname -m) in
  x86_64) npm_arch=x64 ;;
  aarch64) npm_arch=arm64 ;;
  *) echo "sdk-packages: no package for $(uname -m)" >&2; exit 2 ;;
esac

# The shipped binary: without symbols or debug information (a few MB instead of 50).
ship_binary() {
  if command -v objcopy >/dev/null; then
    objcopy --strip-all "$zerobox" "$1"
  else
    cp "$zerobox" "$1"
  fi
  chmod 0755 "$1"
}

build_npm() {
  local sdk=$root/sdks/typescript version platform_pkg
  if [ $build_ts = 1 ]; then
    sh "$sdk/scripts/ctest.sh" setup >"$stage/npm-setup.log" 2>&1 || {
      cat "$stage/npm-setup.log" >&2
      echo "sdk-packages: installing or building the TypeScript SDK failed" >&2
      exit 1
    }
  fi
  [ -f "$sdk/dist/esm/index.js" ] && [ -f "$sdk/dist/cjs/bin.js" ] ||
    { echo "sdk-packages: $sdk/dist is not built (run without --no-build)" >&2; exit 1; }
  version=$(node -p 'require(process.argv[1]).version' "$sdk/package.json")
  platform_pkg=zerobox-linux-$npm_arch

  # The platform package: the binary and a manifest that lets npm install it only here.
  mkdir -p "$stage/$platform_pkg"
  ship_binary "$stage/$platform_pkg/zerobox"
  node - "$stage/$platform_pkg" "$platform_pkg" "$version" "$npm_arch" <<'JS'
const [dir, name, version, cpu] = process.argv.slice(2);
const fs = require("node:fs");
const manifest = {
  name, version,
  description: `The zerobox binary for Linux ${cpu} (static: glibc and musl alike), for the zerobox package`,
  os: ["linux"], cpu: [cpu],
  files: ["zerobox"],
  preferUnplugged: true,
};
fs.writeFileSync(`${dir}/package.json`, JSON.stringify(manifest, null, 2) + "\n");
fs.writeFileSync(`${dir}/README.md`,
  `# ${name}\n\nThe zerobox binary for Linux ${cpu}. Install \`zerobox\`, which depends on it.\n`);
JS

  # The SDK: the built dist/esm and dist/cjs, with a manifest naming every platform
  # package as optional (npm installs the one whose os and cpu match) and without the
  # development-only fields.
  mkdir -p "$stage/zerobox/dist"
  cp -r "$sdk/dist/esm" "$sdk/dist/cjs" "$stage/zerobox/dist/"
  cp "$sdk/README.md" "$stage/zerobox/"
  node - "$sdk/package.json" "$stage/zerobox/package.json" "$version" <<'JS'
const [from, to, version] = process.argv.slice(2);
const fs = require("node:fs");
const m = JSON.parse(fs.readFileSync(from, "utf8"));
delete m.devDependencies;
delete m.scripts;
m.optionalDependencies = Object.fromEntries(["arm64", "x64"].map((a) => [`zerobox-linux-${a}`, version]));
fs.writeFileSync(to, JSON.stringify(m, null, 2) + "\n");
JS
  (cd "$stage/$platform_pkg" && npm pack --silent --pack-destination "$out" >/dev/null)
  (cd "$stage/zerobox" && npm pack --silent --pack-destination "$out" >/dev/null)
  echo "$out/zerobox-$version.tgz"
  echo "$out/$platform_pkg-$version.tgz"
}

build_wheel() {
  local sdk=$root/sdks/python
  mkdir -p "$stage/python/_bin"
  cp -r "$sdk/zerobox" "$sdk/pyproject.toml" "$sdk/setup.py" "$sdk/README.md" "$stage/python/"
  find "$stage/python" -name __pycache__ -prune -exec rm -rf {} +
  ship_binary "$stage/python/_bin/zerobox"
  # --no-build-isolation: the build uses the installed setuptools and wheel instead of
  # fetching them from an index (PyPI may be out of reach).
  "${PYTHON:-/usr/bin/python3}" -m pip wheel --quiet --no-build-isolation --no-deps --no-index -w "$stage/wheel" "$stage/python" \
    >"$stage/wheel.log" 2>&1 || {
    cat "$stage/wheel.log" >&2
    echo "sdk-packages: building the wheel failed (needs python3-pip python3-setuptools python3-wheel)" >&2
    exit 1
  }
  cp "$stage"/wheel/*.whl "$out/"
  ls "$out"/zerobox-*.whl
}

case $what in
  npm) build_npm ;;
  wheel) build_wheel ;;
  all) build_npm; build_wheel ;;
esac
