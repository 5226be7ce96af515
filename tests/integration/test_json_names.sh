#!/usr/bin/env bash
# Every --json output that prints names (issue 33: JSON through jansson)
# stays valid JSON for file names with a quote, a backslash, a newline, a
# tab, control bytes, valid UTF-8 and bytes that are not UTF-8, and gives
# each name back: as it is when it is UTF-8, else as "<key>_hex" (its exact
# bytes; "<key>" then has U+FFFD for each bad byte). Commands: info (a
# directory and each file), layout show (each file), profile show,
# rebalance plan and status, status, df, health.
source "$(dirname "$0")/lib.sh"

cluster_up
meta=$(meta_endpoint)
tool() { timeout -k 5 120 "$TESSERA_TOOL" "$@" --meta "$meta"; }

dir=$MNT/$'d"ir\\\xff'
mkdir "$dir" || fail "mkdir of an oddly named directory failed"
names=($'quo"te' $'back\\slash' $'new\nline' $'t\tab' $'ctl\x01\x1b\x7f' $'caf\xc3\xa9' \
    $'bad\xff\xfeutf8' $'cut\xc3')
for name in "${names[@]}"; do
    head -c 70000 /dev/urandom >"$dir/$name" || fail "write of $(printf %q "$name") failed"
done
sync "$dir"/*
tool profile start "$dir" >/dev/null || fail "profile start failed"
for name in "${names[@]}"; do
    dd if="$dir/$name" bs=64k iflag=direct status=none of=/dev/null || fail "read back failed"
done

# check_json FILE WHAT: FILE parses as JSON (one document).
check_json() {
    python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$1" ||
        fail "$2 is not JSON: $(head -c 2000 "$1")"
}
# names_back FILE KEY DIR: every entry of DIR is named by some KEY (or KEY_hex) in FILE.
names_back() {
    python3 - "$1" "$2" "$3" <<'PY' || fail "$1: names not given back"
import json, os, sys
path, key, directory = sys.argv[1], sys.argv[2], os.fsencode(sys.argv[3])
found = set()
def walk(node):
    if isinstance(node, dict):
        if key in node:
            if key + "_hex" in node:
                found.add(bytes.fromhex(node[key + "_hex"]))
                if "\ufffd" not in node[key]:
                    sys.exit(f"{node[key]!r} has a {key}_hex but no U+FFFD")
            else:
                found.add(node[key].encode("utf-8"))
        for value in node.values():
            walk(value)
    elif isinstance(node, list):
        for value in node:
            walk(value)
walk(json.load(open(path, encoding="utf-8")))
want = {os.path.join(directory, n) for n in os.listdir(directory)}
missing = want - found
if missing:
    sys.exit(f"not given back: {sorted(missing)}; found {sorted(found)[:20]}")
PY
}

tool info "$dir" --json >"$T/info-dir.json" || fail "info --json of the directory failed"
check_json "$T/info-dir.json" "info --json (directory)"
i=0
for name in "${names[@]}"; do
    i=$((i + 1))
    tool info "$dir/$name" --json >"$T/info-$i.json" || fail "info --json of $(printf %q "$name") failed"
    check_json "$T/info-$i.json" "info --json of $(printf %q "$name")"
    tool layout show "$dir/$name" --json >"$T/layout-$i.json" ||
        fail "layout show --json of $(printf %q "$name") failed"
    check_json "$T/layout-$i.json" "layout show --json of $(printf %q "$name")"
done
python3 - "$dir" "$T" "${#names[@]}" <<'PY' || fail "info/layout --json do not give the names back"
import json, os, sys
directory, tmp, count = os.fsencode(sys.argv[1]), sys.argv[2], int(sys.argv[3])
want = {os.path.join(directory, n) for n in os.listdir(directory)}
for kind in ("info", "layout"):
    found = set()
    for i in range(1, count + 1):
        doc = json.load(open(f"{tmp}/{kind}-{i}.json", encoding="utf-8"))
        found.add(bytes.fromhex(doc["path_hex"]) if "path_hex" in doc else doc["path"].encode())
    if found != want:
        sys.exit(f"{kind}: {sorted(found)} != {sorted(want)}")
PY

profile_counted() {
    tool profile show "$dir" --json >"$T/profile.json" &&
        [ "$(grep -o '"reads": [1-9]' "$T/profile.json" | wc -l)" -ge "${#names[@]}" ]
}
wait_for 20 "the reads to be counted" profile_counted
check_json "$T/profile.json" "profile show --json"
names_back "$T/profile.json" path "$dir"
tool rebalance plan "$dir" --policy frequent --json >"$T/plan.json" || fail "rebalance plan --json failed"
check_json "$T/plan.json" "rebalance plan --json"
python3 - "$T/plan.json" "$dir" <<'PY' || fail "plan --json does not give the path back: $(cat "$T/plan.json")"
import json, os, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
assert bytes.fromhex(doc["path_hex"]) == os.fsencode(sys.argv[2]), doc["path_hex"]
PY
for command in "rebalance status" status df health; do
    # shellcheck disable=SC2086
    tool $command --json >"$T/out.json" || fail "$command --json failed"
    check_json "$T/out.json" "$command --json"
done
log "every --json output parsed, with every name given back"
