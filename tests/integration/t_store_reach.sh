# Stores that a sandbox can reach: a sandbox that can write a directory holding a store
# other than the current one (a store per use, under a shared directory), or a HOME
# where no store is yet, tries to tamper with that store's blobs and journal or to plant
# a store of its own; a store made while such a sandbox runs; a journal rewritten on the
# host so that its rows point outside its tracked roots.
# Every check passes when the attack FAILS. Against 3026225 (before the store registry)
# a1-a4, b1-b3 and c1-c2 failed: only the store named by the current ZEROBOX_HOME was
# masked, an absent one could be planted, and a store opened beside a running sandbox
# that could write it; d1-d4 were refused there too, with a less direct message.
. "$(dirname "$0")/lib.sh"
need_python

SHARED=$HOSTDIR/shared   # the sandboxes of this test may write here
P=$HOSTDIR/proj          # a project only the snapshot runs may write
OUTSIDE=$HOSTDIR/outside # nothing may ever be written here
SAFE=$WORK/store.safe    # the current store of the attacking runs
SH=$SHARED/store         # another store of this user, inside the shared directory
mkdir -p "$SHARED" "$P" "$OUTSIDE"
echo orig >"$P/f"
OUT0=$(tree_state "$OUTSIDE")
REG=$HOME/.local/state/zerobox  # the registry: the default store, ZEROBOX_HOME unset

# A session in the shared store: P/f changed (its pre-image "orig" is a blob there).
ZEROBOX_HOME=$SH zb_in "$P" --snapshot --allow-write="$P" -- sh -c 'echo changed >f'
expect_rc 0 "a snapshot run with a store in the shared directory"
expect_file_eq "$P/f" changed "the run was applied"
[ -f "$REG/stores" ] && tr '\0' '\n' <"$REG/stores" | grep -qxF "$(realpath "$SH")"
_check $? "the store is listed in the registry" "$(tr '\0' '\n' <"$REG/stores" 2>/dev/null)"
SH0=$(tree_state "$SH")

# a: a sandbox whose own store is elsewhere, and one with the default store, can write
# the shared directory: the other store is neither readable nor writable there.
cat >"$WORK/tamper.sh" <<EOF
s=$SH
ls -A "\$s" && echo LISTED
for b in "\$s"/blobs/*/*; do chmod u+w "\$b" && echo evil >"\$b" && echo BLOB "\$b"; done
echo evil >"\$s/journal.db" && echo JOURNAL
$PY -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("UPDATE changes SET path=?", (sys.argv[2].encode(),)); c.commit(); print("SQL")' "\$s/journal.db" "$OUTSIDE/.bashrc"
mv "\$s" "$SHARED/moved" && echo MOVED
rm -rf "\$s" 2>/dev/null
ls -A "$REG" && echo REGISTRY
printf x >"$REG/stores" && echo REGISTRY_WRITTEN
echo RAN
EOF
for home in "$SAFE" ""; do
  ZEROBOX_HOME=$home zb --allow-write="$SHARED" -- sh "$WORK/tamper.sh"
  what=${home:+"with ZEROBOX_HOME elsewhere"}
  what=${what:-"with the default store"}
  expect_contains "$OUT" "RAN" "a: the attack ran ($what)"
  expect_not_contains "$OUT" "LISTED" "a1: the other store cannot be listed ($what)"
  expect_not_contains "$OUT" "BLOB" "a2: its blobs cannot be replaced ($what)"
  expect_not_contains "$OUT$ERR" "JOURNAL" "a3: its journal cannot be rewritten ($what)"
  expect_not_contains "$OUT" "SQL" "a3: nor edited with SQL ($what)"
  expect_not_contains "$OUT" "MOVED" "a3: nor moved away ($what)"
  expect_not_contains "$OUT" "REGISTRY" "a4: the registry is hidden too ($what)"
done
snap_expect_state "$(tree_state "$SH")" "$SH0" "a: the other store is exactly as it was"
ZEROBOX_HOME=$SH zb_in "$P" snapshot restore last
expect_rc 0 "a: restore from the other store"
expect_file_eq "$P/f" orig "a: restore brings back the real pre-image"
expect_eq "$(tree_state "$OUTSIDE")" "$OUT0" "a: nothing was written outside the project"

# b: absent stores are not the command's to make: the default store under a writable
# HOME, and the current one where the sandbox can write.
H2=$HOSTDIR/home2
mkdir -p "$H2"
run env HOME="$H2" "$ZEROBOX" --allow-write="$H2" -- sh -c \
  'mkdir -p ~/.local/state/zerobox/blobs; echo planted >~/.local/state/zerobox/journal.db && echo PLANTED; echo RAN'
expect_contains "$OUT" "RAN" "b1: the attack ran"
expect_not_contains "$OUT" "PLANTED" "b1: the absent default store cannot be planted under a writable HOME"
expect_absent "$H2/.local/state/zerobox/journal.db" "b1: no planted journal on the host"
expect_eq "$(stat -c %a "$H2/.local/state/zerobox" 2>/dev/null)" 700 "b2: the default store was made, mode 700"
NEW=$SHARED/new
ZEROBOX_HOME=$NEW zb --allow-write="$SHARED" -- sh -c "mkdir -p '$NEW/blobs'; echo planted >'$NEW/journal.db' && echo PLANTED; echo RAN"
expect_contains "$OUT" "RAN" "b3: the attack ran"
expect_not_contains "$OUT" "PLANTED" "b3: the absent current store cannot be planted where the sandbox writes"
expect_absent "$NEW/journal.db" "b3: no planted journal on the host"

# c: a store opened while a sandbox that can write its place runs is refused; one that
# sandbox masks is not.
rm -f "$SHARED/ready" "$SHARED/stop"
ZEROBOX_HOME=$SAFE bg "$ZEROBOX" --allow-write="$SHARED" -- sh -c \
  "touch '$SHARED/ready'; while [ ! -e '$SHARED/stop' ]; do sleep 0.05; done"
RUNNER=$BG_PID
wait_until 20 test -e "$SHARED/ready" || fail "the long run did not start"
LATE=$SHARED/late
ZEROBOX_HOME=$LATE zb snapshot list
expect_setup_error "c1: a store made beside a sandbox that can write it is refused"
expect_contains "$ERR" "running sandbox can write (zerobox pid $RUNNER" "c1: the error names the sandbox"
expect_absent "$LATE" "c1: the refused store was not made"
ZEROBOX_HOME=$LATE zb_in "$P" --snapshot --allow-write="$P" -- sh -c 'echo late >g'
expect_setup_error "c2: a snapshot run with such a store is refused"
expect_absent "$P/g" "c2: its command did not run"
ZEROBOX_HOME=$SH zb snapshot list
expect_rc 0 "c3: a store the running sandbox masks opens"
touch "$SHARED/stop"
wait "$RUNNER"
ZEROBOX_HOME=$LATE zb snapshot list
expect_rc 0 "c4: once that run has ended, the store opens"

# d: a journal rewritten on the host (as a sandbox that could write it would have) so
# that a row lies outside the session's tracked roots is refused, never applied.
DS=$WORK/store.d
sql() { "$PY" -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2], [a.encode() for a in sys.argv[3:]]); c.commit()' "$DS/journal.db" "$@"; }
echo d >"$P/d"
ZEROBOX_HOME=$DS zb_in "$P" --review --allow-write="$P" -- sh -c 'echo pending >d'
PEND=$(snap_id)
ZEROBOX_HOME=$DS zb_in "$P" --snapshot --allow-write="$P" -- sh -c 'echo accepted >e'
DONE=$(snap_id)
[ -n "$PEND" ] && [ -n "$DONE" ] || fail "d: no session ids"
sql "UPDATE changes SET path = ? WHERE session LIKE '$PEND%'" "$OUTSIDE/.bashrc"
ZEROBOX_HOME=$DS zb snapshot accept "$PEND"
expect_rc 1 "d1: accept of a row outside the tracked roots is refused"
expect_contains "$ERR" "the journal does not match its tracked paths" "d1: the error says why"
sql "UPDATE changes SET path = ? WHERE session LIKE '$PEND%'" "$P/../outside/.bashrc"
ZEROBOX_HOME=$DS zb snapshot accept "$PEND"
expect_rc 1 "d2: a row that climbs out with .. is refused"
expect_contains "$ERR" "the journal does not match its tracked paths" "d2: the error says why"
sql "UPDATE changes SET path = ? WHERE session LIKE '$DONE%'" "$OUTSIDE/.bashrc"
ZEROBOX_HOME=$DS zb snapshot restore "$DONE"
expect_rc 1 "d3: restore of a row outside the tracked roots is refused"
expect_contains "$ERR" "the journal does not match its tracked paths" "d3: the error says why"
sql "UPDATE changes SET path = ?, new_blob = '00000000000000000000000000000000' WHERE session LIKE '$PEND%'" "$P/d"
ZEROBOX_HOME=$DS zb snapshot accept "$PEND"
expect_rc 1 "d4: a row naming a blob the store does not hold is refused"
expect_contains "$ERR" "the journal does not match its blobs" "d4: the error says why"
expect_eq "$(tree_state "$OUTSIDE")" "$OUT0" "d: nothing was written outside the project"
expect_file_eq "$P/d" d "d: the pending change was not applied"
expect_file_eq "$P/e" accepted "d: the accepted one was not undone"

finish
