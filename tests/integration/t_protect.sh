# Protected paths: git hooks/config, shell start-up files and editor configs stay
# read-only inside writable paths; credentials in HOME and /etc/shadow are unreadable.
. "$(dirname "$0")/lib.sh"

R=$HOSTDIR/repo
mkdir -p "$R/.git/hooks" "$R/.vscode" "$R/src" "$R/.claude"
echo 'ref: refs/heads/main' >"$R/.git/HEAD"
printf '[core]\n\tbare = false\n' >"$R/.git/config"
printf '#!/bin/sh\nexit 0\n' >"$R/.git/hooks/pre-commit"
chmod 755 "$R/.git/hooks/pre-commit"
echo 'alias ls=ls' >"$R/.bashrc"
echo '{}' >"$R/.vscode/settings.json"
echo 'int main;' >"$R/src/main.c"
echo '{}' >"$R/.claude/settings.json"
before=$(tree_state "$R")
AW=--allow-write="$R"

zb "$AW" -C "$R" -- "$PROBE" write "$R/src/main.c"; expect_rc 0 "ordinary files in the allowed repo are writable"
zb "$AW" -C "$R" -- "$PROBE" write "$R/.git/HEAD"; expect_rc 0 ".git itself stays writable"
git_head=$(cat "$R/.git/HEAD"); main_c=$(cat "$R/src/main.c")
before=$(tree_state "$R")
for f in .git/hooks/pre-commit .git/config .bashrc .vscode/settings.json .claude/settings.json; do
  zb "$AW" -C "$R" -- "$PROBE" write "$R/$f"; expect_refused "protected $f: write refused"
  zb "$AW" -C "$R" -- "$PROBE" truncate "$R/$f"; expect_refused "protected $f: truncate refused"
  zb "$AW" -C "$R" -- "$PROBE" unlink "$R/$f"; expect_refused "protected $f: delete refused"
done
zb "$AW" -C "$R" -- "$PROBE" create "$R/.git/hooks/post-checkout"; expect_refused "new file in .git/hooks refused"
zb "$AW" -C "$R" -- "$PROBE" create "$R/.vscode/tasks.json"; expect_refused "new file in .vscode refused"
zb "$AW" -C "$R" -- "$PROBE" rename "$R/.git/hooks" "$R/.git/hooks.old"; expect_refused "moving .git/hooks aside refused"
zb "$AW" -C "$R" -- "$PROBE" rename "$R/.vscode" "$R/vscode.old"; expect_refused "moving .vscode aside refused"
zb "$AW" -C "$R" -- sh -c "mv '$R/.git' '$R/.git.old' || exit 1; mkdir -p '$R/.git/hooks' && echo evil > '$R/.git/hooks/pre-commit' && echo evil > '$R/.git/config'"
expect_rc_not 0 "moving .git aside to recreate hooks is refused"
if [ -d "$R/.git.old" ]; then rm -rf "$R/.git"; mv "$R/.git.old" "$R/.git"; fi
expect_eq "$(tree_state "$R" | grep -v '^\./\.git|d|')" "$(printf '%s\n' "$before" | grep -v '^\./\.git|d|')" "repo unchanged on the host after the attempts"
# Protected names that do not exist have no inode to mask: the create guard (seccomp user
# notification, exec/guard.hpp) refuses to make them, whatever the spelling.
zb --debug "$AW" -C "$R" -- true
expect_contains "$ERR" "refused by seccomp user notification" "the create guard runs"
expect_contains "$ERR" "the command makes no regular file itself (landlock)" "the command's own Landlock layer refuses it new files"
for f in .envrc .mcp.json .gitmodules .profile .zshrc .npmrc .gitconfig .idea .cursor; do
  zb "$AW" -C "$R" -- "$PROBE" create "$R/$f"; expect_refused "protected $f that did not exist: creation refused"
  zb "$AW" -C "$R" -- sh -c "echo evil > '$R/$f' || mkdir '$R/$f' || ln -s /etc/passwd '$R/$f' || exit 0; exit 1"
  expect_rc 0 "protected $f: shell redirect, mkdir and ln -s refused"
  expect_absent "$R/$f" "protected $f: not on the host"
  expect_not_contains "$ERR" "moved it to" "protected $f: nothing to move aside"
done
zb "$AW" -C "$R" -- sh -c "mkdir -p '$R/.config/fish'"; expect_rc_not 0 "protected .config/fish refused below a new .config"
expect_absent "$R/.config/fish" "protected .config/fish not on the host"
rm -rf "$R/.config"
# Every other way in: paths through /proc and symlinks, renames and links, O_TMPFILE, a
# thread rewriting the path under the check, init's own /proc entries; and ordinary
# creation keeps its semantics (umask, O_EXCL, O_CLOEXEC, FIFOs). As a non-dumpable process too.
G=$HOSTDIR/guarded
rm -rf "$G" /tmp/r-link
mkdir -p "$G/.git"
echo 'ref: refs/heads/main' >"$G/.git/HEAD"
run "$ZEROBOX" --allow-write="$G" -C "$G" -- python3 "$(dirname "$0")/guard_attacks.py"
expect_rc 0 "guard_attacks.py: every attempt refused, ordinary files fine"
[ "$RC" = 0 ] || printf '%s\n%s\n' "$OUT" "$ERR" | grep -v '^ok ' | head -20 >&2
for f in .envrc .bashrc .config .git/hooks; do expect_absent "$G/$f" "guard_attacks.py: no $f on the host"; done
expect_present "$G/renamed/b/c/d/f7" "guard_attacks.py: its ordinary files reached the host"
expect_not_contains "$ERR" "moved it to" "guard_attacks.py: nothing needed moving aside"
expect_not_contains "$ERR" "protected path $G/.agents" "guard_attacks.py: no refusal reported for a path it never tried"
rm -rf "$G"
# A thread killed in a guarded call can pass its tid on at once (execve() in another
# thread takes the leader's): what pid 1 looked up by that tid must not be used for it.
# The bug this catches showed up about 4 times in 10,000 rounds: the stress run
# (ZEROBOX_RACE_ROUNDS=12000, `ctest -C stress -L stress`) is the one that finds it.
mkdir -p "$HOSTDIR/race"
zb --allow-write="$HOSTDIR/race" -C "$HOSTDIR/race" -- "$PROBE" tid-race "${ZEROBOX_RACE_ROUNDS:-12000}"
expect_rc 0 "no file made for a thread killed by execve() lands in the exec'ing thread's cwd"
[ "$RC" = 0 ] || printf '%s\n' "$OUT" >&2
rm -rf "$HOSTDIR/race"
# A thread that execs takes the leader's tid: pid 1 must not keep using what it learnt
# of the leader (its umask 0) for the new program (umask 077).
U=$HOSTDIR/umask-exec
mkdir -p "$U"
zb --allow-write="$U" -C "$U" -- python3 -c '
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
go = threading.Event()
def other():
    go.wait()
    os.execv("/usr/bin/touch", ["touch", "after-exec"])
os.umask(0o077)
threading.Thread(target=other).start()
assert libc.unshare(0x200) == 0  # CLONE_FS: the main thread gets a umask of its own
os.umask(0)
os.close(os.open("before-exec", os.O_WRONLY | os.O_CREAT, 0o666))
go.set()
threading.Event().wait(10)
'
expect_rc 0 "a thread execs while the leader has another umask"
expect_eq "$(stat -c %a "$U/before-exec" 2>&1)" 666 "the leader's file has the leader's umask (0)"
expect_eq "$(stat -c %a "$U/after-exec" 2>&1)" 600 "the exec'd program's file has its own umask (077)"
rm -rf "$U"
# git init in a writable directory that is no repository: .git/hooks is refused, and the
# user is told how to allow it; --allow-write=DIR/.git allows it.
N=$HOSTDIR/newrepo
mkdir -p "$N"
zb --allow-write="$N" -C "$N" -- git init -q .
expect_rc_not 0 "git init: .git/hooks refused"
# (.git/hooks, or .git itself where the test's directory lies inside another repository)
expect_contains "$ERR" "refused to let the command create protected path $N/.git" "git init: the user is told which path"
expect_contains "$ERR" "--allow-write=$N/.git allows it" "git init: ... and how to allow it"
expect_absent "$N/.git/hooks" "git init: no hooks directory on the host"
rm -rf "$N/.git"
zb --allow-write="$N" --allow-write="$N/.git" -C "$N" -- git init -q .
expect_rc 0 "git init with --allow-write=DIR/.git"
expect_present "$N/.git/config" "git init with --allow-write=DIR/.git: the repository is made"
expect_not_contains "$ERR" "refused" "git init with --allow-write=DIR/.git: nothing refused"
rm -rf "$N"
# Between the working directory and its git top-level, git and direnv take the nearest .git
# and .envrc: a new one there would be the command's repository (its config, its
# core.fsmonitor) over the user's.
M=$HOSTDIR/outer
mkdir -p "$M/src/x"
git -C "$M" init -q
zb --allow-write="$M" -C "$M/src/x" -- sh -c "cd .. && git init -q ."
expect_rc_not 0 "a repository below the top-level, above the cwd: refused"
expect_absent "$M/src/.git" "... not on the host"
zb --allow-write="$M" -C "$M/src/x" -- sh -c "echo evil > ../.envrc"
expect_rc_not 0 "an .envrc between the cwd and the top-level: refused"
expect_absent "$M/src/.envrc" "... not on the host"
# Those directories keep their place: renamed away, they would take the user's shell (whose
# cwd they are) to where .git and .envrc are free.
zb --allow-write="$M" -C "$M/src/x" -- sh -c "mv '$M/src' '$M/src2'"
expect_rc_not 0 "the cwd's parent below the top-level cannot be renamed"
zb --allow-write="$M" -C "$M/src/x" -- sh -c "mv '$M/src/x' '$M/src/y'"
expect_rc_not 0 "the cwd cannot be renamed"
expect_present "$M/src/x" "... both still in place"
rm -rf "$M"
# A dotfile link stepping out of a directory with "..": that directory keeps its place.
K=$HOSTDIR/dotdot
mkdir -p "$K/sub/deep" "$K/sub/dots"
echo good >"$K/sub/dots/bashrc"
ln -s sub/deep/../dots/bashrc "$K/.bashrc"
zb --allow-write="$K" -C "$K" -- sh -c "mv sub/deep sub/deep2 && mkdir -p evil dots && ln -s ../evil sub/deep && echo evil > dots/bashrc"
expect_rc_not 0 "a directory a dotfile link steps out of cannot be replaced"
expect_file_eq "$K/.bashrc" good "... and the dotfile still reads the same"
rm -rf "$K"
# /dev/stdout as a pipe, opened anew with O_CREAT (a shell's redirection): the pipe's, not init's.
run sh -c "'$ZEROBOX' '$AW' -C '$R' -- sh -c 'echo piped > /dev/stdout; echo err > /dev/stderr' 2>&1 | cat"
expect_out "piped
err" "a guarded run writes to /dev/stdout and /dev/stderr when they are pipes"

# Naming a protected path in --allow-write lifts only that one; --no-protect lifts all.
zb "$AW" --allow-write="$R/.git/hooks" -- "$PROBE" write "$R/.git/hooks/pre-commit"; expect_rc 0 "--allow-write=.git/hooks lifts the protection"
zb "$AW" --allow-write="$R/.git/hooks" -- "$PROBE" write "$R/.git/config"; expect_refused "... but .git/config stays protected"
zb "$AW" --allow-write="$R/.bashrc" -- "$PROBE" write "$R/.bashrc"; expect_rc 0 "--allow-write=.bashrc lifts the protection"
zb "$AW" --no-protect -- sh -c "echo x >> '$R/.git/config' && echo x >> '$R/.vscode/settings.json' && echo x >> '$R/.bashrc' && echo x > '$R/.envrc'"
expect_rc 0 "--no-protect: protected paths writable"
expect_contains "$(cat "$R/.git/config")" x "--no-protect: the write reached the host"
expect_present "$R/.envrc" "--no-protect: new protected file created on the host"
rm -f "$R/.envrc"

# Protected names in HOME when HOME is writable, and with bare --allow-write.
H=$HOSTDIR/home
mkdir -p "$H"
echo 'export A=1' >"$H/.bashrc"
echo 'x' >"$H/.profile"
zb --allow-write="$H" -- env HOME="$H" "$PROBE" write "$H/.bashrc"; expect_refused "~/.bashrc protected when HOME is allowed"
zb --allow-write="$H" -- "$PROBE" write "$H/notes.txt"; expect_rc 0 "other files in an allowed HOME are writable"
run env HOME="$H" "$ZEROBOX" --allow-write -- "$PROBE" write "$H/.bashrc"; expect_refused "bare --allow-write: ~/.bashrc protected"
run env HOME="$H" "$ZEROBOX" --allow-write -- "$PROBE" write "$H/.profile"; expect_refused "bare --allow-write: ~/.profile protected"
run env HOME="$H" "$ZEROBOX" --allow-write -C "$R" -- "$PROBE" write "$R/.git/hooks/pre-commit"; expect_refused "bare --allow-write: the cwd repo's hooks protected"
expect_file_eq "$H/.bashrc" "export A=1" "~/.bashrc unchanged on the host"
zb --allow-write="$HOSTDIR" -C "$HOSTDIR" -- "$PROBE" write "$R/.git/hooks/pre-commit"; expect_refused "hooks of a repo below the allowed directory protected"

# Dotfiles kept as symlinks (~/.bashrc -> dotfiles/bashrc, a .git symlinked elsewhere): the
# target is read-only, and the link can be neither removed, renamed nor replaced.
L=$HOSTDIR/linked
mkdir -p "$L/dotfiles" "$L/proj" "$L/gitdir/hooks"
echo orig >"$L/dotfiles/bashrc"
ln -s dotfiles/bashrc "$L/.bashrc"
ln -s ../gitdir "$L/proj/.git"
for attempt in "echo evil >> '$L/.bashrc'" "rm '$L/.bashrc'" "mv '$L/.bashrc' '$L/x'" "ln -sfn /tmp/evil '$L/.bashrc'" \
  "rm '$L/proj/.git'" "mv '$L/proj/.git' '$L/proj/g'" "mv '$L/proj' '$L/proj2'" "echo x > '$L/gitdir/hooks/pre-commit'"; do
  run env HOME="$L" "$ZEROBOX" --allow-write="$L" -- sh -c "$attempt"
  expect_rc_not 0 "symlinked dotfile: $attempt"
done
# Chains: ~/.zshrc -> mid -> dotfiles/zshrc, a symlinked directory on the target's way, a
# .git through two links, and links whose target does not exist yet.
mkdir -p "$L/real" "$L/gitdir2/hooks"
echo orig >"$L/dotfiles/zshrc"
ln -s dotfiles/zshrc "$L/mid"
ln -s mid "$L/.zshrc"
echo orig >"$L/real/profile"
ln -s real "$L/dl"
ln -s dl/profile "$L/.profile"
printf '[core]\n' >"$L/gitdir2/config"
ln -s gitdir2 "$L/gdl"
mkdir -p "$L/proj2" "$L/proj3"
ln -s ../gdl "$L/proj2/.git"
ln -s ../nogit "$L/proj3/.git"
ln -s dotfiles/absent-envrc "$L/.envrc"
for attempt in "rm '$L/mid'" "ln -sfn /tmp/evil '$L/mid'" "rm '$L/dl'" "rm '$L/gdl'" "echo x > '$L/dl/profile'" \
  "echo x > '$L/gdl/config'" "mkdir -p '$L/nogit' && echo x > '$L/nogit/config'" "mkdir -p '$L/nogit/hooks'" \
  "echo x > '$L/dotfiles/absent-envrc'" "echo x > '$L/.envrc'"; do
  run env HOME="$L" "$ZEROBOX" --allow-write="$L" -C "$L" -- sh -c "$attempt"
  expect_rc_not 0 "symlink chain: $attempt"
done
expect_file_eq "$L/.zshrc" orig "a chain of links still leads to the same file"
expect_file_eq "$L/.profile" orig "a symlinked directory on the way still leads to the same file"
expect_absent "$L/nogit/config" "no config where a dangling .git points"
expect_absent "$L/dotfiles/absent-envrc" "no file where a dangling dotfile link points"
expect_eq "$(readlink "$L/.bashrc")" dotfiles/bashrc "symlinked ~/.bashrc still points where it did"
expect_file_eq "$L/dotfiles/bashrc" orig "... and its target is unchanged"
expect_eq "$(readlink "$L/proj/.git")" ../gitdir "symlinked .git still points where it did"
expect_absent "$L/gitdir/hooks/pre-commit" "no hook through the symlinked .git"
run env HOME="$L" "$ZEROBOX" --allow-write="$L" -- sh -c "echo fine > '$L/notes'"
expect_rc 0 "other files next to the symlinked dotfile are writable"
rm -rf "$L"

# Credentials: unreadable by default, readable when named or with --no-protect.
setup_home() { # DIR
  mkdir -p "$1/.ssh" "$1/.aws" "$1/.gnupg" "$1/.config/gh" "$1/.config/gcloud" "$1/.kube" "$1/.docker"
  echo SSHKEY-SECRET >"$1/.ssh/id_rsa"
  echo AWS-SECRET >"$1/.aws/credentials"
  echo GPG-SECRET >"$1/.gnupg/key"
  echo GH-SECRET >"$1/.config/gh/hosts.yml"
  echo GCLOUD-SECRET >"$1/.config/gcloud/creds"
  echo KUBE-SECRET >"$1/.kube/config"
  echo DOCKER-SECRET >"$1/.docker/config.json"
  echo NETRC-SECRET >"$1/.netrc"
  echo GITCRED-SECRET >"$1/.git-credentials"
  echo PYPI-SECRET >"$1/.pypirc"
  echo fine >"$1/notes.txt"
}
for home in "$HOME" "$H"; do
  setup_home "$home"
  for f in .ssh/id_rsa .aws/credentials .gnupg/key .config/gh/hosts.yml .config/gcloud/creds .kube/config \
    .docker/config.json .netrc .git-credentials .pypirc; do
    run env HOME="$home" "$ZEROBOX" -- "$PROBE" read "$home/$f"
    expect_rc_in "2 13" "~/$f unreadable (HOME=$home)"
    expect_out_empty "~/$f: no content"
  done
  run env HOME="$home" "$ZEROBOX" --allow-write -- "$PROBE" read "$home/.ssh/id_rsa"
  expect_rc_in "2 13" "~/.ssh/id_rsa unreadable with bare --allow-write"
  run env HOME="$home" "$ZEROBOX" -A -- "$PROBE" read "$home/.aws/credentials"
  expect_rc_in "2 13" "~/.aws/credentials unreadable with -A"
  run env HOME="$home" "$ZEROBOX" -- sh -c "cat ~/.ssh/* ~/.netrc; ls -A ~/.ssh; grep -r SECRET ~ 2>/dev/null"
  expect_not_contains "$OUT" SECRET "no credential content through the shell (HOME=$home)"
  expect_not_contains "$OUT" id_rsa "~/.ssh lists as empty (HOME=$home)"
  run env HOME="$home" "$ZEROBOX" -- "$PROBE" read "$home/notes.txt"; expect_out fine "other HOME files readable"
  run env HOME="$home" "$ZEROBOX" --allow-write="$home" -- "$PROBE" write "$home/.ssh/authorized_keys"
  expect_refused "~/.ssh not writable inside an allowed HOME"
  run env HOME="$home" "$ZEROBOX" --allow-write="$home/.ssh" -- "$PROBE" read "$home/.ssh/id_rsa"
  expect_out SSHKEY-SECRET "--allow-write=~/.ssh makes it readable"
  run env HOME="$home" "$ZEROBOX" --no-protect -- "$PROBE" read "$home/.netrc"
  expect_out NETRC-SECRET "--no-protect makes ~/.netrc readable"
done
expect_absent "$H/.ssh/authorized_keys" "no authorized_keys written on the host"
run env HOME="$H" "$ZEROBOX" --allow-read="$H/.ssh" -- "$PROBE" read "$H/.ssh/id_rsa"
expect_out SSHKEY-SECRET "--allow-read=~/.ssh makes it readable"
run env HOME="$H" "$ZEROBOX" --allow-read="$H/.ssh" -- "$PROBE" read "$H/.netrc"
expect_rc_in "2 13" "--allow-read=~/.ssh leaves ~/.netrc protected"

for f in /etc/shadow /etc/gshadow /etc/ssh/ssh_host_*key*; do
  [ -e "$f" ] || continue
  zb -- "$PROBE" read "$f"; expect_rc_in "2 13" "$f unreadable"
  expect_out_empty "$f: no content"
  zb -A -- "$PROBE" read "$f"; expect_rc_in "2 13" "$f unreadable even with -A"
done
finish
