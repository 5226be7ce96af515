#!/usr/bin/env bash
# A busy datanode is waited for; a silent one is not. --io-timeout-ms is how
# long a datanode may stay silent, not how long a request may take: a
# datanode that answers PINGs while a queue of writes waits on its disk is
# busy, and the mount waits for it (up to 12 timeouts) instead of failing
# the write with EIO (copies=1) or dropping a replica (copies=2). Every
# datanode is throttled to 1 MB/s, so that the 16 writes a mount keeps in
# flight queue for about 4 s on each, twice the mount's 2 s timeout (the
# multi-host tests hit the same on slow links and CPUs): both files are
# written and synced, their bytes are right, no replica was dropped, and
# the mount took no datanode for down. Then a datanode stopped with
# SIGSTOP (silent: it answers no PING either) still fails a read of a tile
# only it holds with EIO, within 6 timeouts (a tile stream's timeout, then
# ZeroMQ's and a PING's; the patience alone would take 12), and serves it
# once continued.
source "$(dirname "$0")/lib.sh"

cluster_up

status_json() { "$TESSERA_TOOL" status --state "$STATE" --json; }
mapfile -t ids < <(status_json | tr '{' '\n' | sed -n 's/.*"id": \([0-9]*\),.*/\1/p')
[ "${#ids[@]}" = 4 ] || fail "expected 4 datanodes, got: ${ids[*]}"

touch "$MNT/one" && setfattr -n user.tessera.layout -v copies=1 "$MNT/one" ||
    fail "could not give $MNT/one one holder per tile"
touch "$MNT/two" && setfattr -n user.tessera.layout -v copies=2 "$MNT/two" ||
    fail "could not give $MNT/two two holders per tile"
one=$(random_file 24M)
two=$(random_file 12M)

for id in "${ids[@]}"; do
    run_tool node throttle "$id" 1 --state "$STATE" || fail "tessera node throttle $id 1 failed"
done
mount_log_lines=$(wc -l <"$STATE/logs/mount.log")
for name in one two; do
    started=$(now_ms)
    timeout -k 5 120 dd if="${!name}" of="$MNT/$name" bs=1M conv=notrunc,fsync status=none 2>"$T/dd.err" ||
        fail "writing $name through datanodes at 1 MB/s failed: $(cat "$T/dd.err")"
    log "$name: $(($(stat -c %s "${!name}") / 1048576)) MiB written and synced in $(($(now_ms) - started)) ms at 1 MB/s per datanode"
done
for id in "${ids[@]}"; do
    run_tool node throttle "$id" off --state "$STATE" || fail "tessera node throttle $id off failed"
done
# 24 MiB over four datanodes at 1 MB/s is about 6 s: had the throttle not
# held the writes back, the test would prove nothing.
tail -n +"$((mount_log_lines + 1))" "$STATE/logs/mount.log" >"$T/mount-during.log"
if grep -E 'gave no answer|failed on every holder|going on with the tile' "$T/mount-during.log"; then
    fail "the mount gave up on a busy datanode (lines above)"
fi
"$TESSERA_TOOL" health --state "$STATE" >"$T/health.out" 2>&1 ||
    fail "not HEALTHY after the throttled writes (a replica dropped?): $(cat "$T/health.out")"
for name in one two; do
    drop_file_cache "$MNT/$name"
    cmp "${!name}" "$MNT/$name" || fail "$name differs after the throttled write"
done

# A silent datanode: stopped, it answers nothing, not even a PING.
ino=$(stat -c %i "$MNT/one")
bucket=$((ino % 256))
shopt -s nullglob
victim=""
for node in node1 node2 node3 node4; do
    held=("$STATE/$node/tiles/$bucket/$ino".*.*[0-9]) # not the .crc sidecars
    if [ "${#held[@]}" -gt 0 ]; then
        victim=$node
        tile=$(basename "${held[0]}" | cut -d. -f2)
        break
    fi
done
[ -n "$victim" ] || fail "no datanode holds a tile of $MNT/one"
pid=$(pid_of "$victim")
it_pid_is_ours "$pid" || fail "$victim pid $pid is not a daemon of this test"
drop_file_cache "$MNT/one"
kill -STOP "$pid"
started=$(now_ms)
rc=0
timeout -k 5 60 dd if="$MNT/one" of="$T/tile" bs=1M skip="$tile" count=1 status=none 2>"$T/read.err" || rc=$?
elapsed=$(($(now_ms) - started))
kill -CONT "$pid"
log "read of tile $tile on the stopped $victim: exit $rc after $elapsed ms: $(cat "$T/read.err")"
[ "$rc" -lt 124 ] || fail "a read of a tile on a stopped datanode hung for 60 s"
[ "$rc" != 0 ] || fail "a read of tile $tile on the stopped $victim succeeded (from a cache?)"
grep -q 'Input/output error' "$T/read.err" || fail "the read failed with '$(cat "$T/read.err")', expected EIO"
((elapsed < 6 * IO_TIMEOUT_MS)) ||
    fail "EIO took $elapsed ms, more than 6 x --io-timeout-ms: a silent datanode was waited for"

deadline=$(($(now_ms) + 30000))
until dd if="$MNT/one" of="$T/tile" bs=1M skip="$tile" count=1 status=none 2>"$T/read.err"; do
    (($(now_ms) < deadline)) || fail "tile $tile still fails 30 s after $victim was continued: $(cat "$T/read.err")"
    sleep 0.2
done
dd if="$one" of="$T/expect" bs=1M skip="$tile" count=1 status=none
cmp "$T/expect" "$T/tile" || fail "tile $tile read after $victim was continued has wrong bytes"
assert_daemons_alive
cluster_down
