# Path spellings in --allow-write / --deny-read / --deny-write: spaces, newlines,
# commas (\, escapes), ~, relative paths, symlinks, lists and repeats.
. "$(dirname "$0")/lib.sh"

SP="$HOSTDIR/with space"
NL="$HOSTDIR/new
line"
CM="$HOSTDIR/a,b"
UT="$HOSTDIR/ünï cödé"
for d in "$SP" "$NL" "$CM" "$UT"; do
  mkdir -p "$d"
  echo SECRET-IN-DIR >"$d/secret"
done

for d in "$SP" "$NL" "$UT"; do
  label=$(printf '%q' "$d")
  zb --allow-write="$d" -- "$PROBE" write "$d/out"; expect_rc 0 "--allow-write=$label"
  expect_file_eq "$d/out" zb "--allow-write=$label reaches the host"
  zb --allow-write="$d" --deny-write="$d" -- "$PROBE" write "$d/out2"; expect_refused "--deny-write=$label wins"
  expect_absent "$d/out2" "--deny-write=$label: nothing on the host"
  zb --deny-read="$d/secret" -- "$PROBE" read "$d/secret"; expect_rc 13 "--deny-read=$label/secret"
  expect_out_empty "--deny-read=$label/secret: no content"
  zb --deny-read="$d" -- "$PROBE" read "$d/secret"; expect_rc_in "2 13" "--deny-read=$label (directory)"
  zb --allow-read="$d" -- "$PROBE" read "$d/secret"; expect_out SECRET-IN-DIR "--allow-read=$label"
  zb -C "$d" -- pwd; expect_out "$d" "-C $label"
done
zb --allow-write="$HOSTDIR/a\\,b" -- "$PROBE" write "$CM/out"; expect_rc 0 "--allow-write with an escaped comma"
expect_file_eq "$CM/out" zb "escaped comma: the write reached the host"
zb --deny-read="$HOSTDIR/a\\,b/secret" -- "$PROBE" read "$CM/secret"; expect_rc 13 "--deny-read with an escaped comma"
zb_in "$HOSTDIR" --allow-write="a,b" -- sh -c 'echo a > a/f && echo b > b/f'; expect_rc 0 "an unescaped comma splits the list"
expect_file_eq "$HOSTDIR/a/f" a "... the first part is an allowed (created) directory"
expect_file_eq "$HOSTDIR/b/f" b "... the second part is an allowed (created) directory"

# Lists and repeats.
mkdir -p "$HOSTDIR/l1" "$HOSTDIR/l2" "$HOSTDIR/l3"
zb --allow-write="$HOSTDIR/l1,$HOSTDIR/l2" --allow-write="$HOSTDIR/l3" -- sh -c "for d in l1 l2 l3; do echo \$d > '$HOSTDIR'/\$d/f || exit 1; done"
expect_rc 0 "comma lists and repeated --allow-write add up"
expect_file_eq "$HOSTDIR/l3/f" l3 "the repeated flag's path is writable"
echo s1 >"$HOSTDIR/l1/s"; echo s2 >"$HOSTDIR/l2/s"
zb --deny-read="$HOSTDIR/l1/s,$HOSTDIR/l2/s" -- sh -c "cat '$HOSTDIR/l1/s' '$HOSTDIR/l2/s'"
expect_out_empty "--deny-read list: both denied"
zb --deny-read "$HOSTDIR/l1/s" -- "$PROBE" read "$HOSTDIR/l1/s"; expect_rc 13 "--deny-read with its value as the next word"

# ~ is the caller's HOME; relative paths are relative to the caller's directory.
mkdir -p "$HOME/proj"
echo HOMESECRET >"$HOME/proj/s"
zb --allow-write='~/proj' -- "$PROBE" write "$HOME/proj/w"; expect_rc 0 "--allow-write=~/proj"
expect_present "$HOME/proj/w" "~ expands to the caller's HOME"
zb --deny-read='~/proj/s' -- "$PROBE" read "$HOME/proj/s"; expect_rc 13 "--deny-read=~/proj/s"
zb_in "$HOSTDIR" --allow-write=l1 -- "$PROBE" write "$HOSTDIR/l1/rel"; expect_rc 0 "relative --allow-write"
zb_in "$HOSTDIR/l2" --allow-write=../l1/ -- "$PROBE" write "$HOSTDIR/l1/rel2"; expect_rc 0 "relative --allow-write with ../ and a trailing slash"
zb_in "$HOSTDIR/l2" --allow-write=../l1/ -- "$PROBE" write "$HOSTDIR/l2/rel"; expect_refused "... and only that directory"

# Symlinks are resolved before use.
ln -s l1 "$HOSTDIR/l1-link"
zb --allow-write="$HOSTDIR/l1-link" -- "$PROBE" write "$HOSTDIR/l1/vialink"; expect_rc 0 "--allow-write through a symlink allows its target"
zb --allow-write="$HOSTDIR/l1" --deny-write="$HOSTDIR/l1-link" -- "$PROBE" write "$HOSTDIR/l1/f"; expect_refused "--deny-write through a symlink denies its target"
zb --deny-read="$HOSTDIR/l1-link" -- "$PROBE" read "$HOSTDIR/l1/s"; expect_rc_in "2 13" "--deny-read through a symlink denies its target"

# A proc mounted under a walked directory (a chroot's /proc, as at /srv/CHROOT/proc): every
# directory above a mount is walked, so one under $HOSTDIR will do. It is mounted in a
# private mount namespace of the test's own that zerobox then runs in (as uid 65534: in a
# user namespace of the test's, with a pid namespace for the proc, mapped back to 65534).
# The sandbox leaves it out; a sysfs beside it is shown read-only even inside a writable
# path. Nothing here writes to either.
need unshare
CH=$HOSTDIR/chroot
mkdir -p "$CH/proc" "$CH/sys" "$CH/etc"
echo chroot-file >"$CH/etc/f"
if [ "$MODE" = root ]; then
  zb_chroot() {
    run unshare --mount --propagation private sh -c \
      'mount -t proc proc "$1/proc" && mount -t sysfs sysfs "$1/sys" && shift && exec "$@"' sh "$CH" "$ZEROBOX" "$@"
  }
else
  zb_chroot() {
    run unshare --user --map-root-user --mount --pid --net --fork --mount-proc sh -c \
      'mount -t proc proc "$1/proc" && mount -t sysfs sysfs "$1/sys" && shift &&
       exec unshare --user --map-user=65534 --map-group=65534 "$@"' sh "$CH" "$ZEROBOX" "$@"
  }
fi
zb_chroot -- true
case $ERR in
  *"mount: "*) skip "cannot mount proc and sysfs in a namespace of the test's own: $ERR" ;;
esac
expect_rc 0 "a run works with a proc mounted under a walked directory"
zb_chroot -- sh -c 'grep -c " '"$CH"'/proc " /proc/self/mountinfo; ls -A "$1/proc"; cat "$1/etc/f"' sh "$CH"
expect_out "0
chroot-file" "the foreign proc is left out (an empty directory), the rest of the chroot shown"
zb_chroot -- "$PROBE" read "$CH/proc/self/status"; expect_rc 2 "nothing of the foreign proc can be read"
zb_chroot --allow-read="$CH" -- "$PROBE" ls "$CH/proc"; expect_out_empty "--allow-read of the chroot: its proc left out"
for flags in --allow-write="$CH" --allow-write -A; do
  zb_chroot $flags -- sh -c 'ls -A "$1/proc"; grep " $1/sys " /proc/self/mountinfo | cut -d" " -f6' sh "$CH"
  expect_rc 0 "$flags: a run works with a proc under a writable path"
  case $OUT in
    ro,*) ok "$flags: the foreign proc is left out (empty) and the sysfs is read-only" ;;
    *) fail "$flags: expected an empty proc and a read-only sysfs, got: $OUT" ;;
  esac
done
# With snapshots the walk makes tracked overlays (as root of the whole root; as uid 65534
# of the home and scratch directories only, the chroot staying read-only).
zb_chroot --restore --allow-write -- sh -c 'ls -A "$1/proc"; echo ran' sh "$CH"
expect_out ran "--restore of bare --allow-write: the run works, the foreign proc is left out"
if [ "$MODE" = root ]; then
  zb_chroot --restore --allow-write -- sh -c 'echo x > "$1/etc/g" && cat "$1/etc/g"' sh "$CH"
  expect_out x "--restore of bare --allow-write: the chroot beside its proc is a tracked overlay"
  expect_absent "$CH/etc/g" "... and --restore threw the write away"
fi
finish
