# The caller's stdio: a file, a FIFO or a terminal handed to the command as stdin,
# stdout or stderr is a host inode outside the sandbox's mounts. The command must not
# change its mode, owner, times or xattrs (fchmod(1), chmod /proc/self/fd/1, ...), and
# must set no setuid or setgid bit on any file. Every probe works on files, FIFOs and
# terminals this test made. The data must still flow as before.
. "$(dirname "$0")/lib.sh"
need_python

D=$HOSTDIR/out
mkdir -p "$D"

# meta_of FILE: octal mode, owner, mtime and user xattrs, for before/after comparisons.
meta_of() { "$PY" -c 'import os,sys
p=sys.argv[1]; st=os.stat(p)
try: xs=sorted(os.listxattr(p))
except OSError: xs=[]
print(oct(st.st_mode), st.st_uid, st.st_gid, int(st.st_mtime), xs)' "$1"; }

# Each attack runs against a fresh file with a known mtime, as stdout, stdin and stderr.
# It reports on another fd than the one it attacks, so that its own writes leave the
# victim's mtime alone.
attack='import os, sys
fd = int(sys.argv[1]); path = "/proc/self/fd/%d" % fd
report = os.fdopen(2 if fd == 1 else 1, "w")
def tryit(name, f):
    try:
        f(); print(name, "done", file=report)
    except OSError as e:
        print(name, "refused", e.errno, file=report)
tryit("fchmod", lambda: os.fchmod(fd, 0o4777))
tryit("chmod-path", lambda: os.chmod(path, 0o6777))
tryit("chmod-plain", lambda: os.chmod(path, 0o666))
tryit("fchown", lambda: os.fchown(fd, 12345, 12345))
tryit("chown-path", lambda: os.chown(path, 12345, 12345))
tryit("utime", lambda: os.utime(fd, (1, 1)))
tryit("utime-path", lambda: os.utime(path, (1, 1)))
tryit("fsetxattr", lambda: os.setxattr(fd, "user.zb", b"1"))
tryit("setxattr-path", lambda: os.setxattr(path, "user.zb", b"1"))
'
for fd in 0 1 2; do
  f=$D/victim$fd
  : >"$f"
  chmod 0644 "$f"
  touch -d '2020-01-02 03:04:05' "$f"
  before=$(meta_of "$f")
  case $fd in
    0) "$ZEROBOX" -- "$PY" -c "$attack" 0 <"$f" >"$T_CAP/out" 2>"$T_CAP/err" ;;
    1) "$ZEROBOX" -- "$PY" -c "$attack" 1 >>"$f" 2>"$T_CAP/out" </dev/null ;;
    2) "$ZEROBOX" -- "$PY" -c "$attack" 2 2>>"$f" >"$T_CAP/out" </dev/null ;;
  esac
  after=$(meta_of "$f")
  LAST_CMD="zerobox -- python3 (chmod/chown/utime/setxattr on fd $fd): $(tr '\n' ' ' <"$T_CAP/out")"
  expect_eq "$after" "$before" "fd $fd: the host file's mode, owner, times and xattrs are unchanged"
done

# A read-only stdin file cannot be made world-writable, nor its copy setuid.
f=$D/readonly
echo secret >"$f"
chmod 0444 "$f"
"$ZEROBOX" -- sh -c 'cat >/dev/null; chmod 0666 /proc/self/fd/0' <"$f" >/dev/null 2>&1
expect_eq "$(stat -c %a "$f")" 444 "a read-only stdin file stays 0444"
"$ZEROBOX" -- sh -c 'cat /bin/true; chmod 4755 /proc/self/fd/1' >"$D/copy" 2>/dev/null </dev/null
expect_eq "$(stat -c %a "$D/copy")" 644 "stdout's copy of a binary is not made setuid (0644)"
cmp -s /bin/true "$D/copy"
_check $? "the copy written through stdout is intact" "differs from /bin/true"

# A named FIFO (the test's) as stdout: the data arrives, its mode stays.
mkfifo -m 0600 "$D/fifo"
cat "$D/fifo" >"$T_CAP/fifo_out" &
reader=$!
T_PIDS+=("$reader")
"$ZEROBOX" -- sh -c 'echo through-fifo; chmod 0666 /proc/self/fd/1' >"$D/fifo" 2>/dev/null </dev/null
wait "$reader"
expect_eq "$(cat "$T_CAP/fifo_out")" through-fifo "output through a named FIFO arrives"
expect_eq "$(stat -c %a "$D/fifo")" 600 "the FIFO's mode is unchanged"

# Setuid and setgid bits, inside a writable directory, by every call that sets a mode.
W=$HOSTDIR/w
mkdir -p "$W"
zb --allow-write="$W" -- "$PY" -c 'import os, shutil, sys
w = sys.argv[1]
def tryit(name, f):
    try:
        f(); print(name, "done")
    except OSError as e:
        print(name, "refused", e.errno)
shutil.copy("/bin/true", w + "/a")
tryit("chmod", lambda: os.chmod(w + "/a", 0o4755))
tryit("chmod-g", lambda: os.chmod(w + "/a", 0o2755))
tryit("open", lambda: os.close(os.open(w + "/b", os.O_CREAT | os.O_WRONLY, 0o4755)))
tryit("openat", lambda: os.close(os.open("c", os.O_CREAT | os.O_WRONLY, 0o6755, dir_fd=os.open(w, os.O_PATH))))
tryit("mknod", lambda: os.mknod(w + "/d", 0o104755))
tryit("plain", lambda: os.chmod(w + "/a", 0o755))
' "$W"
expect_rc 0 "the setuid probes ran"
expect_contains "$OUT" "chmod refused 1" "chmod 4755 is refused with EPERM"
expect_contains "$OUT" "chmod-g refused 1" "chmod 2755 is refused with EPERM"
expect_contains "$OUT" "open refused 1" "open(O_CREAT, 04755) is refused with EPERM"
expect_contains "$OUT" "openat refused 1" "openat(O_CREAT, 06755) is refused with EPERM"
expect_contains "$OUT" "mknod refused 1" "mknod(S_IFREG|04755) is refused with EPERM"
expect_contains "$OUT" "plain done" "chmod 0755 of the command's own file still works"
bad=$(find "$W" -perm /6000)
expect_eq "$bad" "" "no setuid or setgid file in the writable directory"
expect_eq "$(stat -c %a "$W/a")" 755 "the file's plain mode was set"
zb --allow-write="$W" -- sh -c "cp /bin/true '$W/e' && chmod 6755 '$W/e'"
expect_rc_not 0 "chmod 6755 in a shell fails"
expect_eq "$(stat -c %a "$W/e")" 755 "the shell's copy is not setuid"

# The data still flows: order of stdout and stderr on one file, a large copy, stdin
# from a file, and the caller's offset after what the command read.
zb_out=$D/order
"$ZEROBOX" -- sh -c 'echo 1; echo 2 >&2; echo 3; echo 4 >&2' >"$zb_out" 2>&1 </dev/null
expect_eq "$(tr '\n' ' ' <"$zb_out")" "1 2 3 4 " "stdout and stderr on one file keep their order"
head -c 3000000 /dev/urandom >"$D/big"
"$ZEROBOX" -- cat <"$D/big" >"$D/big.out" 2>/dev/null
cmp -s "$D/big" "$D/big.out"
_check $? "3 MB from a stdin file to a stdout file arrive intact" "differs"
"$ZEROBOX" -- sh -c 'echo appended' >>"$D/big.out" 2>/dev/null </dev/null
expect_eq "$(tail -c 9 "$D/big.out")" appended "an O_APPEND stdout appends"
printf 'one\ntwo\nthree\n' >"$D/lines"
got=$({ "$ZEROBOX" -- sh -c 'read a; echo "in:$a"'; cat; } <"$D/lines" 2>/dev/null)
expect_eq "$(echo $got)" "in:one two three" "the caller's stdin offset ends after what the command read"
got=$(printf 'piped\n' | "$ZEROBOX" -- cat 2>/dev/null | cat)
expect_eq "$got" piped "pipes are passed through"

# The caller's terminal: a pty this test made. Its mode and owner stay; the command still
# has a terminal; modes the command changed are put back at exit.
"$PY" - "$ZEROBOX" "$PY" <<'EOF' >"$T_CAP/pty" 2>&1
import os, sys, termios, subprocess
zerobox, py = sys.argv[1], sys.argv[2]
m, s = os.openpty()
name = os.ttyname(s)
st = os.stat(name)
attr = termios.tcgetattr(s)
probe = ("import os,sys\n"
         "print('tty' if os.isatty(0) else 'notty')\n"
         "for f in (lambda: os.fchmod(0, 0o666), lambda: os.chmod('/proc/self/fd/1', 0o666),"
         " lambda: os.chmod('/dev/stdin', 0o666), lambda: os.fchown(1, 4321, 4321)):\n"
         "    try: f(); print('changed')\n"
         "    except OSError as e: print('refused', e.errno)\n"
         "import termios; a = termios.tcgetattr(0); a[3] &= ~(termios.ECHO | termios.ICANON)\n"
         "termios.tcsetattr(0, termios.TCSANOW, a)\n")
p = subprocess.run([zerobox, "--", py, "-c", probe], stdin=s, stdout=s, stderr=s, start_new_session=True,
                   preexec_fn=lambda: __import__("fcntl").ioctl(0, termios.TIOCSCTTY, 0))
os.set_blocking(m, False)
out = b""
try:
    while True:
        chunk = os.read(m, 4096)
        if not chunk: break
        out += chunk
except (BlockingIOError, OSError):
    pass
after = os.stat(name)
now = termios.tcgetattr(s)
print("rc", p.returncode)
print(out.decode(errors="replace").replace("\r", ""))
print("mode", oct(st.st_mode), oct(after.st_mode), "owner", st.st_uid, after.st_uid)
print("echo-restored", bool(now[3] & termios.ECHO), "icanon-restored", bool(now[3] & termios.ICANON))
EOF
pty_out=$(cat "$T_CAP/pty")
LAST_CMD="zerobox on a pty (python)"
expect_contains "$pty_out" "rc 0" "the command on a pty ran"
expect_contains "$pty_out" "tty" "the command's stdin is still a terminal"
expect_not_contains "$pty_out" "notty" "the command's stdin is not a pipe"
expect_not_contains "$pty_out" "changed" "the terminal's mode and owner cannot be changed"
mode_line=$(printf '%s\n' "$pty_out" | grep '^mode ')
set -- $mode_line
expect_eq "$3" "$2" "the pty's mode on the host is unchanged"
expect_eq "$6" "$5" "the pty's owner on the host is unchanged"
expect_contains "$pty_out" "echo-restored True icanon-restored True" "the terminal's modes are put back at exit"

# A device node as stdin (root can make one: a copy of /dev/null's numbers, in the
# test's directory). Its mode stays, and it still reads as /dev/null.
if [ "$MODE" = root ]; then
  mknod -m 0666 "$D/nulldev" c 1 3
  "$ZEROBOX" -- sh -c 'chmod 0600 /proc/self/fd/0; chmod 0600 /dev/stdin; cat' <"$D/nulldev" >"$T_CAP/out" 2>/dev/null
  expect_eq "$(stat -c %a "$D/nulldev")" 666 "a device node as stdin keeps its mode"
  expect_eq "$(cat "$T_CAP/out")" "" "and still reads as /dev/null"
fi
finish
