#!/usr/bin/env bash
# Issue 34, item 2: a host fetches each tile of a file it reads once,
# however the kernel's read-ahead (32 tiles, sent out of order) and the
# mount's own overlap, and however many readers on the host share the file.
# A second mount with a machine name of its own and no tile streams reads
# as a remote host does (TILE_READ over ZeroMQ, through its tile cache);
# the datanodes are throttled so their replies come slowly, which is when
# the requests overlapped: before the fix such a buffered `dd` made the
# datanodes serve 1.1-1.7x the file. The datanodes' own counters
# (tessera node stats) say what they served.
source "$(dirname "$0")/lib.sh"

cluster_up
mount_second "$T/mnt2" --tile-streams 0 --machine far-away

size_mb=48
file=$(random_file ${size_mb}M)
cp "$file" "$MNT/f" || fail "cp into the mount failed"
sync "$MNT/f" || fail "fsync failed"

nodes="1 2 3 4" # cluster_up starts 4
for node in $nodes; do
    "$TESSERA_TOOL" node throttle "$node" 25 --state "$STATE" >/dev/null ||
        fail "tessera node throttle $node failed"
done

# read_and_count READERS: READERS buffered dd of the file at once on the
# second mount, page cache dropped first; every copy read must be right.
read_and_count() {
    local readers=$1 i pids=()
    datanodes_reset_stats $nodes
    drop_file_cache "$T/mnt2/f"
    for ((i = 0; i < readers; i++)); do
        dd if="$T/mnt2/f" of="$SHM/read$i" bs=1M status=none &
        pids+=($!)
    done
    for ((i = 0; i < readers; i++)); do
        wait "${pids[i]}" || fail "reader $i of $readers failed"
        cmp "$file" "$SHM/read$i" || fail "reader $i of $readers read wrong bytes"
    done
    echo $(($(datanodes_served_bytes $nodes) / 1048576)) # MiB, rounded down
}
for round in 1 2 3; do
    served=$(read_and_count 1)
    log "round $round, one reader: the datanodes served $served MiB for the $size_mb MiB file"
    [ "$served" -le $((size_mb * 105 / 100)) ] ||
        fail "one buffered reader made the datanodes serve $served MiB for a $size_mb MiB file (round $round)"
done
# Three readers at once share the kernel's page cache and the mount's tile
# cache: every tile is fetched once (an open of a file already open here
# used to throw the tile cache away, and 4 of 48 tiles were fetched twice).
served=$(read_and_count 3)
log "three readers at once: the datanodes served $served MiB for the $size_mb MiB file"
[ "$served" -le $((size_mb * 105 / 100)) ] ||
    fail "three readers on one host made the datanodes serve $served MiB for a $size_mb MiB file"

# Close-to-open still holds for a file kept open here: the second mount
# holds the file open (its tiles cached), the first overwrites one tile in
# place and closes, and the next open on the second mount reads the new
# bytes (O_DIRECT: the mount's tile cache, not the kernel's page cache).
exec 7<"$T/mnt2/f"
dd if="$T/mnt2/f" of=/dev/null bs=1M count=4 iflag=direct status=none ||
    fail "reading the first 4 tiles to cache them failed"
patch=$(random_file 1M)
dd if="$patch" of="$MNT/f" bs=1M seek=3 conv=notrunc status=none || fail "overwriting tile 3 failed"
dd if="$T/mnt2/f" of="$SHM/after" bs=1M count=4 iflag=direct status=none ||
    fail "reading after the overwrite failed"
exec 7<&-
cmp -s <(dd if="$SHM/after" bs=1M skip=3 count=1 status=none) "$patch" ||
    fail "an open after another mount's close read the old bytes of tile 3 (its cached tile)"
cmp -s <(dd if="$SHM/after" bs=1M count=3 status=none) <(dd if="$file" bs=1M count=3 status=none) ||
    fail "the tiles before the overwritten one read wrong after it"
log "ok"
