#!/usr/bin/env bash
#
# hetero.sh: placement on heterogeneous datanodes, the experiments of Panda
# (seed 000, Figures 4 and 6) on a local Tessera cluster.
#
# The datanodes' disks are emulated by their throttle (tessera-datanode's
# token bucket, set with `tessera node throttle`): fast nodes at FAST MB/s,
# slow ones at SLOW MB/s, and the cluster's data directories live in RAM
# (/dev/shm), so the throttle, not this machine's disk, is what each node
# can do. Every run writes one file of SIZE MiB through the mount:
#   dd if=<random file in /dev/shm> of=MNT/<policy>/file bs=1M conv=fsync
# into a directory whose user.tessera.layout names the placement policy
# (roundrobin, static, dynamic), timed with date +%s%N around dd (the fsync
# included). MB is 10^6 bytes, as dd and the throttle count.
#
# Figure 4: for 4 and 8 datanodes (--nodes), k of them slow for k = 0..m;
# cells are the aggregate MB/s and the fraction of peak, peak = the sum of
# the throttled rates.
# Figure 6: --fig6-nodes datanodes, all fast; 8 consecutive writes per
# policy; before the 5th one node is throttled to half its rate, and it is
# restored before the 6th. Cells: MB/s and fraction of the then-available
# peak.
#
# It starts its own cluster (`tessera up --state DIR --port P --nodes N`)
# and stops it on every exit path (trap): `tessera down`, then
# `fusermount3 -uz` if a mount is still there, then the state directory.
# Not part of `meson test`.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/hetero.sh [--size MIB] [--fast MBPS] [--slow MBPS] [--nodes "4 8"]
                       [--fig6-nodes N] [--runs N] [--only fig4|fig6] [--port BASE]
                       [--policies "roundrobin static dynamic"]

Writes a file per run through a Tessera mount on throttled datanodes and
prints Panda's Figure 4 (k slow of m datanodes: roundrobin / static / dynamic,
MB/s and fraction of peak) and Figure 6 (8 writes, one node at half rate
during the 5th) tables.

  --size MIB        file size per run in MiB (default 1024)
  --fast MBPS       throttle of a fast datanode, MB/s = 10^6 bytes/s (default 40)
  --slow MBPS       throttle of a slow datanode (default 20)
  --nodes "LIST"    cluster sizes of Figure 4 (default "4 8")
  --fig6-nodes N    cluster size of Figure 6 (default 4)
  --runs N          writes per Figure 4 cell; the median is shown (default 1)
  --only WHICH      fig4 or fig6 only
  --policies LIST   the placement policies to compare (default all three)
  --port BASE       meta's port (datanode i uses BASE+i), or the next free block
                    of ports above it; default: from the pid
  -h, --help        this text

Environment:
  TESSERA_BUILD=DIR   build directory with tools/tessera (default: ./build)
  HETERO_STATE=DIR    where the cluster's state directory is made (default
                      /dev/shm, so tiles stay in RAM); it is removed at the end
USAGE
}

size_mib=1024
fast=40
slow=20
node_counts="4 8"
fig6_nodes=4
runs=1
only=""
policies="roundrobin static dynamic"
port=$((30000 + ($$ % 900) * 20))
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --size) size_mib=${2:?--size needs MiB}; shift 2 ;;
    --fast) fast=${2:?--fast needs MB/s}; shift 2 ;;
    --slow) slow=${2:?--slow needs MB/s}; shift 2 ;;
    --nodes) node_counts=${2:?--nodes needs a list}; shift 2 ;;
    --fig6-nodes) fig6_nodes=${2:?--fig6-nodes needs a number}; shift 2 ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --only) only=${2:?--only needs fig4 or fig6}; shift 2 ;;
    --port) port=${2:?--port needs a number}; shift 2 ;;
    --policies) policies=${2:?--policies needs a list}; shift 2 ;;
    *) echo "hetero.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
is_number() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
is_rate() { [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v r="$1" 'BEGIN { exit !(r > 0) }'; }
is_number "$size_mib" || { echo "hetero.sh: --size must be a positive integer (MiB)" >&2; exit 2; }
is_number "$runs" || { echo "hetero.sh: --runs must be a positive integer" >&2; exit 2; }
is_number "$fig6_nodes" || { echo "hetero.sh: --fig6-nodes must be a positive integer" >&2; exit 2; }
is_number "$port" || { echo "hetero.sh: --port must be a number" >&2; exit 2; }
is_rate "$fast" || { echo "hetero.sh: --fast must be MB/s above 0" >&2; exit 2; }
is_rate "$slow" || { echo "hetero.sh: --slow must be MB/s above 0" >&2; exit 2; }
for m in $node_counts; do
    is_number "$m" || { echo "hetero.sh: --nodes wants numbers, got $m" >&2; exit 2; }
done
case $only in "" | fig4 | fig6) ;; *) echo "hetero.sh: --only wants fig4 or fig6" >&2; exit 2 ;; esac
for policy in $policies; do
    case $policy in roundrobin | static | dynamic) ;;
    *) echo "hetero.sh: --policies wants roundrobin, static or dynamic, got $policy" >&2; exit 2 ;;
    esac
done
[ -n "$policies" ] || { echo "hetero.sh: --policies is empty" >&2; exit 2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TESSERA_BUILD:-$repo/build}
tessera=$build/tools/tessera
[ -x "$tessera" ] || { echo "hetero.sh: $tessera not found; build first (ninja -C build)" >&2; exit 2; }
command -v fusermount3 >/dev/null || { echo "hetero.sh: fusermount3 is missing" >&2; exit 2; }

bytes=$((size_mib * 1048576))
source_file=$(mktemp /dev/shm/tessera-hetero-source.XXXXXX)
state_parent=${HETERO_STATE:-/dev/shm}
mkdir -p "$state_parent"
state=$(mktemp -d "$state_parent/tessera-hetero-state.XXXXXX")
mnt=$state/mnt
cluster_up=0

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

# pick_port M: moves $port up to the first block of M+1 ports nobody listens on.
pick_port() {
    local m=$1 p busy
    for _ in $(seq 1 200); do
        busy=0
        for ((p = port; p <= port + m; p++)); do
            if [ -n "$(ss -Hltn "sport = :$p" 2>/dev/null)" ]; then
                busy=1
                break
            fi
        done
        [ "$busy" = 0 ] && return 0
        port=$((port + 20))
        [ "$port" -lt 60000 ] || port=20000
    done
    echo "hetero.sh: no free block of $((m + 1)) ports found" >&2
    exit 1
}

# start_cluster M: a fresh cluster of M datanodes, mounted, with a directory
# per policy whose layout names it.
start_cluster() {
    local m=$1
    stop_cluster
    rm -rf "${state:?}"/*
    local attempt
    for attempt in 1 2 3 4 5; do
        pick_port "$m"
        log "starting a cluster of $m datanodes on ports $port..$((port + m)) in $state"
        if "$tessera" up --state "$state" --port "$port" --nodes "$m" --log-level warn \
            >"$state/up.out" 2>&1; then
            break
        fi
        # Another program may take a port between the check and the bind.
        if [ "$attempt" = 5 ] || ! grep -qs 'in use' "$state/up.out" "$state"/logs/*.log; then
            cat "$state/up.out" >&2
            echo "hetero.sh: tessera up failed" >&2
            exit 1
        fi
        "$tessera" down --state "$state" >/dev/null 2>&1 || true
        rm -rf "${state:?}"/*
        port=$((port + 20))
    done
    cluster_up=1
    for policy in $policies; do
        mkdir -p "$mnt/$policy"
        setfattr -n user.tessera.layout -v "placement=$policy" "$mnt/$policy"
    done
}

# throttle ID MBPS
throttle() {
    "$tessera" node throttle "$1" "$2" --state "$state" >/dev/null
}

# tiles_stored: the sum of the datanodes' tiles as meta last heard.
tiles_stored() {
    "$tessera" status --state "$state" --json |
        awk -F'"tiles": ' 'NF > 1 { for (i = 2; i <= NF; i++) { split($i, v, ","); n += v[1] } }
                           END { print n + 0 }'
}

# settle: wait (30 s at most) until the tiles of removed files are gone and
# the disks have drained, so that a run does not pay for the one before.
settle() {
    local deadline=$((SECONDS + 30))
    while [ "$(tiles_stored)" != 0 ] && [ $SECONDS -lt $deadline ]; do
        sleep 0.5
    done
    sleep 1 # the backlog meta estimated for the last write drains
}

# write_mbps POLICY: writes the file once and prints MB/s.
write_mbps() {
    local file=$mnt/$1/file start end
    rm -f "$file"
    settle
    start=$(date +%s%N)
    dd if="$source_file" of="$file" bs=1M conv=fsync status=none
    end=$(date +%s%N)
    rm -f "$file"
    awk -v b="$bytes" -v ns=$((end - start)) 'BEGIN { printf "%.1f", b / (ns / 1e9) / 1e6 }'
}

# median of the numbers on stdin
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
                                        else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

cell() { # MBPS PEAK -> "MB/s (pct%)"
    awk -v r="$1" -v p="$2" 'BEGIN { printf "%7.1f (%3.0f%%)", r, 100 * r / p }'
}

log "writing a $size_mib MiB random source file in /dev/shm"
head -c "$bytes" /dev/urandom >"$source_file"

fig4_rows=()
fig6_rows=()

if [ "$only" != fig6 ]; then
    for m in $node_counts; do
        start_cluster "$m"
        for ((k = 0; k <= m; k++)); do
            for ((id = 1; id <= m; id++)); do
                if [ "$id" -le "$k" ]; then throttle "$id" "$slow"; else throttle "$id" "$fast"; fi
            done
            peak=$(awk -v m="$m" -v k="$k" -v f="$fast" -v s="$slow" \
                'BEGIN { printf "%.1f", (m - k) * f + k * s }')
            row=$(printf '%3d/%-3d %7.1f ' "$k" "$m" "$peak")
            for policy in $policies; do
                results=()
                for ((r = 0; r < runs; r++)); do
                    results+=("$(write_mbps "$policy")")
                done
                mbps=$(printf '%s\n' "${results[@]}" | median)
                log "$k of $m slow, $policy: $mbps MB/s of $peak (runs: ${results[*]})"
                row+=" $(cell "$mbps" "$peak")"
            done
            fig4_rows+=("$row")
        done
    done
fi

if [ "$only" != fig4 ]; then
    start_cluster "$fig6_nodes"
    half=$(awk -v f="$fast" 'BEGIN { print f / 2 }')
    declare -A fig6
    for policy in $policies; do
        for ((id = 1; id <= fig6_nodes; id++)); do throttle "$id" "$fast"; done
        for iteration in 1 2 3 4 5 6 7 8; do
            [ "$iteration" = 5 ] && throttle 1 "$half"
            [ "$iteration" = 6 ] && throttle 1 "$fast"
            mbps=$(write_mbps "$policy")
            fig6[$policy,$iteration]=$mbps
            log "figure 6, $policy, write $iteration: $mbps MB/s"
        done
    done
    for iteration in 1 2 3 4 5 6 7 8; do
        if [ "$iteration" = 5 ]; then
            peak=$(awk -v m="$fig6_nodes" -v f="$fast" -v h="$half" \
                'BEGIN { printf "%.1f", (m - 1) * f + h }')
        else
            peak=$(awk -v m="$fig6_nodes" -v f="$fast" 'BEGIN { printf "%.1f", m * f }')
        fi
        row=$(printf '%5d   %7.1f ' "$iteration" "$peak")
        for policy in $policies; do
            row+=" $(cell "${fig6[$policy,$iteration]}" "$peak")"
        done
        fig6_rows+=("$row")
    done
fi

stop_cluster
echo
echo "Tessera placement on throttled datanodes: fast $fast MB/s, slow $slow MB/s;"
echo "$size_mib MiB written per run (dd bs=1M conv=fsync), MB = 10^6 bytes;"
echo "cells: aggregate MB/s (fraction of peak), peak = sum of the throttled rates."
if [ ${#fig4_rows[@]} -gt 0 ]; then
    echo
    echo "Figure 4: k slow of m datanodes (median of $runs run(s) per cell)"
    header=$(printf '%-7s %7s ' "slow/m" "peak")
    for policy in $policies; do header+=$(printf ' %-14s' "$policy"); done
    echo "$header"
    printf '%s\n' "${fig4_rows[@]}"
fi
if [ ${#fig6_rows[@]} -gt 0 ]; then
    echo
    echo "Figure 6: $fig6_nodes datanodes at $fast MB/s; node 1 at $half MB/s for write 5 only"
    header=$(printf '%-5s %9s ' "write" "peak")
    for policy in $policies; do header+=$(printf ' %-14s' "$policy"); done
    echo "$header"
    printf '%s\n' "${fig6_rows[@]}"
fi
