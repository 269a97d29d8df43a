# --status-fd: JSON Lines, version 1: child_started, child_exit (code or signal),
# setup_error; the fd reaches EOF.
. "$(dirname "$0")/lib.sh"
need_python

# events FILE: one line per event: "event key=value ...", checking "v":1 on each.
events() {
  "$PY" - "$1" <<'PY'
import json, sys
data = open(sys.argv[1], "rb").read().decode()
if data and not data.endswith("\n"):
    print("ERROR: last line not terminated")
for line in data.splitlines():
    try:
        o = json.loads(line)
    except ValueError as e:
        print("ERROR: not JSON: %r" % line)
        continue
    if o.get("v") != 1:
        print("ERROR: v is not 1: %r" % line)
    ev = o.get("event")
    rest = " ".join("%s=%s" % (k, "N" if k == "pid" and isinstance(v, int) and v > 0 else
                                  ("TEXT" if k == "message" and isinstance(v, str) and v else json.dumps(v)))
                    for k, v in sorted(o.items()) if k not in ("v", "event"))
    print(("%s %s" % (ev, rest)).strip())
PY
}
S=$WORK/status

run "$ZEROBOX" --status-fd=3 -- sh -c 'exit 3' 3>"$S"; expect_rc 3 "exit status with --status-fd"
expect_eq "$(events "$S")" "child_started pid=N
child_exit code=3" "child_started then child_exit code"
run "$ZEROBOX" --status-fd=3 -- true 3>"$S"
expect_eq "$(events "$S")" "child_started pid=N
child_exit code=0" "exit code 0"
run "$ZEROBOX" --status-fd=3 -- sh -c 'kill -KILL $$' 3>"$S"; expect_rc 137 "killed by SIGKILL"
expect_eq "$(events "$S")" "child_started pid=N
child_exit signal=9" "child_exit with signal"
run "$ZEROBOX" --status-fd=3 --allow-write=/no/such/dir/x -- true 3>"$S"; expect_rc 125 "setup failure"
expect_eq "$(events "$S")" "setup_error message=TEXT" "setup_error event with a message"
run "$ZEROBOX" --status-fd=3 --secret K=V --no-sandbox -- true 3>"$S"; expect_rc 125 "a secret with --no-sandbox"
expect_eq "$(events "$S")" "setup_error message=TEXT" "setup_error for a policy that cannot run"
run "$ZEROBOX" --status-fd=3 -- zbint-no-such-command 3>"$S"; expect_rc 127 "exec failure"
expect_eq "$(events "$S")" "child_started pid=N
child_exit code=127" "exec failure: child_started then child_exit 127"
printf 'x' >"$HOSTDIR/noexec"
run "$ZEROBOX" --status-fd=3 -- "$HOSTDIR/noexec" 3>"$S"; expect_rc 126 "not executable"
expect_eq "$(events "$S")" "child_started pid=N
child_exit code=126" "not executable: child_exit 126"
run "$ZEROBOX" --no-sandbox --status-fd=3 -- sh -c 'exit 4' 3>"$S"; expect_rc 4 "--no-sandbox with --status-fd"
expect_eq "$(events "$S")" "child_started pid=N
child_exit code=4" "--no-sandbox: same events"
run "$ZEROBOX" --status-fd=7 -- true 7>"$S"
expect_eq "$(events "$S")" "child_started pid=N
child_exit code=0" "another fd number"
run "$ZEROBOX" --status-fd=3 -- true 3>>"$S"
expect_eq "$(events "$S" | wc -l)" 4 "appends to an O_APPEND file"

# A status reader that went away does not change the outcome.
run bash -c '"$0" --status-fd=3 -- sh -c "sleep 0.1; exit 5" 3> >(exit 0)' "$ZEROBOX"
expect_rc 5 "a closed status pipe does not change the exit status"
expect_eq "$ERR" "" "... and prints nothing"

# The pid is the command's pid on the host.
T=51${UNIQ: -7}
"$ZEROBOX" --status-fd=3 -- sleep "$T" 3>"$S" </dev/null &
Z=$!
T_PIDS+=("$Z")
wait_until 10 grep -q child_started "$S" || fail "no child_started event"
pid=$("$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["pid"])' "$S")
expect_contains "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" "sleep $T" "child_started carries the command's host pid"
kill -TERM "$Z"
wait "$Z"
RC=$?
expect_rc 143 "SIGTERM to zerobox: 143"
expect_eq "$(events "$S")" "child_started pid=N
child_exit signal=15" "child_exit signal=15 after SIGTERM"

# Through a pipe: the reader sees EOF once zerobox is done, even if the command left
# background processes behind (they never get the fd).
check_eof() { # DESCRIPTION ZEROBOX-ARGS...
  local desc=$1 fifo=$WORK/fifo.$RANDOM
  shift
  mkfifo "$fifo"
  timeout 20 cat "$fifo" >"$S" &
  local reader=$!
  "$ZEROBOX" --status-fd=3 "$@" 3>"$fifo" >/dev/null 2>&1 </dev/null
  local zrc=$?
  wait "$reader"
  RC=$? LAST_CMD="zerobox --status-fd=3 $* 3>fifo (zerobox exit $zrc)" OUT=$(cat "$S") ERR=
  expect_rc 0 "$desc: the reader reaches EOF"
  rm -f "$fifo"
}
check_eof "plain run" -- true
expect_eq "$(events "$S")" "child_started pid=N
child_exit code=0" "events through a FIFO"
check_eof "background child" -- sh -c "sleep 52${UNIQ: -7} & exit 0"
check_eof "setup error" --allow-write=/no/such/x -- true
expect_eq "$(events "$S")" "setup_error message=TEXT" "setup_error through a FIFO"
check_eof "exec failure" -- zbint-no-such-command
check_eof "--no-sandbox" --no-sandbox -- true
finish
