#!/usr/bin/env bash
# Two mounts of one cluster see each other's changes: files written on one
# are read on the other and vice versa, a file appended on one is read whole
# on the other after close, bytes changed in place on one are read on the
# other even where it kept its cached pages across opens, renames and
# removals show up. Changes may take
# the kernel's attribute/entry cache lifetime to appear, so each check polls
# with a deadline and reports how long it took.
source "$(dirname "$0")/lib.sh"

cluster_up

MNT2=$T/mnt2
mount_second "$MNT2"

visible_window_s=5 # longer than any attribute/entry cache timeout a mount should use

# appears CMD...: poll until CMD succeeds, then log how long it took.
appears() {
    local what=$1 start
    shift
    start=$(now_ms)
    wait_for "$visible_window_s" "$what" "$@"
    log "$what: seen after $(($(now_ms) - start)) ms"
}

# Written on mount 1, read on mount 2.
one=$(random_file 3M)
cp "$one" "$MNT/from-one" || fail "write on mount 1 failed"
appears "from-one on mount 2" cmp "$one" "$MNT2/from-one"

# Written on mount 2, read on mount 1.
two=$(random_file 5000001)
cp "$two" "$MNT2/from-two" || fail "write on mount 2 failed"
appears "from-two on mount 1" cmp "$two" "$MNT/from-two"

# Appended on one mount after the other has read (and cached) the file.
cat "$MNT2/from-one" >/dev/null
extra=$(random_file 1500000)
cat "$extra" >>"$MNT/from-one" || fail "append on mount 1 failed"
cat "$one" "$extra" >"$SHM/expected-one"
appears "append on mount 1 read on mount 2" cmp "$SHM/expected-one" "$MNT2/from-one"

# Overwritten in the middle on mount 2, read on mount 1 after close.
dd if="$extra" of="$MNT2/from-two" bs=1000 count=1 seek=1048 conv=notrunc status=none ||
    fail "overwrite on mount 2 failed"
cp "$two" "$SHM/expected-two"
dd if="$extra" of="$SHM/expected-two" bs=1000 count=1 seek=1048 conv=notrunc status=none
appears "overwrite on mount 2 read on mount 1" cmp "$SHM/expected-two" "$MNT/from-two"

# Mount 1 keeps the pages it cached across opens while no one changes the
# file (fincore's own open would drop them otherwise), and drops them at
# its first open after mount 2 changed bytes in place (same size).
cat "$MNT/from-two" >/dev/null || fail "read on mount 1 failed"
cached=$(fincore -b -n -o RES "$MNT/from-two")
[ "${cached:-0}" -gt 0 ] || fail "mount 1 dropped at open the cached pages of an unchanged file"
dd if="$one" of="$MNT2/from-two" bs=4096 count=1 seek=10 conv=notrunc status=none ||
    fail "second overwrite on mount 2 failed"
dd if="$one" of="$SHM/expected-two" bs=4096 count=1 seek=10 conv=notrunc status=none
appears "overwrite on mount 2 of pages mount 1 keeps" cmp "$SHM/expected-two" "$MNT/from-two"

# Appended on mount 2, a file mount 1 created.
printf 'line from two\n' >>"$MNT2/from-one"
printf 'line from two\n' >>"$SHM/expected-one"
appears "append on mount 2 read on mount 1" cmp "$SHM/expected-one" "$MNT/from-one"

# A name mount 2 just found absent (an answer it may cache) that mount 1 then
# creates: open(O_CREAT) without O_EXCL on mount 2 opens mount 1's file.
test ! -e "$MNT2/later" || fail "later exists before it was created"
printf 'one\n' >"$MNT/later" || fail "create on mount 1 failed"
printf 'two\n' >>"$MNT2/later" || fail "append on mount 2 to the file mount 1 created failed"
printf 'one\ntwo\n' >"$SHM/expected-later"
appears "append on mount 2 to a name it had seen absent" cmp "$SHM/expected-later" "$MNT/later"

# Namespace changes.
mkdir -p "$MNT/dir-one/sub"
printf 'x\n' >"$MNT/dir-one/sub/file"
appears "mkdir on mount 1 seen on mount 2" test -f "$MNT2/dir-one/sub/file"
mv "$MNT2/dir-one" "$MNT2/dir-renamed"
appears "rename on mount 2 seen on mount 1" test -f "$MNT/dir-renamed/sub/file"
appears "old name gone on mount 1" test ! -e "$MNT/dir-one"
rm "$MNT/from-two"
appears "unlink on mount 1 seen on mount 2" test ! -e "$MNT2/from-two"
rm -r "$MNT2/dir-renamed"
appears "rm -r on mount 2 seen on mount 1" test ! -e "$MNT/dir-renamed"

# Mount 2 unmounts cleanly and its process exits 0.
fusermount3 -u "$MNT2" || fail "fusermount3 -u of the second mount failed"
deadline=$(($(now_ms) + 10000))
while kill -0 "$MOUNT2_PID" 2>/dev/null; do
    (($(now_ms) < deadline)) || fail "second tessera-mount still running 10 s after unmount"
    sleep 0.1
done
rc=0
wait "$MOUNT2_PID" || rc=$?
[ "$rc" = 0 ] || fail "second tessera-mount exited with $rc after unmount: $(tail -n 20 "$T/mount2.log")"

assert_daemons_alive
log "ok"
