#!/usr/bin/env bash
#
# array.sh: reading a sub-cube of a 3-D array, array layout vs linear
# striping (issue 5; Panda, seed 000, section 3.1).
#
# One cluster of NODES datanodes (default 4), each throttled to RATE MB/s
# with `tessera node throttle` (MB = 10^6 bytes), data directories in RAM
# (/dev/shm), so the throttle is the disk. Two copies of one random N^3
# float32 array (default 512^3 = 512 MiB) are written with dd:
#   cube.array   user.tessera.array "f32 NxNxN BLOCK,BLOCK,BLOCK mesh=2x2x2"
#                (tiles of at most 1 MiB: 64^3 floats for N = 512)
#   cube.linear  plain linear striping, 1 MiB tiles
# Then a SUB^3 sub-cube (default 128^3) is read from each, row by row: one
# pread of SUB floats per row, with O_DIRECT so that the kernel's page cache
# and read-ahead add nothing and every row is one request to the mount; the
# bytes are checked against the source. Per read the table shows the wall
# time, the distinct tiles the datanodes read and their TILE_READ requests
# and bytes (from `tessera node stats`, reset before each read), for a
# sub-cube on the tile grid and one off it.
#
# It starts its own cluster (`tessera up --state DIR --port P`) and stops it
# on every exit path (trap): `tessera down`, `fusermount3 -uz` if a mount is
# left, then the state directory and the source file. Not part of `meson test`.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/array.sh [--n N] [--sub S] [--rate MBPS] [--nodes M] [--port BASE]

  --n N          array extent per dimension, float32 (default 512: 512 MiB)
  --sub S        sub-cube extent (default 128)
  --rate MBPS    throttle of every datanode, MB/s = 10^6 bytes/s (default 100)
  --nodes M      datanodes (default 4)
  --port BASE    meta's port (datanode i uses BASE+i); default from the pid
  -h, --help     this text

Environment: TESSERA_BUILD=DIR (default ./build), ARRAY_STATE=DIR (where the
cluster's state is made, default /dev/shm).
USAGE
}

n=512
sub=128
rate=100
nodes=4
port=$((30000 + ($$ % 900) * 20))
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --n) n=${2:?--n needs a number}; shift 2 ;;
    --sub) sub=${2:?--sub needs a number}; shift 2 ;;
    --rate) rate=${2:?--rate needs MB/s}; shift 2 ;;
    --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
    --port) port=${2:?--port needs a number}; shift 2 ;;
    *) echo "array.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ "$sub" -le "$n" ] || { echo "array.sh: --sub must not exceed --n" >&2; exit 2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TESSERA_BUILD:-$repo/build}
tessera=$build/tools/tessera
[ -x "$tessera" ] || { echo "array.sh: $tessera not found; build first (ninja -C build)" >&2; exit 2; }
command -v fusermount3 >/dev/null || { echo "array.sh: fusermount3 is missing" >&2; exit 2; }
command -v python3 >/dev/null || { echo "array.sh: python3 is missing" >&2; exit 2; }

bytes=$((n * n * n * 4))
state_parent=${ARRAY_STATE:-/dev/shm}
mkdir -p "$state_parent"
state=$(mktemp -d "$state_parent/tessera-array-state.XXXXXX")
source_file=$(mktemp /dev/shm/tessera-array-source.XXXXXX)
mnt=$state/mnt
cluster_up=0

log() { printf '# %s\n' "$*" >&2; }

cleanup() {
    local status=$?
    if [ "$cluster_up" = 1 ]; then
        "$tessera" down --state "$state" >/dev/null 2>&1 || true
    fi
    if grep -qs " $mnt fuse" /proc/self/mounts; then
        fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true
    fi
    rm -f "$source_file"
    rm -rf "$state"
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The first block of nodes+1 ports from $port that nobody listens on.
for _ in $(seq 1 200); do
    busy=0
    for ((p = port; p <= port + nodes; p++)); do
        if [ -n "$(ss -Hltn "sport = :$p" 2>/dev/null)" ]; then
            busy=1
            break
        fi
    done
    [ "$busy" = 0 ] && break
    port=$((port + 20))
done
meta=tcp://127.0.0.1:$port

log "starting $nodes datanodes on ports $port..$((port + nodes)) in $state"
"$tessera" up --state "$state" --port "$port" --nodes "$nodes" --mount "$mnt" --log-level warn \
    >"$state/up.out" 2>&1 || { cat "$state/up.out" >&2; echo "array.sh: tessera up failed" >&2; exit 1; }
cluster_up=1
node_ids=$("$tessera" status --json --meta "$meta" | python3 -c \
    'import json, sys; print(" ".join(str(n["id"]) for n in json.load(sys.stdin)))')
for id in $node_ids; do
    "$tessera" node throttle "$id" "$rate" --meta "$meta" >/dev/null
done
log "datanodes $node_ids throttled to $rate MB/s each"

log "writing two copies of a random ${n}^3 float32 array ($((bytes >> 20)) MiB)"
head -c "$bytes" /dev/urandom >"$source_file"
touch "$mnt/cube.array" "$mnt/cube.linear"
"$tessera" layout set "$mnt/cube.array" "f32 ${n}x${n}x${n} BLOCK,BLOCK,BLOCK mesh=2x2x2" >&2
for name in cube.array cube.linear; do
    start=$(date +%s%N)
    dd if="$source_file" of="$mnt/$name" bs=1M conv=fsync status=none
    end=$(date +%s%N)
    log "$name written in $(((end - start) / 1000000)) ms"
done
"$tessera" layout "$mnt/cube.array" --meta "$meta" >"$state/layout.txt"
head -4 "$state/layout.txt" >&2

cat >"$state/read.py" <<'PY'
import json, mmap, os, subprocess, sys, time
tool, meta, path, source, n, sub, z0, y0, x0 = sys.argv[1:10]
n, sub, lower = int(n), int(sub), (int(z0), int(y0), int(x0))
nodes = sys.argv[10].split()
E = 4
src = mmap.mmap(os.open(source, os.O_RDONLY), 0, prot=mmap.PROT_READ)
ino = os.stat(path).st_ino

def stats(reset):
    tiles, reads, read_bytes = set(), 0, 0
    for node in nodes:
        args = [tool, "node", "stats", node, "--json", "--meta", meta] + (["--reset"] if reset else [])
        out = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
        reads += out["ops"].get("TILE_READ", 0)
        read_bytes += out["bytes_read"]
        tiles |= {(t["ino"], t["tile"]) for t in out["tiles_read"] if t["ino"] == ino}
    return tiles, reads, read_bytes

stats(True)
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
length = sub * E
start = time.monotonic()
for z in range(lower[0], lower[0] + sub):
    for y in range(lower[1], lower[1] + sub):
        offset = ((z * n + y) * n + lower[2]) * E
        if os.pread(fd, length, offset) != src[offset:offset + length]:
            sys.exit("row z=%d y=%d differs from the source" % (z, y))
elapsed = time.monotonic() - start
os.close(fd)
tiles, reads, read_bytes = stats(False)
print(json.dumps({"seconds": elapsed, "tiles": len(tiles), "tile_reads": reads,
                  "bytes": read_bytes, "useful": sub ** 3 * E}))
PY

aligned=$((n / 2 - sub / 2))
aligned=$((aligned / 64 * 64))
unaligned=$((aligned + 7))
[ $((unaligned + sub)) -le "$n" ] || unaligned=$((n - sub))
printf '\nReading a %d^3 sub-cube of a %d^3 float32 array, row by row (%d preads of %d B, O_DIRECT)\n' \
    "$sub" "$n" $((sub * sub)) $((sub * 4))
printf '%d datanodes throttled to %s MB/s each; array tiles %s, linear tiles 1 MiB\n\n' \
    "$nodes" "$rate" "$(getfattr --only-values -n user.tessera.array "$mnt/cube.array" | sed 's/.*threshold=//')"
printf '%-8s %-16s %8s %11s %12s %9s %10s\n' layout "lower corner" tiles "TILE_READs" "MB from disk" seconds "MB/s (sub)"
for corner in "$aligned" "$unaligned"; do
    for name in array linear; do
        result=$(python3 "$state/read.py" "$tessera" "$meta" "$mnt/cube.$name" "$source_file" "$n" \
            "$sub" "$corner" "$corner" "$corner" "$node_ids")
        python3 - "$name" "$corner" "$result" <<'PY'
import json, sys
name, corner, r = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
print("%-8s %-16s %8d %11d %12.1f %9.3f %10.1f" % (name, "%d,%d,%d" % (corner, corner, corner),
      r["tiles"], r["tile_reads"], r["bytes"] / 1e6, r["seconds"], r["useful"] / 1e6 / r["seconds"]))
PY
    done
done
