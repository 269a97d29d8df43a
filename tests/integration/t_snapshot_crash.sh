# Crash safety of `zerobox snapshot accept` and `restore` (src/snapshot/apply.hpp): with
# ZEROBOX_TEST_CRASH_AFTER=N zerobox kills itself (SIGKILL) after its N-th write, and the
# next `zerobox snapshot` command must finish the operation. For every N until the
# operation completes unkilled: while killed, each target is at its before- or its
# after-state; after the next `snapshot list` the whole tree is at the after-state, the
# session's state is final and no .zerobox-tmp-* file is left.
# Also, without crashes: conflicts at accept and at restore (refused = nothing changed,
# every conflict listed; --force applies, and undoing a forced operation returns to what
# it replaced). Last: crashes during a forced accept and a forced restore.
. "$(dirname "$0")/lib.sh"
need_python

TREE=$HOSTDIR/tree          # the tracked tree; always this path, so sessions match
NATIVE=$HOSTDIR/native      # the command run without a sandbox: the expected after-state
REF=$HOSTDIR/ref            # the command run under --snapshot
export ZEROBOX_HOME=$WORK/store

# --- The tree and the command. Every file, symlink and FIFO gets a fixed mtime, so a
# fresh tree is identical to the last one (directory mtimes are not restored by design).
T0=1600000000
mk_tree() { # DIR: the before-state
  local d=$1 f i=0
  rm -rf "$d"
  mkdir -p "$d/sub" "$d/deldir/sub" "$d/d2f/deep" "$d/keepdir"
  printf 'one\n' >"$d/mod1.txt"
  printf 'abcd' >"$d/same.bin"
  printf 'keep\n' >"$d/keep.txt"
  printf 'bye\n' >"$d/del.txt"
  printf 'moved\n' >"$d/old-name.txt"
  printf 'x\n' >"$d/deldir/x"
  printf 'y\n' >"$d/deldir/sub/y"
  printf 'was a file\n' >"$d/t2d"
  printf 'z\n' >"$d/d2f/z"
  printf 'w\n' >"$d/d2f/deep/w"
  printf 'in sub\n' >"$d/sub/inner.txt"
  printf 'kept\n' >"$d/keepdir/k"
  printf '#!/bin/sh\n' >"$d/run.sh"
  printf 'A\n' >"$d/target-a"
  printf 'B\n' >"$d/target-b"
  ln -s target-a "$d/link"
  find "$d" -type d -exec chmod 755 {} +
  find "$d" -type f -exec chmod 644 {} +
  chmod 600 "$d/same.bin"
  for f in $(cd "$d" && find . ! -type d | sort); do
    i=$((i + 1))
    touch -h -d "@$((T0 + i * 1000)).$((i * 7919))" "$d/$f" || fail "touch $d/$f"
  done
}
# Modify, same-size rewrite, add (files and a nested dir), delete a file and a directory
# with contents, rename, file->dir, dir->file, symlink retarget, chmod of a file and of a
# directory, append inside that directory, and a new FIFO.
CMD='set -e
printf "one, modified\n" > mod1.txt
printf WXYZ > same.bin
printf "new\n" > new1.txt
mkdir -p newdir/nested
printf "deep\n" > newdir/nested/deep.txt
printf "f\n" > newdir/f
rm del.txt
rm -r deldir
mv old-name.txt new-name.txt
rm t2d && mkdir t2d && printf "inner\n" > t2d/inner
rm -r d2f && printf "was a dir\n" > d2f
ln -sfn target-b link
chmod 755 run.sh
chmod 750 sub
printf "more\n" >> sub/inner.txt
mkfifo -m 640 pipe
chmod 644 new1.txt newdir/nested/deep.txt newdir/f t2d/inner d2f
chmod 755 newdir newdir/nested t2d
touch -h -d @1700000000.123456789 mod1.txt same.bin new1.txt newdir/f link pipe
touch -h -d @1700000555.5 newdir/nested/deep.txt t2d/inner d2f sub/inner.txt'

# state DIR: type, mode, size, owner, mtime and link target of every file, symlink and
# FIFO, content checksums, and the mode of every directory.
state() (
  cd "$1" || exit 1
  find . \( -type d -printf '%p dir %m\n' \) -o -printf '%p %y %m %s %U:%G %T@ %l\n' | sort
  find . -type f -exec md5sum {} + | sort
)
# Where two states differ, as a diff (for failure messages).
state_diff() { diff <(printf '%s\n' "$1") <(printf '%s\n' "$2") | head -40; }
# mid_check BEFORE AFTER NOW: every path of NOW is at its before- or after-state.
# Tolerated while interrupted: .zerobox-tmp-* files, any directory mode (settled last),
# and a missing target whose type changes (between removal and creation).
mid_check() {
  "$PY" - "$1" "$2" "$3" <<'EOF'
import sys
def parse(s):
    sums, recs = {}, {}
    for line in s.splitlines():
        if line.startswith('.'):
            p, rest = line.split(' ', 1)
            recs[p] = rest
        elif line:
            h, p = line.split('  ', 1)
            sums[p] = h
    return {p: r + (' md5=' + sums[p] if p in sums else '') for p, r in recs.items()}
b, a, n = (parse(x) for x in sys.argv[1:4])
bad = []
for p in sorted(set(b) | set(a) | set(n)):
    if '.zerobox-tmp-' in p:
        continue
    nb, na, nn = b.get(p), a.get(p), n.get(p)
    if nn in (nb, na):
        continue
    if nn is not None and nn.startswith('dir ') and any(x and x.startswith('dir ') for x in (nb, na)):
        continue
    if nn is None and nb is not None and na is not None and nb.split()[0] != na.split()[0]:
        continue
    bad.append('%s: now %r, before %r, after %r' % (p, nn, nb, na))
print('\n'.join(bad))
sys.exit(1 if bad else 0)
EOF
}
tmp_left() { find "$TREE" -name '.zerobox-tmp-*' 2>/dev/null | head -5; }

# sessions: SESS = one "id kind state parent" line per session (snapshot list --json).
sessions() {
  zb snapshot list --json
  [ "$RC" = 0 ] || fail "snapshot list --json failed"
  SESS=$(printf '%s' "$OUT" | "$PY" -c 'import json, sys
for s in json.load(sys.stdin): print(s["id"], s["kind"], s["state"], s["parent"] or "-")') || fail "snapshot list --json: not a JSON list of sessions"
}
sess_state() { printf '%s\n' "$SESS" | awk -v id="$1" '$1 == id { print $3 }'; }
# fresh: the tree at its before-state, an empty store, and a pending --review session ID.
fresh() {
  mk_tree "$TREE"
  rm -rf "$ZEROBOX_HOME"
  zb --review --allow-write="$TREE" -C "$TREE" -- sh -c "$CMD"
  [ "$RC" = 0 ] || fail "--review run failed"
  sessions
  ID=$(printf '%s\n' "$SESS" | awk '{ print $1 }')
  [ "$(printf '%s\n' "$SESS" | wc -l)" = 1 ] && [ "$(sess_state "$ID")" = pending ] || fail "expected one pending session, got: $SESS"
}
# crash_run N ARGS...: zerobox ARGS with ZEROBOX_TEST_CRASH_AFTER=N (RC 137 when killed).
crash_run() {
  local n=$1
  shift
  run bash -c '"$@"; exit $?' crash_run env ZEROBOX_TEST_CRASH_AFTER="$n" "$ZEROBOX" "$@"
}
expect_tree() { # WANT_STATE DESCRIPTION
  local now
  now=$(state "$TREE")
  [ "$now" = "$1" ] || fail "$2: the tree differs (< expected, > actual):
$(state_diff "$1" "$now")"
  [ -z "$(tmp_left)" ] || fail "$2: temporary files left: $(tmp_left)"
  ok "$2"
}

# --- Reference states. ---
mk_tree "$NATIVE"
BEFORE=$(state "$NATIVE")
mk_tree "$TREE"
expect_eq "$(state "$TREE")" "$BEFORE" "a fresh tree is identical to the last one"
(cd "$NATIVE" && sh -c "$CMD") || fail "the command fails without a sandbox"
AFTER=$(state "$NATIVE")
expect_ne "$AFTER" "$BEFORE" "the command changes the tree"
mk_tree "$REF"
zb --snapshot --allow-write="$REF" -C "$REF" -- sh -c "$CMD"; expect_rc 0 "--snapshot run of the command"
now=$(state "$REF")
[ "$now" = "$AFTER" ] || fail "--snapshot leaves what the command leaves without a sandbox:
$(state_diff "$AFTER" "$now")"
ok "--snapshot leaves exactly what the command leaves without a sandbox"
rm -rf "$REF"
fresh
zb snapshot diff "$ID" --name-status; expect_rc 0 "diff --name-status of the pending session"
for want in "M	mod1.txt" "M	same.bin" "A	new1.txt" "A	newdir/nested/deep.txt" "D	del.txt" "D	deldir/sub/y" \
  "A	new-name.txt" "D	old-name.txt" "T	t2d" "A	t2d/inner" "T	d2f" "D	d2f/deep/w" "M	link" "A	pipe"; do
  expect_contains "$OUT" "$want" "diff --name-status lists '$want'"
done
expect_tree "$BEFORE" "--review leaves the tree unchanged"

# --- Accept, killed after each of its writes in turn. ---
n=0
while :; do
  n=$((n + 1))
  [ "$n" -le 500 ] || fail "accept was still killed after 500 writes"
  fresh
  crash_run "$n" snapshot accept "$ID"
  arc=$RC
  [ "$arc" = 137 ] || [ "$arc" = 0 ] || fail "accept with ZEROBOX_TEST_CRASH_AFTER=$n: exit status $arc (want 137 or 0)"
  if [ "$arc" = 137 ]; then
    problems=$(mid_check "$BEFORE" "$AFTER" "$(state "$TREE")") ||
      fail "accept killed after write $n: targets neither before nor after:
$problems"
  fi
  zb snapshot list
  [ "$RC" = 0 ] || fail "accept killed after write $n: the next 'snapshot list' failed"
  now=$(state "$TREE")
  [ "$now" = "$AFTER" ] || fail "accept killed after write $n: after 'snapshot list' the tree is not at the after-state (< expected, > actual):
$(state_diff "$AFTER" "$now")"
  [ -z "$(tmp_left)" ] || fail "accept killed after write $n: temporary files left: $(tmp_left)"
  sessions
  [ "$(sess_state "$ID")" = accepted ] || fail "accept killed after write $n: session is '$(sess_state "$ID")', not accepted"
  [ "$arc" = 0 ] && break
done
[ "$n" -ge 3 ] || fail "accept completed within $n writes: the crash hook is not counting"
ok "accept killed after each of its first $((n - 1)) writes: the next 'snapshot list' finished it (tree at the after-state, session accepted, no temporary file)"
ok "accept completed unkilled with ZEROBOX_TEST_CRASH_AFTER=$n"

# --- Restore, killed after each of its writes in turn. ---
n=0
while :; do
  n=$((n + 1))
  [ "$n" -le 500 ] || fail "restore was still killed after 500 writes"
  fresh
  zb snapshot accept "$ID"
  [ "$RC" = 0 ] || fail "accept before the restore (N=$n) failed"
  [ "$(state "$TREE")" = "$AFTER" ] || fail "accept before the restore (N=$n): the tree is not at the after-state"
  crash_run "$n" snapshot restore "$ID"
  arc=$RC
  [ "$arc" = 137 ] || [ "$arc" = 0 ] || fail "restore with ZEROBOX_TEST_CRASH_AFTER=$n: exit status $arc (want 137 or 0)"
  if [ "$arc" = 137 ]; then
    problems=$(mid_check "$AFTER" "$BEFORE" "$(state "$TREE")") ||
      fail "restore killed after write $n: targets neither before nor after:
$problems"
  fi
  zb snapshot list
  [ "$RC" = 0 ] || fail "restore killed after write $n: the next 'snapshot list' failed"
  now=$(state "$TREE")
  [ "$now" = "$BEFORE" ] || fail "restore killed after write $n: after 'snapshot list' the tree is not at the before-state (< expected, > actual):
$(state_diff "$BEFORE" "$now")"
  [ -z "$(tmp_left)" ] || fail "restore killed after write $n: temporary files left: $(tmp_left)"
  sessions
  [ "$(sess_state "$ID")" = restored ] || fail "restore killed after write $n: session is '$(sess_state "$ID")', not restored"
  rline=$(printf '%s\n' "$SESS" | awk -v id="$ID" '$4 == id')
  [ "$(printf '%s\n' "$rline" | grep -c .)" = 1 ] || fail "restore killed after write $n: want one restore session with parent $ID, got: $SESS"
  set -- $rline
  [ "$2 $3" = "restore accepted" ] || fail "restore killed after write $n: the restore session is '$2 $3', want 'restore accepted'"
  RID=$1
  [ "$arc" = 0 ] && break
done
[ "$n" -ge 3 ] || fail "restore completed within $n writes: the crash hook is not counting"
ok "restore killed after each of its first $((n - 1)) writes: the next 'snapshot list' finished it (tree at the before-state, session restored, one restore session, no temporary file)"
# Restoring the restore session undoes the restore.
zb snapshot restore "$RID"; expect_rc 0 "restoring the restore session"
expect_tree "$AFTER" "restoring the restore session puts the accepted changes back"

# --- A conflict at accept. ---
fresh
printf 'host edit\n' >>"$TREE/mod1.txt"         # modified on the host
chmod 600 "$TREE/run.sh"                        # mode changed on the host
printf 'host file\n' >"$TREE/new1.txt"          # created where the session adds one
printf 'host edit\n' >"$TREE/del.txt"           # modified where the session deletes
ln -sfn elsewhere "$TREE/link"                  # retargeted on the host
HOST=$(state "$TREE")
zb snapshot accept "$ID"; expect_rc 1 "accept with 5 conflicts is refused"
expect_tree "$HOST" "a refused accept changes nothing"
for p in mod1.txt run.sh new1.txt del.txt link; do
  printf '%s\n' "$ERR" | grep -q "^zerobox: error: conflict: .*$TREE/$p\\b" || fail "conflict on $p is not listed"
done
ok "every conflict is listed"
expect_eq "$(printf '%s\n' "$ERR" | grep -c '^zerobox: error: conflict: ')" 5 "exactly the 5 conflicts are listed"
sessions; expect_eq "$(sess_state "$ID")" pending "the session stays pending after a refused accept"
zb snapshot accept "$ID" --force; expect_rc 0 "accept --force"
expect_tree "$AFTER" "accept --force applies every change"
sessions; expect_eq "$(sess_state "$ID")" accepted "accepted after --force"
zb snapshot restore "$ID"; expect_rc 0 "restore after a forced accept"
expect_tree "$HOST" "restore after a forced accept returns to the state just before it (with the host's edits)"

# --- A conflict at restore. ---
fresh
zb snapshot accept "$ID"; expect_rc 0 "accept"
printf 'host edit\n' >>"$TREE/mod1.txt"
chmod 600 "$TREE/new1.txt"
HOST=$(state "$TREE")
zb snapshot restore "$ID"; expect_rc 1 "restore with 2 conflicts is refused"
expect_tree "$HOST" "a refused restore changes nothing"
for p in mod1.txt new1.txt; do
  printf '%s\n' "$ERR" | grep -q "^zerobox: error: conflict: .*$TREE/$p\\b" || fail "conflict on $p is not listed"
done
expect_eq "$(printf '%s\n' "$ERR" | grep -c '^zerobox: error: conflict: ')" 2 "restore: exactly the 2 conflicts are listed"
sessions
expect_eq "$(sess_state "$ID")" accepted "the session stays accepted after a refused restore"
expect_eq "$(printf '%s\n' "$SESS" | grep -c .)" 1 "a refused restore keeps no restore session"
zb snapshot restore "$ID" --force; expect_rc 0 "restore --force"
expect_tree "$BEFORE" "restore --force returns to the before-state"
sessions; expect_eq "$(sess_state "$ID")" restored "restored after --force"
RID=$(printf '%s\n' "$SESS" | awk -v id="$ID" '$4 == id { print $1 }')
zb snapshot restore "$RID"; expect_rc 0 "undoing the forced restore"
expect_tree "$HOST" "undoing a forced restore returns to the state just before it (with the host's edits)"

# --- Crashes during a forced accept and a forced restore: the next command finishes the
# operation as forced (and never leaves the store unusable). The conflicting targets are
# captured first, one journal write each: killed after each of the first FORCED_N writes
# (the capture phase and the first changes; the rest is the code path of the loops above),
# then once unkilled. ---
FORCED_N=10
host_edits() {
  printf 'host edit\n' >>"$TREE/mod1.txt"
  chmod 600 "$TREE/run.sh"
  printf 'host file\n' >"$TREE/new1.txt"
}
n=0
while :; do
  n=$((n + 1))
  [ "$n" -le "$FORCED_N" ] || n=1000000
  fresh
  host_edits
  # A file the session never saw, in a directory it deletes: recorded (inserted before
  # the directory's removal) and removed, so the restore below brings it back.
  printf 'host file\n' >"$TREE/deldir/sub/host_new"
  HOST=$(state "$TREE")
  crash_run "$n" snapshot accept "$ID" --force
  arc=$RC
  [ "$arc" = 137 ] || [ "$arc" = 0 ] || fail "accept --force with ZEROBOX_TEST_CRASH_AFTER=$n: exit status $arc (want 137 or 0)"
  zb snapshot list
  [ "$RC" = 0 ] || fail "accept --force killed after write $n: the next 'snapshot list' failed"
  now=$(state "$TREE")
  [ "$now" = "$AFTER" ] || fail "accept --force killed after write $n: after 'snapshot list' the tree is not at the after-state (< expected, > actual):
$(state_diff "$AFTER" "$now")"
  [ -z "$(tmp_left)" ] || fail "accept --force killed after write $n: temporary files left: $(tmp_left)"
  sessions
  [ "$(sess_state "$ID")" = accepted ] || fail "accept --force killed after write $n: session is '$(sess_state "$ID")', not accepted"
  zb snapshot restore "$ID"
  [ "$RC" = 0 ] || fail "accept --force killed after write $n: the restore that follows failed"
  now=$(state "$TREE")
  [ "$now" = "$HOST" ] || fail "accept --force killed after write $n: restore does not return to the state before the forced accept (< expected, > actual):
$(state_diff "$HOST" "$now")"
  [ "$arc" = 0 ] && break
done
ok "accept --force killed after each of its first $FORCED_N writes: finished as forced, and restore returns to the host's edits"

n=0
while :; do
  n=$((n + 1))
  [ "$n" -le "$FORCED_N" ] || n=1000000
  fresh
  zb snapshot accept "$ID"
  [ "$RC" = 0 ] || fail "accept before the forced restore (N=$n) failed"
  host_edits
  crash_run "$n" snapshot restore "$ID" --force
  arc=$RC
  [ "$arc" = 137 ] || [ "$arc" = 0 ] || fail "restore --force with ZEROBOX_TEST_CRASH_AFTER=$n: exit status $arc (want 137 or 0)"
  zb snapshot list
  [ "$RC" = 0 ] || fail "restore --force killed after write $n: the next 'snapshot list' failed"
  now=$(state "$TREE")
  [ "$now" = "$BEFORE" ] || fail "restore --force killed after write $n: after 'snapshot list' the tree is not at the before-state (< expected, > actual):
$(state_diff "$BEFORE" "$now")"
  [ -z "$(tmp_left)" ] || fail "restore --force killed after write $n: temporary files left: $(tmp_left)"
  sessions
  [ "$(sess_state "$ID")" = restored ] || fail "restore --force killed after write $n: session is '$(sess_state "$ID")', not restored"
  [ "$arc" = 0 ] && break
done
ok "restore --force killed after each of its first $FORCED_N writes: finished as forced"

finish
