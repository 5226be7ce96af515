#!/usr/bin/env bash
#
# profile_cost.sh: what profiling costs a sequential stream (issue 6: at
# most 5 % of sequential throughput).
#
# One local cluster (`tessera up`, NODES datanodes, default 4) and two
# directories on its mount: `profiled` (tessera profile start) and `plain`.
# For each of RUNS rounds, alternating the two directories:
#   write: dd if=<random file in /dev/shm> of=D/seq.bin bs=1M conv=fsync
#   read:  sync; drop_caches; dd if=D/seq.bin of=/dev/null bs=1M
# Prints the median MB/s (10^6 bytes/s) of each and profiled/plain, and the
# profile's record count (that the profiled runs were counted).
# Starts and stops its own cluster (trap). Not part of `meson test`. Root.
set -euo pipefail
exec </dev/null

usage() {
    cat <<'USAGE'
usage: bench/profile_cost.sh [--size MIB] [--runs N] [--nodes M]

  --size MIB   file size (default 1024)
  --runs N     rounds (default 3)
  --nodes M    datanodes (default 4)
  -h, --help   this text

Environment: TESSERA_BUILD=DIR (default ./build).
USAGE
}

size=1024
runs=3
nodes=4
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --size) size=${2:?--size needs MiB}; shift 2 ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
    *) echo "profile_cost.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "profile_cost.sh: run as root (drop_caches)" >&2; exit 2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TESSERA_BUILD:-$repo/build}
tessera=$build/tools/tessera
[ -x "$tessera" ] || { echo "profile_cost.sh: $tessera not found; build first" >&2; exit 2; }

state=$(mktemp -d /var/tmp/tessera-profcost.XXXXXX)
source_file=$(mktemp /dev/shm/tessera-profcost-source.XXXXXX)
mnt=$state/mnt
cluster_up=0
cleanup() {
    local status=$?
    [ "$cluster_up" = 1 ] && "$tessera" down --state "$state" >/dev/null 2>&1
    if grep -qs " $mnt fuse" /proc/self/mounts; then
        fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true
    fi
    rm -rf "$state" "$source_file"
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { printf '# %s\n' "$*" >&2; }

port=$((31000 + ($$ % 800) * 10))
"$tessera" up --state "$state" --port "$port" --nodes "$nodes" --mount "$mnt" --log-level warn \
    >"$state/up.out" 2>&1 || { cat "$state/up.out" >&2; exit 1; }
cluster_up=1
meta=tcp://127.0.0.1:$port
mkdir "$mnt/profiled" "$mnt/plain"
"$tessera" profile start "$mnt/profiled" --meta "$meta" >/dev/null
head -c $((size * 1048576)) /dev/urandom >"$source_file"

now_ns() { date +%s%N; }
mbps() { awk -v b=$((size * 1048576)) -v ns="$1" 'BEGIN { printf "%.1f", b / ns * 1000 }'; }
median() { sort -n | sed -n "$(((runs + 1) / 2))p"; }
declare -A results
for ((r = 1; r <= runs; r++)); do
    for dir in plain profiled; do
        rm -f "$mnt/$dir/seq.bin"
        t0=$(now_ns)
        dd if="$source_file" of="$mnt/$dir/seq.bin" bs=1M conv=fsync status=none
        results[$dir.write]+="$(mbps $(($(now_ns) - t0))) "
        sync
        echo 3 >/proc/sys/vm/drop_caches
        t0=$(now_ns)
        dd if="$mnt/$dir/seq.bin" of=/dev/null bs=1M status=none
        results[$dir.read]+="$(mbps $(($(now_ns) - t0))) "
        w=${results[$dir.write]% }
        rd=${results[$dir.read]% }
        log "round $r $dir: write ${w##* } MB/s, read ${rd##* } MB/s"
    done
done
sleep 2 # the last profile flush
records=$("$tessera" profile show "$mnt/profiled" --meta "$meta" --json | grep -c '"machine"' || true)

printf '\nProfiling cost, %d MiB sequential dd, %d datanodes, median of %d (MB/s)\n' "$size" "$nodes" "$runs"
printf '%-8s %10s %10s %16s\n' "" plain profiled "profiled/plain"
for op in write read; do
    p=$(tr ' ' '\n' <<<"${results[plain.$op]}" | grep . | median)
    q=$(tr ' ' '\n' <<<"${results[profiled.$op]}" | grep . | median)
    printf '%-8s %10s %10s %16s\n' "$op" "$p" "$q" "$(awk -v p="$p" -v q="$q" 'BEGIN { printf "%.3f", q / p }')"
done
printf 'profile records for the profiled file: %s\n' "$records"
