#!/bin/sh
# scripts/lint.sh WHAT: the linters CI runs (CTest's lint.* tests), each over
# the files git tracks:
#   python   flake8 (.flake8) over every Python file
#   rust     rustfmt --check (sdks/rust/rustfmt.toml) over the Rust SDK and its examples
#   format   clang-format-19 --dry-run --Werror (.clang-format) over the C and C++ of src,
#            include, tools, tests and examples
#   tidy [BUILD]  run-clang-tidy-19 (.clang-tidy) over the .cpp of src and tools, with the
#            compile_commands.json of the build directory BUILD (default: the repository's build/)
# The TypeScript SDK's ESLint runs as sdk.typescript.lint (sdks/typescript/ctest.cmake).
# Exits 77 (skipped) when the tool is not installed: scripts/install-deps.sh test installs
# them all, and scripts/test.sh fails on a skipped test.
set -eu
caller=$(pwd)
root=$(cd "$(dirname "$0")/.." && pwd -P)
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
  format)
    need clang-format-19
    git ls-files 'src/*' 'include/*' 'tools/*' 'tests/*' 'examples/*' |
      grep -E '\.(c|h|cpp|hpp)$' | xargs clang-format-19 --dry-run --Werror
    echo "lint: the C and C++ files are formatted as .clang-format says"
    ;;
  tidy)
    need clang-tidy-19
    need run-clang-tidy-19
    build=${2-$root/build}
    case $build in /*) ;; *) build=$caller/$build ;; esac
    [ -f "$build/compile_commands.json" ] ||
      { echo "lint: no $build/compile_commands.json (configure with CMake first)" >&2; exit 2; }
    # Only the findings: run-clang-tidy prints each file's command line and the count of
    # suppressed compiler warnings otherwise.
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    rc=0
    run-clang-tidy-19 -quiet -p "$build" -j "${ZEROBOX_TIDY_JOBS:-2}" "^$root/(src|tools)/.*\\.cpp\$" \
      >"$log" 2>&1 || rc=$?
    grep -v -E '^(clang-tidy-19 |Running clang-tidy|[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|Suppressed [0-9]+ warnings|Use -header-filter)' "$log" || true
    [ "$rc" -eq 0 ] || { echo "lint: clang-tidy found problems (above)"; exit 1; }
    echo "lint: the C++ of src and tools passes clang-tidy (.clang-tidy)"
    ;;
  *)
    echo "usage: scripts/lint.sh python|rust|format|tidy [BUILD]" >&2
    exit 2
    ;;
esac
