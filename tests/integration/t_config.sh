# zerobox's own configuration: the profile directories (~/.config/zerobox and
# $XDG_CONFIG_HOME/zerobox) are never writable inside, whatever --allow-write says, and
# cannot be made when absent; a profile loaded by path is read-only for its run; a
# profile others could change is refused. Then the default unreadable credentials,
# histories and browser profiles.
. "$(dirname "$0")/lib.sh"

umask 022
# HOME is made by run-as.sh for this test. It lies in /tmp, where what --allow-write does
# not name is scratch (written privately, never on the host): XDG_CONFIG_HOME is inside
# HOME so that one --allow-write=HOME makes both profile directories writable.
H=$HOME
XDG=$H/xdg
LOCS=("$H/.config/zerobox" "$XDG/zerobox")
GOOD='env = { ZBT_PROFILE = "kept" }'
mkdir -p "${LOCS[@]}"
for L in "${LOCS[@]}"; do printf '%s\n' "$GOOD" >"$L/good.toml"; done
printf 'no-sandbox = true\nenv = { ZBT_PROFILE = "evil" }\n' >"$WORK/evil.toml"
zx() { run env XDG_CONFIG_HOME="$XDG" "$ZEROBOX" "$@"; }

# The policy a --profile run gets: the profile's variable, and still seccomp and no_new_privs.
check_profile_holds() { # LABEL
  local L
  for xdg in "" "$XDG"; do
    run env ${xdg:+XDG_CONFIG_HOME="$xdg"} "$ZEROBOX" --profile good -- sh -c \
      'echo "$ZBT_PROFILE"; grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status | tr -s " \t" " "'
    expect_out "kept
NoNewPrivs: 1
Seccomp: 2" "$1: --profile good${xdg:+ (XDG_CONFIG_HOME)} still sandboxed"
  done
  for L in "${LOCS[@]}"; do
    expect_file_eq "$L/good.toml" "$GOOD" "$1: $L/good.toml unchanged on the host"
    expect_eq "$(ls -A "$L")" good.toml "$1: nothing else in $L on the host"
  done
}
check_profile_holds "before the attacks"

# The attacks run in one sandbox per policy, each printing "LABEL|STATUS" (the sandbox is
# what is tested; one run per attempt would take minutes). A label that is missing fails.
attack_status() { printf '%s\n' "$OUT" | awk -F'|' -v l="$1" '$1 == l { print $2 }'; }
expect_attack_refused() { # LABEL DESCRIPTION: a probe's errno
  RC=$(attack_status "$1")
  expect_rc_in "1 13 30 16" "$2"
}
expect_attack_failed() { # LABEL DESCRIPTION: a shell sequence that must not succeed
  RC=$(attack_status "$1")
  [ -n "$RC" ] && [ "$RC" != 0 ]
  _check $? "$2" "expected a failure status, got '${RC:-none}'"
}

# --- Every way to write there, under every way of making it writable. ---
EXISTING='P=$1 EVIL=$2; shift 2
for L in "$@"; do
  up=${L%/*}
  "$P" write "$L/good.toml"; echo "write:$L|$?"
  "$P" truncate "$L/good.toml"; echo "truncate:$L|$?"
  "$P" unlink "$L/good.toml"; echo "unlink:$L|$?"
  "$P" chmod "$L/good.toml" 666; echo "chmod:$L|$?"
  "$P" create "$L/evil.toml"; echo "create:$L|$?"
  "$P" rename "$L" "$L.old"; echo "rename:$L|$?"
  "$P" rmdir "$L"; echo "rmdir:$L|$?"
  cp "$EVIL" "$up/x.toml" && { mv -f "$up/x.toml" "$L/good.toml"; echo "over:$L|$?"; rm -f "$up/x.toml"; }
  { mv "$up" "$up.old" && mkdir -p "$L" && cp "$EVIL" "$L/good.toml"; }; echo "parent:$L|$?"
  mkdir -p "$up/new/zerobox" && cp "$EVIL" "$up/new/zerobox/good.toml" &&
    { rm -rf "$L"; mv -T "$up/new/zerobox" "$L"; echo "replace:$L|$?"; rm -rf "$up/new"; }
done 2>/dev/null; true'
for W in "--allow-write=$H" "--allow-write=$H/.config,$XDG" "--allow-write=$WORK" --allow-write -A; do
  zx "$W" -- sh -c "cat '${LOCS[0]}/good.toml' '${LOCS[1]}/good.toml'"
  expect_out "$GOOD
$GOOD" "$W: the profiles stay readable"
  zx "$W" -- sh -c "$EXISTING" sh "$PROBE" "$WORK/evil.toml" "${LOCS[@]}"
  for L in "${LOCS[@]}"; do
    up=$(dirname "$L")
    expect_attack_refused "write:$L" "$W: rewriting $L/good.toml refused"
    expect_attack_refused "truncate:$L" "$W: truncating $L/good.toml refused"
    expect_attack_refused "unlink:$L" "$W: deleting $L/good.toml refused"
    expect_attack_refused "chmod:$L" "$W: chmod of $L/good.toml refused"
    expect_attack_refused "create:$L" "$W: creating $L/evil.toml refused"
    expect_attack_refused "rename:$L" "$W: moving $L aside refused"
    expect_attack_refused "rmdir:$L" "$W: removing $L refused"
    expect_attack_failed "over:$L" "$W: renaming a file over $L/good.toml refused"
    expect_attack_failed "parent:$L" "$W: moving $up aside to make a new $L refused"
    expect_attack_failed "replace:$L" "$W: a directory of the command's renamed over $L refused"
    for d in "$up.old" "$L.old" "$up/x.toml" "$up/new"; do expect_absent "$d" "$W: nothing left on the host at $d"; done
  done
done
check_profile_holds "after the attacks"

# --- Naming a profile directory in --allow-write is an error. ---
for a in "$H/.config/zerobox" "$H/.config/zerobox/sub" "$XDG/zerobox"; do
  zx --allow-write="$a" -- true; expect_setup_error "--allow-write=$a refused"
  expect_contains "$ERR" "never writable" "--allow-write=$a: the message says why"
done
expect_absent "$H/.config/zerobox/sub" "the refused --allow-write created nothing"

# --- Absent profile directories cannot be made. ---
H2=$WORK/home2
mkdir -p "$H2"
ABSENT='P=$1 EVIL=$2 MINE=$3; shift 3
for L in "$@"; do
  up=${L%/*}
  { mkdir -p "$L" && cp "$EVIL" "$L/evil.toml"; }; echo "mkdir:$L|$?"
  mkdir -p "$MINE/zerobox" && cp "$EVIL" "$MINE/zerobox/evil.toml" && mkdir -p "$up" &&
    { mv "$MINE/zerobox" "$L"; echo "move:$L|$?"; }
  rm -rf "$MINE"; rmdir "$up"
  mkdir -p "$MINE/zerobox" && cp "$EVIL" "$MINE/zerobox/evil.toml" && { mv "$MINE" "$up"; echo "move-up:$L|$?"; }
  rm -rf "$MINE"; rmdir "$up"
  mkdir -p "$MINE/zerobox" && { ln -s "$MINE" "$up"; echo "link-up:$L|$?"; }
  rm -f "$up" 2>/dev/null; mkdir -p "$up" && { "$P" symlink "$MINE/zerobox" "$L"; echo "link:$L|$?"; }
  rm -rf "$MINE"
done 2>/dev/null; true'
for W in "--allow-write=$H2" "--allow-write=$WORK" --allow-write -A; do
  run env HOME="$H2" XDG_CONFIG_HOME="$H2/xdg" "$ZEROBOX" "$W" -- sh -c "$ABSENT" sh "$PROBE" "$WORK/evil.toml" "$H2/mine" \
    "$H2/.config/zerobox" "$H2/xdg/zerobox"
  for L in "$H2/.config/zerobox" "$H2/xdg/zerobox"; do
    up=$(dirname "$L")
    expect_attack_failed "mkdir:$L" "$W: making the absent $L refused"
    expect_attack_failed "move:$L" "$W: moving a directory of the command's to the absent $L refused"
    expect_attack_failed "move-up:$L" "$W: moving a directory holding zerobox/ to the absent $up refused"
    expect_attack_failed "link-up:$L" "$W: a symlink at the absent $up refused"
    expect_attack_refused "link:$L" "$W: a symlink at the absent $L refused"
    expect_absent "$L" "$W: no $L on the host"
  done
  rm -rf "$H2/mine"
  run env HOME="$H2" "$ZEROBOX" --profile evil -- true; expect_setup_error "$W: no profile evil appeared in ~/.config/zerobox"
  run env HOME="$H2" XDG_CONFIG_HOME="$H2/xdg" "$ZEROBOX" --profile evil -- true
  expect_setup_error "$W: no profile evil appeared in \$XDG_CONFIG_HOME/zerobox"
done

# --- A profile loaded by path is read-only for the run that loads it. ---
P=$WORK/proj
mkdir -p "$P"
printf 'allow-write = ["%s"]\n' "$P" >"$P/p.toml"
cp "$P/p.toml" "$WORK/p.orig"
run "$ZEROBOX" --profile "$P/p.toml" -- sh -c "echo ok > '$P/out'"; expect_rc 0 "--profile FILE: its allow-write works"
expect_file_eq "$P/out" ok "--profile FILE: the write reached the host"
BYPATH='P=$1 EVIL=$2 F=$3
"$P" write "$F"; echo "write|$?"
"$P" truncate "$F"; echo "truncate|$?"
"$P" unlink "$F"; echo "unlink|$?"
cp "$EVIL" "$F.new" && { mv -f "$F.new" "$F"; echo "over|$?"; rm -f "$F.new"; }
true'
for prof in "$P/p.toml" ./p.toml; do
  for extra in "" --allow-write="$P/p.toml"; do
    zb_in "$P" --profile "$prof" $extra -- sh -c "$BYPATH" sh "$PROBE" "$WORK/evil.toml" "$P/p.toml"
    expect_attack_refused write "--profile $prof $extra: rewriting it refused"
    expect_attack_refused truncate "--profile $prof $extra: truncating it refused"
    expect_attack_refused unlink "--profile $prof $extra: deleting it refused"
    expect_attack_failed over "--profile $prof $extra: renaming over it refused"
  done
done
expect_absent "$P/p.toml.new" "no file left beside the profile"
expect_eq "$(cat "$P/p.toml")" "$(cat "$WORK/p.orig")" "--profile FILE unchanged on the host"
ln -s p.toml "$P/link.toml"
zb --profile "$P/link.toml" -- "$PROBE" write "$P/p.toml"; expect_refused "--profile through a symlink: its target read-only"

# --- A profile others could change is refused, as ssh refuses such a config. ---
Q=$WORK/q
mkdir -p "$Q"
printf '%s\n' "$GOOD" >"$Q/p.toml"
zb --profile "$Q/p.toml" -- true; expect_rc 0 "a profile only its owner can write is loaded"
chmod g+w "$Q/p.toml"
zb --profile "$Q/p.toml" -- true; expect_setup_error "a group-writable profile is refused"
expect_contains "$ERR" "writable by its group" "the message names the group write"
chmod 644 "$Q/p.toml"
chmod 777 "$Q"
zb --profile "$Q/p.toml" -- true; expect_setup_error "a profile in a directory anyone can write is refused"
expect_contains "$ERR" "writable by others" "the message names the directory's mode"
chmod 1777 "$Q"
zb --profile "$Q/p.toml" -- true; expect_rc 0 "a sticky world-writable directory (like /tmp) is fine"
chmod 755 "$Q"
chmod o+w "${LOCS[0]}/good.toml"
zb --profile good -- true; expect_setup_error "--profile NAME: a world-writable profile is refused"
chmod 644 "${LOCS[0]}/good.toml"
ln -s "$Q/p.toml" "$WORK/q-link.toml"
zb --profile "$WORK/q-link.toml" -- true; expect_rc 0 "a profile through the caller's own symlink is loaded"
if [ "$MODE" = root ]; then
  chown 65534 "$Q/p.toml"
  zb --profile "$Q/p.toml" -- true; expect_setup_error "a profile owned by another user is refused"
  expect_contains "$ERR" "belongs to uid 65534" "the message names the owner"
  chown 0 "$Q/p.toml"
  chown -h 65534 "$WORK/q-link.toml"
  zb --profile "$WORK/q-link.toml" -- true; expect_setup_error "a symlink owned by another user on the way is refused"
fi
zb --no-sandbox --profile good -- true; expect_rc 0 "--no-sandbox with a sound profile runs"

# --- Credentials, histories and browser profiles are unreadable by default. ---
FILES=(.npmrc .vault-token .netrc .git-credentials .config/git/credentials .pypirc .yarnrc.yml
  .cargo/credentials.toml .cargo/credentials .gem/credentials .m2/settings-security.xml .terraformrc
  .config/containers/auth.json .s3cfg .boto .databrickscfg .cache/huggingface/token .huggingface/token
  .msmtprc .fetchmailrc
  .bash_history .zsh_history .zhistory .histfile .sh_history .local/share/fish/fish_history .python_history
  .ipython/profile_default/history.sqlite .node_repl_history .irb_history .pry_history .psql_history
  .mysql_history .sqlite_history .rediscli_history .dbshell .scala_history .julia/logs/repl_history.jl .lesshst)
DIRS=(.azure .gcloud .config/gcloud .oci .docker .terraform.d .config/op .op .pki .local/share/keyrings
  .local/share/kwalletd .config/hub .config/glab-cli .config/gh .config/rclone .config/sops .config/borg
  .config/doctl .config/hcloud .fly .minikube .subversion/auth .password-store ".config/Bitwarden CLI" .mongosh
  .mozilla .thunderbird .librewolf .config/google-chrome .config/google-chrome-beta .config/google-chrome-unstable
  .config/chromium .config/BraveSoftware .config/microsoft-edge .config/vivaldi .config/opera
  snap/firefox/common/.mozilla snap/chromium/common/chromium .var/app/org.mozilla.firefox
  .var/app/com.google.Chrome .var/app/org.chromium.Chromium .var/app/com.brave.Browser
  .var/app/org.mozilla.Thunderbird .config/Slack .config/discord .config/Signal)
for f in "${FILES[@]}"; do mkdir -p "$(dirname "$H/$f")" && echo "CRED-$f" >"$H/$f"; done
for d in "${DIRS[@]}"; do mkdir -p "$H/$d" && echo "CRED-$d" >"$H/$d/inner"; done
echo fine >"$H/notes.txt"
READS='P=$1 H=$2; shift 2
for f in "$@"; do out=$("$P" read "$H/$f"); echo "$f|$?|$out"; done 2>/dev/null; true'
zb -- sh -c "$READS" sh "$PROBE" "$H" "${FILES[@]}" "${DIRS[@]/%//inner}" notes.txt
for f in "${FILES[@]}" "${DIRS[@]/%//inner}"; do
  RC=$(attack_status "$f")
  expect_rc_in "2 13" "~/$f unreadable"
  expect_eq "$(printf '%s\n' "$OUT" | awk -F'|' -v l="$f" '$1 == l { print $3 }')" "" "~/$f: no content"
done
expect_contains "$OUT" "notes.txt|0|fine" "other HOME files stay readable"
for W in "--allow-write=$H" --allow-write -A; do
  zb "$W" -- sh -c "cat ~/.npmrc ~/.bash_history ~/.docker/inner ~/.mozilla/inner; grep -r CRED- ~ 2>/dev/null"
  expect_not_contains "$OUT" CRED- "$W: no credential, history or browser content through the shell"
done
zb --allow-read="$H/.npmrc" -- "$PROBE" read "$H/.npmrc"; expect_out "CRED-.npmrc" "--allow-read=~/.npmrc makes it readable"
zb --allow-read="$H/.npmrc" -- "$PROBE" read "$H/.bash_history"; expect_rc_in "2 13" "... and only it"
zb --allow-read="$H/.docker" -- "$PROBE" read "$H/.docker/inner"; expect_out "CRED-.docker" "--allow-read=~/.docker makes it readable"
zb --allow-read="$H/.mozilla,$H/.bash_history" -- sh -c "cat ~/.mozilla/inner ~/.bash_history"
expect_out "CRED-.mozilla
CRED-.bash_history" "--allow-read of a browser profile and a history file"
zb --allow-write="$H/.npmrc" -- "$PROBE" read "$H/.npmrc"; expect_out "CRED-.npmrc" "--allow-write=~/.npmrc makes it readable"
zb --no-protect -- "$PROBE" read "$H/.bash_history"; expect_out "CRED-.bash_history" "--no-protect makes them readable"
finish
