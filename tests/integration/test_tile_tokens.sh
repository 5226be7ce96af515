#!/usr/bin/env bash
# Tile write tokens (issue 30, "tile writes only for tiles meta has
# allocated to that node"; common/tiletoken.h). `tessera up` makes
# STATE/keys/tile.secret (0600) and meta and the datanodes load it. With
# the cluster's own mount key, an attacker then sends TILE_WRITEs of a
# victim file's tile: without a token, with a forged one, with the token
# of another file (its own), with the victim holder's token sent to a
# datanode meta did not allocate the tile to, with a token taken before
# the tile moved (stale: another version, another node), and with the
# read-only token a read-only export gets. Every one is refused, nothing
# changes on disk (the victim's bytes; no tile file appears anywhere), and
# every daemon stays up. A token of its own file does write it (the check
# is not just "refuse everything"), and a real mount that writes over
# ZeroMQ only (tile_streams=0: every write carries a token) writes and
# reads back a multi-tile file.
source "$(dirname "$0")/lib.sh"

[ -n "${CLIENT_HELPER:-}" ] && [ -x "$CLIENT_HELPER" ] ||
    fail "CLIENT_HELPER is not set to the built client_helper (run through meson test)"

cluster_up
KEYS=$STATE/keys
meta=$(meta_endpoint)
[ -f "$KEYS/tile.secret" ] || fail "tessera up made no tile.secret"
[ "$(stat -c %a "$KEYS/tile.secret")" = 600 ] ||
    fail "tile.secret has mode $(stat -c %a "$KEYS/tile.secret"), want 600"
grep -q 'tile tokens on' "$STATE/logs/meta.log" || fail "meta did not load the tile secret"
[ "$(grep -l 'tile tokens on' "$STATE"/logs/node*.log | wc -l)" = 4 ] ||
    fail "not every datanode loaded the tile secret"

# One holder per tile, so that "a datanode meta did not allocate it to" is any other.
mkdir "$MNT/t"
run_tool layout set "$MNT/t" copies=1 || fail "tessera layout set copies=1 failed"
head -c $((2 * 1048576 + 333)) /dev/urandom >"$T/victim"
cp "$T/victim" "$MNT/t/victim"
head -c 8192 /dev/urandom >"$MNT/t/mine"
sync "$MNT/t/victim" "$MNT/t/mine"
want=$(sha256sum <"$T/victim" | cut -d' ' -f1)
ino=$(stat -c %i "$MNT/t/victim")
mine=$(stat -c %i "$MNT/t/mine")

status_json() { "$TESSERA_TOOL" status --state "$STATE" --json; }
address_of() {
    status_json | tr '{' '\n' | grep "\"id\": $1," | sed 's/.*"address": "\([^"]*\)".*/\1/'
}
read -r node version _ < <("$CLIENT_HELPER" map "$meta" "$ino" 0 "$(hostname)") ||
    fail "no map of the victim's tile 0"
read -r mine_node _ < <("$CLIENT_HELPER" map "$meta" "$mine" 0 "$(hostname)") ||
    fail "no map of the attacker's own tile 0"
address=$(address_of "$node")
other_node=$(status_json | tr '{' '\n' | sed -n 's/.*"id": \([0-9]*\),.*/\1/p' |
    grep -vx "$node" | head -n 1)
other=$(address_of "$other_node")
[ -n "$address" ] && [ -n "$other" ] || fail "no addresses for nodes $node and $other_node"
log "victim inode $ino tile 0 on node $node ($address) version $version; other node $other_node"

# Every tile file of the victim on every datanode (NODE/BUCKET/NAME), with
# its bytes' sum. sha256sum names each file it summed itself: a retired
# file deleted between find and its sum is left out, not glued to the next.
victim_files() {
    find "$STATE"/node*/tiles -name "$ino.*" ! -name '*.crc' -exec sha256sum {} + 2>/dev/null |
        awk -v state="$STATE/" '{ path = substr($0, 67); sub(state, "", path); print path, $1 }' |
        sort
}
victim_files >"$T/files.before"
[ -s "$T/files.before" ] || fail "no tile file of the victim found"

attack() {
    local key=$1 expected=$2 out
    shift 2
    out=$(TESSERA_KEY=$key "$CLIENT_HELPER" attack "$@" 2>&1) || fail "client_helper attack $* failed: $out"
    echo "$(basename "$key"): $out" >>"$T/attacks.log"
    [[ "$out" == *"$expected"* ]] || fail "attack $* with $(basename "$key"): want '$expected', got: $out"
}
PERM="10 operation not permitted"
MOUNT_KEY=$KEYS/mount.key

# No token at all, and a made-up one.
attack "$MOUNT_KEY" "$PERM" write "$address" "$ino" 0 "$version"
attack "$MOUNT_KEY" "no valid tile token" write "$address" "$ino" 0 "$version"
attack "$MOUNT_KEY" "$PERM" forged "$address" "$ino" 0 "$version"
# Its own file's token (meta gave it honestly) on the victim's tile file.
attack "$MOUNT_KEY" "$PERM" tokenwrite "$meta" "$mine" 0 "$address" "$ino" "$version"
# The victim holder's own token, on a datanode meta did not allocate the tile to.
attack "$MOUNT_KEY" "$PERM" tokenwrite "$meta" "$ino" 0 "$other" "$ino" =
# ... and on the right datanode but for another version (a file meta never made).
attack "$MOUNT_KEY" "$PERM" tokenwrite "$meta" "$ino" 0 "$address" "$ino" $((version + 1))

# A stale token: meta's real token for tile 0, taken before the tile moved
# to another datanode, replayed after. On the new holder it names the old
# node and version: refused; on the old holder the file is retired: STALE.
read -r token_node token_version token_expiry token_hex < <(
    TESSERA_KEY=$MOUNT_KEY "$CLIENT_HELPER" token "$meta" "$ino" 0) || fail "no token for tile 0"
[ "$token_node" = "$node" ] && [ "$token_hex" != - ] ||
    fail "meta gave no token for tile 0 on node $node: $token_node $token_hex"
TESSERA_KEY=$KEYS/admin.key "$CLIENT_HELPER" move "$meta" "$ino" 0 "$other_node" move ||
    fail "moving the victim's tile 0 to node $other_node failed"
read -r new_node new_version _ < <("$CLIENT_HELPER" map "$meta" "$ino" 0 "$(hostname)")
[ "$new_node" = "$other_node" ] || fail "tile 0 is on node $new_node after the move, not $other_node"
log "moved: tile 0 now on node $new_node version $new_version"
victim_files >"$T/files.before" # the move made the new file (same bytes) and retired the old
attack "$MOUNT_KEY" "$PERM" hexwrite "$other" "$ino" 0 "$new_version" "$token_expiry" "$token_hex"
attack "$MOUNT_KEY" "$PERM" hexwrite "$other" "$ino" 0 "$token_version" "$token_expiry" "$token_hex"
attack "$MOUNT_KEY" "21 stale file handle" hexwrite "$address" "$ino" 0 "$token_version" \
    "$token_expiry" "$token_hex"
# The token's fields are its own: a later expiry with the same MAC is forged.
attack "$MOUNT_KEY" "$PERM" hexwrite "$address" "$ino" 0 "$token_version" \
    $((token_expiry + 3600000)) "$token_hex"

# A read-only export's key gets tokens that do not write.
printf 'ro1 / ro\n* / rw\n' >"$STATE/meta/exports"
wait_for 10 "meta to read its exports" grep -q 'exports: 2 rules from' "$STATE/logs/meta.log"
mapfile -t ro_key < <(key_args ro1 mount)
attack "${ro_key[1]}" "$PERM" tokenwrite "$meta" "$ino" 0 "$other" "$ino" =
rm "$STATE/meta/exports"
wait_for 10 "meta to drop its exports" grep -q 'exports: .* is gone' "$STATE/logs/meta.log"

# The refusals are logged with the key.
grep -q "refused a write of tile $ino\.0\.[0-9]* from key mount:mount: no tile token" \
    "$STATE"/logs/node*.log || fail "no datanode logged the tokenless write"

# Nothing changed: no new or changed tile file anywhere (the retired one
# may have been deleted meanwhile), the victim's bytes the same.
victim_files >"$T/files.after"
comm -13 "$T/files.before" "$T/files.after" >"$T/files.diff"
[ ! -s "$T/files.diff" ] || fail "the victim's tile files changed: $(cat "$T/files.diff")"
drop_file_cache "$MNT/t/victim"
got=$(sha256sum <"$MNT/t/victim" | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "the victim's bytes changed"
assert_daemons_alive

# The check is not "refuse everything": meta's token for the attacker's own
# tile, on its holder, writes it.
attack "$MOUNT_KEY" "0 success" tokenwrite "$meta" "$mine" 0 "$(address_of "$mine_node")" "$mine" =
drop_file_cache "$MNT/t/mine"
[ "$(head -c 4096 "$MNT/t/mine" | tr -d X | wc -c)" = 0 ] ||
    fail "the token's write of the attacker's own tile did not land"

# A real mount whose every write goes over ZeroMQ with its tokens.
mount_second "$T/mnt2" -o tile_streams=0
head -c $((5 * 1048576 + 99)) /dev/urandom >"$T/zmq"
cp "$T/zmq" "$T/mnt2/t/zmq-written" || fail "writing through the ZeroMQ-only mount failed"
sync "$T/mnt2/t/zmq-written"
truncate -s 1500000 "$T/mnt2/t/zmq-written" || fail "truncating through the ZeroMQ-only mount failed"
truncate -s 1500000 "$T/zmq"
drop_file_cache "$MNT/t/zmq-written"
cmp "$T/zmq" "$MNT/t/zmq-written" || fail "the ZeroMQ-only mount's file reads back other bytes"
! grep -q 'operation not permitted\|no valid tile token' "$T/mount2.log" ||
    fail "the ZeroMQ-only mount was refused: $(grep 'not permitted' "$T/mount2.log" | head -n 3)"
fusermount3 -u "$T/mnt2" || fail "unmount of the second mount failed"
wait "$MOUNT2_PID" 2>/dev/null || true

assert_daemons_alive
log "$(grep -vc "0 success" "$T/attacks.log") token attacks refused"
cluster_down
log "ok"
