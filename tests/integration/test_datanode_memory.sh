#!/usr/bin/env bash
# A datanode's memory stays under its cap (--memory) however many mounts
# read from it at once: read replies it has read from disk and handed to
# ZeroMQ count against the cap, and over it the datanode takes no new
# request until they have been sent. A separate small cluster (one meta,
# one datanode with --memory 32M, so every tile is on it) serves four
# mounts reading 32 files at once over ZeroMQ (--tile-streams 0: the tile
# stream sends from the page cache and holds no reply in memory). Every
# byte read back intact, the datanode's peak resident memory (VmHWM) under
# its cap (not under AddressSanitizer), and replies in flight never over
# their share by more than one tile (its log at exit).
source "$(dirname "$0")/lib.sh"

# meson test sets MALLOC_PERTURB_ to a random byte, so glibc writes over
# every buffer it hands out and every one freed: pages a datanode in
# service never touches become resident (measured: peak 26 MiB without,
# 33 MiB with). The cap is about the datanode users run.
export MALLOC_PERTURB_=0

SMALL=$T/small
CAP_MIB=32

small_cluster_up "$SMALL" --memory "${CAP_MIB}M"
mounts=()
for i in 1 2 3 4; do
    small_mount "$SMALL" "$T/mnt-reader$i" --tile-streams 0
    mounts+=("$T/mnt-reader$i")
done
# The files are written over the tile stream: a write over ZeroMQ sits in
# ZeroMQ's queue before the datanode sees it, outside what the cap counts.
WRITER=$T/mnt-writer
small_mount "$SMALL" "$WRITER"
log "small cluster: meta $SMALL_META, one datanode (pid $SMALL_NODE_PID) with --memory ${CAP_MIB}M, 5 mounts"

# 8 files of 32 MiB.
source_file=$(random_file 32M)
wait_for 15 "a first write to succeed on the fresh small cluster" \
    bash -c "cp '$source_file' '$WRITER/f1' && sync '$WRITER/f1'"
pids=()
for f in 2 3 4 5 6 7 8; do
    cp "$source_file" "$WRITER/f$f" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || fail "a parallel cp into $WRITER failed"; done
sync "$WRITER"/f*

# Twice: 32 readers at once, 8 per mount, every page cache dropped first.
for round in 1 2; do
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
    pids=()
    for mnt in "${mounts[@]}"; do
        for f in 1 2 3 4 5 6 7 8; do
            timeout -k 5 120 cmp "$source_file" "$mnt/f$f" >"$T/cmp-$round-$(basename "$mnt")-$f.log" 2>&1 &
            pids+=($!)
        done
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || fail "a parallel read differs or hung: $(cat "$T"/cmp-"$round"-*.log)"
    done
    log "round $round: 32 parallel readers over 4 mounts read 1 GiB intact"
done

peak=$(awk '/^VmHWM:/ {print int($2 / 1024)}' "/proc/$SMALL_NODE_PID/status")
if under_asan "$TESSERA_DATANODE"; then
    log "datanode peak $peak MiB under AddressSanitizer (cap ${CAP_MIB} MiB not checked)"
else
    [ "$peak" -le "$CAP_MIB" ] || fail "the datanode peaked at $peak MiB, over its ${CAP_MIB} MiB cap"
    log "datanode peak resident $peak MiB, cap ${CAP_MIB} MiB"
fi

# Its counters at a clean stop: replies stayed within their share.
kill -TERM "$SMALL_NODE_PID"
wait_for 15 "the datanode to stop" bash -c "! kill -0 $SMALL_NODE_PID 2>/dev/null"
line=$(grep 'read replies waiting to be sent peaked' "$SMALL/node1.log") ||
    fail "the datanode did not log its reply memory at exit"
log "datanode: ${line#*info: }"
[[ $line =~ peaked\ at\ ([0-9.]+)\ of\ their\ ([0-9.]+)\ MiB ]] || fail "unexpected log line: $line"
awk -v peak="${BASH_REMATCH[1]}" -v cap="${BASH_REMATCH[2]}" 'BEGIN { exit !(peak <= cap + 1) }' ||
    fail "replies peaked at ${BASH_REMATCH[1]} MiB, over their ${BASH_REMATCH[2]} MiB and one 1 MiB tile"
log "ok"
