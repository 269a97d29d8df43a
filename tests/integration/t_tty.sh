# The terminal: TIOCSTI (pushing input into the caller's terminal) is refused on a real
# pty, run under script(1); the command still gets the terminal as stdin.
. "$(dirname "$0")/lib.sh"
need script

run script -qec "$PROBE tiocsti" /dev/null
host_rc=$RC
zb_cmd=$(printf '%q ' "$ZEROBOX" -- "$PROBE" tiocsti)
run script -qec "$zb_cmd" /dev/null
expect_rc 1 "TIOCSTI into the pty refused with EPERM (host control: $host_rc)"
expect_not_contains "$OUT" "not a tty" "the probe did run on a tty"
zb_cmd=$(printf '%q ' "$ZEROBOX" --allow-all -- "$PROBE" tiocsti)
run script -qec "$zb_cmd" /dev/null
expect_rc 1 "TIOCSTI refused with -A"
zb_cmd=$(printf '%q ' "$ZEROBOX" -- sh -c 'test -t 0 && echo tty')
run script -qec "$zb_cmd" /dev/null
expect_rc 0 "the command's stdin is the caller's terminal"
expect_contains "$OUT" tty "the command's stdin is a tty"
finish
