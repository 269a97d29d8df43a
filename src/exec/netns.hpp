// The network namespace: a fresh one has only `lo`, and it starts down.
#pragma once

namespace zb::exec {

// Brings `lo` up in the current network namespace. No allocation. 0 or -1/errno.
int bring_up_loopback();

// A listening TCP socket on 127.0.0.1:port in the current network namespace, sent over
// the unix socket `channel` (SCM_RIGHTS) and closed here: the supervisor serves it from
// the host's namespace (filtered mode). No allocation. 0 or -1/errno.
int send_proxy_listener(int channel, unsigned short port);

// The supervisor's side: the listening socket, or -1 when the child sent none (it failed
// first and said why on its report pipe).
int receive_proxy_listener(int channel);

// One fd over a unix socket (SCM_RIGHTS), and back (close-on-exec; `flags` for recvmsg,
// MSG_DONTWAIT say). No allocation. send: 0 or -1/errno; receive: the fd or -1.
int send_fd(int channel, int fd);
int receive_fd(int channel, int flags);

}  // namespace zb::exec
