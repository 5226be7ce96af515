#!/usr/bin/env bash
#
# quadrants.sh: issue 31's array test on 4 hosts (tests/multihost/lib.sh:
# network namespaces, every link capped with tc). Host 1 writes a
# 16384x4096 f32 array (256 MiB, 256 tiles of 1 MiB) declared with
# mesh=2x2, in a copies=1 directory; then, before any rebalance, the four
# hosts each read one quadrant (64 MiB: 8192 rows of 8 KiB preads,
# O_DIRECT or buffered: --io) at once. Printed per build and way of
# reading: where the tiles are (per host), the wall time of the four reads,
# their total MB/s and the bytes the four hosts' links received (median
# pass), and each reader's sha256 checked against the source. Buffered
# readers' pages are dropped before each pass. A pass's time runs from the
# first reader's start of reading to the last one's end (quadrant_read.py
# START_AT: the readers start together, their interpreters' start-up
# not counted).
#
# --baseline BUILD_DIR runs the same on an older build (e.g. a worktree at
# e24bd07, before array homes: the writer's dynamic placement put most
# tiles on its own datanode) and prints the speedup. Not part of
# `meson test`. Needs root, network namespaces and FUSE.
set -euo pipefail
exec </dev/null

usage() {
    cat <<'USAGE'
usage: bench/quadrants.sh [--link MBPS] [--passes N] [--io direct|buffered|both]
                          [--baseline BUILD_DIR]

  --link MBPS          cap of every host's link, MB/s (default 25)
  --passes N           read passes per build, median taken (default 3)
  --io WAY             the readers' preads: direct (O_DIRECT, default), buffered
                       (through the page cache) or both, one after the other
  --baseline BUILD_DIR also run an older build and print the speedup
  -h, --help           this text

Environment: TESSERA_BUILD=DIR (default ./build).
USAGE
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
link=25
passes=3
baseline=""
io=direct
one=0
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --link) link=${2:?--link needs MB/s}; shift 2 ;;
    --passes) passes=${2:?--passes needs a number}; shift 2 ;;
    --baseline) baseline=${2:?--baseline needs a build directory}; shift 2 ;;
    --io) io=${2:?--io needs direct, buffered or both}; shift 2 ;;
    --one) one=1; shift ;; # internal: measure TESSERA_BUILD once, print one result line
    *) echo "quadrants.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

case $io in
direct) ways="direct" ;;
buffered) ways="buffered" ;;
both) ways="direct buffered" ;;
*) echo "quadrants.sh: --io must be direct, buffered or both, not $io" >&2; exit 2 ;;
esac

if [ "$one" = 0 ]; then
    current=${TESSERA_BUILD:-$repo/build}
    results=()
    for build in "$current" ${baseline:+"$baseline"}; do
        [ -x "$build/tools/tessera" ] ||
            { echo "quadrants.sh: $build/tools/tessera not found; build first" >&2; exit 2; }
        # The run's log to stderr as it goes; its last line is the result.
        # One result line per way of reading, after the run's log.
        out=$(TESSERA_BUILD=$build "$0" --one --link "$link" --passes "$passes" --io "$io" |
            tee -a /dev/stderr)
        while read -r line; do
            results+=("$line")
        done < <(grep '^result ' <<<"$out" | cut -d' ' -f2-)
    done
    echo
    printf '%-44s %-9s %-16s %9s %8s %14s\n' build io "tiles host1..4" "read ms" "MB/s" "link rx MB"
    for line in "${results[@]}"; do
        printf '%-44s %-9s %-16s %9s %8s %14s\n' $line
    done
    if [ -n "$baseline" ]; then
        for way in $ways; do
            now=$(awk -v w="$way" '$2 == w { print $4; exit }' <<<"$(printf '%s\n' "${results[@]}")")
            before=$(awk -v w="$way" '$2 == w { n++; if (n == 2) { print $4; exit } }' \
                <<<"$(printf '%s\n' "${results[@]}")")
            awk -v b="$before" -v a="$now" -v w="$way" \
                'BEGIN { printf "speedup of the four quadrant reads, %s: %.2fx (the issue asks >= 2x)\n", w, b / a }'
        done
    fi
    exit 0
fi

# Host 1 writes 3/4 of the array over its one link with many tiles in
# flight: at 10 MB/s a write waits longer than the mounts' default 5 s.
export MH_LINK_MBPS=$link MH_NAME=bench-quadrants MH_IO_TIMEOUT_MS=${MH_IO_TIMEOUT_MS:-30000}
# shellcheck source=tests/multihost/lib.sh
source "$repo/tests/multihost/lib.sh"

ROWS=16384
COLS=4096
K=4

mh_up $K
dir=${MH_MNT[1]}/arrays
mh_exec 1 mkdir "$dir"
mh_exec 1 setfattr -n user.tessera.layout -v copies=1 "$dir"
mh_exec 1 touch "$dir/grid"
mh_exec 1 setfattr -n user.tessera.array -v "f32 ${ROWS}x${COLS} BLOCK,BLOCK mesh=2x2 threshold=1M" \
    "$dir/grid"
src=$(mh_random_file $((ROWS * COLS * 4)))
mh_exec 1 dd if="$src" of="$dir/grid" bs=1M conv=notrunc,fsync status=none ||
    mh_fail "writing the array failed"

# The reader: quadrant Q of FILE by one pread per row; prints the sha256.
reader=$repo/tests/integration/quadrant_read.py
expected=()
for ((q = 0; q < K; q++)); do
    expected[q]=$(python3 "$reader" "$src" "$q" "$ROWS" "$COLS" 0)
done

ino=$(mh_exec 1 stat -c %i "$dir/grid")
counts=""
for ((h = 1; h <= K; h++)); do
    counts+="$(mh_tiles_on "$h" "$ino" | grep -c . || true)"
    [ "$h" = "$K" ] || counts+=","
done
mh_log "tiles per host: $counts"
# The write speeds meta placed by (the datanodes' start-up probe, then real I/O).
mh_log "measured write MB/s per node: $(mh_status --json | python3 -c '
import json, sys
status = json.load(sys.stdin)
nodes = status["nodes"] if isinstance(status, dict) else status
print(" ".join("%s:%.0f" % (n.get("machine", n["id"]), n["write_bytes_per_sec"] / 1e6)
               for n in nodes))')"

# link_rx_total: bytes all hosts' links have received so far.
link_rx_total() {
    local h total=0
    for ((h = 1; h <= K; h++)); do
        total=$((total + $(mh_link_bytes "$h" rx)))
    done
    echo "$total"
}
lines=()
for way in $ways; do
    direct=0
    [ "$way" = direct ] && direct=1
    passes_ms=()
    for ((p = 1; p <= passes; p++)); do
        for ((h = 1; h <= K; h++)); do
            mh_drop_cache "$h" "${MH_MNT[$h]}/arrays/grid"
        done
        pids=()
        rx0=$(link_rx_total)
        # The readers open the file together, 3 s from now (time enough
        # for four interpreters to start: a pyenv shim takes 0.4 s of CPU
        # each), and the pass is timed from the first start of reading to
        # the last end, as the readers saw them.
        start_at=$(python3 -c 'import time; print("%.3f" % (time.monotonic() + 3))')
        for ((h = 1; h <= K; h++)); do
            mh_exec "$h" python3 "$reader" "${MH_MNT[$h]}/arrays/grid" $((h - 1)) "$ROWS" "$COLS" \
                "$direct" "$start_at" >"$MH_SHM/sum.$h" &
            pids+=($!)
        done
        for pid in "${pids[@]}"; do
            wait "$pid" || mh_fail "a quadrant read ($way) failed"
        done
        pass_ms=$(cat "$MH_SHM"/sum.[1-$K] | awk '
            NR == 1 || $2 < first { first = $2 }
            NR == 1 || $3 > last { last = $3 }
            END { printf "%d", (last - first) * 1000 }')
        # ms and link MB of the pass, sorted together by ms below.
        passes_ms+=("$pass_ms:$((($(link_rx_total) - rx0) / 1000000))")
        for ((h = 1; h <= K; h++)); do
            [ "$(cut -d' ' -f1 "$MH_SHM/sum.$h")" = "${expected[$((h - 1))]}" ] ||
                mh_fail "host$h read other bytes of quadrant $((h - 1)) than were written ($way)"
        done
    done
    median=$(printf '%s\n' "${passes_ms[@]}" | sort -n -t: -k1,1 | sed -n "$(((passes + 1) / 2))p")
    mh_log "$way passes (ms:link rx MB): ${passes_ms[*]}"
    ms=${median%%:*}
    mbps=$(awk -v b=$((ROWS * COLS * 4)) -v ms="$ms" 'BEGIN { printf "%.1f", b / ms / 1000 }')
    lines+=("result $TESSERA_BUILD $way $counts $ms $mbps ${median##*:}")
done
mh_down
printf '%s\n' "${lines[@]}"
