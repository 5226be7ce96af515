#!/usr/bin/env bash
# A path in a mount names its cluster. Two clusters run side by side (A: the
# test's usual one; B: one datanode on ports BASE+5.. with its own state
# dir), each with a file of the same inode number. Every inode shows the
# virtual attribute tessera.cluster ("ID ENDPOINT", answered by the mount,
# not stored), different for A and B; `tessera layout show`, `profile` and
# `rebalance plan` given a path use the path's cluster without flags, and
# refuse, naming both clusters, when --state or --meta names the other one.
# A path outside any Tessera mount gets a clear error.
source "$(dirname "$0")/lib.sh"

cluster_up

STATE_B=$T/state-b
MNT_B=$T/mnt-b
PORT_B=$((BASE + 5))
mkdir -p "$MNT_B"
IT_STATES+=("$STATE_B")
IT_MOUNTS+=("$MNT_B")
run_tool up --state "$STATE_B" --mount "$MNT_B" --nodes 1 --port "$PORT_B" \
    --io-timeout-ms "$IO_TIMEOUT_MS" || fail "tessera up of the second cluster failed"
wait_mounted "$MNT_B"

# The first file of each cluster: the same inode number, different sizes.
head -c 3145728 /dev/urandom >"$MNT/f"
head -c 1048576 /dev/urandom >"$MNT_B/f"
sync "$MNT/f" "$MNT_B/f"
ino_a=$(stat -c %i "$MNT/f")
ino_b=$(stat -c %i "$MNT_B/f")
log "inode of f: $ino_a in A, $ino_b in B"
[ "$ino_a" = "$ino_b" ] || fail "the two first files got inodes $ino_a and $ino_b: the test needs one number"

# tessera.cluster: "ID ENDPOINT", the same on every inode of a mount.
cluster_of() { getfattr --absolute-names --only-values -n tessera.cluster "$1"; }
value_a=$(cluster_of "$MNT/f") || fail "getfattr -n tessera.cluster $MNT/f failed"
value_b=$(cluster_of "$MNT_B/f") || fail "getfattr -n tessera.cluster $MNT_B/f failed"
log "A: $value_a; B: $value_b"
id_a=${value_a%% *}
id_b=${value_b%% *}
[[ $id_a =~ ^[0-9a-f]{32}$ ]] || fail "cluster id of A is not 32 hex digits: '$value_a'"
[ "$id_a" != "$id_b" ] || fail "both clusters have the id $id_a"
[ "${value_a#* }" = "tcp://127.0.0.1:$BASE" ] || fail "A's endpoint is not meta's: '$value_a'"
[ "${value_b#* }" = "tcp://127.0.0.1:$PORT_B" ] || fail "B's endpoint is not meta's: '$value_b'"
mkdir "$MNT/dir"
[ "$(cluster_of "$MNT")" = "$value_a" ] || fail "the root of A names another cluster"
[ "$(cluster_of "$MNT/dir")" = "$value_a" ] || fail "a directory of A names another cluster"
# Answered by the mount, not stored: not listed, not settable.
if getfattr --absolute-names -d -m - "$MNT/f" 2>/dev/null | grep -q tessera.cluster; then
    fail "tessera.cluster is listed by listxattr (cp -a would copy it)"
fi
if setfattr -n tessera.cluster -v x "$MNT/f" 2>/dev/null; then
    fail "setfattr -n tessera.cluster succeeded"
fi

# layout show FILE without flags: A's meta, whatever the default state is.
TESSERA_STATE=$T/no-such-state "$TESSERA_TOOL" layout show "$MNT/f" --json >"$T/layout-a.json" \
    2>"$T/layout-a.err" || fail "tessera layout show $MNT/f without flags failed: $(cat "$T/layout-a.err")"
grep -q '"size": 3145728' "$T/layout-a.json" || fail "layout of A's f: $(head -c 400 "$T/layout-a.json")"
tiles=$(grep -o '"tile": [0-9]*' "$T/layout-a.json" | wc -l)
[ "$tiles" = 3 ] || fail "layout of A's f shows $tiles tiles, not 3: $(head -c 400 "$T/layout-a.json")"
TESSERA_STATE=$T/no-such-state "$TESSERA_TOOL" layout show "$MNT_B/f" --json >"$T/layout-b.json" \
    2>"$T/layout-b.err" || fail "tessera layout show $MNT_B/f failed: $(cat "$T/layout-b.err")"
grep -q '"size": 1048576' "$T/layout-b.json" || fail "layout of B's f: $(head -c 400 "$T/layout-b.json")"

# The right cluster named explicitly works, the wrong one is refused.
run_tool layout show "$MNT/f" --state "$STATE" || fail "layout show with A's own --state failed"
run_tool layout show "$MNT/f" --meta "tcp://127.0.0.1:$BASE" || fail "layout show with A's own --meta failed"

# expect_refused DESCRIPTION COMMAND...: exit 1, the message names both ids.
expect_refused() {
    local description=$1 rc=0
    shift
    "$TESSERA_TOOL" "$@" >"$T/refused.out" 2>"$T/refused.err" || rc=$?
    [ "$rc" = 1 ] || fail "$description: exit $rc, not 1: $(cat "$T/refused.out" "$T/refused.err")"
    grep -q "$id_a" "$T/refused.err" && grep -q "$id_b" "$T/refused.err" ||
        fail "$description: the error does not name both clusters: $(cat "$T/refused.err")"
    log "$description: $(cat "$T/refused.err")"
}
expect_refused "layout show A's file with --state B" layout show "$MNT/f" --state "$STATE_B"
# --meta names no keys: with B's admin key, B answers and the clusters differ; with A's
# (the path's, or $TESSERA_KEY), B lets nobody in and nothing is shown either.
expect_refused "layout show A's file with --meta B" --key "$STATE_B/keys/admin.key" \
    layout show "$MNT/f" --meta "tcp://127.0.0.1:$PORT_B"
rc=0
"$TESSERA_TOOL" layout show "$MNT/f" --meta "tcp://127.0.0.1:$PORT_B" --timeout-ms 2000 \
    >"$T/refused.out" 2>"$T/refused.err" || rc=$?
[ "$rc" = 1 ] || fail "layout show A's file with --meta B and A's key: exit $rc, not 1"
grep -q "cannot ask tessera-meta at tcp://127.0.0.1:$PORT_B" "$T/refused.err" ||
    fail "layout show A's file with --meta B and A's key: $(cat "$T/refused.err")"
expect_refused "layout show B's file with --state A" layout show "$MNT_B/f" --state "$STATE"
expect_refused "profile start in A with --state B" profile start "$MNT/dir" --state "$STATE_B"
expect_refused "rebalance plan in A with --state B" rebalance plan "$MNT/dir" --policy frequent \
    --state "$STATE_B"

# profile and rebalance plan without flags act on the path's cluster.
TESSERA_STATE=$T/no-such-state run_tool profile start "$MNT/dir" || fail "profile start without flags failed"
TESSERA_STATE=$T/no-such-state run_tool profile show "$MNT/dir" || fail "profile show without flags failed"
TESSERA_STATE=$T/no-such-state run_tool rebalance plan "$MNT/dir" --policy frequent ||
    fail "rebalance plan without flags failed"
TESSERA_STATE=$T/no-such-state run_tool profile stop "$MNT/dir" || fail "profile stop without flags failed"

# Outside any Tessera mount: a clear error.
echo local >"$T/local-file"
rc=0
"$TESSERA_TOOL" layout show "$T/local-file" >"$T/local.out" 2>"$T/local.err" || rc=$?
[ "$rc" = 1 ] || fail "layout show of a local file: exit $rc, not 1"
grep -q "is not on a Tessera mount" "$T/local.err" || fail "layout show of a local file: $(cat "$T/local.err")"
log "a local file: $(cat "$T/local.err")"

assert_daemons_alive
log "ok"
