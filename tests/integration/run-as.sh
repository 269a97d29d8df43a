#!/bin/bash
# run-as.sh MODE SCRIPT ZEROBOX PROBE HOSTBASE
#
# Runs one integration test script as root (MODE=root) or as uid/gid 65534 with no
# capabilities (MODE=user, which makes zerobox take the user-namespace path), in a
# clean environment with fresh directories:
#   WORK     a new directory under /tmp (a scratch dir inside the sandbox)
#   HOSTDIR  a new directory under HOSTBASE (the build tree: not a scratch dir, so
#            writes to it from inside the sandbox must fail)
#   HOME     $WORK/home
# and exports ZEROBOX, PROBE, TESTDIR (this directory), MODE, and from the caller
# ZBT_KEEP_GOING and ZEROBOX_RACE_ROUNDS (set by CTest: tests/integration/scaling). Exit
# 77 = skipped.
# Afterwards every process left in the test's process group is killed (and reported as
# a failure) and both directories are removed.
set -u
if [ $# -ne 5 ]; then
  echo "usage: $0 root|user SCRIPT ZEROBOX PROBE HOSTBASE" >&2
  exit 2
fi
mode=$1 script=$2 zerobox=$3 probe=$4 hostbase=$5
testdir=$(cd "$(dirname "$script")" && pwd)

for f in "$zerobox" "$probe"; do
  [ -x "$f" ] || { echo "run-as: $f is missing or not executable (build first)" >&2; exit 1; }
done

runas=()
if [ "$(id -u)" = 0 ]; then
  if [ "$mode" = user ]; then
    command -v setpriv >/dev/null || { echo "SKIP: setpriv is missing" >&2; exit 77; }
    runas=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
  fi
else
  if [ "$mode" = root ]; then
    echo "SKIP: root mode needs root" >&2
    exit 77
  fi
fi
uid=$(${runas[@]+"${runas[@]}"} id -u)
user=$(${runas[@]+"${runas[@]}"} id -un 2>/dev/null || echo "u$uid")

# What a run leaves when CTest kills it at its timeout (SIGKILL: no trap runs): its
# staging copy, WORK and HOSTDIR, each named after the run-as.sh that made it. The next
# run removes those whose run-as.sh is gone.
sweep() {
  local d pid
  for d in "$@"; do
    [ -d "$d" ] || continue
    pid=${d##*/}
    pid=${pid#*.}
    pid=${pid%%.*}
    case $pid in '' | *[!0-9]*) continue ;; esac
    case "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" in *run-as.sh*) continue ;; esac
    rm -rf "$d" 2>/dev/null
  done
}
sweep /var/lib/zerobox-test.[0-9]*.* /tmp/zbint.[0-9]*.* "$hostbase"/h.[0-9]*.* /var/lib/zerobox-test-hostdirs/h.[0-9]*.*

# The test user must reach the binaries and scripts through every directory. A clone in
# a private directory (say /root/src) is not reachable by uid 65534: then run from a copy
# in a world-traversable place outside the scratch directories, rather than loosen the
# permissions of the caller's directories.
stage=
reachable() {
  local f
  for f in "$zerobox" "$probe"; do ${runas[@]+"${runas[@]}"} test -x "$f" || return 1; done
  ${runas[@]+"${runas[@]}"} test -r "$script" && ${runas[@]+"${runas[@]}"} test -w "$hostbase" 2>/dev/null
}
mkdir -p "$hostbase"
if [ "$mode" = user ] && [ "$(id -u)" = 0 ] && ! reachable; then
  stage=$(mktemp -d /var/lib/zerobox-test.$$.XXXXXXXX) || exit 1
  trap 'rm -rf "$stage"' EXIT
  chmod 755 "$stage"
  cp "$zerobox" "$stage/zerobox" && cp "$probe" "$stage/zb_probe" && cp -r "$testdir" "$stage/t" || exit 1
  chmod -R a+rX "$stage"
  zerobox=$stage/zerobox probe=$stage/zb_probe testdir=$stage/t
  script=$stage/t/$(basename "$script") hostbase=$stage/hostdirs
  mkdir -p "$hostbase" && chmod 755 "$hostbase"
fi
for f in "$zerobox" "$probe"; do
  ${runas[@]+"${runas[@]}"} test -x "$f" || { echo "run-as: uid $uid cannot execute $f" >&2; exit 1; }
done
for f in "$script" "$testdir/lib.sh" "$testdir/servers.py"; do
  ${runas[@]+"${runas[@]}"} test -r "$f" || { echo "run-as: uid $uid cannot read $f" >&2; exit 1; }
done

# zerobox needs user namespaces in both modes; without them the test cannot run.
if ! ${runas[@]+"${runas[@]}"} unshare --user true 2>/dev/null; then
  echo "SKIP: user namespaces are unavailable to uid $uid" >&2
  exit 77
fi

# /tmp, /var/tmp and /dev/shm are scratch space inside the sandbox: a build tree there
# (a CI checkout under /tmp) would make every "write refused" check pass for the wrong
# reason. Host directories then live in /var/lib instead.
case "$(realpath -m "$hostbase")/" in
  /tmp/* | /var/tmp/* | /dev/shm/*)
    if [ "$(id -u)" = 0 ]; then
      hostbase=/var/lib/zerobox-test-hostdirs
      mkdir -p "$hostbase" && chmod 755 "$hostbase"
    else
      echo "SKIP: the build tree is in a scratch directory (/tmp, /var/tmp): host writes cannot be tested from there" >&2
      exit 77
    fi
    ;;
esac
mkdir -p "$hostbase"
work=$(mktemp -d /tmp/zbint.$$.XXXXXXXX) || exit 1
hostdir=$(mktemp -d "$hostbase/h.$$.XXXXXXXX") || { rm -rf "$work"; exit 1; }
chmod 755 "$work" "$hostdir"
mkdir -p "$work/home"
if [ "$mode" = user ] && [ "$(id -u)" = 0 ]; then
  chown -R 65534:65534 "$work" "$hostdir"
fi

leader=
cleanup() {
  if [ -n "$leader" ]; then
    kill -KILL -- "-$leader" 2>/dev/null
  fi
  rm -rf "$work" "$hostdir"
  [ -n "$stage" ] && rm -rf "$stage"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

cd "$work" || exit 1
# setsid: the script leads its own process group, so anything it leaves behind is found.
setsid ${runas[@]+"${runas[@]}"} env -i \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME="$work/home" USER="$user" SHELL=/bin/sh TERM=dumb LANG=C.UTF-8 \
  ZEROBOX="$zerobox" PROBE="$probe" WORK="$work" HOSTDIR="$hostdir" TESTDIR="$testdir" MODE="$mode" ZBT_KEEP_GOING="${ZBT_KEEP_GOING:-}" ZEROBOX_RACE_ROUNDS="${ZEROBOX_RACE_ROUNDS:-}" \
  /bin/bash "$script" </dev/null &
leader=$!
wait "$leader"
rc=$?

# Live (non-zombie) members of the test's process group; dying ones get 3 seconds.
leftovers() { ps -eo pid=,pgid=,stat=,args= | awk -v g="$leader" '$2 == g && $3 !~ /^Z/'; }
for _ in $(seq 60); do
  [ -z "$(leftovers)" ] && break
  sleep 0.05
done
left=$(leftovers)
if [ -n "$left" ]; then
  echo "run-as: the test left processes behind:" >&2
  echo "$left" >&2
  [ "$rc" = 0 ] && rc=1
fi
exit "$rc"
