# Reads: --deny-read of files and directories (by every path spelling), denied working
# directories, --allow-read limiting user data while system paths keep working.
. "$(dirname "$0")/lib.sh"

D=$HOSTDIR/data
mkdir -p "$D/secretdir/deep" "$D/pub" "$D/cwd"
echo TOPSECRET >"$D/secret.txt"
echo DIRSECRET >"$D/secretdir/f.txt"
echo DEEPSECRET >"$D/secretdir/deep/g.txt"
echo public >"$D/pub/p.txt"
echo other >"$D/other.txt"
ln -s secret.txt "$D/ln"
ln -s secretdir "$D/lndir"
ln -s "$D/secret.txt" "$D/pub/abs-ln"
before=$(tree_state "$HOSTDIR")

# --- A denied file: EACCES, never content (not even empty), by any spelling. ---
DR=--deny-read="$D/secret.txt"
zb "$DR" -- "$PROBE" read "$D/secret.txt"; expect_rc 13 "denied file: EACCES"
expect_out_empty "denied file: no content"
zb "$DR" -- "$PROBE" read "$D/ln";         expect_rc 13 "denied file via a relative symlink"
zb "$DR" -- "$PROBE" read "$D/pub/abs-ln"; expect_rc 13 "denied file via an absolute symlink"
zb "$DR" -C "$D" -- "$PROBE" read ./secret.txt; expect_rc 13 "denied file via ./"
zb "$DR" -C "$D/pub" -- "$PROBE" read ../secret.txt; expect_rc 13 "denied file via ../"
zb "$DR" -- "$PROBE" read "$D/pub/../secret.txt"; expect_rc 13 "denied file via a path with .."
zb "$DR" -- "$PROBE" read "/proc/self/root$D/secret.txt"; expect_rc 13 "denied file via /proc/self/root"
zb "$DR" -- "$PROBE" read "//$D//./secret.txt"; expect_rc 13 "denied file via a non-canonical path"
zb "$DR" -- sh -c "cat '$D/secret.txt'; cat < '$D/secret.txt'; head -c 100 '$D/ln'; cp '$D/secret.txt' /tmp/c && cat /tmp/c"
expect_not_contains "$OUT" TOPSECRET "denied file: no content through cat, redirection, head or cp"
zb "$DR" -- "$PROBE" write "$D/secret.txt"; expect_refused "denied file: write refused"
zb "$DR" --allow-write="$D" -- "$PROBE" write "$D/secret.txt"; expect_refused "denied file inside --allow-write: write refused"
zb "$DR" --allow-write="$D" -- "$PROBE" read "$D/secret.txt"; expect_rc 13 "denied file inside --allow-write: EACCES"
zb "$DR" --allow-write="$D" -- "$PROBE" unlink "$D/secret.txt"; expect_refused "denied file inside --allow-write: delete refused"
zb "$DR" --allow-write="$D" -- "$PROBE" rename "$D/other.txt" "$D/secret.txt"; expect_refused "denied file inside --allow-write: replace refused"
zb "$DR" --allow-write="$D" -- "$PROBE" rename "$D/secret.txt" "$D/pub/moved"; expect_refused "denied file inside --allow-write: move refused"
zb "$DR" --allow-write -- "$PROBE" read "$D/secret.txt"; expect_rc 13 "denied file with bare --allow-write: EACCES"
zb "$DR" -A -- "$PROBE" read "$D/secret.txt"; expect_rc 13 "denied file with -A: EACCES"
zb "$DR" --allow-write -- "$PROBE" write "$D/secret.txt"; expect_refused "denied file with bare --allow-write: write refused"
zb "$DR" -- "$PROBE" read "$D/other.txt"; expect_rc 0 "a sibling of a denied file stays readable"
expect_out other "sibling content"
zb_in "$D" --deny-read=secret.txt -- "$PROBE" read "$D/secret.txt"; expect_rc 13 "relative --deny-read"
zb_in "$D" --deny-read=./secret.txt -- "$PROBE" read "$D/secret.txt"; expect_rc 13 "relative --deny-read with ./"
zb_in "$D/pub" --deny-read=../secret.txt -- "$PROBE" read "$D/secret.txt"; expect_rc 13 "relative --deny-read with .. from the caller's directory"
zb --deny-read="$D/ln" -- "$PROBE" read "$D/secret.txt"; expect_rc 13 "--deny-read of a symlink denies its target"

# --- A denied directory: empty or EACCES; nothing beneath it readable. ---
DD=--deny-read="$D/secretdir"
zb "$DD" -- "$PROBE" ls "$D/secretdir"
if [ "$RC" = 0 ]; then expect_out_empty "denied directory lists as empty"; else expect_rc 13 "denied directory: EACCES"; fi
for p in "$D/secretdir/f.txt" "$D/secretdir/deep/g.txt" "$D/lndir/f.txt" "/proc/self/root$D/secretdir/f.txt" "$D/pub/../secretdir/f.txt"; do
  zb "$DD" -- "$PROBE" read "$p"; expect_rc_in "2 13" "denied directory: $p unreadable"
  expect_out_empty "denied directory: no content from $p"
done
zb "$DD" -C "$D" -- "$PROBE" read secretdir/f.txt; expect_rc_in "2 13" "denied directory: relative path unreadable"
zb "$DD" -- sh -c "cat '$D/secretdir/f.txt'; grep -r SECRET '$D' 2>/dev/null; tar cf - '$D' 2>/dev/null | strings"
expect_not_contains "$OUT" DIRSECRET "denied directory: no content through cat, grep -r or tar"
expect_not_contains "$OUT" DEEPSECRET "denied directory: no nested content"
zb "$DD" --allow-write="$D" -- "$PROBE" create "$D/secretdir/new"; expect_refused "denied directory inside --allow-write: create refused"
zb "$DD" --allow-write="$D" -- "$PROBE" rmdir "$D/secretdir"; expect_refused "denied directory inside --allow-write: remove refused"
zb "$DD" --allow-write="$D" -- "$PROBE" rename "$D/secretdir" "$D/sd2"; expect_refused "denied directory inside --allow-write: rename refused"

# --- Working directory inside a denied path: a setup error. ---
zb "$DD" -C "$D/secretdir" -- true;        expect_setup_error "-C inside a denied directory"
zb "$DD" -C "$D/secretdir/deep" -- true;   expect_setup_error "-C below a denied directory"
zb_in "$D/secretdir" "$DD" -- true;       expect_setup_error "caller's cwd inside a denied directory"
zb --deny-read="$D" -C "$D/cwd" -- true;   expect_setup_error "cwd below a denied parent"
zb "$DD" -C "$D/lndir" -- true;            expect_setup_error "-C through a symlink into a denied directory"

expect_eq "$(tree_state "$HOSTDIR")" "$before" "host tree unchanged by the deny-read tests"

# --- A deny path that does not exist yet stays denied once created. ---
zb --allow-write="$D" --deny-read="$D/later.txt" -- sh -c "echo LATERSECRET > '$D/later.txt'; cat '$D/later.txt'"
expect_not_contains "$OUT" LATERSECRET "--deny-read of a missing path: content unreadable after the command tries to create it"
expect_absent "$D/later.txt" "--deny-read of a missing path: nothing left on the host"

# --- --deny-read wins over --allow-read. ---
zb --allow-read="$D" "$DR" -- "$PROBE" read "$D/secret.txt"; expect_rc 13 "--deny-read wins over --allow-read"
zb --allow-read="$D" "$DD" -- "$PROBE" read "$D/secretdir/f.txt"; expect_rc_in "2 13" "--deny-read directory wins over --allow-read"

# --- --allow-read=DIR: other user data invisible, system paths still work. ---
AR=--allow-read="$D/pub"
zb "$AR" -- "$PROBE" read "$D/pub/p.txt";  expect_rc 0 "--allow-read path is readable"
expect_out public "--allow-read content"
zb "$AR" -- "$PROBE" read "$D/other.txt";  expect_rc_in "2 13" "user data outside --allow-read is unreadable"
expect_out_empty "no content outside --allow-read"
zb "$AR" -- "$PROBE" read "$D/secret.txt"; expect_rc_in "2 13" "a file beside the allowed dir is unreadable"
zb "$AR" -- "$PROBE" ls "$D";              expect_out pub "the parent of --allow-read shows only the allowed path"
echo work-data >"$WORK/userdata.txt"
zb "$AR" -- "$PROBE" read "$WORK/userdata.txt"; expect_rc_in "2 13" "user data in /tmp is unreadable under --allow-read"
mkdir -p "$WORK/rd"
echo tmp-readable >"$WORK/rd/f"
zb --allow-read="$WORK/rd" -- "$PROBE" read "$WORK/rd/f"; expect_rc 0 "--allow-read of a directory under /tmp"
expect_out tmp-readable "--allow-read of a directory under /tmp shows its host content"
zb --allow-read="$WORK/rd" -- "$PROBE" read "$WORK/userdata.txt"; expect_rc_in "2 13" "... but not the rest of /tmp"
echo x >"$HOME/.profile-zbint"
zb "$AR" -- "$PROBE" read "$HOME/.profile-zbint"; expect_rc_in "2 13" "HOME is unreadable under --allow-read"
zb "$AR" -- "$PROBE" read "$TESTDIR/lib.sh"; expect_rc_in "2 13" "the source tree is unreadable under --allow-read"
zb "$AR" -- "$PROBE" read /etc/passwd;      expect_rc 0 "/etc stays readable under --allow-read"
zb "$AR" -- sh -c 'echo via-sh; /usr/bin/env true && ls /bin/sh >/dev/null && echo ok'
expect_rc 0 "/bin/sh, /usr and /bin work under --allow-read"
expect_out "via-sh
ok" "shell output under --allow-read"
zb "$AR" -- sh -c "echo t > /tmp/zbint && cat /tmp/zbint"; expect_out t "/tmp stays usable (scratch) under --allow-read"
zb "$AR" -- "$PROBE" read /etc/hostname; expect_rc 0 "the command's own binary and /etc run under --allow-read"
zb "$AR" --allow-write="$D/cwd" -- sh -c "echo w > '$D/cwd/w' && cat '$D/cwd/w'"
expect_out w "--allow-write paths are readable under --allow-read"
zb --allow-read="$D/pub/p.txt" -- "$PROBE" read "$D/pub/p.txt"; expect_out public "--allow-read of a single file"
zb --allow-read="$D/pub/p.txt" -- "$PROBE" read "$D/pub/abs-ln"; expect_rc_in "2 13" "--allow-read of a file: its siblings stay hidden"

# The default store (~/.local/state/zerobox: ZEROBOX_HOME is unset here) is masked where
# the view shows it; a view without it (--allow-read elsewhere) has nothing to mask there.
# HOME is outside the scratch /tmp here, as a real one is (root's /root).
SH=$HOSTDIR/storehome
mkdir -p "$SH" "$HOSTDIR/snapd"
zsh_() { run env HOME="$SH" "$ZEROBOX" "$@"; }
pushd "$HOSTDIR/snapd" >/dev/null || fail "cannot cd"
zsh_ --snapshot --allow-write=. -- sh -c 'echo s > f'; expect_rc 0 "a --snapshot run makes the default store"
popd >/dev/null || true
expect_present "$SH/.local/state/zerobox/journal.db" "the default store is ~/.local/state/zerobox"
zsh_ "$AR" -- "$PROBE" read "$D/pub/p.txt"; expect_rc 0 "--allow-read runs once the default store exists"
expect_out public "--allow-read with the default store: content"
zsh_ --allow-read="$SH" -- "$PROBE" read "$SH/.local/state/zerobox/journal.db"
expect_rc_in "2 13" "the store is unreadable when --allow-read shows HOME"
zsh_ --allow-read="$SH" --allow-write -- "$PROBE" create "$SH/.local/state/zerobox/x"
expect_refused "the store is not writable with --allow-read=HOME and a bare --allow-write"
zsh_ -- "$PROBE" read "$SH/.local/state/zerobox/journal.db"; expect_rc_in "2 13" "the store is unreadable by default"

# A --deny-read path that is a dangling symlink holds nothing to hide: the run starts.
ln -sfn missing-target "$D/dangling-denied"
zb --deny-read="$D/dangling-denied" -- "$PROBE" read "$D/dangling-denied"
expect_rc_in "2 13" "--deny-read of a dangling symlink: the run starts, nothing is read"

# A --deny-read file in a directory with mounts below it (walked as a skeleton, as / is),
# replaced on the host over and over (a tool refreshing a token: write, then rename).
# Root only: the mount below is made in a mount namespace of its own, so that the tests
# running beside this one never see it.
if [ "$MODE" = root ] && command -v unshare >/dev/null; then
  # Not under the scratch /tmp or /var/tmp, which start empty when the host has mounts
  # below them: the file would not be shown at all.
  base=$HOSTDIR
  case "$HOSTDIR" in /tmp/* | /var/tmp/* | /dev/shm/*) base=/srv ;; esac
  SK=$(mktemp -d "$base/zbint-skel.XXXXXX")
  mkdir -p "$SK/m"
  echo TOPSECRET >"$SK/token"
  ( while [ -d "$SK" ]; do echo TOPSECRET >"$SK/token.new" 2>/dev/null && mv -f "$SK/token.new" "$SK/token" 2>/dev/null; done ) &
  flipper=$!
  # 40 starts for 12000 race rounds (the stress setting), at least 10.
  starts=$(( ${ZEROBOX_RACE_ROUNDS:-12000} / 300 ))
  [ "$starts" -ge 10 ] || starts=10
  run unshare --mount --propagation private sh -c '
    mount -t tmpfs zbint "$1/m" || exit 99
    case "$("$2" -- cat "$1/token" 2>&1)" in *TOPSECRET*) ;; *) echo "the file is not shown without --deny-read"; exit 1 ;; esac
    leaks=0 fails=0
    for i in $(seq "$3"); do
      out=$("$2" --deny-read="$1/token" -- cat "$1/token" 2>&1)
      rc=$?
      case "$out" in *TOPSECRET*) leaks=$((leaks + 1)) ;; esac
      [ $rc -eq 1 ] || fails=$((fails + 1))
    done
    echo "leaks=$leaks other-exits=$fails"' sh "$SK" "$ZEROBOX" "$starts"
  kill "$flipper" 2>/dev/null
  wait "$flipper" 2>/dev/null
  expect_out "leaks=0 other-exits=0" "--deny-read of a file the host keeps replacing: never read, and every run starts ($starts runs)"
  rm -rf "$SK"
fi

finish
