#!/usr/bin/env python3
"""Tries, from inside the sandbox, every way to bring an absent protected path into being.

Run by t_protect.sh with the working directory set to a writable repository R where
.envrc, .bashrc, .config/fish and .git/hooks do not exist (.git does). Prints one line per
check, "ok ..." or "FAIL ...", and exits with the number of failures. It also checks that
ordinary creation keeps its semantics (umask, O_EXCL, O_CLOEXEC, FIFOs, O_TMPFILE).
"""
import ctypes
import errno
import os
import sys
import threading

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
R = os.getcwd()
failures = 0


def check(name, cond, detail=""):
    global failures
    if cond:
        print("ok", name)
    else:
        failures += 1
        print("FAIL", name, detail)


def refused(name, fn, codes=(errno.EACCES,)):
    try:
        fn()
    except OSError as e:
        check(name, e.errno in codes, f"errno {e.errno} ({e.strerror})")
        return
    check(name, False, "it succeeded")


def absent(*names):
    return all(not os.path.lexists(os.path.join(R, n)) for n in names)


W = os.O_WRONLY | os.O_CREAT

# Plain creation, by every spelling of the path.
dirfd = os.open(R, os.O_RDONLY | os.O_DIRECTORY)
os.mkdir("sub")
for label, path in [
    ("relative", ".envrc"),
    ("absolute", R + "/.envrc"),
    ("dot-dot", "sub/../.envrc"),
    ("/proc/self/cwd", "/proc/self/cwd/.envrc"),
    ("/proc/thread-self/cwd", "/proc/thread-self/cwd/.envrc"),
    ("/proc/self/fd/N", f"/proc/self/fd/{dirfd}/.envrc"),
    ("/dev/fd/N", f"/dev/fd/{dirfd}/.envrc"),
    ("/proc/PID/cwd", f"/proc/{os.getpid()}/cwd/.envrc"),
]:
    refused(f"open O_CREAT {label}", lambda p=path: os.open(p, W, 0o644), (errno.EACCES, errno.ELOOP))
refused("openat(dirfd) O_CREAT", lambda: os.open(".envrc", W, 0o644, dir_fd=dirfd))
refused("creat()",
        lambda: libc.creat(b".bashrc", 0o644) >= 0 or (_ for _ in ()).throw(OSError(ctypes.get_errno(), "creat")))
refused("mkfifo", lambda: os.mkfifo(".envrc"))
refused("mknod", lambda: os.mknod(".bashrc", 0o600))
refused("symlink at the name", lambda: os.symlink("/etc/passwd", ".envrc"))
refused("mkdir .git/hooks", lambda: os.mkdir(".git/hooks"))
# Spellings a casefolded directory (ext4, tmpfs, exfat) takes for the same name.
refused("open O_CREAT .ba\u017fhrc (long s)", lambda: os.open(".ba\u017fhrc", W, 0o644))
refused("mkdir .git/hoo\u212as (Kelvin sign)", lambda: os.mkdir(".git/hoo\u212as"))
refused("symlink at .EnvRC", lambda: os.symlink("/etc/passwd", ".EnvRC"))
refused("open O_CREAT .env\u200brc (zero-width space)", lambda: os.open(".env\u200brc", W, 0o644))
refused("mkdir .git/hoo\u00adks (soft hyphen)", lambda: os.mkdir(".git/hoo\u00adks"))

# Through symlinks the command makes.
os.symlink(".envrc", "dangling")
refused("O_CREAT through a dangling symlink", lambda: os.open("dangling", W, 0o644))
os.symlink("dangling", "chain")
refused("O_CREAT through a chain of symlinks", lambda: os.open("chain", W, 0o644))
os.symlink(R + "/.bashrc", "sub/abs")
refused("O_CREAT through an absolute symlink", lambda: os.open("sub/abs", W, 0o644))
os.symlink(".", "here")
refused("O_CREAT below a symlinked directory", lambda: os.open("here/here/.envrc", W, 0o644))
os.symlink(R, "/tmp/r-link")
refused("O_CREAT through a symlink from /tmp", lambda: os.open("/tmp/r-link/.envrc", W, 0o644))
os.symlink(".git", "g")
refused("mkdir through a symlink to .git", lambda: os.mkdir("g/hooks"))

# Ancestors: a directory or symlink moved into place brings the path along.
os.mkdir(".config")
refused("mkdir .config/fish", lambda: os.mkdir(".config/fish"))
refused("makedirs", lambda: os.makedirs(".config/fish/conf.d"))
os.rmdir(".config")
os.makedirs("prep/fish")
refused("rename a directory holding fish/ to .config", lambda: os.rename("prep", ".config"))
refused("symlink .config -> prep", lambda: os.symlink("prep", ".config"))
os.mkdir(".config")
refused("rename over an empty .config", lambda: os.rename("prep", ".config"))
os.rmdir(".config")
os.makedirs("fakegit/hooks")
RENAME_EXCHANGE = 2
AT_FDCWD = -100


def renameat2(a, b, flags):
    if libc.syscall(316, AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


refused("RENAME_EXCHANGE a directory with .git", lambda: renameat2("fakegit", ".git", RENAME_EXCHANGE))
check(".git is still the repository", os.path.exists(".git/HEAD"))

# Hard links and renames onto the name.
with open("plain", "w") as f:
    f.write("x")
refused("link()", lambda: os.link("plain", ".envrc"))
refused("rename()", lambda: os.rename("plain", ".envrc"))
refused("renameat2(NOREPLACE)", lambda: renameat2("plain", ".bashrc", 1))
tmp = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o600)
AT_SYMLINK_FOLLOW = 0x400


def linkat_follow(src, dst):  # os.link() calls link(), which never follows /proc/self/fd/N
    if libc.linkat(AT_FDCWD, src.encode(), AT_FDCWD, dst.encode(), AT_SYMLINK_FOLLOW) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


refused("linkat an O_TMPFILE to the name", lambda: linkat_follow(f"/proc/self/fd/{tmp}", ".envrc"))
refused("link() of /proc/self/fd/N: EXDEV, as the kernel says",
        lambda: os.link(f"/proc/self/fd/{tmp}", "x"), (errno.EXDEV,))
linkat_follow(f"/proc/self/fd/{tmp}", "tmpfile-named")
check("linkat an O_TMPFILE elsewhere works", os.path.isfile("tmpfile-named"))
os.close(tmp)
os.symlink("prep2", "lnk-to-dir")
refused("hard link of a symlink to an ancestor", lambda: os.link("lnk-to-dir", ".config", follow_symlinks=False))

# A thread rewrites the path between the check and the use.
buf = ctypes.create_string_buffer(64)
stop = False
ok_name, bad_name = b"race-ok-file", b".envrc"


def flip():
    while not stop:
        ctypes.memmove(buf, bad_name + b"\0", len(bad_name) + 1)
        ctypes.memmove(buf, ok_name + b"\0", len(ok_name) + 1)


th = threading.Thread(target=flip)
th.start()
for _ in range(3000):
    fd = libc.open(buf, W, 0o644)
    if fd >= 0:
        os.close(fd)
    libc.mkdir(buf, 0o755)
stop = True
th.join()
check("racing thread: the name never created", absent(".envrc"))

# init's identity is not the command's to borrow.
refused("O_CREAT on /proc/1/mem", lambda: os.open("/proc/1/mem", os.O_RDWR | os.O_CREAT), (errno.EACCES, errno.EPERM))
os.symlink("/proc/1", "p1")
refused("O_CREAT on init's mem through a symlink",
        lambda: os.open("p1/mem", os.O_RDWR | os.O_CREAT), (errno.EACCES, errno.EPERM))
# Opens for writing without O_CREAT, which pid 1 serves with the depth rule.
refused("O_RDWR on /proc/1/mem", lambda: os.open("/proc/1/mem", os.O_RDWR), (errno.EACCES, errno.EPERM))
refused("O_RDWR on init's mem through a symlink", lambda: os.open("p1/mem", os.O_RDWR), (errno.EACCES, errno.EPERM))
refused("O_WRONLY on init's fd through a symlink",
        lambda: os.open("p1/fd/0", os.O_WRONLY), (errno.EACCES, errno.EPERM, errno.ENOENT))
refused("truncate of init's mem through a symlink",
        lambda: os.truncate("p1/mem", 0), (errno.EACCES, errno.EPERM, errno.EINVAL))
refused("O_CREAT in init's fd directory",
        lambda: os.open("/proc/1/fd/0", os.O_RDWR | os.O_CREAT), (errno.EACCES, errno.EPERM))
if libc.syscall(437, AT_FDCWD, b"x", ctypes.c_void_p(0), 0) == -1:  # openat2
    check("openat2 answers ENOSYS", ctypes.get_errno() == errno.ENOSYS, f"errno {ctypes.get_errno()}")
check("bad pointer is EFAULT", libc.syscall(83, ctypes.c_void_p(1), 0o755) == -1 and ctypes.get_errno() == errno.EFAULT)

# A unix socket bound under the name, any case of the name (a case-insensitive file system
# would take .ENVRC for .envrc), and the command's own /dev/fd/N in a symlink's target.
import socket  # noqa: E402 (probe scripts import what each section needs)
refused("bind() a unix socket at the name", lambda: socket.socket(socket.AF_UNIX).bind(".envrc"))
refused("bind() through an absolute path", lambda: socket.socket(socket.AF_UNIX).bind(R + "/.bashrc"))
sock = socket.socket(socket.AF_UNIX)
sock.bind("fine.sock")
check("bind() elsewhere works", os.path.exists("fine.sock"))
refused("O_CREAT .ENVRC", lambda: os.open(".ENVRC", W, 0o644))
refused("mkdir .Git/Hooks spelling of .git/hooks", lambda: os.mkdir(".git/HOOKS"))
logfd = os.open("log", W | os.O_TRUNC, 0o644)
os.dup2(logfd, 7)
with open("/dev/fd/7", "w") as f:
    f.write("via /dev/fd")
check("/dev/fd/N of the command's own", open("log").read() == "via /dev/fd")

# A FIFO opened with O_CREAT is finished by a child of init; a thread swapping the FIFO
# with a symlink to the name meanwhile must not get the child to follow it.
os.mkfifo("swapfifo")
os.symlink(".envrc", "swaplink")
stop = False


def swapper():
    while not stop:
        libc.syscall(316, AT_FDCWD, b"swapfifo", AT_FDCWD, b"swaplink", RENAME_EXCHANGE)


th = threading.Thread(target=swapper)
th.start()
for _ in range(1500):
    try:
        os.close(os.open("swapfifo", os.O_RDWR | os.O_CREAT, 0o644))
    except OSError:
        pass
stop = True
th.join()
check("FIFO swapped for a symlink to the name: never created", absent(".envrc"))
# bind() keeps the address the command asked for (multiprocessing needs it), and refuses an
# address longer than a sockaddr_un.
os.mkdir("socks")
s1 = socket.socket(socket.AF_UNIX)
s1.bind(R + "/socks/abs.sock")
check("bind(): getsockname is the absolute path asked for", s1.getsockname() == R + "/socks/abs.sock", s1.getsockname())
s2 = socket.socket(socket.AF_UNIX)
os.chdir("socks")
s2.bind("rel.sock")
os.chdir(R)
check("bind(): a relative path stays relative", s2.getsockname() == "rel.sock", s2.getsockname())
long_addr = ctypes.create_string_buffer(b"\x01\x00" + b"A" * 126, 128)
s3 = socket.socket(socket.AF_UNIX)
check("bind(): 128-byte unix address is EINVAL", libc.bind(s3.fileno(), long_addr, 128) == -1
      and ctypes.get_errno() == errno.EINVAL, f"errno {ctypes.get_errno()}")

# bind() of a relative path while another thread flips the working directory between a
# directory where .envrc is free and the one where it is guarded.
os.mkdir("flip")
stop = False


def flipper():
    a, b = os.open(R, os.O_RDONLY), os.open(R + "/flip", os.O_RDONLY)
    while not stop:
        os.fchdir(a)
        os.fchdir(b)


os.chdir(R + "/flip")
th = threading.Thread(target=flipper)
th.start()
for _ in range(2000):
    sk = socket.socket(socket.AF_UNIX)
    try:
        sk.bind(".envrc")
    except OSError:
        pass
    sk.close()
    if os.path.lexists(R + "/.envrc"):
        break
    try:
        os.unlink(R + "/flip/.envrc")
    except OSError:
        pass
stop = True
th.join()
os.chdir(R)
check("bind() racing a chdir(): the name never created", absent(".envrc"))

# Ordinary creation keeps its semantics.
old = os.umask(0o027)
fd = os.open("umask-file", W | os.O_CLOEXEC, 0o666)
check("umask applies", os.stat("umask-file").st_mode & 0o777 == 0o640, oct(os.stat("umask-file").st_mode))
check("O_CLOEXEC kept", os.get_inheritable(fd) is False)
os.close(fd)
fd = libc.open(b"inherit-file", W, 0o644)  # os.open would add O_CLOEXEC itself
check("no O_CLOEXEC: inheritable", fd >= 0 and os.get_inheritable(fd) is True)
os.close(fd)
os.mkdir("umask-dir", 0o777)
check("umask applies to mkdir", os.stat("umask-dir").st_mode & 0o777 == 0o750)
os.umask(old)
refused("O_EXCL on an existing file", lambda: os.open("umask-file", W | os.O_EXCL), (errno.EEXIST,))
fd = os.open("umask-file", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
check("O_APPEND kept", os.get_blocking(fd) and (libc.fcntl(fd, 3) & os.O_APPEND) != 0)
os.close(fd)
os.mkfifo("fifo")
got = []
t = threading.Thread(target=lambda: got.append(open("fifo").read()))
t.start()
with open("fifo", "w") as f:  # O_CREAT, writer may come first: must wait, not fail
    f.write("through the fifo")
t.join()
check("FIFO opened with O_CREAT before its reader", got == ["through the fifo"], repr(got))
refused("/dev/tty: no controlling terminal", lambda: os.open("/dev/tty", os.O_RDWR | os.O_CREAT), (errno.ENXIO,))
os.makedirs("a/b/c/d")
for i in range(200):
    with open(f"a/b/c/d/f{i}", "w") as f:
        f.write(str(i))
check("200 files in a new tree", len(os.listdir("a/b/c/d")) == 200)
os.rename("a", "renamed")
check("rename of a tree", os.path.isfile("renamed/b/c/d/f7"))

# Where the name exists (init made it, or it was there), the command's own open() goes on
# (SECCOMP_USER_NOTIF_FLAG_CONTINUE); its Landlock domain refuses it any new regular file,
# so a thread rewriting the string between init's look and that open gets nothing.
with open("race2-ok", "w") as f:
    f.write("x")
for extra, label in [(0, "O_WRONLY"), (os.O_TRUNC, "O_TRUNC"), (os.O_APPEND, "O_APPEND")]:
    buf = ctypes.create_string_buffer(64)
    ok_name, bad_name = b"race2-ok", b".bashrc"
    stop = False
    th = threading.Thread(target=flip)
    th.start()
    for _ in range(2000):
        fd = libc.open(buf, W | extra, 0o644)
        if fd >= 0:
            os.close(fd)
    stop = True
    th.join()
    check(f"racing thread, existing name, {label}: the name never created", absent(".bashrc"))
with open("grown", "w") as f:
    f.write("some longer content")
fd = os.open("grown", W | os.O_TRUNC, 0o644)
os.close(fd)
check("O_CREAT|O_TRUNC on an existing file truncates it", os.path.getsize("grown") == 0)
fd = os.open("grown", W | os.O_APPEND, 0o644)
os.write(fd, b"one")
os.close(fd)
fd = os.open("grown", W | os.O_APPEND, 0o644)
os.write(fd, b"two")
os.close(fd)
check("O_CREAT|O_APPEND appends", open("grown").read() == "onetwo", open("grown").read())
fd = os.open("/dev/null", W, 0o644)
check("O_CREAT on /dev/null", os.write(fd, b"x") == 1)
os.close(fd)
fd = os.open("ro-new", W, 0o444)
check("a new file whose mode refuses writing is still written by its creator", os.write(fd, b"x") == 1)
os.close(fd)
check("... and keeps that mode", os.stat("ro-new").st_mode & 0o777 == 0o444, oct(os.stat("ro-new").st_mode))
fd = os.open("new-no-trunc", W, 0o640)
os.write(fd, b"data")
os.close(fd)
check("a new file without O_TRUNC: its mode and data", os.stat("new-no-trunc").st_mode & 0o777 == 0o640
      and open("new-no-trunc").read() == "data")
if os.geteuid() != 0 or not os.access("ro-new", os.W_OK):
    refused("O_CREAT for writing on an existing read-only file: the kernel's EACCES",
            lambda: os.open("ro-new", W, 0o644))
import resource  # noqa: E402
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
probe = os.open("/dev/null", os.O_RDONLY)
os.close(probe)
resource.setrlimit(resource.RLIMIT_NOFILE, (probe, hard))
try:
    refused("no free fd: EMFILE", lambda: os.open("emfile-new", W | os.O_TRUNC, 0o644), (errno.EMFILE,))
finally:
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
check("... and no file left behind (O_TRUNC)", not os.path.lexists("emfile-new"))

# O_CREAT on an existing directory makes nothing: the kernel's answers, not refusals,
# even where the directory stands on the way of guarded paths (R, .git).
refused("O_CREAT on the protected root itself is EISDIR", lambda: os.open(R, W, 0o644), (errno.EISDIR,))
refused("O_CREAT on .git is EISDIR", lambda: os.open(".git", W, 0o644), (errno.EISDIR,))
refused("O_CREAT|O_EXCL on .git is EEXIST", lambda: os.open(".git", W | os.O_EXCL, 0o644), (errno.EEXIST,))
fddir = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
refused("O_CREAT on the root through /proc/self/fd/N is EISDIR",
        lambda: os.open(str(dirfd), W, 0o644, dir_fd=fddir), (errno.EISDIR,))
os.close(fddir)
refused("O_CREAT|O_DIRECTORY on a new name is EINVAL",
        lambda: os.open("newdir-flag", W | os.O_DIRECTORY), (errno.EINVAL,))
refused("O_CREAT|O_DIRECTORY on .git is EINVAL", lambda: os.open(".git", os.O_RDONLY | os.O_CREAT | os.O_DIRECTORY),
        (errno.EINVAL,))
check("... and nothing made", not os.path.lexists("newdir-flag"))
TMPFILE_BIT = 0o20000000  # the kernel's __O_TMPFILE, without O_DIRECTORY
refused("O_CREAT with the tmpfile bit on a directory is EINVAL",
        lambda: os.open(".", os.O_RDWR | os.O_CREAT | TMPFILE_BIT),
        (errno.EINVAL,))
refused("O_CREAT with the tmpfile bit on .envrc is EINVAL",
        lambda: os.open(".envrc", os.O_RDWR | os.O_CREAT | TMPFILE_BIT),
        (errno.EINVAL,))

# Bare names take pid 1's fast way, through the caller's own cwd or dirfd.
sd = os.open("sub", os.O_RDONLY | os.O_DIRECTORY)
os.close(os.open("at-dirfd", W, 0o644, dir_fd=sd))
check("openat(dirfd, bare name) lands in that directory", os.path.isfile("sub/at-dirfd"))
os.mkdir("dir-at-dirfd", dir_fd=sd)
check("mkdirat(dirfd, bare name) lands in that directory", os.path.isdir("sub/dir-at-dirfd"))
pd = os.open("sub", os.O_PATH | os.O_DIRECTORY)
os.close(os.open("at-opath", W, 0o644, dir_fd=pd))
check("openat(O_PATH dirfd, bare name)", os.path.isfile("sub/at-opath"))
ff = os.open("umask-file", os.O_RDONLY)
refused("openat(a file's fd, bare name) is ENOTDIR", lambda: os.open("x", W, 0o644, dir_fd=ff), (errno.ENOTDIR,))
refused("openat(a closed fd, bare name) is EBADF", lambda: os.open("x", W, 0o644, dir_fd=999), (errno.EBADF,))
refused("mkdirat(a file's fd, bare name) is ENOTDIR", lambda: os.mkdir("x", dir_fd=ff), (errno.ENOTDIR,))
os.chdir("sub")
os.close(os.open("after-chdir", W, 0o644))
os.chdir(R)
check("a bare name after chdir() lands in the new cwd", os.path.isfile("sub/after-chdir"))
os.mkdir("sub2")
thread_rc = []


def own_fs_and_files():
    # This thread alone: its own cwd, and its own fd table where sd names sub2.
    thread_rc.append(libc.unshare(0x200 | 0x400))  # CLONE_FS | CLONE_FILES
    os.chdir("sub2")
    os.close(os.open("thread-cwd", W, 0o644))
    d = os.open(R + "/sub2", os.O_RDONLY | os.O_DIRECTORY)
    os.dup2(d, sd)
    os.close(os.open("thread-files", W, 0o644, dir_fd=sd))
    os.mkdir("thread-dir", dir_fd=sd)


th = threading.Thread(target=own_fs_and_files)
th.start()
th.join()
check("unshare(CLONE_FS|CLONE_FILES) in a thread", thread_rc == [0], repr(thread_rc))
check("a thread with its own cwd makes bare names there",
      os.path.isfile("sub2/thread-cwd") and not os.path.lexists("thread-cwd"))
check("a thread with its own fd table makes them at its own dirfd",
      os.path.isfile("sub2/thread-files") and os.path.isdir("sub2/thread-dir")
      and not os.path.lexists("sub/thread-files"))
check("the other threads' cwd is unchanged", os.getcwd() == R)

libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0, as ssh-agent does
fd = os.open("after-nondumpable", W, 0o644)
os.close(fd)
check("a non-dumpable process still creates files", os.path.isfile("after-nondumpable"))
os.close(os.open("nd-at-dirfd", W, 0o644, dir_fd=sd))
os.mkdir("nd-dir", dir_fd=sd)
check("... at a dirfd too", os.path.isfile("sub/nd-at-dirfd") and os.path.isdir("sub/nd-dir"))
refused("... and is still refused the name", lambda: os.open(".envrc", W, 0o644))

check("nothing protected exists",
      absent(".envrc", ".bashrc", ".config", ".git/hooks", ".ENVRC", ".ba\u017fhrc", ".git/hoo\u212as",
             ".env\u200brc", ".git/hoo\u00adks"))
sys.exit(min(failures, 100))
