#!/usr/bin/env bash
# A full datanode gives ENOSPC, like a full disk: a separate small cluster
# (one meta, one datanode started by hand with --capacity 8M, one mount)
# takes a 4 MiB file, refuses a 16 MiB one with "No space left on device"
# (not EIO, not a hang), keeps the first file intact, and after rm has room
# again.
source "$(dirname "$0")/lib.sh"

SMALL=$T/small
SMALL_MNT=$T/mnt-small
IT_MOUNTS+=("$SMALL_MNT")

# start_daemon NAME LOG COMMAND...: run COMMAND in the background and wait
# for its "ready" log line. Returns 1 if it exited because its port was
# taken (the caller tries other ports); fails the test on any other exit.
start_daemon() {
    local name=$1 log_file=$2 pid deadline
    shift 2
    "$@" >"$log_file" 2>&1 &
    pid=$!
    IT_PIDS+=("$pid")
    deadline=$(($(now_ms) + 30000))
    until grep -q 'info: ready' "$log_file"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            it_port_was_taken "$log_file" && return 1
            fail "$name exited before it was ready"
        fi
        (($(now_ms) < deadline)) || fail "$name not ready after 30 s"
        sleep 0.1
    done
}

# One meta and one 8 MiB datanode on BASE+5 and BASE+6, then the mount.
start_small_cluster() {
    local pid
    rm -rf "$SMALL"
    mkdir -p "$SMALL/meta" "$SMALL/node1" "$SMALL_MNT"
    meta_endpoint=tcp://127.0.0.1:$((BASE + 5))
    node_endpoint=tcp://127.0.0.1:$((BASE + 6))
    start_daemon tessera-meta "$SMALL/meta.log" \
        "$TESSERA_META" --listen "$meta_endpoint" --data "$SMALL/meta" || return 1
    start_daemon tessera-datanode "$SMALL/node1.log" \
        "$TESSERA_DATANODE" --listen "$node_endpoint" --meta "$meta_endpoint" \
        --data "$SMALL/node1" --capacity 8M || return 1
}

for attempt in 1 2 3; do
    start_small_cluster && break
    [ "$attempt" != 3 ] || fail "ports taken three times over"
    log "a port of $BASE-$((BASE + 9)) was taken meanwhile; starting again on other ports"
    for pid in "${IT_PIDS[@]}"; do it_stop_pid "$pid"; done
    IT_PIDS=()
    mkdir -p "$T/attempt-$attempt"
    mv "$SMALL"/*.log "$T/attempt-$attempt/"
    IT_PORT_SHIFT=$((IT_PORT_SHIFT + 1 + RANDOM % 500))
    it_pick_base
done

"$TESSERA_MOUNT" --meta "$meta_endpoint" --io-timeout-ms "$IO_TIMEOUT_MS" -f \
    -o default_permissions "$SMALL_MNT" >"$SMALL/mount.log" 2>&1 &
mount_pid=$!
IT_PIDS+=("$mount_pid")
deadline=$(($(now_ms) + 30000))
until mountpoint -q "$SMALL_MNT"; do
    kill -0 "$mount_pid" 2>/dev/null || fail "tessera-mount exited before mounting"
    (($(now_ms) < deadline)) || fail "mount at $SMALL_MNT not up after 30 s"
    sleep 0.1
done
log "small cluster: meta $meta_endpoint, one 8 MiB datanode, mount $SMALL_MNT"
log "df: $(df -B1 --output=size,used,avail "$SMALL_MNT" | tail -n 1)"

# The datanode registers with meta asynchronously (heartbeat): wait until a
# first small write goes through.
first=$(random_file 4M)
wait_for 15 "a 4 MiB write to succeed on the fresh small cluster" \
    bash -c "cp '$first' '$SMALL_MNT/fits' && sync '$SMALL_MNT/fits'"

big=$(random_file 16M)
start=$(now_ms)
rc=0
timeout -k 5 120 bash -c "cp '$big' '$SMALL_MNT/too-big' && sync '$SMALL_MNT/too-big'" 2>"$T/enospc.err" || rc=$?
elapsed=$(($(now_ms) - start))
log "16 MiB write on an 8 MiB cluster: exit $rc after $elapsed ms: $(cat "$T/enospc.err")"
[ "$rc" -lt 124 ] || fail "16 MiB write on an 8 MiB cluster hung for 120 s"
[ "$rc" != 0 ] || fail "16 MiB write on an 8 MiB cluster succeeded"
grep -q 'No space left on device' "$T/enospc.err" ||
    fail "16 MiB write failed with '$(cat "$T/enospc.err")', expected ENOSPC"

drop_file_cache "$SMALL_MNT/fits"
cmp "$first" "$SMALL_MNT/fits" || fail "the 4 MiB file is damaged after the ENOSPC"

rm -f "$SMALL_MNT/too-big" || fail "rm of the partial file failed"
rm "$SMALL_MNT/fits" || fail "rm of the 4 MiB file failed"
second=$(random_file 6M)
wait_for 20 "space to come back after rm (a 6 MiB write to succeed)" \
    bash -c "cp '$second' '$SMALL_MNT/after-rm' && sync '$SMALL_MNT/after-rm'"
drop_file_cache "$SMALL_MNT/after-rm"
cmp "$second" "$SMALL_MNT/after-rm" || fail "file written after rm differs"

log "ok"
