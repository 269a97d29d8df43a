# Root's sandbox runs in ids of its own (src/exec/ids.hpp): its uid 0 is not the host's,
# so the kernel's checks that trust host uid 0 by a file's mode alone refuse it, while
# the host's files keep their owners inside and what it writes is stored as uid 0.
# As uid 65534 the same attacks must fail too (the caller's own ids only).
. "$(dirname "$0")/lib.sh"

# --- The map itself: nothing maps to host uid 0 or gid 0. ---
zb -- cat /proc/self/uid_map /proc/self/gid_map
expect_rc 0 "the sandbox reads its uid and gid maps"
MAPS=$OUT
if printf '%s\n' "$MAPS" | awk '$2 == 0 { bad = 1 } END { exit !bad }'; then
  fail "a map sends an id to host id 0: $MAPS"
fi
ok "no id of the sandbox is host uid 0 or gid 0"
zb -- sh -c 'id -u; id -g'
if [ "$MODE" = root ]; then
  expect_out "0
0" "the command still runs as uid 0 and gid 0 inside"
  zb -- sh -c 'grep "^Groups:" /proc/self/status'
  expect_eq "$(printf '%s' "$OUT" | tr -d '[:space:]')" "Groups:" "root's sandbox keeps none of the host's supplementary groups"
fi

# --- Kernel files only host uid 0 may read, by their mode and no capability. ---
# Each is tried only where the caller can read it outside (the control).
tried=0
for f in /proc/slabinfo /proc/timer_list /proc/vmallocinfo /proc/pagetypeinfo /sys/kernel/tracing/trace \
         /sys/kernel/tracing/available_events /sys/kernel/debug/tracing/trace; do
  [ -e "$f" ] || continue
  head -c 1 "$f" >/dev/null 2>&1 || continue
  tried=$((tried + 1))
  zb -- head -c 1 "$f"; expect_rc_not 0 "$f, readable only by host uid 0, is refused inside"
  zb --allow-all -- head -c 1 "$f"; expect_rc_not 0 "$f is refused inside with --allow-all too"
done
for f in /sys/firmware/acpi/tables/*; do
  [ -f "$f" ] || continue
  head -c 1 "$f" >/dev/null 2>&1 || continue
  tried=$((tried + 1))
  zb -- head -c 1 "$f"; expect_rc_not 0 "$f (root-only ACPI table) is refused inside"
  break
done
if [ "$MODE" = root ] && [ "$tried" -eq 0 ]; then
  skip "this host has no root-only kernel file to try"
fi

# --- The host's files keep their owners inside; what is written is stored as before. ---
D=$HOSTDIR/ids
mkdir -p "$D"
echo secret > "$D/root-only"
chmod 600 "$D/root-only"
zb -- stat -c '%u %g' /etc/passwd "$D/root-only"
expect_rc 0 "stat host files inside"
if [ "$MODE" = root ]; then
  expect_out "0 0
0 0" "host files show their owners inside (uid 0 is the sandbox root's)"
else
  expect_out "65534 65534
$(id -u) $(id -g)" "the caller's files are the caller's inside, others' are nobody's"
fi
zb --allow-write="$D" -- sh -c "cat '$D/root-only' && echo more >> '$D/root-only' && echo new > '$D/made' && mkdir '$D/dir'"
expect_rc 0 "the caller's own 0600 file is readable and writable inside an allowed directory"
expect_file_eq "$D/root-only" "secret
more" "... and the write reached the host"
expect_eq "$(stat -c '%u %g' "$D/made" "$D/dir" | sort -u)" "$(id -u) $(id -g)" \
  "new files and directories belong to the caller on the host"
S=$HOSTDIR/ids-snap
mkdir -p "$S"
zb_in "$S" --review --allow-write="$S" -- sh -c 'echo a > f && mkdir d && ls -ln f'
expect_rc 0 "a --review run writes into its tracked directory"
expect_contains "$OUT" " $(id -u) $(id -g) " "inside, the new file is the command's (uid 0 for root)"
SID=$(snap_id)
zb snapshot accept "$SID"; expect_rc 0 "accept the reviewed changes"
expect_eq "$(stat -c '%u %g' "$S/f" "$S/d" | sort -u)" "$(id -u) $(id -g)" \
  "accepted files and directories belong to the caller on the host"
zb --allow-write="$D" -- chown 1:1 "$D/made"; expect_rc_not 0 "no capability to give a file away"
expect_eq "$(stat -c '%u' "$D/made")" "$(id -u)" "... and the owner is unchanged"

# --- A pipe from the caller (owned by the caller, mode 0600) opened again inside. ---
run sh -c "'$ZEROBOX' -- sh -c 'echo via-stdout > /dev/stdout; echo in | cat /dev/stdin' | cat"
expect_out "via-stdout
in" "/dev/stdout and /dev/stdin open again when they are the caller's pipes"
P=$WORK/pipe-owner
run sh -c "( '$ZEROBOX' -- sh -c 'echo x > /dev/stdout'; stat -L -c '%u %g' /dev/stdout > '$P' ) | cat"
expect_out x "the command wrote to the caller's pipe through /dev/stdout"
expect_file_eq "$P" "$(id -u) $(id -g)" "the caller's pipe has its owner back after the run"

# --- Processes run as the sandbox's host ids, never as host uid 0. ---
NAME="sleep 30.$UNIQ"
bg "$ZEROBOX" -- $NAME
ZB_BG=$BG_PID
wait_until 10 has_process "$NAME" || fail "the sandboxed sleep did not start"
PID=$(pgrep -x -f -- "$NAME" | head -1)
HOST_UID=$(awk '/^Uid:/ { print $2 }' "/proc/$PID/status")
if [ "$MODE" = root ]; then
  expect_ne "$HOST_UID" 0 "the sandbox's root is not host uid 0 (host uid $HOST_UID)"
else
  expect_eq "$HOST_UID" "$(id -u)" "the sandbox's processes are the caller's uid"
fi
kill "$ZB_BG" 2>/dev/null
wait "$ZB_BG" 2>/dev/null

# --- --debug says which ids the run had. ---
zb --debug -- true
if [ "$MODE" = root ]; then
  expect_contains "$ERR" "debug: ids: " "--debug names the ids root's sandbox runs with"
else
  expect_contains "$ERR" "uid/gid map: the caller's uid and gid only" "--debug names the caller's ids"
fi

finish
