#!/usr/bin/env bash
# Self-healing (issue 29), on a local cluster whose meta replaces a node
# down for 3 s: files keep their copies through a drain, and through a
# datanode killed with SIGKILL whose data directory is deleted.
#  - `tessera node drain` moves every replica off a node (copy, then drop):
#    the node ends with no tiles, the files read back byte-exact, health is
#    HEALTHY again;
#  - after the kill, every file with copies=2 still reads right at once
#    (another replica), `tessera health` says DEGRADED, the repairer makes
#    the missing replicas from the survivors, and health ends HEALTHY for
#    them: every tile on two nodes again;
#  - a copies=1 file that had a tile on the dead node is named by
#    `tessera health` as UNAVAILABLE (exit 4), never read as zeros.
source "$(dirname "$0")/lib.sh"

cluster_up --replace-after 3s

health() { "$TESSERA_TOOL" health --state "$STATE" "$@"; }
health_json_field() { health --json | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
node_tiles() {
    "$TESSERA_TOOL" status --state "$STATE" --json |
        python3 -c "import json,sys; print([n['tiles'] for n in json.load(sys.stdin) if n['id']==$1][0])"
}
healthy() { health >/dev/null; }
# node_dir ID: the directory under $STATE of datanode ID (node<i> listens on BASE+i).
node_dir() {
    local port
    port=$("$TESSERA_TOOL" status --state "$STATE" --json |
        python3 -c "import json,sys; print([n['address'] for n in json.load(sys.stdin) if n['id']==$1][0].rsplit(':',1)[1])")
    echo "node$((port - BASE))"
}
# The id of the datanode holding most tiles, once the heartbeats report them all.
busiest_node() {
    "$TESSERA_TOOL" status --state "$STATE" --json |
        python3 -c "import json,sys; n=json.load(sys.stdin); print(max(n, key=lambda x: x['tiles'])['id'])"
}
all_tiles_reported() {
    local total
    total=$("$TESSERA_TOOL" status --state "$STATE" --json |
        python3 -c "import json,sys; print(sum(n['tiles'] for n in json.load(sys.stdin)))")
    [ "$total" -ge "$1" ]
}

mkdir "$MNT/keep" "$MNT/scratch" || fail "mkdir failed"
setfattr -n user.tessera.layout -v "copies=1" "$MNT/scratch" || fail "setfattr copies=1 failed"
declare -A source
for name in a b c d; do
    source[keep/$name]=$(random_file 6M)
    cp "${source[keep/$name]}" "$MNT/keep/$name" || fail "cp keep/$name failed"
done
source[scratch/s]=$(random_file 8M)
cp "${source[scratch/s]}" "$MNT/scratch/s" || fail "cp scratch/s failed"
sync -f "$MNT/keep/a" || fail "sync failed"
copies=$(getfattr --only-values -n user.tessera.layout "$MNT/keep/a" 2>/dev/null | grep -o 'copies=[0-9]*')
[ "$copies" = "copies=2" ] || fail "a new file's layout says '$copies', expected the default copies=2"
wait_for 30 "health HEALTHY after the writes" healthy
# 4 files of 6 tiles with 2 replicas, 8 tiles with 1.
wait_for 30 "the datanodes to report every tile file" all_tiles_reported $((4 * 6 * 2 + 8))

check_files() {
    local name
    for name in "$@"; do
        drop_file_cache "$MNT/$name"
        cmp "${source[$name]}" "$MNT/$name" || fail "$name differs from what was written ($1)"
    done
}

# ---- drain ------------------------------------------------------------------
drained=$(busiest_node)
drained_dir=$(node_dir "$drained")
[ "$(node_tiles "$drained")" -gt 0 ] || fail "node $drained holds no tile to drain"
run_tool node drain "$drained" --state "$STATE" || fail "tessera node drain failed"
drained_empty() {
    [ "$(node_tiles "$drained")" = 0 ] && healthy &&
        ! compgen -G "$STATE/$drained_dir/tiles/*/*" >/dev/null
}
wait_for 60 "node $drained drained and health HEALTHY" drained_empty
check_files keep/a keep/b keep/c keep/d scratch/s
log "node $drained drained: its replicas are elsewhere and every file reads right"
run_tool node activate "$drained" --state "$STATE" || fail "tessera node activate failed"

# ---- kill -9 and lose the disk ----------------------------------------------
# The victim: the node holding a tile of the copies=1 file.
ino=$(stat -c %i "$MNT/scratch/s")
victim=""
for n in 1 2 3 4; do
    [ "node$n" = "$drained_dir" ] && continue
    if compgen -G "$STATE/node$n/tiles/$((ino % 256))/$ino.*" >/dev/null; then
        victim=$n
        break
    fi
done
[ -n "$victim" ] || fail "no node but the drained one holds a tile of scratch/s"
pid=$(pid_of "node$victim")
it_pid_is_ours "$pid" || fail "node$victim pid $pid is not ours"
kill -KILL "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
rm -rf "$STATE/node$victim"
log "killed node$victim (pid $pid) and deleted its data directory"

check_files keep/a keep/b keep/c keep/d
log "every copies=2 file read right with node$victim gone"
degraded() {
    local rc=0
    health >/dev/null || rc=$?
    [ "$rc" -ge 3 ]
}
wait_for 20 "health to see the lost replicas" degraded

keep_healed() {
    [ "$(health_json_field degraded_tiles)" = 0 ] && [ "$(health_json_field unavailable_tiles)" -gt 0 ]
}
wait_for 60 "the repair of every copies=2 tile" keep_healed
rc=0
health >"$T/health.txt" || rc=$?
cat "$T/health.txt" >>"$T/tool.log"
[ "$rc" = 4 ] || fail "tessera health exited $rc with a copies=1 tile lost, expected 4 (UNAVAILABLE)"
grep -q "UNAVAILABLE" "$T/health.txt" || fail "health does not say UNAVAILABLE: $(cat "$T/health.txt")"
grep -q "/scratch/s" "$T/health.txt" || fail "health does not name /scratch/s: $(cat "$T/health.txt")"
[ "$(health_json_field repair)" != "" ] || fail "no repair figures in health --json"
check_files keep/a keep/b keep/c keep/d
drop_file_cache "$MNT/scratch/s" # its pages from the first check would be served
if timeout -k 5 60 cat "$MNT/scratch/s" >"$SHM/lost" 2>/dev/null; then
    fail "a read of scratch/s with its only replica of a tile gone succeeded"
fi
log "repaired: copies=2 files whole on two nodes again, scratch/s named UNAVAILABLE"

# Every tile of the copies=2 files is on two distinct live nodes.
for name in a b c d; do
    ino=$(stat -c %i "$MNT/keep/$name")
    for ((tile = 0; tile < 6; tile++)); do
        holders=0
        for n in 1 2 3 4; do
            [ "$n" = "$victim" ] && continue
            compgen -G "$STATE/node$n/tiles/$((ino % 256))/$ino.$tile.*" >/dev/null && holders=$((holders + 1))
        done
        [ "$holders" -ge 2 ] || fail "keep/$name tile $tile has $holders replicas on live nodes, expected 2"
    done
done
cluster_down
