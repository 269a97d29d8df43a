#!/usr/bin/env bash
# bench/net.sh - filtered-network (proxy) benchmark of zerobox on loopback, against a direct
# connection and against srt (Anthropic's sandbox-runtime), plus the secrets (TLS interception)
# path of zerobox.
#
# Usage: bash bench/net.sh     (as root; no internet needed; ~1 min without srt, ~3-4 min
#                               with srt, most of it srt's 1,000-tunnel row)
#        python3 bench/net_helpers.py summary /var/tmp/zerobox-netbench/results-*.tsv
#                               median (min - max) of every figure over several runs
#
# Env knobs:
#   ZEROBOX=path        binary under test (default: build/zerobox of this repository)
#   SRT=path|none       srt CLI (default: `command -v srt`); "none" skips the srt rows.
#                       Install: npm install -g @anthropic-ai/sandbox-runtime (needs bwrap,
#                       socat, ripgrep: `bash scripts/install-deps.sh`)
#   RUNS=30 WARMUP=3    hyperfine runs for the start-up rows
#   BIG_MIB=256         download size (CONNECT and HTTPS throughput)
#   TPUT_REPS=3         downloads / req-s runs per side, interleaved (median reported)
#   RPS_N=2000          sequential keep-alive GETs per run (plain HTTP and HTTPS)
#   TUNNELS=1000        concurrent CONNECT tunnels;  SMALL_TUNNELS=10: the same, small
#   HOLD=1              seconds all tunnels stay open before the echo (memory sampling)
#   TUNNEL_TIMEOUT=150  seconds before the tunnel client gives up (more than the ~127 s
#                       after which Linux gives up a connect() whose SYNs go unanswered)
#   FIRST_REPS=10       fresh runs per side for the first-HTTPS-request time
#   WORK=/var/tmp/zerobox-netbench   payload, TLS files and raw results (not /tmp)
#
# Both sandboxes reach the host's 127.0.0.1 servers by the name `localhost:PORT`, allowed with
# its port (zerobox `--allow-net=localhost:P,...`, srt `allowedDomains: ["localhost:P",...]`):
# srt refuses an allowed name that resolves to loopback unless the IP literal is allowed too,
# and has no --resolve, so a test name would need /etc/hosts. Inside both, clients use the
# proxy URL the tool puts in $HTTP_PROXY (srt's carries Basic credentials) and curl gets
# `--noproxy ''` because srt sets NO_PROXY=localhost,127.0.0.1,...
#
#   1 start-up   hyperfine -N `-- true`: zerobox with no network vs `--allow-net=localhost:P,..`;
#                srt with allowedDomains [] vs ["localhost:P",...]
#   2 throughput curl download of BIG_MIB from a sendfile() HTTP server through CONNECT
#                (`curl -p -x $HTTP_PROXY`), vs curl on the host directly
#   3 req/s      RPS_N sequential GETs on one keep-alive connection, absolute-form through
#                the HTTP forward-proxy path, vs direct
#   4 tunnels    TUNNELS (and SMALL_TUNNELS) concurrent CONNECT tunnels to an asyncio echo
#                server, all held open at once, 1 KiB echoed and checked on each
#   5 memory     of the proxy during 4 vs an idle run (`-- sleep 1`): VmHWM of the tool's main
#                process, and the peak of the summed Pss of the proxy processes (zerobox: its
#                supervisor, where the proxy runs; srt: node, which runs its HTTP+SOCKS proxy,
#                plus every socat bridge process, host side and sandbox side), sampled
#   6 secrets    zerobox `--secret TOKEN=V --secret-host TOKEN=api.test --upstream-ca CA
#                --resolve api.test:127.0.0.1` (TLS intercepted, placeholder replaced) vs
#                zerobox `--allow-net=api.test --resolve api.test:127.0.0.1` (TLS tunnelled)
#                vs direct, to a Python ssl HTTPS server whose leaf is signed by a test CA
#                made here with openssl; the server answers 401 unless
#                `Authorization: Bearer V` carries the real value, and the script fails if
#                the intercepted client's placeholder was not replaced.
#                a) download of BIG_MIB  b) RPS_N keep-alive GETs  c) first request of a
#                fresh run (CONNECT + TLS handshake, incl. leaf generation when intercepted)
#                and of a second connection in the same run
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
SMALL_TUNNELS=${SMALL_TUNNELS:-10}
HOLD=${HOLD:-1}
export TUNNEL_TIMEOUT=${TUNNEL_TIMEOUT:-150}
FIRST_REPS=${FIRST_REPS:-10}
WORK=${WORK:-/var/tmp/zerobox-netbench}
# a real interpreter path: pyenv shims need env the sandbox does not pass on
PY=$(python3 -c 'import sys; print(sys.executable)')
HELP=$HERE/net_helpers.py
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RES=$WORK/results-$STAMP.tsv    # key<TAB>value, for `net_helpers.py summary`
SRT_INSTALL="npm install -g @anthropic-ai/sandbox-runtime"

mkdir -p "$WORK"
: >"$RES"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "-"; else print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a+0==a && b+0==b && b>0) printf (a/b < 0.1 ? "%.1f %%" : "%.0f %%"), 100*a/b; else print "-" }'; }
rec() { printf '%s\t%s\n' "$1" "$2" >>"$RES"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
start_server() { # name args... ; waits for "ready"
    local name=$1; shift
    "$PY" "$HELP" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    PIDS+=($!)
    for _ in $(seq 100); do grep -q ready "$WORK/$name.out" 2>/dev/null && return 0; sleep 0.05; done
    echo "server $name did not start" >&2; cat "$WORK/$name.err" >&2; exit 1
}

HPORT=$(free_port); EPORT=$(free_port); SPORT=$(free_port)
ZB_FILTER=("--allow-net=localhost:$HPORT,localhost:$EPORT")

# ---- srt: present and usable? -----------------------------------------------------------
SRT=${SRT-$(command -v srt || true)}
SRT_SKIP=""
if [ "$SRT" = none ]; then
    SRT_SKIP="skipped: SRT=none"
elif [ -z "$SRT" ] || [ ! -x "$SRT" ]; then
    SRT_SKIP="skipped: srt not installed"
    echo "srt (Anthropic sandbox-runtime) not found: its rows are skipped." >&2
    echo "  install it with:  $SRT_INSTALL   (it needs bwrap, socat and ripgrep:" >&2
    echo "  bash scripts/install-deps.sh), or point SRT=/path/to/srt at it" >&2
else
    for t in bwrap socat rg node; do
        command -v "$t" >/dev/null || { SRT_SKIP="skipped: srt needs $t, which is not installed"; break; }
    done
fi
SRT_VER=-
if [ -z "$SRT_SKIP" ]; then
    SRT_VER=$("$SRT" --version 2>/dev/null | head -1)
    SRT_NONE=$WORK/srt-none.json SRT_ALLOW=$WORK/srt-allow.json
    printf '{"network": {"allowedDomains": %s, "deniedDomains": []},\n "filesystem": {"denyRead": [], "allowWrite": [], "denyWrite": []}}\n' \
        '[]' >"$SRT_NONE"
    printf '{"network": {"allowedDomains": %s, "deniedDomains": []},\n "filesystem": {"denyRead": [], "allowWrite": [], "denyWrite": []}}\n' \
        "[\"localhost:$HPORT\", \"localhost:$EPORT\"]" >"$SRT_ALLOW"
    if ! "$SRT" --settings "$SRT_ALLOW" -- true >"$WORK/srt-preflight.err" 2>&1; then
        SRT_SKIP="skipped: \`srt -- true\` failed: $(head -c 160 "$WORK/srt-preflight.err" | tr '\n' ' ')"
    fi
fi
[ -n "$SRT_SKIP" ] && echo "srt rows: $SRT_SKIP" >&2
SR=("$SRT" --settings "${SRT_ALLOW:-}" --)     # srt with the two test ports allowed

ZB_VER=$("$ZB" --version 2>/dev/null | head -1)
echo "zerobox: $ZB ($ZB_VER); srt: ${SRT:-none} ($SRT_VER); $(nproc) cores; $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
rec date "$(date -u '+%F %H:%M:%S')"; rec zerobox "$ZB_VER"; rec srt "$SRT_VER"
rec load_before "$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- 1 start-up -------------------------------------------------------------------------
echo "[1/6] start-up (hyperfine -N, $RUNS runs per row)" >&2
hf=(-n zb-none "$ZB -- true" -n zb-filtered "$ZB ${ZB_FILTER[*]} -- true")
[ -z "$SRT_SKIP" ] && hf+=(-n srt-none "$SRT --settings $SRT_NONE -- true" -n srt-filtered "$SRT --settings $SRT_ALLOW -- true")
hyperfine -N -w "$WARMUP" -r "$RUNS" --export-json "$WORK/startup.json" "${hf[@]}" >"$WORK/startup.txt" 2>&1
declare -A SU
while read -r k m sd; do SU[$k]=$m SU[$k.sd]=$sd; rec "startup.$k" "$m"; done < <("$PY" - "$WORK/startup.json" <<'EOF'
import json, sys
for x in json.load(open(sys.argv[1]))["results"]:
    print(x["command"], f'{x["mean"]*1e3:.2f}', f'{x["stddev"]*1e3:.2f}')
EOF
)
delta() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a+0==a && b+0==b) printf "%+.2f", a-b; else print "-" }'; }
SU_ZB_D=$(delta "${SU[zb-filtered]}" "${SU[zb-none]}"); rec startup.zb.delta "$SU_ZB_D"
SU_SRT_D=$(delta "${SU[srt-filtered]:-}" "${SU[srt-none]:-}"); [ -z "$SRT_SKIP" ] && rec startup.srt.delta "$SU_SRT_D"

# ---- 2 CONNECT throughput ---------------------------------------------------------------
echo "[2/6] CONNECT throughput (${BIG_MIB} MiB x $TPUT_REPS per side)" >&2
BIG=$WORK/big.bin
if [ ! -f "$BIG" ] || [ "$(stat -c %s "$BIG")" -ne $((BIG_MIB * 1048576)) ]; then
    head -c $((BIG_MIB * 1048576)) /dev/urandom >"$BIG"
fi
cat "$BIG" >/dev/null   # page cache
start_server http http-server "$HPORT" "$BIG"
CURL_TP='exec curl -sS --noproxy "" -o /dev/null -p -x "$HTTP_PROXY" -w "%{speed_download} %{size_download}\n" "$0"'
: >"$WORK/tput_host.txt"; : >"$WORK/tput_zb.txt"; : >"$WORK/tput_srt.txt"
for _ in $(seq "$TPUT_REPS"); do   # interleaved so drift hits every side
    curl -sS --noproxy '*' -o /dev/null -w '%{speed_download} %{size_download}\n' \
        "http://127.0.0.1:$HPORT/big" >>"$WORK/tput_host.txt"
    "$ZB" "${ZB_FILTER[@]}" -- sh -c "$CURL_TP" "http://localhost:$HPORT/big" >>"$WORK/tput_zb.txt" || true
    if [ -z "$SRT_SKIP" ]; then
        "${SR[@]}" sh -c "$CURL_TP" "http://localhost:$HPORT/big" >>"$WORK/tput_srt.txt" || true
    fi
done
tput_med() { # file -> median MB/s of the complete downloads, or "-"
    awk -v s=$((BIG_MIB * 1048576)) '$2 == s {print $1/1e6}' "$1" | median
}
short=$(cat "$WORK"/tput_*.txt | awk -v s=$((BIG_MIB * 1048576)) '$2 != s' | wc -l)
[ "$short" -eq 0 ] || echo "warning: $short downloads were short (left out of the medians)" >&2
TP_HOST=$(tput_med "$WORK/tput_host.txt"); TP_ZB=$(tput_med "$WORK/tput_zb.txt")
TP_SRT=${SRT_SKIP:-$(tput_med "$WORK/tput_srt.txt")}
rec tput.direct "$TP_HOST"; rec tput.zb "$TP_ZB"; [ -z "$SRT_SKIP" ] && rec tput.srt "$TP_SRT"
rec tput.zb.pct "$(pct "$TP_ZB" "$TP_HOST" | cut -d' ' -f1)"
[ -z "$SRT_SKIP" ] && rec tput.srt.pct "$(pct "$TP_SRT" "$TP_HOST" | cut -d' ' -f1)"

# ---- 3 req/s over keep-alive ------------------------------------------------------------
echo "[3/6] req/s ($RPS_N keep-alive GETs per side)" >&2
read -r RPS_HOST RPS_HOST_OK < <("$PY" "$HELP" rps 127.0.0.1 "$HPORT" "$RPS_N")
read -r RPS_ZB RPS_ZB_OK < <("$ZB" "${ZB_FILTER[@]}" -- "$PY" "$HELP" rps localhost "$HPORT" "$RPS_N" env || echo "- 0")
RPS_SRT=$SRT_SKIP RPS_SRT_OK=-
[ -z "$SRT_SKIP" ] && read -r RPS_SRT RPS_SRT_OK < <("${SR[@]}" "$PY" "$HELP" rps localhost "$HPORT" "$RPS_N" env || echo "- 0")
okcheck() { [ "$2" = "$RPS_N" ] || echo "warning: $1: only $2 of $RPS_N GETs answered 'ok'" >&2; }
okcheck direct "$RPS_HOST_OK"; okcheck zerobox "$RPS_ZB_OK"; [ -z "$SRT_SKIP" ] && okcheck srt "$RPS_SRT_OK"
rec rps.direct "$RPS_HOST"; rec rps.zb "$RPS_ZB"; [ -z "$SRT_SKIP" ] && rec rps.srt "$RPS_SRT"
rec rps.zb.pct "$(pct "$RPS_ZB" "$RPS_HOST" | cut -d' ' -f1)"
[ -z "$SRT_SKIP" ] && rec rps.srt.pct "$(pct "$RPS_SRT" "$RPS_HOST" | cut -d' ' -f1)"

# ---- 4+5 concurrent tunnels and proxy memory ---------------------------------------------
echo "[4/6] $TUNNELS and $SMALL_TUNNELS concurrent CONNECT tunnels + [5/6] proxy memory" >&2
start_server echo echo-server "$EPORT"
ulimit -n 20000 2>/dev/null || true   # inherited by the clients and the proxies
MEM_INT=0.2
# run_mem TAG COMMS CMD... : runs CMD in the background, samples it with tree-mem, waits
# -> $WORK/mem_TAG.txt "<peak_pss> <rss_then> <procs_then> <max_procs> <samples> <hwm>"
#    and $WORK/out_TAG.txt (CMD's stdout)
run_mem() {
    local tag=$1 comms=$2; shift 2
    "$@" >"$WORK/out_$tag.txt" 2>"$WORK/err_$tag.txt" & local pid=$!
    "$PY" "$HELP" tree-mem "$pid" "$MEM_INT" "$comms" >"$WORK/mem_$tag.txt"
    wait "$pid" || echo "rc=$?" >>"$WORK/err_$tag.txt"
}
declare -A TUN MEM
tun_row() { # TAG -> TUN[TAG]=formatted cell, and records
    local tag=$1 ok n wall est up nerr first
    read -r ok n wall est up nerr first <"$WORK/out_$tag.txt" || true
    if [ -z "${ok:-}" ]; then
        TUN[$tag]="failed: $(tail -c 160 "$WORK/err_$tag.txt" | tr '\n' ' ')"; rec "tun.$tag.ok" 0; return
    fi
    TUN[$tag]="$ok/$n ok, $wall s"
    [ "$nerr" = 0 ] || TUN[$tag]+=" ($est established, the last CONNECT answered at $up s; $nerr failed: ${first//_/ })"
    rec "tun.$tag.ok" "$ok"; rec "tun.$tag.wall" "$wall"; rec "tun.$tag.est" "$est"; rec "tun.$tag.errors" "$nerr"
    rec "tun.$tag.up" "$up"; rec "tun.$tag.kinds" "$first"
}
mem_rec() { # TAG -> records pss/rss/procs/hwm
    local pss rss procs hwm
    read -r pss rss procs _ _ hwm <"$WORK/mem_$1.txt"
    MEM[$1]="$pss $rss $procs $hwm"
    rec "mem.$1.pss_kb" "$pss"; rec "mem.$1.rss_kb" "$rss"; rec "mem.$1.procs" "$procs"; rec "mem.$1.hwm_kb" "$hwm"
}
run_mem zb_idle self "$ZB" "${ZB_FILTER[@]}" -- sleep 1; mem_rec zb_idle
run_mem zb_load self "$ZB" "${ZB_FILTER[@]}" -- "$PY" "$HELP" tunnels localhost "$EPORT" "$TUNNELS" env "$HOLD"
mem_rec zb_load; tun_row zb_load
"$ZB" "${ZB_FILTER[@]}" -- "$PY" "$HELP" tunnels localhost "$EPORT" "$SMALL_TUNNELS" env \
    >"$WORK/out_zb_small.txt" 2>"$WORK/err_zb_small.txt" || true
tun_row zb_small
if [ -z "$SRT_SKIP" ]; then
    run_mem srt_idle node,socat "${SR[@]}" sleep 1; mem_rec srt_idle
    echo "      srt, $TUNNELS tunnels (up to ${TUNNEL_TIMEOUT}s)" >&2
    run_mem srt_load node,socat "${SR[@]}" "$PY" "$HELP" tunnels localhost "$EPORT" "$TUNNELS" env "$HOLD"
    mem_rec srt_load; tun_row srt_load
    "${SR[@]}" "$PY" "$HELP" tunnels localhost "$EPORT" "$SMALL_TUNNELS" env \
        >"$WORK/out_srt_small.txt" 2>"$WORK/err_srt_small.txt" || true
    tun_row srt_small
else
    TUN[srt_load]=$SRT_SKIP TUN[srt_small]=$SRT_SKIP
fi

# ---- 6 secrets: HTTPS intercepted vs tunnelled vs direct ----------------------------------
echo "[6/6] secrets: HTTPS through TLS interception vs a CONNECT tunnel vs direct" >&2
TLS=$WORK/tls; mkdir -p "$TLS"; CA=$TLS/ca.pem
(
    cd "$TLS"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -keyout ca.key -out ca.pem -subj "/CN=zerobox netbench test CA" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout leaf.key -out leaf.csr -subj /CN=api.test
    printf '%s\n' subjectAltName=DNS:api.test basicConstraints=critical,CA:FALSE \
        keyUsage=critical,digitalSignature extendedKeyUsage=serverAuth >leaf.ext
    openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile leaf.ext -out leaf.pem
    openssl verify -CAfile ca.pem leaf.pem
) >"$WORK/openssl.log" 2>&1 || { cat "$WORK/openssl.log" >&2; fail "making the test CA and leaf with openssl"; }
SECRET=$(openssl rand -hex 16)
start_server https https-server "$SPORT" "$BIG" "$TLS/leaf.pem" "$TLS/leaf.key" "$SECRET"
ZB_TUN=(--allow-net=api.test --resolve api.test:127.0.0.1 --env "REAL_TOKEN=$SECRET")
ZB_SEC=(--secret "TOKEN=$SECRET" --secret-host TOKEN=api.test --upstream-ca "$CA" --resolve api.test:127.0.0.1)
URL=https://api.test:$SPORT
# preflight: the server refuses a wrong token (exactly one rejection expected from here) ...
code=$(curl -sS --noproxy '*' --cacert "$CA" --resolve "api.test:$SPORT:127.0.0.1" \
    -H "Authorization: Bearer wrong" -o /dev/null -w '%{http_code}' "$URL/small")
[ "$code" = 401 ] || fail "the HTTPS server accepted a wrong token (HTTP $code)"
# ... and the intercepted client holds a placeholder, which the proxy replaces
pre=$("$ZB" "${ZB_SEC[@]}" -- sh -c 'case $TOKEN in "$1"|"") echo "token:${#TOKEN}"; exit;; esac
    printf "%s " "${TOKEN%%_*}"; curl -sS -H "Authorization: Bearer $TOKEN" -w " %{http_code}" "$0/small"' \
    "$URL" "$SECRET" 2>&1) || true
[ "$pre" = "ZEROBOX ok 200" ] || fail "secret substitution: intercepted request gave '$pre' (want 'ZEROBOX ok 200': placeholder in the sandbox, real value at the server)"

W_TLS='%{speed_download} %{size_download} %{http_code}\n'
: >"$WORK/tls_tput_direct.txt"; : >"$WORK/tls_tput_tun.txt"; : >"$WORK/tls_tput_icpt.txt"
: >"$WORK/tls_rps_direct.txt"; : >"$WORK/tls_rps_tun.txt"; : >"$WORK/tls_rps_icpt.txt"
for _ in $(seq "$TPUT_REPS"); do
    curl -sS --noproxy '*' --cacert "$CA" --resolve "api.test:$SPORT:127.0.0.1" -o /dev/null \
        -H "Authorization: Bearer $SECRET" -w "$W_TLS" "$URL/big" >>"$WORK/tls_tput_direct.txt" || true
    "$ZB" "${ZB_TUN[@]}" -- sh -c 'exec curl -sS --cacert "$1" -o /dev/null \
        -H "Authorization: Bearer $REAL_TOKEN" -w "$2" "$0"' "$URL/big" "$CA" "$W_TLS" \
        >>"$WORK/tls_tput_tun.txt" || true
    "$ZB" "${ZB_SEC[@]}" -- sh -c 'exec curl -sS -o /dev/null \
        -H "Authorization: Bearer $TOKEN" -w "$1" "$0"' "$URL/big" "$W_TLS" \
        >>"$WORK/tls_tput_icpt.txt" || true
done
for _ in $(seq "$TPUT_REPS"); do
    REAL_TOKEN=$SECRET "$PY" "$HELP" https-rps api.test "$SPORT" "$RPS_N" - "$CA" REAL_TOKEN \
        >>"$WORK/tls_rps_direct.txt" || true
    "$ZB" "${ZB_TUN[@]}" -- "$PY" "$HELP" https-rps api.test "$SPORT" "$RPS_N" env "$CA" REAL_TOKEN \
        >>"$WORK/tls_rps_tun.txt" || true
    "$ZB" "${ZB_SEC[@]}" -- "$PY" "$HELP" https-rps api.test "$SPORT" "$RPS_N" env - TOKEN \
        >>"$WORK/tls_rps_icpt.txt" || true
done
: >"$WORK/tls_first_direct.txt"; : >"$WORK/tls_first_tun.txt"; : >"$WORK/tls_first_icpt.txt"
for _ in $(seq "$FIRST_REPS"); do
    REAL_TOKEN=$SECRET "$PY" "$HELP" https-rps api.test "$SPORT" 0 - "$CA" REAL_TOKEN \
        >>"$WORK/tls_first_direct.txt" || true
    "$ZB" "${ZB_TUN[@]}" -- "$PY" "$HELP" https-rps api.test "$SPORT" 0 env "$CA" REAL_TOKEN \
        >>"$WORK/tls_first_tun.txt" || true
    "$ZB" "${ZB_SEC[@]}" -- "$PY" "$HELP" https-rps api.test "$SPORT" 0 env - TOKEN \
        >>"$WORK/tls_first_icpt.txt" || true
done
# loud checks: every download complete with 200, every GET answered "ok", no rejection
# at the server besides the preflight's
for s in direct tun icpt; do
    bad=$(awk -v s=$((BIG_MIB * 1048576)) '$2 != s || $3 != 200' "$WORK/tls_tput_$s.txt" | wc -l)
    [ "$bad" -eq 0 ] && [ "$(wc -l <"$WORK/tls_tput_$s.txt")" -eq "$TPUT_REPS" ] ||
        fail "HTTPS download ($s): $(cat "$WORK/tls_tput_$s.txt" | tr '\n' ';')"
    bad=$(awk -v n="$RPS_N" '$2 != n' "$WORK/tls_rps_$s.txt" | wc -l)
    [ "$bad" -eq 0 ] && [ "$(wc -l <"$WORK/tls_rps_$s.txt")" -eq "$TPUT_REPS" ] ||
        fail "HTTPS req/s ($s): $(cat "$WORK/tls_rps_$s.txt" | tr '\n' ';')"
    [ "$(wc -l <"$WORK/tls_first_$s.txt")" -eq "$FIRST_REPS" ] || fail "HTTPS first request ($s) failed"
done
nrej=$(grep -c '^rejected' "$WORK/https.err" || true)
[ "$nrej" -eq 1 ] || fail "the HTTPS server rejected $((nrej - 1)) benchmark requests: $(tail -3 "$WORK/https.err")"
declare -A TL
for s in direct tun icpt; do
    TL[tput.$s]=$(awk '{print $1/1e6}' "$WORK/tls_tput_$s.txt" | median)
    TL[rps.$s]=$(awk '{print $1}' "$WORK/tls_rps_$s.txt" | median)
    TL[first.$s]=$(awk '{print $3}' "$WORK/tls_first_$s.txt" | median)
    TL[second.$s]=$(awk '{print $4}' "$WORK/tls_first_$s.txt" | median)
    for k in tput rps first second; do rec "tls.$k.$s" "${TL[$k.$s]}"; done
done
rec load_after "$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- report -----------------------------------------------------------------------------
mib() { awk -v k="$1" 'BEGIN{ if (k+0==k) printf "%.1f", k/1024; else print "-" }'; }
r0() { awk -v x="$1" 'BEGIN{ if (x+0==x) printf "%.0f", x; else print x }'; }
memcell() { # TAG -> "HWM x MiB; Pss y MiB (n procs)"
    local pss rss procs hwm
    read -r pss rss procs hwm <<<"${MEM[$1]:-- - - -}"
    echo "VmHWM $(mib "$hwm") MiB; ΣPss $(mib "$pss") MiB over $procs proc(s) (ΣRSS $(mib "$rss"))"
}
SU_SRT_NONE=${SU[srt-none]:-} SU_SRT_F=${SU[srt-filtered]:-}
srtc() { [ -n "$SRT_SKIP" ] && echo "$SRT_SKIP" || echo "$1"; }
cat <<EOF

## Filtered-network benchmark ($(date -u '+%F %H:%M') UTC, $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg))

zerobox: $ZB_VER ($ZB); srt: $SRT_VER; targets: localhost:$HPORT (HTTP), localhost:$EPORT (echo)

| # | metric | direct | zerobox | srt | target |
|---|---|---:|---:|---:|---|
| 1 | start-up \`-- true\`, no network / none allowed (mean ± sd, $RUNS runs) | - | ${SU[zb-none]} ± ${SU[zb-none.sd]} ms | $(srtc "$SU_SRT_NONE ± ${SU[srt-none.sd]:-} ms") | - |
| 1 | start-up, filtered (2 ports allowed) | - | ${SU[zb-filtered]} ± ${SU[zb-filtered.sd]} ms | $(srtc "$SU_SRT_F ± ${SU[srt-filtered.sd]:-} ms") | - |
| 1 | filtered − no network | - | ${SU_ZB_D} ms | $(srtc "$SU_SRT_D ms") | ≤ +2 ms |
| 2 | CONNECT download, ${BIG_MIB} MiB (median of $TPUT_REPS, MB/s) | $(r0 "$TP_HOST") | $(r0 "$TP_ZB") ($(pct "$TP_ZB" "$TP_HOST")) | $(srtc "$(r0 "$TP_SRT") ($(pct "$TP_SRT" "$TP_HOST"))") | ≥ 70 % |
| 3 | keep-alive GETs, $RPS_N on 1 conn, absolute-form (req/s) | $RPS_HOST | $RPS_ZB ($(pct "$RPS_ZB" "$RPS_HOST")) | $(srtc "$RPS_SRT ($(pct "$RPS_SRT" "$RPS_HOST"))") | - |
| 4 | $TUNNELS concurrent CONNECT tunnels, 1 KiB echo (wall without the ${HOLD} s hold) | - | ${TUN[zb_load]} | ${TUN[srt_load]} | all ok |
| 4 | $SMALL_TUNNELS concurrent CONNECT tunnels | - | ${TUN[zb_small]} | ${TUN[srt_small]} | - |
| 5 | proxy memory, idle run (\`-- sleep 1\`) | - | $(memcell zb_idle) | $(srtc "$(memcell srt_idle)") | - |
| 5 | proxy memory during 4 (peak sampled ΣPss) | - | $(memcell zb_load) | $(srtc "$(memcell srt_load)") | - |

Secrets (zerobox only; srt skipped: its TLS termination, \`network.tlsTerminate\`, is marked
experimental and is not part of this comparison): api.test:$SPORT, Python ssl server, ECDSA
P-256 test CA; the server checked \`Authorization: Bearer <real value>\` on every request (the
intercepted client sent the placeholder).

| # | metric | direct | zerobox, tunnelled | zerobox, intercepted |
|---|---|---:|---:|---:|
| 6a | HTTPS download, ${BIG_MIB} MiB (median of $TPUT_REPS, MB/s) | $(r0 "${TL[tput.direct]}") | $(r0 "${TL[tput.tun]}") ($(pct "${TL[tput.tun]}" "${TL[tput.direct]}")) | $(r0 "${TL[tput.icpt]}") ($(pct "${TL[tput.icpt]}" "${TL[tput.direct]}")) |
| 6b | HTTPS keep-alive GETs, $RPS_N on 1 conn (median of $TPUT_REPS, req/s) | ${TL[rps.direct]} | ${TL[rps.tun]} ($(pct "${TL[rps.tun]}" "${TL[rps.direct]}")) | ${TL[rps.icpt]} ($(pct "${TL[rps.icpt]}" "${TL[rps.direct]}")) |
| 6c | first request of a fresh run: connect+CONNECT+TLS+GET (median of $FIRST_REPS, ms) | ${TL[first.direct]} | ${TL[first.tun]} | ${TL[first.icpt]} |
| 6c | second connection, same run (ms) | ${TL[second.direct]} | ${TL[second.tun]} | ${TL[second.icpt]} |

EOF
echo "raw: $WORK (startup.txt, tput_*.txt, out_*/mem_*.txt, tls_*.txt); summary: $RES"
