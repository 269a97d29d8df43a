# Exit statuses and error messages: the command's code, 128+N for signals, 2 for usage
# errors, 125 for setup errors, 126/127 for exec failures; one-line messages.
. "$(dirname "$0")/lib.sh"

for code in 0 1 7 100 124 125 126 127 255; do
  zb -- sh -c "exit $code"; expect_rc "$code" "the command's own exit status $code"
done
zb -- sh -c 'kill -TERM $$'; expect_rc 143 "killed by SIGTERM: 143"
zb -- sh -c 'kill -KILL $$'; expect_rc 137 "killed by SIGKILL: 137"
zb -- sh -c 'kill -USR1 $$'; expect_rc 138 "killed by SIGUSR1: 138"
zb -- sh -c 'kill -PIPE $$'; expect_rc 141 "killed by SIGPIPE: 141"
zb -- sh -c 'kill -SEGV $$'; expect_rc 139 "killed by SIGSEGV: 139"
zb -- sh -c 'echo out; echo err >&2; exit 3'; expect_rc 3 "stdout and stderr pass through"
expect_out out "stdout content"
expect_eq "$ERR" err "stderr content, nothing added by zerobox"
run sh -c "printf 'in-data' | '$ZEROBOX' -- cat"; expect_out in-data "stdin passes through"

# Usage errors: exit 2, one error line plus the hint.
zb --bogus -- true;               expect_usage_error "unknown flag"
zb --allow-writ=/tmp -- true;     expect_usage_error "misspelt flag"
zb;                               expect_usage_error "no arguments"
zb --;                            expect_usage_error "missing command after --"
zb --allow-write="$HOSTDIR";      expect_usage_error "flags but no command"
zb --env FOO -- true;             expect_usage_error "--env without ="
zb --env =x -- true;              expect_usage_error "--env with an empty name"
zb --env 1A=x -- true;            expect_usage_error "--env with an invalid name"
zb --status-fd=abc -- true;       expect_usage_error "--status-fd not a number"
zb --status-fd=3x -- true;        expect_usage_error "--status-fd with trailing junk"
zb --status-fd=1 -- true;         expect_usage_error "--status-fd=1"
zb --status-fd=2 -- true;         expect_usage_error "--status-fd=2"
zb --status-fd=-1 -- true;        expect_usage_error "--status-fd=-1"
zb --status-fd=57 -- true;        expect_usage_error "--status-fd not open"
# Low numbers too: zerobox's own pipes, made while it parses, must not stand in for them.
for n in 3 4 5 6 7 8 9 10 11 12; do
  run bash -c 'exec '"$n"'>&-; exec "$0" --status-fd='"$n"' -- true' "$ZEROBOX"
  expect_usage_error "--status-fd=$n not open"
  run bash -c 'exec '"$n"'>&-; exec "$0" --status-fd '"$n"' -- true' "$ZEROBOX"
  expect_usage_error "--status-fd $n not open"
done
run "$ZEROBOX" --status-fd=3 -- true 3</dev/null; expect_usage_error "--status-fd open read-only"
zb --snapshot --restore -- true;  expect_usage_error "--snapshot with --restore"

# Setup errors: exit 125, exactly one error line.
zb --allow-write=/no/such/dir/x -- true; expect_setup_error "--allow-write whose parent is missing"
expect_contains "$ERR" /no/such/dir/x "the message names the path"
zb --allow-read=/no/such/dir/x -- true;  expect_setup_error "--allow-read whose parent is missing"
zb -C /no/such/dir -- true;              expect_setup_error "missing -C directory"
expect_contains "$ERR" /no/such/dir "the message names the directory"
echo f >"$HOSTDIR/file"
zb -C "$HOSTDIR/file" -- true;           expect_setup_error "-C names a file"
mkdir -p "$HOSTDIR/denied"
zb --deny-read="$HOSTDIR/denied" -C "$HOSTDIR/denied" -- true; expect_setup_error "cwd inside a denied path"
zb --allow-net=example.com -- true;      expect_rc 0 "--allow-net=DOMAIN runs (filtered mode)"
zb --allow-net=a..b -- true;             expect_rc 2 "--allow-net with a malformed domain is a usage error"
zb --secret K=V --no-sandbox -- true;    expect_setup_error "--secret with --no-sandbox"
expect_contains "$ERR" "no-sandbox" "--secret --no-sandbox: the message names the conflict"
zb --secret-file K="$HOSTDIR/no-such-key" -- true; expect_setup_error "--secret-file naming a missing file"
expect_contains "$ERR" "no-such-key" "--secret-file: the message names the file"
zb --secret K= -- true;                  expect_setup_error "--secret with an empty value"
zb --secret K=V --env K=x -- true;       expect_setup_error "--secret and --env for the same name"
zb --secret NO_SUCH_VARIABLE_ZB -- true; expect_setup_error "--secret KEY not in the environment"
zb --secret-host K=x.com -- true;        expect_rc 2 "--secret-host without its secret is a usage error"
zb --upstream-ca "$HOSTDIR/no-such-ca" --allow-net=x.com -- true; expect_setup_error "--upstream-ca naming a missing file"
for f in --snapshot --restore --review; do
  zb $f --no-sandbox -- true;            expect_setup_error "$f with --no-sandbox"
  expect_contains "$ERR" "no-sandbox" "$f --no-sandbox: the message names the conflict"
done
zb --review --allow-write="$HOSTDIR" --snapshot-path="$HOSTDIR/nope" -- true; expect_setup_error "--snapshot-path that does not exist"
expect_contains "$ERR" "$HOSTDIR/nope" "... the message names it"
zb --snapshot-exclude='*.log' -- true;   expect_setup_error "--snapshot-exclude without a snapshot mode"
zb --profile "$HOSTDIR/none.toml" -- true; expect_setup_error "missing --profile file"
zb --allow-write="$HOSTDIR/newdir" -- true; expect_rc 0 "--allow-write of a missing path whose parent exists"
expect_present "$HOSTDIR/newdir" "... is created"
zb --allow-read="$HOSTDIR/newread" -- true; expect_rc 0 "--allow-read of a missing path whose parent exists"
expect_absent "$HOSTDIR/newread" "... is not created"

# Exec failures.
printf '#!/bin/sh\necho hi\n' >"$HOSTDIR/noexec.sh"
chmod 644 "$HOSTDIR/noexec.sh"
zb -- "$HOSTDIR/noexec.sh";   expect_rc 126 "non-executable file: 126"
expect_one_error_line 1 "non-executable: one error line"
zb -- "$HOSTDIR";             expect_rc 126 "a directory as command: 126"
zb -- zbint-no-such-command;  expect_rc 127 "missing command: 127"
expect_one_error_line 1 "missing command: one error line"
expect_contains "$ERR" zbint-no-such-command "the message names the command"
# A PATH directory the caller may not search hides nothing: still "not found" (as in sh), and
# a non-executable file found through PATH is 126.
mkdir -p "$HOSTDIR/unsearchable" "$HOSTDIR/pathdir" && chmod 000 "$HOSTDIR/unsearchable"
cp "$HOSTDIR/noexec.sh" "$HOSTDIR/pathdir/zbint-noexec"
PATH="$HOSTDIR/unsearchable:$HOSTDIR/pathdir:$PATH" zb -- zbint-no-such-command
expect_rc 127 "missing command with an unsearchable PATH directory: 127"
PATH="$HOSTDIR/unsearchable:$HOSTDIR/pathdir:$PATH" zb -- zbint-noexec
expect_rc 126 "non-executable file found through PATH: 126"
chmod 755 "$HOSTDIR/unsearchable"
zb -- /no/such/path/cmd;      expect_rc 127 "missing absolute path: 127"
zb --no-sandbox -- zbint-no-such-command; expect_rc 127 "--no-sandbox: missing command: 127"
zb --no-sandbox -- "$HOSTDIR/noexec.sh";  expect_rc 126 "--no-sandbox: non-executable: 126"
zb --allow-read="$HOSTDIR/newdir" -- "$HOSTDIR/noexec.sh"; expect_rc_in "126 127" "a command outside --allow-read fails to execute"

# Flags after the command belong to the command.
zb -- --allow-all; expect_rc 127 "'zerobox -- --allow-all' runs a program named --allow-all"
expect_contains "$ERR" "--allow-all" "the message names '--allow-all'"
mkdir -p "$HOSTDIR/bin" "$HOSTDIR/target"
printf '#!/bin/sh\necho "ran: $*"\necho "$@" > "%s/target/x" && echo wrote\n' "$HOSTDIR" >"$HOSTDIR/bin/--allow-all"
chmod 755 "$HOSTDIR/bin/--allow-all"
run env PATH="$HOSTDIR/bin:$PATH" "$ZEROBOX" -- --allow-all --allow-write
expect_rc_not 0 "a program named --allow-all runs with no extra permissions"
expect_out "ran: --allow-write" "the program named --allow-all ran, with --allow-write as its argument"
expect_contains "$ERR" "$HOSTDIR/target/x" "its write to the host was refused (the shell's error names the file)"
expect_absent "$HOSTDIR/target/x" "nothing written by the program named --allow-all"
zb -- echo --allow-write --debug -V; expect_out "--allow-write --debug -V" "flags after the command are its arguments"
expect_eq "$ERR" "" "no debug output from flags after the command"
zb echo --allow-write; expect_out "--allow-write" "without --, flags after the command are its arguments"
zb --allow-write -- echo hi; expect_out hi "bare --allow-write before -- does not swallow the command"
zb -- -V; expect_rc 127 "'zerobox -- -V' runs a program named -V"

# Closed stdio: zerobox's own pipes must not take fds 0-2 (the command would get them as
# its stdio, or init's report pipe as its stderr), and the command finds them closed.
FDS=$WORK/fds
fd_probe='s=""; for fd in 0 1 2; do if [ -e /proc/$$/fd/$fd ]; then s="$s$fd:open "; else s="$s$fd:closed "; fi; done; echo "$s" > '"$FDS"
for closed in 0 1 2; do
  rm -f "$FDS"
  case $closed in
    0) "$ZEROBOX" --allow-write="$WORK" -- sh -c "$fd_probe" 0<&- >/dev/null 2>&1 ;;
    1) "$ZEROBOX" --allow-write="$WORK" -- sh -c "$fd_probe" 1>&- 2>/dev/null </dev/null ;;
    2) "$ZEROBOX" --allow-write="$WORK" -- sh -c "$fd_probe" 2>&- >/dev/null </dev/null ;;
  esac
  expect_eq "$?" 0 "fd $closed closed: the command runs"
  want=""
  for fd in 0 1 2; do
    if [ $fd = $closed ]; then want="$want$fd:closed "; else want="$want$fd:open "; fi
  done
  expect_eq "$(cat "$FDS" 2>/dev/null)" "$want" "fd $closed closed: the command finds it closed, the others open"
done
"$ZEROBOX" -- sh -c 'exit 3' 0<&- 1>&- 2>&-
expect_eq "$?" 3 "all stdio closed: the command's status comes through"
# A directory as stdio would let the command reach the host's tree around the mount view.
run sh -c "'$ZEROBOX' -- true </"
expect_rc 125 "a directory on stdin: refused"
expect_contains "$ERR" "stdin (fd 0) is a directory" "... and said"
run sh -c "'$ZEROBOX' -- true >&- 1</"
expect_rc 125 "a directory on stdout: refused"
finish
