#!/usr/bin/env bash
# A 64 MiB file is cut into 64 tiles of 1 MiB that land on all four
# datanodes as plain files named DATA/tiles/<ino % 256>/<ino>.<tile>.<version>
# under STATE/node<i>/, each holding exactly its slice of the file.
source "$(dirname "$0")/lib.sh"

cluster_up

tiles=64
source_file=$(random_file ${tiles}M)
cp "$source_file" "$MNT/spread" || fail "cp into the mount failed"
sync "$MNT/spread" || fail "fsync of the file failed"
ino=$(stat -c %i "$MNT/spread")
bucket=$((ino % 256))
log "file inode $ino, tile directory tiles/$bucket"

shopt -s nullglob
node_dirs=("$STATE"/node*/)
[ "${#node_dirs[@]}" = 4 ] || fail "expected 4 node data dirs STATE/node<i>/, found: ${node_dirs[*]:-none}"

# Every file under any tiles/ directory is named from integers only (a tile
# file's checksums beside it add the fixed ".crc").
bad=$(find "$STATE"/node*/tiles -mindepth 1 \( \( -type d ! -regex '.*/tiles/[0-9]+' \) -o \
    \( ! -type d ! -regex '.*/tiles/[0-9]+/[0-9]+\.[0-9]+\.[0-9]+' \
    ! -regex '.*/tiles/[0-9]+/[0-9]+\.[0-9]+\.[0-9]+\.crc' \) \) -print 2>/dev/null | head || true)
[ -z "$bad" ] || fail "tile store holds names that are not <ino%256>/<ino>.<tile>.<version>[.crc]: $bad"

# Each node holds some tiles of this file.
for node_dir in "${node_dirs[@]}"; do
    files=("$node_dir"tiles/"$bucket"/"$ino".*.*[0-9])
    log "$(basename "$node_dir"): ${#files[@]} tile files of inode $ino"
    [ "${#files[@]}" -gt 0 ] || fail "$(basename "$node_dir") holds no tile of the 64 MiB file"
done

# Tile t, newest version, is the t-th MiB of the file, on exactly one node
# (copies=1 is the default layout).
for ((tile = 0; tile < tiles; tile++)); do
    best="" best_version=-1 holders=0
    for file in "$STATE"/node*/tiles/"$bucket"/"$ino"."$tile".*[0-9]; do
        version=${file##*.}
        if [ "$version" -gt "$best_version" ]; then
            best=$file best_version=$version holders=1
        elif [ "$version" -eq "$best_version" ]; then
            holders=$((holders + 1))
        fi
    done
    [ -n "$best" ] || fail "no tile file for tile $tile of inode $ino on any node"
    [ "$holders" = 1 ] || fail "tile $tile version $best_version is on $holders nodes, expected 1"
    [ "$(stat -c %s "$best")" = 1048576 ] ||
        fail "$best holds $(stat -c %s "$best") bytes, expected 1048576"
    dd if="$source_file" bs=1M skip="$tile" count=1 status=none of="$SHM/slice"
    cmp "$SHM/slice" "$best" >/dev/null || fail "$best is not MiB $tile of the file"
    [ -f "$best.crc" ] || fail "$best has no checksums beside it ($best.crc)"
done
log "all $tiles tiles found, each a plain 1 MiB slice of the file"

tiles_left() {
    local left=("$STATE"/node*/tiles/"$bucket"/"$ino".*) # tile files and their .crc
    echo "${#left[@]}"
}

# A punched hole frees its whole tiles on the datanodes (meta queues them as
# garbage, as below) and reads as zeros; the rest of the file is untouched.
# Fails on f4bca11 (fallocate: Operation not supported).
fallocate --punch-hole --offset $((8 * 1048576 + 4096)) --length $((16 * 1048576)) \
    "$MNT/spread" || fail "fallocate --punch-hole failed"
cp "$source_file" "$SHM/punched"
fallocate --punch-hole --offset $((8 * 1048576 + 4096)) --length $((16 * 1048576)) "$SHM/punched"
cmp "$SHM/punched" "$MNT/spread" || fail "the punched file reads differently from a punched local copy"
deadline=$(($(now_ms) + 30000))
while [ "$(tiles_left)" != $((2 * (tiles - 15))) ] && (($(now_ms) < deadline)); do sleep 0.2; done
[ "$(tiles_left)" = $((2 * (tiles - 15))) ] ||
    fail "$(tiles_left) tile files and sidecars after punching 15 whole tiles, expected $((2 * (tiles - 15)))"
log "punching 16 MiB at 8 MiB + 4 KiB freed the 15 whole tiles inside it"

# rm reclaims the tiles: meta queues them as garbage and each datanode
# deletes them a slice at a time between its requests (datanode/heartbeat.c).
rm "$MNT/spread" || fail "rm failed"
deadline=$(($(now_ms) + 30000))
while [ "$(tiles_left)" != 0 ] && (($(now_ms) < deadline)); do sleep 0.2; done
[ "$(tiles_left)" = 0 ] || fail "$(tiles_left) tile files of the removed file remain after 30 s"
log "all $tiles tile files deleted after rm"

assert_daemons_alive
log "ok"
