#!/usr/bin/env bash
# `tessera profile` and `tessera rebalance` end to end on one machine:
# four datanodes of this machine (tessera up), a fifth datanode and a second
# mount that say they run on "far-host".
# 1. profile start on a directory; reads through the far mount are counted
#    per tile and machine; profile show as a table, JSON and an SVG heat map;
#    files created later in the directory are profiled too.
# 2. rebalance plan --policy frequent: every tile only far-host reads moves
#    to far-host's datanode; apply moves them (tessera layout show), the file
#    reads the same on both mounts, the journal is empty, a new plan is empty.
# 3. tiles read by both machines and never written get a copy on far-host,
#    which its mount then reads locally; tessera layout show lists each
#    tile's primary, then the copy (table and JSON).
# 4. apply paced by --max-mbps and interrupted (SIGINT): exit 130, nothing
#    left half-done in the journal; apply again finishes. While it runs, a
#    second apply and an abort are refused at once naming it, and status
#    (text, JSON) shows it; an apply killed with -9 holds the cluster's
#    apply lock until its lease lapses, then the next apply resumes it.
# 5. apply while a process rewrites the tiles (client_helper): no write is
#    lost, skipped steps are done by the next apply.
# 6. copies of a file held open by a writer: apply makes them; the writer,
#    which cached the tiles' one-holder sets before, writes through its
#    descriptor afterwards and fsyncs: the old files are retired, so its
#    writes go to both holders (the far mount reads them from its copy).
# 7. a step committed but not finished (a tool killed between MOVE_COMMIT
#    and RETIRE; client_helper ... unfinished): status shows it committed,
#    abort finishes it (retires the old file) and apply resumes one; the
#    far mount, which cached the old location, follows the tile.
# 8. usage errors exit 2, a path outside the mount exits 1.
# 9. replica sets (copies=2, the cluster's default): tiles far-host alone
#    reads each move one replica to far-host's datanode, and a watcher that
#    polls `tessera layout show --json` every 50 ms while apply runs sees
#    every tile keep 2 holders on up nodes throughout.
# Sections 1-7 are about one primary and the read copies made beside it:
# their directories set copies=1 (user.tessera.layout) before their files
# are written.
source "$(dirname "$0")/lib.sh"

[ -n "${CLIENT_HELPER:-}" ] && [ -x "$CLIENT_HELPER" ] ||
    fail "CLIENT_HELPER is not set to the built client_helper (run through meson test)"

cluster_up
meta=$(meta_endpoint)
far=far-host
MIB=1048576
APP=$MNT/app

tool() { "$TESSERA_TOOL" "$@" --meta "$meta"; }
count_of() { grep -o -- "$1" | wc -l; }

# The files exist before the far datanode does, so every tile is on nodes 1-4.
mkdir "$APP"
setfattr -n user.tessera.layout -v copies=1 "$APP" || fail "setting copies=1 on $APP failed"
moved=$(random_file 8M)
shared=$(random_file 4M)
paced=$(random_file 12M)
cp "$moved" "$APP/moved"
cp "$shared" "$APP/shared"
cp "$paced" "$APP/paced"
sync "$APP/moved" "$APP/shared" "$APP/paced"
# Section 9's file, copies=2 (the default): both replicas of each tile on
# this machine's datanodes, since far-host has none yet.
mkdir "$MNT/replicated"
head -c $((8 * MIB)) /dev/urandom >"$MNT/replicated/file"
sync "$MNT/replicated/file"

far_port=$((BASE + 7))
mkdir -p "$T/far"
mapfile -t far_key < <(key_args far datanode)
mapfile -t mount2_key < <(key_args mount2 mount)
"$TESSERA_DATANODE" --listen "tcp://127.0.0.1:$far_port" --meta "$meta" --data "$T/far/data" \
    --machine "$far" "${far_key[@]}" >"$T/far/datanode.log" 2>&1 &
IT_PIDS+=($!)
wait_for 30 "the datanode on $far to register" grep -q 'registered this datanode as node' \
    "$T/far/datanode.log"
far_node=$(sed -n 's/.*registered this datanode as node \([0-9]*\).*/\1/p' "$T/far/datanode.log" |
    head -n 1)
log "datanode $far_node on machine $far"

MNT2=$T/mnt2
mkdir -p "$MNT2"
IT_MOUNTS+=("$MNT2")
"$TESSERA_MOUNT" --meta "$meta" --machine "$far" "${mount2_key[@]}" --io-timeout-ms "$IO_TIMEOUT_MS" -f \
    "$MNT2" >"$T/mount2.log" 2>&1 &
mount2_pid=$!
IT_PIDS+=("$mount2_pid")
deadline=$(($(now_ms) + 30000))
until mountpoint -q "$MNT2"; do
    kill -0 "$mount2_pid" 2>/dev/null || fail "the second tessera-mount exited"
    (($(now_ms) < deadline)) || fail "the second mount at $MNT2 is not up after 30 s"
    sleep 0.1
done

# read_direct MOUNT FILE: the file's bytes from the datanodes (no page cache).
read_direct() { dd if="$1/app/$2" bs=1M iflag=direct status=none; }
# record_of INO TILE FIELD: a field of the tile's TILE_MAP record (1 node,
# 2 version, 3 copies, 4 read_node, 5 read_version).
record_of() { "$CLIENT_HELPER" map "$meta" "$1" "$2" "" | awk -v f="$3" '{ print $f }'; }
# far_reads_of FILE: tiles of FILE that far-host's counts cover.
far_reads_of() {
    tool profile show "$APP/$1" --json | count_of "\"machine\": \"$far\", \"reads\": [1-9]"
}

# ---- 1. profiles -------------------------------------------------------------
out=$(tool profile start "$APP") || fail "profile start failed: $out"
log "$out"
[[ $out == *"on 3 files and 1 directory"* ]] || fail "profile start did not cover the tree: $out"
for pass in 1 2; do
    read_direct "$MNT2" moved | cmp - "$moved" || fail "the far mount read other bytes (moved)"
    read_direct "$MNT2" paced | cmp - "$paced" || fail "the far mount read other bytes (paced)"
done
read_direct "$MNT2" shared | cmp - "$shared" || fail "the far mount read other bytes (shared)"
# shared: 4 tiles read by both machines. A mount learns that a file is
# profiled at its next open, so this one reads again until it is counted.
both_read_shared() {
    [ "$(tool profile show "$APP/shared" --json | count_of '"machine": "[^"]*", "reads": [1-9]')" = 8 ] &&
        return 0
    read_direct "$MNT" shared | cmp - "$shared" || fail "this mount read other bytes (shared)"
    sleep 0.5
    return 1
}
counted() { [ "$(far_reads_of moved)" = 8 ] && [ "$(far_reads_of paced)" = 12 ] &&
    both_read_shared; }
wait_for 20 "both mounts' counts of every tile" counted

tool profile show "$APP/moved" >"$T/show.txt" || fail "profile show failed"
grep -q "profiling on" "$T/show.txt" || fail "profile show does not say profiling is on"
grep -q "8 tiles with counts, 1 machine; reads 16, writes 0; read 16M" "$T/show.txt" ||
    fail "profile show: wrong totals: $(head -n 3 "$T/show.txt")"
grep -q "local 0B (0%), remote 16M" "$T/show.txt" ||
    fail "profile show: the far mount's reads are not all remote: $(head -n 3 "$T/show.txt")"
tool profile show "$APP" --svg "$T/heat.svg" >"$T/show-all.txt" 2>"$T/show-all.err" ||
    fail "profile show --svg failed: $(cat "$T/show-all.err")"
grep -q "^total: 3 files with counts of 3, 24 tiles, 2 machines" "$T/show-all.txt" ||
    fail "profile show of the directory: $(tail -n 1 "$T/show-all.txt")"
head -c 5 "$T/heat.svg" | grep -q '<?xml' || fail "the heat map is not an SVG document"
[ "$(count_of '<title>tile' <"$T/heat.svg")" = $(((8 + 4 + 12) * 2)) ] ||
    fail "the heat map does not have a cell per tile and machine"
grep -q ">$far</text>" "$T/heat.svg" || fail "the heat map does not label $far"
if command -v xmllint >/dev/null; then
    xmllint --noout "$T/heat.svg" || fail "the heat map is not well-formed XML"
fi

# A file created in the profiled directory is profiled from its first write.
head -c 100000 /dev/urandom >"$APP/later"
sync "$APP/later"
later_counted() { grep -q '"writes": [1-9]' <<<"$(tool profile show "$APP/later" --json)"; }
wait_for 10 "the writes of a file created in the profiled directory" later_counted
tool profile stop "$APP/later" >/dev/null || fail "profile stop failed"
grep -q "profiling off" <<<"$(tool profile show "$APP/later")" || fail "profile stop did not stop"
tool profile reset "$APP/later" >/dev/null || fail "profile reset failed"
grep -q "no counts" <<<"$(tool profile show "$APP/later")" || fail "profile reset did not clear"

# ---- 2. moves ---------------------------------------------------------------
tool rebalance plan "$APP/moved" --policy frequent >"$T/plan.txt" || fail "plan failed"
grep -q "8 steps: 0 copies, 8 moves, 0 drops; 8.0M to transfer" "$T/plan.txt" ||
    fail "unexpected plan: $(head -n 3 "$T/plan.txt")"
tool rebalance plan "$APP/moved" --policy frequent --json >"$T/plan.json" || fail "plan --json failed"
[ "$(count_of "\"kind\": \"move\"" <"$T/plan.json")" = 8 ] || fail "plan --json: not 8 moves"
[ "$(count_of "\"to\": $far_node," <"$T/plan.json")" = 8 ] || fail "plan --json: not all to $far"
grep -q '"makespan_before"' "$T/plan.json" || fail "plan --json has no makespans"

moved_sum=$(sha256sum <"$moved")
tool rebalance apply "$APP/moved" --policy frequent >"$T/apply.txt" 2>"$T/apply.err" ||
    fail "apply failed: $(cat "$T/apply.txt" "$T/apply.err")"
log "$(tail -n 2 "$T/apply.txt" | tr '\n' ' ')"
grep -q "apply: 8 steps: 8 done, 0 skipped (file changed), 0 failed, 0 not run" "$T/apply.txt" ||
    fail "apply did not run the 8 moves: $(cat "$T/apply.txt" "$T/apply.err")"
grep -q "^tiles 8/8" "$T/apply.err" || fail "apply showed no progress: $(cat "$T/apply.err")"
tool layout show "$APP/moved" --json >"$T/layout.json" || fail "layout show failed"
[ "$(count_of "\"node\": $far_node," <"$T/layout.json")" = 8 ] ||
    fail "not every tile is on $far's datanode: $(cat "$T/layout.json")"
grep -q "the relocation journal is empty" <<<"$(tool rebalance status)" || fail "the journal is not empty"
grep -q '"count": 0' <<<"$(tool rebalance status --json)" || fail "status --json: the journal is not empty"
# Planned before the reads below: this mount's first read of moved is counted
# (it opens the file after profiling started), and a tile read by both
# machines rightly gets a copy.
plan_after=$(tool rebalance plan "$APP/moved" --policy frequent)
grep -q "nothing to do" <<<"$plan_after" || fail "a plan after apply still has steps: $plan_after"
[ "$(read_direct "$MNT" moved | sha256sum)" = "$moved_sum" ] || fail "moved file changed (mount 1)"
[ "$(read_direct "$MNT2" moved | sha256sum)" = "$moved_sum" ] || fail "moved file changed (mount 2)"
tool rebalance plan "$APP/moved" --policy balanced >/dev/null || fail "the balanced plan failed"

# ---- 3. copies ---------------------------------------------------------------
tool rebalance plan "$APP/shared" --policy frequent >"$T/plan-shared.txt" || fail "plan failed"
grep -q "4 steps: 4 copies, 0 moves, 0 drops" "$T/plan-shared.txt" ||
    fail "tiles read by both machines should get copies: $(head -n 3 "$T/plan-shared.txt")"
# Every plan also has the performance model's prediction (issue 32).
grep -Eq "^performance model \(mounts, links, datanodes\): [0-9.]+ s -> [0-9.]+ s" "$T/plan-shared.txt" ||
    fail "the plan has no performance model prediction: $(tail -n 3 "$T/plan-shared.txt")"
tool rebalance plan "$APP/shared" --policy frequent --json >"$T/plan-shared.json" || fail "plan --json failed"
python3 -c 'import json, sys
plan = json.load(open(sys.argv[1]))
sys.exit(0 if plan["model_seconds_before"] > 0 and plan["model_seconds_after"] > 0 else 1)' \
    "$T/plan-shared.json" || fail "plan --json has no model seconds: $(head -c 400 "$T/plan-shared.json")"
tool rebalance apply "$APP/shared" --policy frequent --concurrency 2 >"$T/apply-shared.txt" \
    2>&1 || fail "apply (copies) failed: $(cat "$T/apply-shared.txt")"
grep -q "nothing to do" <<<"$(tool rebalance plan "$APP/shared" --policy frequent)" ||
    fail "a plan after the copies still has steps"
# layout show lists every holder: each tile's primary first, then the copy.
tool layout show "$APP/shared" --json >"$T/layout-shared.json" || fail "layout show --json failed"
[ "$(count_of "{\"datanode\": $far_node, \"version\": [0-9]*, \"kind\": \"copy\"}" \
    <"$T/layout-shared.json")" = 4 ] ||
    fail "layout show --json does not list $far's copies: $(cat "$T/layout-shared.json")"
[ "$(count_of '"holders": \[{"datanode": [0-9]*, "version": [0-9]*, "kind": "primary"}, {' \
    <"$T/layout-shared.json")" = 4 ] ||
    fail "layout show --json does not list the primary first: $(cat "$T/layout-shared.json")"
tool layout show "$APP/shared" >"$T/layout-shared.txt" || fail "layout show failed"
[ "$(awk -v far="$far_node" '$1 ~ /^[0-9]+$/ && $2 ~ ("^[1-9][0-9]*," far "$")' \
    "$T/layout-shared.txt" | wc -l)" = 4 ] ||
    fail "layout show does not list each tile's primary, then $far's copy: $(cat "$T/layout-shared.txt")"
tool node stats "$far_node" --reset >/dev/null || fail "node stats failed"
read_direct "$MNT2" shared | cmp - "$shared" || fail "the far mount reads other bytes from copies"
far_bytes=$(tool node stats "$far_node" --json | sed -n 's/.*"bytes_read": \([0-9]*\).*/\1/p')
log "the far mount read $far_bytes bytes of shared from its own datanode"
((far_bytes >= 4 * MIB)) || fail "the far mount did not read its copies ($far_bytes bytes)"
read_direct "$MNT" shared | cmp - "$shared" || fail "this mount reads other bytes (shared)"

# ---- 4. interrupted and resumed ------------------------------------------------
"$TESSERA_TOOL" rebalance apply "$APP/paced" --policy frequent --meta "$meta" --max-mbps 1 \
    --concurrency 2 >"$T/paced.out" 2>"$T/paced.err" &
apply_pid=$!
IT_PIDS+=("$apply_pid")
wait_for 30 "the paced apply to move a tile" grep -q "^tiles [1-9]" "$T/paced.err"
# One apply at a time per cluster: a second one is refused at once, naming
# the first; status (text and JSON) shows the first running, with progress.
rc=0
tool rebalance apply "$APP/paced" --policy frequent >"$T/second.out" 2>"$T/second.err" || rc=$?
[ "$rc" = 1 ] || fail "a second apply exited $rc while one ran: $(cat "$T/second.out" "$T/second.err")"
grep -q "another rebalance runs on this cluster: tessera rebalance apply by .* pid $apply_pid" \
    "$T/second.err" || fail "the refusal does not name the running apply: $(cat "$T/second.err")"
grep -q "Wait for it to end" "$T/second.err" || fail "the refusal says nothing of what to do"
[ ! -s "$T/second.out" ] || fail "the refused apply did something: $(cat "$T/second.out")"
rc=0
tool rebalance abort >"$T/abort-busy.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "pid $apply_pid" "$T/abort-busy.out" ||
    fail "abort ran beside a running apply (exit $rc): $(cat "$T/abort-busy.out")"
grep -q "^running: tessera rebalance apply by .* pid $apply_pid, since .* of 12 steps done" \
    <<<"$(tool rebalance status)" || fail "status does not show the running apply: $(tool rebalance status)"
tool rebalance status --json >"$T/status-running.json" || fail "status --json failed"
python3 -c '
import json, sys
apply = json.load(open(sys.argv[1]))["apply"]
assert apply is not None and ("pid " + sys.argv[2]) in apply["holder"], apply
assert apply["steps_total"] == 12 and apply["since_sec"] > 0 and apply["lease_left_sec"] > 0, apply
' "$T/status-running.json" "$apply_pid" || fail "status --json: $(cat "$T/status-running.json")"
kill -INT "$apply_pid"
rc=0
wait "$apply_pid" || rc=$?
log "interrupted apply: exit $rc; $(grep interrupted "$T/paced.err" || true)"
[ "$rc" = 130 ] || fail "an interrupted apply exited $rc, not 130: $(cat "$T/paced.out" "$T/paced.err")"
grep -q "run \`tessera rebalance apply\` again" "$T/paced.err" || fail "no word on what is left"
grep -q "the relocation journal is empty" <<<"$(tool rebalance status)" ||
    fail "the interrupted apply left steps in the journal: $(tool rebalance status)"
done_before=$(tool layout show "$APP/paced" --json | count_of "\"node\": $far_node,")
((done_before >= 1 && done_before < 12)) || fail "$done_before of 12 tiles moved before the stop"
grep -q "no rebalance apply or abort is running" <<<"$(tool rebalance status)" ||
    fail "the stopped apply did not release its lock: $(tool rebalance status)"
# An apply killed with -9 cannot release its lock: the next one is refused
# until the lease lapses (15 s after its last renewal), then proceeds and
# resumes what the killed one left in the journal.
"$TESSERA_TOOL" rebalance apply "$APP/paced" --policy frequent --meta "$meta" --max-mbps 1 \
    --concurrency 2 >"$T/killed.out" 2>"$T/killed.err" &
killed_pid=$!
IT_PIDS+=("$killed_pid")
wait_for 30 "the apply to be killed to move a tile" grep -q "^tiles [1-9]" "$T/killed.err"
kill -KILL "$killed_pid"
wait "$killed_pid" 2>/dev/null || true
killed_at=$(now_ms)
rc=0
tool rebalance apply "$APP/paced" --policy frequent >"$T/after-kill.out" 2>"$T/after-kill.err" || rc=$?
[ "$rc" = 1 ] && grep -q "pid $killed_pid" "$T/after-kill.err" ||
    fail "an apply right after a kill -9 was not refused (exit $rc): $(cat "$T/after-kill.err")"
lock_lapsed() { grep -q "no rebalance apply or abort is running" <<<"$(tool rebalance status)"; }
wait_for 25 "the killed apply's lock to lapse" lock_lapsed
lapse_ms=$(($(now_ms) - killed_at))
log "the killed apply's lock lapsed after $lapse_ms ms"
((lapse_ms >= 9000)) || fail "the killed apply's lock lapsed after only $lapse_ms ms"
tool rebalance apply "$APP/paced" --policy frequent >"$T/paced2.txt" 2>&1 ||
    fail "the second apply failed: $(cat "$T/paced2.txt")"
[ "$(tool layout show "$APP/paced" --json | count_of "\"node\": $far_node,")" = 12 ] ||
    fail "after the second apply, not every tile of paced is on $far"
read_direct "$MNT" paced | cmp - "$paced" || fail "paced changed"
grep -q "aborted 0 journal entries" <<<"$(tool rebalance abort)" || fail "abort of an empty journal"

# ---- 5. online: a process rewrites the tiles while they move --------------------
if [ -n "${CLIENT_HELPER:-}" ] && [ -x "$CLIENT_HELPER" ]; then
    tiles=8
    # Outside the profiled directory: only the far mount's reads below count,
    # so the plan moves tiles (none is written by the profile).
    mkdir "$MNT/online"
    setfattr -n user.tessera.layout -v copies=1 "$MNT/online" || fail "setting copies=1 on online failed"
    head -c $((tiles * MIB)) /dev/urandom >"$MNT/online/busy"
    sync "$MNT/online/busy"
    tool profile start "$MNT/online/busy" >/dev/null
    dd if="$MNT2/online/busy" bs=1M iflag=direct status=none of=/dev/null
    busy_counted() {
        [ "$(tool profile show "$MNT/online/busy" --json |
            count_of "\"machine\": \"$far\", \"reads\": [1-9]")" = "$tiles" ]
    }
    wait_for 10 "the far mount's counts of busy" busy_counted
    tool profile stop "$MNT/online/busy" >/dev/null
    "$CLIENT_HELPER" rewrite "$MNT/online/busy" "$tiles" 4 >"$T/rewrite.out" 2>"$T/rewrite.err" &
    writer=$!
    IT_PIDS+=("$writer")
    rc=0
    tool rebalance apply "$MNT/online/busy" --policy frequent --max-mbps 4 --concurrency 2 \
        >"$T/busy.out" 2>"$T/busy.err" || rc=$?
    wait "$writer" || fail "the writer failed while its tiles moved: $(cat "$T/rewrite.err")"
    log "online apply (exit $rc): $(grep '^apply:' "$T/busy.out"); $(cat "$T/rewrite.out") tile writes"
    [ "$rc" = 0 ] || fail "apply under a writer exited $rc: $(cat "$T/busy.out" "$T/busy.err")"
    steps=$(cat "$T/rewrite.out")
    "$CLIENT_HELPER" verify "$MNT/online/busy" "$tiles" "$steps" 2>>"$T/helper.log" ||
        fail "after the moves, busy is not what the writer wrote (see helper.log)"
    "$CLIENT_HELPER" verify "$MNT2/online/busy" "$tiles" "$steps" 2>>"$T/helper.log" ||
        fail "after the moves, the far mount reads other bytes of busy (see helper.log)"
    # Skipped steps are done by the next apply, once the writer is gone.
    tool rebalance apply "$MNT/online/busy" --policy frequent >"$T/busy2.out" 2>&1 ||
        fail "apply after the writer failed: $(cat "$T/busy2.out")"
    [ "$(tool layout show "$MNT/online/busy" --json | count_of "\"node\": $far_node,")" = "$tiles" ] ||
        fail "after the second apply, not every tile of busy is on $far"
    "$CLIENT_HELPER" verify "$MNT/online/busy" "$tiles" "$steps" 2>>"$T/helper.log" ||
        fail "after the second apply, busy is not what the writer wrote (see helper.log)"
fi

# ---- 6. copies of an open file ------------------------------------------------
mkdir "$MNT/held"
setfattr -n user.tessera.layout -v copies=1 "$MNT/held" || fail "setting copies=1 on held failed"
head -c $((2 * MIB)) /dev/urandom >"$MNT/held/file"
sync "$MNT/held/file"
held=$SHM/held
cp "$MNT/held/file" "$held"
tool profile start "$MNT/held/file" >/dev/null || fail "profile start (held) failed"
# Read by both machines: a copy for the far one. A mount learns that a file is
# profiled at its next open, so each reads again until it is counted.
both_read_held() {
    [ "$(tool profile show "$MNT/held/file" --json | count_of '"machine": "[^"]*", "reads": [1-9]')" = 4 ] &&
        return 0
    dd if="$MNT/held/file" bs=1M iflag=direct status=none | cmp - "$held" || fail "held: other bytes (mount 1)"
    dd if="$MNT2/held/file" bs=1M iflag=direct status=none | cmp - "$held" || fail "held: other bytes (mount 2)"
    sleep 0.5
    return 1
}
wait_for 20 "both mounts' counts of held" both_read_held
tool profile stop "$MNT/held/file" >/dev/null
grep -q "2 steps: 2 copies" <<<"$(tool rebalance plan "$MNT/held/file" --policy frequent)" ||
    fail "held should get 2 copies: $(tool rebalance plan "$MNT/held/file" --policy frequent)"
held_ino=$(stat -c %i "$MNT/held/file")
# A writer that keeps the file open across the copies: it writes tile 0 first (so
# its mount caches the tiles' replica sets as they are now), waits for the copies,
# writes into tiles 0 and 1 again through the same descriptor, fsyncs, and closes.
python3 - "$MNT/held/file" "$T/held.go" "$T/held.ready" <<'PY' >"$T/held.writer" 2>&1 &
import os, sys, time
path, go, ready = sys.argv[1:4]
fd = os.open(path, os.O_RDWR)
os.pwrite(fd, b"before-the-copies", 100)
os.fsync(fd)
open(ready, "w").close()
deadline = time.time() + 60
while not os.path.exists(go):
    if time.time() > deadline:
        sys.exit("no go from the test")
    time.sleep(0.05)
os.pwrite(fd, b"after-the-copies-tile-0", 5000)
os.pwrite(fd, b"after-the-copies-tile-1", (1 << 20) + 7000)
os.fsync(fd)
os.close(fd)
PY
writer=$!
wait_for 10 "the writer to open held" test -e "$T/held.ready"
printf 'before-the-copies' | dd of="$held" bs=1 seek=100 conv=notrunc status=none
rc=0
tool rebalance apply "$MNT/held/file" --policy frequent >"$T/held.out" 2>"$T/held.err" || rc=$?
log "apply while held open for writing (exit $rc): $(grep '^apply:' "$T/held.out")"
[ "$rc" = 0 ] || fail "apply with copies of an open file exited $rc: $(cat "$T/held.out" "$T/held.err")"
grep -q "apply: 2 steps: 2 done, 0 skipped (file changed), 0 failed, 0 not run" "$T/held.out" ||
    fail "the copies of an open file were not made: $(cat "$T/held.out" "$T/held.err")"
[ "$(record_of "$held_ino" 0 3)" = 1 ] && [ "$(record_of "$held_ino" 1 3)" = 1 ] ||
    fail "held open, held does not have its copies"
grep -q "the relocation journal is empty" <<<"$(tool rebalance status)" ||
    fail "the copies left steps in the journal: $(tool rebalance status)"
touch "$T/held.go"
wait "$writer" || fail "the writer of held failed: $(cat "$T/held.writer")"
printf 'after-the-copies-tile-0' | dd of="$held" bs=1 seek=5000 conv=notrunc status=none
printf 'after-the-copies-tile-1' | dd of="$held" bs=1 seek=$((MIB + 7000)) conv=notrunc status=none
# Both holders got the writes made after the copies: the far mount reads its copies.
dd if="$MNT/held/file" bs=1M iflag=direct status=none | cmp - "$held" ||
    fail "held: other bytes than its writer wrote (mount 1)"
dd if="$MNT2/held/file" bs=1M iflag=direct status=none | cmp - "$held" ||
    fail "held: the far mount's copies miss the writes made after the copies"
# And on the disks: each tile's two files (its version on both holders) hold those bytes.
for tile in 0 1; do
    version=$(record_of "$held_ino" "$tile" 2)
    files=$(find "$STATE" "$T/far/data" -path "*/tiles/*" -name "$held_ino.$tile.$version")
    [ "$(wc -l <<<"$files")" = 2 ] || fail "held tile $tile: not 2 files of version $version: $files"
    for file in $files; do
        cmp -s "$file" <(dd if="$held" bs=1M skip="$tile" count=1 status=none) ||
            fail "held tile $tile: $file misses the writes made after the copies"
    done
done

# ---- 7. a step committed but not finished ----------------------------------------
moved_ino=$(stat -c %i "$APP/moved")
retired_bytes() { stat -c %s "$T/far/data/fences.retired"; }
[ "$(record_of "$moved_ino" 0 1)" = "$far_node" ] || fail "tile 0 of moved is not on $far"
before=$(retired_bytes)
"$CLIENT_HELPER" move "$meta" "$moved_ino" 0 1 move unfinished >>"$T/helper.log" 2>&1 ||
    fail "client_helper could not commit a move of tile 0 of moved (see helper.log)"
[ "$(record_of "$moved_ino" 0 1)" = 1 ] || fail "the unfinished move did not switch the map"
tool rebalance status >"$T/status.txt" || fail "rebalance status failed"
grep -q "committed" "$T/status.txt" || fail "status does not show the committed entry: $(cat "$T/status.txt")"
grep -q '"state": "committed"' <<<"$(tool rebalance status --json)" || fail "status --json: no state"
out=$(tool rebalance abort) || fail "abort of a committed entry failed: $out"
log "$out"
[[ $out == *"aborted 0 journal entries; finished 1 committed entry"* ]] ||
    fail "abort did not finish the committed entry: $out"
grep -q "the relocation journal is empty" <<<"$(tool rebalance status)" || fail "abort left the entry"
[ "$(retired_bytes)" -gt "$before" ] || fail "abort did not retire the old file on $far"
[ "$(record_of "$moved_ino" 0 1)" = 1 ] || fail "finishing undid the move"
# The far mount cached tile 0 on its own datanode: the retired file sends it to meta.
[ "$(read_direct "$MNT2" moved | sha256sum)" = "$moved_sum" ] || fail "moved changed (far mount)"
[ "$(read_direct "$MNT" moved | sha256sum)" = "$moved_sum" ] || fail "moved changed (mount 1)"
# Once more, left for apply: it resumes the entry before it plans.
"$CLIENT_HELPER" move "$meta" "$moved_ino" 0 "$far_node" move unfinished >>"$T/helper.log" 2>&1 ||
    fail "client_helper could not commit a move of tile 0 of moved back (see helper.log)"
tool rebalance apply "$APP/moved" --policy frequent >"$T/resume.txt" 2>&1 ||
    fail "apply with a committed entry failed: $(cat "$T/resume.txt")"
grep -q "resuming 1 step an earlier apply left in the journal (1 committed" "$T/resume.txt" ||
    fail "apply did not resume the committed entry: $(cat "$T/resume.txt")"
grep -q "journal: 1 step: 1 done" "$T/resume.txt" || fail "the resumed entry did not finish: $(cat "$T/resume.txt")"
grep -q "the relocation journal is empty" <<<"$(tool rebalance status)" || fail "apply left the entry"
[ "$(record_of "$moved_ino" 0 1)" = "$far_node" ] || fail "tile 0 of moved is not back on $far"
[ "$(read_direct "$MNT" moved | sha256sum)" = "$moved_sum" ] || fail "moved changed (mount 1)"

# ---- 8. usage ------------------------------------------------------------------
expect_exit() {
    local want=$1 rc=0
    shift
    "$TESSERA_TOOL" "$@" >/dev/null 2>"$T/usage.err" || rc=$?
    [ "$rc" = "$want" ] || fail "tessera $* exited $rc, not $want: $(cat "$T/usage.err")"
}
expect_exit 0 rebalance --help
expect_exit 0 profile --help
expect_exit 2 rebalance plan "$APP" --meta "$meta"
expect_exit 2 rebalance plan "$APP" --policy nearest --meta "$meta"
expect_exit 2 rebalance status "$APP" --meta "$meta"
expect_exit 2 rebalance plan "$APP" --policy frequent --max-mbps 5 --meta "$meta"
expect_exit 2 rebalance apply "$APP" --policy frequent --concurrency 0 --meta "$meta"
expect_exit 2 profile start --meta "$meta"
expect_exit 2 profile start "$APP" --json --meta "$meta"
expect_exit 1 profile show "$T" --meta "$meta"
grep -q "not on a Tessera mount" "$T/usage.err" || fail "no word that the path is not in a mount"

# ---- 9. replica sets: a rebalance never lowers a tile below copies=2 -------------
tiles=8
replicated_sum=$(sha256sum <"$MNT/replicated/file")
layout_json() { tool layout show "$MNT/replicated/file" --json; }
# tiles_with_two_holders: the tiles of the file that list exactly 2 holders.
tiles_with_two_holders() {
    layout_json | grep '"tile": ' | awk '{ if (gsub(/"datanode": /, "") == 2) n++ } END { print n + 0 }'
}
[ "$(tiles_with_two_holders)" = "$tiles" ] ||
    fail "a copies=2 file's tiles do not have 2 holders each: $(layout_json)"
tool profile start "$MNT/replicated/file" >/dev/null || fail "profile start (replicated) failed"
dd if="$MNT2/replicated/file" bs=1M iflag=direct status=none of=/dev/null
replicated_counted() {
    [ "$(tool profile show "$MNT/replicated/file" --json |
        count_of "\"machine\": \"$far\", \"reads\": [1-9]")" = "$tiles" ]
}
wait_for 10 "the far mount's counts of replicated" replicated_counted
tool profile stop "$MNT/replicated/file" >/dev/null
grep -q "$tiles steps: 0 copies, $tiles moves, 0 drops" <<<"$(tool rebalance plan "$MNT/replicated/file" --policy frequent)" ||
    fail "replicated: expected one replica of each tile moved to $far: $(tool rebalance plan "$MNT/replicated/file" --policy frequent)"
# The nodes up before the apply (all five); a holder elsewhere does not count.
up_nodes=" $("$TESSERA_TOOL" status --meta "$meta" --json | tr '{' '\n' | grep '"state": "up"' |
    sed -n 's/.*"id": \([0-9]*\),.*/\1/p' | tr '\n' ' ')"
[ "$(wc -w <<<"$up_nodes")" = 5 ] || fail "expected 5 datanodes up before the apply, got:$up_nodes"
# watch_replicas: until $T/watch.stop exists, every 50 ms, each tile of the
# file must list 2 or more holders on up nodes; writes the polls it made to
# $T/watch.polls and exits 1 at the first tile below that (its line in
# $T/watch.bad).
watch_replicas() {
    local polls=0 json line holder good
    while [ ! -e "$T/watch.stop" ]; do
        json=$(layout_json) || { echo "layout show failed" >"$T/watch.bad"; return 1; }
        [ "$(grep -c '"tile": ' <<<"$json")" = "$tiles" ] ||
            { echo "not $tiles tiles: $json" >"$T/watch.bad"; return 1; }
        while read -r line; do
            good=0
            for holder in $(grep -o '"datanode": [0-9]*' <<<"$line" | awk '{ print $2 }'); do
                [[ $up_nodes == *" $holder "* ]] && good=$((good + 1))
            done
            ((good >= 2)) || { echo "$line" >"$T/watch.bad"; return 1; }
        done < <(grep '"tile": ' <<<"$json")
        polls=$((polls + 1))
        echo "$polls" >"$T/watch.polls"
        sleep 0.05
    done
}
watch_replicas &
watcher=$!
IT_PIDS+=("$watcher")
rc=0
tool rebalance apply "$MNT/replicated/file" --policy frequent --max-mbps 2 \
    >"$T/replicated.out" 2>"$T/replicated.err" || rc=$?
touch "$T/watch.stop"
watch_rc=0
wait "$watcher" || watch_rc=$?
[ "$watch_rc" = 0 ] || fail "during the apply a tile had fewer than 2 holders on up nodes: $(cat "$T/watch.bad")"
[ "$rc" = 0 ] || fail "apply of replicated exited $rc: $(cat "$T/replicated.out" "$T/replicated.err")"
grep -q "apply: $tiles steps: $tiles done" "$T/replicated.out" ||
    fail "apply did not move the $tiles replicas: $(cat "$T/replicated.out" "$T/replicated.err")"
polls=$(cat "$T/watch.polls" 2>/dev/null || echo 0)
log "replicated: $tiles replicas moved to $far; the watcher saw 2 holders on up nodes in all $polls polls"
# 8 MiB paced at 2 MB/s: about 4 s, room for a poll every few hundred ms
# even when a loaded machine (ASan, CI) slows each `layout show`.
((polls >= 5)) || fail "the watcher polled only $polls times during the apply"
[ "$(layout_json | count_of "{\"datanode\": $far_node, ")" = "$tiles" ] ||
    fail "not every tile of replicated has a replica on $far: $(layout_json)"
[ "$(tiles_with_two_holders)" = "$tiles" ] ||
    fail "after the apply, replicated's tiles do not have 2 holders each: $(layout_json)"
for mount in "$MNT" "$MNT2"; do
    [ "$(dd if="$mount/replicated/file" bs=1M iflag=direct status=none | sha256sum)" = "$replicated_sum" ] ||
        fail "replicated changed (read through $mount)"
done

assert_daemons_alive
kill -0 "$mount2_pid" || fail "the second mount died"
fusermount3 -u "$MNT2" || fail "unmounting $MNT2 failed"
wait "$mount2_pid" || fail "the second mount exited with an error after unmount"
cluster_down
