#!/usr/bin/env bash
# bench/run.sh - start-up overhead and memory benchmark of zerobox against the bare
# command, util-linux unshare (the namespace floor) and bubblewrap, on this machine.
#
# Usage: bash bench/run.sh            (run as root; about 1.5-2 minutes on 2 cores)
#        QUICK=1 bash bench/run.sh    (smoke run: a few runs per row, ~20 s)
#
# Env knobs:
#   RUNS=40 WARMUP=5   timed / untimed runs per row and workload (QUICK=1: RUNS=5 WARMUP=1)
#   ROUNDS=1           hyperfine runs per workload; with N > 1, each workload is timed in N
#                      hyperfine runs of RUNS runs per row, the row order rotated every round,
#                      and the samples pooled: drift (a busy neighbour, fs state) then hits
#                      every row alike instead of whichever rows ran at that moment
#   ZEROBOX=path       binary under test (default: build/zerobox of this repository)
#   WORKLOADS="true echo python write"   subset/order of workloads to time
#   WRITE_DIR=dir      the write workload's allowed dir (default: $RESULTS/allow-w; see the
#                      note at WRITE_DIR below about ext4 without a journal)
#   ALLNET=1           add the row zerobox-allnet (--allow-net: no network namespace); 0 = off
#   NOPROTECT=1        add the row zerobox-noprotect (--no-protect: no protected paths, so no
#                      create guard; what bwrap's row does); 0 = off
#   UNPRIV=1           also time the `true` row as uid 65534 via setpriv; 0 = off
#   OUT=file           also write the markdown report to this file
#   COPY_BIN=1         benchmark a copy of ZEROBOX taken at start (results dir), so a rebuild
#                      during the run cannot mix two binaries; 0 = run ZEROBOX in place
#   ANALYSIS=1         also time start-up components side by side (zerobox --no-sandbox,
#                      unshare and bwrap with/without a network namespace) and, if `perf trace`
#                      works, split start-up into phases with bench/phases.py (PHASE_RUNS=20)
#   RESULTS_ROOT=/var/tmp/zerobox-bench   raw data goes to $RESULTS=$RESULTS_ROOT/<UTC stamp>/
#                      (not /tmp: bwrap and zerobox mount their own /tmp view)
#
# Per workload ONE hyperfine run (`hyperfine -N`, no -i; ROUNDS=N: N runs) holds every row:
#   bare            CMD
#   unshare         unshare --user --map-root-user --mount --net --ipc --uts --pid --fork --kill-child -- CMD
#   bwrap           bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp [--bind DIR DIR] --unshare-all --die-with-parent -- CMD
#   zerobox         zerobox --allow-write=DIR -- CMD
#   zerobox-allnet  zerobox --allow-net --allow-write=DIR -- CMD
#   zerobox-noprotect  zerobox --no-protect --allow-write=DIR -- CMD
# Workloads: /bin/true, /bin/echo hello, python3 -c pass, and a /bin/sh script writing
#   1,000 small files into WRITE_DIR with shell builtins (hyperfine --prepare cleans up
#   before every run). DIR is WRITE_DIR for the write workload, $RESULTS/allow otherwise.
# Also: peak RSS (VmHWM of the tool's top-level process while `sleep 1` runs inside,
#   and /usr/bin/time %M of `TOOL -- /bin/true`), exec/process counts (strace, if present).
# Exit status: 0 if every zerobox row ran every workload; 1 if any zerobox run failed
#   (so the script doubles as a smoke test); 2 for a missing tool or bad setting.
# Needs (Debian/Ubuntu packages): hyperfine, time, bubblewrap, util-linux, python3;
#   strace and perf (linux-perf) optional. Nothing is installed by this script.
set -u -o pipefail

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
ZEROBOX=${ZEROBOX:-$REPO/build/zerobox}
RUNS=${RUNS:-40}; WARMUP=${WARMUP:-5}; ROUNDS=${ROUNDS:-1}
if [ "${QUICK:-0}" = 1 ]; then RUNS=${QUICK_RUNS:-5}; WARMUP=1; fi
ALLNET=${ALLNET:-1}; NOPROTECT=${NOPROTECT:-1}; UNPRIV=${UNPRIV:-1}; COPY_BIN=${COPY_BIN:-1}; ANALYSIS=${ANALYSIS:-1}
PHASE_RUNS=${PHASE_RUNS:-20}; [ "${QUICK:-0}" = 1 ] && PHASE_RUNS=3
OUT=${OUT:-}
RESULTS_ROOT=${RESULTS_ROOT:-/var/tmp/zerobox-bench}
UNPRIV_UID=65534

die()  { echo "bench/run.sh: $*" >&2; exit 2; }
log()  { echo "[$(date +%H:%M:%S)] $*" >&2; }

# ---------------------------------------------------------------- prerequisites
need_cmd() {  # need_cmd COMMAND PACKAGE
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found: install the Debian/Ubuntu package '$2' (apt-get install $2)"
}
need_cmd hyperfine hyperfine
[ -x /usr/bin/time ] || die "/usr/bin/time not found: install the package 'time' (apt-get install time)"
need_cmd bwrap bubblewrap
need_cmd unshare util-linux
need_cmd setpriv util-linux
PY=/usr/bin/python3; [ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || die "python3 not found: install the package 'python3'"
case $RUNS$WARMUP$ROUNDS in *[!0-9]*) die "RUNS, WARMUP and ROUNDS must be integers";; esac
[ "$ROUNDS" -ge 1 ] || die "ROUNDS must be >= 1"
[ "$RUNS" -ge 2 ] || die "RUNS must be >= 2"
[ -x "$ZEROBOX" ] || die "ZEROBOX=$ZEROBOX is not an executable (build it: cmake -S $REPO -B $REPO/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo && ninja -C $REPO/build)"
ZEROBOX=$(cd "$(dirname "$ZEROBOX")" && pwd)/$(basename "$ZEROBOX")
BWRAP=$(command -v bwrap); UNSHARE=$(command -v unshare); SETPRIV=$(command -v setpriv)
STRACE=$(command -v strace || true)

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RES=$RESULTS_ROOT/$STAMP
ALLOW=$RES/allow             # the one writable directory every sandbox grants
ALLOW_U=$RES/allow-u         # the same for the uid-65534 rows (owned by that uid)
mkdir -p "$RES/hf" "$ALLOW" "$ALLOW_U" || die "cannot create $RES"
chmod 755 "$RESULTS_ROOT" "$RES" 2>/dev/null
LOG=$RES/log.txt; : >"$LOG"
log "results dir: $RES"
ZEROBOX_SRC=$ZEROBOX
if [ "$COPY_BIN" = 1 ]; then
  cp "$ZEROBOX" "$RES/zerobox" || die "cannot copy $ZEROBOX to $RES"
  ZEROBOX=$RES/zerobox
fi

# ---------------------------------------------------------------- fixtures
WRITE_SH=$RES/write1000.sh
cat >"$WRITE_SH" <<'EOF'
#!/bin/sh
# create 1,000 small files in $1/w with shell builtins only (no forks)
d=$1/w
mkdir "$d" || exit 1
i=0
while [ $i -lt 1000 ]; do echo "file $i" >"$d/f$i" || exit 1; i=$((i+1)); done
EOF
chmod 755 "$WRITE_SH"
# The write workload's DIR (default: $RESULTS/allow-w, on disk like a project directory).
# Caveat measured on this VM: its ext4 root fs has no journal, and there inode allocation
# skips inodes freed in the last 60-300 s (fs/ext4/ialloc.c: recently_deleted()); creating
# 1,000 files right after deleting 1,000 took ~200 ms instead of ~25 ms. So the output is
# moved aside between runs (and synced), never deleted while timing, and removed only at
# the very end -- which slows file creation for the next few minutes: leave >= 5 minutes
# between two runs of this script on such a file system. WRITE_DIR=dir measures elsewhere
# (a tmpfs: its output is simply deleted between runs).
WRITE_DIR=${WRITE_DIR:-$RES/allow-w}
mkdir -p "$WRITE_DIR" || die "cannot create WRITE_DIR=$WRITE_DIR"
WRITE_DIR=$(cd "$WRITE_DIR" && pwd -P)
WRITE_FS=$(stat -f -c %T "$WRITE_DIR")
PREP_SH=$RES/prepare.sh      # untimed, before every timed run of the write workload
TRASH=$WRITE_DIR/.trash      # same filesystem as WRITE_DIR
if [ "$WRITE_FS" = tmpfs ]; then
  cat >"$PREP_SH" <<EOF
#!/bin/sh
# remove the previous run's output
rm -rf "$WRITE_DIR/w"
EOF
else
  mkdir -p "$TRASH"
  cat >"$PREP_SH" <<EOF
#!/bin/sh
# move the previous run's output aside (deleted after the last workload), flush dirty data
if [ -d "$WRITE_DIR/w" ]; then t=\$(mktemp -d "$TRASH/r.XXXXXX") && mv "$WRITE_DIR/w" "\$t/" || exit 1; fi
sync
EOF
fi
chmod 755 "$PREP_SH"

# ---------------------------------------------------------------- rows
# prefix ROW DIR WORKLOAD -> global array P (argv put in front of the workload's argv)
prefix() {
  local d=$2 wl=$3 bind=()
  [ "$wl" = write ] && bind=(--bind "$d" "$d")
  case $1 in
    bare)           P=() ;;
    unshare)        P=("$UNSHARE" --user --map-root-user --mount --net --ipc --uts --pid --fork --kill-child --) ;;
    bwrap)          P=("$BWRAP" --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp "${bind[@]}" --unshare-all --die-with-parent --) ;;
    zerobox)        P=("$ZEROBOX" --allow-write="$d" --) ;;
    zerobox-allnet) P=("$ZEROBOX" --allow-net --allow-write="$d" --) ;;
    zerobox-noprotect) P=("$ZEROBOX" --no-protect --allow-write="$d" --) ;;
    *) die "unknown row $1" ;;
  esac
}
workload() {  # workload NAME DIR -> global array W
  case $1 in
    true)   W=(/bin/true) ;;
    echo)   W=(/bin/echo hello) ;;
    python) W=("$PY" -c pass) ;;
    write)  W=(/bin/sh "$WRITE_SH" "$2") ;;
  esac
}
cmdstr() { local s; printf -v s '%q ' "$@"; printf '%s' "${s% }"; }
is_zerobox() { case $1 in zerobox*) return 0;; esac; return 1; }

ROWS=(bare unshare bwrap zerobox)
[ "$ALLNET" = 1 ] && ROWS+=(zerobox-allnet)
[ "$NOPROTECT" = 1 ] && ROWS+=(zerobox-noprotect)
read -r -a WORKLOADS <<<"${WORKLOADS:-true echo python write}"
for wl in "${WORKLOADS[@]}"; do case $wl in true|echo|python|write) ;; *) die "unknown workload '$wl' in WORKLOADS";; esac; done
declare -A SKIP=()     # key -> reason (rows not measured, not a failure)
declare -A FAIL=()     # key -> reason (zerobox failures: exit status 1)
: >"$RES/cmds.tsv"; : >"$RES/status.tsv"; : >"$RES/foreign.tsv"

# ---------------------------------------------------------------- versions
{
  echo "date_utc	$(date -u '+%Y-%m-%d %H:%M:%S')"
  echo "kernel	$(uname -r) ($(uname -m))"
  echo "cpus	$(nproc) online ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'))"
  echo "mem	$(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "os	$(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}")"
  echo "hyperfine	$(hyperfine --version)"
  echo "bwrap	$("$BWRAP" --version) ($BWRAP)"
  echo "unshare	$("$UNSHARE" --version) ($UNSHARE)"
  echo "time	$(/usr/bin/time --version 2>&1 | head -1)$(dpkg-query -W -f=' (Debian package time ${Version})' time 2>/dev/null)"
  echo "python	$("$PY" --version 2>&1) ($PY)"
  [ -n "$STRACE" ] && echo "strace	$("$STRACE" -V | head -1)"
  zv=$("$ZEROBOX" --version 2>&1 | head -1)
  gr=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')
  git -C "$REPO" diff --quiet HEAD -- src include CMakeLists.txt cmake 2>/dev/null || gr="$gr + uncommitted changes"
  lk=$(file -b "$ZEROBOX" 2>/dev/null | grep -oE 'statically linked|dynamically linked|static-pie linked' | head -1)
  echo "zerobox	$zv; repo $gr; binary $(stat -c %s "$ZEROBOX") bytes${lk:+, $lk}, sha256 $(sha256sum "$ZEROBOX" | cut -c1-12) (copy of $ZEROBOX_SRC built $(date -u -r "$ZEROBOX_SRC" '+%Y-%m-%d %H:%M:%S') UTC; run as $ZEROBOX)"
  echo "settings	RUNS=$RUNS WARMUP=$WARMUP ROUNDS=$ROUNDS QUICK=${QUICK:-0} ALLNET=$ALLNET NOPROTECT=$NOPROTECT UNPRIV=$UNPRIV"
  echo "load_before	$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "user	$(id -un) (uid $(id -u))"
} >"$RES/versions.tsv"

# ---------------------------------------------------------------- preflight
# run_as_unpriv: prefix for the uid-65534 rows
UP=("$SETPRIV" --reuid=$UNPRIV_UID --regid=$UNPRIV_UID --clear-groups)
preflight() {  # preflight KEY CWD ARGV... -> 0 ok; sets SKIP/FAIL otherwise
  local key=$1 cwd=$2; shift 2
  local out rc
  out=$(cd "$cwd" && timeout 60 "$@" 2>&1 </dev/null); rc=$?
  [ $rc -eq 0 ] && return 0
  local why="\`$(cmdstr "$@")\` exited $rc: $(printf '%s' "$out" | grep -v '^$' | head -2 | tr '\n' ' ' | cut -c1-220)"
  if is_zerobox "${key#*/}"; then FAIL[$key]=$why; else SKIP[$key]=$why; fi
  return 1
}

# ---------------------------------------------------------------- timing
# cpu_mark: CPU_MARK="busy_ticks steal_ticks children_cpu_ticks epoch_ns": machine-wide busy CPU
# (/proc/stat) and the CPU time of this script's reaped children (bash `times`), so that
# run_hf can estimate how much CPU *other* processes used while hyperfine ran.
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
cpu_mark() {  # sets CPU_MARK (must run in the main shell: `times` is per shell)
  local busy steal ch t
  read -r busy steal < <(awk '/^cpu /{print $2+$3+$4+$7+$8, $9}' /proc/stat)
  times >"$RES/times.tmp"     # not $(times): a subshell starts with zero children time
  ch=$(sed -n 2p "$RES/times.tmp" | awk -v hz="$HZ" '{ s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%d", s * hz }')
  CPU_MARK="$busy $steal $ch $(date +%s%N)"
}
run_hf() {  # run_hf NAME CWD PREPARE|"" LABEL CMD [LABEL CMD ...]
  local name=$1 cwd=$2 prep=$3; shift 3
  local a=() labels=()
  if [ $# -eq 0 ]; then SKIP["hyperfine/$name"]="no row passed its preflight"; return; fi
  while [ $# -gt 0 ]; do a+=(-n "$1" "$2"); labels+=("$1"); shift 2; done
  [ -n "$prep" ] && a=(--prepare "$prep" "${a[@]}")
  echo "=== $name" >>"$LOG"
  log "hyperfine $name: ${labels[*]} ($RUNS runs, $WARMUP warmup)"
  local m0 m1 rc
  cpu_mark; m0=$CPU_MARK
  (cd "$cwd" && hyperfine -N --style basic -w "$WARMUP" -r "$RUNS" \
        --export-json "$RES/hf/$name.json" "${a[@]}") >>"$LOG" 2>&1 </dev/null
  rc=$?
  cpu_mark; m1=$CPU_MARK
  # foreign = machine busy ticks - our children's ticks, as % of all CPUs over the wall time
  awk -v n="$name" -v ncpu="$(nproc)" -v hz="$HZ" -v a="$m0" -v b="$m1" 'BEGIN {
    split(a, x, " "); split(b, y, " "); wall = (y[4] - x[4]) / 1e9
    f = (y[1] - x[1]) - (y[3] - x[3]); if (f < 0) f = 0
    printf "%s\t%.1f\t%.1f\t%.1f\n", n, wall, 100 * f / hz / (wall * ncpu), 100 * (y[2] - x[2]) / hz / (wall * ncpu) }' >>"$RES/foreign.tsv"
  if [ $rc -eq 0 ]; then
    printf '%s\tok\t\n' "$name" >>"$RES/status.tsv"
  else
    local why; why=$(grep -E 'Command terminated|error' "$LOG" | tail -1 | cut -c1-220)
    printf '%s\tfailed\t%s\n' "$name" "$why" >>"$RES/status.tsv"
    FAIL["hyperfine/$name"]="hyperfine run failed: $why (see $LOG)"
  fi
}

run_rounds() {  # run_rounds NAME CWD PREPARE LABEL CMD ...: ROUNDS hyperfine runs, order rotated
  local name=$1 cwd=$2 prep=$3; shift 3
  local pairs=("$@") n=$(( $# / 2 )) k i rot
  if [ "$ROUNDS" = 1 ]; then run_hf "$name" "$cwd" "$prep" "${pairs[@]}"; return; fi
  for k in $(seq 1 "$ROUNDS"); do
    rot=()
    for i in $(seq 0 $(( n - 1 ))); do
      local j=$(( (i + k - 1) % n ))
      rot+=("${pairs[$((2 * j))]}" "${pairs[$((2 * j + 1))]}")
    done
    run_hf "$name.r$k" "$cwd" "$prep" "${rot[@]}"
  done
}

T0=$(date +%s)
for wl in "${WORKLOADS[@]}"; do
  d=$ALLOW; [ "$wl" = write ] && d=$WRITE_DIR
  workload "$wl" "$d"
  args=()
  for r in "${ROWS[@]}"; do
    prefix "$r" "$d" "$wl"
    [ "$wl" = write ] && /bin/sh "$PREP_SH" >/dev/null 2>&1
    if preflight "$wl/$r" "$ALLOW" "${P[@]}" "${W[@]}"; then
      c=$(cmdstr "${P[@]}" "${W[@]}")
      printf '%s\t%s\t%s\n' "$wl" "$r" "$c" >>"$RES/cmds.tsv"
      args+=("$r" "$c")
    fi
  done
  prep=""
  if [ "$wl" = write ]; then /bin/sh "$PREP_SH" >/dev/null 2>&1; prep="/bin/sh $PREP_SH"; fi
  [ ${#args[@]} -gt 0 ] && run_rounds "$wl" "$ALLOW" "$prep" "${args[@]}"
  [ "$wl" = write ] && /bin/sh "$PREP_SH" >/dev/null 2>&1
done

# the `true` rows again as an unprivileged user
if [ "$UNPRIV" = 1 ]; then
  if [ "$(id -u)" != 0 ]; then
    SKIP[true-uid$UNPRIV_UID]="not run as root: setpriv cannot switch to uid $UNPRIV_UID"
  else
    chown "$UNPRIV_UID:$UNPRIV_UID" "$ALLOW_U"
    args=()
    for r in bare bwrap zerobox; do
      prefix "$r" "$ALLOW_U" true
      if preflight "true-uid$UNPRIV_UID/$r" "$ALLOW_U" "${UP[@]}" "${P[@]}" /bin/true; then
        c=$(cmdstr "${UP[@]}" "${P[@]}" /bin/true)
        printf 'true-uid%s\t%s\t%s\n' "$UNPRIV_UID" "$r" "$c" >>"$RES/cmds.tsv"
        args+=("$r" "$c")
      fi
    done
    [ ${#args[@]} -gt 0 ] && run_rounds "true-uid$UNPRIV_UID" "$ALLOW_U" "" "${args[@]}"
  fi
fi
echo "timing_wall_s	$(( $(date +%s) - T0 ))" >>"$RES/versions.tsv"

# ---------------------------------------------------------------- memory
# sup_hwm: VmHWM of the tool's top-level process (zerobox/bwrap: the supervisor outside
#   the sandbox), polled every 2 ms while `sleep 1` runs inside; init_hwm: the same for
#   its first child (zerobox/bwrap: the pid-1 process inside the sandbox; bare: none).
# timev: /usr/bin/time -f %M of `TOOL -- /bin/true` (the largest ru_maxrss of the tool
#   and its waited-for descendants), median of 5.
log "memory probes"
printf 'row\tsup_hwm_kb\tsup_rss_kb\tinit_hwm_kb\tnprocs\ttimev_kb\ttimev_all\n' >"$RES/rss.tsv"
MEM_ROWS=(bare bwrap zerobox); [ "$ALLNET" = 1 ] && MEM_ROWS+=(zerobox-allnet)
for r in "${MEM_ROWS[@]}"; do
  [ -n "${FAIL[true/$r]:-}${SKIP[true/$r]:-}" ] && continue
  case $r in                    # plain invocations: no --allow-write, as a user would type them
    zerobox)        P=("$ZEROBOX" --) ;;
    zerobox-allnet) P=("$ZEROBOX" --allow-net --) ;;
    *)              prefix "$r" "$ALLOW" true ;;
  esac
  printf 'mem\t%s\t%s\n' "$r" "$(cmdstr "${P[@]}" /bin/sleep 1)" >>"$RES/cmds.tsv"
  hw=$(cd "$ALLOW" && "$PY" - "${P[@]}" /bin/sleep 1 <<'EOF'
import os, subprocess, sys, time
def status(pid):
    d = {}
    try:
        for line in open(f"/proc/{pid}/status"):
            k, _, v = line.partition(":")
            d[k] = v.split()[0] if v.split() else ""
    except OSError:
        pass
    return d
def children(pid):
    try:
        return open(f"/proc/{pid}/task/{pid}/children").read().split()
    except OSError:
        return []
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
sup_hwm = sup_rss = init_hwm = 0; nprocs = 1; init = None
while p.poll() is None:
    s = status(p.pid)
    if s.get("VmHWM"):
        sup_hwm = max(sup_hwm, int(s["VmHWM"])); sup_rss = max(sup_rss, int(s["VmRSS"]))
    k = children(p.pid)
    if k and len(sys.argv) > 3:       # bare `sleep` has no child; the tools' first child is their init
        init = init or k[0]
        s2 = status(init)
        if s2.get("VmHWM"):
            init_hwm = max(init_hwm, int(s2["VmHWM"]))
        n, todo = 1, list(k)
        while todo:
            n += 1; todo += children(todo.pop())
        nprocs = max(nprocs, n)
    time.sleep(0.002)
print(sup_hwm, sup_rss, init_hwm if init else "-", nprocs, p.returncode)
EOF
)
  read -r shwm srss ihwm np prc <<<"$hw"
  [ "${prc:-1}" = 0 ] || { is_zerobox "$r" && FAIL["mem/$r"]="\`$r ... /bin/sleep 1\` exited ${prc:-?}"; }
  tv=()
  for _ in 1 2 3 4 5; do
    (cd "$ALLOW" && /usr/bin/time -f '%M' -o "$RES/timev.tmp" "${P[@]}" /bin/true >/dev/null 2>&1 </dev/null)
    tv+=("$(tail -1 "$RES/timev.tmp")")
  done
  med=$(printf '%s\n' "${tv[@]}" | sort -n | sed -n 3p)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$shwm" "$srss" "$ihwm" "$np" "$med" "${tv[*]}" >>"$RES/rss.tsv"
done
rm -f "$RES/timev.tmp"

# ---------------------------------------------------------------- exec / process counts
if [ -n "$STRACE" ]; then
  log "exec/process counts (strace -ff)"
  printf 'row\texecs\tprocs\tthreads\n' >"$RES/execs.tsv"
  for r in bare unshare bwrap zerobox; do
    [ -n "${FAIL[true/$r]:-}${SKIP[true/$r]:-}" ] && continue
    prefix "$r" "$ALLOW" true
    rm -rf "$RES/strace.d"; mkdir -p "$RES/strace.d"
    (cd "$ALLOW" && "$STRACE" -ff -qq -o "$RES/strace.d/t" -e trace=execve,execveat,clone,clone3,fork,vfork \
        "${P[@]}" /bin/true >/dev/null 2>&1 </dev/null)
    ex=$(cat "$RES"/strace.d/t.* | grep -cE '^execve(at)?\(.*= 0$')
    th=$(cat "$RES"/strace.d/t.* | grep -E '^clone3?\(' | grep -c CLONE_THREAD)
    pr=$(cat "$RES"/strace.d/t.* | grep -E '^(clone3?|v?fork)\(' | grep -v CLONE_THREAD | grep -cv '= -1')
    printf '%s\t%s\t%s\t%s\n' "$r" "$ex" "$pr" "$th" >>"$RES/execs.tsv"
  done
  rm -rf "$RES/strace.d"
else
  SKIP[execs]="strace not installed (apt-get install strace)"
fi

# ---------------------------------------------------------------- where start-up goes
if [ "$ANALYSIS" = 1 ]; then
  D=$ALLOW
  B=("$BWRAP" --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp)
  U=("$UNSHARE" --user --map-root-user --mount --ipc --uts --pid --fork --kill-child)
  comp=(
    "bare" "/bin/true"
    "zerobox --no-sandbox" "$(cmdstr "$ZEROBOX" --no-sandbox -- /bin/true)"
    "unshare, no net ns" "$(cmdstr "${U[@]}" -- /bin/true)"
    "unshare" "$(cmdstr "${U[@]}" --net -- /bin/true)"
    "bwrap --share-net" "$(cmdstr "${B[@]}" --unshare-all --share-net --die-with-parent -- /bin/true)"
    "bwrap" "$(cmdstr "${B[@]}" --unshare-all --die-with-parent -- /bin/true)"
    "zerobox --allow-net" "$(cmdstr "$ZEROBOX" --allow-net --allow-write="$D" -- /bin/true)"
    "zerobox" "$(cmdstr "$ZEROBOX" --allow-write="$D" -- /bin/true)"
  )
  run_rounds components "$ALLOW" "" "${comp[@]}"
  if command -v perf >/dev/null && perf trace -e exit_group -o /dev/null -- /bin/true >/dev/null 2>&1; then
    log "phase split with perf trace ($PHASE_RUNS runs per row)"
    (cd "$ALLOW" && "$PY" "$HERE/phases.py" -n "$PHASE_RUNS" --json "$RES/phases.json" \
        zerobox "$(cmdstr "$ZEROBOX" --allow-write="$D" -- /bin/true)" \
        zerobox-allnet "$(cmdstr "$ZEROBOX" --allow-net --allow-write="$D" -- /bin/true)" \
        bwrap "$(cmdstr "${B[@]}" --unshare-all --die-with-parent -- /bin/true)" \
        bwrap-sharenet "$(cmdstr "${B[@]}" --unshare-all --share-net --die-with-parent -- /bin/true)" \
      >"$RES/phases.md" 2>>"$LOG") || SKIP[phases]="bench/phases.py failed (see $LOG)"
  else
    SKIP[phases]="perf trace not usable (package linux-perf; needs root or perf_event_paranoid <= 1)"
  fi
fi

echo "load_after	$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RES/versions.tsv"
echo "wall_total_s	$(( $(date +%s) - T0 ))" >>"$RES/versions.tsv"
# a disk WRITE_DIR's output, deleted only now (see WRITE_DIR); on an ext4 without a journal,
# file creation in the next minutes (another run of this script, too) is slower because of it
rm -rf "$WRITE_DIR/w"
[ -d "$TRASH" ] && { log "removing the write workload's output ($(du -sh "$TRASH" | cut -f1))"; rm -rf "$TRASH"; }
echo "write_dir	$WRITE_DIR ($WRITE_FS)" >>"$RES/versions.tsv"
rm -f "$RES/times.tmp"
for k in "${!SKIP[@]}"; do printf '%s\t%s\n' "$k" "${SKIP[$k]}"; done | sort >"$RES/skipped.tsv"
for k in "${!FAIL[@]}"; do printf '%s\t%s\n' "$k" "${FAIL[$k]}"; done | sort >"$RES/failed.tsv"

# ---------------------------------------------------------------- report
export RES UNPRIV_UID
report() {
"$PY" - <<'EOF'
import json, os, statistics as st
RES = os.environ["RES"]; UID = os.environ["UNPRIV_UID"]
def tsv(name):
    p = os.path.join(RES, name)
    return [l.rstrip("\n").split("\t") for l in open(p)] if os.path.exists(p) else []
ver = {r[0]: r[1] for r in tsv("versions.tsv") if len(r) > 1}
foreign = {r[0]: r[1:] for r in tsv("foreign.tsv")}
def fnote(wl):
    fs = [v for k, v in foreign.items() if k == wl or k.startswith(wl + ".r")]
    if not fs:
        return ""
    busy = max(float(f[1]) for f in fs); steal = max(float(f[2]) for f in fs)
    warn = " **(busy machine: treat these numbers with care)**" if busy > 25 or steal > 5 else ""
    per = "/".join(f[1] for f in fs)
    return (f"{len(fs)} hyperfine run(s), {sum(float(f[0]) for f in fs):.1f} s; CPU time outside the benchmark's own "
            f"processes meanwhile: {per}% of the machine (other processes, plus kernel threads doing deferred namespace "
            f"cleanup and writeback for the rows), hypervisor steal up to {steal}%{warn}.\n")
def q(xs, p):
    xs = sorted(xs); i = (len(xs) - 1) * p; lo = int(i); hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)
WL = [("true", "`/bin/true`"), ("echo", "`/bin/echo hello`"), ("python", "`python3 -c pass`"),
      ("write", "1,000 small files written into the allowed dir (`/bin/sh write1000.sh DIR`, DIR = " + ver.get("write_dir", "?") + ")"),
      (f"true-uid{UID}", f"`/bin/true` as uid {UID} (`setpriv --reuid={UID} --regid={UID} --clear-groups` in front of every row, bare included)")]
import glob
def load(wl):
    """pool the samples of hf/WL.json or hf/WL.rN.json (ROUNDS > 1) by row"""
    files = sorted(glob.glob(os.path.join(RES, "hf", wl + ".json")) + glob.glob(os.path.join(RES, "hf", wl + ".r*.json")))
    out = {}
    for f in files:
        try:
            res = json.load(open(f))["results"]
        except (ValueError, KeyError):
            continue
        for r in res:
            o = out.setdefault(r["command"], {"times": [], "u": 0.0, "s": 0.0, "n": 0})
            n = len(r["times"]); o["times"] += r["times"]
            o["u"] += r["user"] * n; o["s"] += r["system"] * n; o["n"] += n
    for o in out.values():
        o["user"] = o["u"] / max(o["n"], 1); o["system"] = o["s"] / max(o["n"], 1)
    return out
data = {}
for wl, _ in WL:
    d = load(wl)
    if d:
        data[wl] = d
med = lambda wl, row: st.median(data[wl][row]["times"]) * 1e3
P = print
P("# zerobox start-up benchmark (bench/run.sh)\n")
P(f"Measured on this machine on {ver.get('date_utc')} UTC; numbers from other machines or dates will differ.\n")
P(f"- host: {ver.get('os')}, kernel {ver.get('kernel')}, {ver.get('cpus')}, {ver.get('mem')} RAM; run as {ver.get('user')}")
P(f"- load average before: {ver.get('load_before')}; after: {ver.get('load_after')}")
P(f"- {ver.get('hyperfine')}; {ver.get('bwrap')}; {ver.get('unshare')}; {ver.get('time')}; {ver.get('python')}" + (f"; {ver['strace']}" if 'strace' in ver else ""))
P(f"- zerobox: {ver.get('zerobox')}")
P(f"- settings: {ver.get('settings')}; `hyperfine -N -w WARMUP -r RUNS` (no `-i`); per workload ROUNDS hyperfine "
  "run(s) holding all rows (hyperfine times each row's runs back to back; with ROUNDS > 1 the row order is rotated "
  "every round and the samples pooled)")
P(f"- timing took {ver.get('timing_wall_s')} s, everything {ver.get('wall_total_s')} s; raw data: `{RES}`\n")
P("Columns: median and inter-quartile range (25th-75th percentile) of wall time; overhead = median - median of `bare` "
  "in the same hyperfine run; user/sys = hyperfine's mean CPU time of the process tree it waited for. "
  "bwrap's top-level process exits as soon as its sandbox's pid 1 reports the exit status, without reaping it, "
  "so the sandbox's CPU time is missing from bwrap's user/sys (and its namespace teardown from its wall time); "
  "zerobox waits for its sandbox init, so its columns include everything.\n")
for wl, title in WL:
    if wl not in data:
        continue
    P(f"## {title}\n")
    P(fnote(wl))
    rows = data[wl]; base = med(wl, "bare") if "bare" in rows else None
    P("| row | median ms | IQR ms | overhead vs bare ms | user ms | sys ms | runs |")
    P("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        xs = [t * 1e3 for t in r["times"]]; m = st.median(xs)
        ov = f"{m - base:+.2f}" if base is not None and name != "bare" else "-"
        P(f"| {name} | {m:.2f} | {q(xs,.25):.2f}-{q(xs,.75):.2f} | {ov} | {r['user']*1e3:.2f} | {r['system']*1e3:.2f} | {len(xs)} |")
    P()
# matrix of overheads
rows_all = []
for wl in data:
    for r in data[wl]:
        if r != "bare" and r not in rows_all:
            rows_all.append(r)
if data:
    wls = [w for w, _ in WL if w in data]
    P("## Summary: median overhead over bare, ms\n")
    P("| row | " + " | ".join(wls) + " |\n|---|" + "---:|" * len(wls))
    for r in rows_all:
        cells = []
        for w in wls:
            cells.append(f"{med(w, r) - med(w, 'bare'):+.2f}" if r in data[w] and "bare" in data[w] else "n/a")
        P(f"| {r} | " + " | ".join(cells) + " |")
    P()
    P("Target check (from the issue: zerobox's median overhead no worse than bwrap's in the same run, aiming at <= 3 ms over bare):\n")
    for w in wls:
        d = data[w]
        if "zerobox" in d and "bare" in d:
            zo = med(w, "zerobox") - med(w, "bare")
            s = f"- {w}: zerobox {zo:+.2f} ms"
            if "bwrap" in d:
                bo = med(w, "bwrap") - med(w, "bare")
                s += f" vs bwrap {bo:+.2f} ms -> {'not worse than bwrap' if zo <= bo else 'WORSE than bwrap by %.2f ms' % (zo - bo)}"
            s += f"; {'within' if zo <= 3 else 'above'} 3 ms"
            P(s)
    P()
rss = tsv("rss.tsv")
if len(rss) > 1:
    P("## Memory\n")
    P("sup HWM = VmHWM (peak RSS) of the tool's own top-level process (for zerobox and bwrap: the supervisor outside the "
      "sandbox), polled every 2 ms while `sleep 1` runs inside; init HWM = the same for its first child (the pid-1 process "
      "inside the sandbox); procs = most processes seen in the tree; `/usr/bin/time -f %M` = peak RSS of the largest process "
      "of `TOOL -- /bin/true` (median of 5). 1 MiB = 1024 KiB.\n")
    P("| row | sup HWM KiB | init HWM KiB | procs | /usr/bin/time %M KiB |")
    P("|---|---:|---:|---:|---:|")
    for r in rss[1:]:
        P(f"| {r[0]} | {r[1]} | {r[3]} | {r[4]} | {r[5]} |")
    z = [r for r in rss[1:] if r[0] == "zerobox"]
    if z and z[0][1].isdigit():
        kb = int(z[0][1])
        P(f"\nTarget check (zerobox's own process <= 4 MB): supervisor VmHWM {kb} KiB = {kb/1024:.2f} MiB = {kb*1.024:.0f} kB -> "
          + ("within 4 MiB" if kb <= 4096 else "ABOVE 4 MiB") + (" and 4 MB (10^6 B)" if kb * 1024 <= 4e6 else (", above 4 MB (10^6 B)" if kb <= 4096 else "")) + ".")
    P()
comp = load("components")
if comp:
    P("## Where start-up goes\n")
    P("### Components (`/bin/true` payload), timed side by side\n")
    P(fnote("components"))
    cm = lambda k: st.median(comp[k]["times"]) * 1e3
    P("| row | median ms | IQR ms | over bare ms | user ms | sys ms |\n|---|---:|---:|---:|---:|---:|")
    for name, r in comp.items():
        xs = [t * 1e3 for t in r["times"]]
        ov = f"{cm(name) - cm('bare'):+.2f}" if "bare" in comp and name != "bare" else "-"
        P(f"| {name} | {st.median(xs):.2f} | {q(xs,.25):.2f}-{q(xs,.75):.2f} | {ov} | {r['user']*1e3:.2f} | {r['system']*1e3:.2f} |")
    P()
    def diff(a, b, what):
        if a in comp and b in comp:
            P(f"- {what}: `{a}` - `{b}` = {cm(a) - cm(b):+.2f} ms")
    diff("zerobox --no-sandbox", "bare", "zerobox's own start (static binary load, option parsing, policy, env, fork+exec, no namespaces)")
    diff("unshare", "unshare, no net ns", "network namespace, util-linux unshare")
    diff("bwrap", "bwrap --share-net", "network namespace, bwrap")
    diff("zerobox", "zerobox --allow-net", "network namespace, zerobox")
    diff("zerobox", "bwrap", "zerobox vs bwrap, same run")
    P()
ph = os.path.join(RES, "phases.md")
if os.path.exists(ph) and os.path.getsize(ph):
    P("### Phases from `perf trace` (bench/phases.py)\n")
    P("Each run traced with `perf trace -e execve,clone,clone3,unshare,mount,umount2,pivot_root,prctl,seccomp,exit_group`; "
      "phases are cut at those syscalls (see `bench/phases.py --help`). Tracing inflates every phase a little, and tools "
      "that make more traced calls more; use it to compare phases, and hyperfine for end-to-end time.\n")
    P(open(ph).read().rstrip() + "\n")
ex = tsv("execs.tsv")
if len(ex) > 1:
    P("## Execs and processes for `TOOL /bin/true` (one `strace -ff` run)\n")
    P("execs = successful execve calls including the tool's own and the payload's; "
      "between = execs strictly between the tool and the payload; processes = fork/clone without CLONE_THREAD.\n")
    P("| row | execs | between tool and payload | processes | threads |\n|---|---:|---:|---:|---:|")
    for r in ex[1:]:
        between = int(r[1]) - (1 if r[0] == "bare" else 2)
        P(f"| {r[0]} | {r[1]} | {between} | {r[2]} | {r[3]} |")
    P()
P("## Command lines\n")
P(f"DIR = `{RES}/allow` (write workload: `{ver.get('write_dir', '?')}`; uid-{UID} rows: `{RES}/allow-u`, owned by that uid); "
  f"cwd = `{RES}/allow` (uid-{UID} rows: `{RES}/allow-u`).\n")
P("| workload | row | command |\n|---|---|---|")
for r in tsv("cmds.tsv"):
    w = "memory (`/usr/bin/time -f %M` runs the same with `/bin/true`)" if r[0] == "mem" else r[0]
    P(f"| {w} | {r[1]} | `{r[2]}` |")
P("\nThe write workload's script, and its `--prepare` script (run untimed before every run):\n")
P("```sh\n" + open(os.path.join(RES, "write1000.sh")).read().rstrip() + "\n```\n")
P("```sh\n" + open(os.path.join(RES, "prepare.sh")).read().rstrip() + "\n```\n")
sk, fl = tsv("skipped.tsv"), tsv("failed.tsv")
if sk:
    P("## Skipped\n")
    for r in sk: P(f"- **{r[0]}**: {r[1]}")
    P()
if fl:
    P("## FAILED (zerobox)\n")
    for r in fl: P(f"- **{r[0]}**: {r[1]}")
    P()
EOF
}
if [ -n "$OUT" ]; then report | tee "$OUT"; else report; fi
report >"$RES/report.md"
log "raw data and report: $RES"
if [ -s "$RES/failed.tsv" ]; then
  log "FAILED: $(cut -f1 "$RES/failed.tsv" | tr '\n' ' ')"
  exit 1
fi
exit 0
