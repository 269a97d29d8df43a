# Writes: refused outside allowed paths (host unchanged byte for byte), --allow-write,
# --deny-write, bare --allow-write, scratch /tmp, /var/tmp and /dev/shm.
. "$(dirname "$0")/lib.sh"

D=$HOSTDIR/data
mkdir -p "$D/sub" "$D/empty" "$D/other"
echo alpha >"$D/a.txt"
echo beta >"$D/sub/b.txt"
echo keep >"$D/ro.txt"
ln -s a.txt "$D/link"
chmod 644 "$D/a.txt"
before=$(tree_state "$HOSTDIR")

# --- Default policy: nothing outside the scratch dirs is writable. ---
zb -- "$PROBE" write "$D/a.txt";            expect_refused "append to an existing file"
zb -- "$PROBE" create "$D/new.txt";         expect_refused "create a file"
zb -- "$PROBE" truncate "$D/a.txt";         expect_refused "truncate a file"
zb -- "$PROBE" chmod "$D/a.txt" 777;        expect_refused "chmod a file"
zb -- "$PROBE" chmod "$D" 777;              expect_refused "chmod a directory"
zb -- "$PROBE" rename "$D/a.txt" "$D/a2";   expect_refused "rename a file"
zb -- "$PROBE" rename "$D/sub" "$D/sub2";   expect_refused "rename a directory"
zb -- "$PROBE" unlink "$D/a.txt";           expect_refused "delete a file"
zb -- "$PROBE" rmdir "$D/empty";            expect_refused "remove an empty directory"
zb -- "$PROBE" mkdir "$D/newdir";           expect_refused "create a directory"
zb -- "$PROBE" symlink /etc/passwd "$D/sl";  expect_refused "create a symlink"
zb -- "$PROBE" write "$D/link";             expect_refused "write through a symlink"
zb -- "$PROBE" write "/proc/self/root$D/a.txt"; expect_refused "write through /proc/self/root"
zb -C "$D" -- "$PROBE" write ./a.txt;       expect_refused "write through a relative path"
zb -- "$PROBE" overwrite "$D/a.txt";        expect_refused "open a file with O_TRUNC"
zb -- "$PROBE" utimes "$D/a.txt";           expect_refused "change a file's times"
zb -- "$PROBE" mkfifo "$D/fifo";            expect_refused "create a FIFO"
zb -- "$PROBE" rename "$D/a.txt" "$D/sub/a.txt"; expect_refused "move a file to another directory"
zb -- "$PROBE" unlink "$D/sub/b.txt";       expect_refused "delete a file in a subdirectory"
# The same through the tools: coreutils exit 1, sh as it does for any failed
# redirection (dash 2, bash 1).
run sh -c "echo x > '$D/no-such-dir/x'";     expect_rc_not 0 "a failed redirection on the host (control)"
sh_rc=$RC
zb -- sh -c "echo x > '$D/a.txt'";          expect_tool_refused "$sh_rc" "shell redirection into a file"
zb -- touch -c -d 2001-01-01 "$D/a.txt";    expect_tool_refused 1 "change a file's times with touch"
zb -- mkfifo "$D/fifo";                     expect_tool_refused 1 "create a FIFO with mkfifo"
zb -- sh -c "cp /etc/hostname '$D/sub/b.txt'"; expect_tool_refused 1 "overwrite a file with cp"
zb -- sh -c "mv -f '$D/a.txt' '$D/sub/'";   expect_tool_refused 1 "move a file with mv"
zb -- sh -c "rm -rf '$D/sub'";              expect_tool_refused 1 "rm -rf a directory"
run "$ZEROBOX" -- sh -c "echo x > /proc/self/fd/0" <"$D/a.txt"
expect_tool_refused "$sh_rc" "reopening stdin (a host file opened read-only) for writing is refused"
zb -- sh -c "ln -s '$D/a.txt' /tmp/zbint-l && echo x > /tmp/zbint-l"
expect_tool_refused "$sh_rc" "writing through a symlink planted in scratch /tmp"
for dir in / /etc /usr /usr/local /var /opt "$HOSTDIR"; do
  f=${dir%/}/zbint-$UNIQ
  zb -- "$PROBE" create "$f";               expect_refused "create $f"
  expect_absent "$f" "no $f on the host"
done
after=$(tree_state "$HOSTDIR")
expect_eq "$after" "$before" "host tree unchanged byte for byte after the escape attempts"

# --- --allow-write=DIR: writes land on the host; other paths stay read-only. ---
zb --allow-write="$D" -- "$PROBE" write "$D/a.txt"; expect_rc 0 "append inside --allow-write"
expect_file_eq "$D/a.txt" "alpha
zb" "the append reached the host"
zb --allow-write="$D" -- sh -c "echo new > '$D/new.txt' && mkdir '$D/nd' && mv '$D/new.txt' '$D/nd/n.txt' && rm '$D/ro.txt' && chmod 600 '$D/a.txt'"
expect_rc 0 "create, mkdir, rename, delete and chmod inside --allow-write"
expect_file_eq "$D/nd/n.txt" new "created and renamed file is on the host"
expect_absent "$D/ro.txt" "deleted file is gone from the host"
expect_eq "$(stat -c %a "$D/a.txt")" 600 "chmod reached the host"
echo keep >"$D/ro.txt"
zb --allow-write="$D/sub" -- "$PROBE" write "$D/a.txt"; expect_refused "a sibling of --allow-write stays read-only"
zb --allow-write="$D/sub" -- "$PROBE" create "$HOSTDIR/x"; expect_refused "the parent of --allow-write stays read-only"
expect_absent "$HOSTDIR/x" "nothing created in the parent"
zb --allow-write="$D/a.txt" -- "$PROBE" write "$D/a.txt"; expect_rc 0 "--allow-write of a single file"
zb --allow-write="$D/a.txt" -- "$PROBE" create "$D/c.txt"; expect_refused "--allow-write of a file does not open its directory"

# --- --deny-write wins inside --allow-write. ---
cp "$D/sub/b.txt" "$WORK/b.orig"
zb --allow-write="$D" --deny-write="$D/sub" -- "$PROBE" write "$D/sub/b.txt"; expect_refused "--deny-write directory: write refused"
zb --allow-write="$D" --deny-write="$D/sub" -- "$PROBE" create "$D/sub/n"; expect_refused "--deny-write directory: create refused"
zb --allow-write="$D" --deny-write="$D/sub" -- "$PROBE" unlink "$D/sub/b.txt"; expect_refused "--deny-write directory: delete refused"
zb --allow-write="$D" --deny-write="$D/sub" -- "$PROBE" rename "$D/sub" "$D/sub.moved"; expect_refused "--deny-write directory: rename refused"
zb --allow-write="$D" --deny-write="$D/sub" -- "$PROBE" write "$D/a.txt"; expect_rc 0 "--deny-write leaves the rest writable"
zb --allow-write="$D" --deny-write="$D/ro.txt" -- "$PROBE" write "$D/ro.txt"; expect_refused "--deny-write file: write refused"
zb --allow-write="$D" --deny-write="$D/ro.txt" -- "$PROBE" truncate "$D/ro.txt"; expect_refused "--deny-write file: truncate refused"
zb --allow-write="$D" --deny-write="$D/ro.txt" -- sh -c "echo evil > '$D/evil' && mv -f '$D/evil' '$D/ro.txt'"
expect_rc_not 0 "--deny-write file: replacing it by rename refused"
zb --allow-write="$D" --deny-write="$D/sub" -- sh -c "mv '$D/sub' '$D/sub.old' || exit 1; mkdir '$D/sub'; echo evil > '$D/sub/b.txt'"
expect_rc_not 0 "--deny-write directory: moving it aside refused"
expect_file_eq "$D/ro.txt" keep "--deny-write file unchanged on the host"
expect_eq "$(cat "$D/sub/b.txt")" "$(cat "$WORK/b.orig")" "--deny-write directory unchanged on the host"
# A denied path that does not exist yet stays denied: an empty anchor stands in for
# it during the run (docs/security.md) and is gone afterwards.
zb --allow-write="$D" --deny-write="$D/later" -- sh -c "echo x > '$D/later'"
expect_rc_not 0 "--deny-write of a path that does not exist yet: creating it is refused"
expect_absent "$D/later" "--deny-write of a missing path: nothing left on the host"
zb --allow-write="$D" --deny-write="$D/laterdir" -- sh -c "mkdir '$D/laterdir' && echo x > '$D/laterdir/f'"
expect_rc_not 0 "--deny-write of a missing directory: creating it is refused"
expect_absent "$D/laterdir" "--deny-write of a missing directory: nothing left on the host"
# Deeper: the missing path's parent is missing too. The command can create the parent,
# not the denied path (the create guard, exec/guard.hpp).
zb --allow-write="$D" --deny-write="$D/newdir/later" -- sh -c "mkdir '$D/newdir' && echo x > '$D/newdir/later'"
expect_rc_not 0 "--deny-write below a missing directory: creating it is refused"
expect_present "$D/newdir" "--deny-write below a missing directory: its parent could be made"
expect_absent "$D/newdir/later" "--deny-write below a missing directory: not on the host"
expect_not_contains "$ERR" "moved it to" "--deny-write below a missing directory: nothing to move aside"
rm -rf "$D/newdir"
# A symlink put on the way to the denied path would bring another directory along.
mkdir -p "$D/q"
zb --allow-write="$D" --deny-write="$D/p/later" -- sh -c "ln -s q '$D/p' && echo x > '$D/p/later'"
expect_rc_not 0 "planted symlink on the way to a denied path: refused"
expect_absent "$D/p" "planted symlink: not on the host"
expect_absent "$D/q/later" "planted symlink: nothing written through it"
rm -rf "$D/q"

# --- A writable path inside /dev/shm (a fresh tmpfs in the sandbox). ---
SHM=$(mktemp -d /dev/shm/zbint.XXXXXX)
zb --allow-write="$SHM" -- sh -c "echo shm > '$SHM/f'"; expect_rc 0 "--allow-write under /dev/shm"
expect_file_eq "$SHM/f" shm "--allow-write under /dev/shm: the write reached the host"
rm -rf "$SHM"

# --- Bare --allow-write: host paths writable. ---
zb --allow-write -- sh -c "echo bare > '$D/bare.txt' && echo tmp > '$WORK/bare-tmp.txt'"
expect_rc 0 "bare --allow-write: writes succeed"
expect_file_eq "$D/bare.txt" bare "bare --allow-write: write reached the host"
expect_file_eq "$WORK/bare-tmp.txt" tmp "bare --allow-write: /tmp is really writable"
zb --allow-write --deny-write="$D/sub" -- "$PROBE" write "$D/sub/b.txt"; expect_refused "bare --allow-write with --deny-write"
zb -A -- sh -c "echo all > '$D/all.txt'"; expect_rc 0 "-A: writes succeed"
expect_file_eq "$D/all.txt" all "-A: write reached the host"

# --- Scratch: /tmp and /var/tmp take writes privately; /dev/shm is fresh. ---
mkdir -p "$WORK/s"
echo host >"$WORK/s/f.txt"
wbefore=$(tree_state "$WORK/s")
zb -- sh -c "cat '$WORK/s/f.txt' && echo inside > '$WORK/s/f.txt' && cat '$WORK/s/f.txt' && echo n > '$WORK/s/n' && rm '$WORK/s/f.txt' && mkdir /tmp/zbint-$UNIQ /var/tmp/zbint-$UNIQ && echo ok"
expect_rc 0 "scratch /tmp and /var/tmp are writable inside"
expect_out "host
inside
ok" "scratch /tmp shows host content and the command's own writes"
expect_eq "$(tree_state "$WORK/s")" "$wbefore" "scratch writes did not reach the host's /tmp"
expect_absent "/tmp/zbint-$UNIQ" "no /tmp entry on the host"
expect_absent "/var/tmp/zbint-$UNIQ" "no /var/tmp entry on the host"
zb -- sh -c "cat /tmp/zbint-$UNIQ-x 2>/dev/null; echo a > /tmp/zbint-$UNIQ-x"; expect_rc 0 "scratch write"
zb -- sh -c "cat /tmp/zbint-$UNIQ-x"; expect_rc_not 0 "scratch writes do not survive into the next run"
zb --allow-write="$WORK/s" -- sh -c "echo real > '$WORK/s/real'"; expect_rc 0 "--allow-write under /tmp"
expect_file_eq "$WORK/s/real" real "--allow-write under /tmp reaches the host"
zb --allow-write="$WORK/s" -- sh -c "echo x > '$WORK/other'"; expect_rc 0 "the rest of /tmp stays scratch"
expect_absent "$WORK/other" "scratch write outside the named /tmp path stays private"

shm=/dev/shm/zbint-$UNIQ
if [ -d /dev/shm ] && echo host >"$shm" 2>/dev/null; then
  T_SHM=$shm
  trap 'rm -f "$T_SHM"; _cleanup' EXIT
  zb -- "$PROBE" ls /dev/shm; expect_rc 0 "list /dev/shm"
  expect_out_empty "/dev/shm starts empty (host files not visible)"
  zb -- sh -c "echo in > /dev/shm/zbint-in-$UNIQ && cat /dev/shm/zbint-in-$UNIQ"; expect_out in "/dev/shm is writable"
  expect_absent "/dev/shm/zbint-in-$UNIQ" "/dev/shm writes do not reach the host"
  expect_file_eq "$shm" host "host /dev/shm file untouched"
  rm -f "$shm"
fi

finish
