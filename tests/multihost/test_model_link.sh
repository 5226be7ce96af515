#!/usr/bin/env bash
# tessera model (issue 32) on 4 hosts with capped links: `model calibrate
# --machine host1` from host 1 measures host 1's link by reading the
# probe tiles the other hosts hold (link bytes counted on host 1's eth0),
# finds it within the cap (tbf gives TCP about 96 % of it), stores it,
# and `model show` lists it as calibrated for host 1 and as the one
# calibrated for hosts 2-4 (text and JSON), with this machine's CPU per
# byte read from another machine's datanode above a local byte's. Then `model predict
# --machine host1`: a copies=1 read of a round-robin file is bound by
# host 1's link (3/4 of the tiles cross it, so it takes at least that at
# the cap), while a copies=2 read is not (meta gives the writer's machine
# a copy of every tile, and the mount reads the nearest), and a copies=2
# write crosses the link once per tile, not once per copy; a copies=1
# write is bound by the link too, and with --what-if net=inf it is
# predicted far faster (calibrate charged the link's time to the link,
# not to the mount's CPU). Skipped (77)
# where network namespaces or FUSE are unavailable.
set -euo pipefail
exec </dev/null # nothing here may ever prompt
# shellcheck source=tests/multihost/lib.sh
source "$(dirname "$0")/lib.sh"

mh_up 4
cap=$MH_LINK_MBPS
tool() { mh_exec 1 "$MH_TOOL" "$@" --meta "$MH_META" --machine host1; }

rx_before=$(mh_link_bytes 1 rx)
tool model calibrate --mount "${MH_MNT[1]}" --probe-size 8M >"$MH_DIR/calibrate.txt" 2>&1 ||
    mh_fail "tessera model calibrate failed: $(cat "$MH_DIR/calibrate.txt")"
rx_after=$(mh_link_bytes 1 rx)
cat "$MH_DIR/calibrate.txt"
line=$(grep -E '^link of host1: [0-9.]+ MB/s \([0-9.]+ MB of tiles other machines hold, read in [0-9.]+ s\)' \
    "$MH_DIR/calibrate.txt") || mh_fail "calibrate printed no link of host1: $(cat "$MH_DIR/calibrate.txt")"
link=$(echo "$line" | sed -E 's/^link of host1: ([0-9.]+) MB\/s.*/\1/')
remote_mb=$(echo "$line" | sed -E 's/.*\(([0-9.]+) MB of tiles.*/\1/')
# 16 MiB of probe, round-robin over 4 hosts: 12 of its 16 tiles elsewhere.
[ "$remote_mb" = 12.6 ] || mh_fail "the link probe read $remote_mb MB of remote tiles, not 12.6"
# Seven passes (the write, one untimed read, five timed) crossed the link.
python3 - "$link" "$cap" "$((rx_after - rx_before))" <<'PY' || mh_fail "host 1's link measured $link MB/s under a $cap MB/s cap"
import sys
link, cap, rx = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
assert 0.6 * cap <= link <= 1.02 * cap, (link, cap)
assert rx >= 6 * 12 * 1048576, rx  # the reads really crossed host 1's link
PY
mh_log "host 1's link measured at $link MB/s (cap $cap MB/s)"

tool model show >"$MH_DIR/show.txt" || mh_fail "tessera model show failed"
grep -q "^link of host1: $link MB/s (calibrated)\$" "$MH_DIR/show.txt" ||
    mh_fail "model show lists no calibrated link of host1: $(cat "$MH_DIR/show.txt")"
for h in 2 3 4; do
    grep -q "^link of host$h: $link MB/s (as one calibrated)\$" "$MH_DIR/show.txt" ||
        mh_fail "model show does not give host$h host1's link: $(cat "$MH_DIR/show.txt")"
done
tool model show --json >"$MH_DIR/show.json" || mh_fail "tessera model show --json failed"
python3 - "$MH_DIR/show.json" "$link" <<'PY' || mh_fail "model show --json: $(cat "$MH_DIR/show.json")"
import json, sys
show, link = json.load(open(sys.argv[1])), float(sys.argv[2])
links = {l["machine"]: l for l in show["links"]}
assert sorted(links) == ["host1", "host2", "host3", "host4"], links
assert links["host1"]["measured"] is True and abs(links["host1"]["mbps"] - link) < 0.06, links
assert all(links[h]["measured"] is False and abs(links[h]["mbps"] - link) < 0.06
           for h in ("host2", "host3", "host4")), links
# A byte from another machine's datanode costs this machine more CPU (its
# network's, and on this harness the other hosts' datanodes too) than one
# from its own: the copies=2 probe, all local, tells them apart.
cpu = show["client_cpu"]
assert cpu["remote_read_per_byte_s"] > cpu["read_per_byte_s"] > 0, cpu
PY

predict() { tool model predict --json "$@" size=64M tile=1M clients=1 layout=linear; }
predict op=read copies=1 >"$MH_DIR/read1.json" || mh_fail "model predict of a copies=1 read failed"
predict op=read copies=2 >"$MH_DIR/read2.json" || mh_fail "model predict of a copies=2 read failed"
predict op=write copies=2 >"$MH_DIR/write2.json" || mh_fail "model predict of a copies=2 write failed"
tool model predict --json --what-if net=inf op=write copies=1 size=64M tile=1M clients=1 \
    layout=linear >"$MH_DIR/write1.json" || mh_fail "model predict of a copies=1 write failed"
python3 - "$MH_DIR" "$link" <<'PY' || mh_fail "predictions: $(cat "$MH_DIR"/read1.json "$MH_DIR"/read2.json "$MH_DIR"/write2.json "$MH_DIR"/write1.json)"
import json, sys
d, link = sys.argv[1], float(sys.argv[2])
read1 = json.load(open(d + "/read1.json"))
read2 = json.load(open(d + "/read2.json"))
write2 = json.load(open(d + "/write2.json"))
remote_s = 48 * 1048576 / (link * 1e6)  # 3/4 of 64 MiB over the link (printed to 0.1 MB/s)
busy = lambda r, name: sum(x["busy_s"] for x in r["resources"] if x["name"] == name)
assert read1["bottleneck"] == "link-in[machine 0]", read1
assert 0.99 * remote_s <= read1["seconds"] < 1.2 * remote_s, (read1["seconds"], remote_s)
assert not read2["bottleneck"].startswith("link"), read2
assert busy(read2, "link-in[machine 0]") == 0, read2
# Each tile crosses host 1's link once: to its primary, or from here to
# the second copy when the primary is this machine's.
assert abs(busy(write2, "link-out[machine 0]") / (64 * 1048576 / (link * 1e6)) - 1) < 0.01, write2
write1 = json.load(open(d + "/write1.json"))
assert write1["bottleneck"] == "link-out[machine 0]", write1
assert write1["what_if"]["seconds"] < 0.5 * remote_s, write1
PY
mh_log "copies=1 read predicted link-bound; copies=2 read local; copies=2 write crosses once per tile"

# Four clients, one on each host, each reading its own 16 MiB: four links
# carry the remote three quarters at once, where four clients on host 1
# share its one link.
tool model predict --json op=read copies=1 size=64M tile=1M clients=4 layout=linear \
    machines=host1,host2,host3,host4 >"$MH_DIR/spread.json" ||
    mh_fail "model predict with machines= failed"
tool model predict --json op=read copies=1 size=64M tile=1M clients=4 layout=linear \
    >"$MH_DIR/onehost.json" || mh_fail "model predict of four clients on host 1 failed"
python3 - "$MH_DIR" "$link" <<'PY' || mh_fail "machines= predictions: $(cat "$MH_DIR"/spread.json "$MH_DIR"/onehost.json)"
import json, sys
d, link = sys.argv[1], float(sys.argv[2])
spread = json.load(open(d + "/spread.json"))
one = json.load(open(d + "/onehost.json"))
busy = lambda r, name: sum(x["busy_s"] for x in r["resources"] if x["name"] == name)
per_host_s = 12 * 1048576 / (link * 1e6)  # 3/4 of each client's 16 MiB over its own link
for m in range(4):
    assert abs(busy(spread, "link-in[machine %d]" % m) / per_host_s - 1) < 0.05, (m, spread)
assert spread["bottleneck"].startswith("link-"), spread
assert spread["seconds"] < 0.4 * one["seconds"], (spread["seconds"], one["seconds"])
PY
tool model predict op=read clients=1 machines=host1,host2 >/dev/null 2>"$MH_DIR/fewer.err" &&
    mh_fail "model predict took two machines for one client"
grep -q "each needs a client" "$MH_DIR/fewer.err" ||
    mh_fail "model predict with too few clients said: $(cat "$MH_DIR/fewer.err")"
mh_log "four clients on four hosts predicted on four links at once"
