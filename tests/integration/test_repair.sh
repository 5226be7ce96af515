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
#    `tessera health` as UNAVAILABLE (exit 4), never read as zeros;
#  - a file a writer holds open through the kill is repaired while still
#    open; the writer's later writes through the same descriptor reach both
#    holders of every tile (the repaired ones too), and its fsync succeeds.
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
# A writer that keeps keep/open open from before the kill until after the repair.
python3 - "$MNT/keep/open" "$T/open" "$SHM/open.expected" <<'PY' >"$T/open.writer" 2>&1 &
import os, sys, time
path, flags, expected_path = sys.argv[1:4]
def wait(name):
    deadline = time.time() + 240
    while not os.path.exists(f"{flags}.{name}"):
        if time.time() > deadline:
            sys.exit(f"no {name} from the test")
        time.sleep(0.05)
expected = bytearray(os.urandom(3 << 20))
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, expected, 0)
os.fsync(fd)
open(f"{flags}.ready", "w").close()
wait("go")  # the node died and the repair ran, the file open all along
more = os.urandom(1 << 20)
os.pwrite(fd, more, 512 << 10)
expected[512 << 10:(512 << 10) + len(more)] = more
tail = os.urandom(1 << 20)
os.pwrite(fd, tail, 3 << 20)
expected += tail
os.fsync(fd)
with open(expected_path, "wb") as out:
    out.write(expected)
open(f"{flags}.written", "w").close()
wait("close")
os.close(fd)
PY
open_writer=$!
wait_for 20 "the writer to open keep/open" test -e "$T/open.ready"
copies=$(getfattr --only-values -n user.tessera.layout "$MNT/keep/a" 2>/dev/null | grep -o 'copies=[0-9]*')
[ "$copies" = "copies=2" ] || fail "a new file's layout says '$copies', expected the default copies=2"
wait_for 30 "health HEALTHY after the writes" healthy
# 4 files of 6 tiles and one of 3 with 2 replicas, 8 tiles with 1.
wait_for 30 "the datanodes to report every tile file" all_tiles_reported $((4 * 6 * 2 + 3 * 2 + 8))

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
wait_for 60 "the repair of every copies=2 tile, keep/open's while it is open" keep_healed
kill -0 "$open_writer" 2>/dev/null || fail "the writer of keep/open ended early: $(cat "$T/open.writer")"
# Written after the repair through the descriptor opened before it: both holders get it.
touch "$T/open.go"
wait_for 60 "the writer's writes after the repair" test -e "$T/open.written"
source[keep/open]=$SHM/open.expected
check_files keep/open
touch "$T/open.close"
wait "$open_writer" || fail "the writer of keep/open failed: $(cat "$T/open.writer")"
log "keep/open: repaired while open, written after, read right"
wait_for 30 "health HEALTHY for the copies=2 files after keep/open's last writes" keep_healed
rc=0
health >"$T/health.txt" || rc=$?
cat "$T/health.txt" >>"$T/tool.log"
[ "$rc" = 4 ] || fail "tessera health exited $rc with a copies=1 tile lost, expected 4 (UNAVAILABLE)"
grep -q "UNAVAILABLE" "$T/health.txt" || fail "health does not say UNAVAILABLE: $(cat "$T/health.txt")"
grep -q "/scratch/s" "$T/health.txt" || fail "health does not name /scratch/s: $(cat "$T/health.txt")"
[ "$(health_json_field repair)" != "" ] || fail "no repair figures in health --json"
check_files keep/a keep/b keep/c keep/d keep/open
drop_file_cache "$MNT/scratch/s" # its pages from the first check would be served
if timeout -k 5 60 cat "$MNT/scratch/s" >"$SHM/lost" 2>/dev/null; then
    fail "a read of scratch/s with its only replica of a tile gone succeeded"
fi
log "repaired: copies=2 files whole on two nodes again, scratch/s named UNAVAILABLE"

# Every tile of the copies=2 files is on two distinct live nodes, each holder's
# file (at the version meta names) holding the file's bytes.
"$TESSERA_TOOL" status --state "$STATE" --json >"$T/nodes.json"
for name in a b c d open; do
    timeout -k 5 60 "$TESSERA_TOOL" layout show "$MNT/keep/$name" --json --state "$STATE" \
        >"$T/layout.$name.json" 2>>"$T/tool.log" || fail "layout show keep/$name failed"
    python3 - "$T/layout.$name.json" "$T/nodes.json" "$STATE" "$BASE" "$victim" "${source[keep/$name]}" <<'PY' ||
import json, sys
layout_path, nodes_path, state, base, victim, source = sys.argv[1:7]
layout = json.load(open(layout_path))
ports = {n["id"]: int(n["address"].rsplit(":", 1)[1]) for n in json.load(open(nodes_path))}
data = open(source, "rb").read()
tile_bytes = 1 << 20
ino = layout["ino"]
for tile in layout["tiles"]:
    index = tile["tile"]
    want = data[index * tile_bytes:(index + 1) * tile_bytes]
    dirs = set()
    for holder in tile["holders"]:
        directory = f"node{ports[holder['datanode']] - int(base)}"
        if directory == f"node{victim}":
            sys.exit(f"tile {index} is still held by the dead node{victim}")
        dirs.add(directory)
        path = f"{state}/{directory}/tiles/{ino % 256}/{ino}.{index}.{holder['version']}"
        if open(path, "rb").read() != want:
            sys.exit(f"tile {index}: {path} differs from the file's bytes")
    if len(dirs) < 2:
        sys.exit(f"tile {index} has {len(dirs)} holders, expected 2: {tile['holders']}")
PY
        fail "keep/$name: its replicas are not two good ones on live nodes (see above)"
done
cluster_down
