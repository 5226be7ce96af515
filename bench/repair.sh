#!/usr/bin/env bash
#
# repair.sh: how fast self-healing makes lost replicas again (issue 29),
# on the multi-host harness (tests/multihost/lib.sh: network namespaces,
# links capped with tc).
#
# Writes first: host 1 writes SIZE MiB with copies=1 and with copies=2
# (`dd conv=fsync`), and the table gives MB/s and how many copies of the
# bytes crossed host 1's link: the mount fans each tile out to its holders
# itself, so a chain (client -> first holder -> next, as HDFS and MooseFS
# do) could only send fewer copies over the client's link when more than
# one holder is remote; with the writer's own datanode as the first holder
# (dynamic placement), fan-out sends each byte over its link once, as a
# chain would.
#
# Then the repair: four hosts, copies=2. Host 1 writes SIZE MiB into the cluster; then host
# 4's datanode is killed and its data directory deleted. Meta (started with
# --replace-after 2s and an unlimited repair rate) makes every replica host 4
# held again on hosts 1..3, peer to peer. The table gives the bytes to
# repair (host 4's share), the time from the kill until `tessera health`
# says HEALTHY (minus the replace-after wait), the repair rate, and that
# rate as a share of min(link, disk): every repaired byte crosses one
# link out of a survivor and one into a target, so with three survivors
# the links' sum, not one link, is the bound; the share printed is against
# one link's cap (what a single pair would get) and against the three.
#
# Not part of `meson test`. Needs root, network namespaces and FUSE.
set -euo pipefail
exec </dev/null

usage() {
    cat <<'USAGE'
usage: bench/repair.sh [--size MIB] [--link MBPS] [--disk MBPS]

  --size MIB    data written before the loss (default 512)
  --link MBPS   cap of every host's link, MB/s = 10^6 B/s (default 25)
  --disk MBPS   every datanode's --throttle-mbps, 0 = none (default 0)
  -h, --help    this text

Environment: TESSERA_BUILD=DIR (default ./build).
USAGE
}

size=512
link=25
disk=0
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --size) size=${2:?--size needs MiB}; shift 2 ;;
    --link) link=${2:?--link needs MB/s}; shift 2 ;;
    --disk) disk=${2:?--disk needs MB/s}; shift 2 ;;
    *) echo "repair.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export TESSERA_BUILD=${TESSERA_BUILD:-$repo/build}
[ -x "$TESSERA_BUILD/tools/tessera" ] ||
    { echo "repair.sh: $TESSERA_BUILD/tools/tessera not found; build first (ninja -C build)" >&2; exit 2; }
# shellcheck source=tests/multihost/lib.sh
source "$repo/tests/multihost/lib.sh"

replace_after_s=2
MH_LINK_MBPS=$link
MH_META_ARGS="--replace-after ${replace_after_s}s --repair-mbps 0"
if [ "$disk" != 0 ]; then MH_NODE_ARGS="--throttle-mbps $disk"; fi
mh_up 4

health_rc() {
    local rc=0
    mh_exec 1 "$MH_TOOL" health --meta "$MH_META" >/dev/null 2>&1 || rc=$?
    echo "$rc"
}
src=$(mh_random_file "${size}M")
printf '| write from host1 | MB/s | copies over host1 link |\n|---|---:|---:|\n'
for copies in 1 2; do
    mh_exec 1 mkdir -p "${MH_MNT[1]}/c$copies"
    mh_exec 1 setfattr -n user.tessera.layout -v "copies=$copies" "${MH_MNT[1]}/c$copies"
    tx0=$(mh_link_bytes 1 tx)
    t0=$(mh_now_ms)
    mh_exec 1 dd if="$src" of="${MH_MNT[1]}/c$copies/w" bs=1M conv=fsync status=none
    ms=$(($(mh_now_ms) - t0))
    tx=$(($(mh_link_bytes 1 tx) - tx0))
    awk -v c="$copies" -v b=$((size * 1048576)) -v ms="$ms" -v tx="$tx" \
        'BEGIN { printf "| copies=%d | %.1f | %.2f |\n", c, b / ms / 1000, tx / b }'
    mh_exec 1 rm -f "${MH_MNT[1]}/c$copies/w"
done
echo
mh_exec 1 dd if="$src" of="${MH_MNT[1]}/data" bs=1M conv=fsync status=none
mh_wait_for 60 "health HEALTHY after the write" eval '[ "$(health_rc)" = 0 ]'
ino=$(mh_exec 1 stat -c %i "${MH_MNT[1]}/data")
lost_tiles=$(mh_tiles_on 4 "$ino" | wc -l)
lost_bytes=$((lost_tiles * 1048576))

t0=$(mh_now_ms)
mh_stop_node 4 KILL
rm -rf "${MH_DATA[4]}"
# Health is as of meta's last pass over the map: see the loss first.
mh_wait_for 60 "health to see the loss" eval '[ "$(health_rc)" != 0 ]'
mh_wait_for 3600 "health HEALTHY after the repair" eval '[ "$(health_rc)" = 0 ]'
# The repair's own time, from meta's log: from the pass that handed out
# the first steps (it drops the lost replicas in the same pass) to the last
# copy done. Detection (the node timeout, the replace-after wait, the next
# pass) is not repair time.
# The lines begin with an ISO 8601 time with its zone, which date -d reads.
log_ms() { date -d "$1" +%s%3N; }
first=$(grep -m1 "repair: dropped" "$MH_LOGS/meta.log" | cut -d' ' -f1)
last=$(grep "repair: copy of" "$MH_LOGS/meta.log" | tail -n 1 | cut -d' ' -f1)
[ -n "$first" ] && [ -n "$last" ] || mh_fail "no repair lines in $MH_LOGS/meta.log"
elapsed_ms=$(($(log_ms "$last") - $(log_ms "$first")))
detect_ms=$(($(log_ms "$first") - t0))
mh_drop_cache 2 "${MH_MNT[2]}/data"
mh_exec 2 cmp "$src" "${MH_MNT[2]}/data" || mh_fail "the file differs after the repair"

bound=$link
if [ "$disk" != 0 ] && [ "$disk" -lt "$bound" ]; then bound=$disk; fi
awk -v bytes="$lost_bytes" -v ms="$elapsed_ms" -v bound="$bound" -v tiles="$lost_tiles" -v detect="$detect_ms" 'BEGIN {
    rate = bytes / ms / 1000
    printf "| lost replicas | bytes | kill to first step | repair time | rate MB/s | vs min(link, disk) | vs 3 links |\n"
    printf "|---:|---:|---:|---:|---:|---:|---:|\n"
    printf "| %d | %.1f MB | %.1f s | %.1f s | %.1f | %.2f | %.2f |\n", tiles, bytes / 1e6, detect / 1000, ms / 1000, rate, rate / bound, rate / (3 * bound)
}'
mh_down
