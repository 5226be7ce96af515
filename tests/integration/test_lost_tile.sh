#!/usr/bin/env bash
# A tile meta maps as written but its datanode lacks is an error, never a
# hole: deleting one tile file makes reads of it (cat, dd through the page
# cache and with O_DIRECT, over the tile stream and over ZeroMQ) fail with
# EIO, and the mount's log names the inode, the tile and the datanode (id
# and address); the file's other tiles still read right. Real holes still
# read as zeros: a sparse file's never-written tiles, tiles allocated ahead
# by a sequential writer and then taken inside the file by truncate -s.
# A datanode whose data directory is wiped and restarted comes back as a
# new node (meta says so), not as the old one with its tiles gone: reads of
# the old node's tiles fail with EIO, other files read right; one that lost
# only its node.id is known by its identity and comes back as itself. A
# directory that claims a registered node's id (node.id kept) with another
# identity is refused by meta, and the datanode stops, both saying why; one
# whose tiles directory is gone (node.id and identity kept) does not start.
# Every file here keeps one holder per tile (copies=1 on the mount's root,
# inherited): a lost tile must be an error when no replica can serve it;
# with copies=2 the other replica serves it (test_repair).
source "$(dirname "$0")/lib.sh"

cluster_up
setfattr -n user.tessera.layout -v copies=1 "$MNT" || fail "setting copies=1 on the mount's root failed"
mount_log=$STATE/logs/mount.log
meta_log=$STATE/logs/meta.log

# tile_json FILE: `tessera layout --json` of FILE into $T/layout.json.
tile_json() {
    "$TESSERA_TOOL" layout show "$1" --json --state "$STATE" >"$T/layout.json" 2>"$T/layout.err" ||
        fail "tessera layout show $1 failed: $(cat "$T/layout.err")"
}
# field_of FILE TILE FIELD: one field of a tile's record in `tessera layout --json`.
field_of() {
    tile_json "$1"
    python3 -c 'import json, sys
tiles = json.load(open(sys.argv[1]))["tiles"]
value = [t for t in tiles if t["tile"] == int(sys.argv[2])][0][sys.argv[3]]
print(str(value).lower())' "$T/layout.json" "$2" "$3"
}
# all_stored FILE FIRST LAST: tiles FIRST..LAST of FILE are marked written
# (their datanodes reported them in a heartbeat).
all_stored() {
    tile_json "$1"
    python3 -c 'import json, sys
tiles = json.load(open(sys.argv[1]))["tiles"]
want = range(int(sys.argv[2]), int(sys.argv[3]) + 1)
# A build without the field (before lost tiles were errors) never waits.
sys.exit(0 if all(t.get("stored", True) for t in tiles if t["tile"] in want) else 1)' \
        "$T/layout.json" "$2" "$3"
}
# holder_of FILE TILE: the data directory (nodeK) holding the tile's file,
# "" when none does.
holder_of() {
    local ino files
    ino=$(stat -c %i "$1")
    shopt -s nullglob
    files=("$STATE"/node*/tiles/$((ino % 256))/"$ino.$2".*[0-9]) # not the .crc sidecars
    shopt -u nullglob
    [ "${#files[@]}" = 1 ] || return 0
    echo "${files[0]}" | sed -e "s|^$STATE/||" -e 's|/.*||'
}
# node_dir_of FILE TILE: as holder_of, failing the test unless one holds it.
node_dir_of() {
    local dir
    dir=$(holder_of "$1" "$2")
    [ -n "$dir" ] || fail "no single datanode holds tile $2 of $1"
    NODE_DIR=$dir
}
# expect_eio WHAT COMMAND...: COMMAND fails with EIO within 30 s.
expect_eio() {
    local what=$1 rc=0
    shift
    timeout -k 5 30 "$@" >/dev/null 2>"$T/eio.err" || rc=$?
    [ "$rc" -lt 124 ] || fail "$what hung"
    [ "$rc" != 0 ] || fail "$what succeeded: a lost tile read as data (zeros?)"
    grep -q 'Input/output error' "$T/eio.err" ||
        fail "$what failed with '$(cat "$T/eio.err")', expected EIO"
}

# ---- one tile file deleted ------------------------------------------------
lost=$(random_file 8M)
cp "$lost" "$MNT/lost" || fail "cp into the mount failed"
kept=$(random_file 3M)
cp "$kept" "$MNT/kept" || fail "cp into the mount failed"
# A sparse file: tiles 0 and 5 written, 1-4 never (allocated ahead by the
# sequential writer of tile 0: meta maps them, no datanode has them), then
# extended to 20 MiB, which takes more tiles allocated ahead inside the file.
head -c 1M /dev/urandom >"$SHM/sparse"
dd if=/dev/urandom of="$SHM/sparse" bs=1M seek=5 count=1 conv=notrunc status=none
truncate -s 20M "$SHM/sparse"
dd if="$SHM/sparse" of="$MNT/sparse" bs=1M count=1 status=none || fail "dd into the mount failed"
dd if="$SHM/sparse" of="$MNT/sparse" bs=1M skip=5 seek=5 count=1 conv=notrunc status=none ||
    fail "dd into the mount failed"
truncate -s 20M "$MNT/sparse" || fail "truncate -s 20M failed"
sync "$MNT/lost" "$MNT/kept" "$MNT/sparse" || fail "fsync failed"
wait_for 30 "meta to know every tile of lost as written" all_stored "$MNT/lost" 0 7
wait_for 30 "meta to know the written tiles of sparse" all_stored "$MNT/sparse" 5 5
# The holes that matter: tiles meta maps (allocated ahead) that no datanode
# has, inside the file. They must read as zeros below.
tile_json "$MNT/sparse"
ahead=$(python3 -c 'import json, sys
tiles = json.load(open(sys.argv[1]))["tiles"]
print(" ".join(str(t["tile"]) for t in tiles if t["node"] and not t.get("stored")))' "$T/layout.json")
[ -n "$ahead" ] || fail "no tile of sparse is mapped but unwritten: the test no longer covers holes meta maps"
log "tiles of sparse mapped but never written: $ahead"

ino=$(stat -c %i "$MNT/lost")
victim_tile=2
node_dir_of "$MNT/lost" $victim_tile
victim_dir=$NODE_DIR
victim_id=$(field_of "$MNT/lost" $victim_tile node)
rm "$STATE/$victim_dir/tiles/$((ino % 256))/$ino.$victim_tile".*
log "deleted tile $victim_tile of inode $ino on $victim_dir (node $victim_id)"
drop_file_cache "$MNT/lost"

expect_eio "dd of the lost tile" dd if="$MNT/lost" of=/dev/null bs=1M skip=$victim_tile count=1
expect_eio "O_DIRECT dd of the lost tile" \
    dd if="$MNT/lost" of=/dev/null bs=1M skip=$victim_tile count=1 iflag=direct
expect_eio "cat of the file with the lost tile" cat "$MNT/lost"
grep -q "inode $ino tile $victim_tile failed: datanode $victim_id (tcp://[^)]*) has no file" \
    "$mount_log" || fail "the mount's log does not name inode $ino, tile $victim_tile and datanode $victim_id: $(grep -i "inode $ino" "$mount_log" | tail -n 3)"
# A small read in the middle of the tile (sieving, or a direct fetch).
expect_eio "4 KiB read inside the lost tile" \
    dd if="$MNT/lost" of=/dev/null bs=4K skip=$((victim_tile * 256 + 7)) count=1
# Over ZeroMQ only (no tile streams), from a second mount.
mount_second "$T/mnt2" --tile-streams 0
expect_eio "dd of the lost tile on a mount without streams" \
    dd if="$T/mnt2/lost" of=/dev/null bs=1M skip=$victim_tile count=1

# The other tiles and files read right, and real holes as zeros.
for tile in 0 1 3 7; do
    dd if="$MNT/lost" of="$SHM/got" bs=1M skip=$tile count=1 iflag=fullblock status=none ||
        fail "read of intact tile $tile failed"
    dd if="$lost" of="$SHM/want" bs=1M skip=$tile count=1 status=none
    cmp -s "$SHM/want" "$SHM/got" || fail "intact tile $tile reads wrong bytes"
done
drop_file_cache "$MNT/sparse"
cmp "$SHM/sparse" "$MNT/sparse" || fail "the sparse file does not read back with zeros in its holes"
cmp "$SHM/sparse" "$T/mnt2/sparse" || fail "the sparse file differs on the second mount"
cmp "$kept" "$MNT/kept" || fail "an untouched file differs"
assert_daemons_alive

# ---- a data directory wiped and restarted ---------------------------------
# The node holding tile 0 of kept: all its tiles are lost with the directory.
node_dir_of "$MNT/kept" 0
wiped_dir=$NODE_DIR
wiped_id=$(field_of "$MNT/kept" 0 node)
# The intact tiles of lost that stay (their holders, taken before the wipe).
surviving=""
for tile in 0 1 3 4 5 6 7; do
    [ "$(holder_of "$MNT/lost" $tile)" = "$wiped_dir" ] || surviving="$surviving $tile"
done
[ -n "$surviving" ] || fail "every intact tile of lost is on $wiped_dir"
pid=$(pid_of "$wiped_dir")
it_pid_is_ours "$pid" || fail "$wiped_dir pid $pid is not a daemon of this test"
kill -TERM "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
find "$STATE/$wiped_dir" -mindepth 1 -delete
log "wiped the data directory of $wiped_dir (node $wiped_id)"
cluster_restart
grep -q "new datanode [0-9]* at .*, where node $wiped_id was" "$meta_log" ||
    fail "meta did not register the wiped directory as a new node in place of node $wiped_id: $(grep -i 'datanode' "$meta_log" | tail -n 3)"
[ -s "$STATE/$wiped_dir/identity" ] || fail "the restarted datanode made no identity file"
[ "$(cat "$STATE/$wiped_dir/node.id")" != "$wiped_id" ] ||
    fail "the wiped directory came back as node $wiped_id"
drop_file_cache "$MNT/kept"
expect_eio "read of a tile of the wiped node" dd if="$MNT/kept" of=/dev/null bs=1M count=1
expect_eio "read of a tile of the wiped node (second mount)" \
    dd if="$T/mnt2/kept" of=/dev/null bs=1M count=1 iflag=direct
grep -Eq "tile 0 failed: datanode $wiped_id |tile 0 from datanode $wiped_id failed" "$mount_log" ||
    fail "the mount's log does not name datanode $wiped_id for the lost tile 0 of kept"
# Once meta counts the old node down, the mount sends it nothing at all: the
# node at its address is another one.
refused_by_mount() {
    ! dd if="$MNT/kept" of=/dev/null bs=1M count=1 iflag=direct status=none 2>/dev/null &&
        grep -q "datanode $wiped_id is down and its address .* is datanode [0-9]*'s now" "$mount_log"
}
wait_for 30 "the mount to stop sending node $wiped_id's requests to the new node" refused_by_mount
# A file none of whose tiles were there still reads right.
fresh=$(random_file 2M)
cp "$fresh" "$MNT/fresh" || fail "writing a new file after the wipe failed"
drop_file_cache "$MNT/fresh"
cmp "$fresh" "$MNT/fresh" || fail "a file written after the wipe differs"
for tile in $surviving; do
    dd if="$MNT/lost" of="$SHM/got" bs=1M skip=$tile count=1 iflag=fullblock status=none ||
        fail "read of tile $tile of lost (not on the wiped node) failed"
    dd if="$lost" of="$SHM/want" bs=1M skip=$tile count=1 status=none
    cmp -s "$SHM/want" "$SHM/got" || fail "tile $tile of lost reads wrong bytes after the wipe"
done

# ---- a node's own directory without its node.id ----------------------------
# Meta knows the directory by its identity: the same node again, tiles and all.
# A node holding a surviving tile of lost, whose bytes are checked after.
forgetful_tile=${surviving# }
forgetful_tile=${forgetful_tile%% *}
node_dir_of "$MNT/lost" "$forgetful_tile"
forgetful_dir=$NODE_DIR

forgetful_id=$(cat "$STATE/$forgetful_dir/node.id")
pid=$(pid_of "$forgetful_dir")
it_pid_is_ours "$pid" || fail "$forgetful_dir pid $pid is not a daemon of this test"
kill -TERM "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
rm "$STATE/$forgetful_dir/node.id"
cluster_restart
wait_for 30 "$forgetful_dir to save its node id again" test -s "$STATE/$forgetful_dir/node.id"
[ "$(cat "$STATE/$forgetful_dir/node.id")" = "$forgetful_id" ] ||
    fail "$forgetful_dir came back as node $(cat "$STATE/$forgetful_dir/node.id"), not $forgetful_id"
grep -q "has no node.id but the data directory of node $forgetful_id" "$meta_log" ||
    fail "meta did not log that it knew $forgetful_dir by its identity"
dd if="$MNT/lost" of="$SHM/got" bs=1M skip="$forgetful_tile" count=1 iflag=direct,fullblock \
    status=none ||
    fail "read of tile $forgetful_tile on $forgetful_dir failed after it came back without node.id"
dd if="$lost" of="$SHM/want" bs=1M skip="$forgetful_tile" count=1 status=none
cmp -s "$SHM/want" "$SHM/got" ||
    fail "tile $forgetful_tile on $forgetful_dir reads wrong bytes after it came back without node.id"
log "$forgetful_dir without node.id came back as node $forgetful_id"

# ---- another identity under a registered node's id --------------------------
for candidate in node1 node2 node3 node4; do
    [ "$candidate" != "$wiped_dir" ] && [ "$candidate" != "$forgetful_dir" ] &&
        impostor_dir=$candidate && break
done
impostor_id=$(cat "$STATE/$impostor_dir/node.id")
pid=$(pid_of "$impostor_dir")
it_pid_is_ours "$pid" || fail "$impostor_dir pid $pid is not a daemon of this test"
kill -TERM "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
# Another directory claiming the id: its own (empty) tiles, the node.id of
# node $impostor_id, an identity of its own (made at start).
find "$STATE/$impostor_dir" -mindepth 1 -delete
echo "$impostor_id" >"$STATE/$impostor_dir/node.id"
mkdir -m 0700 "$STATE/$impostor_dir/tiles"
log "$impostor_dir: another data directory with node $impostor_id's node.id; restarting"
run_tool up --state "$STATE" || log "tessera up did not bring $impostor_dir up (expected)"
node_log=$STATE/logs/$impostor_dir.log
wait_for 30 "$impostor_dir to log meta's refusal" grep -q "meta refuses this datanode" "$node_log"
grep -q "is not the one node $impostor_id registered with" "$node_log" ||
    fail "the datanode's log does not say why meta refused it: $(tail -n 3 "$node_log")"
grep -q "refused a heartbeat: .* is not the one node $impostor_id registered with" "$meta_log" ||
    fail "meta's log does not say why it refused node $impostor_id"
# `tessera up` saw it stop before it was ready, and dropped its pid file.
pid=$(cat "$STATE/run/$impostor_dir.pid" 2>/dev/null || true)
[ -z "$pid" ] || wait_for 30 "the refused datanode to stop" sh -c "! kill -0 $pid 2>/dev/null"
grep -q "stopping: meta does not take data directory" "$node_log" ||
    fail "the refused datanode did not stop: $(tail -n 3 "$node_log")"
assert_daemons_alive "$impostor_dir"
log "node $impostor_id with another data directory was refused and stopped"

# ---- the tiles gone, node.id and identity kept -------------------------------
for candidate in node1 node2 node3 node4; do
    [ "$candidate" != "$wiped_dir" ] && [ "$candidate" != "$forgetful_dir" ] &&
        [ "$candidate" != "$impostor_dir" ] && emptied_dir=$candidate && break
done
pid=$(pid_of "$emptied_dir")
it_pid_is_ours "$pid" || fail "$emptied_dir pid $pid is not a daemon of this test"
kill -TERM "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
rm -rf "$STATE/$emptied_dir/tiles"
log "$emptied_dir: tiles directory removed, node.id and identity kept; restarting"
run_tool up --state "$STATE" || log "tessera up did not bring $emptied_dir up (expected)"
emptied_log=$STATE/logs/$emptied_dir.log
wait_for 30 "$emptied_dir to refuse to start" grep -q "tiles is missing, but .* they are all lost" \
    "$emptied_log"
[ ! -d "$STATE/$emptied_dir/tiles" ] || fail "$emptied_dir made a new, empty tiles directory"
pid=$(cat "$STATE/run/$emptied_dir.pid" 2>/dev/null || true)
[ -z "$pid" ] || wait_for 30 "$emptied_dir to stop" sh -c "! kill -0 $pid 2>/dev/null"
log "$emptied_dir without its tiles refused to start"
