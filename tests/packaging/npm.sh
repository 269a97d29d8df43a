#!/usr/bin/env bash
# pkg.npm: builds the npm packages (scripts/sdk-packages.sh npm), installs them with
# `npm install --offline` into an empty prefix, and runs the `zerobox` command and the SDK
# from there, with no ZEROBOX_BIN and no build directory on PATH:
#   npm.sh ZEROBOX
# Then the SDK package alone: without its platform package, the command and the SDK say
# which package is missing. Skipped (77) without node >= 20 and npm.
set -uo pipefail
zerobox=$1
root=$(cd "$(dirname "$0")/../.." && pwd)

for tool in node npm objcopy; do
  command -v $tool >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
  { echo "SKIP: node $(node --version) is older than 20"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# What a user's shell has: node, and nothing of this build.
clean_env=(env -u ZEROBOX_BIN "PATH=$(dirname "$(command -v node)"):/usr/bin:/bin" "HOME=$tmp/home")
mkdir -p "$tmp/home"

"$root/scripts/sdk-packages.sh" --no-build "$zerobox" "$tmp/out" npm >"$tmp/pack.log" 2>&1 ||
  { cat "$tmp/pack.log"; echo "FAIL: scripts/sdk-packages.sh npm"; exit 1; }
version=$("$zerobox" --version | awk '{print $2}')
arch=$(node -p process.arch)
sdk_tgz=$tmp/out/zerobox-$version.tgz
bin_tgz=$tmp/out/zerobox-linux-$arch-$version.tgz
for f in "$sdk_tgz" "$bin_tgz"; do [ -f "$f" ] || fail "no $f"; done
tar -xzOf "$sdk_tgz" package/package.json | grep -q "\"zerobox-linux-$arch\": \"$version\"" ||
  fail "the SDK's package.json does not name zerobox-linux-$arch@$version in optionalDependencies"
if tar -tzf "$sdk_tgz" | grep -q 'dist/test/'; then fail "the SDK package holds its tests"; fi

# Both packages into an empty prefix, from the files alone.
prefix=$tmp/prefix
mkdir -p "$prefix"
(cd "$prefix" && "${clean_env[@]}" npm install --offline --no-audit --no-fund --prefix "$prefix" \
  "$sdk_tgz" "$bin_tgz") >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "npm install"; }
[ -x "$prefix/node_modules/zerobox-linux-$arch/zerobox" ] || fail "the platform package holds no executable zerobox"

out=$("${clean_env[@]}" "$prefix/node_modules/.bin/zerobox" --version 2>&1)
[ "$out" = "zerobox $version" ] || fail "node_modules/.bin/zerobox --version printed '$out'"
"${clean_env[@]}" "$prefix/node_modules/.bin/zerobox" -- sh -c 'exit 7'
rc=$?
[ $rc -eq 7 ] || fail "the command's exit status 7 came back as $rc"
"${clean_env[@]}" "$prefix/node_modules/.bin/zerobox" -- sh -c 'kill -TERM $$'
rc=$?
[ $rc -eq 143 ] || fail "a command killed by SIGTERM came back as $rc, not 143"
cat >"$prefix/esm.mjs" <<'JS'
import { Sandbox, findBinary } from "zerobox";
const bin = findBinary();
if (!bin.endsWith(`/node_modules/zerobox-linux-${process.arch}/zerobox`)) throw new Error(`found ${bin}`);
const r = await new Sandbox().run("sh", ["-c", "echo esm: $((6 * 7))"]);
process.stdout.write(`${r.exitCode} ${r.stdout.toString()}`);
JS
cat >"$prefix/cjs.cjs" <<'JS'
const { Sandbox, findBinary } = require("zerobox");
const bin = findBinary();
if (!bin.endsWith(`/node_modules/zerobox-linux-${process.arch}/zerobox`)) throw new Error(`found ${bin}`);
new Sandbox().run("sh", ["-c", "echo cjs: $((6 * 7))"]).then((r) => process.stdout.write(`${r.exitCode} ${r.stdout}`));
JS
out=$(cd "$prefix" && "${clean_env[@]}" node esm.mjs 2>&1)
[ "$out" = "0 esm: 42" ] || fail "the SDK imported as an ES module: '$out'"
out=$(cd "$prefix" && "${clean_env[@]}" node cjs.cjs 2>&1)
[ "$out" = "0 cjs: 42" ] || fail "the SDK required as CommonJS: '$out'"

# The same, as an unprivileged user (uid 65534, no capabilities): zerobox then takes
# the user-namespace path.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  chmod 0755 "$tmp"
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
  out=$(cd "$prefix" && "${as_user[@]}" "${clean_env[@]}" node esm.mjs 2>&1)
  [ "$out" = "0 esm: 42" ] || fail "the SDK as uid 65534: '$out'"
  out=$("${as_user[@]}" "${clean_env[@]}" "$prefix/node_modules/.bin/zerobox" -- sh -c 'echo user: $((6 * 7))' 2>&1)
  [ "$out" = "user: 42" ] || fail "node_modules/.bin/zerobox as uid 65534: '$out'"
fi

# The SDK without its platform package (offline, npm cannot fetch the optional one).
alone=$tmp/alone
mkdir -p "$alone"
(cd "$alone" && "${clean_env[@]}" npm install --offline --no-audit --no-fund --prefix "$alone" "$sdk_tgz") \
  >"$tmp/install-alone.log" 2>&1 || { cat "$tmp/install-alone.log"; fail "npm install of the SDK alone"; }
out=$("${clean_env[@]}" "$alone/node_modules/.bin/zerobox" --version 2>&1)
rc=$?
[ $rc -eq 127 ] || fail "zerobox without its platform package exited $rc, not 127"
case $out in
  *"zerobox binary not found"*"zerobox-linux-$arch (not installed)"*) ;;
  *) fail "zerobox without its platform package said: $out" ;;
esac

if [ $failures -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "npm packages: zerobox-$version.tgz and zerobox-linux-$arch-$version.tgz install and run"
