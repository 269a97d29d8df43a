#!/usr/bin/env bash
# bench/net.sh - filtered-network (proxy) benchmark of zerobox on loopback.
#
# Usage: bash bench/net.sh     (as root; ~1-2 minutes on 2 cores; no internet needed)
#
# Env knobs:
#   ZEROBOX=path        binary under test (default: build/zerobox of this repository)
#   RUNS=30 WARMUP=3    hyperfine runs for the start-up rows
#   BIG_MIB=256         CONNECT throughput payload size
#   TPUT_REPS=3         curl downloads per side (median reported)
#   RPS_N=2000          sequential keep-alive GETs per side
#   TUNNELS=1000        concurrent CONNECT tunnels
#   WORK=/var/tmp/zerobox-netbench   payload and raw results (not /tmp)
#
# What is measured (servers run on the host's 127.0.0.1; inside zerobox the command reaches
# them only through the proxy on 127.0.0.1:3128 of its own network namespace):
#   1 start-up   hyperfine -N: `zerobox -- true` vs
#                `zerobox --allow-net=api.test --resolve api.test:127.0.0.1 -- true`
#   2 throughput curl download of BIG_MIB from a sendfile() HTTP server (bench/net_helpers.py):
#                host `curl http://127.0.0.1:P/big` vs in zerobox
#                `curl -p -x http://127.0.0.1:3128 http://api.test:P/big` (CONNECT tunnel)
#   3 req/s      RPS_N sequential GETs over one keep-alive connection: host direct vs in
#                zerobox absolute-form through the HTTP forward proxy path
#   4 tunnels    TUNNELS concurrent CONNECT tunnels to an asyncio echo server, all held open
#                at once, 1 KiB echoed and checked on each
#   5 RSS        VmRSS (sampled every ~10 ms) and VmHWM of the top-level zerobox process
#                during 4, against an idle filtered zerobox (`-- sleep 1`)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ZB=${ZEROBOX:-$HERE/../build/zerobox}
ZB=$(readlink -f "$ZB")
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}
BIG_MIB=${BIG_MIB:-256}
TPUT_REPS=${TPUT_REPS:-3}
RPS_N=${RPS_N:-2000}
TUNNELS=${TUNNELS:-1000}
WORK=${WORK:-/var/tmp/zerobox-netbench}
# a real interpreter path: pyenv shims need env the sandbox does not pass on
PY=$(python3 -c 'import sys; print(sys.executable)')
HELP=$HERE/net_helpers.py
HOSTNAME_T=api.test
FILTER=(--allow-net=$HOSTNAME_T --resolve $HOSTNAME_T:127.0.0.1)

mkdir -p "$WORK"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
start_server() { # name args... ; waits for "ready"
    local name=$1; shift
    "$PY" "$HELP" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    PIDS+=($!)
    for _ in $(seq 100); do grep -q ready "$WORK/$name.out" 2>/dev/null && return 0; sleep 0.05; done
    echo "server $name did not start" >&2; cat "$WORK/$name.err" >&2; exit 1
}

echo "zerobox: $ZB ($("$ZB" --version 2>/dev/null | head -1)); $(nproc) cores; $(uname -r)" >&2

# ---- 1 start-up -------------------------------------------------------------------------
echo "[1/5] start-up (hyperfine -N, $RUNS runs)" >&2
hyperfine -N -w "$WARMUP" -r "$RUNS" --export-json "$WORK/startup.json" \
    -n no-network "$ZB -- true" \
    -n filtered "$ZB ${FILTER[*]} -- true" >"$WORK/startup.txt" 2>&1
read -r SU_NONE SU_NONE_SD SU_FILT SU_FILT_SD < <("$PY" - "$WORK/startup.json" <<'EOF'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
n, f = r["no-network"], r["filtered"]
print(f'{n["mean"]*1e3:.2f} {n["stddev"]*1e3:.2f} {f["mean"]*1e3:.2f} {f["stddev"]*1e3:.2f}')
EOF
)
SU_DELTA=$(awk -v a="$SU_FILT" -v b="$SU_NONE" 'BEGIN{printf "%+.2f", a-b}')

# ---- 2 CONNECT throughput ---------------------------------------------------------------
echo "[2/5] CONNECT throughput (${BIG_MIB} MiB x $TPUT_REPS per side)" >&2
BIG=$WORK/big.bin
if [ ! -f "$BIG" ] || [ "$(stat -c %s "$BIG")" -ne $((BIG_MIB * 1048576)) ]; then
    head -c $((BIG_MIB * 1048576)) /dev/urandom >"$BIG"
fi
cat "$BIG" >/dev/null   # page cache
HPORT=$(free_port)
start_server http http-server "$HPORT" "$BIG"
: >"$WORK/tput_host.txt"; : >"$WORK/tput_zb.txt"
for _ in $(seq "$TPUT_REPS"); do   # interleaved so drift hits both sides
    curl -sS --noproxy '*' -o /dev/null -w '%{speed_download} %{size_download}\n' \
        "http://127.0.0.1:$HPORT/big" >>"$WORK/tput_host.txt"
    "$ZB" "${FILTER[@]}" -- curl -sS -o /dev/null -p -x http://127.0.0.1:3128 \
        -w '%{speed_download} %{size_download}\n' "http://$HOSTNAME_T:$HPORT/big" >>"$WORK/tput_zb.txt"
done
bad=$(awk -v s=$((BIG_MIB * 1048576)) '$2 != s' "$WORK/tput_host.txt" "$WORK/tput_zb.txt" | wc -l)
[ "$bad" -eq 0 ] || echo "warning: $bad downloads were short" >&2
TP_HOST=$(awk '{print $1/1e6}' "$WORK/tput_host.txt" | median)
TP_ZB=$(awk '{print $1/1e6}' "$WORK/tput_zb.txt" | median)
TP_RATIO=$(awk -v a="$TP_ZB" -v b="$TP_HOST" 'BEGIN{printf "%.0f", 100*a/b}')

# ---- 3 req/s over keep-alive ------------------------------------------------------------
echo "[3/5] req/s ($RPS_N keep-alive GETs per side)" >&2
read -r RPS_HOST RPS_HOST_OK < <("$PY" "$HELP" rps 127.0.0.1 "$HPORT" "$RPS_N")
read -r RPS_ZB RPS_ZB_OK < <("$ZB" "${FILTER[@]}" -- "$PY" "$HELP" rps "$HOSTNAME_T" "$HPORT" "$RPS_N" 3128)
RPS_RATIO=$(awk -v a="$RPS_ZB" -v b="$RPS_HOST" 'BEGIN{printf "%.0f", 100*a/b}')

# ---- 4+5 concurrent tunnels and supervisor RSS --------------------------------------------
echo "[4/5] $TUNNELS concurrent CONNECT tunnels + [5/5] RSS" >&2
EPORT=$(free_port)
start_server echo echo-server "$EPORT"
sample_rss() { # pid -> "peak_rss_kB hwm_kB samples"
    local pid=$1 peak=0 hwm=0 n=0 k v _
    while [ -r "/proc/$pid/status" ]; do
        while read -r k v _; do
            case $k in
                VmRSS:) [ "$v" -gt "$peak" ] && peak=$v ;;
                VmHWM:) [ "$v" -gt "$hwm" ] && hwm=$v ;;
            esac
        done <"/proc/$pid/status" 2>/dev/null || true
        n=$((n + 1))
        sleep 0.01
    done
    echo "$peak $hwm $n"
}
# idle baseline: a filtered zerobox whose command does nothing for 1 s
"$ZB" "${FILTER[@]}" -- sleep 1 & zpid=$!
read -r IDLE_RSS IDLE_HWM _ < <(sample_rss "$zpid")
wait "$zpid" || true
# under load (ulimit -n 20000 is inherited by the client inside)
ulimit -n 20000 2>/dev/null || true
"$ZB" "${FILTER[@]}" -- "$PY" "$HELP" tunnels "$HOSTNAME_T" "$EPORT" "$TUNNELS" 3128 \
    >"$WORK/tunnels.txt" 2>"$WORK/tunnels.err" & zpid=$!
read -r LOAD_RSS LOAD_HWM LOAD_SAMPLES < <(sample_rss "$zpid")
wait "$zpid" && TUN_RC=0 || TUN_RC=$?
read -r TUN_OK TUN_N TUN_WALL TUN_EST TUN_ERR <"$WORK/tunnels.txt" || true
if [ -z "${TUN_OK:-}" ]; then TUN_OK=0 TUN_N=$TUNNELS TUN_WALL=? TUN_EST=? TUN_ERR="rc=$TUN_RC: $(head -c 200 "$WORK/tunnels.err")"; fi

# ---- report -----------------------------------------------------------------------------
mib() { awk -v k="$1" 'BEGIN{printf "%.1f", k/1024}'; }
cat <<EOF

## zerobox filtered-network benchmark ($(date -u +%F), $(nproc) cores, $(uname -r))

| # | metric | no proxy / host | zerobox filtered | result | target |
|---|---|---|---|---|---|
| 1 | start-up \`-- true\` (mean ± sd, $RUNS runs) | ${SU_NONE} ± ${SU_NONE_SD} ms (no network) | ${SU_FILT} ± ${SU_FILT_SD} ms | ${SU_DELTA} ms | ≤ +2 ms |
| 2 | CONNECT throughput, ${BIG_MIB} MiB (median of $TPUT_REPS, MB/s) | ${TP_HOST} | ${TP_ZB} | ${TP_RATIO} % | ≥ 70 % |
| 3 | keep-alive GET req/s, $RPS_N on 1 conn (absolute-form) | ${RPS_HOST} (${RPS_HOST_OK} ok) | ${RPS_ZB} (${RPS_ZB_OK} ok) | ${RPS_RATIO} % | - |
| 4 | $TUNNELS concurrent CONNECT tunnels, 1 KiB echo | - | ${TUN_OK}/${TUN_N} ok, ${TUN_EST} established | ${TUN_WALL} s wall | all ok |
| 5 | zerobox supervisor RSS during 4 (peak sampled VmRSS / VmHWM) | idle: $(mib "$IDLE_RSS") / $(mib "$IDLE_HWM") MiB | $(mib "$LOAD_RSS") / $(mib "$LOAD_HWM") MiB | +$(mib $((LOAD_HWM - IDLE_HWM))) MiB HWM | - |

EOF
[ "$TUN_ERR" = "-" ] || echo "tunnels: first error: $TUN_ERR"
echo "raw: $WORK (startup.txt, tput_*.txt, tunnels.txt; $LOAD_SAMPLES RSS samples)"
