#!/usr/bin/env bash
# The multi-host harness itself (lib.sh), on 4 hosts with capped links:
# - a 64 MiB file written through host 1's mount reads back identical
#   through host 3's mount, and through host 2's from the root namespace;
# - the link caps hold, both ways. A 128 MiB round-robin file (every 4th
#   tile on each datanode) written from host 2 sends 3/4 of its tiles out
#   over host 2's link (upload cap); host 1 reads the tiles on its own
#   datanode (local: nothing crosses its link) and those on host 4's
#   (remote: one link's rate, so 32 MiB at 25 MB/s takes >= 1.3 s); host 3
#   reads 8 tiles from each of the three others at once, which its one link
#   (download cap) still carries at the cap only.
# Each check compares the time with what the requested bytes need at the
# cap, and the bytes eth0 counted (mh_link_bytes) with the requested ones
# and with the cap. The mounts read no tiles ahead (--readahead-tiles 0),
# so a read moves exactly the tiles asked for. The round-robin file keeps
# one holder per tile (copies=1): the link checks count its bytes as one
# copy of each tile; file64 has the cluster's copies=2. Prints the timings.
# Skipped (77) where network namespaces or FUSE are unavailable.
set -euo pipefail
exec </dev/null # nothing here may ever prompt
# shellcheck source=tests/multihost/lib.sh
source "$(dirname "$0")/lib.sh"

MIB=1048576
MH_MOUNT_ARGS="--readahead-tiles 0 ${MH_MOUNT_ARGS:-}"
mh_up 4
cap=$MH_LINK_MBPS

# ms_for BYTES: the milliseconds BYTES take at the link cap.
ms_for() { echo $(($1 * 1000 / (cap * 1000000))); }
# rate BYTES MS: MB/s (10^6 bytes/s) with one decimal.
rate() { awk -v b="$1" -v ms="$2" 'BEGIN { printf "%.1f", (ms > 0 ? b / ms / 1000 : 0) }'; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1000000 }'; }

REPORT=()
ELAPSED=0
LINK_RX=0
LINK_TX=0
# timed LABEL BYTES HOST CMD...: run CMD on HOST; leaves the milliseconds in
# ELAPSED and the bytes HOST's link received and sent in LINK_RX, LINK_TX.
timed() {
    local label=$1 bytes=$2 host=$3 t0 rx0 tx0 line
    shift 3
    rx0=$(mh_link_bytes "$host" rx)
    tx0=$(mh_link_bytes "$host" tx)
    t0=$(mh_now_ms)
    mh_exec "$host" "$@" || mh_fail "$label: '$*' on host$host failed"
    ELAPSED=$(($(mh_now_ms) - t0))
    LINK_RX=$(($(mh_link_bytes "$host" rx) - rx0))
    LINK_TX=$(($(mh_link_bytes "$host" tx) - tx0))
    line=$(printf '%-50s %6d ms %7s MB/s   link in %6s MB, out %6s MB' "$label" "$ELAPSED" \
        "$(rate "$bytes" "$ELAPSED")" "$(mb "$LINK_RX")" "$(mb "$LINK_TX")")
    REPORT+=("$line")
    mh_log "$line"
}

# capped LABEL BYTES MS LINKBYTES: BYTES had to cross one link, which moved
# LINKBYTES in MS. Fails if they did not cross it (LINKBYTES < BYTES), if
# MS is under 90 % of what BYTES need at the cap or the link ran faster
# than the cap (the cap does not hold), or if it ran under 30 % of the cap
# (the qdisc loses far too much).
capped() {
    local label=$1 bytes=$2 ms=$3 link=$4 floor
    [ "$link" -ge "$bytes" ] ||
        mh_fail "$label: the link moved $link bytes, fewer than the $bytes read: not remote?"
    [ "$cap" = 0 ] && return 0
    floor=$(($(ms_for "$bytes") * 9 / 10))
    [ "$ms" -ge "$floor" ] ||
        mh_fail "$label took $ms ms, under the $floor ms that $bytes bytes need at $cap MB/s: the cap does not hold"
    [ $((link * 1000 / ms)) -le $((cap * 1050000)) ] ||
        mh_fail "$label: the link ran at $(rate "$link" "$ms") MB/s, over the $cap MB/s cap"
    [ $((bytes * 1000 / ms)) -ge $((cap * 300000)) ] ||
        mh_fail "$label ran at $(rate "$bytes" "$ms") MB/s, under 30 % of the $cap MB/s cap"
}

# 1. Write through host 1, read back through host 3 and host 2.
src=$(mh_random_file 64M)
timed "write 64 MiB through host1 (dd, fsync)" $((64 * MIB)) 1 \
    dd if="$src" of="${MH_MNT[1]}/file64" bs=1M conv=fsync status=none
ino64=$(mh_exec 1 stat -c %i "${MH_MNT[1]}/file64")
where=""
for h in 1 2 3 4; do
    where+=" host$h $(mh_tiles_on "$h" "$ino64" | grep -c . || true)"
done
mh_log "tiles of file64 per datanode:$where"
timed "read 64 MiB through host3 and compare (cmp)" $((64 * MIB)) 3 cmp "$src" "${MH_MNT[3]}/file64"
# The same mount reached from the root namespace, through /proc/PID/root.
cmp "$src" "$(mh_path 2 file64)" || mh_fail "file64 read through host2's mount from the root namespace differs"

# 2. A round-robin file from host 2: each datanode gets every 4th tile.
mh_exec 2 mkdir "${MH_MNT[2]}/rr"
mh_exec 2 setfattr -n user.tessera.layout -v "placement=roundrobin copies=1" "${MH_MNT[2]}/rr"
src128=$(mh_random_file 128M)
timed "write 128 MiB round-robin through host2" $((128 * MIB)) 2 \
    dd if="$src128" of="${MH_MNT[2]}/rr/file128" bs=1M conv=fsync status=none
capped "writing 96 MiB from host2 to the three others" $((96 * MIB)) "$ELAPSED" "$LINK_TX"
ino=$(mh_exec 1 stat -c %i "${MH_MNT[1]}/rr/file128")
declare -A tiles_of
for h in 1 2 3 4; do
    tiles_of[$h]=$(mh_tiles_on "$h" "$ino" | tr '\n' ' ')
    read -r -a list <<<"${tiles_of[$h]}"
    [ "${#list[@]}" = 32 ] || mh_fail "host$h's datanode holds ${#list[@]} tiles of file128, expected 32"
done
[ "$(printf '%s\n' "${tiles_of[@]}" | tr ' ' '\n' | grep -c .)" = 128 ] ||
    mh_fail "file128's tiles are not 128 distinct ones: ${tiles_of[*]}"

# read_tiles FILE TILE...: read each 1 MiB tile with its own O_DIRECT dd,
# past the page cache, so the bytes come from the datanodes.
# shellcheck disable=SC2016
read_tiles=(bash -c 'f=$1; shift; for k in "$@"; do
    dd if="$f" of=/dev/null bs=1M skip="$k" count=1 iflag=direct status=none || exit 1; done' read_tiles)
read -r -a local_tiles <<<"${tiles_of[1]}"
read -r -a remote_tiles <<<"${tiles_of[4]}"
mh_exec 1 "${read_tiles[@]}" "${MH_MNT[1]}/rr/file128" "${remote_tiles[0]}" ||
    mh_fail "O_DIRECT reads fail on the mount"
remote_tiles=("${remote_tiles[@]:1}") # that one may be in the client's cache now

# 3. Local vs remote, on host 1.
timed "host1 reads 32 tiles on its own datanode (local)" $((32 * MIB)) 1 \
    "${read_tiles[@]}" "${MH_MNT[1]}/rr/file128" "${local_tiles[@]}"
local_ms=$ELAPSED
[ "$LINK_RX" -lt "$MIB" ] || mh_fail "a local read brought $LINK_RX bytes over host1's link"
timed "host1 reads 31 tiles on host4's datanode (remote)" $((31 * MIB)) 1 \
    "${read_tiles[@]}" "${MH_MNT[1]}/rr/file128" "${remote_tiles[@]}"
remote_ms=$ELAPSED
capped "the remote read" $((31 * MIB)) "$remote_ms" "$LINK_RX"
# Which of the two is faster is the machine's CPU against the cap, not the
# harness: on a loaded machine a local read ran at 20 MB/s, slower than half
# the remote one. What the harness promises is checked above (the local
# read crossed no link, the remote one crossed it within the cap); both
# times are in the report.
mh_log "local $local_ms ms for 32 MiB, remote $remote_ms ms for 31 MiB"

# 4. Host 3 reads 8 tiles from each of hosts 1, 2, 4 at once: one link.
read -r -a from1 <<<"${tiles_of[1]}"
read -r -a from2 <<<"${tiles_of[2]}"
read -r -a from4 <<<"${tiles_of[4]}"
# shellcheck disable=SC2016
timed "host3 reads 3 x 8 tiles from hosts 1, 2, 4 at once" $((24 * MIB)) 3 \
    bash -c 'f=$1; shift; read_some() { for k in "$@"; do
        dd if="$f" of=/dev/null bs=1M skip="$k" count=1 iflag=direct status=none || return 1; done; }
    read_some "${@:1:8}" & a=$!; read_some "${@:9:8}" & b=$!; read_some "${@:17:8}" & c=$!
    wait $a && wait $b && wait $c' parallel "${MH_MNT[3]}/rr/file128" \
    "${from1[@]:8:8}" "${from2[@]:8:8}" "${from4[@]:8:8}"
capped "the parallel read from three hosts" $((24 * MIB)) "$ELAPSED" "$LINK_RX"

mh_exec 4 cmp "$src128" "${MH_MNT[4]}/rr/file128" || mh_fail "file128 differs when read through host4"
mh_assert_alive

echo "# $MH_NAME: $MH_K hosts, links capped at $cap MB/s each way (0 = no cap); MB = 10^6 bytes"
for line in "${REPORT[@]}"; do
    echo "#   $line"
done
if [ "$cap" != 0 ]; then
    echo "#   at $cap MB/s one link moves 32 MiB in $(ms_for $((32 * MIB))) ms; local reads were $(
        awk -v l="$local_ms" -v r="$remote_ms" 'BEGIN { printf "%.1f", r * 32 / 31 / l }')x faster than remote"
fi

# 5. Teardown leaves nothing behind.
id=$MH_ID
dir=$MH_DIR
pids="$MH_META_PID ${MH_NODE_PID[*]} ${MH_MOUNT_PID[*]}"
mh_down || mh_fail "teardown left something behind"
if ip netns list | grep -q "^$id-"; then
    mh_fail "namespaces of $id are left: $(ip netns list | grep "^$id-" | tr '\n' ' ')"
fi
for pid in $pids; do
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$dir"; then
        mh_fail "daemon pid $pid is still running after teardown"
    fi
done
[ ! -e "$dir" ] || mh_fail "$dir is still there after teardown"
mh_log "ok"
