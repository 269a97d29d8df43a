#!/usr/bin/env bash
# bench/snapshot.sh - what zerobox snapshots cost, against what a user would otherwise do
# (copy the tree first, hash it, copy files back, git diff two trees). A benchmark, not a
# test: it prints numbers, and fails only when a zerobox command fails.
#
# Usage: bash bench/snapshot.sh            (about 6-10 minutes on 2 cores)
#        QUICK=1 bash bench/snapshot.sh    (smoke run: smaller trees, fewer runs, ~1 min)
#
# Measured (page cache warm; trees and the store on the same file system):
#   (a) start-up: `zerobox --snapshot --allow-write=TREE -C TREE -- true` on a tree of
#       SMALL files and one of BIG files (it should not depend on the tree's size), next to
#       `zerobox --allow-write=TREE -C TREE -- true` (no snapshot), `cp -a --reflink=auto
#       TREE COPY` and hashing the whole tree (`find TREE -type f -print0 | xargs -0 cat |
#       xxhsum`, md5sum when xxhsum is missing: Debian package xxhash);
#   (b) CHANGES changed files: the --review run that rewrites them (untimed in the accept
#       row: hyperfine --prepare), `zerobox snapshot accept last`, `snapshot diff last
#       --stat`; baselines `cp -a --reflink=auto` of the rewritten files over the tree and
#       `git diff --no-index --stat` of two trees;
#   (c) `zerobox snapshot restore last` of those changes (each run restores the session the
#       previous run created: a restore is itself a session of CHANGES changes);
#   (d) peak RSS while journaling: a --review run creating RSS_SMALL, then RSS_BIG small
#       files (/usr/bin/time %M, and VmHWM of zerobox's own process: snapshot_rss.py).
# Peak RSS of accept/diff/restore: /usr/bin/time %M around every timed run (max).
#
# Env knobs (defaults; QUICK=1 values in brackets):
#   ZEROBOX=path        binary under test (default: build/zerobox); a copy is benchmarked
#   ROOT=/var/tmp/zerobox-bench-snap   trees (kept in ROOT/trees for the next run) and
#                       results (ROOT/<UTC stamp>/); not /tmp
#   SMALL=100 BIG=200000 [100, 20000]       files in the two start-up trees
#   CHANGES=10000 [1000]                    files rewritten for accept/diff/restore
#   RSS_SMALL=10000 RSS_BIG=100000 [1000, 10000]   files created for the RSS rows
#   RUNS=20 [5]          timed runs of the fast rows; BIG_RUNS=3 [2] for the cp and hash
#                        rows on the big tree; APPLY_RUNS=5 [2] for accept/restore/review
#   OUT=file            also write the markdown table to this file
#   KEEP_TREES=1        keep ROOT/trees (0: delete them at the end)
#   KEEP_STORE=0        1: keep the run's snapshot store (ROOT/<stamp>/store, ~1 GB)
# On an ext4 without a journal (this VM's root), creating files right after deleting many
# is several times slower (recently freed inodes are skipped): outputs are moved aside and
# deleted only at the end, which takes a minute; leave >= 5 minutes between two runs.
# Needs: hyperfine, /usr/bin/time (package time), python3, git; xxhsum optional.
set -u -o pipefail

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
ZEROBOX=${ZEROBOX:-$REPO/build/zerobox}
ROOT=${ROOT:-/var/tmp/zerobox-bench-snap}
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
  SMALL=${SMALL:-100} BIG=${BIG:-20000} CHANGES=${CHANGES:-1000}
  RSS_SMALL=${RSS_SMALL:-1000} RSS_BIG=${RSS_BIG:-10000}
  RUNS=${RUNS:-5} BIG_RUNS=${BIG_RUNS:-2} APPLY_RUNS=${APPLY_RUNS:-2}
else
  SMALL=${SMALL:-100} BIG=${BIG:-200000} CHANGES=${CHANGES:-10000}
  RSS_SMALL=${RSS_SMALL:-10000} RSS_BIG=${RSS_BIG:-100000}
  RUNS=${RUNS:-20} BIG_RUNS=${BIG_RUNS:-3} APPLY_RUNS=${APPLY_RUNS:-5}
fi
OUT=${OUT:-}
KEEP_TREES=${KEEP_TREES:-1}
KEEP_STORE=${KEEP_STORE:-0}

die() { echo "bench/snapshot.sh: $*" >&2; exit 2; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
command -v hyperfine >/dev/null || die "hyperfine not found (apt-get install hyperfine)"
[ -x /usr/bin/time ] || die "/usr/bin/time not found (apt-get install time)"
PY=$(command -v python3) || die "python3 not found"
command -v git >/dev/null || die "git not found"
[ -x "$ZEROBOX" ] || die "ZEROBOX=$ZEROBOX is not an executable (build it first)"
for v in SMALL BIG CHANGES RSS_SMALL RSS_BIG RUNS BIG_RUNS APPLY_RUNS; do
  case ${!v} in '' | *[!0-9]*) die "$v must be a number" ;; esac
done
[ "$CHANGES" -ge 1000 ] || die "CHANGES must be >= 1000 (files are spread over directories of 1,000)"
if command -v xxhsum >/dev/null; then HASH=xxhsum; else HASH=md5sum; fi

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RES=$ROOT/$STAMP
TREES=$ROOT/trees
TRASH=$RES/trash   # what runs leave is moved here, not deleted while timing (see below)
mkdir -p "$RES/hf" "$TREES" "$TRASH" || die "cannot create $RES"
cp "$ZEROBOX" "$RES/zerobox" || die "cannot copy $ZEROBOX"
ZB=$RES/zerobox
export ZEROBOX_HOME=$RES/store
ROWS=$RES/rows.tsv
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$ROWS"
FAILED=0
log "results: $RES ($($ZB --version 2>/dev/null | head -1), hash: $HASH)"
trash() { [ -e "$1" ] && mv "$1" "$(mktemp -d "$TRASH/t.XXXXXX")/"; }

# mktree DIR N: N files (64..2047 bytes of pseudo-random data, fixed seed) in
# directories of 1,000, kept across runs of this script.
mktree() {
  local d=$1 n=$2
  [ -f "$d/.complete" ] && [ "$(cat "$d/.complete")" = "$n" ] && return
  log "creating $n files in $d"
  rm -rf "$d"
  "$PY" - "$d" "$n" <<'EOF' || die "cannot create $d"
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(1)
pool = rnd.randbytes(1 << 20)
for i in range(n):
    sub = os.path.join(d, "d%03d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(sub)
    size = rnd.randrange(64, 2048)
    off = rnd.randrange(0, len(pool) - size)
    with open(os.path.join(sub, "f%04d" % (i % 1000)), "wb") as f:
        f.write(pool[off:off + size])
EOF
  echo "$n" >"$d/.complete"
  sync
}

# hf NAME SECTION SIZE RUNS WARMUP PREPARE CMD: one hyperfine run of CMD (a command line
# for hyperfine -N), one row in ROWS. PREPARE ('' for none) runs before every timed run.
# Peak RSS: when RSSFILE is set, CMD appends /usr/bin/time %M there.
hf() {
  local name=$1 section=$2 size=$3 runs=$4 warmup=$5 prep=$6 cmd=$7 json
  json=$RES/hf/$(printf '%s' "$section-$name-$size" | tr -c 'A-Za-z0-9.-' _).json
  log "$section $name ($size): $cmd"
  local args=(-N --runs "$runs" --warmup "$warmup" --export-json "$json" --style basic)
  [ -n "$prep" ] && args+=(--prepare "$prep")
  if ! hyperfine "${args[@]}" -n "$name" "$cmd" >>"$RES/hyperfine.log" 2>&1; then
    log "FAILED: $name ($size); see $RES/hyperfine.log"
    FAILED=1
    printf '%s\t%s\t%s\tfailed\t\t\t\t%s\t\n' "$section" "$name" "$size" "$runs" >>"$ROWS"
    return 1
  fi
  local rss=
  if [ -n "${RSSFILE:-}" ] && [ -s "$RSSFILE" ]; then rss=$(sort -n "$RSSFILE" | tail -1); fi
  "$PY" - "$json" "$section" "$name" "$size" "$rss" >>"$ROWS" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print("\t".join([sys.argv[2], sys.argv[3], sys.argv[4], "%.6f" % r["mean"], "%.6f" % (r["stddev"] or 0),
                 "%.6f" % r["min"], "%.6f" % r["max"], str(len(r["times"])), sys.argv[5]]))
EOF
}
# rss1 SECTION NAME SIZE CMD...: one run under snapshot_rss.py, one row (time = that run).
rss1() {
  local section=$1 name=$2 size=$3 j
  shift 3
  log "$section $name ($size): $*"
  j=$("$PY" "$HERE/snapshot_rss.py" -- "$@") || { FAILED=1; return 1; }
  echo "$j" >>"$RES/rss.jsonl"
  "$PY" - "$j" "$section" "$name" "$size" >>"$ROWS" <<'EOF'
import json, sys
j = json.loads(sys.argv[1])
rss = "%s (zerobox VmHWM %s)" % (j["time_kb"], j["hwm_kb"])
ok = j["exit"] == 0
print("\t".join([sys.argv[2], sys.argv[3], sys.argv[4], "%.6f" % j["elapsed_s"] if ok else "failed", "", "", "", "1", rss]))
EOF
  [ "$(printf '%s' "$j" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["exit"])')" = 0 ] || {
    log "FAILED: $name ($size) exited non-zero"
    FAILED=1
  }
}

# ------------------------------------------------------------------ (a) start-up
S=$TREES/small-$SMALL
L=$TREES/big-$BIG
mktree "$S" "$SMALL"
mktree "$L" "$BIG"
HASH_SH=$RES/hash.sh
cat >"$HASH_SH" <<EOF
#!/bin/sh
# hash every file of a tree as one stream
find "\$1" -type f -print0 | xargs -0 cat | $HASH >/dev/null
EOF
COPY=$RES/copy
PREP_COPY=$RES/prep-copy.sh
cat >"$PREP_COPY" <<EOF
#!/bin/sh
# move the last copy aside, flush dirty data
if [ -e "$COPY" ]; then mv "$COPY" "\$(mktemp -d "$TRASH/c.XXXXXX")/" || exit 1; fi
sync
EOF
for t in small big; do
  if [ $t = small ]; then T=$S n=$SMALL r=$RUNS; else T=$L n=$BIG r=$BIG_RUNS; fi
  size="$n files"
  cat "$T"/d000/* >/dev/null  # warm the cache for the first rows (the hash rows read it all)
  # zerobox starts in milliseconds on either tree: RUNS runs on both.
  hf "zerobox --allow-write -- true (no snapshot)" a "$size" "$RUNS" 3 "" "$ZB --allow-write=$T -C $T -- true"
  hf "zerobox --snapshot -- true" a "$size" "$RUNS" 3 "" "$ZB --snapshot --allow-write=$T -C $T -- true"
  rss1 a "zerobox --snapshot -- true (peak RSS run)" "$size" "$ZB" --snapshot --allow-write="$T" -C "$T" -- true
  hf "cp -a --reflink=auto TREE COPY" a "$size" "$r" 1 "sh $PREP_COPY" "cp -a --reflink=auto $T $COPY"
  hf "find | xargs cat | $HASH" a "$size" "$r" 1 "" "sh $HASH_SH $T"
done

# ------------------------------------------------------------------ (b) accept and diff
M=$RES/changes       # the tree the sessions change (rewritten by every run)
mktree "$TREES/mid-$CHANGES" "$CHANGES"
cp -a "$TREES/mid-$CHANGES" "$M" && rm -f "$M/.complete"
REWRITE='for f in d*/f*; do echo changed >>"$f"; done'
PREP_REVIEW=$RES/prep-review.sh
cat >"$PREP_REVIEW" <<EOF
#!/bin/sh
# a pending session rewriting all $CHANGES files of $M
"$ZB" --quiet --review --allow-write="$M" -C "$M" -- sh -c '$REWRITE' || exit 1
sync
EOF
PREP_DISCARD=$RES/prep-discard.sh
cat >"$PREP_DISCARD" <<EOF
#!/bin/sh
# drop the pending session the previous run left
"$ZB" snapshot discard last >/dev/null 2>&1
sync
EOF
size="$CHANGES files"
# Context: the same rewrite without a sandbox, and in a sandbox without snapshot (in a
# copy of the tree, so the sessions below still match M).
BARE=$RES/bare
cp -a "$M" "$BARE" || die "cannot copy $M"
hf "the rewrite, no sandbox" b "$size" "$RUNS" 1 "" "sh -c 'cd $BARE && $REWRITE'"
hf "the rewrite in zerobox --allow-write (no snapshot)" b "$size" "$RUNS" 1 "" "$ZB --allow-write=$BARE -C $BARE -- sh -c '$REWRITE'"
hf "the rewrite in zerobox --review (overlay + journal)" b "$size" "$APPLY_RUNS" 0 "sh $PREP_DISCARD" "$ZB --review --allow-write=$M -C $M -- sh -c '$REWRITE'"
"$ZB" snapshot discard last >/dev/null 2>&1
RSSFILE=$RES/rss-accept.txt
hf "zerobox snapshot accept" b "$size" "$APPLY_RUNS" 0 "sh $PREP_REVIEW" "/usr/bin/time -a -o $RSSFILE -f %M $ZB snapshot accept last"
RSSFILE=$RES/rss-diff.txt
hf "zerobox snapshot diff --stat" b "$size" "$RUNS" 2 "" "/usr/bin/time -a -o $RSSFILE -f %M $ZB snapshot diff last --stat"
RSSFILE=
# Baselines: a pristine copy B0 and a rewritten copy B1 of the same tree; B1 is copied
# over B2 (another copy: M must stay as the sessions left it, for (c)).
B0=$RES/base-orig B1=$RES/base-new B2=$RES/base-target
cp -a "$TREES/mid-$CHANGES" "$B0" && rm -f "$B0/.complete"
cp -a "$B0" "$B1" && (cd "$B1" && sh -c "$REWRITE") && cp -a "$B0" "$B2" || die "cannot prepare the baselines"
hf "cp -a --reflink=auto of the rewritten files over the tree" b "$size" "$RUNS" 1 "" "cp -a --reflink=auto $B1/. $B2/"
hf "git diff --no-index --stat of two trees" b "$size" "$RUNS" 1 "" "sh -c 'git diff --no-index --stat $B0 $B1 >/dev/null; [ \$? -le 1 ]'"

# ------------------------------------------------------------------ (c) restore
# The tree's last session is the accepted one of (b); every run restores the session the
# previous run left (the first: (b)'s last accept; then each restore session in turn).
RSSFILE=$RES/rss-restore.txt
hf "zerobox snapshot restore" c "$size" "$APPLY_RUNS" 0 "sync" "/usr/bin/time -a -o $RSSFILE -f %M $ZB snapshot restore last"
RSSFILE=

# ------------------------------------------------------------------ (d) RSS while journaling
CREATE='mkdir n && i=0 && while [ $i -lt $0 ]; do echo $i >n/f$i; i=$((i+1)); done'
for n in "$RSS_SMALL" "$RSS_BIG"; do
  D=$RES/create-$n
  mkdir -p "$D"
  sync
  rss1 d "zerobox --review run creating N files (journaling N changes)" "$n files" \
    "$ZB" --review --allow-write="$D" -C "$D" -- sh -c "$CREATE" "$n"
done

# ------------------------------------------------------------------ report
{
  echo "## zerobox snapshot benchmark ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r);" \
    "file system of $ROOT: $(stat -f -c %T "$ROOT"). Warm page cache. Hash: $HASH. QUICK=$QUICK."
  echo "Load average (1/5/15 min) at start: $LOAD0; at end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine shows here)."
  echo "Times: hyperfine mean ± σ (min … max) over the runs shown. Peak RSS in KiB: /usr/bin/time %M"
  echo "(the largest process of the run; for (a) and (d) also VmHWM of zerobox's own process)."
  echo "(a) start-up on two trees; (b) $CHANGES rewritten files: the --review run, accept of the pending"
  echo "session (the --review run is an untimed prepare), diff --stat, and the baselines; (c) restore of"
  echo "$CHANGES changes (each run restores the session the previous one created; baseline: the cp row of (b));"
  echo "(d) one --review run creating N small files each."
  echo
  "$PY" - "$ROWS" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
def t(s):
    if s in ("", "failed"): return s
    v = float(s)
    return "%.1f ms" % (v * 1e3) if v < 1 else "%.2f s" % v
print("| | operation | input | time | min … max | runs | peak RSS (KiB) |")
print("|---|---|---|---:|---|---:|---|")
for sec, name, size, mean, sd, mn, mx, runs, rss in rows:
    tm = t(mean) + (" ± " + t(sd) if sd else "")
    rng = (t(mn) + " … " + t(mx)) if mn else ""
    cell = lambda x: x.replace("|", "\\|")
    print("| %s | %s | %s | %s | %s | %s | %s |" % (sec, cell(name), size, tm, rng, runs, rss))
def mean(sec, name, size):
    for r in rows:
        if r[0] == sec and r[1] == name and r[2] == size and r[3] not in ("", "failed"):
            return float(r[3])
def rss(sec, name, size):
    for r in rows:
        if r[0] == sec and r[1] == name and r[2] == size and r[8]:
            return int(r[8].split()[0])
sizes = []
for r in rows:
    if r[0] == "a" and r[2] not in sizes: sizes.append(r[2])
print()
if len(sizes) == 2:
    for name in ("zerobox --snapshot -- true", "cp -a --reflink=auto TREE COPY"):
        a, b = mean("a", name, sizes[0]), mean("a", name, sizes[1])
        if a and b:
            print("- `%s`: %s / %s = **%.2f×**" % (name, sizes[1], sizes[0], b / a))
dsz = [r[2] for r in rows if r[0] == "d"]
if len(dsz) == 2:
    dname = [r[1] for r in rows if r[0] == "d"][0]
    a, b = rss("d", dname, dsz[0]), rss("d", dname, dsz[1])
    if a and b:
        print("- peak RSS journaling %s vs %s: %d vs %d KiB = **%.2f×** (for %.0f× the changes)"
              % (dsz[1], dsz[0], b, a, b / a, int(dsz[1].split()[0]) / int(dsz[0].split()[0])))
EOF
} >"$RES/report.md"
cat "$RES/report.md"
[ -n "$OUT" ] && cp "$RES/report.md" "$OUT"

log "removing the runs' leftovers (trees stay in $TREES)"
rm -rf "$TRASH" "$M" "$BARE" "$B0" "$B1" "$B2" "$RES"/create-* "$RES/copy" "$RES/zerobox"
[ "$KEEP_STORE" = 1 ] || rm -rf "$ZEROBOX_HOME"
log "done: report in $RES/report.md"
[ "$KEEP_TREES" = 1 ] || rm -rf "$TREES"
[ "$FAILED" = 0 ] || { log "some zerobox runs failed: see $RES/hyperfine.log"; exit 1; }
exit 0
