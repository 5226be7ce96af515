#!/usr/bin/env bash
# A throttle never blocks a datanode's loop (issue 30): every datanode is
# throttled to 1 MB/s (the lowest NODE_THROTTLE takes) and a mount reads a
# 16 MiB file through them (over ZeroMQ: a throttled datanode offers no
# tile stream). While the read runs, each datanode answers NODE_STATS
# promptly (its reply is not queued behind the throttled reads' waits) and
# keeps heartbeating (meta's last heartbeat from it stays fresh). The
# throttle still paces the read: it takes at least what 1 MB/s per
# datanode allows, and its bytes are right.
source "$(dirname "$0")/lib.sh"

cluster_up
head -c $((16 * 1048576)) /dev/urandom >"$T/data"
cp "$T/data" "$MNT/big"
sync "$MNT/big"

status_json() { "$TESSERA_TOOL" status --state "$STATE" --json; }
mapfile -t ids < <(status_json | tr '{' '\n' | sed -n 's/.*"id": \([0-9]*\),.*/\1/p')
[ "${#ids[@]}" = 4 ] || fail "expected 4 datanodes, got: ${ids[*]}"
for id in "${ids[@]}"; do
    run_tool node throttle "$id" 1 --state "$STATE" || fail "tessera node throttle $id 1 failed"
done

drop_file_cache "$MNT/big"
started=$(now_ms)
dd if="$MNT/big" of="$T/back" bs=1M status=none &
reader=$!
IT_PIDS+=("$reader")
slowest=0
stale=0
probes=0
while kill -0 "$reader" 2>/dev/null; do
    for id in "${ids[@]}"; do
        asked=$(now_ms)
        "$TESSERA_TOOL" node stats "$id" --state "$STATE" >/dev/null 2>>"$T/stats.err" ||
            fail "tessera node stats $id failed during the throttled read: $(tail -n 3 "$T/stats.err")"
        took=$(($(now_ms) - asked))
        ((took > slowest)) && slowest=$took
        probes=$((probes + 1))
    done
    age=$(status_json | tr '{' '\n' | sed -n 's/.*"heartbeat_age_ms": \([0-9]*\).*/\1/p' |
        sort -n | tail -n 1)
    ((age > stale)) && stale=$age
    sleep 0.2
done
wait "$reader" || fail "the throttled read failed"
elapsed=$(($(now_ms) - started))
log "16 MiB read in $elapsed ms through 4 datanodes at 1 MB/s; $probes NODE_STATS, slowest $slowest ms; oldest heartbeat $stale ms"
cmp "$T/data" "$T/back" || fail "the throttled read returned other bytes"
((probes >= 8)) || fail "the read ended before the datanodes could be asked ($probes probes in $elapsed ms)"
# 16 MiB over four datanodes at 1 MB/s each: about 4.2 s at best.
((elapsed >= 3500)) || fail "the read took $elapsed ms: the throttle did not pace it"
# Before, a NODE_STATS waited behind the loop's throttle waits (up to 2 s each).
((slowest < 700)) || fail "a datanode took $slowest ms to answer NODE_STATS during the throttled read"
((stale < 2500)) || fail "a datanode's heartbeat was $stale ms old during the throttled read"
for id in "${ids[@]}"; do
    run_tool node throttle "$id" off --state "$STATE" || fail "tessera node throttle $id off failed"
done
assert_daemons_alive
cluster_down
log "ok"
