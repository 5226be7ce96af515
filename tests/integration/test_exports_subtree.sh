#!/usr/bin/env bash
# Subtree exports (issue 30, exports in the spirit of MooseFS's
# mfsexports.cfg): with `alice /projects/a rw` and `bob /projects/b
# ro,root_squash` in meta's exports, alice's mount shows /projects/a as its
# root and writes there; her key cannot reach /projects/b by inode (raw
# GETATTR, LOOKUP, TILE_MAP and REPLICA_DROP of inodes outside, sent with
# her key from client_helper, get EPERM) nor drop a replica of her own
# file she does not hold open; a file linked both in /projects/b and
# /projects/a is hers through its link in a. Bob's mount shows
# /projects/b, reads it and changes nothing (EROFS). Afterwards the files
# outside alice's subtree are as before and every daemon is up.
# Read tokens: alice's key asks the datanode holding tile 0 of
# /projects/b/secret for its bytes by TILE_READ and over the local tile
# stream, with no token and with the token of her own file's tile: every
# one refused, no byte served (her own token on her own tile is served).
# Tokens live 4 s here (TESSERA_TILE_TOKEN_LIFETIME_MS, in every daemon):
# a read of hers after that presents an expired one, which the datanode
# answers STALE, and her mount asks meta again and reads the right bytes.
source "$(dirname "$0")/lib.sh"

[ -n "${CLIENT_HELPER:-}" ] && [ -x "$CLIENT_HELPER" ] ||
    fail "CLIENT_HELPER is not set to the built client_helper (run through meson test)"

export TESSERA_TILE_TOKEN_LIFETIME_MS=4000
cluster_up
KEYS=$STATE/keys
meta=$(meta_endpoint)
mkdir -p "$MNT/projects/a" "$MNT/projects/b"
echo mine >"$MNT/projects/a/mine"
head -c $((1048576 + 99)) /dev/urandom >"$MNT/projects/b/secret"
head -c $((24 * 1048576 + 7)) /dev/urandom >"$MNT/projects/a/big"
echo both >"$MNT/projects/b/shared"
ln "$MNT/projects/b/shared" "$MNT/projects/a/shared"
sync
want=$(sha256sum <"$MNT/projects/b/secret" | cut -d' ' -f1)
secret=$(stat -c %i "$MNT/projects/b/secret")
b=$(stat -c %i "$MNT/projects/b")
mine=$(stat -c %i "$MNT/projects/a/mine")
shared=$(stat -c %i "$MNT/projects/a/shared")
read -r node version _ < <("$CLIENT_HELPER" map "$meta" "$secret" 0 "$(hostname)") ||
    fail "no map of tile 0 of the secret file"
read -r mine_node mine_version _ < <("$CLIENT_HELPER" map "$meta" "$mine" 0 "$(hostname)") ||
    fail "no map of tile 0 of alice's file"
# address NODE_ID: the datanode's ZeroMQ address.
address() {
    "$TESSERA_TOOL" status --state "$STATE" --json | tr '{' '\n' |
        sed -n "s/.*\"id\": $1, .*\"address\": \"\([^\"]*\)\".*/\1/p"
}
address=$(address "$node")
[ -n "$address" ] || fail "no address of datanode $node"
big_want=$(sha256sum <"$MNT/projects/a/big" | cut -d' ' -f1)

# The cluster's own mount keeps everything (its key is "mount").
printf 'alice /projects/a rw\nbob /projects/b ro,root_squash\nmount / rw\n' >"$STATE/meta/exports"
wait_for 10 "meta to read its exports" grep -q 'exports: 3 rules from' "$STATE/logs/meta.log"

MOUNT2_KEY=alice mount_second "$T/alice"
ALICE_PID=$MOUNT2_PID
[ "$(ls "$T/alice" | tr '\n' ' ')" = "big mine shared " ] ||
    fail "alice's root is not /projects/a: $(ls "$T/alice")"
[ "$(cat "$T/alice/mine")" = mine ] || fail "alice does not read her file"
[ "$(cat "$T/alice/shared")" = both ] || fail "alice does not read the file linked into a"
echo new >"$T/alice/new" || fail "alice cannot create in her export"
sync "$T/alice/new"
[ "$(cat "$MNT/projects/a/new")" = new ] || fail "alice's new file is not in /projects/a"
[ "$(stat -c %i "$T/alice/.")" = "$(stat -c %i "$MNT/projects/a")" ] ||
    fail "alice's root is not the inode of /projects/a"

# attack EXPECTED ATTACK ARGS...: one raw request with alice's key.
PERM="10 operation not permitted"
attack() {
    local expected=$1 out
    shift
    out=$(TESSERA_KEY=$KEYS/alice.key "$CLIENT_HELPER" attack "$@" 2>&1) ||
        fail "client_helper attack $* failed: $out"
    echo "$out" >>"$T/attacks.log"
    [[ "$out" == *"$expected"* ]] || fail "alice's attack $*: want '$expected', got: $out"
}
attack "$PERM" getattr "$meta" "$secret"
attack "$PERM" getattr "$meta" "$b"
attack "$PERM" lookup "$meta" "$b" secret
attack "$PERM" tilemap "$meta" "$secret" 0
attack "$PERM" drop "$meta" "$secret" 0 "$node" "$version"
attack "not under /projects/a" getattr "$meta" "$secret"
# Her own file, not held open by her: no replica of it dropped either.
attack "$PERM" drop "$meta" "$mine" 0 "$mine_node" "$mine_version"
# What is hers is answered: her root (inode 1 is /projects/a), `..` of it, the shared file.
attack "getattr 0 " getattr "$meta" 1
attack "lookup 0 " lookup "$meta" 1 ..
attack "getattr 0 " getattr "$meta" "$shared"
grep -q "refused GETATTR from mount:alice: inode $secret is not under /projects/a" \
    "$STATE/logs/meta.log" || fail "meta did not log alice's refused GETATTR"

# The secret's tile straight from its datanode: no token, her own file's token.
attack "$PERM" read "$address" "$secret" 0 "$version"
attack "$PERM" tokenread "$meta" "$mine" 0 "$address" "$secret" "$version"
# stream ARGS...: client_helper stream with alice's key, as this uid (the datanode's).
stream() { TESSERA_KEY=$KEYS/alice.key "$CLIENT_HELPER" stream "$@"; }
read -r token_node token_version expiry hex < <(TESSERA_KEY=$KEYS/alice.key "$CLIENT_HELPER" token "$meta" "$mine" 0) ||
    fail "no tile token of alice's own file"
[ "$hex" != - ] || fail "meta gave alice no tile token"
out=$(stream "$address" "$(id -u)" "$secret" 0 "$version")
[ "$out" = "answered $PERM" ] || fail "the tile stream answered a read without a token: $out"
out=$(stream "$address" "$(id -u)" "$secret" 0 "$version" "$expiry" "$hex")
[ "$out" = "answered $PERM" ] || fail "the tile stream answered a read with another tile's token: $out"
out=$(stream "$(address "$token_node")" "$(id -u)" "$mine" 0 "$token_version" "$expiry" "$hex")
[ "$out" = served ] || fail "the tile stream did not serve alice's token on her own tile: $out"
grep -q "refused a read of tile $secret\.0\.$version from key mount:alice" "$STATE"/logs/node*.log ||
    fail "no datanode logged alice's TILE_READ of the secret's tile"
grep -q "refused a stream read of tile $secret\.0\.$version from a tile stream client" \
    "$STATE"/logs/node*.log || fail "no datanode logged the stream read of the secret's tile"

# A read of hers whose cached tokens expired: STALE, meta asked again, the
# right bytes. One open only (an open forgets the cached tile locations and
# their tokens); the kernel's cache dropped on that descriptor, and the
# file (24 tiles) larger than the mount's 16-tile read cache, so the second
# pass reads from the datanodes with the first pass's tokens.
got=$(python3 - "$T/alice/big" <<'PY'
import hashlib, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
def digest():
    h, at = hashlib.sha256(), 0
    while at < size:
        chunk = os.pread(fd, 1 << 20, at)
        if not chunk:
            break
        h.update(chunk)
        at += len(chunk)
    return h.hexdigest()
first = digest()
time.sleep(5)  # the 4 s tokens, and their 0.4 s of clock skew, are over
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
print(first, digest())
PY
) || fail "alice's reads of her big file failed"
[ "$got" = "$big_want $big_want" ] || fail "alice read other bytes of her big file (before, after expiry): $got"
grep -q "came with an expired tile token: answered STALE" "$STATE"/logs/node*.log ||
    fail "no datanode saw alice's expired tile token (the read did not test expiry)"

fusermount3 -u "$T/alice" || fail "unmount of alice's mount failed"
wait "$ALICE_PID" 2>/dev/null || true

MOUNT2_KEY=bob mount_second "$T/bob"
[ "$(ls "$T/bob" | tr '\n' ' ')" = "secret shared " ] ||
    fail "bob's root is not /projects/b: $(ls "$T/bob")"
got=$(sha256sum <"$T/bob/secret" | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "bob reads other bytes"
! touch "$T/bob/new" 2>"$T/rofs.err" || fail "bob's read-only export created a file"
grep -q 'Read-only file system' "$T/rofs.err" || fail "not EROFS: $(cat "$T/rofs.err")"
! echo x >>"$T/bob/secret" 2>/dev/null || fail "bob's read-only export appended to a file"
! rm "$T/bob/shared" 2>/dev/null || fail "bob's read-only export removed a file"
fusermount3 -u "$T/bob" || fail "unmount of bob's mount failed"
wait "$MOUNT2_PID" 2>/dev/null || true

# Nothing outside alice's subtree changed; everything is up; the full mount still writes.
assert_daemons_alive
drop_file_cache "$MNT/projects/b/secret"
got=$(sha256sum <"$MNT/projects/b/secret" | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "the secret file's bytes changed"
[ "$(ls "$MNT/projects/b" | tr '\n' ' ')" = "secret shared " ] ||
    fail "/projects/b changed: $(ls "$MNT/projects/b")"
[ "$(stat -c %h "$MNT/projects/b/shared")" = 2 ] || fail "the shared file's links changed"
echo rw >"$MNT/rw-still" && [ "$(cat "$MNT/rw-still")" = rw ] || fail "the full mount no longer writes"
log "$(wc -l <"$T/attacks.log") raw requests checked"
rm "$STATE/meta/exports"
cluster_down
log "ok"
