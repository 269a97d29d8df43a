# Other processes and privileges: host processes cannot be signalled, traced or read;
# /proc shows only the sandbox; the payload has no capabilities, no_new_privs, seccomp;
# /dev is minimal.
. "$(dirname "$0")/lib.sh"

TOKEN=31${UNIQ: -7}
bg env ZBINT_SECRET_ENV=zbint-environ-$UNIQ sleep "$TOKEN"
H=$BG_PID
wait_until 10 has_process "sleep $TOKEN" || fail "host sleep did not start"
alive() { kill -0 "$H" 2>/dev/null; }

zb -- "$PROBE" kill "$H" 9;   expect_rc_in "1 3" "kill(host pid, SIGKILL) refused (EPERM/ESRCH)"
alive; _check $? "host process alive after kill attempt" "pid $H died"
zb -- "$PROBE" kill "$H" 0;   expect_rc_in "1 3" "kill(host pid, 0) finds nothing"
zb -- "$PROBE" kill -1 9;     alive; _check $? "host process alive after kill(-1, SIGKILL) from inside" "pid $H died"
zb --allow-net --allow-write -- "$PROBE" kill "$H" 9; expect_rc_in "1 3" "kill(host pid) refused with --allow-net --allow-write"
zb -A -- "$PROBE" kill -1 9;  alive; _check $? "host process alive after kill(-1) with -A" "pid $H died"
zb -- sh -c "kill -9 $H";     expect_rc_not 0 "shell kill of a host pid fails"
alive; _check $? "host process alive after shell kill" "pid $H died"
zb -- "$PROBE" ptrace "$H";   expect_rc_in "1 3" "PTRACE_ATTACH to a host pid refused"
expect_eq "$(awk '/^TracerPid:/ { print $2 }' "/proc/$H/status")" 0 "host process not traced"
zb -- "$PROBE" read "/proc/$H/environ"; expect_rc_in "2 3 13" "host /proc/PID/environ unreadable"
expect_not_contains "$OUT" "zbint-environ" "no host environment content"
zb -- "$PROBE" read "/proc/$H/cmdline"; expect_rc_in "2 3 13" "host /proc/PID/cmdline unreadable"
zb -- sh -c 'for p in /proc/[0-9]*; do tr "\0" " " < $p/cmdline; echo; done'
expect_not_contains "$OUT" "$TOKEN" "host processes absent from /proc"
zb -- sh -c 'cat /proc/1/cmdline | tr "\0" " "; echo; ls -d /proc/[0-9]* | wc -l; echo $$'
pids=$(printf '%s\n' "$OUT" | sed -n 2p)
[ "$pids" -ge 1 ] && [ "$pids" -le 4 ]; _check $? "/proc lists only the sandbox's few processes" "got $pids"
expect_eq "$(printf '%s\n' "$OUT" | sed -n 3p)" 2 "the command is pid 2, after the sandbox's init"
zb --allow-net -- sh -c "ls /proc/$H"; expect_rc_not 0 "host pid invisible with --allow-net too"

# The sandbox's init reports to zerobox over a pipe; the command must not be able to
# write into it (forged or truncated reports change the exit status and the events).
run "$ZEROBOX" --status-fd=3 -- sh -c 'for f in /proc/1/fd/*; do echo x >> "$f"; done 2>/dev/null; exit 7' 3>"$T_CAP/st"
expect_rc 7 "writing into init's fds does not change the exit status"
expect_eq "$(sed 's/"pid":[0-9]*/"pid":N/' "$T_CAP/st")" '{"v":1,"event":"child_started","pid":N}
{"v":1,"event":"child_exit","code":7}' "... nor the status events"

# Credentials and privileges of the payload.
host_userns=$(readlink /proc/self/ns/user)
zb -- readlink /proc/self/ns/user; expect_ne "$OUT" "$host_userns" "the payload is in a child user namespace"
zb -- sh -c 'grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t " " "'
expect_eq "$OUT" "CapInh: 0000000000000000
CapPrm: 0000000000000000
CapEff: 0000000000000000
CapBnd: 0000000000000000
CapAmb: 0000000000000000
NoNewPrivs: 1
Seccomp: 2" "no capabilities, no_new_privs, seccomp filter"
for flags in --allow-write --allow-net -A; do
  zb $flags -- sh -c 'grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t " " "'
  expect_eq "$OUT" "CapEff: 0000000000000000
CapBnd: 0000000000000000
NoNewPrivs: 1
Seccomp: 2" "same credentials with $flags"
done
zb -- id -u; expect_eq "$OUT" "$(id -u)" "the payload keeps the caller's uid"
zb -- cat /proc/self/uid_map
if [ "$MODE" = user ]; then
  expect_eq "$(echo $OUT)" "65534 65534 1" "uid_map maps only the caller's uid"
  zb -- cat /proc/self/gid_map; expect_eq "$(echo $OUT)" "65534 65534 1" "gid_map maps only the caller's gid"
  zb -- cat /proc/self/setgroups; expect_eq "$OUT" deny "setgroups is denied"
else
  expect_ne "$OUT" "" "uid_map is readable"
fi
zb -- sh -c 'hostname zbint-evil'; expect_rc_not 0 "sethostname refused"
zb -- "$PROBE" write /proc/sys/kernel/hostname; expect_refused "/proc/sys is read-only"
zb -- "$PROBE" write /proc/sys/kernel/core_pattern; expect_refused "/proc/sys/kernel/core_pattern cannot be written (a classic escape for root)"
zb -- "$PROBE" write /proc/sys/vm/drop_caches; expect_refused "/proc/sys/vm cannot be written"
zb -- "$PROBE" create /sys/zbint; expect_refused "/sys is read-only"
for cg in /sys/fs/cgroup /sys/fs/cgroup/pids /sys/fs/cgroup/unified; do
  [ -d "$cg" ] || continue
  zb -- "$PROBE" mkdir "$cg/zbint-$UNIQ"; expect_rc_not 0 "no new cgroup under $cg"
  if [ -d "$cg/zbint-$UNIQ" ]; then rmdir "$cg/zbint-$UNIQ"; fi
done
zb -- sh -c 'head -c 1 /proc/kmsg'; expect_rc_not 0 "/proc/kmsg unreadable"
zb -- sh -c 'head -c 1 /proc/kcore'; expect_rc_not 0 "/proc/kcore unreadable"
# A minimal /dev.
zb -- sh -c 'ls -A /dev | sort | tr "\n" " "'
expect_eq "$OUT" "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero " "/dev holds only the minimal set"
for dev in /dev/sda /dev/vda /dev/nvme0n1 /dev/kmsg /dev/mem /dev/kmem /dev/port /dev/console /dev/loop0 /dev/fuse /dev/net/tun; do
  zb -- "$PROBE" read "$dev"; expect_rc 2 "$dev absent"
done
zb -- sh -c 'echo x > /dev/null && head -c 4 /dev/zero | od -An -tx1 | tr -d " " && head -c 16 /dev/urandom | wc -c'
expect_out "00000000
16" "/dev/null, /dev/zero and /dev/urandom work"
zb -- sh -c 'echo x > /dev/full'; expect_rc_not 0 "/dev/full is full"
zb -- "$PROBE" create /dev/zbint; expect_refused "/dev is read-only"
zb -- mknod /dev/shm/zbint-sda b 8 0; expect_rc_not 0 "mknod of a block device refused"
zb -- sh -c 'ls /dev/pts | tr "\n" " "'; expect_eq "$OUT" "ptmx " "a fresh devpts instance"
finish
