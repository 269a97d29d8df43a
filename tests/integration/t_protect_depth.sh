# Protected names hold at any depth inside writable paths, in directories made during the
# run too (issue 14, item 6): a repository the command makes (git init, git clone) cannot
# get hooks or a config of the command's, nor can a moved directory, a gitfile or a
# symlink stand in for .git. And git init, git clone and git submodule add work when run
# again with exactly the flags zerobox's exit hint names.
. "$(dirname "$0")/lib.sh"
need git

G=(git -c user.name=zb -c user.email=zb@invalid -c init.defaultBranch=main -c protocol.file.allow=always)
BARE=$HOSTDIR/upstream.git
git init -q --bare "$BARE" || fail "cannot make $BARE"
SEED=$HOSTDIR/seed
"${G[@]}" clone -q "$BARE" "$SEED" 2>/dev/null
echo hello >"$SEED/README"
"${G[@]}" -C "$SEED" add README && "${G[@]}" -C "$SEED" commit -q -m seed && "${G[@]}" -C "$SEED" push -q origin HEAD:main ||
  fail "cannot seed $BARE"
git -C "$BARE" symbolic-ref HEAD refs/heads/main

W=$HOSTDIR/w
mkdir -p "$W"
AW=--allow-write="$W"

# hint_flags: every --allow-write=... the last run's exit hint names, one a line.
hint_flags() { printf '%s\n' "$ERR" | sed -n 's/^zerobox: warning: refused .* (\(--allow-write=.*\) allows it)$/\1/p' | sort -u; }

# --- Attacks: each must leave nothing protected on the host. ---
zb "$AW" -C "$W" -- sh -c 'git init -q sub; printf "#!/bin/sh\necho owned\n" > sub/.git/hooks/pre-commit'
expect_rc_not 0 "git init sub, then a hook: refused"
expect_absent "$W/sub/.git/hooks" "git init sub: no hooks directory on the host"
expect_absent "$W/sub/.git/config" "git init sub: no config on the host"
expect_contains "$ERR" "refused to let the command create protected path $W/sub/.git/hooks" "git init sub: the hint names .git/hooks"

zb "$AW" -C "$W" -- mkdir -p a/b/.git/hooks
expect_rc_not 0 "mkdir -p a/b/.git/hooks refused"
expect_absent "$W/a/b/.git/hooks" "mkdir -p a/b/.git/hooks: nothing on the host"

zb "$AW" -C "$W" -- "${G[@]}" clone -q "$BARE" cloned
expect_rc_not 0 "git clone into the allowed directory: refused"
expect_absent "$W/cloned/.git/hooks" "git clone: no hooks directory on the host"

# A directory prepared with hooks inside, moved into place as .git; a symlink and a
# gitfile pointing git elsewhere; and .envrc, .vscode and .git/config deep in the tree.
zb "$AW" -C "$W" -- sh -c 'mkdir -p prep/hooks c && echo evil > prep/hooks/pre-commit'
expect_rc 0 "a directory named prep with hooks inside is ordinary"
zb "$AW" -C "$W" -- "$PROBE" rename "$W/prep" "$W/c/.git"
expect_rc 13 "renaming a prepared directory to c/.git: EACCES"
expect_absent "$W/c/.git" "renaming a prepared directory to .git: nothing on the host"
zb "$AW" -C "$W" -- "$PROBE" symlink "$W/prep" "$W/c/.git"
expect_refused "a symlink c/.git to a prepared directory refused"
expect_absent "$W/c/.git" "a symlink as .git: nothing on the host"
zb "$AW" -C "$W" -- sh -c "echo 'gitdir: $W/prep' > c/.git"
expect_rc_not 0 "a gitfile c/.git refused"
expect_absent "$W/c/.git" "a gitfile: nothing on the host"
zb "$AW" -C "$W" -- sh -c 'mkdir -p d/e/f && echo "echo owned" > d/e/f/.envrc'
expect_rc_not 0 "a deep .envrc refused"
expect_absent "$W/d/e/f/.envrc" "a deep .envrc: nothing on the host"
zb "$AW" -C "$W" -- mkdir -p d/e/.vscode
expect_rc_not 0 "a deep .vscode refused"
expect_absent "$W/d/e/.vscode" "a deep .vscode: nothing on the host"
zb "$AW" -C "$W" -- sh -c 'mkdir -p m/.git && echo "[core]" > m/.git/config'
expect_rc_not 0 "a deep .git/config refused"
expect_absent "$W/m/.git/config" "a deep .git/config: nothing on the host"

# An existing repository deep in the tree: no new hook in it, from inside it either.
V=$W/vendor/lib
mkdir -p "$V/.git/hooks"
zb "$AW" -C "$V/.git/hooks" -- "$PROBE" create pre-commit
expect_rc 13 "a new hook in an existing deep .git/hooks, by a relative name: EACCES"
zb "$AW" -C "$W" -- "$PROBE" create "$V/.git/hooks/post-checkout"
expect_rc 13 "a new hook in an existing deep .git/hooks: EACCES"
expect_absent "$V/.git/hooks/pre-commit" "existing deep .git/hooks: no hook on the host"

# Existing protected files deep in the tree (a nested repository, a deep .envrc): no mount
# covers them, so opening one for writing without O_CREAT, and truncate(), are refused by
# name too: by a path, from a directory inside .git, through a symlink, and through an fd.
need_python
N=$W/vendor/a/b
mkdir -p "$N/.git/hooks" "$W/vendor/x/y" "$N/src"
printf '[core]\n\tbare = false\n' >"$N/.git/config"
printf '#!/bin/sh\nexit 0\n' >"$N/.git/hooks/pre-commit"
echo 'export A=1' >"$W/vendor/x/y/.envrc"
echo old >"$N/src/file.txt"
echo old >"$N/.git/description"
ln -s .git/config "$N/cfg-link"
# From $W: a working directory inside the repository would have its .git/config mounted
# read-only (the repository of the working directory is protected like a top one).
zb "$AW" -C "$W" -- "$PY" -c '
import os, sys
os.chdir(sys.argv[1].rsplit("/", 1)[0])
def try_(what, f):
    try:
        f()
        print(what, "ok")
    except OSError as e:
        print(what, e.errno)
def wr(path, flags):
    def f():
        fd = os.open(path, flags)
        os.write(fd, b"[core]\n\tfsmonitor = evil\n")
        os.close(fd)
    return f
for p in sys.argv[1:4]:
    for name, fl in (("wronly", os.O_WRONLY), ("rdwr", os.O_RDWR), ("trunc", os.O_WRONLY | os.O_TRUNC),
                     ("append", os.O_WRONLY | os.O_APPEND), ("rdonly-trunc", os.O_RDONLY | os.O_TRUNC),
                     ("creat", os.O_WRONLY | os.O_CREAT), ("nofollow", os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)):
        try_(p + " " + name, wr(p, fl))
    try_(p + " truncate", lambda: os.truncate(p, 0))
try_("relative config", wr("config", os.O_WRONLY))
try_("relative hook", wr("hooks/pre-commit", os.O_RDWR))
d = os.open("hooks", os.O_RDONLY | os.O_DIRECTORY)
try_("dirfd hook", lambda: os.close(os.open("pre-commit", os.O_WRONLY, dir_fd=d)))
try_("relative truncate", lambda: os.truncate("config", 0))
try_("symlink", wr(sys.argv[4], os.O_WRONLY | os.O_TRUNC))
try_("symlink truncate", lambda: os.truncate(sys.argv[4], 0))
pf = os.open("config", os.O_PATH)
try_("fd reopen", wr("/proc/self/fd/%d" % pf, os.O_WRONLY))
try_("fd truncate", lambda: os.truncate("/proc/self/fd/%d" % pf, 0))
try_("link", lambda: os.link("config", "cfg2"))
for p in sys.argv[5:7]:
    try_(p + " plain", wr(p, os.O_WRONLY | os.O_TRUNC))
try_("dir", lambda: os.open("hooks", os.O_WRONLY))
try_("missing", lambda: os.open("nothing-here", os.O_WRONLY))
' "$N/.git/config" "$N/.git/hooks/pre-commit" "$W/vendor/x/y/.envrc" "$N/cfg-link" "$N/src/file.txt" "$N/.git/description"
for p in "$N/.git/config" "$N/.git/hooks/pre-commit" "$W/vendor/x/y/.envrc"; do
  for what in wronly rdwr trunc append rdonly-trunc creat nofollow truncate; do
    expect_contains "$OUT" "$p $what 13" "existing deep ${p#"$W"/}: $what refused"
  done
done
for what in "relative config" "relative hook" "dirfd hook" "relative truncate" "symlink" "symlink truncate" \
  "fd reopen" "fd truncate" "link"; do
  expect_contains "$OUT" "$what 13" "existing deep .git/config or hook: $what refused"
done
expect_file_eq "$N/.git/config" "$(printf '[core]\n\tbare = false')" "existing deep .git/config unchanged on the host"
expect_file_eq "$N/.git/hooks/pre-commit" "$(printf '#!/bin/sh\nexit 0')" "existing deep hook unchanged on the host"
expect_file_eq "$W/vendor/x/y/.envrc" "export A=1" "existing deep .envrc unchanged on the host"
expect_absent "$N/.git/cfg2" "no second name for an existing deep .git/config"
expect_contains "$OUT" "$N/src/file.txt plain ok" "an ordinary deep file opens for writing"
expect_contains "$OUT" "$N/.git/description plain ok" "an unprotected file inside a deep .git opens for writing"
expect_file_eq "$N/src/file.txt" "$(printf '[core]\n\tfsmonitor = evil')" "an ordinary deep file is written"
expect_contains "$OUT" "dir 21" "a directory opened for writing: EISDIR"
expect_contains "$OUT" "missing 2" "a missing file opened for writing: ENOENT"
expect_contains "$ERR" "refused to let the command change protected path $N/.git/config (--allow-write=" "the exit hint names a refused existing file and its flag"

# A deep gitfile (a submodule's "gitdir: ...") is not rewritten either; git still commits
# in a nested repository's work tree, through its existing .git.
mkdir -p "$W/vendor/sm"
echo "gitdir: ../../.git/modules/sm" >"$W/vendor/sm/.git"
zb "$AW" -C "$W" -- "$PY" -c '
import os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
    os.write(fd, b"gitdir: /tmp\n")
except OSError as e:
    sys.exit(e.errno)
' "$W/vendor/sm/.git"
expect_rc 13 "an existing deep gitfile opened for writing: EACCES"
expect_file_eq "$W/vendor/sm/.git" "gitdir: ../../.git/modules/sm" "an existing deep gitfile unchanged on the host"
NR=$W/vendor/real
"${G[@]}" init -q "$NR" && echo one >"$NR/a" && "${G[@]}" -C "$NR" add a && "${G[@]}" -C "$NR" commit -q -m one ||
  fail "cannot make $NR"
cfg=$(cat "$NR/.git/config")
zb "$AW" -C "$W" -- sh -c "cd '$NR' && echo two >a && ${G[*]} commit -q -a -m two && ${G[*]} status --short"
expect_rc 0 "git commit in a nested repository's work tree"
expect_eq "$(git -C "$NR" log -1 --format=%s)" two "git commit in a nested repository: the commit is on the host"
expect_file_eq "$NR/.git/config" "$cfg" "git commit in a nested repository: its .git/config unchanged"

# What a lifted new directory holds does not leave it: mv copies, and the copy is checked.
zb "$AW" --allow-write="$W/nt" -C "$W" -- sh -c 'mkdir -p nt/.git/hooks && echo evil > nt/.git/hooks/pre-commit && mv nt moved'
expect_rc_not 0 "a new tree's hooks moved out of it: refused"
expect_absent "$W/moved/.git/hooks" "a new tree's hooks moved out of it: nothing on the host"

# A repository of the user's: a rename over its read-only .git/config gets EACCES (not
# EBUSY), and git's failure to set tracking is named in the exit hint.
R=$HOSTDIR/repo
"${G[@]}" clone -q "$BARE" "$R" 2>/dev/null || fail "cannot clone $R"
cfg=$(cat "$R/.git/config")
echo new >"$R/cfg.new"
zb --allow-write="$R" -C "$R" -- "$PROBE" rename "$R/cfg.new" "$R/.git/config"
expect_rc 13 "rename over a protected .git/config: EACCES"
zb --allow-write="$R" -C "$R" -- "${G[@]}" checkout -q -b topic --track origin/main
expect_contains "$ERR" "Permission denied" "git checkout --track: git says why it could not set tracking"
expect_contains "$ERR" "refused to let the command replace protected path $R/.git/config (--allow-write=$R/.git/config allows it)" \
  "git checkout --track: the hint names .git/config and its flag"
expect_file_eq "$R/.git/config" "$cfg" "git checkout --track: .git/config unchanged on the host"
"${G[@]}" -C "$R" checkout -q main && "${G[@]}" -C "$R" branch -q -D topic
zb --allow-write="$R" --allow-write="$R/.git/config" -C "$R" -- "${G[@]}" checkout -q -b topic --track origin/main
expect_rc 0 "git checkout --track with --allow-write=.git/config"
expect_eq "$(git -C "$R" config branch.topic.merge)" refs/heads/main "git checkout --track with the hint's flag: tracking set"
expect_present "$R/.git/hooks" "git checkout --track with the hint's flag: hooks still protected (still there)"
zb --allow-write="$R" --allow-write="$R/.git/config" -C "$R" -- "$PROBE" create "$R/.git/hooks/pre-commit"
expect_refused "--allow-write=.git/config does not open .git/hooks"

# --- git init, clone and submodule add, run again exactly as the hint says. ---
# retry_as_hinted CMD...: runs CMD in $W with $AW and every flag the hints named so far,
# until it succeeds or a run names no new flag (at most 5 runs). $UNDO, if set, runs on
# the host between runs (git submodule add leaves half its work behind when it fails).
UNDO=
retry_as_hinted() {
  local flags=() f new i
  for i in 1 2 3 4 5; do
    zb "$AW" "${flags[@]}" -C "$W" -- "$@"
    [ "$RC" = 0 ] && return 0
    [ -z "$UNDO" ] || eval "$UNDO"
    new=0
    while IFS= read -r f; do
      [ -n "$f" ] || continue
      case " ${flags[*]} " in *" $f "*) ;; *) flags+=("$f"); new=1 ;; esac
    done < <(hint_flags)
    [ "$new" = 1 ] || return 1
  done
  return 1
}
retry_as_hinted git init -q sub
expect_rc 0 "git init sub, run again with the hint's flag"
expect_present "$W/sub/.git/config" "git init sub with the hint's flag: the repository is made"
retry_as_hinted "${G[@]}" clone -q "$BARE" cloned
expect_rc 0 "git clone, run again with the hint's flag"
expect_file_eq "$W/cloned/README" hello "git clone with the hint's flag: the work tree is checked out"
expect_present "$W/cloned/.git/hooks" "git clone with the hint's flag: the new repository has its hooks"
# git init at the top of the allowed directory.
T=$HOSTDIR/top
mkdir -p "$T"
zb --allow-write="$T" -C "$T" -- git init -q .
expect_rc_not 0 "git init at the top: refused"
flag=$(hint_flags)
expect_eq "$flag" "--allow-write=$T/.git" "git init at the top: one flag, the new .git"
zb --allow-write="$T" "$flag" -C "$T" -- git init -q .
expect_rc 0 "git init at the top, run again with the hint's flag"
expect_present "$T/.git/config" "git init at the top with the hint's flag: the repository is made"
# git submodule add in the user's repository.
SR=$HOSTDIR/super
"${G[@]}" clone -q "$BARE" "$SR" 2>/dev/null || fail "cannot clone $SR"
W=$SR AW=--allow-write=$SR
UNDO='git -C "$SR" rm -q --cached -f lib >/dev/null 2>&1; rm -rf "$SR/lib" "$SR/.git/modules/lib"'
retry_as_hinted "${G[@]}" submodule add -q "$BARE" lib
expect_rc 0 "git submodule add, run again with the hints' flags"
expect_file_eq "$SR/lib/README" hello "git submodule add with the hints' flags: the submodule is checked out"
expect_contains "$(cat "$SR/.gitmodules")" "path = lib" "git submodule add with the hints' flags: .gitmodules written"
expect_eq "$(git -C "$SR" config submodule.lib.url)" "$BARE" "git submodule add with the hints' flags: .git/config written"
# ... and in one step, with the flags docs/recipes.md gives.
SR2=$HOSTDIR/super2
"${G[@]}" clone -q "$BARE" "$SR2" 2>/dev/null || fail "cannot clone $SR2"
zb --allow-write="$SR2" --allow-write="$SR2/.gitmodules,$SR2/.git/config,$SR2/.git/modules,$SR2/lib" -C "$SR2" -- \
  "${G[@]}" submodule add -q "$BARE" lib
expect_rc 0 "git submodule add in one step with the recipe's flags"
expect_file_eq "$SR2/lib/README" hello "git submodule add in one step: the submodule is checked out"
expect_present "$SR2/.git/hooks" "git submodule add in one step: the repository's hooks stay"
zb --allow-write="$SR2" --allow-write="$SR2/.gitmodules,$SR2/.git/config,$SR2/.git/modules,$SR2/lib" -C "$SR2" -- \
  "$PROBE" create "$SR2/.git/hooks/pre-commit"
expect_refused "the submodule recipe's flags do not open the repository's hooks"

finish
