#!/usr/bin/env bash
# A 64 MiB file is cut into 64 tiles of 1 MiB that land on all four
# datanodes as plain files named DATA/tiles/<ino % 256>/<ino>.<tile>.<version>
# under STATE/node<i>/, each holding exactly its slice of the file. With the
# cluster's default copies=2 every tile is two such files (each replica its
# own version) on two distinct datanodes.
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

# Tile t is the t-th MiB of the file on exactly two distinct nodes (copies=2,
# the cluster's default): two files, each replica with its own version.
copies=2
for ((tile = 0; tile < tiles; tile++)); do
    holder_files=("$STATE"/node*/tiles/"$bucket"/"$ino"."$tile".*[0-9]) # not the .crc sidecars
    [ "${#holder_files[@]}" = "$copies" ] ||
        fail "tile $tile of inode $ino has ${#holder_files[@]} tile files, expected $copies: ${holder_files[*]:-none}"
    holder_nodes=$(for file in "${holder_files[@]}"; do echo "${file%%/tiles/*}"; done | sort -u | wc -l)
    [ "$holder_nodes" = "$copies" ] ||
        fail "tile $tile's $copies replicas are on $holder_nodes distinct nodes: ${holder_files[*]}"
    dd if="$source_file" bs=1M skip="$tile" count=1 status=none of="$SHM/slice"
    for file in "${holder_files[@]}"; do
        [ "$(stat -c %s "$file")" = 1048576 ] ||
            fail "$file holds $(stat -c %s "$file") bytes, expected 1048576"
        cmp "$SHM/slice" "$file" >/dev/null || fail "$file is not MiB $tile of the file"
        [ -f "$file.crc" ] || fail "$file has no checksums beside it ($file.crc)"
    done
done
log "all $tiles tiles found on $copies nodes each, every replica a plain 1 MiB slice of the file"

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
while [ "$(tiles_left)" != $(((tiles - 15) * copies * 2)) ] && (($(now_ms) < deadline)); do sleep 0.2; done
[ "$(tiles_left)" = $(((tiles - 15) * copies * 2)) ] ||
    fail "$(tiles_left) tile files and sidecars after punching 15 whole tiles, expected $(((tiles - 15) * copies * 2))"
log "punching 16 MiB at 8 MiB + 4 KiB freed the 15 whole tiles inside it, every replica"

# rm reclaims the tiles: meta queues them as garbage and each datanode
# deletes them a slice at a time between its requests (datanode/heartbeat.c).
rm "$MNT/spread" || fail "rm failed"
deadline=$(($(now_ms) + 30000))
while [ "$(tiles_left)" != 0 ] && (($(now_ms) < deadline)); do sleep 0.2; done
[ "$(tiles_left)" = 0 ] || fail "$(tiles_left) tile files of the removed file remain after 30 s"
log "all $tiles tile files deleted after rm"

assert_daemons_alive
log "ok"
