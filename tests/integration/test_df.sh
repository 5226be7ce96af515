#!/usr/bin/env bash
# Space is counted once per disk: the four datanodes of `tessera up` keep
# their data on one filesystem, and `df` on the mount shows that
# filesystem's size (not four times it), within 1 %; `tessera df` lists
# the four datanodes on one disk, one machine line and a total equal to
# what `df` on the mount shows, in text and in JSON.
source "$(dirname "$0")/lib.sh"

cluster_up

disk_size=$(df -B1 --output=size "$STATE" | tail -1 | tr -d ' ')
mount_size() { df -B1 --output=size "$MNT" | tail -1 | tr -d ' '; }
# within_percent A B: A within 1 % of B.
within_percent() { python3 -c "import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); sys.exit(abs(a - b) > b / 100)" "$1" "$2"; }
shown_once() { within_percent "$(mount_size)" "$disk_size"; }
for _ in $(seq 100); do shown_once && break; sleep 0.2; done
shown_once || fail "df on the mount shows $(mount_size) bytes, the disk under the datanodes has $disk_size"
log "df on the mount: $(mount_size) bytes; the disk under the datanodes: $disk_size"

timeout -k 5 60 "$TESSERA_TOOL" df --state "$STATE" >"$T/df.out" 2>&1 || fail "tessera df failed: $(cat "$T/df.out")"
cat "$T/df.out" >>"$T/tool.log"
[ "$(grep -c ' up$' "$T/df.out")" = 4 ] || fail "tessera df does not list 4 datanodes up"
[ "$(awk 'NR > 1 && NF == 9 && $NF == "up" { print $3 }' "$T/df.out" | sort -u | wc -l)" = 1 ] ||
    fail "tessera df shows the four datanodes on different disks"
grep -Eq '^total +1 +4/4 ' "$T/df.out" || fail "tessera df's total is not 1 disk, 4/4 datanodes"

timeout -k 5 60 "$TESSERA_TOOL" df --state "$STATE" --json >"$T/df.json" || fail "tessera df --json failed"
python3 - "$T/df.json" "$(mount_size)" <<'PY' || fail "tessera df --json: $(cat "$T/df.json")"
import json, sys
df = json.load(open(sys.argv[1]))
assert len(df["datanodes"]) == 4, df
assert len({n["disk_id"] for n in df["datanodes"]}) == 1, df
assert len(df["machines"]) == 1 and df["machines"][0]["disks"] == 1, df
total = df["total"]
assert total["disks"] == 1 and total["up"] == 4, total
assert abs(total["size"] - int(sys.argv[2])) <= int(sys.argv[2]) / 100, (total, sys.argv[2])
PY
log "tessera df: 4 datanodes on one disk, counted once"
cluster_down
