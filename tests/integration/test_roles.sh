#!/usr/bin/env bash
# Roles and validation (issue 30, part B): the attacks of the issue's first
# paragraph replayed by members of the cluster with the wrong role, a
# revoked key, a stolen node id and an outsider on the tile stream. Each
# attack is a real request (client_helper attack) against a file of
# mode 600 and the datanode holding its first tile: a mount's key sends
# admin messages (throttle, fence retire, pull, node removal, heartbeat) and
# drops a replica of a file it does not hold open,
# the admin key and a datanode's key change the file's mode and owner and
# write or read its tile, a new datanode key heartbeats with a registered
# node's id, the admin asks for a throttle of 1 B/s and a pull from an
# endpoint that is no datanode, a revoked mount key tries a chmod; then a
# process of another uid asks the datanode's local tile stream for the
# tile (the datanode's own uid is answered, and served only with the tile
# token meta gives a mount key), and one process opens 200 stream connections while a second mount
# reads the file through its own. Every one is refused (the right status,
# logged with the key), and afterwards the file's bytes, mode and owner,
# the node list (ids, addresses, throttles, admin state) are as before,
# every daemon is up, and the mount reads and writes. Then meta's exports:
# a second mount given a read-only export reads but cannot change a thing.
source "$(dirname "$0")/lib.sh"

[ -n "${CLIENT_HELPER:-}" ] && [ -x "$CLIENT_HELPER" ] ||
    fail "CLIENT_HELPER is not set to the built client_helper (run through meson test)"

cluster_up
KEYS=$STATE/keys
meta=$(meta_endpoint)
[ -f "$KEYS/mount.key" ] && [ -f "$KEYS/node2.key" ] || fail "tessera up made no mount or node2 key"

head -c $((2 * 1048576 + 777)) /dev/urandom >"$T/data"
cp "$T/data" "$MNT/secret"
chmod 600 "$MNT/secret"
sync "$MNT/secret"
want=$(sha256sum <"$T/data" | cut -d' ' -f1)
ino=$(stat -c %i "$MNT/secret")

status_json() { "$TESSERA_TOOL" status --state "$STATE" --json; }
# What an attack could change in meta's node list: ids, addresses, throttles, admin states.
node_facts() {
    status_json | tr '{' '\n' | grep '"id"' |
        sed 's/.*"id": \([0-9]*\), .*"address": \("[^"]*"\).*"throttle_bytes_per_sec": \([0-9]*\), "admin": \("[a-z]*"\).*/\1 \2 \3 \4/'
}
node_facts >"$T/nodes.before"
[ "$(wc -l <"$T/nodes.before")" = 4 ] || fail "expected 4 datanodes: $(cat "$T/nodes.before")"
# The datanode holding tile 0, its address, and another datanode's address.
read -r node version _ < <("$CLIENT_HELPER" map "$meta" "$ino" 0 "$(hostname)") ||
    fail "no map of tile 0 of the file"
address=$(awk -v id="$node" '$1 == id { gsub(/"/, "", $2); print $2 }' "$T/nodes.before")
other=$(awk -v id="$node" '$1 != id { gsub(/"/, "", $2); print $2; exit }' "$T/nodes.before")
[ -n "$address" ] && [ -n "$other" ] || fail "no address for node $node: $(cat "$T/nodes.before")"
log "file inode $ino, tile 0 on node $node ($address) at version $version"

# attack KEY EXPECTED ATTACK ARGS...: sends the attack with KEY; its output
# must contain EXPECTED ("10 operation not permitted", "silent", ...).
attack() {
    local key=$1 expected=$2 out
    shift 2
    out=$(TESSERA_KEY=$key "$CLIENT_HELPER" attack "$@" 2>&1) || fail "client_helper attack $* failed: $out"
    echo "$(basename "$key"): $out" >>"$T/attacks.log"
    [[ "$out" == *"$expected"* ]] || fail "attack $* with $(basename "$key"): want '$expected', got: $out"
}
PERM="10 operation not permitted"

# A mount's key used for admin messages.
attack "$KEYS/mount.key" "$PERM" throttle "$address" 1
attack "$KEYS/mount.key" "$PERM" retire "$address" "$ino" 0 "$version"
attack "$KEYS/mount.key" "$PERM" pull "$other" "$ino" 0 "$version" "$address"
attack "$KEYS/mount.key" "$PERM" remove "$meta" "$node"
attack "$KEYS/mount.key" "$PERM" heartbeat "$meta" "$node" "tcp://127.0.0.1:9"
# A mount key dropping a replica of a file it does not hold open (REPLICA_DROP
# is a mount's own failed write's; meta checks the sender's session).
attack "$KEYS/mount.key" "$PERM" drop "$meta" "$ino" 0 "$node" "$version"
# The admin key (and a datanode's) on the namespace and the tiles: no uid
# or gid from anything but a mount key, no tile bytes but a mount's or a datanode's.
attack "$KEYS/admin.key" "$PERM" chmod "$meta" "$ino" 777 4242
attack "$KEYS/node2.key" "$PERM" chmod "$meta" "$ino" 777 4242
attack "$KEYS/admin.key" "$PERM" write "$address" "$ino" 0 "$version"
attack "$KEYS/admin.key" "$PERM" read "$address" "$ino" 0 "$version"
attack "$KEYS/node2.key" "$PERM" retire "$address" "$ino" 0 "$version"
attack "$KEYS/node2.key" "$PERM" throttle "$address" 1
# A stolen node id: a datanode key of the cluster, but not the one node registered with.
run_tool keys add --state "$STATE" --role datanode thief || fail "tessera keys add thief failed"
sleep 1 # the daemons look at known_keys twice a second
attack "$KEYS/thief.key" "cannot be taken over" heartbeat "$meta" "$node" "tcp://127.0.0.1:9"
# The admin's own messages, validated: an absurd throttle, a pull from no datanode.
attack "$KEYS/admin.key" "6 invalid argument" throttle "$address" 1
attack "$KEYS/admin.key" "pull 0 " pull "$other" "$ino" 0 "$version" "tcp://127.0.0.1:9"
wait_for 10 "the pull from a non-datanode to be refused" \
    bash -c "TESSERA_KEY='$KEYS/admin.key' '$CLIENT_HELPER' attack pull '$other' '$ino' 0 '$version' \
        tcp://127.0.0.1:9 | grep -q 'not the address of a datanode'"
# A revoked key.
run_tool keys add --state "$STATE" --role mount gone || fail "tessera keys add gone failed"
run_tool keys revoke --state "$STATE" gone || fail "tessera keys revoke gone failed"
sleep 1
attack "$KEYS/gone.key" "silent" chmod "$meta" "$ino" 777 4242

# The refusals are logged with the key.
grep -q "refused NODE_THROTTLE from key mount:mount at" "$STATE"/logs/node*.log ||
    fail "no datanode logged the mount key's NODE_THROTTLE"
grep -q "refused SETATTR from key admin:admin at" "$STATE/logs/meta.log" ||
    fail "meta did not log the admin key's SETATTR"
grep -q "refused a heartbeat: .* came with key datanode:thief, but node $node registered with key datanode:" \
    "$STATE/logs/meta.log" || fail "meta did not log the stolen node id"

# The local tile stream: another uid is closed unserved; this one (root)
# is answered, and served with the tile token meta gives the mount key.
out=$(TESSERA_KEY=$KEYS/mount.key "$CLIENT_HELPER" stream "$address" 65534 "$ino" 0 "$version")
[ "$out" = closed ] || fail "the tile stream served uid 65534 (or: $out)"
out=$(TESSERA_KEY=$KEYS/mount.key "$CLIENT_HELPER" stream "$address" "$(id -u)" "$ino" 0 "$version")
[ "$out" = "answered $PERM" ] || fail "the tile stream served a read without a tile token: $out"
# The token is the first holder's, which may be another replica than node's.
read -r token_node token_version expiry hex < <(TESSERA_KEY=$KEYS/mount.key "$CLIENT_HELPER" \
    token "$meta" "$ino" 0) || fail "no tile token for the mount key"
token_address=$(awk -v id="$token_node" '$1 == id { gsub(/"/, "", $2); print $2 }' "$T/nodes.before")
out=$(TESSERA_KEY=$KEYS/mount.key "$CLIENT_HELPER" stream "$token_address" "$(id -u)" "$ino" 0 \
    "$token_version" "$expiry" "$hex")
[ "$out" = served ] || fail "the tile stream did not serve the datanode's own uid its token's read: $out"
grep -q "tile stream: refused a local connection from process [0-9]* of uid 65534" \
    "$STATE"/logs/node*.log || fail "no datanode logged the other uid's stream connection"
# One process takes what it may of the slots; a second mount still gets its own.
TESSERA_KEY=$KEYS/mount.key "$CLIENT_HELPER" hog "$address" 200 30 >"$T/hog.out" 2>&1 &
HOG_PID=$!
IT_PIDS+=("$HOG_PID")
wait_for 10 "the hog to hold its connections" grep -q '^held' "$T/hog.out"
held=$(sed -n 's/^held //p' "$T/hog.out")
[ "$held" -lt 200 ] && [ "$held" -ge 64 ] || fail "one process holds $held of 200 stream connections"
mount_second "$T/mnt2"
drop_file_cache "$T/mnt2/secret"
got=$(sha256sum <"$T/mnt2/secret" | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "the second mount reads other bytes"
fusermount3 -u "$T/mnt2" || fail "unmount of the second mount failed"
wait "$MOUNT2_PID" 2>/dev/null || true
read -r local _ < <(sed -n 's/.*connections: \([0-9]*\) local, \([0-9]*\) TCP.*/\1 \2/p' \
    "$T/mount2.log" | tail -n 1)
[ -n "$local" ] && [ "$local" -gt 0 ] ||
    fail "the second mount got no local stream connection while one process held $held"
it_stop_pid "$HOG_PID"

# Nothing changed: bytes, mode, owner, the node list; every daemon up; the mount serves.
assert_daemons_alive
node_facts >"$T/nodes.after"
diff "$T/nodes.before" "$T/nodes.after" >"$T/nodes.diff" ||
    fail "the node list changed: $(cat "$T/nodes.diff")"
[ "$(stat -c '%a %u %g' "$MNT/secret")" = "600 0 0" ] ||
    fail "the file's mode or owner changed: $(stat -c '%a %u %g' "$MNT/secret")"
drop_file_cache "$MNT/secret"
got=$(sha256sum <"$MNT/secret" | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "the file's bytes changed"
# Tile 0 is not retired: a write to it lands and reads back.
printf 'still-writable' | dd of="$MNT/secret" bs=1 seek=100 conv=notrunc status=none ||
    fail "writing tile 0 failed"
sync "$MNT/secret"
drop_file_cache "$MNT/secret"
[ "$(dd if="$MNT/secret" bs=1 skip=100 count=14 status=none)" = still-writable ] ||
    fail "the write to tile 0 did not read back"
log "$(wc -l <"$T/attacks.log") attacks refused"

# Exports (meta's DATA/exports, read again when it changes): a mount with a
# read-only export reads but changes nothing (EROFS); the others go on.
printf 'mount2 / ro\n* / rw\n' >"$STATE/meta/exports"
wait_for 10 "meta to read its exports" grep -q 'exports: 2 rules from' "$STATE/logs/meta.log"
mount_second "$T/mnt2"
want=$(sha256sum <"$MNT/secret" | cut -d' ' -f1) # with tile 0's write above
got=$(sha256sum <"$T/mnt2/secret" | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "the read-only mount reads other bytes"
! touch "$T/mnt2/new" 2>"$T/rofs.err" || fail "a read-only export created a file"
grep -q 'Read-only file system' "$T/rofs.err" || fail "not EROFS: $(cat "$T/rofs.err")"
! chmod 777 "$T/mnt2/secret" 2>/dev/null || fail "a read-only export changed a mode"
! rm "$T/mnt2/secret" 2>/dev/null || fail "a read-only export removed a file"
! echo x >>"$T/mnt2/secret" 2>/dev/null || fail "a read-only export appended to a file"
[ "$(stat -c '%a %s' "$MNT/secret")" = "600 $(stat -c %s "$T/data")" ] ||
    fail "the read-only mount changed the file: $(stat -c '%a %s' "$MNT/secret")"
echo rw >"$MNT/rw-still" && [ "$(cat "$MNT/rw-still")" = rw ] ||
    fail "the read-write mount no longer writes"
fusermount3 -u "$T/mnt2" || fail "unmount of the read-only mount failed"
wait "$MOUNT2_PID" 2>/dev/null || true
rm "$STATE/meta/exports"
cluster_down
log "ok"
