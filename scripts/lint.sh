#!/bin/sh
# scripts/lint.sh WHAT: the linters CI runs (CTest's lint.* tests), each over
# the files git tracks:
#   python   flake8 (.flake8) over every Python file
#   rust     rustfmt --check (sdks/rust/rustfmt.toml) over the Rust SDK and its examples
# The TypeScript SDK's ESLint runs as sdk.typescript.lint (sdks/typescript/ctest.cmake).
# Exits 77 (skipped) when the tool is not installed: scripts/install-deps.sh test installs
# them all, and scripts/test.sh fails on a skipped test.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1-}

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "lint: $1 is not installed (scripts/install-deps.sh test): skipped"; exit 77; }
}

case $what in
  python)
    need flake8
    git ls-files '*.py' | xargs flake8
    echo "lint: $(git ls-files '*.py' | wc -l) Python files pass flake8"
    ;;
  rust)
    need rustfmt
    git ls-files 'sdks/rust/*.rs' 'examples/rust/*.rs' |
      xargs rustfmt --check --edition 2021 --config-path sdks/rust/rustfmt.toml
    echo "lint: the Rust files are formatted as sdks/rust/rustfmt.toml says"
    ;;
  *)
    echo "usage: scripts/lint.sh python|rust" >&2
    exit 2
    ;;
esac
