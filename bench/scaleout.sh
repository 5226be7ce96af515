#!/usr/bin/env bash
#
# scaleout.sh: issue 34's scale-out figures on K hosts (tests/multihost/lib.sh:
# network namespaces, every link capped with tc; meta on host 1). Each phase
# runs first on one client, then on all K at once, and prints the aggregate
# against the one-client figure (K x would be linear):
#   write  each client dd's SIZE MiB (bs=1M, conv=fsync) into its own file
#   read   each client reads a file another host wrote; the datanodes'
#          page caches stay as the writes left them, since every "host"
#          here shares one disk (--cold drops them: the disk's figure)
#   create / stat / unlink   N empty files per client in its own directory;
#          stat runs on another host's files, so every lookup goes to meta
#   small  N files of 4 KiB per client (create, write, close), tar-like
# For every phase it also prints how busy meta's request thread was (CPU
# seconds of its main thread over the wall time: near 100 % means meta's one
# service thread is the limit), its CPU time per unit of work (per MB or per
# file: 10^6 over it is what one meta could serve at most) and how busy the whole machine was (all
# namespaces share its cores: near 100 % means the box, not the cluster, is
# the limit, and the figure is a floor). Not part of `meson test`. Needs
# root, network namespaces and FUSE.
set -euo pipefail
exec </dev/null

usage() {
    cat <<'USAGE'
usage: bench/scaleout.sh [--hosts K] [--link MBPS] [--size MIB] [--files N] [--copies N] [--cold]

  --hosts K     hosts, each with a datanode and a mount (default 8)
  --link MBPS   cap of every host's link, MB/s (default 25)
  --size MIB    bytes each client writes and reads (default 64)
  --files N     files per client in the metadata phases (default 2000)
  --copies N    the test directory's copies (default 2)
  --cold        drop the page caches before the reads (all hosts share this
                machine's one disk, so the reads then measure that disk)
  -h, --help    this text

Environment: TESSERA_BUILD=DIR (default ./build).
USAGE
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hosts=8 link=25 size=64 files=2000 copies=2 cold=0
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --hosts) hosts=${2:?--hosts needs a count}; shift 2 ;;
    --link) link=${2:?--link needs MB/s}; shift 2 ;;
    --size) size=${2:?--size needs MiB}; shift 2 ;;
    --files) files=${2:?--files needs a count}; shift 2 ;;
    --copies) copies=${2:?--copies needs a count}; shift 2 ;;
    --cold) cold=1; shift ;;
    *) echo "scaleout.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
for value in "$hosts" "$link" "$size" "$files" "$copies"; do
    [[ $value =~ ^[1-9][0-9]*$ ]] || { echo "scaleout.sh: '$value' is not a positive number" >&2; exit 2; }
done
[ "$hosts" -ge 3 ] || { echo "scaleout.sh: --hosts must be at least 3" >&2; exit 2; }

export MH_LINK_MBPS=$link MH_NAME=bench-scaleout MH_IO_TIMEOUT_MS=${MH_IO_TIMEOUT_MS:-30000}
# shellcheck source=tests/multihost/lib.sh
source "$repo/tests/multihost/lib.sh"

mh_up "$hosts"
K=$MH_K
root=${MH_MNT[1]}/scale
mh_exec 1 mkdir "$root"
mh_exec 1 setfattr -n user.tessera.layout -v "copies=$copies" "$root"

# The metadata client: one phase on one directory, prints its op count.
metaclient=$MH_SHM/scale_meta.py
cat >"$metaclient" <<'PY'
import os, sys
phase, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = [os.path.join(d, "f%06d" % i) for i in range(n)]
if phase == "create":
    os.makedirs(d, exist_ok=True)
    for p in names:
        os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
elif phase == "stat":
    for p in names:
        os.stat(p)
elif phase == "unlink":
    for p in names:
        os.unlink(p)
elif phase == "small":
    os.makedirs(d, exist_ok=True)
    block = os.urandom(4096)
    for p in names:
        fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        os.write(fd, block)
        os.close(fd)
else:
    sys.exit("unknown phase " + phase)
PY

# CPU time of meta's request thread in ns (its main thread: meta serves
# every request on it; schedstat's first field) and ticks of the whole
# machine (busy, total), for the busy figures.
meta_ns() { awk '{ print $1 }' "/proc/$MH_META_PID/task/$MH_META_PID/schedstat"; }
box_ticks() { awk '$1 == "cpu" { busy = $2 + $3 + $4 + $7 + $8; print busy, busy + $5 + $6 }' /proc/stat; }
ncpu=$(nproc)

results=()
# run_phase NAME UNITS PER_CLIENT HOSTS... -- CMD_TEMPLATE: runs CMD on each
# host at once (the template's @H@ is the host, @N@ the next host, @D@ the
# test directory in that host's mount), records
# wall time, units done (PER_CLIENT x hosts) and the busy figures.
run_phase() {
    local name=$1 units=$2 per=$3 t0 t1 m0 m1 b0 b1 h next pids=() count=0 cmd
    shift 3
    local hostlist=()
    while [ "$1" != "--" ]; do hostlist+=("$1"); shift; done
    shift
    m0=$(meta_ns)
    read -r -a b0 <<<"$(box_ticks)"
    t0=$(mh_now_ms)
    for h in "${hostlist[@]}"; do
        next=$((h % K + 1))
        cmd=()
        for word in "$@"; do
            word=${word//@H@/$h}
            word=${word//@D@/${MH_MNT[$h]}/scale}
            cmd+=("${word//@N@/$next}")
        done
        mh_exec "$h" "${cmd[@]}" &
        pids+=($!)
        count=$((count + 1))
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || mh_fail "phase $name: a client failed"
    done
    t1=$(mh_now_ms)
    m1=$(meta_ns)
    read -r -a b1 <<<"$(box_ticks)"
    local ms=$((t1 - t0))
    [ "$ms" -gt 0 ] || ms=1
    local line
    line=$(awk -v name="$name" -v clients="$count" -v total="$((per * count))" -v ms="$ms" \
        -v units="$units" -v meta="$((m1 - m0))" -v bb="$((b1[0] - b0[0]))" \
        -v bt="$((b1[1] - b0[1]))" 'BEGIN {
            secs = ms / 1000
            printf "%s %d %.2f %.1f %s %.0f %.1f %.0f\n", name, clients, secs, total / secs, units,
                100 * meta / 1e9 / secs, meta / 1000 / total, (bt > 0 ? 100 * bb / bt : 0) }')
    mh_log "$line"
    results+=("$line")
}

hostsall=()
for ((h = 1; h <= K; h++)); do hostsall+=("$h"); done
bytes_mb=$((size * 1048576 / 1000000))

# Data: one writer (host 2), then all; reads of files another host wrote.
# Random bytes (from /dev/shm, which every host sees), not zeros.
src=$(mh_random_file "${size}M")
run_phase write MB/s "$bytes_mb" 2 -- dd if="$src" of="@D@/one.@H@" bs=1M count="$size" \
    conv=fsync status=none
run_phase write MB/s "$bytes_mb" "${hostsall[@]}" -- dd if="$src" of="@D@/all.@H@" bs=1M \
    count="$size" conv=fsync status=none
sync
[ "$cold" = 0 ] || echo 3 >/proc/sys/vm/drop_caches
run_phase read MB/s "$bytes_mb" 1 -- dd if="@D@/one.@N@" of=/dev/null bs=1M status=none
run_phase read MB/s "$bytes_mb" "${hostsall[@]}" -- dd if="@D@/all.@N@" of=/dev/null bs=1M \
    status=none

# Metadata: one client on its own, then all at once, each in its own directory.
for set in one all; do
    if [ "$set" = one ]; then list=(2); else list=("${hostsall[@]}"); fi
    run_phase create ops/s "$files" "${list[@]}" -- python3 "$metaclient" create \
        "@D@/m$set.@H@" "$files"
    sync
    echo 3 >/proc/sys/vm/drop_caches
    # Stat another host's files: its entries are in no cache of this mount.
    if [ "$set" = one ]; then
        run_phase stat ops/s "$files" 1 -- python3 "$metaclient" stat "@D@/m$set.@N@" "$files"
    else
        run_phase stat ops/s "$files" "${list[@]}" -- python3 "$metaclient" stat "@D@/m$set.@N@" \
            "$files"
    fi
    run_phase unlink ops/s "$files" "${list[@]}" -- python3 "$metaclient" unlink \
        "@D@/m$set.@H@" "$files"
    run_phase small files/s "$files" "${list[@]}" -- python3 "$metaclient" small \
        "@D@/s$set.@H@" "$files"
done
mh_down

echo
echo "scale-out on $K hosts, links $link MB/s, copies=$copies, $size MiB per client," \
    "$files files per client, reads $([ "$cold" = 1 ] && echo cold || echo "warm on the datanodes");" \
    "machine: $ncpu cores and one disk shared by every host"
printf '%-8s %8s %9s %12s %8s %10s %10s %12s %10s\n' phase clients seconds aggregate unit \
    "x 1 client" "meta busy" "meta us/unit" "box busy"
declare -A single
for line in "${results[@]}"; do
    read -r name clients secs rate unit meta per box <<<"$line"
    if [ "$clients" = 1 ]; then
        single[$name]=$rate
        ratio=1.00
    else
        ratio=$(awk -v a="$rate" -v b="${single[$name]}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    fi
    printf '%-8s %8s %9s %12s %8s %10s %9s%% %12s %9s%%\n' "$name" "$clients" "$secs" "$rate" \
        "$unit" "$ratio" "$meta" "$per" "$box"
done
