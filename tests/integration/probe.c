/* zb_probe: run inside the sandbox, try one thing, exit with the errno it got
 * (0 on success). In the style of bubblewrap's tests/try-syscall.c.
 *
 *   probe syscall NAME          call NAME with bad pointers/fds so that an unfiltered
 *                               call fails with EFAULT/EBADF/EINVAL/ESRCH..., while a
 *                               filtered one gets EPERM (ENOSYS for clone3)
 *   probe connect-unix PATH     connect(2) to a pathname unix stream socket
 *   probe connect-abstract NAME connect(2) to an abstract unix stream socket "\0NAME"
 *   probe connect-tcp HOST PORT connect(2) to an IPv4/IPv6 literal
 *   probe kill PID SIG          kill(2)
 *   probe ptrace PID            PTRACE_ATTACH (detaches again on success)
 *   probe read PATH             open+read, content to stdout
 *   probe write PATH            open(O_WRONLY|O_CREAT|O_APPEND)+write "zb\n"
 *   probe overwrite PATH        open(O_WRONLY|O_CREAT|O_TRUNC)+write "zb\n" (a shell's >)
 *   probe create PATH           open(O_WRONLY|O_CREAT|O_EXCL)
 *   probe truncate PATH         truncate(PATH, 0)
 *   probe chmod PATH MODE       chmod (MODE octal)
 *   probe rename FROM TO        rename(2)
 *   probe unlink PATH           unlink(2)
 *   probe rmdir PATH            rmdir(2)
 *   probe mkdir PATH            mkdir(2)
 *   probe mkfifo PATH           mkfifo(3)
 *   probe symlink TARGET PATH   symlink(2)
 *   probe ls DIR                list entries (one per line), errno of opendir
 *   probe fds                   print open fds above 2; exit 1 if there are any
 *   probe x32                   an x32 system call (getpid)
 *   probe int80 [WHAT]          an i386 system call via int $0x80: getpid (the default),
 *                               socket or socketcall (an AF_VSOCK socket)
 *   probe tiocsti               push a character into fd 0's tty input queue
 *   probe socket FAMILY         socket(FAMILY, SOCK_STREAM | a flag bit no kernel takes, 0):
 *                               an unfiltered call gets EINVAL (the flags are checked
 *                               first), a filtered one EAFNOSUPPORT. FAMILY is a number;
 *                               +hi sets bit 32 of the register (the kernel reads an int)
 *   probe socketpair FAMILY     the same for socketpair(2)
 *   probe socket-make FAMILY TYPE [PROTO]  really make the socket (and close it)
 *   probe chown PATH UID GID    chown(2)
 *   probe utimes PATH           utimensat(PATH, NULL): the times set to now
 *   probe setxattr PATH NAME    setxattr(2) of NAME to "zb"
 *   probe stat-mode PATH        print the mode (octal) and owner "MODE UID GID"
 *   probe tid-race N            N times: a process whose leader makes files by bare name
 *                               in its own cwd lead/ while another thread, with cwd
 *                               other/ (every other round a directory below it deeper
 *                               than PATH_MAX), calls execve(), which gives it the
 *                               leader's tid; prints how many files reached other/ or
 *                               the deep one, exit 1 if any
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_open_tree
#define __NR_open_tree 428
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif
#ifndef __NR_fsopen
#define __NR_fsopen 430
#endif
#ifndef __NR_fsconfig
#define __NR_fsconfig 431
#endif
#ifndef __NR_fsmount
#define __NR_fsmount 432
#endif
#ifndef __NR_fspick
#define __NR_fspick 433
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* An address that is never mapped: the kernel answers EFAULT for it. */
#define BAD ((void *)(uintptr_t)0x8)

static int usage(void) {
  fprintf(stderr,
          "usage: probe syscall NAME | connect-unix PATH | connect-abstract NAME | connect-tcp HOST PORT |\n"
          "       kill PID SIG | ptrace PID | read PATH | write PATH | overwrite PATH | create PATH |\n"
          "       truncate PATH | chmod PATH MODE | rename FROM TO | unlink PATH | rmdir PATH |\n"
          "       mkdir PATH | mkfifo PATH | symlink TARGET PATH | ls DIR | fds | x32 | int80 [WHAT] |\n"
          "       tiocsti | socket FAMILY | socketpair FAMILY | socket-make FAMILY TYPE [PROTO] |\n"
          "       chown PATH UID GID | utimes PATH | setxattr PATH NAME | stat-mode PATH\n");
  return 120;
}

/* Exit code for a failed call: its errno (never 0). */
static int err_rc(void) { return errno == 0 ? 119 : errno; }

static int rc_of(long r) { return r < 0 ? err_rc() : 0; }

static int report(const char *what, long r) {
  int rc = rc_of(r);
  if (rc != 0) fprintf(stderr, "probe: %s: %s\n", what, strerror(rc));
  return rc;
}

/* clone(CLONE_NEWUSER) through the raw system call; a child that got created exits 0. */
static long raw_clone_newuser(void) {
  long pid = syscall(__NR_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), NULL, NULL, NULL, NULL);
  if (pid == 0) _exit(0);
  if (pid > 0) {
    waitpid((pid_t)pid, NULL, 0);
    return 0;
  }
  return -1;
}

static long raw_clone3(void) {
  /* A valid-looking struct clone_args (size 64) for a plain fork. */
  uint64_t args[8];
  memset(args, 0, sizeof args);
  args[4] = SIGCHLD; /* exit_signal */
  long pid = syscall(__NR_clone3, args, sizeof args);
  if (pid == 0) _exit(0);
  if (pid > 0) {
    waitpid((pid_t)pid, NULL, 0);
    return 0;
  }
  return -1;
}

static int do_syscall(const char *name) {
  long r;
  errno = 0;
#define IS(n) (strcmp(name, n) == 0)
  if (IS("mount")) r = syscall(__NR_mount, BAD, BAD, BAD, 0UL, BAD);
  else if (IS("umount2")) r = syscall(__NR_umount2, BAD, 0);
  else if (IS("pivot_root")) r = syscall(__NR_pivot_root, BAD, BAD);
  else if (IS("chroot")) r = syscall(__NR_chroot, BAD);
  else if (IS("move_mount")) r = syscall(__NR_move_mount, -1, BAD, -1, BAD, 0);
  else if (IS("open_tree")) r = syscall(__NR_open_tree, -1, BAD, 0);
  else if (IS("fsopen")) r = syscall(__NR_fsopen, BAD, 0);
  else if (IS("fsconfig")) r = syscall(__NR_fsconfig, -1, 0, NULL, NULL, 0);
  else if (IS("fsmount")) r = syscall(__NR_fsmount, -1, 0, 0);
  else if (IS("fspick")) r = syscall(__NR_fspick, -1, BAD, 0);
  else if (IS("mount_setattr")) r = syscall(__NR_mount_setattr, -1, BAD, 0, BAD, 0);
  else if (IS("unshare_newuser")) r = syscall(__NR_unshare, CLONE_NEWUSER);
  else if (IS("clone_newuser")) r = raw_clone_newuser();
  else if (IS("clone3")) r = raw_clone3();
  else if (IS("ptrace")) r = syscall(__NR_ptrace, PTRACE_PEEKDATA, 0x7ffffff0, NULL, NULL);
  else if (IS("process_vm_readv")) r = syscall(__NR_process_vm_readv, getpid(), BAD, 1, BAD, 1, 0);
  else if (IS("process_vm_writev")) r = syscall(__NR_process_vm_writev, getpid(), BAD, 1, BAD, 1, 0);
  else if (IS("pidfd_getfd")) r = syscall(__NR_pidfd_getfd, -1, 0, 0);
  else if (IS("kcmp")) r = syscall(__NR_kcmp, getpid(), getpid(), 99, 0, 0);
  else if (IS("io_uring_setup")) r = syscall(__NR_io_uring_setup, 1, BAD);
  else if (IS("bpf")) r = syscall(__NR_bpf, 0xffff, BAD, 0);
  else if (IS("perf_event_open")) r = syscall(__NR_perf_event_open, BAD, 0, -1, -1, 0);
  else if (IS("userfaultfd")) r = syscall(__NR_userfaultfd, ~0);
  else if (IS("keyctl")) r = syscall(__NR_keyctl, 9999, 0, 0, 0, 0);
  else if (IS("add_key")) r = syscall(__NR_add_key, BAD, BAD, BAD, 0, 0);
  else if (IS("request_key")) r = syscall(__NR_request_key, BAD, BAD, BAD, 0);
  else if (IS("init_module")) r = syscall(__NR_init_module, BAD, 0, BAD);
  else if (IS("finit_module")) r = syscall(__NR_finit_module, -1, BAD, 0);
  else if (IS("delete_module")) r = syscall(__NR_delete_module, BAD, 0);
  else if (IS("kexec_load")) r = syscall(__NR_kexec_load, 0, 0, BAD, 0xffffffffUL);
  else if (IS("kexec_file_load")) r = syscall(__NR_kexec_file_load, -1, -1, 0, BAD, 0xffffffffUL);
  else if (IS("reboot")) r = syscall(__NR_reboot, 0, 0, 0, BAD); /* bad magic: EINVAL if it got through */
  else if (IS("swapon")) r = syscall(__NR_swapon, BAD, 0);
  else if (IS("swapoff")) r = syscall(__NR_swapoff, BAD);
  else if (IS("acct")) r = syscall(__NR_acct, BAD);
  else if (IS("clock_settime")) r = syscall(__NR_clock_settime, CLOCK_REALTIME, BAD);
  else if (IS("settimeofday")) r = syscall(__NR_settimeofday, BAD, BAD);
  else if (IS("syslog")) r = syscall(__NR_syslog, 3 /* READ_ALL */, BAD, 16);
  else if (IS("personality_addr_no_randomize"))
    r = syscall(__NR_personality, (unsigned long)(PER_LINUX | ADDR_NO_RANDOMIZE));
  else if (IS("personality_read_implies_exec"))
    r = syscall(__NR_personality, (unsigned long)(PER_LINUX | READ_IMPLIES_EXEC));
  else if (IS("personality_query")) r = syscall(__NR_personality, 0xffffffffUL);
  else if (IS("personality_linux")) r = syscall(__NR_personality, (unsigned long)PER_LINUX);
  else if (IS("open_by_handle_at")) r = syscall(__NR_open_by_handle_at, -1, BAD, 0);
  else if (IS("name_to_handle_at")) r = syscall(__NR_name_to_handle_at, -1, BAD, BAD, BAD, 0);
  else if (IS("setns")) r = syscall(__NR_setns, -1, 0);
  /* ioctl on fd -1: EBADF if the filter let it through. */
  else if (IS("ioctl_tiocsti")) r = syscall(__NR_ioctl, -1, (unsigned long)TIOCSTI, BAD);
  else if (IS("ioctl_tiocsti_high")) r = syscall(__NR_ioctl, -1, 0xffffffff00005412UL, BAD);
  else if (IS("ioctl_tiocsti_high1")) r = syscall(__NR_ioctl, -1, 0x0000000100005412UL, BAD);
  else if (IS("ioctl_tioclinux")) r = syscall(__NR_ioctl, -1, (unsigned long)TIOCLINUX, BAD);
  else if (IS("ioctl_tioclinux_high")) r = syscall(__NR_ioctl, -1, 0xffffffff0000541cUL, BAD);
  /* btrfs snapshot/subvolume creation, ocfs2 reflink, bcachefs subvolume creation */
  else if (IS("ioctl_btrfs_snap_create")) r = syscall(__NR_ioctl, -1, 0x50009401UL, BAD);
  else if (IS("ioctl_btrfs_subvol_create")) r = syscall(__NR_ioctl, -1, 0x5000940eUL, BAD);
  else if (IS("ioctl_btrfs_snap_create_v2")) r = syscall(__NR_ioctl, -1, 0x50009417UL, BAD);
  else if (IS("ioctl_btrfs_subvol_create_v2")) r = syscall(__NR_ioctl, -1, 0xffffffff50009418UL, BAD);
  else if (IS("ioctl_ocfs2_reflink")) r = syscall(__NR_ioctl, -1, 0x40186f04UL, BAD);
  else if (IS("ioctl_bcachefs_subvolume_create")) r = syscall(__NR_ioctl, -1, 0x4020bc10UL, BAD);
  else if (IS("ioctl_bcachefs_subvolume_create_v2")) r = syscall(__NR_ioctl, -1, 0x4030bc1dUL, BAD);
  /* Controls: calls that must not be filtered. */
  else if (IS("ioctl_fionread")) r = syscall(__NR_ioctl, -1, (unsigned long)FIONREAD, BAD);
  else if (IS("getpid")) r = syscall(__NR_getpid);
  else if (IS("fork")) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    if (pid > 0) waitpid(pid, NULL, 0);
    r = pid < 0 ? -1 : 0;
  } else {
    fprintf(stderr, "probe: unknown syscall '%s'\n", name);
    return 120;
  }
#undef IS
  int rc = rc_of(r);
  fprintf(stderr, "probe: syscall %s: %s\n", name, rc ? strerror(rc) : "succeeded");
  return rc;
}

static int connect_un(const char *name, int abstract) {
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  size_t n = strlen(name);
  if (n + 2 > sizeof sa.sun_path) return ENAMETOOLONG;
  socklen_t len;
  if (abstract) {
    memcpy(sa.sun_path + 1, name, n);
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
  } else {
    memcpy(sa.sun_path, name, n);
    len = (socklen_t)sizeof sa;
  }
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return report("socket", -1);
  int rc = report("connect", connect(s, (struct sockaddr *)&sa, len));
  close(s);
  return rc;
}

static int connect_tcp(const char *host, const char *port) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t len;
  int fam;
  struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
    fam = in4->sin_family = AF_INET;
    in4->sin_port = htons((uint16_t)atoi(port));
    len = sizeof *in4;
  } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
    fam = in6->sin6_family = AF_INET6;
    in6->sin6_port = htons((uint16_t)atoi(port));
    len = sizeof *in6;
  } else {
    fprintf(stderr, "probe: not an IP literal: %s\n", host);
    return 120;
  }
  int s = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return report("socket", -1);
  int rc = report("connect", connect(s, (struct sockaddr *)&ss, len));
  close(s);
  return rc;
}

static int do_read(const char *p) {
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return report("open", -1);
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      int rc = report("read", -1);
      close(fd);
      return rc;
    }
    if (n == 0) break;
    fwrite(buf, 1, (size_t)n, stdout);
  }
  close(fd);
  return 0;
}

static int do_write(const char *p, int flags) {
  int fd = open(p, flags | O_CLOEXEC, 0644);
  if (fd < 0) return report("open", -1);
  int rc = 0;
  if ((flags & O_EXCL) == 0) rc = report("write", write(fd, "zb\n", 3) == 3 ? 0 : -1);
  close(fd);
  return rc;
}

static int do_ls(const char *p) {
  DIR *d = opendir(p);
  if (d == NULL) return report("opendir", -1);
  struct dirent *e;
  errno = 0;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    printf("%s\n", e->d_name);
  }
  int rc = errno ? report("readdir", -1) : 0;
  closedir(d);
  return rc;
}

static int do_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL) return report("opendir /proc/self/fd", -1);
  int self = dirfd(d), extra = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd <= 2 || fd == self) continue;
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    target[n < 0 ? 0 : n] = 0;
    printf("fd %d -> %s\n", fd, target);
    extra++;
  }
  closedir(d);
  return extra ? 1 : 0;
}

static int do_x32(void) {
#if defined(__x86_64__)
  long r = syscall(0x40000000L | 39 /* x32 getpid */);
  return report("x32 getpid", r);
#else
  return 120;
#endif
}

#if defined(__x86_64__)
/* An i386 system call through int $0x80, with up to three register arguments. */
static long int80(long nr, long a, long b, long c) {
  __asm__ volatile("int $0x80" : "+a"(nr) : "b"(a), "c"(b), "d"(c) : "memory");
  return nr;
}
#endif

static int int80_report(const char *what, long r) {
  if (r < 0 && r > -4096) {
    errno = (int)-r;
    return report(what, -1);
  }
  return 0;
}

/* what: getpid, socket (i386's own socket(AF_VSOCK, SOCK_STREAM, 0)) or socketcall (the
 * same through socketcall(SYS_SOCKET), its arguments in memory below 4 GiB). A socket
 * made is closed again. */
static int do_int80(const char *what) {
#if defined(__x86_64__)
  if (strcmp(what, "getpid") == 0) return int80_report("int80 getpid", int80(20, 0, 0, 0));
  long r;
  if (strcmp(what, "socket") == 0) {
    r = int80(359, 40 /* AF_VSOCK */, SOCK_STREAM, 0);
  } else if (strcmp(what, "socketcall") == 0) {
    uint32_t *args = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    if (args == MAP_FAILED) return report("mmap", -1);
    args[0] = 40, args[1] = SOCK_STREAM, args[2] = 0;
    r = int80(102, 1 /* SYS_SOCKET */, (long)(uintptr_t)args, 0);
  } else {
    return 120;
  }
  if (r >= 0) int80(6 /* close */, r, 0, 0);
  return int80_report(what, r);
#else
  (void)what;
  return 120;
#endif
}

/* A family number, with an optional "+hi": bit 32 set in the register. */
static unsigned long family_arg(const char *s) {
  unsigned long f = strtoul(s, NULL, 10);
  if (strstr(s, "+hi") != NULL) f |= 1UL << 32;
  return f;
}

/* SOCK_STREAM with a flag bit that is neither SOCK_CLOEXEC nor SOCK_NONBLOCK. */
#define BAD_SOCK_TYPE ((unsigned long)(SOCK_STREAM | 0x40000000))

static int do_socket(const char *family, int pair) {
  long r;
  errno = 0;
  if (pair) {
    int sv[2];
    r = syscall(__NR_socketpair, family_arg(family), BAD_SOCK_TYPE, 0UL, sv);
  } else {
    r = syscall(__NR_socket, family_arg(family), BAD_SOCK_TYPE, 0UL);
  }
  if (r >= 0) {
    fprintf(stderr, "probe: %s(%s) with bad flags succeeded\n", pair ? "socketpair" : "socket", family);
    return 0;
  }
  int rc = err_rc();
  fprintf(stderr, "probe: %s(%s): %s\n", pair ? "socketpair" : "socket", family, strerror(rc));
  return rc;
}

static int do_socket_make(const char *family, const char *type, const char *proto) {
  int s = socket(atoi(family), atoi(type) | SOCK_CLOEXEC, proto ? atoi(proto) : 0);
  if (s < 0) return report("socket", -1);
  close(s);
  return 0;
}

static int do_tiocsti(void) {
  if (!isatty(0)) {
    fprintf(stderr, "probe: fd 0 is not a tty\n");
    return 121;
  }
  char c = '#';
  return report("ioctl(0, TIOCSTI)", ioctl(0, TIOCSTI, &c));
}

static int race_started;

static void *exec_soon(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&race_started, __ATOMIC_ACQUIRE)) {
  }
  usleep((useconds_t)(rand() % 300));
  execl("/bin/true", "true", (char *)NULL);
  return NULL;
}

enum { k_deep_levels = 24 }; /* of 200 bytes: 4,824 bytes below other/ */

/* Each level of the deep directory, from the current directory; mkdir: make them. */
static int walk_deep(int make) {
  char name[201];
  memset(name, 'd', 200);
  name[200] = '\0';
  for (int l = 0; l < k_deep_levels; ++l) {
    if (make && mkdir(name, 0777) != 0 && errno != EEXIST) return -1;
    if (chdir(name) != 0) return -1;
  }
  return 0;
}

static int count_misplaced(const char *label) {
  DIR *d = opendir(".");
  if (d == NULL) return -1;
  int misplaced = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == 'f' && misplaced++ < 3) printf("misplaced: %s/%s\n", label, e->d_name);
  }
  closedir(d);
  return misplaced;
}

static int tid_race(int n) {
  int top = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0 || (mkdir("lead", 0777) != 0 && errno != EEXIST) || (mkdir("other", 0777) != 0 && errno != EEXIST) ||
      chdir("other") != 0 || walk_deep(1) != 0 || fchdir(top) != 0) {
    perror("probe: tid-race set-up");
    return 120;
  }
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid < 0) return report("fork", -1);
    if (pid == 0) {
      srand((unsigned)i);
      pthread_t t;
      if (chdir("other") != 0 || ((i & 1) != 0 && walk_deep(0) != 0)) _exit(120);
      if (pthread_create(&t, NULL, exec_soon, NULL) != 0) _exit(120);
      if (unshare(CLONE_FS) != 0 || fchdir(top) != 0 || chdir("lead") != 0) _exit(120); /* this thread only */
      __atomic_store_n(&race_started, 1, __ATOMIC_RELEASE);
      char name[64];
      for (int k = 0;; ++k) {
        snprintf(name, sizeof name, "f%d_%d", i, k);
        int fd = open(name, O_WRONLY | O_CREAT, 0644);
        if (fd >= 0) close(fd);
      }
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "probe: race round %d ended with status %#x\n", i, st);
      return 120;
    }
  }
  int shallow = chdir("other") == 0 ? count_misplaced("other") : -1;
  int deep = walk_deep(0) == 0 ? count_misplaced("other/(deep)") : -1;
  if (shallow < 0 || deep < 0) return report("tid-race: count", -1);
  printf("%d of the leader's files reached other/, %d the deep directory below it\n", shallow, deep);
  return shallow + deep != 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  const char *cmd = argv[1];
#define CMD(n, args) (strcmp(cmd, n) == 0 && argc == 2 + (args))
  if (CMD("syscall", 1)) return do_syscall(argv[2]);
  if (CMD("connect-unix", 1)) return connect_un(argv[2], 0);
  if (CMD("connect-abstract", 1)) return connect_un(argv[2], 1);
  if (CMD("connect-tcp", 2)) return connect_tcp(argv[2], argv[3]);
  if (CMD("kill", 2)) return report("kill", kill((pid_t)atol(argv[2]), atoi(argv[3])));
  if (CMD("ptrace", 1)) {
    pid_t pid = (pid_t)atol(argv[2]);
    long r = ptrace(PTRACE_ATTACH, pid, NULL, NULL);
    int rc = report("ptrace(PTRACE_ATTACH)", r);
    if (rc == 0) {
      waitpid(pid, NULL, __WALL);
      ptrace(PTRACE_DETACH, pid, NULL, NULL);
    }
    return rc;
  }
  if (CMD("read", 1)) return do_read(argv[2]);
  if (CMD("write", 1)) return do_write(argv[2], O_WRONLY | O_CREAT | O_APPEND);
  if (CMD("overwrite", 1)) return do_write(argv[2], O_WRONLY | O_CREAT | O_TRUNC);
  if (CMD("create", 1)) return do_write(argv[2], O_WRONLY | O_CREAT | O_EXCL);
  if (CMD("truncate", 1)) return report("truncate", truncate(argv[2], 0));
  if (CMD("chmod", 2)) return report("chmod", chmod(argv[2], (mode_t)strtol(argv[3], NULL, 8)));
  if (CMD("rename", 2)) return report("rename", rename(argv[2], argv[3]));
  if (CMD("unlink", 1)) return report("unlink", unlink(argv[2]));
  if (CMD("rmdir", 1)) return report("rmdir", rmdir(argv[2]));
  if (CMD("mkdir", 1)) return report("mkdir", mkdir(argv[2], 0755));
  if (CMD("mkfifo", 1)) return report("mkfifo", mkfifo(argv[2], 0644));
  if (CMD("symlink", 2)) return report("symlink", symlink(argv[2], argv[3]));
  if (CMD("ls", 1)) return do_ls(argv[2]);
  if (CMD("fds", 0)) return do_fds();
  if (CMD("x32", 0)) return do_x32();
  if (CMD("int80", 0)) return do_int80("getpid");
  if (CMD("int80", 1)) return do_int80(argv[2]);
  if (CMD("tiocsti", 0)) return do_tiocsti();
  if (CMD("socket", 1)) return do_socket(argv[2], 0);
  if (CMD("socketpair", 1)) return do_socket(argv[2], 1);
  if (CMD("socket-make", 2)) return do_socket_make(argv[2], argv[3], NULL);
  if (CMD("socket-make", 3)) return do_socket_make(argv[2], argv[3], argv[4]);
  if (CMD("chown", 3)) return report("chown", chown(argv[2], (uid_t)atol(argv[3]), (gid_t)atol(argv[4])));
  if (CMD("utimes", 1)) return report("utimensat", utimensat(AT_FDCWD, argv[2], NULL, 0));
  if (CMD("setxattr", 2)) return report("setxattr", setxattr(argv[2], argv[3], "zb", 2, 0));
  if (CMD("stat-mode", 1)) {
    struct stat st;
    if (stat(argv[2], &st) != 0) return report("stat", -1);
    printf("%o %u %u\n", (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid);
    return 0;
  }
  if (CMD("tid-race", 1)) return tid_race(atoi(argv[2]));
#undef CMD
  return usage();
}
