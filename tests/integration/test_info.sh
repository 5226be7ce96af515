#!/usr/bin/env bash
# tessera info PATH (issue 33): a directory tree's entries by kind, bytes,
# tiles, replicas against copies and each datanode's share, in text and in
# JSON (jansson), summed right over files with copies=2 and copies=1, an
# empty file, a symlink and a name with a quote, a backslash and a newline.
source "$(dirname "$0")/lib.sh"

cluster_up
mkdir -p "$MNT/d/s" || fail "mkdir failed"
setfattr -n user.tessera.layout -v copies=1 "$MNT/d/s" || fail "cannot set copies=1 on d/s"
head -c $((3 * 1048576 + 100)) /dev/urandom >"$MNT/d/a" || fail "write d/a failed"
: >"$MNT/d/e"
ln -s a "$MNT/d/link" || fail "symlink failed"
head -c 1048576 /dev/urandom >"$MNT/d/s/b" || fail "write d/s/b failed"
weird=$'we"ird\\\nname'
printf '0123456789' >"$MNT/d/$weird" || fail "write of the oddly named file failed"
sync "$MNT/d/a" "$MNT/d/s/b" "$MNT/d/$weird" || fail "fsync failed"

run_tool info "$MNT/d" || fail "tessera info d failed: $(tail -3 "$T/tool.log")"
grep -q "4 files, 2 directories, 1 symbolic links" "$T/tool.log" || fail "tessera info d: wrong entries"
grep -q "in 6 tiles" "$T/tool.log" || fail "tessera info d: wrong tile count"
grep -q "copies:    1 to 2, 11 replicas" "$T/tool.log" || fail "tessera info d: wrong copies or replicas"

"$TESSERA_TOOL" info "$MNT/d" --json >"$T/info.json" 2>>"$T/tool.log" || fail "tessera info --json failed"
python3 - "$T/info.json" "$MNT/d" <<'PY' || fail "tessera info --json: $(cat "$T/info.json")"
import json, sys
info = json.load(open(sys.argv[1]))
want = {"path": sys.argv[2], "files": 4, "directories": 2, "symlinks": 1, "others": 0,
        "bytes": 3 * 1048576 + 100 + 1048576 + 10, "tiles": 6, "replicas": 11,
        "stored_bytes": 2 * (3 * 1048576 + 100) + 1048576 + 2 * 10,
        "tiles_under_copies": 0, "min_copies": 1, "max_copies": 2, "complete": True}
for key, value in want.items():
    if info.get(key) != value:
        sys.exit(f"{key}: {info.get(key)!r}, expected {value!r}")
nodes = info["nodes"]
if sum(n["replicas"] for n in nodes) != 11 or sum(n["bytes"] for n in nodes) != want["stored_bytes"]:
    sys.exit(f"the datanodes' shares do not add up: {nodes}")
PY

# One file, its name escaped: the JSON must parse and give the name back.
"$TESSERA_TOOL" info "$MNT/d/$weird" --json >"$T/weird.json" 2>>"$T/tool.log" ||
    fail "tessera info of the oddly named file failed"
python3 - "$T/weird.json" "$MNT/d/$weird" <<'PY' || fail "tessera info --json of the odd name: $(cat "$T/weird.json")"
import json, sys
info = json.load(open(sys.argv[1]))
if info["path"] != sys.argv[2] or info["files"] != 1 or info["replicas"] != 2:
    sys.exit(f"got {info}")
PY

# Errors: not a Tessera path, no path.
rc=0
"$TESSERA_TOOL" info /proc >"$T/err.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "not on a Tessera mount" "$T/err.out" || fail "tessera info /proc: exit $rc, $(cat "$T/err.out")"
rc=0
"$TESSERA_TOOL" info >"$T/err.out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "tessera info without PATH exited $rc, expected 2"
log "ok"
