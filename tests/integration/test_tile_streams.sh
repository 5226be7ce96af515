#!/usr/bin/env bash
# Tiles over the datanodes' tile streams (their local Unix sockets, TCP
# after a failure; sendfile and splice, no copies on the way): a file written through the streams and read back
# whole (alone, and with another file read at once, which splices them),
# the datanodes dropping from their page cache what a buffered reader
# caches but keeping what an O_DIRECT one read,
# in unaligned pieces across tile edges and with holes compares
# equal with its pages dropped; writes in place land; a datanode restarted
# on a new stream port, and garbage sent to a stream, change nothing; the
# mount's log counts the streamed reads and writes, the datanodes' the
# tiles they read whole after small reads; a mount with
# --tile-streams 0 reads the same bytes over ZeroMQ only.
# The first file keeps one holder per tile (copies=1): the page cache check
# counts the datanodes' cache of what one reader read, and a second replica,
# written but never read, would stay cached beside it. The second file has
# the cluster's copies=2, so streamed writes and reads of replicas are
# covered too.
source "$(dirname "$0")/lib.sh"

cluster_up

src=$(random_file 12M)
touch "$MNT/f" && setfattr -n user.tessera.layout -v copies=1 "$MNT/f" ||
    fail "setting copies=1 on the first file failed"
cp "$src" "$MNT/f" || fail "cp into the mount failed"
drop_file_cache "$MNT/f"
cmp "$src" "$MNT/f" || fail "a 12 MiB file read back over the streams differs"

# The datanodes' page cache after a read: a buffered reader's page cache
# holds the bytes, so the datanodes drop theirs (one machine, one copy);
# an O_DIRECT reader caches nothing, so they keep them.
datanodes_cached_kib() {
    find "$STATE"/node*/tiles -type f -print0 | xargs -0 -r fincore -b -n -o RES |
        awk '{sum += $1} END {print int(sum / 1024)}'
}
datanodes_cache_at_most() { [ "$(datanodes_cached_kib)" -le "$1" ]; }
if [ "$(stat -f -c %T "$STATE")" = tmpfs ]; then
    log "datanodes on tmpfs: their page cache is their disk, nothing to drop"
else
    wait_for 5 "the datanodes to drop what a buffered reader cached" datanodes_cache_at_most 2048
    dd if="$MNT/f" of=/dev/null bs=1M iflag=direct status=none || fail "an O_DIRECT read failed"
    kept=$(datanodes_cached_kib)
    [ "$kept" -ge $((10 * 1024)) ] ||
        fail "after an O_DIRECT read of 12 MiB the datanodes cache only $kept KiB of it"
    log "datanodes' page cache: <= 2 MiB after a buffered read, $kept KiB after an O_DIRECT one"
fi

# Reads that start and end inside tiles, and span tile edges.
check_pieces() {
    local bs skip
    for piece in "300000 7" "1048577 3" "65536 100" "2097152 2" "131072 0"; do
        read -r bs skip <<<"$piece"
        drop_file_cache "$MNT/f"
        cmp <(dd if="$src" bs="$bs" skip="$skip" count=3 status=none) \
            <(dd if="$MNT/f" bs="$bs" skip="$skip" count=3 status=none) ||
            fail "dd bs=$bs skip=$skip of the mount differs from the source ($1)"
    done
}
check_pieces "streams up"

# Two readers at once: each reads over the streams, spliced into the kernel
# (as a lone one does: see the second mount below).
src2=$(random_file 12M)
cp "$src2" "$MNT/g" || fail "cp of a second file into the mount failed"
drop_file_cache "$MNT/f"
drop_file_cache "$MNT/g"
cmp "$src" "$MNT/f" & first=$!
cmp "$src2" "$MNT/g" & second=$!
wait "$first" || fail "the first of two files read at once differs"
wait "$second" || fail "the second of two files read at once differs"

# Short O_DIRECT reads (no pipe: received into memory over the stream).
for skip in 0 255 256 2999; do
    cmp <(dd if="$src" bs=4096 skip="$skip" count=2 status=none) \
        <(dd if="$MNT/f" bs=4096 skip="$skip" count=2 iflag=direct status=none) ||
        fail "an O_DIRECT read of 8 KiB at block $skip differs"
done

# Small O_DIRECT reads of one tile out of order, as random reads come: the
# datanode reads the rest of the tile ahead after the second (counted below).
for skip in 2999 2990 2995; do
    cmp <(dd if="$src2" bs=4096 skip="$skip" count=1 status=none) \
        <(dd if="$MNT/g" bs=4096 skip="$skip" count=1 iflag=direct status=none) ||
        fail "an O_DIRECT read of 4 KiB at block $skip of the second file differs"
done

# Writes in place, unaligned, across a tile edge, after the file is whole.
printf 'tessera-in-place' | dd of="$MNT/f" bs=1 seek=$((3 * 1048576 - 7)) conv=notrunc status=none ||
    fail "a write in place failed"
printf 'tessera-in-place' | dd of="$src" bs=1 seek=$((3 * 1048576 - 7)) conv=notrunc status=none
sync "$MNT/f"
drop_file_cache "$MNT/f"
cmp "$src" "$MNT/f" || fail "a write in place across a tile edge did not land"

# A sparse file: tiles never written read as zeros, also mid-read.
local_sparse="$T/sparse"
for file in "$local_sparse" "$MNT/sparse"; do
    dd if="$src" of="$file" bs=1M count=1 status=none conv=notrunc || fail "writing $file"
    dd if="$src" of="$file" bs=1M count=1 seek=5 skip=2 status=none conv=notrunc ||
        fail "writing $file past a hole"
done
drop_file_cache "$MNT/sparse"
cmp "$local_sparse" "$MNT/sparse" || fail "a sparse file reads back differently"

# Garbage on a stream: the datanode closes that connection and goes on.
port=$(sed -n 's/.*tile stream on TCP port \([0-9]*\).*/\1/p' "$STATE/logs/node1.log" | tail -n 1)
[ -n "$port" ] && [ "$port" != 0 ] || fail "node1 logged no tile stream port"
exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "cannot connect to node1's stream on port $port"
head -c 4096 /dev/urandom >&3
exec 3>&-
sleep 0.2
assert_daemons_alive
check_pieces "after garbage on node1's stream"

# A datanode restarted listens on another port: the mount asks again.
node2_pid=$(pid_of node2)
kill "$node2_pid"
wait_for 10 "node2 to stop" bash -c "! kill -0 $node2_pid 2>/dev/null"
cluster_restart
wait_for 30 "node2 to log its stream again" \
    bash -c "[ \$(grep -c 'tile stream on TCP port' '$STATE/logs/node2.log') -ge 2 ]"
check_pieces "after node2 restarted"
drop_file_cache "$MNT/f"
cmp "$src" "$MNT/f" || fail "the file differs after node2 restarted"

# A lone sequential reader's tiles come over the streams too: a fresh mount
# reads the 12 MiB file alone, twice, and splices most of its tiles (the
# first reads to each datanode go over ZeroMQ while its port is asked).
mount_second "$T/mnt2"
for pass in 1 2; do
    drop_file_cache "$T/mnt2/f"
    cmp "$src" "$T/mnt2/f" || fail "the file read alone by a second mount differs (pass $pass)"
done
fusermount3 -u "$T/mnt2" || fail "unmount of the second mount failed"
wait "$MOUNT2_PID" 2>/dev/null || true
lone=$(sed -n 's/.*tile streams: [0-9]* reads (\([0-9]*\) spliced.*/\1/p' "$T/mount2.log" | tail -n 1)
[ -n "$lone" ] && [ "$lone" -ge 12 ] ||
    fail "a lone reader of 2 x 12 tiles spliced ${lone:-no} reads over the streams (want 12 or more)"
log "a lone reader of 2 x 12 tiles spliced $lone reads"

# Over ZeroMQ only, the same bytes.
mount_second "$T/mnt2" --tile-streams 0
drop_file_cache "$T/mnt2/f"
cmp "$src" "$T/mnt2/f" || fail "the file read with --tile-streams 0 differs"
fusermount3 -u "$T/mnt2" || fail "unmount of the second mount failed"
wait "$MOUNT2_PID" 2>/dev/null || true
! grep -q 'tile streams:' "$T/mount2.log" ||
    fail "the mount with --tile-streams 0 used the streams"

cluster_down
streamed=$(sed -n 's/.*tile streams: \([0-9]*\) reads.*/\1/p' "$STATE/logs/mount.log" | tail -n 1)
[ -n "$streamed" ] || fail "the mount logged no tile stream counts at exit"
[ "$streamed" -gt 0 ] || fail "no read came over the tile streams"
spliced=$(sed -n 's/.*tile streams: [0-9]* reads (\([0-9]*\) spliced.*/\1/p' "$STATE/logs/mount.log" | tail -n 1)
[ -n "$spliced" ] && [ "$spliced" -gt 0 ] || fail "no read was spliced into the kernel"
written=$(sed -n 's/.*tile streams: .* reads (.*), \([0-9]*\) writes.*/\1/p' "$STATE/logs/mount.log" | tail -n 1)
[ -n "$written" ] && [ "$written" -gt 0 ] || fail "no write went over the tile streams"
# Every datanode is on this machine: the mount connected to their local
# sockets, never over TCP.
read -r local tcp < <(sed -n 's/.*connections: \([0-9]*\) local, \([0-9]*\) TCP.*/\1 \2/p' \
    "$STATE/logs/mount.log" | tail -n 1)
[ -n "$local" ] && [ "$local" -gt 0 ] && [ "$tcp" = 0 ] ||
    fail "the mount made ${local:-no} local and ${tcp:-no} TCP stream connections (want some, and no TCP)"
log "$(grep -o 'tile streams:.*' "$STATE/logs/mount.log" | tail -n 1)"
# Small reads of a tile, close together: the datanodes read such tiles whole.
warmed=$(cat "$STATE"/logs/node*.log | sed -n 's/.* \([0-9]*\) tiles warmed after small reads.*/\1/p' |
    awk '{sum += $1} END {print sum + 0}')
[ "$warmed" -gt 0 ] || fail "no datanode warmed a tile after the small O_DIRECT reads"
log "$warmed tiles warmed after small reads"
log "ok"
