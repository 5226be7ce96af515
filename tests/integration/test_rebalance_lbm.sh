#!/usr/bin/env bash
# `tessera place` and `tessera rebalance --policy lbm` end to end on one
# machine: four datanodes of this machine (tessera up), and two more
# datanodes with mounts that say they run on machines "lbm-a" and "lbm-b".
# 1. An 8-tile file written here (all tiles on this machine's datanodes);
#    lbm-a reads tiles 0-3, lbm-b tiles 4-7, this machine nothing.
# 2. `tessera place --groups 2` serves tiles 0-3 from lbm-a and 4-7 from
#    lbm-b, with no remote transfer; its comparison table lists the three
#    machines now and under frequent, balanced and lbm.
# 3. `rebalance plan --policy lbm --groups 2` moves the 8 tiles; apply
#    puts each group's tiles on the datanode of the machine place named
#    (tessera layout show --json), and the file reads the same everywhere.
# 4. With a topology file (a core with this machine, racks a and b), place
#    names each group's subcluster and lists the two links' loads; a
#    topology that misses a machine, or has a bad line, fails with the
#    machine or the line named; --groups without --policy lbm is a usage
#    error.
# 5. An array file with a 2x2 mesh written by this machine alone has its
#    four disk chunks on four datanodes of the three machines (arrayhome.h).
# 6. Profiled, the array's lbm roles are its disk chunks (runs of whole
#    chunks: four chunks, three machines), not --groups' equal runs.
source "$(dirname "$0")/lib.sh"

cluster_up
meta=$(meta_endpoint)
APP=$MNT/app
here=$(uname -n)

tool() { "$TESSERA_TOOL" "$@" --meta "$meta"; }
count_of() { grep -o -- "$1" | wc -l; }

mkdir "$APP"
setfattr -n user.tessera.layout -v copies=1 "$APP" || fail "setting copies=1 on $APP failed"
data=$(random_file 8M)
cp "$data" "$APP/file"
sync "$APP/file"

# start_machine NAME PORT: a datanode and a mount at $T/mnt-NAME on machine NAME;
# sets NODE_ID to the datanode's id.
start_machine() {
    local name=$1 port=$2 key mount_key pid deadline
    mkdir -p "$T/$name"
    mapfile -t key < <(key_args "$name" datanode)
    "$TESSERA_DATANODE" --listen "tcp://127.0.0.1:$port" --meta "$meta" --data "$T/$name/data" \
        --machine "$name" "${key[@]}" >"$T/$name/datanode.log" 2>&1 &
    IT_PIDS+=($!)
    wait_for 30 "the datanode on $name to register" grep -q 'registered this datanode as node' \
        "$T/$name/datanode.log"
    NODE_ID=$(sed -n 's/.*registered this datanode as node \([0-9]*\).*/\1/p' \
        "$T/$name/datanode.log" | head -n 1)
    mkdir -p "$T/mnt-$name"
    IT_MOUNTS+=("$T/mnt-$name")
    mapfile -t mount_key < <(key_args "mount-$name" mount)
    "$TESSERA_MOUNT" --meta "$meta" --machine "$name" "${mount_key[@]}" \
        --io-timeout-ms "$IO_TIMEOUT_MS" -f "$T/mnt-$name" >"$T/$name/mount.log" 2>&1 &
    pid=$!
    IT_PIDS+=("$pid")
    deadline=$(($(now_ms) + 30000))
    until mountpoint -q "$T/mnt-$name"; do
        kill -0 "$pid" 2>/dev/null || fail "the tessera-mount of $name exited"
        (($(now_ms) < deadline)) || fail "the mount of $name is not up after 30 s"
        sleep 0.1
    done
    log "datanode $NODE_ID and a mount on machine $name"
}
start_machine lbm-a $((BASE + 7))
node_a=$NODE_ID
start_machine lbm-b $((BASE + 8))
node_b=$NODE_ID

# ---- 1. profiles ---------------------------------------------------------------
out=$(tool profile start "$APP") || fail "profile start failed: $out"
# read_mib MACHINE REL SOURCE FIRST COUNT: MiB FIRST..FIRST+COUNT-1 of $MNT/REL
# through MACHINE's mount (O_DIRECT), compared with SOURCE.
read_mib() {
    dd if="$T/mnt-$1/$2" bs=1M skip="$4" count="$5" iflag=direct status=none |
        cmp - <(tail -c +$(($4 * 1048576 + 1)) "$3" | head -c $(($5 * 1048576))) ||
        fail "$1 read other bytes of $2 than were written"
}
read_part() { read_mib "$1" app/file "$data" "$2" 4; }
# both_counted REL N: lbm-a and lbm-b each have reads of N tiles of $MNT/REL in its profile.
both_counted() {
    local json
    json=$(tool profile show "$MNT/$1" --json)
    [ "$(count_of '"machine": "lbm-a", "reads": [1-9]' <<<"$json")" = "$2" ] &&
        [ "$(count_of '"machine": "lbm-b", "reads": [1-9]' <<<"$json")" = "$2" ]
}
# A mount learns a file is profiled at its next open: read until both are counted.
counted() {
    both_counted app/file 4 && return 0
    read_part lbm-a 0
    read_part lbm-b 4
    sleep 0.3
    return 1
}
wait_for 20 "the reads of lbm-a and lbm-b counted" counted

# ---- 2. place ------------------------------------------------------------------
tool place "$APP" --groups 2 >"$T/place.txt" 2>"$T/place.err" ||
    fail "place failed: $(cat "$T/place.txt" "$T/place.err")"
log "$(cat "$T/place.txt")"
grep -Eq "^$APP/file +0-3 +lbm-a .* 0B$" "$T/place.txt" ||
    fail "place does not serve tiles 0-3 from lbm-a: $(cat "$T/place.txt")"
grep -Eq "^$APP/file +4-7 +lbm-b .* 0B$" "$T/place.txt" ||
    fail "place does not serve tiles 4-7 from lbm-b: $(cat "$T/place.txt")"
grep -q "^busiest server: lbm-a, 0B remote (0 bytes)" "$T/place.txt" ||
    fail "place: the busiest server should have nothing remote: $(cat "$T/place.txt")"
grep -q "MACHINE .*NOW .*FREQUENT .*BALANCED .*LBM" "$T/place.txt" ||
    fail "place does not compare the policies: $(cat "$T/place.txt")"
# Now every tile is served from this machine to the two readers; under
# frequent and lbm nothing is remote (balanced also weighs the disks).
grep -Eq "^$here +[1-9][0-9.]*M +0B +[^ ]+ +0B$" "$T/place.txt" ||
    fail "place: $here's row is not 'remote now, nothing after': $(cat "$T/place.txt")"
grep -Eq "^busiest +[1-9][0-9.]*M +0B +[^ ]+ +0B$" "$T/place.txt" ||
    fail "place: the busiest row is wrong: $(cat "$T/place.txt")"
grep -Eq "^model time +([0-9.]+s +){3}[0-9.]+s$" "$T/place.txt" ||
    fail "place has no performance model row: $(cat "$T/place.txt")"
grep -q "frequent and balanced with at most 3 holders per tile, lbm with one" "$T/place.txt" ||
    fail "place does not say how many holders frequent and balanced may give: $(cat "$T/place.txt")"
# --max-copies 1 compares like with like (one holder each); each reader's
# half moves to it under frequent, so nothing is remote there either.
tool place "$APP" --groups 2 --max-copies 1 >"$T/place1.txt" 2>"$T/place1.err" ||
    fail "place --max-copies 1 failed: $(cat "$T/place1.txt" "$T/place1.err")"
grep -q "frequent and balanced with at most 1 holder per tile" "$T/place1.txt" ||
    fail "place --max-copies 1 does not say so: $(cat "$T/place1.txt")"
grep -Eq "^busiest +[1-9][0-9.]*M +0B +[^ ]+ +0B$" "$T/place1.txt" ||
    fail "place --max-copies 1: the busiest row is wrong: $(cat "$T/place1.txt")"
tool place "$APP" --max-copies 9 >/dev/null 2>"$T/place9.err" && fail "place took --max-copies 9"
grep -q "max-copies wants 1..8" "$T/place9.err" || fail "no clear error for --max-copies 9: $(cat "$T/place9.err")"

# ---- 3. rebalance --policy lbm ---------------------------------------------------
tool rebalance plan "$APP" --policy lbm --groups 2 >"$T/plan.txt" || fail "plan failed"
grep -q "8 steps: 0 copies, 8 moves, 0 drops; 8.0M to transfer" "$T/plan.txt" ||
    fail "unexpected lbm plan: $(head -n 5 "$T/plan.txt")"
tool rebalance apply "$APP" --policy lbm --groups 2 >"$T/apply.txt" 2>"$T/apply.err" ||
    fail "apply failed: $(cat "$T/apply.txt" "$T/apply.err")"
grep -q "apply: 8 steps: 8 done, 0 skipped (file changed), 0 failed, 0 not run" "$T/apply.txt" ||
    fail "apply did not run the 8 moves: $(cat "$T/apply.txt" "$T/apply.err")"
tool layout show "$APP/file" --json >"$T/layout.json" || fail "layout show failed"
for tile in 0 1 2 3; do
    grep -q "{\"tile\": $tile, \"node\": $node_a," "$T/layout.json" ||
        fail "tile $tile is not on lbm-a's datanode $node_a: $(cat "$T/layout.json")"
done
for tile in 4 5 6 7; do
    grep -q "{\"tile\": $tile, \"node\": $node_b," "$T/layout.json" ||
        fail "tile $tile is not on lbm-b's datanode $node_b: $(cat "$T/layout.json")"
done
grep -q "nothing to do" <<<"$(tool rebalance plan "$APP" --policy lbm --groups 2)" ||
    fail "a plan after apply still has steps"
# Reads on lbm-a and lbm-b are local now; this machine reads the file only
# at the end, so its reads do not change section 4's assignment.
read_part lbm-a 0
read_part lbm-b 4

# ---- 4. topology ---------------------------------------------------------------
cat >"$T/topology" <<TOPOLOGY
# this machine in the core, one rack per reader
subcluster core
subcluster rack-a parent core link 125M
subcluster rack-b parent core link 125M
machine $here core
machine lbm-a rack-a
machine lbm-b rack-b
TOPOLOGY
tool place "$APP" --groups 2 --topology "$T/topology" >"$T/place-topology.txt" 2>&1 ||
    fail "place --topology failed: $(cat "$T/place-topology.txt")"
grep -Eq "^$APP/file +0-3 +lbm-a +rack-a " "$T/place-topology.txt" ||
    fail "place --topology: tiles 0-3 not in rack-a: $(cat "$T/place-topology.txt")"
grep -Eq "^$APP/file +4-7 +lbm-b +rack-b " "$T/place-topology.txt" ||
    fail "place --topology: tiles 4-7 not in rack-b: $(cat "$T/place-topology.txt")"
grep -Eq "^rack-a +core +0B +0B +0.000000$" "$T/place-topology.txt" ||
    fail "place --topology: rack-a's link should carry nothing: $(cat "$T/place-topology.txt")"
grep -Eq "^rack-b +core +0B +0B +0.000000$" "$T/place-topology.txt" ||
    fail "place --topology: rack-b's link should carry nothing: $(cat "$T/place-topology.txt")"
tool rebalance plan "$APP" --policy lbm --groups 2 --topology "$T/topology" >"$T/plan-topology.txt" ||
    fail "plan --topology failed"
grep -q "nothing to do" "$T/plan-topology.txt" ||
    fail "the topology plan wants steps: $(cat "$T/plan-topology.txt")"

grep -v lbm-b "$T/topology" >"$T/topology-missing"
if tool place "$APP" --topology "$T/topology-missing" >"$T/missing.txt" 2>&1; then
    fail "place accepted a topology without lbm-b"
fi
grep -q "machine 'lbm-b' (datanode $node_b) is in no subcluster" "$T/missing.txt" ||
    fail "place did not name the missing machine: $(cat "$T/missing.txt")"
printf 'subcluster core\nsubcluster rack parent nowhere\n' >"$T/topology-bad"
if tool rebalance plan "$APP" --policy lbm --topology "$T/topology-bad" >"$T/bad.txt" 2>&1; then
    fail "plan accepted a bad topology"
fi
grep -q "line 2: parent 'nowhere' is not a subcluster declared above" "$T/bad.txt" ||
    fail "the bad topology's line is not named: $(cat "$T/bad.txt")"
status=0
tool rebalance plan "$APP" --policy frequent --groups 2 >"$T/usage.txt" 2>&1 || status=$?
[ "$status" = 2 ] || fail "--groups with --policy frequent exited $status, not 2"
grep -q -- "--groups and --topology go with --policy lbm" "$T/usage.txt" ||
    fail "no usage message: $(cat "$T/usage.txt")"
status=0
tool place >"$T/usage.txt" 2>&1 || status=$?
[ "$status" = 2 ] || fail "place without PATH exited $status, not 2"

# ---- 5. an array file keeps its disk layout --------------------------------------
# A 2x2 mesh written by this machine alone: its four disk chunks (four
# 256 KiB tiles each, consecutive) get homes on lbm-a, lbm-b and this
# machine's datanodes, not all on this machine's fastest node.
mkdir "$MNT/array"
setfattr -n user.tessera.layout -v copies=1 "$MNT/array" || fail "copies=1 on $MNT/array failed"
touch "$MNT/array/grid"
setfattr -n user.tessera.array -v "f32 1024x1024 BLOCK,BLOCK mesh=2x2 threshold=256K" \
    "$MNT/array/grid" || fail "setting the array layout failed"
grid=$(random_file 4M)
cp "$grid" "$MNT/array/grid"
sync "$MNT/array/grid"
cmp "$MNT/array/grid" "$grid" || fail "the array reads back other bytes"
tool layout "$MNT/array/grid" --json >"$T/grid.json" || fail "tessera layout --json failed"
python3 - "$T/grid.json" "$node_a" "$node_b" <<'PY' || fail "the array's chunks are not spread"
import json, sys
layout = json.load(open(sys.argv[1]))
machine = {int(sys.argv[2]): "lbm-a", int(sys.argv[3]): "lbm-b"}
tiles = layout["tiles"]
if len(tiles) != 16:
    sys.exit("expected 16 tiles, got %d" % len(tiles))
homes = []
for chunk in range(4):
    nodes = {t["node"] for t in tiles if t["chunk"] == chunk}
    if sum(1 for t in tiles if t["chunk"] == chunk) != 4:
        sys.exit("chunk %d does not have 4 tiles" % chunk)
    if len(nodes) != 1:
        sys.exit("chunk %d is on several nodes: %s" % (chunk, sorted(nodes)))
    homes.append(nodes.pop())
if len(set(homes)) != 4:
    sys.exit("the four chunks share nodes: %s" % homes)
machines = {machine.get(node, "here") for node in homes}
if machines != {"lbm-a", "lbm-b", "here"}:
    sys.exit("the chunks are not on the three machines: %s" % homes)
print("chunk homes:", homes)
PY
# layout show ends with each chunk's home, the same nodes.
tool layout show "$MNT/array/grid" >"$T/grid.txt" || fail "tessera layout show failed"
homes=$(python3 -c 'import json, sys
tiles = json.load(open(sys.argv[1]))["tiles"]
print(" ".join(str(next(t["node"] for t in tiles if t["chunk"] == c)) for c in range(4)))' "$T/grid.json")
chunk=0
for home in $homes; do
    grep -Eq "^chunk $chunk +datanode $home$" "$T/grid.txt" ||
        fail "layout show does not give chunk $chunk's home $home: $(tail -n 6 "$T/grid.txt")"
    chunk=$((chunk + 1))
done

# ---- 6. lbm's roles of an array file are its disk chunks ---------------------------
# lbm-a reads the top half of the grid (rows 0-511: chunks 0 and 1, tiles
# 0-7), lbm-b the bottom half (chunks 2 and 3). Three machines serve, four
# chunks: the roles are runs of whole chunks, tiles 0-7, 8-11 and 12-15
# (a linear file's default three groups would be 0-5, 6-11, 12-15), and
# 0-7 goes to lbm-a, its only reader.
out=$(tool profile start "$MNT/array") || fail "profile start on the array failed: $out"
grid_counted() {
    both_counted array/grid 8 && return 0
    read_mib lbm-a array/grid "$grid" 0 2
    read_mib lbm-b array/grid "$grid" 2 2
    sleep 0.3
    return 1
}
wait_for 20 "the grid reads of lbm-a and lbm-b counted" grid_counted
tool place "$MNT/array" >"$T/place-grid.txt" 2>&1 ||
    fail "place on the array failed: $(cat "$T/place-grid.txt")"
log "$(cat "$T/place-grid.txt")"
grep -Eq "^$MNT/array/grid +0-7 +lbm-a " "$T/place-grid.txt" ||
    fail "place: the grid's chunks 0-1 (tiles 0-7) are not one role on lbm-a: $(cat "$T/place-grid.txt")"
grep -Eq "^$MNT/array/grid +8-11 " "$T/place-grid.txt" &&
    grep -Eq "^$MNT/array/grid +12-15 " "$T/place-grid.txt" ||
    fail "place: chunks 2 and 3 are not roles of their own: $(cat "$T/place-grid.txt")"

assert_daemons_alive
cmp "$APP/file" "$data" || fail "the file changed (this mount)"
cluster_down
