#!/usr/bin/env bash
#
# seq.sh: sequential dd throughput of a directory next to a local directory,
# measured side by side in one run.
#
# For each of RUNS rounds, alternating DIR and the local directory:
#   write: dd if=<random file in /dev/shm> of=X/seq.bin bs=1M conv=fsync
#   read:  sync; echo 3 > /proc/sys/vm/drop_caches; dd if=X/seq.bin of=/dev/null bs=1M
# timed with date +%s%N around dd (the write includes its fsync). Prints the
# median MB/s (10^6 bytes/s) of each and the ratio DIR/local, as a table.
# Not part of `meson test`. Needs root for drop_caches.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/seq.sh [--size MIB] [--runs N] DIR

Sequential write (bs=1M, conv=fsync) and read (after dropping caches) of a
1 GiB file on DIR (e.g. a Tessera mount) and on a local directory, 3 runs
each, interleaved; prints median MB/s (10^6 bytes/s) and the ratio DIR/local.

  --size MIB   file size in MiB (default 1024)
  --runs N     runs per workload and directory (default 3)
  -h, --help   this text

Environment:
  LOCAL_DIR=DIR    local directory to compare with (default: a fresh temp
                   dir under /var/tmp, removed afterwards)
  PREFAULT_GB=N    touch N GiB of RAM in /dev/shm first (default 4), because
                   these VMs charge the first touch of freed memory to
                   whichever run fills the page cache first; 0 to skip

Run as root (drop_caches). Files it writes are removed at the end.
USAGE
}

size_mib=1024
runs=3
dir=""
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --size) size_mib=${2:?--size needs a number of MiB}; shift 2 ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    -*) echo "seq.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
        [ -z "$dir" ] || { echo "seq.sh: one DIR only (see --help)" >&2; exit 2; }
        dir=$1; shift ;;
    esac
done
[ -n "$dir" ] || { usage >&2; exit 2; }
[ -d "$dir" ] || { echo "seq.sh: $dir is not a directory" >&2; exit 2; }
[[ "$size_mib" =~ ^[1-9][0-9]*$ ]] || { echo "seq.sh: --size must be a positive integer (MiB)" >&2; exit 2; }
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "seq.sh: --runs must be a positive integer" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
    echo "seq.sh: run as root: reads are measured after echo 3 > /proc/sys/vm/drop_caches" >&2
    exit 2
fi

bytes=$((size_mib * 1048576))
source_file=$(mktemp /dev/shm/tessera-seq-source.XXXXXX)
own_local=0
if [ -n "${LOCAL_DIR:-}" ]; then
    local_dir=$LOCAL_DIR
    mkdir -p "$local_dir"
else
    local_dir=$(mktemp -d /var/tmp/tessera-seq-local.XXXXXX)
    own_local=1
fi
dir_file=$dir/tessera-seq.$$.bin
local_file=$local_dir/tessera-seq.$$.bin

cleanup() {
    rm -f "$source_file" "$dir_file" "$local_file" /dev/shm/tessera-seq-prefault.$$
    [ "$own_local" = 1 ] && rm -rf "$local_dir"
    return 0
}
trap cleanup EXIT

now_ns() { date +%s%N; }
drop_caches() {
    sync
    echo 3 >/proc/sys/vm/drop_caches
}
# mbps START_NS END_NS: MB/s (10^6 bytes per second) for $bytes bytes.
mbps() { awk -v b="$bytes" -v t0="$1" -v t1="$2" 'BEGIN { printf "%.1f", b / ((t1 - t0) / 1e9) / 1e6 }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

if [ "${PREFAULT_GB:-4}" -gt 0 ]; then
    echo "# prefaulting ${PREFAULT_GB:-4} GiB of RAM through /dev/shm" >&2
    dd if=/dev/zero of=/dev/shm/tessera-seq-prefault.$$ bs=1M count=$((${PREFAULT_GB:-4} * 1024)) status=none || true
    rm -f /dev/shm/tessera-seq-prefault.$$
fi
echo "# making a ${size_mib} MiB random source file in /dev/shm" >&2
head -c "$bytes" /dev/urandom >"$source_file"

write_dir=() write_local=() read_dir=() read_local=()
# measure_write FILE / measure_read FILE: print MB/s of one run.
measure_write() {
    local start end
    rm -f "$1"
    drop_caches
    start=$(now_ns)
    dd if="$source_file" of="$1" bs=1M count="$size_mib" conv=fsync status=none
    end=$(now_ns)
    mbps "$start" "$end"
}
measure_read() {
    local start end
    drop_caches
    start=$(now_ns)
    dd if="$1" of=/dev/null bs=1M status=none
    end=$(now_ns)
    mbps "$start" "$end"
}

for ((run = 1; run <= runs; run++)); do
    write_dir+=("$(measure_write "$dir_file")")
    write_local+=("$(measure_write "$local_file")")
    read_dir+=("$(measure_read "$dir_file")")
    read_local+=("$(measure_read "$local_file")")
    echo "# run $run/$runs: write ${write_dir[-1]} vs ${write_local[-1]} MB/s," \
        "read ${read_dir[-1]} vs ${read_local[-1]} MB/s (DIR vs local)" >&2
done

wd=$(median "${write_dir[@]}") wl=$(median "${write_local[@]}")
rd=$(median "${read_dir[@]}") rl=$(median "${read_local[@]}")
echo "DIR=$dir  local=$local_dir  size=${size_mib} MiB  runs=$runs (median MB/s, 10^6 B/s)"
printf '%-28s %12s %12s %8s\n' workload "DIR MB/s" "local MB/s" ratio
printf '%-28s %12s %12s %8s\n' "write bs=1M conv=fsync" "$wd" "$wl" "$(ratio "$wd" "$wl")"
printf '%-28s %12s %12s %8s\n' "read bs=1M (caches dropped)" "$rd" "$rl" "$(ratio "$rd" "$rl")"
