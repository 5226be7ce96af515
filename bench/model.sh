#!/usr/bin/env bash
#
# model.sh: the performance model (tessera model, issue 32) against
# measurements on a local cluster: for each configuration it asks
# `tessera model predict` and then times the same transfer through the
# mount, and prints predicted / measured / error.
#
# Clusters of 2, 4 and 8 datanodes are started in turn (`tessera up`,
# state in /dev/shm so tiles stay in RAM and a throttle, `tessera node
# throttle`, is the disk), each calibrated first (`tessera model
# calibrate --mount`). A configuration is a read or a write of SIZE MiB
# by 1-4 clients (dd processes, each its own file of SIZE/clients, so
# the clients share the work as the model's do) into a directory whose
# user.tessera.layout sets the tile size, the copies and round-robin
# placement, or one array file (user.tessera.array, mesh over the
# datanodes). Writes are dd conv=fsync; reads first drop the file's page
# cache (dd iflag=nocache count=0). Each cell is the median of RUNS runs,
# SPREAD how far they lie apart ((slowest - fastest) / median): an error
# inside the spread is within what the machine itself varies;
# MB = 10^6 bytes. Then bench/modelhosts.sh adds the configurations of
# shaped hosts (network namespaces, links capped with tc: remote tiles
# cross a 25 MB/s link), numbered on. Not part of `meson test`; it is
# heavy: run it under the bench and heavy locks.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/model.sh [--size MIB] [--runs N] [--nodes "2 4 8"] [--slow MBPS] [--port BASE]
                      [--hosts K]

Predicts and measures reads and writes on local clusters and prints a table
of predicted and measured seconds and the error.

  --size MIB      bytes per transfer in MiB (default 128)
  --runs N        measurements per configuration; the median counts (default 3)
  --nodes "LIST"  cluster sizes (default "2 4 8")
  --slow MBPS     throttle of the slow datanode in the throttled cases (default 40)
  --port BASE     meta's port (datanode i uses BASE+i); default from the pid
  --hosts K       shaped hosts for bench/modelhosts.sh's configurations
                  (default 4; 0: none)
  -h, --help      this text

Environment: TESSERA_BUILD=DIR (default ./build), MODEL_STATE=DIR (default /dev/shm).
USAGE
}

size_mib=128
runs=3
node_counts="2 4 8"
slow=40
port=$((31000 + ($$ % 900) * 20))
hosts=4
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --size) size_mib=${2:?--size needs MiB}; shift 2 ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --nodes) node_counts=${2:?--nodes needs a list}; shift 2 ;;
    --slow) slow=${2:?--slow needs MB/s}; shift 2 ;;
    --port) port=${2:?--port needs a number}; shift 2 ;;
    --hosts) hosts=${2:?--hosts needs a number}; shift 2 ;;
    *) echo "model.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
is_number() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
for v in "$size_mib" "$runs" "$slow" "$port" $node_counts; do
    is_number "$v" || { echo "model.sh: $v is not a positive whole number" >&2; exit 2; }
done
[[ "$hosts" =~ ^[0-9]+$ ]] && { [ "$hosts" = 0 ] || [ "$hosts" -ge 2 ]; } ||
    { echo "model.sh: --hosts wants 0 or a number of hosts from 2" >&2; exit 2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TESSERA_BUILD:-$repo/build}
tessera=$build/tools/tessera
[ -x "$tessera" ] || { echo "model.sh: $tessera not found; build first" >&2; exit 2; }
command -v fusermount3 >/dev/null || { echo "model.sh: fusermount3 is missing" >&2; exit 2; }

state_parent=${MODEL_STATE:-/dev/shm}
state=$(mktemp -d "$state_parent/tessera-model-state.XXXXXX")
source_file=$(mktemp /dev/shm/tessera-model-source.XXXXXX)
mnt=$state/mnt
cluster_up=0
rows=()

log() { printf '# %s\n' "$*" >&2; }

stop_cluster() {
    if [ "$cluster_up" = 1 ]; then
        "$tessera" down --state "$state" >/dev/null 2>&1 || true
        cluster_up=0
    fi
    if grep -qs " $mnt fuse" /proc/self/mounts; then
        fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true
    fi
}

cleanup() {
    local status=$?
    stop_cluster
    rm -f "$source_file"
    rm -rf "$state"
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { [ -z "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }

start_cluster() {
    local m=$1 p ok
    stop_cluster
    rm -rf "${state:?}"/*
    for _ in $(seq 1 50); do
        ok=1
        for ((p = port; p <= port + m; p++)); do port_free "$p" || { ok=0; break; }; done
        [ "$ok" = 1 ] && break
        port=$((port + 20))
    done
    log "starting $m datanodes on ports $port..$((port + m))"
    "$tessera" up --state "$state" --port "$port" --nodes "$m" --log-level warn >"$state/up.out" 2>&1 ||
        { cat "$state/up.out" >&2; echo "model.sh: tessera up failed" >&2; exit 1; }
    cluster_up=1
    sleep 2 # a heartbeat or two: the disk rates
    "$tessera" model calibrate --state "$state" --mount "$mnt" >&2
}

# Timestamps in microseconds from bash itself (${EPOCHREALTIME/[.,]/}):
# $(date) would fork and exec inside every timed span (about 15 ms here,
# 15 % of a 128 MiB read).

median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
                                        else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# layout_dir NAME LAYOUT -> a fresh directory with that layout hint
layout_dir() {
    local dir=$mnt/$1
    rm -rf "$dir"
    mkdir -p "$dir"
    setfattr -n user.tessera.layout -v "$2" "$dir"
    echo "$dir"
}

# Writes CLIENTS files of BYTES/CLIENTS in DIR; prints the seconds.
timed_write() {
    local dir=$1 clients=$2 per=$(($3 / $2)) start i pids=()
    rm -f "$dir"/f*
    sync
    start=${EPOCHREALTIME/[.,]/}
    for ((i = 0; i < clients; i++)); do
        dd if="$source_file" of="$dir/f$i" bs=1M count=$((per / 1048576)) conv=fsync \
            status=none &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    local end=${EPOCHREALTIME/[.,]/}
    awk -v us=$((end - start)) 'BEGIN { printf "%.4f\n", us / 1e6 }'
}

# Reads the files a timed_write left, their page cache dropped first.
timed_read() {
    local dir=$1 clients=$2 start i pids=()
    for ((i = 0; i < clients; i++)); do
        dd if="$dir/f$i" iflag=nocache count=0 status=none
    done
    start=${EPOCHREALTIME/[.,]/}
    for ((i = 0; i < clients; i++)); do
        dd if="$dir/f$i" of=/dev/null bs=1M status=none &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    local end=${EPOCHREALTIME/[.,]/}
    awk -v us=$((end - start)) 'BEGIN { printf "%.4f\n", us / 1e6 }'
}

# run_config LABEL OP TILE CLIENTS COPIES LAYOUT(linear|array:...)
run_config() {
    local label=$1 op=$2 tile=$3 clients=$4 copies=$5 layout=$6 bytes dir predicted measured
    bytes=$((size_mib * 1048576))
    if [[ $layout == array:* ]]; then
        # array:SHAPE:TYPE:mesh=AxB -> the file's array hint
        IFS=: read -r _ shape type mesh <<<"$layout"
        local dist
        dist=$(echo "$shape" | sed 's/[0-9]\+/BLOCK/g; s/x/,/g')
        dir=$(layout_dir "c$label" "tile=$tile copies=$copies")
        setfattr -n user.tessera.array -v "$type $shape $dist $mesh threshold=$tile" "$dir"
        bytes=$(awk -v s="$shape" 'BEGIN { n = split(s, d, "x"); b = 4; for (i = 1; i <= n; i++) b *= d[i]; print b }')
    else
        dir=$(layout_dir "c$label" "tile=$tile copies=$copies placement=roundrobin")
    fi
    predicted=$("$tessera" model predict --state "$state" --json op="$op" \
        size=$((bytes / 1048576))M tile="$tile" clients="$clients" copies="$copies" \
        layout="$layout" | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["seconds"])')
    local times=()
    for ((r = 0; r < runs; r++)); do
        if [ "$op" = write ]; then
            times+=("$(timed_write "$dir" "$clients" "$bytes")")
        else
            [ "$r" = 0 ] && timed_write "$dir" "$clients" "$bytes" >/dev/null
            times+=("$(timed_read "$dir" "$clients")")
        fi
    done
    measured=$(printf '%s\n' "${times[@]}" | median)
    # How far the runs themselves lie apart: (slowest - fastest) / median.
    local spread
    spread=$(printf '%s\n' "${times[@]}" | awk -v m="$measured" 'NR == 1 { lo = hi = $1 }
        { if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 } END { print 100 * (hi - lo) / m }')
    rows+=("$(printf '%-3s %-5s %5s %-7s %2s %6s %2s %-30s %9.3f %9.3f %6.0f%% %+7.1f%%' "$label" \
        "$op" "$m" "$tile" "$clients" "$copies" "$throttled" "$layout" "$predicted" "$measured" \
        "$spread" "$(awk -v p="$predicted" -v m="$measured" 'BEGIN { print 100 * (p - m) / m }')")")
    log "${rows[-1]}"
    rm -rf "$dir"
}

log "a ${size_mib} MiB source file in /dev/shm"
head -c $((size_mib * 1048576)) /dev/urandom >"$source_file"
n=0
for m in $node_counts; do
    start_cluster "$m"
    throttled=-
    mesh="mesh=2x$((m / 2))"
    [ "$m" -ge 2 ] || mesh="mesh=1x1"
    n=$((n + 1)); run_config "$n" write 1M 1 1 linear
    n=$((n + 1)); run_config "$n" read 1M 1 1 linear
    n=$((n + 1)); run_config "$n" read 1M 4 1 linear
    if [ "$m" = 4 ]; then
        n=$((n + 1)); run_config "$n" write 256K 1 1 linear
        n=$((n + 1)); run_config "$n" read 4M 2 1 linear
        n=$((n + 1)); run_config "$n" write 1M 2 2 linear
        n=$((n + 1)); run_config "$n" read 1M 1 2 linear
        n=$((n + 1)); run_config "$n" write 1M 1 1 "array:4096x4096:f32:$mesh"
        n=$((n + 1)); run_config "$n" read 1M 1 1 "array:4096x4096:f32:$mesh"
        "$tessera" node throttle 1 "$slow" --state "$state" >/dev/null
        sleep 2
        throttled=$slow
        n=$((n + 1)); run_config "$n" write 1M 1 1 linear
        n=$((n + 1)); run_config "$n" read 1M 2 1 linear
        "$tessera" node throttle 1 off --state "$state" >/dev/null
        throttled=-
    fi
done
stop_cluster
if [ "$hosts" -gt 0 ]; then
    hosts_rc=0
    host_rows=$(TESSERA_BUILD=$build "$repo/bench/modelhosts.sh" --hosts "$hosts" --runs "$runs" \
        --first $((n + 1)) --rows-only) || hosts_rc=$?
    if [ "$hosts_rc" = 0 ]; then
        while IFS= read -r row; do rows+=("$row"); done <<<"$host_rows"
    elif [ "$hosts_rc" = 77 ]; then
        log "no shaped hosts here (bench/modelhosts.sh skipped: root, network namespaces and FUSE needed)"
    else
        echo "model.sh: bench/modelhosts.sh failed (exit $hosts_rc)" >&2
        exit 1
    fi
fi

printf '%-3s %-5s %5s %-7s %2s %6s %2s %-30s %9s %9s %7s %8s\n' "#" OP NODES TILE CL COPIES TH LAYOUT \
    PREDICTED MEASURED SPREAD ERROR
printf '%s\n' "${rows[@]}"
printf '%s\n' "${rows[@]}" | awk '{ e = $NF; sub("%", "", e); e = e + 0; if (e < 0) e = -e; s += e;
    if (e > mx) mx = e; if (e <= 10) w++; d = $(NF - 1); sub("%", "", d); if (d + 0 > 20) noisy++ }
    END { printf "# %d configurations: mean |error| %.1f%%, max %.1f%%, %d within 10%%; " \
                 "%d whose runs spread over more than 20%% of their median\n",
                 NR, s / NR, mx, w, noisy }'
