# Regressions for escapes found in security review: each must keep failing.
. "$(dirname "$0")/lib.sh"
D=$HOSTDIR/rv
mkdir -p "$D"

# --allow-write=/ is bare --allow-write: the fresh /proc, read-only /proc/sys and /sys
# and the minimal /dev stay (binding the host's root over them exposed the host's).
zb --allow-write=/ -- sh -c 'ls /proc | grep -c "^[0-9]"'
expect_rc 0 "--allow-write=/: runs"
[ "${OUT:-99}" -le 5 ] || fail "--allow-write=/: /proc shows $OUT processes: the host's, not the sandbox's"
ok "--allow-write=/: /proc is the sandbox's own"
zb --allow-write=/ -- "$PROBE" write /proc/sys/vm/stat_interval; expect_refused "--allow-write=/: /proc/sys stays read-only"
zb --allow-write=/ -- sh -c "echo x > '$D/slash.txt'"; expect_rc 0 "--allow-write=/: host paths writable"
expect_file_eq "$D/slash.txt" x "--allow-write=/: the write reached the host"
for p in /proc/sys /sys/kernel /dev/null /dev; do
  zb --allow-write="$p" -- true; expect_setup_error "--allow-write=$p refused: kernel interfaces stay the sandbox's"
done

# A git repository's config cannot be replaced through commondir, a new worktree or a
# symlinked .git.
R=$D/repo
mkdir -p "$R/.git/hooks" && echo "[core]" >"$R/.git/config"
zb --allow-write="$R" -- sh -c "echo ../evil > '$R/.git/commondir'"
expect_absent "$R/.git/commondir" "commondir pointing git elsewhere does not stay"
P=$D/proj
mkdir -p "$P/evil/.git"
zb --allow-write="$P" -- sh -c "ln -s evil/.git '$P/.git'"
expect_rc_not 0 "a symlinked .git: refused"
expect_absent "$P/.git" "a symlinked .git planted by the command does not stay"
# The same with a gitfile: ".git" as a file saying "gitdir: evil/.git", whose config the
# command wrote (core.fsmonitor would run on the host's next `git status`).
mkdir -p "$P/evil/.git"
zb --allow-write="$P" -- sh -c "printf 'gitdir: evil/.git\n' > '$P/.git'"
expect_rc_not 0 "a .git gitfile: refused"
expect_absent "$P/.git" "a .git gitfile planted by the command does not stay"
rm -rf "$P/evil"
# A gitfile that was there before (a worktree's, a submodule's) is the user's: it stays,
# and it is read-only, since pointing it elsewhere would give git the command's config.
W=$D/worktree
mkdir -p "$W" "$D/gitdir"
printf 'gitdir: %s\n' "$D/gitdir" >"$W/.git"
zb --allow-write="$W" -- sh -c "printf 'gitdir: evil\n' > '$W/.git'"
expect_rc_not 0 "an existing gitfile cannot be rewritten"
expect_file_eq "$W/.git" "gitdir: $D/gitdir" "an existing gitfile stays as it was"
zb --allow-write="$W" -- true
expect_present "$W/.git" "an existing gitfile is not moved aside"
expect_not_contains "$ERR" "moved it to" "an existing gitfile: nothing to report"
# A name on the host that is not protected (a decoy in the old move-aside scheme) changes nothing.
zb --allow-write="$R" -- sh -c "cd '$R' && for i in \$(seq 1 120); do : > .envrc.zerobox-blocked-\$i; done; : > .envrc.zerobox-blocked; echo evil > .envrc"
expect_absent "$R/.envrc" "decoy names do not let .envrc onto the host"
rm -f "$R"/.envrc.zerobox-blocked*

# A denied file cannot be replaced by renaming its parent.
mkdir -p "$D/w/a" && echo secret >"$D/w/a/secret"
zb --allow-write="$D/w" --deny-read="$D/w/a/secret" -- sh -c "cd '$D/w' && mv a a2"
expect_refused "renaming the parent of a denied file is refused"
expect_file_eq "$D/w/a/secret" secret "the denied file is still in place"

# Shadow backups are as secret as the originals.
if [ -e /etc/shadow- ]; then
  zb -- "$PROBE" read /etc/shadow-; expect_rc 13 "/etc/shadow- unreadable"
fi

# --allow-read with a bare --allow-write: only readable paths become visible.
mkdir -p "$WORK/hidden" && echo topsecret >"$WORK/hidden/s"
zb --allow-read="$D" --allow-write -- cat "$WORK/hidden/s"
expect_not_contains "$OUT" topsecret "--allow-read + bare --allow-write: host /tmp not exposed"

# --status-fd sharing the command's stdout must not make that stdout non-blocking.
run sh -c "'$ZEROBOX' --status-fd=3 -- head -c 3000000 /dev/zero 3>&1 | (sleep 1; wc -c)"
expect_rc 0 "--status-fd on the command's stdout: runs"
expect_contains "$OUT" "30000" "--status-fd on the command's stdout: all output arrives"
zb --status-fd=' 5' -- true 5>/dev/null; expect_usage_error "--status-fd with a space is a usage error"
zb --status-fd=+5 -- true 5>/dev/null; expect_usage_error "--status-fd with a sign is a usage error"

# A dotfile kept as a symlink does not stop zerobox from running.
H=$D/home
mkdir -p "$H" "$D/dots" && echo "# rc" >"$D/dots/bashrc"
ln -s "$D/dots/bashrc" "$H/.bashrc"
ln -s ../dots/bashrc "$H/.profile"
run env HOME="$H" "$ZEROBOX" --allow-write="$H" -- true; expect_rc 0 "symlinked dotfiles in a writable home"
finish
