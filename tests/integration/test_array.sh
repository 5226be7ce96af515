#!/usr/bin/env bash
# Array files through a real mount (DESIGN.md "Layout of a file"): a 128^3
# float32 array declared with user.tessera.array on an empty file, written
# with dd and read back with cmp; one sub-cube read row by row with pread
# checks the bytes and, from the datanodes' request counters (NODE_STATS),
# that exactly the tiles of that sub-cube were read; one tile file on disk
# holds its hyper-rectangle, row-major; bad and late hints are refused with
# EINVAL and EBUSY; getfattr shows the canonical layout.
source "$(dirname "$0")/lib.sh"

cluster_up
META=$(meta_endpoint)
FILE=$MNT/cube
SPEC="f32 128x128x128 BLOCK,BLOCK,BLOCK mesh=2x2x2 threshold=128K"
CANONICAL="f32 128x128x128 BLOCK,BLOCK,BLOCK mesh=2x2x2 subchunk=same threshold=128K"

# A bad spec: EINVAL, and the file stays linear.
touch "$FILE"
if setfattr -n user.tessera.array -v "f32 128x128 BLOCK mesh=2" "$FILE" 2>"$T/setfattr.err"; then
    fail "setfattr of a bad array spec succeeded"
fi
grep -q "Invalid argument" "$T/setfattr.err" || fail "bad spec: expected EINVAL, got: $(cat "$T/setfattr.err")"
grep -rq "user.tessera.array on inode .* refused: distribution" "$STATE/logs" ||
    fail "meta's log does not say why the bad spec was refused"
if getfattr --only-values -n user.tessera.array "$FILE" >/dev/null 2>&1; then
    fail "a refused spec left an array layout behind"
fi

# The tool sets it (on the empty file) and shows the canonical text.
"$TESSERA_TOOL" layout set "$FILE" "$SPEC" >"$T/set.out" 2>&1 ||
    fail "tessera layout set failed: $(cat "$T/set.out")"
shown=$(getfattr --only-values -n user.tessera.array "$FILE")
[ "$shown" = "$CANONICAL" ] || fail "getfattr shows '$shown', expected '$CANONICAL'"
log "layout: $shown"

# Write the 8 MiB array with dd, read it back.
source_file=$(random_file 8M)
dd if="$source_file" of="$FILE" bs=1M status=none || fail "dd into the array file failed"
[ "$(stat -c %s "$FILE")" = 8388608 ] || fail "size after dd is $(stat -c %s "$FILE"), expected 8388608"
# Read back in 64 KiB O_DIRECT pieces (the page cache's bigger reads come last, below).
python3 - "$FILE" "$source_file" <<'PY' || fail "the array file reads back different from what dd wrote"
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
src = open(sys.argv[2], "rb").read()
for offset in range(0, len(src), 65536):
    if os.pread(fd, 65536, offset) != src[offset:offset + 65536]:
        sys.exit("bytes at %d differ" % offset)
PY
log "dd wrote 8 MiB, 64 KiB direct reads give the same bytes back"

# Late hints: EBUSY, in setfattr's and in the tool's words.
if setfattr -n user.tessera.array -v "u8 8388608 BLOCK mesh=4" "$FILE" 2>"$T/busy.err"; then
    fail "changing the array layout of a written file succeeded"
fi
grep -q "Device or resource busy" "$T/busy.err" || fail "late hint: expected EBUSY, got: $(cat "$T/busy.err")"
if "$TESSERA_TOOL" layout set "$FILE" "u8 8388608 BLOCK mesh=4" >"$T/busy.out" 2>&1; then
    fail "tessera layout set on a written file succeeded"
fi
grep -q "already holds data" "$T/busy.out" || fail "tessera layout set does not explain EBUSY: $(cat "$T/busy.out")"
[ "$(getfattr --only-values -n user.tessera.array "$FILE")" = "$CANONICAL" ] ||
    fail "a refused late hint changed the layout"

# The tile map: 64 tiles of 32^3 floats, each on a datanode.
"$TESSERA_TOOL" layout "$FILE" --json --meta "$META" >"$T/layout.json" 2>"$T/layout.err" ||
    fail "tessera layout --json failed: $(cat "$T/layout.err")"
"$TESSERA_TOOL" layout show "$FILE" --meta "$META" >"$T/layout.txt" 2>&1 ||
    fail "tessera layout show failed: $(cat "$T/layout.txt")"
"$TESSERA_TOOL" status --json --meta "$META" >"$T/status.json" 2>"$T/status.err" ||
    fail "tessera status --json failed: $(cat "$T/status.err")"

# The sub-cube [40,72) x [10,42) x [70,102) spans 2x2x2 tiles of 32^3.
cat >"$T/check.py" <<'PY'
import json, os, subprocess, sys
tool, meta, path, source_path, state = sys.argv[1:6]
N, T, E = 128, 32, 4
lo, hi = (40, 10, 70), (72, 42, 102)
src = open(source_path, "rb").read()
layout = json.load(open(os.environ["LAYOUT_JSON"]))
nodes = [n["id"] for n in json.load(open(os.environ["STATUS_JSON"]))]
ino = layout["ino"]

def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)

if layout["tile_count"] != 64 or len(layout["tiles"]) != 64:
    fail("expected 64 tiles, the tool shows %d" % layout["tile_count"])
for tile in layout["tiles"]:
    if tile["node"] == 0 or tile["shape"] != [T, T, T] or tile["bytes"] != T * T * T * E:
        fail("unexpected tile %r" % tile)
    if any(c % T for c in tile["lower"]):
        fail("tile box not on the 32-grid: %r" % tile)

def stats(reset):
    tiles = set()
    for node in nodes:
        args = [tool, "node", "stats", str(node), "--json", "--meta", meta]
        if reset:
            args.append("--reset")
        out = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
        if out["tiles_dropped"]:
            fail("node %d dropped tiles from its read list" % node)
        tiles |= {t["tile"] for t in out["tiles_read"] if t["ino"] == ino}
    return tiles

# Read the sub-cube row by row (one pread per row of 32 floats), with
# O_DIRECT so that the kernel's page cache and read-ahead add nothing.
stats(True)
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
rows = 0
for z in range(lo[0], hi[0]):
    for y in range(lo[1], hi[1]):
        offset = ((z * N + y) * N + lo[2]) * E
        length = (hi[2] - lo[2]) * E
        got = os.pread(fd, length, offset)
        if got != src[offset:offset + length]:
            fail("row z=%d y=%d differs from the source" % (z, y))
        rows += 1
os.close(fd)
read = stats(False)
expected = set()
for tile in layout["tiles"]:
    if all(tile["lower"][d] < hi[d] and lo[d] < tile["lower"][d] + T for d in range(3)):
        expected.add(tile["tile"])
if len(expected) != 8:
    fail("expected the sub-cube to span 8 tiles, found %d" % len(expected))
if read != expected:
    fail("tiles read %s, expected exactly the sub-cube's %s" % (sorted(read), sorted(expected)))
print("sub-cube: %d rows read, tiles read = the sub-cube's %d tiles %s" % (rows, len(read), sorted(read)))

# One tile file holds its box, row-major: the tile with the sub-cube's lower corner.
tile = next(t for t in layout["tiles"] if all(t["lower"][d] <= lo[d] < t["lower"][d] + T for d in range(3)))
name = "%d.%d.%d" % (ino, tile["tile"], tile["version"])
found = [os.path.join(d, "tiles", str(ino % 256), name) for d in sorted(os.listdir(state))
         if d.startswith("node") and os.path.exists(os.path.join(state, d, "tiles", str(ino % 256), name))]
found = [os.path.join(state, f) for f in found]
if len(found) != 1:
    fail("tile file %s found %d times" % (name, len(found)))
data = open(found[0], "rb").read()
z0, y0, x0 = tile["lower"]
expected_bytes = b"".join(src[((z * N + y) * N + x0) * E:((z * N + y) * N + x0 + T) * E]
                          for z in range(z0, z0 + T) for y in range(y0, y0 + T))
if data != expected_bytes:
    fail("%s does not hold the box at %r row-major" % (found[0], tile["lower"]))
print("tile %d (box at %r, %d bytes) on disk is the box, row-major: %s" % (tile["tile"], tile["lower"], len(data), found[0]))
PY
LAYOUT_JSON=$T/layout.json STATUS_JSON=$T/status.json python3 "$T/check.py" "$TESSERA_TOOL" "$META" \
    "$FILE" "$source_file" "$STATE" >"$T/check.out" 2>&1 || fail "$(cat "$T/check.out")"
while IFS= read -r line; do log "$line"; done <"$T/check.out"

# Truncating to 0 empties it (the layout stays); shrinking to another size is refused.
if truncate -s 4096 "$FILE" 2>"$T/truncate.err"; then
    fail "shrinking an array file to 4096 bytes succeeded"
fi
grep -q "Invalid argument" "$T/truncate.err" || fail "partial truncate: expected EINVAL, got: $(cat "$T/truncate.err")"
truncate -s 0 "$FILE" || fail "truncate to 0 failed"
[ "$(getfattr --only-values -n user.tessera.array "$FILE")" = "$CANONICAL" ] ||
    fail "truncate to 0 lost the array layout"

# A directory's hint is inherited by the files created in it.
mkdir "$MNT/arrays"
setfattr -n user.tessera.array -v "u8 64x64 BLOCK,* mesh=4 threshold=4K" "$MNT/arrays" ||
    fail "setfattr on a directory failed"
head -c 4096 "$source_file" >"$MNT/arrays/small"
[ "$(getfattr --only-values -n user.tessera.array "$MNT/arrays/small")" = \
    "u8 64x64 BLOCK,* mesh=4 subchunk=same threshold=4K" ] || fail "a new file did not inherit the array layout"
cmp <(head -c 4096 "$source_file") "$MNT/arrays/small" || fail "the inherited array file reads back wrong"

# Written whole under each placement policy: the mount's batch of tiles to
# place never runs past the array's last tile (round-robin and static asked
# for tiles the array lacks, and the write failed with EFBIG).
for placement in roundrobin static dynamic; do
    mkdir "$MNT/arrays-$placement"
    setfattr -n user.tessera.layout -v "placement=$placement" "$MNT/arrays-$placement" ||
        fail "placement=$placement on a directory failed"
    setfattr -n user.tessera.array -v "f32 1024x1024 BLOCK,BLOCK mesh=2x2 threshold=64K" \
        "$MNT/arrays-$placement" || fail "an array hint on the placement=$placement directory failed"
    head -c $((4 << 20)) "$source_file" >"$T/grid"
    dd if="$T/grid" of="$MNT/arrays-$placement/grid" bs=1M conv=fsync status=none 2>"$T/grid.err" ||
        fail "dd of a 4 MiB array file with placement=$placement failed: $(cat "$T/grid.err")"
    drop_file_cache "$MNT/arrays-$placement/grid"
    cmp "$T/grid" "$MNT/arrays-$placement/grid" ||
        fail "the array file written with placement=$placement reads back wrong"
done

# Last, the whole file through the page cache with cmp, as a user would: the
# kernel asks for up to 1 MiB at once, which crosses a row of a tile every
# 128 bytes. Polled with a deadline so that a read that never returns fails
# the test instead of hanging it (the teardown then frees the reader).
dd if="$source_file" of="$FILE" bs=1M status=none || fail "dd into the emptied array file failed"
drop_file_cache "$FILE"
node_ids=$(python3 -c 'import json, sys; print(*[n["id"] for n in json.load(open(sys.argv[1]))])' \
    "$T/status.json")
for node in $node_ids; do
    "$TESSERA_TOOL" node stats "$node" --reset --meta "$META" >/dev/null ||
        fail "node stats --reset $node failed"
done
cmp "$source_file" "$FILE" >"$T/cmp.out" 2>&1 &
cmp_pid=$!
deadline=$(($(now_ms) + 30000))
while kill -0 "$cmp_pid" 2>/dev/null; do
    (($(now_ms) < deadline)) || fail "cmp of the array file through the page cache did not finish in 30 s (the mount's log: $(grep -c 'writing device' "$STATE/logs/mount.log") 'fuse: writing device' errors)"
    sleep 0.1
done
wait "$cmp_pid" || fail "cmp through the page cache: $(cat "$T/cmp.out")"
# A read asks a datanode once for all it needs of a tile (whole tiles in the
# mount's cache, or the tile's run in that read), not once per 128-byte row
# (65536 requests). Each kernel read spans 16 tiles: at most 16 asks a tile.
tile_reads=0
for node in $node_ids; do
    reads=$("$TESSERA_TOOL" node stats "$node" --json --meta "$META" |
        python3 -c 'import json, sys; print(sum(t["reads"] for t in json.load(sys.stdin)["tiles_read"]))') ||
        fail "node stats $node failed"
    tile_reads=$((tile_reads + reads))
done
((tile_reads >= 64 && tile_reads <= 64 * 16)) ||
    fail "cmp of 64 tiles made $tile_reads tile reads on the datanodes (expected 64 to 1024)"
log "cmp through the page cache reads the same 8 MiB back, with $tile_reads tile reads"

assert_daemons_alive
log "ok"
