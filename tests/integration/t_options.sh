# Other run options: -C, --no-sandbox, --strict-sandbox, --quiet, --debug, -V, -h,
# --profile FILE and --profile NAME; where the options end (attacks on "--", on optional
# values after a space and on empty values).
. "$(dirname "$0")/lib.sh"

D=$HOSTDIR/data
mkdir -p "$D/sub"
ln -s data "$HOSTDIR/data-link"

# -C and the working directory.
zb -C "$D" -- pwd;                 expect_out "$D" "-C DIR"
zb -C "$HOSTDIR/data-link" -- pwd; expect_out "$D" "-C through a symlink is canonical"
zb_in "$HOSTDIR" -C data/sub -- pwd; expect_out "$D/sub" "-C relative to the caller's directory"
zb_in "$D/sub" -- pwd;             expect_out "$D/sub" "the caller's directory is kept"
zb_in "$D" -C sub --allow-write=. -- sh -c 'echo x > ../f'; expect_rc 0 "relative --allow-write"
expect_file_eq "$D/f" x "relative --allow-write is relative to the caller's directory"
zb -C /proc -- pwd;                expect_out /proc "-C into /proc"
zb -C /tmp -- pwd;                 expect_out /tmp "-C /tmp"

# --no-sandbox: no isolation, environment policy kept.
zb --no-sandbox -- sh -c "echo ns > '$D/ns.txt'"; expect_rc 0 "--no-sandbox runs"
expect_file_eq "$D/ns.txt" ns "--no-sandbox: writes reach the host"
zb --no-sandbox -- sh -c 'grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t " " "'
expect_eq "$OUT" "NoNewPrivs: 0
Seccomp: 0" "--no-sandbox: no seccomp, no no_new_privs"
zb --no-sandbox -- sh -c 'exit 9'; expect_rc 9 "--no-sandbox: exit status"
zb --no-sandbox -- sh -c 'kill -TERM $$'; expect_rc 143 "--no-sandbox: signal exit status"
zb --no-sandbox -C "$D/sub" -- pwd; expect_out "$D/sub" "--no-sandbox honours -C"

# --strict-sandbox runs here (every layer is available).
zb --strict-sandbox -- sh -c 'grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t " " "'
expect_rc 0 "--strict-sandbox runs"
expect_eq "$OUT" "NoNewPrivs: 1
Seccomp: 2" "--strict-sandbox: fully sandboxed"
zb --strict-sandbox -- "$PROBE" create "$D/strict"; expect_refused "--strict-sandbox: writes refused"

# --quiet, --debug.
zb -- true; expect_eq "$ERR" "" "a plain run prints nothing on stderr"
zb --quiet -- sh -c 'echo err >&2'; expect_eq "$ERR" err "--quiet: the command's stderr still passes"
zb --quiet -- zbint-no-such-command; expect_rc 127 "--quiet: exit status"
expect_one_error_line 1 "--quiet: errors are still printed"
zb --quiet --allow-write=/no/such/x -- true; expect_setup_error "--quiet: setup errors are still printed"
zb --quiet --allow-write="$D" -C "$D" -- sh -c '{ echo x > .envrc; } 2>/dev/null; true'
expect_eq "$ERR" "" "--quiet: no warnings"
rm -f "$D/.envrc"
zb --debug -- true; expect_rc 0 "--debug runs"
expect_out_empty "--debug prints nothing on stdout"
expect_contains "$ERR" "landlock" "--debug mentions Landlock"
expect_contains "$ERR" "ABI" "--debug mentions the Landlock ABI"
expect_contains "$ERR" "mount plan" "--debug shows the mount plan"
expect_contains "$ERR" "seccomp" "--debug mentions seccomp"
zb --debug --quiet -- true; expect_rc 0 "--debug --quiet runs"

# -V, -h.
zb -V; expect_rc 0 "-V"
[[ $OUT =~ ^zerobox\ [0-9]+\.[0-9]+\.[0-9]+ ]]; _check $? "-V prints 'zerobox X.Y.Z'" "got '$OUT'"
expect_eq "$(printf '%s\n' "$OUT" | wc -l)" 1 "-V prints one line"
v=$OUT
zb --version; expect_out "$v" "--version"
zb -h; expect_rc 0 "-h"
expect_contains "$OUT" "--allow-write" "-h lists --allow-write"
expect_contains "$OUT" "--deny-read" "-h lists --deny-read"
expect_contains "$OUT" "--status-fd" "-h lists --status-fd"
expect_eq "$ERR" "" "-h prints nothing on stderr"
h=$OUT
zb --help; expect_out "$h" "--help"

# --profile FILE and NAME.
mkdir -p "$HOSTDIR/cfg/zerobox" "$HOME/.config/zerobox"
cat >"$HOSTDIR/p.toml" <<TOML
allow-write = ["$D/sub"]
env = { PROFILE_VAR = "from-file" }
allow-env = ["FOO"]
TOML
run env FOO=bar "$ZEROBOX" --profile "$HOSTDIR/p.toml" -- sh -c "echo p > '$D/sub/p.txt' && echo \$PROFILE_VAR \$FOO"
expect_rc 0 "--profile FILE runs"
expect_out "from-file bar" "--profile FILE: env and allow-env"
expect_file_eq "$D/sub/p.txt" p "--profile FILE: allow-write"
zb --profile "$HOSTDIR/p.toml" --env B=2 -- sh -c "echo \$PROFILE_VAR \$B"
expect_out "from-file 2" "command-line flags add to the profile"
zb --profile "$HOSTDIR/p.toml" --env PROFILE_VAR=cli -- sh -c 'echo $PROFILE_VAR'
expect_out cli "command-line --env overrides the profile"
zb --profile "$HOSTDIR/p.toml" -- "$PROBE" create "$D/outside"; expect_refused "--profile FILE grants nothing else"
printf 'allow-write = ["%s"]\nenv = ["PROFILE_VAR=from-name"]\n' "$D" >"$HOSTDIR/cfg/zerobox/dev.toml"
run env XDG_CONFIG_HOME="$HOSTDIR/cfg" "$ZEROBOX" --profile dev -- sh -c "echo n > '$D/n.txt' && echo \$PROFILE_VAR"
expect_out from-name "--profile NAME from \$XDG_CONFIG_HOME/zerobox"
expect_file_eq "$D/n.txt" n "--profile NAME: allow-write"
printf 'env = { PROFILE_VAR = "from-home" }\n' >"$HOME/.config/zerobox/dev.toml"
zb --profile dev -- sh -c 'echo $PROFILE_VAR'; expect_out from-home "--profile NAME from ~/.config/zerobox"
printf 'bogus-key = 1\n' >"$HOSTDIR/bad.toml"
zb --profile "$HOSTDIR/bad.toml" -- true; expect_usage_error "--profile with an unknown key"
printf 'allow-write = [\n' >"$HOSTDIR/broken.toml"
zb --profile "$HOSTDIR/broken.toml" -- true; expect_usage_error "--profile with a TOML syntax error"
zb --profile zbint-no-such-profile -- true; expect_setup_error "--profile NAME that does not exist"
# Where the options end. A is allowed, X and Y are made here and never allowed.
A=$HOSTDIR/opt-allowed X=$HOSTDIR/opt-denied Y=$HOSTDIR/opt-second
mkdir -p "$A" "$X" "$Y"
# After "--" nothing is an option, whatever comes before it (list options ate the "--").
for before in "--allow-write=$A" "--allow-read=/" "--deny-write=$Y" "--env=ZB=1" "--allow-env=FOO" \
  "--deny-env=FOO" "--allow-write=$A,$Y"; do
  zb "$before" -- --allow-all sh -c "touch '$X/f'"
  expect_rc 127 "$before -- --allow-all sh: runs a program named --allow-all"
  expect_absent "$X/f" "$before -- --allow-all sh: nothing written"
  zb "$before" -- --version; expect_rc 127 "$before -- --version: a program, not zerobox's version"
  expect_out_empty "$before -- --version prints no version"
done
zb --allow-read / -- --allow-all sh -c "touch '$X/f'"; expect_rc 127 "--allow-read / -- --allow-all sh"
zb --env ZB=1 -- --allow-all sh -c "touch '$X/f'"; expect_rc 127 "--env ZB=1 -- --allow-all sh"
zb --env ZB=1 -- --allow-write -- "$PROBE" create "$X/f"; expect_rc 127 "--env ZB=1 -- --allow-write -- cmd"
expect_absent "$X/f" "-- --allow-all, -- --allow-write: nothing written"
zb --allow-write="$A" -- --help; expect_rc 127 "-- --help: a program"
expect_not_contains "$OUT" "--allow-write" "-- --help prints no help"
# An option still wanting its value does not take the "--" (and the word after is no option).
zb --env -- --allow-all sh -c "touch '$X/f'"; expect_usage_error "--env -- --allow-all: --env has no value"
zb -C -- --allow-all sh -c "touch '$X/f'"; expect_usage_error "-C -- --allow-all: -C has no value"
expect_absent "$X/f" "an option before -- that wants a value: nothing written"
# Network options after "--" are the command's.
start_server http "$HOSTDIR"
PORT=$SERVER_INFO
zb --allow-write="$A" -- -A "$PROBE" connect-tcp 127.0.0.1 "$PORT"; expect_rc 127 "-- -A cmd: a program named -A"
zb --allow-write="$A" -- --allow-net=127.0.0.1 sh -c 'echo "${HTTP_PROXY-none}"'
expect_rc 127 "-- --allow-net=HOST cmd: a program named --allow-net=HOST"
expect_not_contains "$OUT" "127.0.0.1" "-- --allow-net=HOST: no proxy was set up"
zb --env ZB=1 -- --allow-net -- "$PROBE" connect-tcp 127.0.0.1 "$PORT"
expect_rc 127 "-- --allow-net -- cmd: a program named --allow-net"
# An optional value after a space is the value, never "everything writable".
zb --allow-write "$A" -- sh -c "echo a > '$A/g'; echo y > '$Y/f'"
expect_file_eq "$A/g" a "--allow-write DIR -- cmd: DIR is writable"
expect_absent "$Y/f" "--allow-write DIR -- cmd: another directory is not"
zb --allow-write "$A" -- "$PROBE" create "$Y/f"; expect_refused "--allow-write DIR -- cmd: a write elsewhere is refused"
zb --allow-write "$PROBE" create "$Y/f"; expect_rc_not 0 "--allow-write FILE cmd...: FILE is the value, not the command"
expect_absent "$Y/f" "--allow-write FILE cmd...: nothing else writable"
zb --allow-write="$A" --allow-write "$Y" -- sh -c "echo 1 > '$A/h'; echo 2 > '$Y/f'"
expect_file_eq "$A/h" 1 "--allow-write=A --allow-write B: A writable"
expect_file_eq "$Y/f" 2 "--allow-write=A --allow-write B: B writable"
zb --allow-write="$A" --allow-write "$Y" -- "$PROBE" create "$X/f"; expect_refused "--allow-write=A --allow-write B: nothing else"
rm -f "$Y/f"
zb --allow-write make; expect_usage_error "--allow-write make: make is the value, no command"
expect_contains "$ERR" "no command given" "--allow-write make: says no command given"
zb --allow-net "$PROBE" connect-tcp 127.0.0.1 "$PORT"; expect_rc_not 0 "--allow-net PATH cmd...: not the host's network"
zb --allow-net "127.0.0.1:$PORT" -- "$PROBE" connect-tcp 127.0.0.1 "$PORT"; expect_rc_not 0 "--allow-net HOST -- cmd: filtered, not the host's network"
zb --allow-net "127.0.0.1:$PORT" -- sh -c 'echo "${HTTP_PROXY-none}"'; expect_contains "$OUT" "127.0.0.1:" "--allow-net HOST -- cmd: through the proxy"
zb --allow-net -- "$PROBE" connect-tcp 127.0.0.1 "$PORT"; expect_rc 0 "--allow-net -- cmd: bare, the host's network"
run env FOO=f BAR=b "$ZEROBOX" --allow-env FOO -- sh -c 'echo "${FOO-unset} ${BAR-unset}"'
expect_out "f unset" "--allow-env NAME -- cmd: NAME and no other"
# An empty value is a usage error naming the flag, also when a command follows.
for flag in --allow-write --allow-net --allow-env --allow-read --deny-write --env; do
  zb "$flag=" -- "$PROBE" create "$Y/e"; expect_usage_error "$flag= -- cmd"
  expect_contains "$ERR" "$flag: empty value" "$flag= -- cmd names the flag"
  zb "$flag=" "$PROBE" create "$Y/e"; expect_usage_error "$flag= cmd"
  expect_contains "$ERR" "$flag: empty value" "$flag= cmd names the flag"
  zb "$flag" "" -- "$PROBE" create "$Y/e"; expect_usage_error "$flag '' -- cmd"
done
zb --allow-write=, -- "$PROBE" create "$Y/e"; expect_usage_error "--allow-write=, -- cmd"
expect_absent "$Y/e" "empty values: nothing ran"
printf 'allow-write = ""\n' >"$HOSTDIR/empty.toml"
zb_in "$Y" --profile "$HOSTDIR/empty.toml" -- "$PROBE" create "$Y/e"; expect_usage_error "a profile's empty allow-write"
expect_absent "$Y/e" "a profile's empty allow-write: the working directory is not writable"
# --help lists the snapshot commands.
zb --help
for sub in list show diff accept discard restore clean; do
  expect_contains "$OUT" "
  $sub " "--help lists snapshot $sub"
done
finish
