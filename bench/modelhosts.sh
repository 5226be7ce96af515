#!/usr/bin/env bash
#
# modelhosts.sh: the performance model (tessera model, issue 32) against
# measurements on the multi-host harness (tests/multihost/lib.sh: network
# namespaces, every host's link capped with tc), the part of
# bench/model.sh a single-machine cluster cannot show: a transfer whose
# remote tiles cross the client's link.
#
# K hosts (default 4), each with a datanode and a mount; tiles in
# /dev/shm. Host 1 calibrates (`tessera model calibrate --machine host1`,
# which also measures host 1's link) and is the client of every
# configuration: a read or a write of SIZE MiB by 1-2 dd processes, each
# its own file, into a directory of round-robin placement (so 1 - 1/K of
# the tiles live on other hosts), or one array file; two configurations
# with one dd on every host at once (each its own file of SIZE/K MiB,
# predicted with machines=host1,...,hostK); one configuration
# with every disk throttled below the link (the disks are then the
# bottleneck). Writes are dd conv=fsync; reads first drop the file's
# page cache. Predicted with `tessera model predict --machine host1`;
# each cell the median of RUNS runs, SPREAD how far they lie apart, as
# bench/model.sh prints them (it runs this script and joins the rows).
#
# Not part of `meson test`. Needs root, network namespaces and FUSE
# (exit 77 without them).
set -euo pipefail
exec </dev/null

usage() {
    cat <<'USAGE'
usage: bench/modelhosts.sh [--size MIB] [--runs N] [--hosts K] [--link MBPS] [--disk MBPS]
                           [--first N] [--rows-only]

Predicts and measures reads and writes from host 1 of K shaped hosts and
prints predicted and measured seconds and the error.

  --size MIB     bytes per transfer in MiB (default 64)
  --runs N       measurements per configuration; the median counts (default 3)
  --hosts K      hosts (default 4)
  --link MBPS    every host's link, MB/s = 10^6 B/s (default 25)
  --disk MBPS    the throttle of every disk in the throttled configuration
                 (default 5)
  --first N      number of the first row (default 1)
  --rows-only    print the rows alone (no header, no summary): bench/model.sh
  -h, --help     this text

Environment: TESSERA_BUILD=DIR (default ./build).
USAGE
}

size_mib=64
runs=3
hosts=4
link=25
disk=5
first=1
rows_only=0
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --size) size_mib=${2:?--size needs MiB}; shift 2 ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --hosts) hosts=${2:?--hosts needs a number}; shift 2 ;;
    --link) link=${2:?--link needs MB/s}; shift 2 ;;
    --disk) disk=${2:?--disk needs MB/s}; shift 2 ;;
    --first) first=${2:?--first needs a number}; shift 2 ;;
    --rows-only) rows_only=1; shift ;;
    *) echo "modelhosts.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
for v in "$size_mib" "$runs" "$hosts" "$link" "$disk" "$first"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "modelhosts.sh: $v is not a positive whole number" >&2; exit 2; }
done
[ "$hosts" -ge 2 ] || { echo "modelhosts.sh: --hosts wants 2 or more (a remote tile)" >&2; exit 2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export TESSERA_BUILD=${TESSERA_BUILD:-$repo/build}
[ -x "$TESSERA_BUILD/tools/tessera" ] ||
    { echo "modelhosts.sh: $TESSERA_BUILD/tools/tessera not found; build first" >&2; exit 2; }
# A throttled datanode keeps requests queued for seconds: wait 30 s
# before calling one dead. The harness's own messages go to stderr.
export MH_LINK_MBPS=$link MH_NAME=bench-modelhosts MH_TMPDIR=/dev/shm
export MH_IO_TIMEOUT_MS=${MH_IO_TIMEOUT_MS:-30000}
# The table goes to the caller's stdout (fd 3); everything else, the
# harness's messages and its teardown at exit included, to stderr, so
# that bench/model.sh reads rows alone.
exec 3>&1 1>&2
# shellcheck source=tests/multihost/lib.sh
source "$repo/tests/multihost/lib.sh"

log() { printf '# %s\n' "$*" >&2; }
tool() { mh_exec 1 "$MH_TOOL" "$@"; }

mh_up "$hosts"
source_file=$(mh_random_file "${size_mib}M")
tool model calibrate --mount "${MH_MNT[1]}" --meta "$MH_META" --machine host1 --probe-size 32M

# The timed part runs inside host 1 (one mh_exec), timed by bash itself
# there: no fork of date, no nsenter inside the span.
# shellcheck disable=SC2016
timed_script='
op=$1 dir=$2 clients=$3 per_mib=$4 src=$5 pids=()
if [ "$op" = write ]; then
    rm -f "$dir"/f*
    sync
    start=${EPOCHREALTIME/[.,]/}
    for ((i = 0; i < clients; i++)); do
        dd if="$src" of="$dir/f$i" bs=1M count="$per_mib" conv=fsync status=none & pids+=($!)
    done
else
    for ((i = 0; i < clients; i++)); do dd if="$dir/f$i" iflag=nocache count=0 status=none; done
    start=${EPOCHREALTIME/[.,]/}
    for ((i = 0; i < clients; i++)); do
        dd if="$dir/f$i" of=/dev/null bs=1M status=none & pids+=($!)
    done
fi
for p in "${pids[@]}"; do wait "$p" || { echo "a timed dd failed" >&2; exit 1; }; done
end=${EPOCHREALTIME/[.,]/}
awk -v us=$((end - start)) "BEGIN { printf \"%.4f\n\", us / 1e6 }"
'
timed() { mh_exec 1 bash -c "$timed_script" timed "$@"; }

median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
                                        else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

rows=()
throttled=-
# add_row OP TILE CLIENTS COPIES LAYOUT PREDICTED TIMES...: row n, the
# median of TIMES measured, SPREAD how far they lie apart.
add_row() {
    local op=$1 tile=$2 clients=$3 copies=$4 layout=$5 predicted=$6 measured spread
    shift 6
    measured=$(printf '%s\n' "$@" | median)
    spread=$(printf '%s\n' "$@" | awk -v m="$measured" 'NR == 1 { lo = hi = $1 }
        { if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 } END { print 100 * (hi - lo) / m }')
    rows+=("$(printf '%-3s %-5s %5s %-7s %2s %6s %2s %-30s %9.3f %9.3f %6.0f%% %+7.1f%%' "$n" \
        "$op" "$hosts" "$tile" "$clients" "$copies" "$throttled" "$layout,${hosts}hosts@${link}MB/s" \
        "$predicted" "$measured" "$spread" \
        "$(awk -v p="$predicted" -v m="$measured" 'BEGIN { print 100 * (p - m) / m }')")")
    log "${rows[-1]}"
}
n=$((first - 1))
# run_config OP TILE CLIENTS COPIES LAYOUT(linear|array:SHAPE:TYPE:mesh=AxB)
run_config() {
    local op=$1 tile=$2 clients=$3 copies=$4 layout=$5 bytes dir predicted
    n=$((n + 1))
    bytes=$((size_mib * 1048576))
    dir=${MH_MNT[1]}/c$n
    mh_exec 1 mkdir -p "$dir"
    if [[ $layout == array:* ]]; then
        local shape type mesh dist
        IFS=: read -r _ shape type mesh <<<"$layout"
        dist=$(echo "$shape" | sed 's/[0-9]\+/BLOCK/g; s/x/,/g')
        mh_exec 1 setfattr -n user.tessera.layout -v "tile=$tile copies=$copies" "$dir"
        mh_exec 1 setfattr -n user.tessera.array -v "$type $shape $dist $mesh threshold=$tile" "$dir"
        bytes=$(awk -v s="$shape" 'BEGIN { n = split(s, d, "x"); b = 4; for (i = 1; i <= n; i++) b *= d[i]; print b }')
    else
        mh_exec 1 setfattr -n user.tessera.layout -v "tile=$tile copies=$copies placement=roundrobin" "$dir"
    fi
    predicted=$(tool model predict --meta "$MH_META" --machine host1 --json op="$op" \
        size=$((bytes / 1048576))M tile="$tile" clients="$clients" copies="$copies" \
        layout="$layout" | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["seconds"])')
    local times=() per_mib=$((bytes / clients / 1048576))
    for ((r = 0; r < runs; r++)); do
        local t
        if [ "$op" != write ] && [ "$r" = 0 ]; then
            timed write "$dir" "$clients" "$per_mib" "$source_file" >/dev/null ||
                mh_fail "writing the files config $n reads failed"
        fi
        t=$(timed "$op" "$dir" "$clients" "$per_mib" "$source_file") ||
            mh_fail "config $n: a timed $op failed"
        times+=("$t")
    done
    add_row "$op" "$tile" "$clients" "$copies" "$layout" "$predicted" "${times[@]}"
    mh_exec 1 rm -rf "$dir"
}

# run_spread OP COPIES: one client on each host, each reading or writing
# its own file of SIZE/K MiB in a round-robin directory at once, predicted
# with machines=host1,...,hostK. Timed from here around the K mh_exec's
# (their start-up, a few ms, is in the time).
run_spread() {
    local op=$1 copies=$2 dir predicted per_mib=$((size_mib / hosts)) h names
    n=$((n + 1))
    dir=c$n
    mh_exec 1 mkdir -p "${MH_MNT[1]}/$dir"
    mh_exec 1 setfattr -n user.tessera.layout -v "tile=1M copies=$copies placement=roundrobin" \
        "${MH_MNT[1]}/$dir"
    names=$(seq -s, -f 'host%g' 1 "$hosts")
    predicted=$(tool model predict --meta "$MH_META" --machine host1 --json op="$op" \
        size="${size_mib}M" tile=1M clients="$hosts" copies="$copies" layout=linear \
        machines="$names" | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["seconds"])')
    local times=() pids=() start end
    for ((r = 0; r < runs; r++)); do
        if [ "$op" = write ] || [ "$r" = 0 ]; then
            for ((h = 1; h <= hosts; h++)); do
                mh_exec "$h" rm -f "${MH_MNT[$h]}/$dir/f$h"
            done
            sync
        fi
        if [ "$op" != write ] && [ "$r" = 0 ]; then
            for ((h = 1; h <= hosts; h++)); do
                mh_exec "$h" dd if="$source_file" of="${MH_MNT[$h]}/$dir/f$h" bs=1M \
                    count="$per_mib" conv=fsync status=none || mh_fail "writing host $h's file failed"
            done
        fi
        if [ "$op" != write ]; then
            for ((h = 1; h <= hosts; h++)); do
                mh_exec "$h" dd if="${MH_MNT[$h]}/$dir/f$h" iflag=nocache count=0 status=none
            done
        fi
        pids=()
        start=${EPOCHREALTIME/[.,]/}
        for ((h = 1; h <= hosts; h++)); do
            if [ "$op" = write ]; then
                mh_exec "$h" dd if="$source_file" of="${MH_MNT[$h]}/$dir/f$h" bs=1M \
                    count="$per_mib" conv=fsync status=none &
            else
                mh_exec "$h" dd if="${MH_MNT[$h]}/$dir/f$h" of=/dev/null bs=1M status=none &
            fi
            pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p" || mh_fail "config $n: a timed $op failed"; done
        end=${EPOCHREALTIME/[.,]/}
        times+=("$(awk -v us=$((end - start)) 'BEGIN { printf "%.4f\n", us / 1e6 }')")
    done
    add_row "$op" 1M "$hosts" "$copies" linear,1/host "$predicted" "${times[@]}"
    mh_exec 1 rm -rf "${MH_MNT[1]}/$dir"
}

mesh=mesh=2x$((hosts / 2))
run_config write 1M 1 1 linear
run_config read 1M 1 1 linear
run_config read 1M 2 1 linear
run_config read 4M 1 1 linear
run_config write 1M 1 2 linear
run_config read 1M 1 2 linear
run_config read 1M 1 1 "array:4096x$((size_mib * 64)):f32:$mesh"
run_spread write 1
run_spread read 1
# Every disk below the link: the disks, not the link, hold the transfer.
for ((h = 1; h <= hosts; h++)); do
    tool node throttle "$(mh_node_id "$h")" "$disk" --meta "$MH_META" >/dev/null
done
sleep 2 # a heartbeat: meta (and so the model) knows the throttles
throttled=$disk
run_config write 1M 1 1 linear
run_config read 1M 1 1 linear

if [ "$rows_only" = 1 ]; then
    printf '%s\n' "${rows[@]}" >&3
    exit 0
fi
exec 1>&3
printf '%-3s %-5s %5s %-7s %2s %6s %2s %-30s %9s %9s %7s %8s\n' "#" OP HOSTS TILE CL COPIES TH LAYOUT \
    PREDICTED MEASURED SPREAD ERROR
printf '%s\n' "${rows[@]}"
printf '%s\n' "${rows[@]}" | awk '{ e = $NF; sub("%", "", e); e = e + 0; if (e < 0) e = -e; s += e;
    if (e > mx) mx = e; if (e <= 10) w++ }
    END { printf "# %d configurations: mean |error| %.1f%%, max %.1f%%, %d within 10%%\n",
                 NR, s / NR, mx, w }'
