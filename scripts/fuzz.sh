#!/usr/bin/env bash
# scripts/fuzz.sh TARGET SECONDS [BUILD_DIR]
#
# Builds one libFuzzer target of tests/fuzz with clang (ASan+UBSan) and runs it for
# SECONDS, starting from the corpus in tests/fuzz/corpus/TARGET (read, never written:
# new inputs go to a scratch directory). Exit 0 when the run found nothing, 1 when it
# crashed (the reproducer is printed), 77 when no suitable clang is installed.
#
# clang 19 (Debian 12: clang-19, libclang-rt-19-dev) is needed: clang 14 cannot compile
# std::expected from libstdc++ 12, which the parsers return.
set -euo pipefail
target=${1:?target (host, proxy or secrets)} seconds=${2:?seconds}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${3:-$root/build-fuzz}
cxx=
for c in clang++-19 clang++-18 clang++-17; do
  if command -v "$c" >/dev/null; then cxx=$c; break; fi
done
if [ -z "$cxx" ]; then
  echo "SKIP: no clang++ 17 or later (install clang-19 libclang-rt-19-dev)" >&2
  exit 77
fi
mkdir -p "$out"
flags=(-std=c++2b -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -I"$root/include" -I"$root/src" -I"$out")
[ -f "$out/zerobox_version.hpp" ] || printf '#pragma once\n#define ZEROBOX_VERSION "fuzz"\n' >"$out/zerobox_version.hpp"
common=("$root/src/net/host.cpp" "$root/src/net/rules.cpp" "$root/src/util/log.cpp" "$root/src/util/error.cpp")
case $target in
  host) srcs=("$root/tests/fuzz/fuzz_host.cpp" "${common[@]}") ;;
  proxy) srcs=("$root/tests/fuzz/fuzz_proxy.cpp" "$root/src/net/http1.cpp" "$root/src/net/socks5_request.cpp"
               "${common[@]}") ;;
  secrets) srcs=("$root/tests/fuzz/fuzz_secrets.cpp" "$root/src/net/secrets.cpp" "$root/src/net/secret_codecs.cpp"
                 "$root/src/net/secret_scrubber.cpp" "$root/src/policy/secrets.cpp"
                 "$root/src/util/random.cpp" "$root/src/util/text.cpp" "${common[@]}") ;;
  *) echo "unknown fuzz target '$target' (host, proxy, secrets)" >&2; exit 2 ;;
esac
libs=(-lssl -lcrypto -lz)
bin=$out/fuzz_$target
stale=0
[ -x "$bin" ] || stale=1
for f in "${srcs[@]}" "$root/src/net/"*.hpp "$root/src/util/"*.hpp; do
  [ "$f" -nt "$bin" ] && stale=1
done
if [ "$stale" = 1 ]; then
  echo "building $bin with $cxx" >&2
  "$cxx" "${flags[@]}" "${srcs[@]}" "${libs[@]}" -o "$bin"
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  "$scratch" "$root/tests/fuzz/corpus/$target"
