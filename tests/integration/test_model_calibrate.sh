#!/usr/bin/env bash
# tessera model calibrate (issue 32) through a real mount of a 4-datanode
# cluster: before it, `model show` says the figures are defaults; it prints
# the probes, the fixed cost, this machine's CPU per byte and the mount's
# fit, stores them in meta, and leaves no probe directory behind; then
# `model show` (text and JSON) has the calibrated figures, the machine's
# CPU per byte among them, and `model predict` uses them: its figures say
# calibrated, this machine's CPU is one of its resources, and twice the
# bytes take longer. Every datanode runs on this machine, so there is no
# link to measure: calibrate says so and `model show` lists the default
# link (tests/multihost/test_model_link.sh measures one). A path that is
# not a Tessera mount, a missing --mount, a missing directory and a bad
# --machine are refused with the cause named.
source "$(dirname "$0")/lib.sh"

cluster_up
model() { timeout -k 5 120 "$TESSERA_TOOL" model "$@" --state "$STATE"; }

model show >"$T/show-before.txt" 2>&1 || fail "tessera model show failed: $(cat "$T/show-before.txt")"
grep -q '^calibrated: never' "$T/show-before.txt" ||
    fail "before calibrate, model show does not say never: $(head -3 "$T/show-before.txt")"
grep -q "client machine's CPU" "$T/show-before.txt" &&
    fail "before calibrate, model show has a measured client CPU"

model calibrate --mount "$MNT" --probe-size 16M >"$T/calibrate.txt" 2>&1 ||
    fail "tessera model calibrate failed: $(cat "$T/calibrate.txt")"
cat "$T/calibrate.txt" >>"$T/tool.log"
for line in '^meta: [0-9.]+ us per round trip' '^datanode [0-9]+: [0-9.]+ us per round trip' \
    '^probe through .*1024 KiB tiles, 1 copy: 16.8 MB written in [0-9.]+ s, read in [0-9.]+ s' \
    '^probe through .*128 KiB tiles, 1 copy' '^probe through .*1024 KiB tiles, 2 copies' \
    '^probe through .*an array file, 1024 KiB tiles, 1 copy: 16.8 MB' \
    '^fixed cost of a transfer: write [0-9.]+ ms' \
    "^this machine's CPU \\([0-9]+ cores\\): read [0-9.]+ ns/byte \\+ [0-9.]+ us/request, write [0-9.]+ ns/byte \\+ [0-9.]+ us/request, [0-9.]+ ns/byte more per further copy; array files read [0-9.]+, write [0-9.]+ ns/byte" \
    '^mount: [0-9.]+ us per request' '^stored in meta' \
    '^link: no datanode runs on another machine than .*; nothing to measure'; do
    grep -Eq "$line" "$T/calibrate.txt" || fail "calibrate printed no line like /$line/: $(cat "$T/calibrate.txt")"
done
[ "$(grep -c '^datanode [0-9]*: ' "$T/calibrate.txt")" = 4 ] || fail "calibrate did not ping 4 datanodes"
ls -a "$MNT" | grep -q 'tessera-model-probe' && fail "calibrate left its probe directory: $(ls -a "$MNT")"

model show >"$T/show.txt" 2>&1 || fail "tessera model show failed after calibrate"
grep -q '^calibrated: 20' "$T/show.txt" || fail "model show does not give the calibration's date: $(head -3 "$T/show.txt")"
grep -Eq '^link of .*: 1000.0 MB/s \(default\)$' "$T/show.txt" ||
    fail "model show lists no default link: $(cat "$T/show.txt")"
grep -Eq "^client machine's CPU: read [0-9.]+ ns/byte .* array files read [0-9.]+, write [0-9.]+ ns/byte \\(calibrated\\)" "$T/show.txt" ||
    fail "model show has no client CPU line: $(cat "$T/show.txt")"
model show --json >"$T/show.json" || fail "tessera model show --json failed"
python3 - "$T/show.json" <<'PY' || fail "model show --json: $(cat "$T/show.json")"
import json, sys
show = json.load(open(sys.argv[1]))
assert show["calibrated"].startswith("20"), show
cpu = show["client_cpu"]
assert 0 < cpu["read_per_byte_s"] < 1e-6 and 0 < cpu["write_per_byte_s"] < 1e-6, show
assert cpu["read_per_request_s"] >= 0 and cpu["write_per_request_s"] >= 0, show
assert cpu["copy_per_byte_s"] >= 0, show
assert cpu["array_read_per_byte_s"] > 0 and cpu["array_write_per_byte_s"] > 0, show
assert show["mount_array"]["read_per_byte_s"] > 0 and show["mount_array"]["write_per_byte_s"] > 0, show
assert len(show["datanodes"]) == 4, show
PY

predict() {
    model predict --json op=read "size=$1" tile=1M clients=1 copies=1 layout=linear >"$T/predict-$1.json" ||
        fail "tessera model predict size=$1 failed"
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["seconds"])' "$T/predict-$1.json"
}
small=$(predict 128M)
large=$(predict 256M)
python3 - "$small" "$large" "$T/predict-128M.json" <<'PY' || fail "predictions $small s and $large s: $(cat "$T/predict-128M.json")"
import json, sys
small, large = float(sys.argv[1]), float(sys.argv[2])
assert 0 < small < large, (small, large)
result = json.load(open(sys.argv[3]))
assert result["figures"]["mount"] == "calibrated", result
assert result["figures"]["datanode_cpu"] == "calibrated", result
assert any(r["name"].startswith("machine-cpu") for r in result["resources"]), result
PY
log "calibrated; a 128M read predicted in $small s, 256M in $large s"

mkdir -p "$T/plain"
if model calibrate --mount "$T/plain" >"$T/plain.txt" 2>&1; then
    fail "calibrate through a plain directory succeeded"
fi
grep -q 'not on a Tessera mount' "$T/plain.txt" || fail "calibrate through a plain directory: $(cat "$T/plain.txt")"
rc=0
model calibrate >"$T/nomount.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "calibrate without --mount exited $rc, not 2"
grep -q -- '--mount' "$T/nomount.txt" || fail "calibrate without --mount: $(cat "$T/nomount.txt")"
if model calibrate --mount "$T/missing" >"$T/missing.txt" 2>&1; then
    fail "calibrate through a missing directory succeeded"
fi
grep -q 'No such file' "$T/missing.txt" || fail "calibrate through a missing directory: $(cat "$T/missing.txt")"
for bad in "" "two words" "$(printf 'm%.0s' {1..64})"; do
    rc=0
    model show --machine "$bad" >"$T/machine.txt" 2>&1 || rc=$?
    [ "$rc" = 2 ] || fail "model show --machine '$bad' exited $rc, not 2"
    grep -q -- '--machine wants a name' "$T/machine.txt" || fail "model show --machine '$bad': $(cat "$T/machine.txt")"
done

cluster_down
