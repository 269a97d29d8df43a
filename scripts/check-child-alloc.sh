#!/bin/sh
# scripts/check-child-alloc.sh NM OBJECT...: the objects of the zb_child library (the code
# that runs in the child after clone() and in its init, CMakeLists.txt) may not allocate
# or throw (ARCHITECTURE.md, "Rules the code keeps"). Fails when one of them references
#   - operator new or delete, malloc and the rest of its family;
#   - an exception's allocation or throw, or libstdc++'s std::__throw_* helpers;
#   - a function of ours (zb::) that none of them defines and that is not listed below:
#     those live in files that also hold supervisor code, so this check cannot see into
#     them; each was read and makes system calls only.
# Run by CTest as lint.child_alloc.
set -eu
nm=$1
shift
# CTest passes $<TARGET_OBJECTS:zb_child> as one argument, a ;-separated list.
objects=$(printf '%s\n' "$@" | tr ';' '\n' | sed '/^$/d')
[ -n "$objects" ] || { echo "check-child-alloc: no objects given"; exit 2; }

# Called by the child, defined outside zb_child, in a file that holds (else) what:
outside='
zb::exec::become_own_root      exec/ids.cpp: the idmapped host tree
zb::exec::exec_first           exec/execvp.cpp: exec_candidates, which builds the list
zb::overlay::execute_plan      overlay/mount.cpp: describe_failure, the message
zb::scrub::wipe                util/scrub.cpp: remember(), in the util layer
zb::util::openat2_fd           util/beneath.cpp: open_beneath, which returns a Result
'

forbidden='^(operator new|operator delete|(malloc|calloc|realloc|reallocarray|free|aligned_alloc|posix_memalign|memalign|valloc|pvalloc|strdup|strndup)$|__cxa_allocate_exception$|__cxa_throw$|__cxa_rethrow$|std::__throw_)'

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/called"
: > "$tmp/defined"
bad=0
count=0
for o in $objects; do
  count=$((count + 1))
  "$nm" -C --undefined-only "$o" > "$tmp/nm"
  sed -n 's/^ *U //p' "$tmp/nm" > "$tmp/undefined"
  if grep -E "$forbidden" "$tmp/undefined" > "$tmp/hits"; then
    sed "s|^|check-child-alloc: $o references |" "$tmp/hits"
    bad=1
  fi
  sed -n 's/^\(zb::[^(]*\)(.*/\1/p' "$tmp/undefined" >> "$tmp/called"
  "$nm" -C --defined-only "$o" > "$tmp/nm"
  sed -n 's/^[0-9a-f]* [TtWw] \(zb::[^(]*\)(.*/\1/p' "$tmp/nm" >> "$tmp/defined"
done
echo "$outside" | awk 'NF { print $1 }' >> "$tmp/defined"
sort -u "$tmp/defined" > "$tmp/known"
sort -u "$tmp/called" | comm -23 - "$tmp/known" > "$tmp/unknown"
if [ -s "$tmp/unknown" ]; then
  sed 's|^|check-child-alloc: the child calls |; s|$|, which zb_child does not define (scripts/check-child-alloc.sh)|' "$tmp/unknown"
  bad=1
fi
[ "$bad" = 0 ] && echo "check-child-alloc: $count objects, no allocation, no throw"
exit "$bad"
