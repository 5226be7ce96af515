#!/usr/bin/env bash
#
# lbmtrunk.sh: issue 31's second benchmark: two subclusters joined by one
# shaped link (tests/multihost/lib.sh with MH_TRUNK_AT=2: hosts 1-2 on one
# switch, 3-4 on another, the switches joined by a link capped at --trunk
# MB/s each way; the hosts' own links at --link). Read throughput after
# `rebalance apply --policy lbm --topology` against `frequent` and
# `balanced`.
#
# Workload (Wu et al.'s case for Load Balance Traversing): one file of two
# regions (two roles, --groups 2), copies=1. Region 1 is read by host 1
# (five times) and by host 3 (four times), region 2 by host 2 (five) and
# host 4 (four): the profile. frequent puts each region with its biggest
# reader, so both regions sit in subcluster 1 and all of subcluster 2's
# reads cross the link one way; LBT puts one region on each side, so the
# link carries half of it each way. Then, for each policy in turn (applied
# to the same file, from the same profile, which is stopped first), all
# four hosts read their region at once (O_DIRECT, from the datanodes): the
# median wall time of --passes passes, and where the regions are.
#
# Every policy runs with --max-copies 1: the comparison is of where the
# one server of a region goes (the paper's question); with copies,
# frequent would put a copy of each region on both sides.
# Not part of `meson test`. Needs root, network namespaces and FUSE.
set -euo pipefail
exec </dev/null

usage() {
    cat <<'USAGE'
usage: bench/lbmtrunk.sh [--region MIB] [--trunk MBPS] [--link MBPS] [--passes N]

  --region MIB   size of each of the two regions (default 16)
  --trunk MBPS   cap of the link between the subclusters, MB/s each way (default 10)
  --link MBPS    cap of every host's own link (default 50)
  --passes N     read passes per policy, median taken (default 3)
  -h, --help     this text

Environment: TESSERA_BUILD=DIR (default ./build).
USAGE
}

region=16
trunk=10
link=50
passes=3
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --region) region=${2:?--region needs MiB}; shift 2 ;;
    --trunk) trunk=${2:?--trunk needs MB/s}; shift 2 ;;
    --link) link=${2:?--link needs MB/s}; shift 2 ;;
    --passes) passes=${2:?--passes needs a number}; shift 2 ;;
    *) echo "lbmtrunk.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export TESSERA_BUILD=${TESSERA_BUILD:-$repo/build}
[ -x "$TESSERA_BUILD/tools/tessera" ] ||
    { echo "lbmtrunk.sh: $TESSERA_BUILD/tools/tessera not found; build first" >&2; exit 2; }
# Reads queued behind the trunk wait longer than the mounts' default 5 s.
export MH_LINK_MBPS=$link MH_TRUNK_AT=2 MH_TRUNK_MBPS=$trunk MH_NAME=bench-lbmtrunk
export MH_IO_TIMEOUT_MS=${MH_IO_TIMEOUT_MS:-30000}
# shellcheck source=tests/multihost/lib.sh
source "$repo/tests/multihost/lib.sh"

K=4
tool() { mh_exec 1 "$MH_TOOL" "$@" --meta "$MH_META"; }
# The region host H reads: 1 for hosts 1 and 3, 2 for hosts 2 and 4.
region_of() { echo $((($1 + 1) % 2 + 1)); }

mh_up $K
dir=${MH_MNT[1]}/app
topology=$MH_SHM/topology
cat >"$topology" <<TOPOLOGY
subcluster left
subcluster right parent left link ${trunk}M
machine host1 left
machine host2 left
machine host3 right
machine host4 right
TOPOLOGY
mh_exec 1 mkdir "$dir"
mh_exec 1 setfattr -n user.tessera.layout -v "copies=1 placement=roundrobin" "$dir"
src=$(mh_random_file "$((2 * region))M")
mh_exec 1 dd if="$src" of="$dir/file" bs=1M conv=fsync status=none || mh_fail "writing the file failed"
ino=$(mh_exec 1 stat -c %i "$dir/file")
tool profile start "$dir" >/dev/null

# read_region HOST: HOST reads its region once, O_DIRECT, and checks it.
read_region() {
    local h=$1 r
    r=$(region_of "$h")
    mh_exec "$h" dd if="${MH_MNT[$h]}/app/file" bs=1M skip=$(((r - 1) * region)) count="$region" \
        iflag=direct status=none | cmp - <(tail -c +$(((r - 1) * region * 1048576 + 1)) "$src" |
        head -c $((region * 1048576))) || mh_fail "host$h read other bytes of region $r"
}

# The profile: hosts 1 and 2 read five times, hosts 3 and 4 four times.
for pass in 1 2 3 4 5; do
    pids=()
    for ((h = 1; h <= K; h++)); do
        [ "$pass" = 5 ] && [ "$h" -gt 2 ] && continue
        read_region "$h" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || mh_fail "a profile read failed"; done
done
sleep 2 # the mounts' profile flush (every second)
tool profile stop "$dir" >/dev/null

# where: the hosts holding each region's tiles, e.g. "r1:host1 r2:host2".
where() {
    local h r out="" t tiles per=$((region)) hosts
    for r in 1 2; do
        hosts=""
        for ((h = 1; h <= K; h++)); do
            tiles=$(mh_tiles_on "$h" "$ino" | awk -v lo=$(((r - 1) * per)) -v hi=$((r * per)) \
                '$1 >= lo && $1 < hi' | grep -c . || true)
            [ "$tiles" -gt 0 ] && hosts+="${hosts:++}host$h($tiles)"
        done
        out+="r$r:$hosts "
    done
    echo "$out"
}

# read_ms: all four hosts read their region at once; median wall time.
read_ms() {
    local p t0 pids times=()
    for ((p = 1; p <= passes; p++)); do
        pids=()
        t0=$(mh_now_ms)
        for ((h = 1; h <= K; h++)); do
            read_region "$h" &
            pids+=($!)
        done
        for pid in "${pids[@]}"; do wait "$pid" || mh_fail "a measured read failed"; done
        times+=($(($(mh_now_ms) - t0)))
    done
    printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((passes + 1) / 2))p"
}

report=()
bytes=$((4 * region * 1048576))
line() {
    report+=("$(printf '%-26s %-44s %9s %9s' "$1" "$2" "$3" \
        "$(awk -v b="$bytes" -v ms="$3" 'BEGIN { printf "%.1f", b / ms / 1000 }')")")
}
line "as written (round-robin)" "$(where)" "$(read_ms)"
for policy in frequent balanced lbm; do
    args=(--policy "$policy" --max-copies 1 --network-mbps "$link")
    [ "$policy" = lbm ] && args+=(--groups 2 --topology "$topology")
    tool rebalance apply "$dir" "${args[@]}" >"$MH_SHM/apply-$policy.txt" 2>&1 ||
        mh_fail "apply --policy $policy failed: $(cat "$MH_SHM/apply-$policy.txt")"
    sleep 2 # the moved tiles' old files go
    line "after $policy" "$(where)" "$(read_ms)"
done
place_text=$(tool place "$dir" --groups 2 --topology "$topology" 2>&1) ||
    mh_fail "tessera place failed: $place_text"
mh_down
echo
echo "$place_text"
echo
echo "two subclusters (host1-2 | host3-4), link between them $trunk MB/s each way, host links $link MB/s;"
echo "regions of $region MiB, all four hosts reading theirs at once (median of $passes passes)"
printf '%-26s %-44s %9s %9s\n' placement "where the regions are (tiles)" "ms" "MB/s"
printf '%s\n' "${report[@]}"
