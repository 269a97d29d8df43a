# Scratch space is bounded: scratch /tmp and /var/tmp (their upper layers) and /dev/shm
# share one tmpfs, of half the RAM by default and --tmpfs-size=SIZE with the flag, so a
# command cannot pin the host's memory with files. Writing past the limit gets ENOSPC.
. "$(dirname "$0")/lib.sh"
need_python

# fill.py SIZE_MIB PATH...: writes SIZE_MIB MiB to each PATH in turn, prints "PATH ok" or
# "PATH errno N" for each, and the MiB each directory's file system can hold.
cat >"$HOSTDIR/fill.py" <<'EOF'
import os, sys
mib = int(sys.argv[1])
for p in sys.argv[2:]:
    try:
        with open(p, "wb") as f:
            for _ in range(mib):
                f.write(b"z" * (1 << 20))
            f.flush()
            os.fsync(f.fileno())
        print(p, "ok")
    except OSError as e:
        print(p, "errno", e.errno)
EOF
cat >"$HOSTDIR/size.py" <<'EOF'
import os, sys
for p in sys.argv[1:]:
    s = os.statvfs(p)
    print(p, s.f_blocks * s.f_frsize // (1 << 20), s.f_bavail * s.f_frsize // (1 << 20))
EOF

# The default: half the RAM, and one pool for all three.
mem_mib=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
zb -- "$PY" "$HOSTDIR/size.py" /tmp /var/tmp /dev/shm
expect_rc 0 "the scratch directories' sizes can be read"
for p in /tmp /var/tmp /dev/shm; do
  size=$(printf '%s\n' "$OUT" | awk -v p="$p" '$1 == p {print $2}')
  [ -n "$size" ] && [ $((size * 2)) -le $((mem_mib + 2)) ] && [ $((size * 2)) -ge $((mem_mib - 2)) ]
  _check $? "$p holds at most half the RAM by default ($size of $mem_mib MiB)" "got $size MiB"
done
zb -- sh -c '"$1" "$2" /dev/shm; "$3" "$4" 4 /tmp/four >/dev/null; "$1" "$2" /dev/shm' sh "$PY" "$HOSTDIR/size.py" "$PY" "$HOSTDIR/fill.py"
free_before=$(printf '%s\n' "$OUT" | sed -n 1p | awk '{print $3}')
free_after=$(printf '%s\n' "$OUT" | sed -n 2p | awk '{print $3}')
[ -n "$free_before" ] && [ -n "$free_after" ] && [ $((free_before - free_after)) -ge 3 ]
_check $? "4 MiB written to /tmp come out of /dev/shm's room too (one pool): $free_before -> $free_after MiB free" "not shared"

# --tmpfs-size.
for flags in "--tmpfs-size=8M" "--tmpfs-size 8m" "--tmpfs-size=8192K" "--tmpfs-size=8388608"; do
  zb $flags -- "$PY" "$HOSTDIR/size.py" /tmp /var/tmp /dev/shm
  expect_eq "$(printf '%s\n' "$OUT" | awk '{print $2}' | tr '\n' ' ')" "8 8 8 " "$flags: each scratch directory holds 8 MiB"
done
zb --tmpfs-size=8M -- "$PY" "$HOSTDIR/fill.py" 9 /tmp/big
expect_out "/tmp/big errno 28" "--tmpfs-size=8M: 9 MiB into /tmp gets ENOSPC"
zb --tmpfs-size=8M -- "$PY" "$HOSTDIR/fill.py" 5 /tmp/a /var/tmp/b
expect_out "/tmp/a ok
/var/tmp/b errno 28" "--tmpfs-size=8M: 5 MiB in /tmp, then 5 MiB more in /var/tmp gets ENOSPC"
zb --tmpfs-size=8M -- "$PY" "$HOSTDIR/fill.py" 5 /dev/shm/a /tmp/b
expect_out "/dev/shm/a ok
/tmp/b errno 28" "--tmpfs-size=8M: 5 MiB in /dev/shm, then 5 MiB more in /tmp gets ENOSPC"
zb --tmpfs-size=24M -- "$PY" "$HOSTDIR/fill.py" 5 /tmp/a /var/tmp/b /dev/shm/c
expect_out "/tmp/a ok
/var/tmp/b ok
/dev/shm/c ok" "--tmpfs-size=24M: 15 MiB fit"
# An empty scratch /tmp (with --allow-read, /tmp not readable) is in the same pool.
zb --allow-read="$HOSTDIR" --tmpfs-size=8M -- "$PY" "$HOSTDIR/fill.py" 5 /tmp/a /dev/shm/b
expect_out "/tmp/a ok
/dev/shm/b errno 28" "--allow-read: the empty scratch /tmp shares the limit"
zb --allow-read="$HOSTDIR" --tmpfs-size=8M -- sh -c 'echo x > /tmp/f && cat /tmp/f && echo y > /var/tmp/g && cat /var/tmp/g'
expect_out "x
y" "--allow-read: the empty scratch /tmp and /var/tmp take files"

# A malformed size is a usage error naming the flag.
for bad in "" 0 0M abc 8X 8MB -1 1.5G 99999999999T 18446744073709551616; do
  zb --tmpfs-size="$bad" -- true
  expect_usage_error "--tmpfs-size='$bad'"
  expect_contains "$ERR" "--tmpfs-size" "--tmpfs-size='$bad': the error names the flag"
done
zb --tmpfs-size -- true; expect_rc 2 "--tmpfs-size without a value is a usage error"
finish
