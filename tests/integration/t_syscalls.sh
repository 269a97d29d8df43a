# Refused system calls (seccomp), called by the probe with bad arguments so that an
# unfiltered call would fail differently (EFAULT, EBADF, EINVAL, ESRCH) or succeed.
. "$(dirname "$0")/lib.sh"

# Controls: the probe sees unfiltered calls as such.
zb -- "$PROBE" syscall getpid;            expect_rc 0 "control: getpid succeeds"
zb -- "$PROBE" syscall fork;              expect_rc 0 "control: fork (clone without CLONE_NEWUSER) succeeds"
zb -- "$PROBE" syscall ioctl_fionread;    expect_rc 9 "control: ioctl(-1, FIONREAD) gets EBADF"
zb -- "$PROBE" syscall personality_query; expect_rc 0 "control: personality(0xffffffff) succeeds"
zb -- "$PROBE" syscall personality_linux; expect_rc 0 "control: personality(PER_LINUX) succeeds"
zb -- sh -c 'echo $(( 6 * 7 ))';          expect_out 42 "control: a shell runs"

for name in mount umount2 pivot_root chroot move_mount open_tree fsopen fsconfig fsmount fspick mount_setattr \
  unshare_newuser clone_newuser ptrace process_vm_readv process_vm_writev pidfd_getfd kcmp io_uring_setup bpf \
  perf_event_open userfaultfd keyctl add_key request_key init_module finit_module delete_module kexec_load \
  kexec_file_load reboot swapon swapoff acct clock_settime settimeofday syslog personality_addr_no_randomize \
  personality_read_implies_exec open_by_handle_at name_to_handle_at setns \
  ioctl_tiocsti ioctl_tiocsti_high ioctl_tiocsti_high1 ioctl_tioclinux ioctl_tioclinux_high \
  ioctl_btrfs_snap_create ioctl_btrfs_subvol_create ioctl_btrfs_snap_create_v2 ioctl_btrfs_subvol_create_v2 \
  ioctl_ocfs2_reflink ioctl_bcachefs_subvolume_create ioctl_bcachefs_subvolume_create_v2; do
  zb -- "$PROBE" syscall "$name"; expect_rc 1 "$name refused with EPERM"
done
zb -- "$PROBE" syscall clone3; expect_rc 38 "clone3 refused with ENOSYS (so libc falls back to clone)"
for flags in "" --allow-write --allow-net -A; do
  zb $flags -- "$PROBE" syscall unshare_newuser; expect_rc 1 "unshare(CLONE_NEWUSER) refused ${flags:-(default)}"
  zb $flags -- "$PROBE" syscall mount; expect_rc 1 "mount refused ${flags:-(default)}"
  zb $flags -- "$PROBE" syscall ioctl_tiocsti; expect_rc 1 "TIOCSTI refused ${flags:-(default)}"
done
# With a writable directory the create guard runs: init reads the command's memory and
# fds to serve it (process_vm_readv, pidfd_getfd), and the command still may not.
mkdir -p "$HOSTDIR/g"
zb --debug --allow-write="$HOSTDIR/g" -- true
expect_contains "$ERR" "refused by seccomp user notification" "the create guard runs with a writable directory"
for name in process_vm_readv process_vm_writev pidfd_getfd ptrace kcmp mount; do
  zb --allow-write="$HOSTDIR/g" -- "$PROBE" syscall "$name"; expect_rc 1 "$name refused with the create guard on"
done
# The command has pid 1's uid, but may not lower the limits pid 1 serves the guard under.
if command -v prlimit >/dev/null; then
  zb --allow-write="$HOSTDIR/g" -- sh -c 'prlimit --pid 1 --nofile=3:3 && exit 3; prlimit --pid 1 --nofile --noheadings >/dev/null || exit 4; prlimit --nofile=64:64 sh -c "echo x > '"$HOSTDIR"'/g/after-prlimit" || exit 5; prlimit --pid $$ --nofile=64:64 || exit 6'
  expect_rc 0 "prlimit --pid 1 refused with the create guard on; reading it, and its own limits, allowed"
  expect_present "$HOSTDIR/g/after-prlimit" "files are still made after the attempt on pid 1's limits"
fi
if command -v unshare >/dev/null; then
  zb -- unshare --user --map-root-user true; expect_rc_not 0 "unshare(1) cannot make a nested user namespace"
fi

# Other system call ABIs: the process is killed (SIGSYS, 128+31) or gets ENOSYS.
zb -- "$PROBE" x32;   expect_rc_in "159 38" "x32 system call killed or ENOSYS"
zb -- "$PROBE" int80; expect_rc_in "159 38" "i386 int 0x80 system call killed or ENOSYS"

finish
