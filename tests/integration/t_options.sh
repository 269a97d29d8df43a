# Other run options: -C, --no-sandbox, --strict-sandbox, --quiet, --debug, -V, -h,
# --profile FILE and --profile NAME.
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
finish
