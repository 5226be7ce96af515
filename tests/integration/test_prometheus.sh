#!/usr/bin/env bash
# Prometheus endpoints (--metrics): meta, a datanode and a mount each
# serve /metrics on the loopback when given only a port. Scraped before
# and after 3 MB are written, synced and read back (cache dropped): meta's
# request counters and its view of the datanode (tiles, used bytes) move,
# the datanode's written and read bytes, tiles and stored bytes move, the
# mount's write and read bytes and its write and create requests move.
# Anything but GET /metrics is refused; a bad --metrics is a usage error.
source "$(dirname "$0")/lib.sh"

META=tcp://127.0.0.1:$((BASE + 5))
META_METRICS=$((BASE + 7))
NODE_METRICS=$((BASE + 8))
MOUNT_METRICS=$((BASE + 9))
mkdir -p "$T/m/meta" "$T/m/node1" "$MNT"

# scrape PORT NAME: the endpoint's samples, "name{labels} value" per line, in $T/NAME.prom.
scrape() {
    python3 - "$1" >"$T/$2.prom" <<'PY' || fail "cannot scrape port $1 (see $T/$2.prom)"
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10) as reply:
    assert reply.status == 200, reply.status
    assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4"), reply.headers
    for line in reply.read().decode().splitlines():
        if line and not line.startswith("#"):
            print(line)
PY
    cp "$T/$2.prom" "$T/$2.$(date +%s%N).prom"
}
# value NAME SAMPLE: the value of SAMPLE (name with labels, exactly) in $T/NAME.prom, or fail.
value() {
    local v
    v=$(awk -v s="$2" '$1 == s { print $2 }' "$T/$1.prom")
    [ -n "$v" ] || fail "$1's metrics have no $2: $(head -c 2000 "$T/$1.prom")"
    echo "$v"
}
# sum NAME PREFIX: the sum of every sample of NAME.prom whose name starts with PREFIX{.
sum() { awk -v p="$2{" 'index($1, p) == 1 { s += $2 } END { printf "%.0f\n", s }' "$T/$1.prom"; }
# grew BEFORE AFTER BY WHAT: AFTER >= BEFORE + BY, or fail naming WHAT.
grew() {
    python3 -c "import sys; sys.exit(float(sys.argv[2]) < float(sys.argv[1]) + float(sys.argv[3]))" \
        "$1" "$2" "$3" || fail "$4 went from $1 to $2, not up by $3 or more"
}

"$TESSERA_META" --metrics nonsense --data "$T/m/meta" >"$T/bad.log" 2>&1 && fail "--metrics nonsense was taken"
grep -q "metrics 'nonsense'" "$T/bad.log" || fail "--metrics nonsense: $(cat "$T/bad.log")"

start_daemon tessera-meta "$T/m/meta.log" \
    "$TESSERA_META" --listen "$META" --data "$T/m/meta" --metrics "$META_METRICS" ||
    fail "a port of meta was taken"
start_daemon tessera-datanode "$T/m/node1.log" \
    "$TESSERA_DATANODE" --listen "tcp://127.0.0.1:$((BASE + 6))" --meta "$META" \
    --data "$T/m/node1" --metrics "$NODE_METRICS" || fail "a port of the datanode was taken"
IT_MOUNTS+=("$MNT")
"$TESSERA_MOUNT" --meta "$META" --io-timeout-ms "$IO_TIMEOUT_MS" --metrics "$MOUNT_METRICS" \
    -f "$MNT" >"$T/m/mount.log" 2>&1 &
IT_PIDS+=("$!")
wait_for 30 "the mount" mountpoint -q "$MNT"
wait_for 10 "the mount's metrics endpoint" grep -q "metrics: http" "$T/m/mount.log"

for port in "$META_METRICS" "$NODE_METRICS" "$MOUNT_METRICS"; do
    ss -ltnH "sport = :$port" | grep -q "127.0.0.1:$port" ||
        fail "the endpoint on port $port does not listen on the loopback only: $(ss -ltnH "sport = :$port")"
done
code=$(python3 -c "
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen('http://127.0.0.1:$NODE_METRICS/nothing', timeout=5)
    print(200)
except urllib.error.HTTPError as e:
    print(e.code)")
[ "$code" = 404 ] || fail "GET /nothing answered $code, not 404"

scrape "$META_METRICS" meta
scrape "$NODE_METRICS" node
scrape "$MOUNT_METRICS" mount
meta_requests=$(sum meta tessera_meta_requests_total)
node_written=$(value node tessera_datanode_written_bytes_total)
node_read=$(value node tessera_datanode_read_bytes_total)
node_tiles=$(value node tessera_datanode_tiles)
node_stored=$(value node tessera_datanode_stored_bytes)
node_writes=$(value node 'tessera_datanode_requests_total{op="TILE_WRITE"}')
mount_written=$(value mount tessera_mount_written_bytes_total)
mount_read=$(value mount tessera_mount_read_bytes_total)
mount_writes=$(value mount 'tessera_mount_requests_total{op="write"}')
mount_creates=$(value mount 'tessera_mount_requests_total{op="create"}')
# Meta renders its cluster figures once a tick (1 s): the datanode may be newer than them.
meta_counts_node() {
    scrape "$META_METRICS" meta
    [ "$(value meta 'tessera_meta_datanodes{state="up"}')" = 1 ]
}
wait_for 10 "meta's metrics to count 1 datanode up" meta_counts_node
meta_requests=$(sum meta tessera_meta_requests_total)
value node tessera_datanode_free_bytes >/dev/null

head -c 3000000 /dev/urandom >"$SHM/input"
dd if="$SHM/input" of="$MNT/file" bs=1M conv=fsync status=none || fail "cannot write the file"
drop_file_cache "$MNT/file"
cmp "$SHM/input" "$MNT/file" || fail "the file read back differs"

scrape "$MOUNT_METRICS" mount
grew "$mount_written" "$(value mount tessera_mount_written_bytes_total)" 3000000 "the mount's written bytes"
grew "$mount_read" "$(value mount tessera_mount_read_bytes_total)" 3000000 "the mount's read bytes"
grew "$mount_writes" "$(value mount 'tessera_mount_requests_total{op="write"}')" 1 "the mount's write requests"
grew "$mount_creates" "$(value mount 'tessera_mount_requests_total{op="create"}')" 1 "the mount's creates"
value mount 'tessera_mount_request_seconds_total{op="write"}' >/dev/null

scrape "$NODE_METRICS" node
grew "$node_written" "$(value node tessera_datanode_written_bytes_total)" 3000000 "the datanode's written bytes"
grew "$node_read" "$(value node tessera_datanode_read_bytes_total)" 3000000 "the datanode's read bytes"
grew "$node_tiles" "$(value node tessera_datanode_tiles)" 1 "the datanode's tiles"
grew "$node_stored" "$(value node tessera_datanode_stored_bytes)" 3000000 "the datanode's stored bytes"
grew "$node_writes" "$(value node 'tessera_datanode_requests_total{op="TILE_WRITE"}')" 1 "the datanode's TILE_WRITE requests"

# Meta renders its cluster figures once a second, and learns the node's tiles by heartbeat.
meta_tiles_seen() {
    scrape "$META_METRICS" meta
    [ "$(value meta tessera_meta_tiles)" -ge 1 ] &&
        awk '$1 ~ /^tessera_meta_datanode_used_bytes\{/ && $2 >= 3000000 { found = 1 } END { exit !found }' "$T/meta.prom"
}
wait_for 15 "meta's metrics to show the tiles and the datanode's used bytes" meta_tiles_seen
grew "$meta_requests" "$(sum meta tessera_meta_requests_total)" 3 "meta's requests"
log "meta, datanode and mount metrics moved with 3 MB written and read"

# The example Grafana dashboard asks only for figures the daemons export (the
# health figures come with meta's first health pass, which may not have run yet).
python3 - "$IT_DIR/../../packaging/grafana/tessera-dashboard.json" "$T"/meta.prom "$T"/node.prom \
    "$T"/mount.prom <<'PY' || fail "the Grafana dashboard names metrics no daemon exports"
import json, re, sys
dashboard = json.load(open(sys.argv[1]))
exported = set()
for path in sys.argv[2:]:
    exported |= {re.split(r"[{ ]", line, 1)[0] for line in open(path) if line.strip()}
asked = set()
for panel in dashboard["panels"]:
    for target in panel.get("targets", []):
        asked |= set(re.findall(r"tessera_[a-z_]+", target["expr"]))
missing = sorted(n for n in asked - exported if not n.startswith("tessera_meta_health_"))
if missing:
    sys.exit(f"not exported: {missing}")
print(f"# {len(asked)} metrics in the dashboard, all exported")
PY
