#!/usr/bin/env bash
#
# rebalance.sh: profile-guided rebalancing on 4 hosts (issue 6; Wang &
# Kaeli, seed 004), measured on the multi-host harness
# (tests/multihost/lib.sh: network namespaces, links capped with tc).
#
# Workload (the issue's): on each host one process writes its own region of
# one shared file through its own mount (placement spreads the tiles over
# all datanodes), then reads it back; the reads are O_DIRECT, so every byte
# comes from the datanodes. Profiling is on for the file's directory.
#
# A. Uniform disks: `tessera rebalance apply --policy frequent`; the table
#    shows the read throughput of all hosts at once before and after, and
#    the share of each host's read bytes that its own datanode served (the
#    clients' profile counters).
# B. Host 4's disk throttled to a quarter of the others' (every datanode
#    throttled with `tessera node throttle`, so the disks are the
#    bottleneck where a tile is local): the same workload on a fresh file
#    per policy, frequent vs balanced vs lbm; the table shows where the tiles went
#    (tiles on host 4), the planner's predicted makespan, the performance
#    model's predicted time (calibrated first with `tessera model
#    calibrate` from host 1) and the measured read time after each
#    rebalance. Issue 32's goal: balanced, deciding by the model, measures
#    at least as fast as every other policy.
#
# Not part of `meson test`. Needs root, network namespaces and FUSE.
set -euo pipefail
exec </dev/null

usage() {
    cat <<'USAGE'
usage: bench/rebalance.sh [--region MIB] [--link MBPS] [--disk MBPS] [--passes N]

  --region MIB   region each host writes and reads (default 128)
  --link MBPS    cap of every host's link, MB/s = 10^6 B/s (default 25)
  --disk MBPS    disk throttle of the fast datanodes in part B (default 40;
                 host 4 gets a quarter of it)
  --passes N     read passes per measurement, median taken (default 3)
  -h, --help     this text

Environment: TESSERA_BUILD=DIR (default ./build).
USAGE
}

region=128
link=25
disk=40
passes=3
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --region) region=${2:?--region needs MiB}; shift 2 ;;
    --link) link=${2:?--link needs MB/s}; shift 2 ;;
    --disk) disk=${2:?--disk needs MB/s}; shift 2 ;;
    --passes) passes=${2:?--passes needs a number}; shift 2 ;;
    *) echo "rebalance.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export TESSERA_BUILD=${TESSERA_BUILD:-$repo/build}
[ -x "$TESSERA_BUILD/tools/tessera" ] ||
    { echo "rebalance.sh: $TESSERA_BUILD/tools/tessera not found; build first (ninja -C build)" >&2; exit 2; }
# A datanode throttled to a few MB/s keeps requests queued for seconds:
# the mounts wait up to 30 s before calling a datanode dead.
export MH_LINK_MBPS=$link MH_NAME=bench-rebalance MH_IO_TIMEOUT_MS=${MH_IO_TIMEOUT_MS:-30000}
# shellcheck source=tests/multihost/lib.sh
source "$repo/tests/multihost/lib.sh"

MIB=1048576
K=4
tool() { mh_exec 1 "$MH_TOOL" "$@"; }

# write_regions DIR: host h writes a random region h of DIR/shared.
write_regions() {
    local dir=$1 h pids=() src
    for ((h = 1; h <= K; h++)); do
        src=$(mh_random_file "${region}M")
        mh_exec "$h" dd if="$src" of="${MH_MNT[$h]}/$dir/shared" bs=1M seek=$(((h - 1) * region)) \
            conv=notrunc,fsync status=none &
        pids+=($!)
    done
    for h in "${pids[@]}"; do
        wait "$h" || mh_fail "a region write of $dir/shared failed"
    done
}

# read_ms DIR: every host reads its region at once; the median over
# $passes passes of the wall time, in ms.
read_ms() {
    local dir=$1 h p t0 pids times=()
    for ((p = 1; p <= passes; p++)); do
        pids=()
        t0=$(mh_now_ms)
        for ((h = 1; h <= K; h++)); do
            mh_exec "$h" dd if="${MH_MNT[$h]}/$dir/shared" of=/dev/null bs=1M \
                skip=$(((h - 1) * region)) count="$region" iflag=direct status=none &
            pids+=($!)
        done
        for h in "${pids[@]}"; do
            wait "$h" || mh_fail "a region read of $dir/shared failed"
        done
        times+=($(($(mh_now_ms) - t0)))
    done
    printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((passes + 1) / 2))p"
}

mbps() { awk -v b="$1" -v ms="$2" 'BEGIN { printf "%.1f", b / ms / 1000 }'; }

# local_shares DIR: "hostN:PCT" of each machine's read bytes served locally.
local_shares() {
    tool profile show "${MH_MNT[1]}/$1" --meta "$MH_META" --json | python3 -c '
import json, sys
per = {}
def walk(o):
    if isinstance(o, dict):
        if "machine" in o and "bytes_read" in o and "local_bytes" in o:
            m = per.setdefault(o["machine"], [0, 0])
            m[0] += o["bytes_read"] + o.get("bytes_written", 0)
            m[1] += o["local_bytes"]
        for v in o.values(): walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
walk(json.load(sys.stdin))
print(" ".join("%s:%.0f%%" % (m, 100.0 * l / t if t else 0) for m, (t, l) in sorted(per.items())))'
}

# throttle_disks: host K's datanode at a quarter of $disk, the others at $disk.
throttle_disks() {
    local h rate
    for ((h = 1; h <= K; h++)); do
        rate=$disk
        [ "$h" = "$K" ] && rate=$slow_rate
        tool node throttle "$(mh_node_id "$h")" "$rate" --meta "$MH_META" >/dev/null
    done
}

# unthrottle_disks: every datanode at full speed again.
unthrottle_disks() {
    local h
    for ((h = 1; h <= K; h++)); do
        tool node throttle "$(mh_node_id "$h")" off --meta "$MH_META" >/dev/null
    done
}

# run_case DIR POLICY [HETERO]: profile, write, read, plan, apply, read.
# With HETERO=1 the disks are throttled after the write (the comparison is
# about reads) and during the rebalance. Sets BEFORE_MS, AFTER_MS, PLAN (the
# plan's text) and SHARES (after).
run_case() {
    local dir=$1 policy=$2 hetero=${3:-0}
    mh_exec 1 mkdir "${MH_MNT[1]}/$dir"
    # Round-robin spreads every region evenly (3/4 remote), as the issue's
    # workload has it; dynamic placement would already favour local disks.
    # One copy: with the cluster's default two, the writer's machine keeps
    # a copy of every tile it writes, so each host's region is local from
    # the start and there is nothing to rebalance.
    mh_exec 1 setfattr -n user.tessera.layout -v "placement=roundrobin copies=1" "${MH_MNT[1]}/$dir"
    tool profile start "${MH_MNT[1]}/$dir" --meta "$MH_META" >/dev/null
    write_regions "$dir"
    [ "$hetero" = 1 ] && throttle_disks
    BEFORE_MS=$(read_ms "$dir")
    sleep 2 # a profile flush
    PLAN=$(tool rebalance plan "${MH_MNT[1]}/$dir" --policy "$policy" --meta "$MH_META" \
        --network-mbps "$link")
    tool rebalance apply "${MH_MNT[1]}/$dir" --policy "$policy" --meta "$MH_META" \
        --network-mbps "$link" >/dev/null 2>&1 || mh_fail "apply $policy on $dir failed"
    tool profile reset "${MH_MNT[1]}/$dir" --meta "$MH_META" >/dev/null
    AFTER_MS=$(read_ms "$dir")
    sleep 2
    SHARES=$(local_shares "$dir")
    if [ "$hetero" = 1 ]; then unthrottle_disks; fi
}

mh_up $K
bytes=$((K * region * MIB))
report=()

# ---- A ----------------------------------------------------------------
run_case uniform frequent
report+=("A. uniform disks, links $link MB/s, $K x $region MiB regions, policy frequent")
report+=("$(printf '   %-28s %10s %10s' '' before after)")
report+=("$(printf '   %-28s %10s %10s' 'read, all hosts at once MB/s' "$(mbps $bytes "$BEFORE_MS")" "$(mbps $bytes "$AFTER_MS")")")
report+=("$(printf '   %-28s %10s %10s' 'read wall time ms' "$BEFORE_MS" "$AFTER_MS")")
report+=("   speedup $(awk -v b="$BEFORE_MS" -v a="$AFTER_MS" 'BEGIN { printf "%.1fx", b / a }'); local share after: $SHARES")

# ---- B ----------------------------------------------------------------
tool model calibrate --mount "${MH_MNT[1]}" --meta "$MH_META" --machine host1 --probe-size 32M \
    >/dev/null || mh_fail "tessera model calibrate failed"
slow_rate=$(awk -v d="$disk" 'BEGIN { printf "%g", d / 4 }')
report+=("" "B. host$K's disk at $slow_rate MB/s, the others at $disk MB/s; links $link MB/s")
report+=("$(printf '   %-9s %14s %20s %20s %12s %12s %12s' policy 'tiles on host4' 'makespan (s)' 'perf model (s)' 'before MB/s' 'after MB/s' speedup)")
for policy in frequent balanced lbm; do
    run_case "hetero-$policy" "$policy" 1
    ino=$(mh_exec 1 stat -c %i "${MH_MNT[1]}/hetero-$policy/shared")
    sleep 2 # garbage collection of the moved tiles' old files
    on_slow=$(mh_tiles_on "$K" "$ino" | grep -c . || true)
    predicted=$(sed -n 's/^makespan: *\([0-9.]*\) s -> \([0-9.]*\) s.*/\1 \2/p' <<<"$PLAN" | head -1 |
        awk '{ printf "%.1f -> %.1f", $1, $2 }')
    modelled=$(sed -n 's/^performance model[^:]*: *\([0-9.]*\) s -> \([0-9.]*\) s.*/\1 \2/p' <<<"$PLAN" |
        head -1 | awk '{ printf "%.1f -> %.1f", $1, $2 }')
    report+=("$(printf '   %-9s %14s %20s %20s %12s %12s %12s' "$policy" "$on_slow/$((K * region))" \
        "${predicted:-?}" "${modelled:-?}" "$(mbps $bytes "$BEFORE_MS")" "$(mbps $bytes "$AFTER_MS")" \
        "$(awk -v b="$BEFORE_MS" -v a="$AFTER_MS" 'BEGIN { printf "%.1fx", b / a }')")")
done

mh_down
echo
printf '%s\n' "${report[@]}"
