#!/usr/bin/env bash
# While no datanode is up, a write waits for one (as long as the mount's
# --io-timeout-ms) instead of failing at once: a hand-started cluster with
# one datanode, stopped (SIGSTOP) until meta counts it down, takes a write
# started meanwhile once the datanode continues, bytes intact. Stopped for
# longer than the timeout, the write fails with an error and the mount
# serves again afterwards.
source "$(dirname "$0")/lib.sh"

SMALL=$T/small
SMALL_MNT=$T/mnt-small
WAIT_MS=8000 # this mount's --io-timeout-ms

small_cluster_up "$SMALL"
small_mount "$SMALL" "$SMALL_MNT" --io-timeout-ms "$WAIT_MS"
first=$(random_file 2M)
wait_for 15 "a first write to succeed on the fresh small cluster" \
    bash -c "cp '$first' '$SMALL_MNT/first' && sync '$SMALL_MNT/first'"

# stop_node_until_down: SIGSTOP the datanode and wait for meta to say so.
stop_node_until_down() {
    local downs
    downs=$(grep -c 'datanode 1 is down' "$SMALL/meta.log" || true)
    kill -STOP "$SMALL_NODE_PID"
    wait_for 15 "meta to count the stopped datanode down" \
        bash -c "[ \$(grep -c 'datanode 1 is down' '$SMALL/meta.log') -gt $downs ]"
}

# 1. The datanode continues 2 s into the write: the write succeeds.
stop_node_until_down
data=$(random_file 4M)
timeout -k 5 60 dd if="$data" of="$SMALL_MNT/waited" bs=1M conv=fsync status=none \
    2>"$T/waited.err" &
writer=$!
sleep 2
kill -CONT "$SMALL_NODE_PID"
rc=0
wait "$writer" || rc=$?
[ "$rc" = 0 ] || fail "a write while no datanode was up failed (exit $rc): $(cat "$T/waited.err")"
grep -q 'no datanode is up to take' "$SMALL/mount-$(basename "$SMALL_MNT").log" ||
    fail "the mount did not log that it waited for a datanode"
drop_file_cache "$SMALL_MNT/waited"
cmp "$data" "$SMALL_MNT/waited" || fail "the file written while waiting differs"
log "a write started with no datanode up waited for it and succeeded"

# 2. Stopped for longer than the timeout: the write fails, within a bound.
stop_node_until_down
start=$(now_ms)
rc=0
timeout -k 5 60 dd if="$data" of="$SMALL_MNT/failed" bs=1M conv=fsync status=none \
    2>"$T/failed.err" || rc=$?
elapsed=$(($(now_ms) - start))
kill -CONT "$SMALL_NODE_PID"
log "write with the datanode stopped throughout: exit $rc after $elapsed ms: $(cat "$T/failed.err")"
[ "$rc" -lt 124 ] || fail "the write hung for 60 s with no datanode up"
[ "$rc" != 0 ] || fail "a write succeeded with no datanode up"
((elapsed >= WAIT_MS - 500)) || fail "the write failed after $elapsed ms, before --io-timeout-ms $WAIT_MS"
grep -q 'No space left on device' "$T/failed.err" ||
    fail "the write failed with '$(cat "$T/failed.err")', expected 'No space left on device'"

# 3. The mount serves again once the datanode is back.
rm -f "$SMALL_MNT/failed"
wait_for 15 "a write to succeed after the datanode came back" \
    bash -c "cp '$data' '$SMALL_MNT/after' && sync '$SMALL_MNT/after'"
cmp "$first" "$SMALL_MNT/first" || fail "the first file changed"
log "ok"
