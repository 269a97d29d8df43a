// bench/notif_roundtrip.c - what one seccomp user notification costs on this machine, by
// the way it is answered: the floor under the create guard's per-call cost
// (docs/performance.md).
//
// Usage: notif_roundtrip MODE [CALLS]   (no privileges needed)
//   MODE  answer       an error code (SECCOMP_IOCTL_NOTIF_SEND), as for mkdir or a refusal
//         continue     SECCOMP_USER_NOTIF_FLAG_CONTINUE: the caller's own call goes on
//         addfd        an fd handed over (SECCOMP_IOCTL_NOTIF_ADDFD with ADDFD_FLAG_SEND)
//   Append "-sync" to set SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6) on the listener.
// A child traps openat("/dev/null", O_RDONLY|O_CREAT) CALLS times (default 20000); the
// parent answers. Prints microseconds per call, the child's open and close included. Run
// it under `taskset -c 0` too: both on one CPU, no wake-up crosses CPUs.
// Build: cc -O2 -o notif_roundtrip bench/notif_roundtrip.c
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1UL
#endif

static void pass_fd(int sock, int fd) {
  char ctl[CMSG_SPACE(sizeof fd)];
  memset(ctl, 0, sizeof ctl);
  char byte = 0;
  struct iovec iov = {&byte, 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  struct cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fd);
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  if (sendmsg(sock, &m, 0) != 1) _exit(2);
}

static int take_fd(int sock) {
  char ctl[CMSG_SPACE(sizeof(int))];
  char byte;
  struct iovec iov = {&byte, 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  if (recvmsg(sock, &m, 0) != 1 || CMSG_FIRSTHDR(&m) == NULL) return -1;
  int fd;
  memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof fd);
  return fd;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: notif_roundtrip answer|continue|addfd[-sync] [CALLS]\n");
    return 2;
  }
  const char* mode = argv[1];
  int sync = strstr(mode, "-sync") != NULL;
  int addfd = strncmp(mode, "addfd", 5) == 0, go_on = strncmp(mode, "continue", 8) == 0;
  if (!addfd && !go_on && strncmp(mode, "answer", 6) != 0) {
    fprintf(stderr, "notif_roundtrip: unknown mode %s\n", mode);
    return 2;
  }
  int calls = argc > 2 ? atoi(argv[2]) : 20000;
  if (calls < 1) calls = 1;
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) return 1;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    // openat with O_CREAT goes to the listener; everything else runs.
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_CREAT, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(1);
    int l = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (l < 0) _exit(1);
    pass_fd(sp[1], l);
    close(l);
    char go;
    if (read(sp[1], &go, 1) != 1) _exit(1);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < calls; ++i) {
      int fd = openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CREAT, 0644);
      if (fd < 0) _exit(3);
      close(fd);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e3 / calls;
    printf("%s: %.2f us per call\n", mode, us);
    fflush(stdout);
    _exit(0);
  }
  int l = take_fd(sp[0]);
  if (l < 0) return 1;
  if (sync && ioctl(l, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0) {
    perror("notif_roundtrip: SECCOMP_IOCTL_NOTIF_SET_FLAGS");
    return 1;
  }
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (write(sp[0], "g", 1) != 1) return 1;
  for (int i = 0; i < calls; ++i) {
    struct seccomp_notif req;
    memset(&req, 0, sizeof req);
    if (ioctl(l, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
      perror("notif_roundtrip: SECCOMP_IOCTL_NOTIF_RECV");
      break;
    }
    if (addfd) {
      struct seccomp_notif_addfd a = {.id = req.id, .flags = SECCOMP_ADDFD_FLAG_SEND, .srcfd = (__u32)null};
      if (ioctl(l, SECCOMP_IOCTL_NOTIF_ADDFD, &a) < 0) perror("notif_roundtrip: SECCOMP_IOCTL_NOTIF_ADDFD");
    } else {
      // An answer of 3 stands for an fd: the child closes it (EBADF at worst).
      struct seccomp_notif_resp r = {.id = req.id, .val = go_on ? 0 : 3, .flags = go_on ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0};
      if (ioctl(l, SECCOMP_IOCTL_NOTIF_SEND, &r) != 0) perror("notif_roundtrip: SECCOMP_IOCTL_NOTIF_SEND");
    }
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
