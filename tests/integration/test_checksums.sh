#!/usr/bin/env bash
# End-to-end checksums (with copies=1): one random byte flipped in several
# tile files on the datanodes' disks is never served. Reads of an affected tile fail with
# EIO (through the page cache, with O_DIRECT, over the tile stream and over
# ZeroMQ); every other tile of those files and every other file reads right.
# `tessera scrub` names exactly the flipped tile files and exits 1 (0 on a
# clean cluster), the datanodes report them to meta, whose log names them
# and whose NODE_LIST counts them (`tessera status --json`).
source "$(dirname "$0")/lib.sh"

cluster_up
# One replica per tile: this test is about detection, where a bad block has
# no other replica to fail over to (test_scrub_repair covers copies=2).
setfattr -n user.tessera.layout -v "copies=1" "$MNT" || fail "setfattr copies=1 on the mount failed"
meta_log=$STATE/logs/meta.log

# expect_eio WHAT COMMAND...: COMMAND fails with EIO within 30 s.
expect_eio() {
    local what=$1 rc=0
    shift
    timeout -k 5 30 "$@" >/dev/null 2>"$T/eio.err" || rc=$?
    [ "$rc" -lt 124 ] || fail "$what hung"
    [ "$rc" != 0 ] || fail "$what succeeded: a corrupt tile was served"
    grep -q 'Input/output error' "$T/eio.err" ||
        fail "$what failed with '$(cat "$T/eio.err")', expected EIO"
}

# tile_file_of FILE TILE: the one tile file (not its .crc) holding TILE of FILE.
tile_file_of() {
    local ino files=()
    ino=$(stat -c %i "$1")
    shopt -s nullglob
    for f in "$STATE"/node*/tiles/$((ino % 256))/"$ino.$2".*; do
        case $f in *.crc) ;; *) files+=("$f") ;; esac
    done
    shopt -u nullglob
    [ "${#files[@]}" = 1 ] || fail "expected one tile file for tile $2 of $1, found ${#files[@]}"
    echo "${files[0]}"
}

# A clean cluster scrubs clean.
files=()
for i in 0 1 2 3 4 5; do
    src=$(random_file 3M)
    cp "$src" "$MNT/f$i" || fail "cp into the mount failed"
    files+=("$src")
done
sync "$MNT"/f* || fail "fsync failed"
timeout -k 5 120 "$TESSERA_TOOL" scrub --state "$STATE" >"$T/scrub-clean.out" 2>&1 ||
    fail "tessera scrub of a clean cluster failed: $(cat "$T/scrub-clean.out")"
grep -q '0 corrupt tile files found' "$T/scrub-clean.out" ||
    fail "tessera scrub of a clean cluster said: $(cat "$T/scrub-clean.out")"

# Flip one random byte in one random tile of f0, f2 and f4.
declare -A flipped_tile flipped_at flipped_path
expected=()
for i in 0 2 4; do
    tile=$((RANDOM % 3))
    path=$(tile_file_of "$MNT/f$i" $tile)
    at=$(python3 - "$path" <<'PY') || fail "cannot flip a byte of $path"
import os, random, sys
path = sys.argv[1]
size = os.path.getsize(path)
at = random.randrange(size)
with open(path, "r+b") as f:
    f.seek(at)
    byte = f.read(1)[0]
    f.seek(at)
    f.write(bytes([byte ^ (1 << random.randrange(8))]))
print(at)
PY
    flipped_tile[$i]=$tile
    flipped_at[$i]=$at
    flipped_path[$i]=$path
    expected+=("$(basename "$path")")
    log "f$i: flipped byte $at of tile $tile ($(basename "$path"))"
done
for i in 0 1 2 3 4 5; do
    drop_file_cache "$MNT/f$i"
done
# The flipped tiles of f0 and f2 leave the datanodes' page cache too: their
# datanode then reads them past it (datanode/directread.h), f4's through it.
for i in 0 2; do
    drop_file_cache "${flipped_path[$i]}"
done

for i in 0 2 4; do
    tile=${flipped_tile[$i]}
    byte=$((tile * 1048576 + ${flipped_at[$i]}))
    # A read may stop short before the bad block (a short count, no wrong
    # byte); one that reaches it fails.
    expect_eio "dd of the corrupt tile of f$i" \
        dd if="$MNT/f$i" of=/dev/null bs=1M skip="$tile" count=1 iflag=fullblock
    expect_eio "O_DIRECT dd of the corrupt tile of f$i" \
        dd if="$MNT/f$i" of=/dev/null bs=1M skip="$tile" count=1 iflag=direct,fullblock
    expect_eio "read of the flipped byte of f$i" \
        dd if="$MNT/f$i" of=/dev/null bs=4096 skip=$((byte / 4096)) count=1
    expect_eio "O_DIRECT read of the flipped byte of f$i" \
        dd if="$MNT/f$i" of=/dev/null bs=4096 skip=$((byte / 4096)) count=1 iflag=direct
    expect_eio "cat of f$i" cat "$MNT/f$i"
    # Never a wrong byte: every other tile reads right.
    for other in 0 1 2; do
        [ "$other" = "$tile" ] && continue
        dd if="$MNT/f$i" of="$SHM/got" bs=1M skip="$other" count=1 iflag=direct status=none ||
            fail "read of intact tile $other of f$i failed"
        dd if="${files[$i]}" of="$SHM/want" bs=1M skip="$other" count=1 status=none
        cmp -s "$SHM/want" "$SHM/got" || fail "intact tile $other of f$i reads wrong bytes"
    done
done
for i in 1 3 5; do
    cmp "${files[$i]}" "$MNT/f$i" || fail "untouched file f$i reads wrong"
done
# Over ZeroMQ only, from a second mount.
mount_second "$T/mnt2" --tile-streams 0
expect_eio "dd of the corrupt tile of f0 on a mount without streams" \
    dd if="$T/mnt2/f0" of=/dev/null bs=1M skip="${flipped_tile[0]}" count=1 iflag=fullblock
cmp "${files[1]}" "$T/mnt2/f1" || fail "untouched file f1 reads wrong on the second mount"

# The scrub names exactly the flipped files and exits 1.
rc=0
timeout -k 5 120 "$TESSERA_TOOL" scrub --state "$STATE" --max-mbps 200 >"$T/scrub.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "tessera scrub exited $rc with corrupt tiles, expected 1: $(cat "$T/scrub.out")"
grep -q '3 corrupt tile files found' "$T/scrub.out" || fail "tessera scrub said: $(cat "$T/scrub.out")"
for name in "${expected[@]}"; do
    grep -q "tile file $name " "$T/scrub.out" || fail "tessera scrub did not name $name: $(cat "$T/scrub.out")"
done
[ "$(grep -c '^corrupt:' "$T/scrub.out")" = 3 ] || fail "tessera scrub named other files: $(cat "$T/scrub.out")"

# Meta heard of them: its log names each, NODE_LIST counts them.
corrupt_counted() {
    timeout -k 5 60 "$TESSERA_TOOL" status --state "$STATE" --json >"$T/status.json" 2>&1 || return 1
    python3 -c 'import json, sys
nodes = json.load(open(sys.argv[1]))
sys.exit(0 if sum(n["corrupt_files"] for n in nodes) == 3 else 1)' "$T/status.json"
}
wait_for 20 "meta to count the 3 corrupt tile files" corrupt_counted
for name in "${expected[@]}"; do
    grep -q "tile file $name " "$meta_log" || fail "meta's log does not name $name"
done
timeout -k 5 60 "$TESSERA_TOOL" status --state "$STATE" >"$T/status.out" 2>&1 || fail "tessera status failed"
grep -q 'integrity: .* corrupt tile files reported; scrub' "$T/status.out" ||
    fail "tessera status shows no integrity line: $(cat "$T/status.out")"
assert_daemons_alive
log "ok"
