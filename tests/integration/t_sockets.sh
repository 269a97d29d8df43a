# Host unix sockets: pathname sockets (in /tmp, in a read-only host dir, in an explicitly
# readable dir, in XDG_RUNTIME_DIR under bare --allow-write) and abstract sockets (own
# network namespace, and host network where Landlock's scope must block them).
. "$(dirname "$0")/lib.sh"
need_python

S1=$WORK/s1.sock
S2=$HOSTDIR/sockdir/s2.sock
XDG=$HOSTDIR/xdg
S3=$XDG/bus
ABS=zbint-abs-$UNIQ
mkdir -p "$HOSTDIR/sockdir" "$XDG"
start_server unix "$S1"
start_server unix "$S2"
start_server unix "$S3"
start_server abstract "$ABS"

# The servers answer from the host: the probe itself works.
for s in "$S1" "$S2" "$S3"; do
  run "$PROBE" connect-unix "$s"; expect_rc 0 "host can connect to $s (control)"
done
run "$PROBE" connect-abstract "$ABS"; expect_rc 0 "host can connect to the abstract socket (control)"

# Pathname sockets.
zb -- "$PROBE" connect-unix "$S1";  expect_rc_not 0 "socket in /tmp unreachable"
zb -- "$PROBE" connect-unix "$S2";  expect_rc_not 0 "socket in a read-only host dir unreachable"
zb --allow-read="$HOSTDIR/sockdir" -- "$PROBE" connect-unix "$S2"; expect_rc_not 0 "socket in an --allow-read dir unreachable"
zb --allow-net -- "$PROBE" connect-unix "$S2"; expect_rc_not 0 "socket unreachable with --allow-net"
zb --deny-write="$HOSTDIR" --allow-write="$WORK/home" -- "$PROBE" connect-unix "$S2"; expect_rc_not 0 "socket unreachable with --deny-write"
zb -- sh -c "ls -l '$S2'"; expect_rc 0 "the socket inode itself is visible"
zb -- "$PROBE" connect-unix "/proc/self/root$S2"; expect_rc_not 0 "socket unreachable via /proc/self/root"
run env XDG_RUNTIME_DIR="$XDG" "$ZEROBOX" --allow-write -- "$PROBE" connect-unix "$S3"
expect_rc_not 0 "bare --allow-write: socket in \$XDG_RUNTIME_DIR unreachable"
run env XDG_RUNTIME_DIR="$XDG" "$ZEROBOX" -A -- "$PROBE" connect-unix "$S3"
expect_rc_not 0 "-A: socket in \$XDG_RUNTIME_DIR unreachable"
run env XDG_RUNTIME_DIR="$XDG" "$ZEROBOX" --allow-write -- "$PROBE" write "$XDG/f"
expect_refused "bare --allow-write: \$XDG_RUNTIME_DIR itself stays read-only"
# A socket inside a directory made writable (a plain bind, where connect() would work): the
# kernel's list of bound sockets (/proc/net/unix) names it, and it is masked.
zb --allow-write="$HOSTDIR/sockdir" -- "$PROBE" connect-unix "$S2"; expect_rc_not 0 "socket in an --allow-write dir unreachable"
zb --allow-write -- "$PROBE" connect-unix "$S2"; expect_rc_not 0 "bare --allow-write: socket in any host dir unreachable"
zb -A -- "$PROBE" connect-unix "$S2"; expect_rc_not 0 "-A: socket in any host dir unreachable"
zb --allow-write="$HOSTDIR/sockdir" -- sh -c "rm -f '$S2' || mv '$S2' '$S2.moved'"
expect_rc_not 0 "the masked socket cannot be removed or renamed to get at the path"
run "$PROBE" connect-unix "$S2"; expect_rc 0 "the host's socket is intact after the runs"
# The command's own sockets in a writable directory work.
zb --allow-write="$HOSTDIR/sockdir" -- "$PY" -c "
import socket
s = socket.socket(socket.AF_UNIX); s.bind('$HOSTDIR/sockdir/own.sock'); s.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect('$HOSTDIR/sockdir/own.sock'); print('own-ok')"
expect_contains "$OUT" own-ok "the command's own socket in a writable dir works"
rm -f "$HOSTDIR/sockdir/own.sock"
# ssh-agent and tmux keep their sockets in /tmp (/tmp/ssh-XXXX/agent.N, /tmp/tmux-UID/):
# making /tmp really writable must not make them reachable.
SSHD=$(mktemp -d /tmp/ssh-zbintXXXXXX)
chmod 755 "$SSHD"
[ "$MODE" = user ] && chown 65534:65534 "$SSHD" 2>/dev/null
S5=$SSHD/agent.1
start_server unix "$S5"
zb --allow-write=/tmp -- "$PROBE" connect-unix "$S5"; expect_rc_not 0 "--allow-write=/tmp: ssh-agent socket in /tmp unreachable"
zb --allow-write -- "$PROBE" connect-unix "$S5"; expect_rc_not 0 "bare --allow-write: ssh-agent socket in /tmp unreachable"
zb -A -- "$PROBE" connect-unix "$S5"; expect_rc_not 0 "-A: ssh-agent socket in /tmp unreachable"
run env SSH_AUTH_SOCK="$S2" "$ZEROBOX" --allow-write -- "$PROBE" connect-unix "$S2"
expect_rc_not 0 "bare --allow-write: the socket \$SSH_AUTH_SOCK names is unreachable wherever it is"
rm -rf "$SSHD"
if [ -d /run ] && [ -w /run ] && [ "$MODE" = root ]; then
  S4=/run/zbint-$UNIQ.sock
  start_server unix "$S4"
  T_RUN_SOCK=$S4
  trap 'rm -f "$T_RUN_SOCK"; _cleanup' EXIT
  zb -- "$PROBE" connect-unix "$S4"; expect_rc_not 0 "socket in /run unreachable"
  zb --allow-write -- "$PROBE" connect-unix "$S4"; expect_rc_not 0 "bare --allow-write: socket in /run unreachable"
  # A mount below /run (`ip netns add` makes one) rules out an overlay of /run: its view
  # over the writable root must still leave the socket unreachable (once a recursive bind).
  # The mount is made in a mount namespace of each run's own (zb_run_mnt), so that the
  # tests running beside this one never see it come and go.
  T_RUN_MNT=/run/zbint-mnt-$UNIQ
  mkdir "$T_RUN_MNT"
  trap 'rmdir "$T_RUN_MNT" 2>/dev/null; rm -f "$T_RUN_SOCK"; _cleanup' EXIT
  zb_run_mnt() {
    run unshare --mount --propagation private sh -c 'mount -t tmpfs zbint "$1" && echo x >"$1/f" && shift && exec "$@"' \
      sh "$T_RUN_MNT" "$ZEROBOX" "$@"
  }
  zb_run_mnt --allow-write -- "$PROBE" connect-unix "$S4"
  expect_rc_not 0 "bare --allow-write, a mount below /run: socket in /run unreachable"
  zb_run_mnt -A -- "$PROBE" connect-unix "$S4"; expect_rc_not 0 "-A, a mount below /run: socket in /run unreachable"
  zb_run_mnt --allow-write -- cat "$T_RUN_MNT/f"; expect_rc 0 "bare --allow-write, a mount below /run: it is shown"
  expect_out x "bare --allow-write, a mount below /run: its files are shown"
  zb_run_mnt --allow-write -- "$PROBE" write "$T_RUN_MNT/g"; expect_rc_not 0 "bare --allow-write, a mount below /run: it stays read-only"
  zb_run_mnt --allow-write -- "$PROBE" write "/run/zbint-new-$UNIQ"; expect_rc_not 0 "bare --allow-write, a mount below /run: /run stays read-only"
  expect_absent "/run/zbint-new-$UNIQ" "bare --allow-write, a mount below /run: nothing was written to the host's /run"
  expect_absent "$T_RUN_MNT/g" "bare --allow-write, a mount below /run: nothing written under it on the host"
  rmdir "$T_RUN_MNT"
fi

# Abstract sockets.
zb -- "$PROBE" connect-abstract "$ABS"; expect_rc_not 0 "abstract socket unreachable (own network namespace)"
zb --allow-net -- "$PROBE" connect-abstract "$ABS"; expect_rc_not 0 "abstract socket unreachable with --allow-net (Landlock scope)"
zb -A -- "$PROBE" connect-abstract "$ABS"; expect_rc_not 0 "abstract socket unreachable with -A"
zb --allow-net --allow-write -- "$PROBE" connect-abstract "$ABS"; expect_rc_not 0 "abstract socket unreachable with --allow-net --allow-write"

# Inside the sandbox, the command's own sockets work.
for net in "" --allow-net; do
  zb $net -- "$PY" -c '
import socket, sys
name = "\0zbint-inside-'"$UNIQ"'"
s = socket.socket(socket.AF_UNIX); s.bind(name); s.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect(name)
p = "/tmp/zbint-inside.sock"
t = socket.socket(socket.AF_UNIX); t.bind(p); t.listen(1)
u = socket.socket(socket.AF_UNIX); u.connect(p)
print("ok")'
  expect_out ok "the command's own abstract and pathname sockets work ${net:-(no network)}"
done
finish
