#!/bin/sh
# scripts/check-layers.sh [REPO]: fails when a source file in src/ includes a header of a
# folder that is not below its own in the layer order (ARCHITECTURE.md; a file in a
# subfolder, src/exec/guard/, counts as its top folder's):
#   util <- policy <- {overlay, store, net} <- snapshot <- exec <- run <- cli
# Folders on one level (overlay, store, net) do not include each other. The public
# headers (include/zerobox/) may be included from policy up, and include nothing of src/.
# Run by CTest as lint.layers.
set -eu
repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$repo"
rank() {
  case $1 in
    util) echo 0 ;; zerobox) echo 1 ;; policy) echo 2 ;; overlay|store|net) echo 3 ;; snapshot) echo 4 ;;
    exec) echo 5 ;; run) echo 6 ;; cli) echo 7 ;; *) echo x ;;
  esac
}
bad=0
for f in src/*/*.cpp src/*/*.hpp src/*/*/*.cpp src/*/*/*.hpp include/zerobox/*.hpp; do
  [ -e "$f" ] || continue  # a pattern that matched nothing
  case $f in include/*) from=zerobox ;; *) from=${f#src/}; from=${from%%/*} ;; esac
  rf=$(rank "$from")
  if [ "$rf" = x ]; then
    echo "check-layers: $f: src/$from is not in the layer order (scripts/check-layers.sh)"
    bad=1
    continue
  fi
  for to in $(sed -n 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)/.*|\1|p' "$f" | sort -u); do
    [ "$to" = "$from" ] && continue
    rt=$(rank "$to")
    [ "$rt" = x ] && continue  # not a folder of ours (a generated header)
    if [ "$from" = zerobox ] || [ "$rt" -ge "$rf" ]; then
      echo "check-layers: $f includes $to/, which is not below $from in the layer order"
      bad=1
    fi
  done
done
[ "$bad" = 0 ] && echo "check-layers: every include goes down the layer order"
exit "$bad"
