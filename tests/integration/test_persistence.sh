#!/usr/bin/env bash
# Everything survives `tessera down` + `tessera up --state S`: the tree, file
# contents (checksums), sizes, modes, symlinks, hard links, xattrs; the
# restarted cluster keeps working (append, new files) and its tiles are read
# back from the datanodes' disks, not from any cache.
source "$(dirname "$0")/lib.sh"

cluster_up

mkdir -p "$MNT/p/dir/sub" "$MNT/p/empty-dir"
cp "$(random_file 20M)" "$MNT/p/dir/twenty-mib"
cp "$(random_file 1048577)" "$MNT/p/dir/sub/tile-and-one"
head -c 100 /dev/urandom >"$MNT/p/small"
: >"$MNT/p/empty"
dd if=/dev/urandom of="$MNT/p/sparse" bs=4096 count=1 seek=2560 status=none # hole then 4 KiB
ln -s dir/sub "$MNT/p/link"
ln "$MNT/p/small" "$MNT/p/small-hardlink"
chmod 0640 "$MNT/p/small"
if setfattr -n user.color -v blue "$MNT/p/dir/twenty-mib" 2>"$T/xattr.err"; then
    xattrs=1
else
    xattrs=0
    log "note: setfattr on the mount failed ($(cat "$T/xattr.err")); xattrs not checked"
fi
sync -f "$MNT/p" || fail "sync -f on the mount failed"

tree_listing "$MNT/p" >"$T/listing.before"
tree_checksums "$MNT/p" >"$T/sums.before"
log "$(wc -l <"$T/sums.before") files checksummed before down"

cluster_down
log "cluster down; starting it again from $STATE"
cluster_restart

tree_listing "$MNT/p" >"$T/listing.after" || fail "listing the tree after restart failed"
diff "$T/listing.before" "$T/listing.after" >"$T/diff.out" ||
    fail "tree changed across down/up (before <, after >): $(head -n 20 "$T/diff.out")"
tree_checksums "$MNT/p" >"$T/sums.after" || fail "reading files after restart failed"
diff "$T/sums.before" "$T/sums.after" >"$T/diff.out" ||
    fail "file contents changed across down/up: $(head -n 20 "$T/diff.out")"
if [ "$xattrs" = 1 ]; then
    value=$(getfattr --absolute-names --only-values -n user.color "$MNT/p/dir/twenty-mib" \
        2>"$T/xattr.err") || fail "getfattr after restart failed: $(cat "$T/xattr.err")"
    [ "$value" = blue ] || fail "xattr user.color is '$value' after restart, expected 'blue'"
fi

# The restarted cluster takes writes: append to a file, create a new one.
printf 'more\n' >>"$MNT/p/small"
expected_size=$((100 + 5))
[ "$(stat -c %s "$MNT/p/small-hardlink")" = "$expected_size" ] ||
    fail "append after restart: size $(stat -c %s "$MNT/p/small-hardlink"), expected $expected_size"
new_file=$(random_file 3M)
cp "$new_file" "$MNT/p/new-after-restart" || fail "writing a new file after restart failed"
drop_file_cache "$MNT/p/new-after-restart"
cmp "$new_file" "$MNT/p/new-after-restart" || fail "new file written after restart differs"

# A second round, so the state written after a restart also persists.
tree_checksums "$MNT/p" >"$T/sums.before2"
cluster_down
cluster_restart
tree_checksums "$MNT/p" >"$T/sums.after2" || fail "reading files after the second restart failed"
diff "$T/sums.before2" "$T/sums.after2" >"$T/diff.out" ||
    fail "file contents changed across the second down/up: $(head -n 20 "$T/diff.out")"

assert_daemons_alive
log "ok"
