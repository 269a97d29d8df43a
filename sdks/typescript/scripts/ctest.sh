#!/bin/sh
# CTest steps for the TypeScript SDK (registered by ../ctest.cmake):
#   setup    install the pinned devDependencies and build (the fixture the others need)
#   test     the node:test suite against $ZEROBOX_BIN
#   lint     ESLint (eslint.config.mjs) over src/ and test/
#   example  install, build and run examples/typescript against $ZEROBOX_BIN
# Exits 77 (CTest's SKIP_RETURN_CODE) when node >= 20 or npm is missing: a machine
# without them skips these tests, it does not pass them.
set -eu

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "skipped: $tool is not installed" >&2
    exit 77
  fi
done
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  echo "skipped: node $(node --version) is older than 20" >&2
  exit 77
fi

case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
sdk=$(cd "$here/.." && pwd)
example=$sdk/../../examples/typescript

# npm trusts the system's certificate authorities as well as its own (those Debian's
# ca-certificates holds, and any an administrator added, such as a TLS-inspecting proxy's,
# which curl and apt already trust).
if [ -z "${NODE_EXTRA_CA_CERTS-}" ] && [ -r /etc/ssl/certs/ca-certificates.crt ]; then
  export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi

# npm ci only when node_modules does not match the lock, so that a tree installed once
# keeps working without the registry.
install() {
  if node "$sdk/scripts/deps-current.mjs" "$1"; then
    echo "$1/node_modules matches package-lock.json"
  else
    (cd "$1" && npm ci --no-audit --no-fund --prefer-offline)
  fi
}

case "${1-}" in
  setup)
    install "$sdk"
    cd "$sdk" && npm run build
    ;;
  test)
    cd "$sdk" && npm test
    ;;
  lint)
    cd "$sdk" && npx --no-install eslint .
    echo "eslint: no problems in src/ and test/"
    ;;
  example)
    install "$example"
    cd "$example" && npm run build && npm start
    ;;
  *)
    echo "usage: $0 setup|test|lint|example" >&2
    exit 2
    ;;
esac
