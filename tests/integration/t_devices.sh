# The host's device nodes in the sandbox's /dev (null, zero, full, random, urandom, tty)
# are read-only binds: they read and write as devices do, but chmod, chown, utimes and
# setxattr on them get EROFS. The attacks run on a node the test made, bound over
# /dev/null in a private mount namespace that zerobox then runs in, so that a broken
# sandbox changes only the test's node: as root a character device 1:3 (a /dev/null),
# as uid 65534 a file it owns, which the command's uid then owns too.
. "$(dirname "$0")/lib.sh"
need unshare stat

# The devices work.
zb -- sh -c 'echo x > /dev/null && cat /dev/null && head -c 3 /dev/zero | od -An -tx1 && head -c 5 /dev/urandom | wc -c &&
  head -c 5 /dev/random | wc -c && if echo x 2>/dev/null > /dev/full; then echo full-took-it; fi'
expect_rc 0 "reading and writing the device nodes works"
expect_eq "$(printf '%s' "$OUT" | tr -s ' \n' ' ')" " 00 00 00 5 5" "zero reads zeros, urandom and random read bytes, full refuses the write"
# The command runs in a session of its own, without a controlling terminal: /dev/tty
# opens for writing as far as the device, which answers ENXIO, on a terminal or not.
if command -v script >/dev/null; then
  zb_cmd=$(printf '%q ' "$ZEROBOX" -- "$PROBE" write /dev/tty)
  run script -qec "$zb_cmd" /dev/null
  expect_contains "$OUT" "No such device or address" "/dev/tty on a terminal: the device's own ENXIO, not EROFS"
fi
zb -- "$PROBE" write /dev/tty; expect_rc 6 "/dev/tty: the device's own ENXIO, not EROFS"
zb -- sh -c 'for d in null zero full random urandom tty; do grep " /dev/$d " /proc/self/mountinfo; done'
expect_rc 0 "each device node is a mount of its own"
expect_eq "$(printf '%s\n' "$OUT" | awk '$6 !~ /^ro,/' | wc -l)" 0 "every device node's mount is read-only"
expect_eq "$(printf '%s\n' "$OUT" | awk '$6 ~ /nodev/' | wc -l)" 0 "no device node's mount is nodev"

# The host's own nodes: chmod to the mode each has (a no-op, should it get through).
for d in null zero full random urandom tty; do
  mode=$(stat -c %a "/dev/$d")
  zb -- "$PROBE" chmod "/dev/$d" "$mode"; expect_rc 30 "chmod /dev/$d (to its own mode $mode) refused with EROFS"
done
zb --allow-write -- "$PROBE" chmod /dev/null "$(stat -c %a /dev/null)"; expect_rc 30 "chmod /dev/null refused with bare --allow-write"

# The test's node over /dev/null.
NODE=$HOSTDIR/devnull
if [ "$MODE" = root ]; then
  mknod -m 666 "$NODE" c 1 3 || skip "cannot make a device node in $HOSTDIR"
  zb_private() {
    run unshare --mount --propagation private sh -c 'mount --bind "$1" /dev/null && shift && exec "$@"' sh "$NODE" \
      "$ZEROBOX" "$@"
  }
  owner="0 0"
else
  : >"$NODE" && chmod 666 "$NODE"
  # A user namespace of the test's own to mount in, then one mapping its uid back to 65534.
  zb_private() {
    run unshare --user --map-root-user --mount sh -c \
      'mount --bind "$1" /dev/null && shift && exec unshare --user --map-user=65534 --map-group=65534 "$@"' sh "$NODE" \
      "$ZEROBOX" "$@"
  }
  owner="65534 65534"
fi
before=$(stat -c '%a %u %g %Y %Z' "$NODE")
zb_private -- stat -c %i /dev/null
[ "$RC" = 0 ] || skip "cannot bind a node over /dev/null in a mount namespace of the test's own: $ERR"
expect_out "$(stat -c %i "$NODE")" "control: the sandbox's /dev/null is the test's node"
zb_private -- "$PROBE" chmod /dev/null 600; expect_rc 30 "chmod of the test's /dev/null refused with EROFS"
zb_private -- "$PROBE" chown /dev/null $owner; expect_rc 30 "chown of the test's /dev/null (to its own owner) refused with EROFS"
zb_private -- "$PROBE" utimes /dev/null; expect_rc 30 "utimes of the test's /dev/null refused with EROFS"
zb_private -- "$PROBE" setxattr /dev/null user.zb; expect_rc 30 "setxattr of the test's /dev/null refused with EROFS"
zb_private -A -- "$PROBE" chmod /dev/null 600; expect_rc 30 "chmod of the test's /dev/null refused with -A"
zb_private -- sh -c 'chmod 600 /dev/null; chown '"${owner% *}"' /dev/null; touch /dev/null; stat -c %a /dev/null'
expect_out 666 "chmod(1), chown(1) and touch(1) leave the test's /dev/null as it was, seen from inside"
expect_eq "$(stat -c '%a %u %g %Y %Z' "$NODE")" "$before" "the test's node is unchanged on the host"
if [ "$MODE" = root ]; then
  zb_private -- sh -c 'echo x > /dev/null && cat /dev/null'; expect_rc 0 "the test's /dev/null still takes writes"
fi
finish
