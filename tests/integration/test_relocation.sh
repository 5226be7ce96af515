#!/usr/bin/env bash
# The FUSE client with tiles that have read copies and tiles that move:
# 1. buddy access: a tile whose primary is on another machine ("far-host")
#    and that has a copy here is read from the copy (the datanodes' read
#    counters say which served it); a mount on far-host reads the primary;
# 2. access profiles: with profiling on, each mount's reads arrive at meta
#    with its machine and its local bytes; a write is counted too;
# 3. a write, and a truncation, reach every holder of the tile, the copy
#    too (it is a replica: kept, not dropped), and every mount then reads
#    the new bytes, this machine from its copy;
# 4. tiles moved between datanodes (the relocation protocol: MOVE_BEGIN,
#    TILE_PULL, fence, MOVE_COMMIT, retire) while a process keeps the file
#    open and rewrites it tile after tile with fsync: no write is lost or
#    applied out of order, and the mount followed the moves;
# 5. a tile frozen by a move that has not committed: a write waits and then
#    succeeds; frozen past the mount's I/O timeout: EIO with a log line.
# Meta and the datanodes are driven with client_helper (CLIENT_HELPER).
# Every file here keeps one holder per tile (copies=1 on the mount's root,
# inherited): the test is about one primary, the read copies made beside
# it and moves of that primary, which a second replica would blur.
source "$(dirname "$0")/lib.sh"

[ -n "${CLIENT_HELPER:-}" ] && [ -x "$CLIENT_HELPER" ] ||
    fail "CLIENT_HELPER is not set to the built client_helper (run through meson test)"

cluster_up
setfattr -n user.tessera.layout -v copies=1 "$MNT" || fail "setting copies=1 on the mount's root failed"
meta=$(meta_endpoint)
host=$(hostname)
here=${host%%.*} # the mount's default --machine (util_machine_name)
far=far-host
MIB=1048576

helper() {
    echo "== client_helper $*" >>"$T/helper.log"
    "$CLIENT_HELPER" "$@" 2>>"$T/helper.log"
}

# A fifth datanode, on "another machine".
far_port=$((BASE + 7))
mkdir -p "$T/far"
mapfile -t far_key < <(key_args far datanode)
mapfile -t mount2_key < <(key_args mount2 mount)
"$TESSERA_DATANODE" --listen "tcp://127.0.0.1:$far_port" --meta "$meta" --data "$T/far/data" \
    --machine "$far" "${far_key[@]}" >"$T/far/datanode.log" 2>&1 &
IT_PIDS+=($!)
wait_for 30 "the datanode on $far to register" grep -q 'registered this datanode as node' \
    "$T/far/datanode.log"
far_node=$(sed -n 's/.*registered this datanode as node \([0-9]*\).*/\1/p' "$T/far/datanode.log" |
    head -n 1)
log "datanode $far_node on machine $far"

# A second mount that says it runs on far-host (debug log: it shows moves).
MNT2=$T/mnt2
mkdir -p "$MNT2"
IT_MOUNTS+=("$MNT2")
"$TESSERA_MOUNT" --meta "$meta" --machine "$far" "${mount2_key[@]}" --io-timeout-ms "$IO_TIMEOUT_MS" \
    --log-level debug -f "$MNT2" >"$T/mount2.log" 2>&1 &
mount2_pid=$!
IT_PIDS+=("$mount2_pid")
deadline=$(($(now_ms) + 30000))
until mountpoint -q "$MNT2"; do
    kill -0 "$mount2_pid" 2>/dev/null || fail "the second tessera-mount exited"
    (($(now_ms) < deadline)) || fail "the second mount at $MNT2 is not up after 30 s"
    sleep 0.1
done

# record INO TILE MACHINE FIELD: one field of the TILE_MAP record as MACHINE
# sees it (1 node, 2 version, 3 copies, 4 read_node, 5 read_version).
record() {
    helper map "$meta" "$1" "$2" "$3" | awk -v f="$4" '{ print $f }'
}
node_reads() { helper node-reads "$meta" "$1"; }

# ---- 1. buddy access ------------------------------------------------------
one=$(random_file 1M)
cp "$one" "$MNT/one"
ino=$(stat -c %i "$MNT/one")
helper move "$meta" "$ino" 0 "$far_node" move >/dev/null || fail "moving tile 0 to $far failed"
helper move "$meta" "$ino" 0 1 copy >/dev/null || fail "copying tile 0 to datanode 1 failed"
[ "$(record "$ino" 0 "$here" 1)" = "$far_node" ] || fail "tile 0's primary is not on $far"
[ "$(record "$ino" 0 "$here" 3)" = 1 ] || fail "tile 0 does not show its copy"
[ "$(record "$ino" 0 "$here" 4)" = 1 ] || fail "meta does not send $here to the copy"
[ "$(record "$ino" 0 "$far" 4)" = "$far_node" ] || fail "meta does not send $far to the primary"
helper profile "$meta" "$ino" start || fail "PROFILE_SET start failed"

copy_before=$(node_reads 1)
far_before=$(node_reads "$far_node")
cmp "$one" "$MNT/one" || fail "reading a tile with a copy here gave other bytes"
copy_read=$(($(node_reads 1) - copy_before))
far_read=$(($(node_reads "$far_node") - far_before))
log "read on $here: $copy_read bytes from the copy here, $far_read from $far"
((copy_read >= MIB)) || fail "the mount on $here did not read the copy here ($copy_read bytes)"
((far_read == 0)) || fail "the mount on $here read $far_read bytes from $far, not from its copy"

cmp "$one" "$MNT2/one" || fail "the mount on $far read other bytes"
far_read=$(($(node_reads "$far_node") - far_before))
((far_read >= MIB)) || fail "the mount on $far did not read its own datanode ($far_read bytes)"

# ---- 2. profiles ------------------------------------------------------------
# Line of PROFILE_GET: tile machine reads writes bytes_read bytes_written
# local_bytes first_access_ns; both mounts send theirs within a second.
profile_has() { helper profile-get "$meta" "$ino" | awk -v m="$1" -v want="$2" \
    '$1 == 0 && $2 == m && $5 >= want && $7 == $5 { found = 1 } END { exit !found }'; }
wait_for 10 "the read counts of $here (all local)" profile_has "$here" "$MIB"
wait_for 10 "the read counts of $far (all local)" profile_has "$far" "$MIB"
log "profile: $(helper profile-get "$meta" "$ino" | tr '\n' ';')"

# ---- 3. writes and truncations reach the copy ----------------------------------
# read_now MOUNT: the file's bytes from the datanodes (no page cache).
read_now() { dd if="$1/one" bs=1M iflag=direct status=none; }
dd if=/dev/urandom of="$SHM/patch" bs=4096 count=1 status=none
dd if="$SHM/patch" of="$MNT/one" bs=4096 seek=3 conv=notrunc,fsync status=none ||
    fail "writing a tile that has a copy failed"
dd if="$SHM/patch" of="$one" bs=4096 seek=3 conv=notrunc status=none
[ "$(record "$ino" 0 "$here" 3)" = 1 ] || fail "the write dropped tile 0's copy (every holder takes writes)"
[ "$(record "$ino" 0 "$here" 4)" = 1 ] || fail "after the write, $here does not read its copy"
read_now "$MNT" | cmp "$one" - || fail "the mount on $here reads old bytes from its copy after its write"
read_now "$MNT2" | cmp "$one" - || fail "the mount on $far reads old bytes after the write"
profile_writes() { helper profile-get "$meta" "$ino" | awk -v m="$here" \
    '$1 == 0 && $2 == m && $4 >= 1 && $6 >= 4096 { found = 1 } END { exit !found }'; }
wait_for 10 "the write counts of $here" profile_writes

truncate -s 300000 "$MNT/one" || fail "truncating a tile that has a copy failed"
truncate -s 300000 "$one"
[ "$(record "$ino" 0 "$here" 3)" = 1 ] || fail "the truncation dropped tile 0's copy (every holder is cut)"
read_now "$MNT" | cmp "$one" - || fail "the mount on $here reads other bytes from its copy after the truncation"
read_now "$MNT2" | cmp "$one" - || fail "the mount on $far reads other bytes after the truncation"
helper profile "$meta" "$ino" stop || fail "PROFILE_SET stop failed"

# ---- 4. moves under a live writer --------------------------------------------
tiles=8
head -c $((tiles * MIB)) /dev/urandom >"$MNT/busy"
busy=$(stat -c %i "$MNT/busy")
"$CLIENT_HELPER" rewrite "$MNT2/busy" "$tiles" 6 >"$T/rewrite.out" 2>"$T/rewrite.err" &
writer=$!
IT_PIDS+=("$writer")
nodes=(1 2 3 4 "$far_node")
moved=0 changed=0 step=0
end=$(($(now_ms) + 5000))
while (($(now_ms) < end)); do
    tile=$((step % tiles))
    to=${nodes[$(((step / tiles + tile * 2) % 5))]}
    step=$((step + 1))
    [ "$(record "$busy" "$tile" "" 1)" = "$to" ] && continue
    rc=0
    helper move "$meta" "$busy" "$tile" "$to" move >/dev/null || rc=$?
    case $rc in
    0) moved=$((moved + 1)) ;;
    3) changed=$((changed + 1)) ;; # written during the move: aborted, as it must be
    *) fail "moving tile $tile of busy to datanode $to failed (see helper.log)" ;;
    esac
done
wait "$writer" || fail "the writer failed while its tiles moved: $(cat "$T/rewrite.err")"
steps=$(cat "$T/rewrite.out")
log "$moved moves committed, $changed aborted (tile written meanwhile), $steps tile writes"
((moved >= 5)) || fail "only $moved moves committed"
((steps >= tiles)) || fail "the writer wrote only $steps tiles"
"$CLIENT_HELPER" verify "$MNT/busy" "$tiles" "$steps" 2>>"$T/helper.log" ||
    fail "after the moves, the file is not what the writer wrote (see helper.log)"
"$CLIENT_HELPER" verify "$MNT2/busy" "$tiles" "$steps" 2>>"$T/helper.log" ||
    fail "after the moves, the writer's mount reads other bytes (see helper.log)"
followed=$(grep -c 'the tile moved to datanode' "$T/mount2.log" || true)
log "the writer's mount followed $followed moved tiles"
((followed >= 1)) || fail "the writer's mount never had to follow a moved tile"

# ---- 5. frozen tiles -----------------------------------------------------------
helper freeze "$meta" "$busy" 0 600 || fail "freezing tile 0 failed"
start=$(now_ms)
dd if="$SHM/patch" of="$MNT/busy" bs=4096 count=1 conv=notrunc,fsync status=none ||
    fail "a write to a tile frozen for 600 ms failed"
waited=$(($(now_ms) - start))
log "a write to a tile frozen for 600 ms took $waited ms"
((waited >= 300)) || fail "the write did not wait for the frozen tile ($waited ms)"

helper freeze "$meta" "$busy" 0 $((IO_TIMEOUT_MS + 3000)) || fail "freezing tile 0 failed"
start=$(now_ms)
if dd if="$SHM/patch" of="$MNT/busy" bs=4096 count=1 conv=notrunc,fsync status=none \
    2>"$T/frozen.err"; then
    fail "a write to a tile frozen past the I/O timeout succeeded"
fi
log "a write to a tile frozen past the I/O timeout failed after $(($(now_ms) - start)) ms: $(cat "$T/frozen.err")"
grep -q 'refuses the tile as moved or being moved.*failing with EIO' "$STATE/logs/mount.log" ||
    fail "the mount did not log why the write failed"
wait_for 10 "a write once the freeze is over" dd if="$SHM/patch" of="$MNT/busy" bs=4096 \
    count=1 conv=notrunc,fsync status=none

assert_daemons_alive
kill -0 "$mount2_pid" || fail "the second mount died"
fusermount3 -u "$MNT2" || fail "unmounting $MNT2 failed"
wait "$mount2_pid" || fail "the second mount exited with an error after unmount"
cluster_down
