#!/usr/bin/env bash
# Placement by live throughput, end to end: `tessera node throttle` slows
# one datanode down at run time and `tessera status` shows it; the layout
# hint user.tessera.layout is set and read through the mount, inherited by
# new files, refused when malformed (EINVAL) or when the file already has
# tiles (EBUSY); a static-placement file puts fewer tiles on the slow node,
# a round-robin one puts the same number everywhere, and tile=256K cuts a
# file into 256 KiB tiles; an array file's chunk whose home is the slow node
# goes elsewhere by static allocation while the fast homes keep their
# chunks (arrayhome.h). A new directory shows the cluster's defaults
# (copies=2); the static and round-robin directories set copies=1, since
# what they check is where single tiles go, and the tile=256K file keeps
# copies=2: two files per tile.
source "$(dirname "$0")/lib.sh"

cluster_up

status_json() { "$TESSERA_TOOL" status --state "$STATE" --json; }

# node_ids: the ids meta gave the four datanodes, one per line.
node_ids() { status_json | grep -o '"id": [0-9]*' | awk '{ print $2 }'; }

# field ID NAME: a numeric field of node ID in `tessera status --json`.
field() {
    status_json | tr '{' '\n' | grep "\"id\": $1," | grep -o "\"$2\": [0-9]*" | awk '{ print $2 }'
}

mapfile -t ids < <(node_ids)
[ "${#ids[@]}" = 4 ] || fail "expected 4 datanodes in tessera status, got: ${ids[*]:-none}"
slow=${ids[0]}

# Three nodes at 40 MB/s, one at 10; meta hears of it with the next heartbeat.
for id in "${ids[@]}"; do
    rate=40
    [ "$id" = "$slow" ] && rate=10
    run_tool node throttle "$id" "$rate" --state "$STATE" || fail "tessera node throttle $id $rate failed"
done
throttles_known() {
    local id want
    for id in "${ids[@]}"; do
        want=40000000
        [ "$id" = "$slow" ] && want=10000000
        [ "$(field "$id" throttle_bytes_per_sec)" = "$want" ] || return 1
        # The measured rate drops to the cap at once.
        [ "$(field "$id" write_bytes_per_sec)" -le "$want" ] || return 1
    done
}
wait_for 10 "tessera status to show the throttles" throttles_known
"$TESSERA_TOOL" status --state "$STATE" >"$T/status.txt" || fail "tessera status failed"
grep -q THROTTLE "$T/status.txt" || fail "tessera status shows no THROTTLE column: $(cat "$T/status.txt")"
if run_tool node throttle 999 10 --state "$STATE"; then fail "throttling an unknown node succeeded"; fi
if run_tool node throttle "$slow" fast --state "$STATE"; then fail "a rate of 'fast' was accepted"; fi

# The layout hint, through the mount.
layout() { getfattr --only-values -n user.tessera.layout "$1" 2>/dev/null; }
mkdir "$MNT/static" "$MNT/rr" "$MNT/small" || fail "mkdir on the mount failed"
[ "$(layout "$MNT/static")" = "tile=1M copies=2 placement=dynamic" ] ||
    fail "a new directory's layout is '$(layout "$MNT/static")', expected the defaults"
setfattr -n user.tessera.layout -v "placement=static copies=1" "$MNT/static" ||
    fail "setfattr static failed"
setfattr -n user.tessera.layout -v "placement=roundrobin copies=1" "$MNT/rr" || fail "setfattr rr failed"
setfattr -n user.tessera.layout -v "tile=256K" "$MNT/small" || fail "setfattr tile=256K failed"
if setfattr -n user.tessera.layout -v "placement=fastest" "$MNT/rr" 2>"$T/einval.err"; then
    fail "a malformed layout was accepted"
fi
grep -q "Invalid argument" "$T/einval.err" || fail "malformed layout: $(cat "$T/einval.err"), expected EINVAL"
[ "$(layout "$MNT/rr")" = "tile=1M copies=1 placement=roundrobin" ] ||
    fail "the refused layout changed the directory: $(layout "$MNT/rr")"

# tile_counts INO: tiles of inode INO per node, in the order of ids[].
tile_counts() {
    local ino=$1 id dir counts=()
    for id in "${ids[@]}"; do
        dir=$(grep -lx "$id" "$STATE"/node*/node.id | head -n 1)
        dir=$(dirname "$dir")
        shopt -s nullglob
        local files=("$dir"/tiles/$((ino % 256))/"$ino".*[0-9]) # not the .crc sidecars
        shopt -u nullglob
        counts+=("${#files[@]}")
    done
    echo "${counts[*]}"
}

source_file=$(random_file 48M)
for dir in static rr; do
    dd if="$source_file" of="$MNT/$dir/file" bs=1M conv=fsync status=none ||
        fail "dd into $dir failed"
    cmp "$source_file" "$MNT/$dir/file" || fail "$dir/file does not read back as written"
    [ "$(layout "$MNT/$dir/file")" = "$(layout "$MNT/$dir")" ] ||
        fail "$dir/file did not inherit its directory's layout: $(layout "$MNT/$dir/file")"
done
read -r -a static_counts <<<"$(tile_counts "$(stat -c %i "$MNT/static/file")")"
read -r -a rr_counts <<<"$(tile_counts "$(stat -c %i "$MNT/rr/file")")"
log "tiles per node (slow node first): static ${static_counts[*]}, roundrobin ${rr_counts[*]}"
for i in 0 1 2 3; do
    [ "${rr_counts[$i]}" = 12 ] || fail "round-robin put ${rr_counts[$i]} of 48 tiles on a node, expected 12"
done
# Static: 10 of 130 MB/s is the slow node's share, about 4 of 48 tiles.
for i in 1 2 3; do
    [ $((static_counts[0] * 2)) -lt "${static_counts[$i]}" ] ||
        fail "static placement gave the slow node ${static_counts[0]} tiles, a fast one ${static_counts[$i]}"
done

# Once a file has tiles its layout is fixed; the same layout is accepted.
if setfattr -n user.tessera.layout -v "placement=roundrobin" "$MNT/static/file" 2>"$T/ebusy.err"; then
    fail "changing the layout of a file with tiles succeeded"
fi
grep -q "busy" "$T/ebusy.err" || fail "layout change on a written file: $(cat "$T/ebusy.err"), expected EBUSY"
setfattr -n user.tessera.layout -v "placement=static" "$MNT/static/file" ||
    fail "setting the layout a written file already has failed"

# tile=256K: a 1 MiB file is 4 tiles of 256 KiB, each on two nodes (copies=2).
head -c 1M "$source_file" >"$MNT/small/file" || fail "writing small/file failed"
sync "$MNT/small/file" || fail "fsync of small/file failed"
ino=$(stat -c %i "$MNT/small/file")
tiles=$(find "$STATE"/node*/tiles/$((ino % 256)) -name "$ino.*" -size 256k | wc -l)
[ "$tiles" = 8 ] || fail "a 1 MiB file with tile=256K, copies=2 has $tiles tile files of 256 KiB, expected 8"
for ((tile = 0; tile < 4; tile++)); do
    holder_nodes=$(find "$STATE"/node*/tiles/$((ino % 256)) -name "$ino.$tile.*" | sed 's,/tiles/.*,,' |
        sort -u | wc -l)
    [ "$holder_nodes" = 2 ] || fail "tile $tile of small/file is on $holder_nodes nodes, expected 2"
done

# An array file on a 2x2 mesh: each of the four nodes is one chunk's home.
# The slow node, throttled further to 2 of 40 MB/s (below
# ARRAYHOME_SLOW_PERCENT, 10 %, of its peers), keeps at most 2 of its
# chunk's 16 tiles (its share by speed is under one), the rest going to the fast nodes by earliest finish (uneven when
# their backlogs differ); each fast home keeps its own chunk whole, and no
# node gets half the mesh.
run_tool node throttle "$slow" 2 --state "$STATE" || fail "tessera node throttle $slow 2 failed"
slower_known() { [ "$(field "$slow" write_bytes_per_sec)" -le 2000000 ]; }
wait_for 10 "tessera status to show node $slow at 2 MB/s" slower_known
mkdir "$MNT/array" || fail "mkdir array failed"
setfattr -n user.tessera.layout -v copies=1 "$MNT/array" || fail "copies=1 on array failed"
touch "$MNT/array/grid"
setfattr -n user.tessera.array -v "f32 1024x1024 BLOCK,BLOCK mesh=2x2 threshold=64K" \
    "$MNT/array/grid" || fail "setting the array layout failed"
head -c 4M "$source_file" >"$MNT/array/grid" || fail "writing the array failed"
sync "$MNT/array/grid" || fail "fsync of the array failed"
cmp "$MNT/array/grid" <(head -c 4M "$source_file") || fail "the array reads back other bytes"
"$TESSERA_TOOL" layout "$MNT/array/grid" --json --state "$STATE" >"$T/grid.json" ||
    fail "tessera layout --json failed"
python3 - "$T/grid.json" "$slow" <<'PY' || fail "the slow home's chunk is not spread"
import json, sys
tiles = json.load(open(sys.argv[1]))["tiles"]
slow = int(sys.argv[2])
if len(tiles) != 64:
    sys.exit("expected 64 tiles, got %d" % len(tiles))
whole, spread = [], []
for chunk in range(4):
    nodes = [t["node"] for t in tiles if t["chunk"] == chunk]
    (whole if len(set(nodes)) == 1 else spread).append((chunk, nodes))
if len(whole) != 3 or len(spread) != 1:
    sys.exit("expected three chunks whole on their homes and one spread: %s" % (whole + spread))
if slow in {nodes[0] for _, nodes in whole} or len({nodes[0] for _, nodes in whole}) != 3:
    sys.exit("the whole chunks are not on the three fast nodes: %s" % whole)
chunk, nodes = spread[0]
if nodes.count(slow) > 2:
    sys.exit("the slow node kept %d of chunk %d's tiles: %s" % (nodes.count(slow), chunk, nodes))
per_node = {n: sum(1 for t in tiles if t["node"] == n) for n in {t["node"] for t in tiles}}
if len(set(nodes)) < 2 or max(per_node.values()) >= 32:
    sys.exit("the slow chunk went to one node, or a node got half the mesh: %s" % per_node)
print("slow node %d, chunk %d spread over %s; tiles per node %s" % (slow, chunk, sorted(set(nodes)), per_node))
PY

run_tool node throttle "$slow" off --state "$STATE" || fail "tessera node throttle $slow off failed"
throttle_off() { [ "$(field "$slow" throttle_bytes_per_sec)" = 0 ]; }
wait_for 10 "the throttle of node $slow to be off" throttle_off
assert_daemons_alive
log "ok"
