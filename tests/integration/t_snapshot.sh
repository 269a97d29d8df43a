# Snapshots: --snapshot, --restore, --review and `zerobox snapshot list|show|diff|accept|
# discard|restore|clean` (docs/usage.md "Snapshots", "zerobox snapshot subcommands", "The
# store"). Every kind of change is run with --review, accepted (the host then
# holds exactly what the command saw), restored (the host is back byte for byte) and the
# restore undone.
. "$(dirname "$0")/lib.sh"
need_python

export ZEROBOX_HOME=$WORK/store
S=$HOSTDIR/s             # one tracked tree per case below
OUTSIDE=$HOSTDIR/outside # a host dir next to the trees: no write may ever land here
mkdir -p "$S" "$OUTSIDE/sub"
echo "outside g" >"$OUTSIDE/g"
echo "outside h" >"$OUTSIDE/h"
echo "outside sub" >"$OUTSIDE/sub/x"
OUT0=$(tree_state "$OUTSIDE")
STATE_FN=$(declare -f snap_state)

outside_unchanged() { # DESCRIPTION
  local now
  now=$(tree_state "$OUTSIDE")
  if [ "$now" = "$OUT0" ]; then ok "$1"; else
    fail "$1: the directory outside the tree changed: $(diff <(echo "$OUT0") <(echo "$now") | head -20)"
  fi
}
no_artifacts() { # DIR DESCRIPTION
  local a
  a=$(snap_artifacts "$1")
  [ -z "$a" ]
  _check $? "$2" "overlay internals reached the host: $a"
}
sorted() { printf '%s\n' "$1" | LC_ALL=C sort; }
restore_undo_id() { printf '%s\n' "$ERR" | sed -n 's/.*zerobox snapshot restore \([0-9a-f]*\)`.*/\1/p' | tail -1; }

# snap_case NAME SETUP CMD [NAME_STATUS [FIX]]
# SETUP runs on the host in a fresh tree $S/NAME, CMD in the sandbox (--review, tracked
# tree = working directory). Checks: the review leaves the host alone; diff --name-status
# is NAME_STATUS (any order; skipped when empty); accept makes the host equal what CMD
# saw (after the sed script FIX, for what accept changes on purpose); no overlay internals
# on the host; restore brings back the tree byte for byte; restoring the restore brings
# back the accepted tree; nothing outside the tree changes.
# Leaves CASE_ID (the session) and CASE_DIR for extra checks.
# Each case has its own store, so that a failure in one cannot spill into the next; and
# whatever happened, the store must still answer afterwards.
snap_case() {
  export ZEROBOX_HOME=$WORK/store.$1
  _snap_case "$@"
  zb snapshot list
  expect_rc 0 "$1: the store is still usable afterwards"
}
_snap_case() {
  local name=$1 setup=$2 cmd=$3 want_ns=${4-} fix=${5-}
  local d=$S/$name s0 inside want accepted rid
  CASE_DIR=$d
  mkdir -p "$d"
  (cd "$d" && eval "$setup") || fail "$name: setup failed"
  s0=$(snap_state "$d")
  zb_in "$d" --review --allow-write="$d" -- bash -c "$STATE_FN"'
    set -e; { '"$cmd"'
    } >&2; snap_state .'
  expect_rc 0 "$name: the command ran under --review"
  inside=$OUT
  CASE_ID=$(snap_id)
  if [ -z "$CASE_ID" ]; then
    fail "$name: no session id on stderr"
    return 1
  fi
  expect_contains "$ERR" "pending)" "$name: the session is pending"
  snap_expect_state "$(snap_state "$d")" "$s0" "$name: --review leaves the host unchanged"
  if [ -n "$want_ns" ]; then
    zb snapshot diff "$CASE_ID" --name-status
    expect_rc 0 "$name: diff --name-status"
    expect_eq "$(sorted "$OUT")" "$(sorted "$want_ns")" "$name: diff --name-status lists every change"
  fi
  zb snapshot accept "$CASE_ID"
  expect_rc 0 "$name: accept" || return 1
  accepted=$(snap_state "$d")
  want=$inside
  [ -n "$fix" ] && want=$(printf '%s\n' "$inside" | sed -E "$fix")
  snap_expect_state "$accepted" "$want" "$name: after accept the host tree is what the command produced"
  no_artifacts "$d" "$name: no whiteout or overlay xattr on the host after accept"
  outside_unchanged "$name: nothing outside the tree changed at accept"
  zb snapshot restore "$CASE_ID"
  expect_rc 0 "$name: restore" || return 1
  rid=$(restore_undo_id)
  snap_expect_state "$(snap_state "$d")" "$s0" "$name: after restore the tree is byte for byte what it was"
  outside_unchanged "$name: nothing outside the tree changed at restore"
  if [ -n "$rid" ]; then
    zb snapshot restore "$rid"
    expect_rc 0 "$name: restoring the restore session"
    snap_expect_state "$(snap_state "$d")" "$accepted" "$name: restoring the restore brings back the accepted tree"
    outside_unchanged "$name: nothing outside the tree changed when the restore was undone"
  else
    fail "$name: restore did not name the session that undoes it"
  fi
}

# --- Every kind of change, through --review / accept / restore / undo. ---
snap_case basic \
  'echo a >a; echo b >b; mkdir dir; echo c >dir/c; echo keep >keep' \
  'echo new >n; echo more >>a; rm b; echo d >dir/d; mkdir -p nd/deeper; echo x >nd/deeper/x' \
  "A	n
M	a
D	b
A	dir/d
A	nd
A	nd/deeper
A	nd/deeper/x"

snap_case opaque \
  'mkdir -p d/sub; echo f >d/sub/f; echo g >d/g; chmod 750 d' \
  'rm -rf d; mkdir -p d/new; echo n >d/new/n; echo g2 >d/g'

snap_case dir_rename \
  'mkdir -p r/x r/y; echo r >r/x/r; echo s >r/y/s; ln -s x/r r/lnk; chmod 700 r/y' \
  'mv r r2; mv r2/x r2/x2'
zb snapshot diff "$CASE_ID" --name-status
expect_contains "$OUT" "D	r/x/r" "dir_rename: the old path is listed as deleted"
expect_contains "$OUT" "A	r2/x2/r" "dir_rename: the new path is listed as added"

snap_case file_rename 'printf "same content\n" >old.txt' 'mv old.txt new.txt'
zb snapshot diff "$CASE_ID"
expect_contains "$OUT" "rename from old.txt" "file_rename: diff shows the rename (diff shows renamed changes)"

snap_case f2d 'echo a >f2d' 'rm f2d; mkdir f2d; echo in >f2d/in' "T	f2d
A	f2d/in"
snap_case d2f 'mkdir d2f; echo x >d2f/x' 'rm -r d2f; echo nowfile >d2f' "T	d2f
D	d2f/x"
snap_case f2l 'echo b >f2l; echo t >t' 'rm f2l; ln -s t f2l' "T	f2l"
snap_case l2f 'ln -s target l2f' 'rm l2f; echo nowfile >l2f' "T	l2f"
snap_case d2l 'mkdir d2l tgt; echo y >d2l/y' 'rm -r d2l; ln -s tgt d2l' "T	d2l
D	d2l/y"
snap_case l2d 'mkdir tgt; ln -s tgt l2d' 'rm l2d; mkdir l2d; echo z >l2d/z' "T	l2d
A	l2d/z"
snap_case l2d_empty 'mkdir tgt; ln -s tgt l2d' 'rm l2d; mkdir l2d' "T	l2d"
snap_case f2p 'echo c >f2p' 'rm f2p; mkfifo f2p; chmod 600 f2p' "T	f2p"
snap_case p2f 'mkfifo p2f; chmod 640 p2f' 'rm p2f; echo pf >p2f' "T	p2f"

# The command turns directories into symlinks to a directory outside the tree and tries to
# write through them. Accept and restore must never follow them: $OUTSIDE has files named
# like the ones the session deletes (g, h, sub/x) and recreates at restore.
snap_case symlink_out \
  'mkdir -p d/sub dd; echo g >d/g; echo x >d/sub/x; echo h >dd/h; echo f >f' \
  "rm -rf d dd f; ln -s '$OUTSIDE' d; ln -s '$OUTSIDE' dd; ln -s '$OUTSIDE/g' f
   (echo evil >d/evil) 2>/dev/null || true
   (echo evil >>f) 2>/dev/null || true
   ln -s '$OUTSIDE/sub' newlink"
[ -e "$OUTSIDE/evil" ] && fail "symlink_out: a write through the symlink reached $OUTSIDE"
expect_eq "$(readlink "$CASE_DIR/d" 2>/dev/null)" "$OUTSIDE" "symlink_out: after the undo the symlink is back as the command made it"

snap_case perms \
  'echo m >m; chmod 644 m; mkdir pd; chmod 755 pd; echo x >pd/x; echo e >exe; chmod 755 exe' \
  'chmod 600 m; chmod 700 pd; chmod 644 exe' \
  "M	m
M	pd
M	exe"
zb snapshot diff "$CASE_ID" --json
kinds=$("$PY" -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(sorted(c["path"].rsplit("/",1)[1]+"="+c["kind"]+":%o>%o"%(c["old_mode"],c["new_mode"]) for c in d["changes"])))' <<<"$OUT" 2>&1)
expect_eq "$kinds" "exe=mode_changed:755>644 m=mode_changed:644>600 pd=mode_changed:755>700" "perms: --json kind mode_changed with old and new modes"

# Hardlinks: accepted as separate files with the content the command saw.
snap_case hardlinks \
  'echo h >h1; ln h1 h2; echo solo >solo' \
  'echo n >n1; ln n1 n2; echo more >>n2; ln solo solo2'
i1=$(stat -c %i "$CASE_DIR/n1") i2=$(stat -c %i "$CASE_DIR/n2")
expect_ne "$i1" "$i2" "hardlinks: accepted as separate files"
expect_eq "$(cat "$CASE_DIR/n1")" "n
more" "hardlinks: both names carry the content written through either"
expect_eq "$(stat -c %h "$CASE_DIR/h1")" 2 "hardlinks: a host hardlink the command did not touch stays linked"

snap_case fifos \
  'mkfifo old; chmod 600 old' \
  'mkfifo new; chmod 640 new; rm old; mkdir sub; mkfifo sub/p' \
  "A	new
D	old
A	sub
A	sub/p"
expect_eq "$(stat -c %F "$CASE_DIR/new")" fifo "fifos: the FIFO is a FIFO on the host"

# setuid/setgid bits cannot be set inside (seccomp refuses them: t_stdio.sh); should one
# come through, accept drops it: the host file is the command's minus those bits.
snap_case setuid \
  'echo plain >was_plain; chmod 755 was_plain' \
  'printf "#!/bin/sh\n" >su; chmod 4755 su || chmod 755 su; printf "#!/bin/sh\n" >sg; chmod 2755 sg || chmod 755 sg
   printf "#!/bin/sh\n" >both; chmod 6711 both || chmod 711 both; chmod u+s was_plain || true; mkdir sgd; chmod 2755 sgd || true' \
  '' 's/^(\.\/(su|sg|both|was_plain)\|f\|)[246]([0-7]{3})\|/\1\3|/'
[ -d "$CASE_DIR/sgd" ] || fail "setuid: sgd missing"
for f in su sg both was_plain; do
  m=$(stat -c %a "$CASE_DIR/$f")
  [ "${#m}" = 3 ] || [ "${m:0:1}" = 0 ] || [ "${m:0:1}" = 1 ]
  _check $? "setuid: $f has no setuid/setgid bit after accept (mode $m)" "mode $m"
done

# Names with newlines, tabs, quotes and non-UTF-8 bytes.
NL=$'nl\nname' BAD=$'bad\xffname' TAB=$'t\tab'
snap_case names \
  'echo old >"$(printf "old\nline")"; echo old >"$(printf "old\xfebyte")"' \
  'printf "a\nb\n" >"$(printf "nl\nname")"; echo x >"$(printf "bad\xffname")"; echo t >"$(printf "t\tab")"
   echo q >"q\"uote"; rm "$(printf "old\nline")" "$(printf "old\xfebyte")"' \
  "A	\"nl\\nname\"
A	\"bad\\377name\"
A	\"t\\tab\"
A	\"q\\\"uote\"
D	\"old\\nline\"
D	\"old\\376byte\""
zb snapshot diff "$CASE_ID" --json
expect_rc 0 "names: diff --json"
got=$("$PY" -c '
import base64, json, sys
d = json.load(sys.stdin)
out = []
for c in d["changes"]:
    if "path_b64" in c and c["path_b64"] is not None:
        out.append("b64:" + repr(base64.b64decode(c["path_b64"])))
    else:
        out.append("path:" + repr(c["path"].encode()))
print("\n".join(sorted(out)))' <<<"$OUT" 2>&1)
want=$("$PY" -c '
import sys
d = sys.argv[1].encode()
print("\n".join(sorted([
  "path:" + repr(d + b"/nl\nname"), "b64:" + repr(d + b"/bad\xffname"), "path:" + repr(d + b"/t\tab"),
  "path:" + repr(d + b"/q\"uote"), "path:" + repr(d + b"/old\nline"), "b64:" + repr(d + b"/old\xfebyte")])))' "$CASE_DIR")
expect_eq "$got" "$want" "names: --json gives absolute paths, path_b64 for the non-UTF-8 ones"
expect_file_eq "$CASE_DIR/$NL" "a
b" "names: the file with a newline in its name has its content"
expect_file_eq "$CASE_DIR/$BAD" x "names: the non-UTF-8 name has its content"
expect_file_eq "$CASE_DIR/$TAB" t "names: the name with a tab has its content"

export ZEROBOX_HOME=$WORK/store

# --- A 1 GiB sparse file: created, and written in the middle of a host one. ---
SP=$S/sparse
mkdir -p "$SP"
truncate -s 1G "$SP/host.img"
printf HOSTDATA | dd of="$SP/host.img" bs=1 seek=$((300 * 1024 * 1024)) conv=notrunc status=none
sp0=$(snap_state "$SP")
sp_sum0=$(md5sum <"$SP/host.img")
zb_in "$SP" --review --allow-write="$SP" -- sh -c \
  "truncate -s 1G new.img && printf NEWDATA | dd of=new.img bs=1 seek=$((700 * 1024 * 1024)) conv=notrunc status=none &&
   printf CHANGED | dd of=host.img bs=1 seek=$((300 * 1024 * 1024)) conv=notrunc status=none"
expect_rc 0 "sparse: write into a 1 GiB sparse file"
sid=$(snap_id)
zb snapshot diff "$sid" --stat
expect_rc 0 "sparse: diff --stat of 1 GiB files"
zb snapshot accept "$sid"
expect_rc 0 "sparse: accept"
expect_eq "$(stat -c %s "$SP/new.img" 2>/dev/null)" 1073741824 "sparse: the new file is 1 GiB"
expect_eq "$(dd if="$SP/new.img" bs=1 skip=$((700 * 1024 * 1024)) count=7 status=none)" NEWDATA "sparse: the new file has its bytes at the offset"
expect_eq "$(dd if="$SP/host.img" bs=1 skip=$((300 * 1024 * 1024)) count=8 status=none)" CHANGEDA "sparse: the host file has the new bytes at the offset"
for f in new.img host.img; do
  kb=$(du -k "$SP/$f" | cut -f1)
  [ "$kb" -lt 65536 ]
  _check $? "sparse: $f stays sparse after accept (du ${kb} KiB)" "du says $kb KiB allocated"
done
kb=$(du -sk "$ZEROBOX_HOME" | cut -f1)
[ "$kb" -lt 131072 ]
_check $? "sparse: the store keeps the 1 GiB pre-image sparse (du ${kb} KiB)" "the store takes $kb KiB"
zb snapshot restore "$sid"
expect_rc 0 "sparse: restore"
snap_expect_state "$(snap_state "$SP")" "$sp0" "sparse: after restore the tree is what it was"
expect_eq "$(md5sum <"$SP/host.img")" "$sp_sum0" "sparse: the 1 GiB host file is back byte for byte"
kb=$(du -k "$SP/host.img" | cut -f1)
[ "$kb" -lt 65536 ]
_check $? "sparse: host.img stays sparse after restore (du ${kb} KiB)" "du says $kb KiB allocated"
rm -rf "$SP"

# --- Unix sockets are skipped at accept, with a warning. ---
SO=$S/sock
mkdir -p "$SO"
zb_in "$SO" --snapshot --allow-write="$SO" -- "$PY" -c '
import socket
s = socket.socket(socket.AF_UNIX); s.bind("sock")
open("file", "w").write("f\n")'
expect_rc 0 "socket: the command bound a unix socket in the tree"
expect_absent "$SO/sock" "socket: the socket inode is not recreated on the host"
expect_file_eq "$SO/file" f "socket: the rest of the session is applied"
expect_contains "$ERR" "sock" "socket: zerobox warns that it skipped the socket"
expect_contains "$ERR" "warning" "socket: the message is a warning"

# --- Forged overlay metadata: xattrs and whiteouts the command makes itself are data at
# most; they never delete or hide host files, and never reach the host. ---
FX=$S/forge
mkdir -p "$FX/d" && echo keep >"$FX/d/keep" && echo keep >"$FX/victim"
zb_in "$FX" --snapshot --allow-write="$FX" -- "$PY" -c '
import os, stat
ov = [p + ".overlay." + n for p in ("user", "trusted") for n in ("opaque", "whiteout", "redirect", "metacopy", "origin")]
def forge(path, value):
    for x in ov:
        try: os.setxattr(path, x, value, follow_symlinks=False)
        except OSError: pass
forge("d", b"y")
os.mkdir("n"); open("w", "w").close()
forge("n", b"y"); forge("w", b"/victim")
for name in ("wo", "n/wo"):
    try: os.mknod(name, 0o600 | stat.S_IFCHR, os.makedev(0, 0)); print("mknod", name)
    except OSError: pass
open("done", "w").close()'
expect_rc 0 "forged overlay metadata: the command ran"
expect_out_empty "forged overlay metadata: a whiteout (char 0:0) cannot be created inside"
expect_file_eq "$FX/d/keep" keep "forged overlay metadata: a forged opaque dir hides nothing on the host"
expect_file_eq "$FX/victim" keep "forged overlay metadata: a forged redirect/whiteout deletes nothing on the host"
expect_present "$FX/done" "forged overlay metadata: the session was applied"
no_artifacts "$FX" "forged overlay metadata: no whiteout or overlay xattr reaches the host"

# --- The tracked root itself looks the same inside and keeps its mode. ---
R=$S/root
mkdir -p "$R" && chmod 751 "$R"
zb_in "$R" --review --allow-write="$R" -- stat -c %a .
expect_eq "$OUT" 751 "the tracked directory shows its own mode inside the sandbox"
zb snapshot discard "$(snap_id)"
zb_in "$R" --snapshot --allow-write="$R" -- touch x
expect_eq "$(stat -c %a "$R")" 751 "accept leaves the tracked directory's mode alone"

# --- --snapshot applies at exit; --restore throws away; the status event. ---
M=$S/modes
mkdir -p "$M" && echo base >"$M/f"
m0=$(snap_state "$M")
zb_in "$M" --snapshot --allow-write="$M" -- bash -c "$STATE_FN"'
  echo changed >f; echo new >n; mkdir d; snap_state .'
expect_rc 0 "--snapshot: runs"
snap_expect_state "$(snap_state "$M")" "$OUT" "--snapshot: the changes are on the host at exit"
expect_contains "$ERR" "accepted)" "--snapshot: the session line says accepted"
id_snap=$(snap_id)
zb snapshot show "$id_snap" --json
st=$("$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["state"], d["mode"], d["kind"], d["changes"], d["tracked"] == [sys.argv[1]], d["cwd"] == sys.argv[1])' "$M" <<<"$OUT" 2>&1)
expect_eq "$st" "accepted snapshot run 3 True True" "--snapshot: show --json (state, mode, kind, changes, tracked, cwd)"
zb snapshot restore "$id_snap"
expect_rc 0 "--snapshot: restore"
snap_expect_state "$(snap_state "$M")" "$m0" "--snapshot: restore puts the tree back"
zb snapshot restore "$id_snap"
expect_rc 1 "restoring twice is refused (exit 1)"
expect_contains "$ERR" "zerobox: error:" "restoring twice: an error message"
zb snapshot list --json
st=$("$PY" -c '
import json, sys
for s in json.load(sys.stdin):
    if s["id"].startswith(sys.argv[1]): print(s["state"])' "$id_snap" <<<"$OUT" 2>&1)
expect_eq "$st" restored "list --json: the session is restored"
zb snapshot list
expect_rc 0 "list"
expect_contains "$OUT" "undo" "list: the restore session's mode is undo"
zb snapshot show last --json
expect_eq "$("$PY" -c 'import json,sys; print(json.load(sys.stdin)["kind"])' <<<"$OUT" 2>&1)" restore "show last --json: the restore session's kind is restore"

exec 3>"$WORK/status"
zb_in "$M" --restore --status-fd=3 --allow-write="$M" -- sh -c 'echo thrown >f; echo away >gone'
exec 3>&-
expect_rc 0 "--restore: runs"
snap_expect_state "$(snap_state "$M")" "$m0" "--restore: the host is unchanged at exit"
expect_contains "$ERR" "restored)" "--restore: the session line says restored"
ev=$("$PY" -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
names = [e["event"] for e in ev]
s = [e for e in ev if e["event"] == "session"]
print(names[-2:], len(s[0]["id"]) if s else 0, s[0]["state"] if s else "", s[0]["changes"] if s else "")' "$WORK/status" 2>&1)
expect_eq "$ev" "['child_exit', 'session'] 32 restored 2" "--status-fd: the session event follows child_exit with the full id"
zb snapshot diff last --name-status
expect_eq "$(sorted "$OUT")" "$(sorted "M	f
A	gone")" "--restore: snapshot diff still shows the changes"
zb snapshot diff last
expect_contains "$OUT" "+thrown" "--restore: the patch shows the thrown-away content"
zb snapshot accept last
expect_rc 1 "accept of a --restore session is refused (exit 1)"
snap_expect_state "$(snap_state "$M")" "$m0" "the refused accept changed nothing"

zb_in "$M" --review --quiet --allow-write="$M" -- sh -c 'echo q >q'
expect_eq "$ERR" "" "--quiet: no session line"
zb snapshot discard last
expect_rc 0 "discard"
expect_absent "$M/q" "discard: nothing applied"
zb snapshot accept last
expect_rc 1 "accept after discard is refused (exit 1)"
expect_absent "$M/q" "accept after discard: nothing applied"

# --- Diff output formats. ---
F=$S/fmt
mkdir -p "$F/sub"
printf 'one\ntwo\nthree\n' >"$F/text"
printf '\000\001\002bin' >"$F/bin"
echo s >"$F/sub/s"
zb_in "$F" --review --allow-write="$F" -- sh -c \
  "printf 'one\nTWO\nthree\nfour\n' >text; printf '\000\001\003bin' >bin; echo s2 >>sub/s; echo new >sub/new"
fid=$(snap_id)
zb snapshot diff "$fid" --color=never
expect_rc 0 "diff: patch"
expect_contains "$OUT" "--- a/text
+++ b/text" "diff: unified headers relative to the working directory"
expect_contains "$OUT" "-two
+TWO
 three
+four" "diff: the text change as a patch"
expect_contains "$OUT" "Binary files a/bin and b/bin differ" "diff: Binary files … differ"
expect_not_contains "$OUT" $'\033[' "diff --color=never: no escapes"
zb snapshot diff "$fid" --color=always
expect_contains "$OUT" $'\033[' "diff --color=always: coloured"
zb snapshot diff "$fid" --stat
expect_contains "$OUT" "4 files changed" "diff --stat: summary line"
printf '%s\n' "$OUT" | tail -1 | grep -Eq '^ 4 files changed, [0-9]+ insertions?\(\+\), [0-9]+ deletions?\(-\)$'
_check $? "diff --stat: the summary line has git's form" "last line: $(printf '%s\n' "$OUT" | tail -1)"
zb snapshot diff "$fid" --json
expect_rc 0 "diff --json"
js=$("$PY" -c '
import json, sys
d = json.load(sys.stdin)
print(d["session"].startswith(sys.argv[1]), len(d["session"]), sorted((c["path"][len(sys.argv[2]):], c["kind"], c["old_size"], c["new_size"]) for c in d["changes"]))' "$fid" "$F/" <<<"$OUT" 2>&1)
expect_eq "$js" "True 32 [('bin', 'modified', 6, 6), ('sub/new', 'added', None, 4), ('sub/s', 'modified', 2, 5), ('text', 'modified', 14, 19)]" "diff --json parses: session id, paths, kinds, sizes"
zb snapshot diff "$fid" --name-status "$F/sub"
expect_eq "$(sorted "$OUT")" "$(sorted "M	sub/s
A	sub/new")" "diff PATH: only changes under PATH"
zb snapshot diff "$fid" --stat --json
expect_rc 2 "diff --stat --json: usage error (exit 2)"
zb snapshot diff "$fid" --color=sometimes
expect_rc 2 "diff --color=sometimes: usage error (exit 2)"
zb snapshot show "$fid"
expect_rc 0 "show"
expect_contains "$OUT" "pending" "show: the state"
zb snapshot list --json
expect_rc 0 "list --json"
js=$("$PY" -c '
import json, sys
l = json.load(sys.stdin)
print(type(l).__name__, any(s["id"].startswith(sys.argv[1]) and s["state"] == "pending" for s in l))' "$fid" <<<"$OUT" 2>&1)
expect_eq "$js" "list True" "list --json: an array holding the pending session"

# --- Conflicts. ---
C=$S/conf
mkdir -p "$C" && echo a >"$C/a" && echo b >"$C/b" && echo c >"$C/c"
zb_in "$C" --review --allow-write="$C" -- sh -c 'echo A >a; echo B >b; echo C >c; echo N >n'
cid=$(snap_id)
echo host-a >"$C/a"
echo host-b >"$C/b"
c1=$(snap_state "$C")
zb snapshot accept "$cid"
expect_rc 1 "accept with conflicts is refused (exit 1)"
expect_eq "$(printf '%s\n' "$ERR" | grep -c '^zerobox: error: conflict: ')" 2 "accept: every conflict listed"
expect_contains "$ERR" "$C/a" "accept: the conflict names a"
snap_expect_state "$(snap_state "$C")" "$c1" "a refused accept changes nothing"
zb snapshot accept "$cid" --force
expect_rc 0 "accept --force"
expect_eq "$(cat "$C/a" "$C/b" "$C/c" "$C/n")" "A
B
C
N" "accept --force applies everything"
zb snapshot restore "$cid"
expect_rc 0 "restore after a forced accept"
snap_expect_state "$(snap_state "$C")" "$c1" "after a forced accept, restore returns to the state just before the accept"
zb_in "$C" --snapshot --allow-write="$C" -- sh -c 'echo X >c'
cid=$(snap_id)
echo later >"$C/c"
zb snapshot restore "$cid"
expect_rc 1 "restore of a file changed after the session is refused (exit 1)"
expect_contains "$ERR" "zerobox: error: conflict: " "restore: the conflict is listed"
expect_file_eq "$C/c" later "a refused restore changes nothing"
zb snapshot restore "$cid" --force
expect_rc 0 "restore --force"
expect_file_eq "$C/c" c "restore --force puts the pre-image back"

# --- Excluded paths: applied at exit in every mode, never journaled or restored. ---
for mode in snapshot restore review; do
  X=$S/excl-$mode
  mkdir -p "$X/build" "$X/sub"
  echo old >"$X/old.log" && echo tracked >"$X/t" && echo b0 >"$X/build/b0"
  zb_in "$X" --"$mode" --snapshot-exclude='*.log,build/' --allow-write="$X" -- sh -c \
    'echo new >x.log; echo more >>old.log; echo y >sub/y.log; echo o >build/out; rm build/b0; mkdir -p sub/build; echo z >sub/build/z; echo f >build.txt; echo T >t'
  expect_rc 0 "exclude --$mode: runs"
  xid=$(snap_id)
  expect_file_eq "$X/x.log" new "exclude --$mode: a new *.log is applied at exit"
  expect_file_eq "$X/old.log" "old
more" "exclude --$mode: a changed *.log is applied at exit"
  expect_file_eq "$X/sub/y.log" y "exclude --$mode: *.log matches in subdirectories"
  expect_file_eq "$X/build/out" o "exclude --$mode: build/ is applied at exit"
  expect_absent "$X/build/b0" "exclude --$mode: a deletion in build/ is applied at exit"
  expect_file_eq "$X/sub/build/z" z "exclude --$mode: build/ matches in subdirectories"
  zb snapshot diff "$xid" --name-status
  expect_eq "$(sorted "$OUT")" "$(sorted "M	t
A	build.txt")" "exclude --$mode: diff lists only the tracked changes"
  case $mode in
    snapshot)
      expect_file_eq "$X/t" T "exclude --snapshot: the tracked change is applied"
      zb snapshot restore "$xid"; expect_rc 0 "exclude --snapshot: restore" ;;
    restore) expect_file_eq "$X/t" tracked "exclude --restore: the tracked change is thrown away" ;;
    review)
      expect_file_eq "$X/t" tracked "exclude --review: the tracked change waits"
      zb snapshot accept "$xid"; expect_rc 0 "exclude --review: accept"
      expect_file_eq "$X/t" T "exclude --review: accept applies the tracked change"
      zb snapshot restore "$xid"; expect_rc 0 "exclude --review: restore" ;;
  esac
  expect_file_eq "$X/t" tracked "exclude --$mode: the tracked file is back"
  expect_absent "$X/build.txt" "exclude --$mode: build.txt (a file, not build/) was tracked and is gone"
  expect_file_eq "$X/x.log" new "exclude --$mode: the excluded file is not restored"
  expect_file_eq "$X/build/out" o "exclude --$mode: the excluded directory is not restored"
  no_artifacts "$X" "exclude --$mode: no overlay internals on the host"
done

# --- 20 concurrent --snapshot runs in the same tracked directory. ---
P=$S/par
mkdir -p "$P"
pids=()
for i in $(seq 1 20); do
  (cd "$P" && exec "$ZEROBOX" --snapshot --allow-write="$P" -- sh -c "echo $i >f$i" 2>"$WORK/par.$i") </dev/null &
  pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
expect_eq "$bad" 0 "20 concurrent --snapshot runs all exit 0"
n=0
for i in $(seq 1 20); do [ "$(cat "$P/f$i" 2>/dev/null)" = "$i" ] && n=$((n + 1)); done
expect_eq "$n" 20 "20 concurrent runs: all 20 files on the host"
ids=$(cat "$WORK"/par.* | sed -n 's/^zerobox: session \([0-9a-f]*\) (1 changes\{0,1\}, accepted)$/\1/p' | sort -u | wc -l)
expect_eq "$ids" 20 "20 concurrent runs: 20 distinct sessions, each accepted with its one change"
zb snapshot list --json
n=$("$PY" -c '
import json, sys
print(sum(1 for s in json.load(sys.stdin) if s["cwd"] == sys.argv[1] and s["state"] == "accepted"))' "$P" <<<"$OUT" 2>&1)
expect_eq "$n" 20 "20 concurrent runs: all 20 sessions listed as accepted"

# --- Bad input. ---
zb snapshot show 0123456789abcdef0123
expect_rc 1 "unknown id: exit 1"
expect_contains "$ERR" 0123456789abcdef0123 "unknown id: the message names it"
zb snapshot accept nosuchid
expect_rc 1 "accept of a non-hex id: exit 1"
expect_contains "$ERR" nosuchid "non-hex id: the message names it"
zb snapshot list --json
amb=$("$PY" -c '
import collections, json, sys
c = collections.Counter(s["id"][0] for s in json.load(sys.stdin))
print(next((k for k, n in c.items() if n > 1), ""))' <<<"$OUT")
[ -n "$amb" ] || fail "no two sessions share a first character (cannot test ambiguity)"
zb snapshot show "$amb"
expect_rc 1 "ambiguous prefix: exit 1"
expect_contains "$ERR" "ambiguous" "ambiguous prefix: the message says so"
zb snapshot accept "$id_snap"
expect_rc 1 "accept of a restored session: exit 1"
zb snapshot accept "$(sed -n 's/^zerobox: session \([0-9a-f]*\) .*/\1/p' "$WORK/par.1")"
expect_rc 1 "accept of an accepted session: exit 1"
expect_contains "$ERR" "accepted" "accept of an accepted session: the message gives the state"
zb snapshot restore "$fid"
expect_rc 1 "restore of a pending session: exit 1"
expect_contains "$ERR" "pending" "restore of a pending session: the message gives the state"
zb snapshot bogus
expect_rc 2 "unknown subcommand: exit 2"
zb snapshot
expect_rc 2 "no subcommand: exit 2"
zb snapshot clean --older-than=x
expect_rc 2 "clean --older-than=x: exit 2"
zb snapshot clean
expect_rc 2 "clean without --older-than: exit 2"
zb snapshot diff
expect_rc 2 "diff without an id: exit 2"

# --- Runs that cannot start. ---
H=$S/home
mkdir -p "$H"
ZEROBOX_HOME=$H/.zb zb_in "$H" --snapshot --allow-write="$H" -- sh -c 'echo ran >ran'
expect_setup_error "ZEROBOX_HOME inside the tracked directory"
expect_absent "$H/ran" "ZEROBOX_HOME inside the tracked directory: the command did not run"
mkdir -p "$S/ro"
zb_in "$H" --snapshot --snapshot-path="$S/ro" --allow-write="$H" -- sh -c 'echo ran >ran'
expect_setup_error "--snapshot-path that is not writable"
expect_absent "$H/ran" "--snapshot-path not writable: the command did not run"
zb_in "$H" --review --allow-write="$H" -- ls -A "$ZEROBOX_HOME"
expect_ne "$RC:$OUT" "0:$(ls -A "$ZEROBOX_HOME")" "the store is not visible inside the sandbox"
zb snapshot discard last

# Default tracked paths: the --allow-write dirs inside a read-only working directory.
mkdir -p "$S/dflt/w1" "$S/dflt/w2"
zb_in "$S/dflt" --review --allow-write="$S/dflt/w1,$S/dflt/w2" -- sh -c 'echo 1 >w1/a; echo 2 >w2/b'
expect_rc 0 "default tracked paths: runs"
zb snapshot show last --json
expect_eq "$("$PY" -c 'import json,sys; print(sorted(json.load(sys.stdin)["tracked"]))' <<<"$OUT" 2>&1)" "['$S/dflt/w1', '$S/dflt/w2']" "default tracked paths: the --allow-write dirs inside the working directory"
zb snapshot diff last --name-status
expect_eq "$(sorted "$OUT")" "$(sorted "A	w1/a
A	w2/b")" "default tracked paths: both recorded"
zb snapshot discard last

# Bare --allow-write tracks "/" as root (the store inside it is masked).
zb_in "$M" --restore --allow-write -- sh -c 'echo x >bare && echo wrote'
expect_out wrote "bare --allow-write with --restore: the command can write in the tracked tree"
expect_not_contains "$ERR" "zerobox: error" "bare --allow-write with --restore: the session is recorded"
expect_absent "$M/bare" "bare --allow-write with --restore: the host is unchanged"
zb snapshot show last --json
if [ "$MODE" = root ]; then
  expect_eq "$("$PY" -c 'import json,sys; print(json.load(sys.stdin)["tracked"])' <<<"$OUT" 2>&1)" "['/']" "bare --allow-write: tracks /"
else
  # An ordinary user: the places it can write to (overlayfs in a user namespace cannot
  # copy up directories owned by others).
  expect_eq "$("$PY" -c 'import json,sys; t=json.load(sys.stdin)["tracked"]; print("/tmp" in t and sys.argv[1] in t)' "$M" <<<"$OUT" 2>&1)" "True" "bare --allow-write as a user: tracks the working directory and /tmp"
fi
zb snapshot diff last --name-status
expect_eq "$OUT" "A	bare" "bare --allow-write: the diff holds the change, relative to the working directory"

# --- clean: finished sessions go, pending ones stay. ---
zb_in "$M" --review --allow-write="$M" -- sh -c 'echo p >pend'
pid_=$(snap_id)
zb snapshot clean --older-than=0
expect_rc 0 "clean --older-than=0"
zb snapshot list --json
st=$("$PY" -c 'import json,sys; print(sorted(set(s["state"] for s in json.load(sys.stdin))))' <<<"$OUT" 2>&1)
expect_eq "$st" "['pending']" "clean --older-than=0 keeps only pending sessions"
zb snapshot accept "$pid_"
expect_rc 0 "a pending session still accepts after clean"
expect_file_eq "$M/pend" p "…and its change lands"

# --- The host between the run and accept or restore. A host entry the session never saw
# (in a directory the command replaced or removed as a whole, or that a restore removes)
# is a conflict: listed, refused; --force records it before removing it, so restore
# brings it back. ---
export ZEROBOX_HOME=$WORK/store.host
xattr_list() { # FILE: its user.* xattrs as name=value, sorted
  "$PY" -c 'import os,sys; p=sys.argv[1]; print(" ".join(sorted("%s=%s" % (n, os.getxattr(p, n, follow_symlinks=False).decode()) for n in os.listxattr(p, follow_symlinks=False) if n.startswith("user."))))' "$1"
}

# h1. --review: the command replaces d; while the session is pending the host adds d/host_new.
H1=$S/host_opaque
mkdir -p "$H1/d" && echo old >"$H1/d/f" && echo g >"$H1/d/g"
zb_in "$H1" --review --allow-write="$H1" -- bash -c 'rm -rf d; mkdir d; echo x >d/f'
expect_rc 0 "h1: the command ran"
hid=$(snap_id)
echo host >"$H1/d/host_new"
zb snapshot accept "$hid"
expect_rc 1 "h1: accept refuses: the host added a file to a directory the command replaced"
expect_contains "$ERR" "d/host_new" "h1: the conflict names the host's new file"
expect_file_eq "$H1/d/host_new" host "h1: the refused accept leaves the host's file alone"
expect_file_eq "$H1/d/f" old "h1: the refused accept changes nothing"
zb snapshot accept "$hid" --force
expect_rc 0 "h1: accept --force"
expect_file_eq "$H1/d/f" x "h1: forced, the command's file is in place"
expect_absent "$H1/d/host_new" "h1: forced, d holds what the command left in it"
expect_absent "$H1/d/g" "h1: forced, the command's deletion is applied"
zb snapshot restore "$hid"
expect_rc 0 "h1: restore"
expect_file_eq "$H1/d/host_new" host "h1: restore brings back the host's file the forced accept replaced"
expect_file_eq "$H1/d/g" g "h1: restore brings back d/g"
expect_file_eq "$H1/d/f" old "h1: restore brings back d/f"

# h2. --snapshot: the host adds a file to the replaced directory while the command runs
# (it waits for the host through $SIG, an untracked writable directory).
H2=$S/host_during
SIG=$HOSTDIR/sig.h2
mkdir -p "$H2/d" "$SIG" && echo old >"$H2/d/f"
(cd "$H2" && exec "$ZEROBOX" --snapshot --allow-write="$H2,$SIG" --snapshot-path="$H2" -- bash -c \
  'rm -rf d; mkdir d; echo x >d/f; touch "$0/started"; for i in $(seq 400); do [ -e "$0/go" ] && exit 0; sleep 0.05; done; exit 3' "$SIG") \
  >"$WORK/h2.out" 2>"$WORK/h2.err" </dev/null &
h2pid=$!
wait_until 20 test -e "$SIG/started" || fail "h2: the command did not start"
echo host >"$H2/d/host_new"
touch "$SIG/go"
wait "$h2pid"
RC=$? ERR=$(cat "$WORK/h2.err") LAST_CMD="zerobox --snapshot (h2, in the background)"
expect_rc 0 "h2: the command ran"
expect_contains "$ERR" "d/host_new" "h2: the conflict at exit names the host's file"
expect_file_eq "$H2/d/host_new" host "h2: a file the host added during the run is not deleted at exit"
expect_file_eq "$H2/d/f" old "h2: the session is not applied over it"
h2id=$(snap_id)
zb snapshot show "$h2id" --json
expect_eq "$("$PY" -c 'import json,sys; print(json.load(sys.stdin)["state"])' <<<"$OUT" 2>&1)" pending "h2: the session stays pending"
zb snapshot accept "$h2id"
expect_rc 1 "h2: accept refuses while the host's file is there"
expect_contains "$ERR" "d/host_new" "h2: the conflict names it"
zb snapshot accept "$h2id" --force
expect_rc 0 "h2: accept --force"
expect_absent "$H2/d/host_new" "h2: forced, the directory is what the command left"
zb snapshot restore "$h2id"
expect_rc 0 "h2: restore"
expect_file_eq "$H2/d/host_new" host "h2: restore brings the host's file back"
expect_file_eq "$H2/d/f" old "h2: restore brings d/f back"

# h3. restore: the session made a directory; the host then adds a file in it.
H3=$S/host_restore
mkdir -p "$H3"
zb_in "$H3" --snapshot --allow-write="$H3" -- bash -c 'mkdir n; echo a >n/a'
expect_rc 0 "h3: the command ran"
h3id=$(snap_id)
echo host >"$H3/n/host_new"
zb snapshot restore "$h3id"
expect_rc 1 "h3: restore refuses: the host added a file to a directory the restore removes"
expect_contains "$ERR" "n/host_new" "h3: the conflict names it"
expect_file_eq "$H3/n/a" a "h3: the refused restore changes nothing"
zb snapshot restore "$h3id" --force
expect_rc 0 "h3: restore --force"
expect_absent "$H3/n" "h3: forced, the directory the session made is gone"
h3undo=$(restore_undo_id)
zb snapshot restore "$h3undo"
expect_rc 0 "h3: undoing the restore"
expect_file_eq "$H3/n/host_new" host "h3: undoing the forced restore brings the host's file back"
expect_file_eq "$H3/n/a" a "h3: …and the session's file"

# x1. Restore brings back user xattrs of files the session changed or deleted.
X1=$S/xattrs_restore
mkdir -p "$X1"
echo one >"$X1/m" && echo two >"$X1/del"
"$PY" -c 'import os,sys; [os.setxattr(p, n, v) for p in sys.argv[1:] for n, v in (("user.a", b"1"), ("user.b", b"two"))]' "$X1/m" "$X1/del" ||
  skip "user xattrs are not supported on $X1"
x1s0=$(snap_state "$X1")
zb_in "$X1" --snapshot --allow-write="$X1" -- bash -c 'echo changed >m; rm del'
expect_rc 0 "x1: the command ran"
zb snapshot restore "$(snap_id)"
expect_rc 0 "x1: restore"
snap_expect_state "$(snap_state "$X1")" "$x1s0" "x1: restore brings back content, mode and mtime"
expect_eq "$(xattr_list "$X1/m")" "user.a=1 user.b=two" "x1: restore brings back the xattrs of a modified file"
expect_eq "$(xattr_list "$X1/del")" "user.a=1 user.b=two" "x1: restore brings back the xattrs of a deleted file"

# x2. Accept carries the user.* xattrs the command set.
X2=$S/xattrs_accept
mkdir -p "$X2" && echo base >"$X2/old"
zb_in "$X2" --review --allow-write="$X2" -- "$PY" -c '
import os
open("new", "w").write("n\n")
os.setxattr("new", "user.k", b"v")
open("old", "a").write("more\n")
os.setxattr("old", "user.o", b"w")
os.mkdir("dir")
os.setxattr("dir", "user.d", b"x")'
expect_rc 0 "x2: the command ran"
zb snapshot accept "$(snap_id)"
expect_rc 0 "x2: accept"
expect_eq "$(xattr_list "$X2/new")" "user.k=v" "x2: accept carries the xattr of a new file"
expect_eq "$(xattr_list "$X2/old")" "user.o=w" "x2: …of a modified file"
expect_eq "$(xattr_list "$X2/dir")" "user.d=x" "x2: …of a new directory"
expect_eq "$(snap_artifacts "$X2")" "" "x2: no overlay xattr reaches the host"

# x3. A change of xattrs alone (setfattr on an unchanged file or directory) is a change:
# journaled, carried by accept, undone by restore.
X3=$S/xattrs_only
mkdir -p "$X3/dir" && echo same >"$X3/f"
"$PY" -c 'import os,sys; [os.setxattr(p, "user.x", b"old") for p in sys.argv[1:]]' "$X3/f" "$X3/dir"
x3s0=$(snap_state "$X3")
zb_in "$X3" --review --allow-write="$X3" -- "$PY" -c '
import os
os.setxattr("f", "user.x", b"new")
os.setxattr("f", "user.y", b"y")
os.setxattr("dir", "user.x", b"dnew")'
expect_rc 0 "x3: the command ran"
x3id=$(snap_id)
zb snapshot diff "$x3id" --name-status
expect_eq "$(sorted "$OUT")" "$(sorted "M	dir
M	f")" "x3: the xattr changes are journaled"
zb snapshot accept "$x3id"
expect_rc 0 "x3: accept"
expect_eq "$(xattr_list "$X3/f")" "user.x=new user.y=y" "x3: accept carries a file's new xattrs"
expect_eq "$(xattr_list "$X3/dir")" "user.x=dnew" "x3: …and a directory's"
zb snapshot restore "$x3id"
expect_rc 0 "x3: restore"
expect_eq "$(xattr_list "$X3/f")" "user.x=old" "x3: restore brings back a file's old xattrs"
expect_eq "$(xattr_list "$X3/dir")" "user.x=old" "x3: …and a directory's"
snap_expect_state "$(snap_state "$X3")" "$x3s0" "x3: content, modes and mtimes are as before"

# l1. Restore links again the host's hard links among the files it brings back.
L1=$S/links_restore
mkdir -p "$L1/sub"
echo linked >"$L1/a" && ln "$L1/a" "$L1/sub/b" && echo other >"$L1/c"
zb_in "$L1" --snapshot --allow-write="$L1" -- bash -c 'rm -rf a sub'
expect_rc 0 "l1: the command ran"
expect_absent "$L1/a" "l1: the run deleted a"
zb snapshot restore "$(snap_id)"
expect_rc 0 "l1: restore"
expect_file_eq "$L1/sub/b" linked "l1: restore brings back sub/b"
expect_eq "$(stat -c %i "$L1/a")" "$(stat -c %i "$L1/sub/b")" "l1: a and sub/b are one inode again"
expect_eq "$(stat -c %h "$L1/a")" 2 "l1: …with two links"

# --- A corrupt journal: a clear error, nothing lost, nothing run. ---
CS=$WORK/cstore
CT=$S/corrupt
mkdir -p "$CT" && echo base >"$CT/f"
ZEROBOX_HOME=$CS zb_in "$CT" --snapshot --allow-write="$CT" -- sh -c 'echo one >f'
expect_rc 0 "corrupt journal: a session before the damage"
[ -f "$CS/journal.db" ] || fail "no journal.db in ZEROBOX_HOME ($(ls "$CS"))"
yes 'this is not sqlite' | head -c 16384 | dd of="$CS/journal.db" conv=notrunc status=none
jsum=$(md5sum <"$CS/journal.db")
store_files=$(cd "$CS" && find . -type f ! -name 'journal.db*' | sort)
ct0=$(snap_state "$CT")
ZEROBOX_HOME=$CS zb_in "$CT" --snapshot --allow-write="$CT" -- sh -c 'echo two >f; echo ran >ran'
expect_setup_error "corrupt journal: a run fails before the command"
expect_contains "$ERR" journal "corrupt journal: the message names the journal"
snap_expect_state "$(snap_state "$CT")" "$ct0" "corrupt journal: the run changed nothing"
ZEROBOX_HOME=$CS zb snapshot list
expect_rc 1 "corrupt journal: a subcommand exits 1"
expect_one_error_line 1 "corrupt journal: one error line"
expect_eq "$(md5sum <"$CS/journal.db")" "$jsum" "corrupt journal: the journal is left as it was (nothing lost)"
expect_eq "$(cd "$CS" && find . -type f ! -name 'journal.db*' | sort)" "$store_files" "corrupt journal: the blobs are all still there"

finish
