#!/usr/bin/env bash
# tessera stats: meta lists every daemon's metrics endpoint (METRICS_LIST:
# meta's own, the datanode's from its heartbeats, the mount's from its
# session renewals); `tessera stats --json` scrapes them every interval and
# its per-second rates, summed over the samples, are the I/O done: 16 MiB
# written through the mount show as 16 MiB written by the mount and by the
# datanode (copies 1), reading it back (cache dropped) as 16 MiB read by
# both; the write and read operation rates and meta's request rate are
# nonzero. Text output to a pipe has no terminal escapes; endpoints given
# as HOST:PORT are scraped without meta, one that does not answer is shown
# as down, not fatal; bad options are usage errors.
source "$(dirname "$0")/lib.sh"

META=tcp://127.0.0.1:$((BASE + 5))
META_METRICS=$((BASE + 7))
NODE_METRICS=$((BASE + 8))
MOUNT_METRICS=$((BASE + 9))
SIZE=$((16 << 20))
mkdir -p "$T/m/meta" "$T/m/node1" "$MNT"

start_daemon tessera-meta "$T/m/meta.log" \
    "$TESSERA_META" --listen "$META" --data "$T/m/meta" --copies 1 --metrics "$META_METRICS" ||
    fail "a port of meta was taken"
start_daemon tessera-datanode "$T/m/node1.log" \
    "$TESSERA_DATANODE" --listen "tcp://127.0.0.1:$((BASE + 6))" --meta "$META" \
    --data "$T/m/node1" --metrics "0.0.0.0:$NODE_METRICS" || fail "a port of the datanode was taken"
IT_MOUNTS+=("$MNT")
"$TESSERA_MOUNT" --meta "$META" --io-timeout-ms "$IO_TIMEOUT_MS" --metrics "$MOUNT_METRICS" \
    -f "$MNT" >"$T/m/mount.log" 2>&1 &
IT_PIDS+=("$!")
wait_for 30 "the mount" mountpoint -q "$MNT"

stats() { "$TESSERA_TOOL" stats "$@" 2>>"$T/stats.err"; }

# every daemon listed: meta's address, the datanode's (0.0.0.0 became its
# advertised host), the mount's
all_listed() {
    stats --meta "$META" --interval 0.2 --count 1 --json >"$T/list.json" || return 1
    python3 - "$T/list.json" "$META_METRICS" "$NODE_METRICS" "$MOUNT_METRICS" <<'PY'
import json, sys
sample = json.loads(open(sys.argv[1]).readline())
seen = {(d["kind"], d["address"]) for d in sample["daemons"] if d["up"]}
want = {("meta", f"127.0.0.1:{sys.argv[2]}"), ("datanode", f"127.0.0.1:{sys.argv[3]}"),
        ("mount", f"127.0.0.1:{sys.argv[4]}")}
sys.exit(0 if want <= seen else 1)
PY
}
wait_for 20 "meta to list the three metrics endpoints (last: $(cat "$T/list.json" 2>/dev/null))" all_listed

# lines_at_least FILE N: FILE has N lines or more.
lines_at_least() { [ "$(wc -l <"$1")" -ge "$2" ]; }

# measure WHAT COMMAND...: runs COMMAND while `tessera stats --json` samples
# every 0.5 s, from a baseline taken before it to one taken after it, into
# $T/WHAT.json.
measure() {
    local what=$1 stats_pid
    shift
    stats --meta "$META" --interval 0.5 --count 40 --json >"$T/$what.json" &
    stats_pid=$!
    IT_PIDS+=("$stats_pid")
    wait_for 10 "the first sample of tessera stats" test -s "$T/$what.json"
    "$@" || fail "$what: $* failed"
    # two more samples: the last one starts after the command ended
    local lines
    lines=$(wc -l <"$T/$what.json")
    wait_for 10 "two samples after $what" lines_at_least "$T/$what.json" $((lines + 2))
    it_stop_pid "$stats_pid"
}

# total FILE KIND FIELD: the sum over the samples of FIELD * seconds for the daemon of KIND.
total() {
    python3 - "$@" <<'PY'
import json, sys
path, kind, field = sys.argv[1:4]
total = 0.0
for line in open(path):
    if not line.strip():
        continue
    for d in json.loads(line)["daemons"]:
        if d["kind"] == kind and d.get(field) is not None and d["seconds"] is not None:
            total += d[field] * d["seconds"]
print(f"{total:.0f}")
PY
}
# within VALUE LOW HIGH WHAT
within() {
    python3 -c "import sys; v, lo, hi = map(float, sys.argv[1:4]); sys.exit(not lo <= v <= hi)" \
        "$1" "$2" "$3" || fail "$4: $1, not within $2..$3"
}

head -c "$SIZE" /dev/urandom >"$SHM/input"
measure write dd if="$SHM/input" of="$MNT/file" bs=1M conv=fsync status=none
drop_file_cache "$MNT/file"
measure read cmp "$SHM/input" "$MNT/file"

within "$(total "$T/write.json" mount write_bytes_per_second)" "$SIZE" $((SIZE + SIZE / 50)) \
    "the mount's bytes written per second x seconds"
within "$(total "$T/write.json" datanode write_bytes_per_second)" "$SIZE" $((SIZE + SIZE / 50)) \
    "the datanode's bytes written per second x seconds"
within "$(total "$T/read.json" mount read_bytes_per_second)" "$SIZE" $((SIZE + SIZE / 10)) \
    "the mount's bytes read per second x seconds"
within "$(total "$T/read.json" datanode read_bytes_per_second)" "$SIZE" $((SIZE + SIZE / 10)) \
    "the datanode's bytes read per second x seconds"
within "$(total "$T/write.json" mount write_ops_per_second)" 16 100000 "the mount's writes"
within "$(total "$T/write.json" datanode write_ops_per_second)" 16 100000 "the datanode's TILE_WRITEs"
within "$(total "$T/read.json" mount read_ops_per_second)" 1 100000 "the mount's reads"
within "$(total "$T/write.json" meta ops_per_second)" 2 1000000 "meta's requests"
python3 - "$T/write.json" <<'PY' || fail "a sample lacks a figure: $(tail -n 1 "$T/write.json")"
import json, sys
for line in open(sys.argv[1]):
    for d in json.loads(line)["daemons"]:
        assert d["up"] and d["error"] is None, d
        assert d["latency_ms"] is None or d["latency_ms"] >= 0, d
        if d["kind"] == "meta":
            assert d["datanodes_up"] == 1 and d["unavailable_tiles"] in (0, None), d
        if d["kind"] == "datanode":
            assert d["tiles"] is not None and d["free_bytes"] > 0, d
PY
log "stats: 16 MiB written and read show as 16 MiB at the mount and the datanode"

# text to a pipe: a heading and a row per daemon per sample, no escapes
stats --meta "$META" --interval 0.2 --count 2 >"$T/text.out" || fail "tessera stats (text) failed: $(cat "$T/stats.err")"
grep -q $'\033' "$T/text.out" && fail "text to a pipe has terminal escapes"
[ "$(grep -c '^KIND' "$T/text.out")" = 2 ] || fail "not two samples: $(cat "$T/text.out")"
for kind in meta datanode mount; do
    [ "$(grep -c "^$kind " "$T/text.out")" = 2 ] || fail "no $kind row per sample: $(cat "$T/text.out")"
done

# endpoints given: the kind comes from the figures; a silent one is down
free_port=$((BASE + 3))
stats --interval 0.2 --count 1 --json "127.0.0.1:$NODE_METRICS" "127.0.0.1:$free_port" >"$T/given.json" ||
    fail "tessera stats HOST:PORT failed: $(cat "$T/stats.err")"
python3 - "$T/given.json" <<'PY' || fail "endpoints given: $(cat "$T/given.json")"
import json, sys
daemons = json.loads(open(sys.argv[1]).readline())["daemons"]
assert daemons[0]["kind"] == "datanode" and daemons[0]["up"], daemons
assert daemons[1]["kind"] == "unknown" and not daemons[1]["up"] and daemons[1]["error"], daemons
PY

# usage errors
for bad in "--interval 0" "--interval x" "--count 0" "nothost:1" "--bogus"; do
    rc=0
    # shellcheck disable=SC2086
    "$TESSERA_TOOL" stats $bad >/dev/null 2>"$T/usage.err" || rc=$?
    [ "$rc" = 2 ] || fail "tessera stats $bad: exit $rc, not 2 (a usage error)"
    grep -q "tessera stats" "$T/usage.err" || fail "tessera stats $bad: $(cat "$T/usage.err")"
done
log "stats: text output, endpoints given and usage errors"
