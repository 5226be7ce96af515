#!/usr/bin/env bash
#
# remotereaders.sh: issue 34's concurrent remote readers on 4 hosts
# (tests/multihost/lib.sh: network namespaces, every link capped with tc).
# Host 4 writes a 64 MiB file (copies=1, the cluster's default placement);
# then hosts 1-3 read it at once with buffered `dd bs=1M`, pages dropped
# before each pass. Printed per build: each reader's link bytes received
# over the bytes of the tiles its host does not hold (the least it must
# pull; the issue asks at most 1.05x), the wall time of the pass (median
# pass), and every copy checked against the source. Before the fix the
# kernel's and the mount's read-ahead asked for the same tiles separately
# when replies were slow, and each host pulled 1.2-1.7x.
#
# --baseline BUILD_DIR runs the same on an older build (e.g. a worktree at
# e24bd07) and prints both. Not part of `meson test`. Needs root, network
# namespaces and FUSE.
set -euo pipefail
exec </dev/null

usage() {
    cat <<'USAGE'
usage: bench/remotereaders.sh [--link MBPS] [--passes N] [--baseline BUILD_DIR]

  --link MBPS          cap of every host's link, MB/s (default 25)
  --passes N           read passes per build, median taken (default 3)
  --baseline BUILD_DIR also run an older build
  -h, --help           this text

Environment: TESSERA_BUILD=DIR (default ./build).
USAGE
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
link=25
passes=3
baseline=""
one=0
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --link) link=${2:?--link needs MB/s}; shift 2 ;;
    --passes) passes=${2:?--passes needs a number}; shift 2 ;;
    --baseline) baseline=${2:?--baseline needs a build directory}; shift 2 ;;
    --one) one=1; shift ;; # internal: measure TESSERA_BUILD once, print one result line
    *) echo "remotereaders.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

if [ "$one" = 0 ]; then
    current=${TESSERA_BUILD:-$repo/build}
    results=()
    for build in "$current" ${baseline:+"$baseline"}; do
        [ -x "$build/tools/tessera" ] ||
            { echo "remotereaders.sh: $build/tools/tessera not found; build first" >&2; exit 2; }
        out=$(TESSERA_BUILD=$build "$0" --one --link "$link" --passes "$passes" | tee -a /dev/stderr)
        results+=("$(grep '^result ' <<<"$out" | cut -d' ' -f2-)")
    done
    echo
    printf '%-44s %-14s %9s %s\n' build "host4's tiles" "pass ms" "pulled / not-local bytes, hosts 1..3"
    for line in "${results[@]}"; do
        read -r build held ms ratios <<<"$line"
        printf '%-44s %-14s %9s %s\n' "$build" "$held/64" "$ms" "$ratios"
    done
    exit 0
fi

export MH_LINK_MBPS=$link MH_NAME=bench-remotereaders MH_IO_TIMEOUT_MS=${MH_IO_TIMEOUT_MS:-30000}
# shellcheck source=tests/multihost/lib.sh
source "$repo/tests/multihost/lib.sh"

TILE=$((1 << 20))
mh_up 4
dir=${MH_MNT[4]}/readers
mh_exec 4 mkdir "$dir"
mh_exec 4 setfattr -n user.tessera.layout -v copies=1 "$dir"
src=$(mh_random_file 64M)
mh_exec 4 dd if="$src" of="$dir/file" bs=1M conv=fsync status=none || mh_fail "writing the file failed"
ino=$(mh_exec 4 stat -c %i "$dir/file")
held=$(mh_tiles_on 4 "$ino" | grep -c . || true)
# The least host h must pull: the tiles its own datanode does not hold.
declare -A need
for h in 1 2 3; do
    need[$h]=$(((64 - $(mh_tiles_on "$h" "$ino" | grep -c . || true)) * TILE))
done
mh_log "tiles on host 4: $held of 64; bytes each reader must pull: ${need[1]} ${need[2]} ${need[3]}"

passes_out=()
for ((p = 1; p <= passes; p++)); do
    declare -A rx0
    for h in 1 2 3; do
        mh_drop_cache "$h" "${MH_MNT[$h]}/readers/file"
        rx0[$h]=$(mh_link_bytes "$h" rx)
    done
    pids=()
    t0=$(mh_now_ms)
    for h in 1 2 3; do
        mh_exec "$h" dd if="${MH_MNT[$h]}/readers/file" of="$MH_SHM/copy.$h" bs=1M status=none &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || mh_fail "a reader's dd failed"
    done
    ms=$(($(mh_now_ms) - t0))
    ratios=""
    for h in 1 2 3; do
        cmp -s "$MH_SHM/copy.$h" "$src" || mh_fail "host$h read other bytes than were written"
        ratios+=$(awk -v b=$(($(mh_link_bytes "$h" rx) - rx0[$h])) -v n="${need[$h]}" \
            'BEGIN { printf "%.3fx,", (n > 0 ? b / n : 0) }')
    done
    passes_out+=("$ms ${ratios%,}")
    mh_log "pass $p: $ms ms, pulled/needed per reader ${ratios%,}"
done
median=$(printf '%s\n' "${passes_out[@]}" | sort -n -k1,1 | sed -n "$(((passes + 1) / 2))p")
mh_down
echo "result $TESSERA_BUILD $held $median"
