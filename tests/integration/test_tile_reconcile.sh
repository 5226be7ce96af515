#!/usr/bin/env bash
# A datanode deletes the tile files meta maps nowhere, once they are older
# than its --reclaim-grace, and nothing else (datanode/reclaim.h). On a
# small cluster (one meta, one datanode with --reclaim-grace 120
# --reclaim-every 1, one mount) with two real files, this plants in the
# datanode's tile directory, as a crashed writer or a lost garbage record
# would leave them:
#   old (mtime two hours ago): two tiles of a deleted file's inode, and a
#     stale version of a live tile: they must go;
#   old, but of an inode meta never issued (a meta on the wrong store must
#     not make a datanode delete what it does not know): must stay;
#   young (mtime now), unmapped alike: must stay, a pass after the old ones
#     went;
# and makes the real files' tiles as old, so that only the map keeps them;
# then it checks every tile of the real files is still there and both files
# read back byte-exact through a fresh mount, and that `tessera node stats`
# counts the deletions. Last, with meta stopped (SIGSTOP), a new old
# unmapped file stays until meta answers again.
# On a datanode without --reclaim-grace the old files are never deleted and
# the test fails at its deadline.
source "$(dirname "$0")/lib.sh"

SMALL=$T/small
SMALL_MNT=$T/mnt-small
GRACE_S=120

reclaim_args=()
if "$TESSERA_DATANODE" --help 2>/dev/null | grep -q -- '--reclaim-grace'; then
    reclaim_args=(--reclaim-grace "$GRACE_S" --reclaim-every 1)
else
    log "this tessera-datanode has no --reclaim-grace: starting it without (the test will fail)"
fi
small_cluster_up "$SMALL" "${reclaim_args[@]}"
small_mount "$SMALL" "$SMALL_MNT"
TILES=$SMALL/node1/tiles
NODE_LOG=$SMALL/node1.log

first=$(random_file 3M)
wait_for 15 "a 3 MiB write to succeed on the fresh small cluster" \
    bash -c "cp '$first' '$SMALL_MNT/a' && sync '$SMALL_MNT/a'"
second=$(random_file 5M)
cp "$second" "$SMALL_MNT/b" && sync "$SMALL_MNT/b" || fail "writing b failed"
doomed=$(random_file 2M)
cp "$doomed" "$SMALL_MNT/gone" && sync "$SMALL_MNT/gone" || fail "writing gone failed"

ino_a=$(stat -c %i "$SMALL_MNT/a")
ino_b=$(stat -c %i "$SMALL_MNT/b")
ino_gone=$(stat -c %i "$SMALL_MNT/gone")
rm "$SMALL_MNT/gone"

# tile_file INO TILE: the one file of that tile in the datanode (its path).
tile_file() {
    local found
    found=$(find "$TILES/$(($1 % 256))" -name "$1.$2.*" ! -name '*.crc' -print)
    [ "$(printf '%s\n' "$found" | grep -c .)" = 1 ] ||
        fail "expected one file of tile $2 of inode $1, found: ${found:-none}"
    echo "$found"
}
version_of() { echo "${1##*.}"; }

wait_for 30 "the deleted file's tiles to be deleted (garbage queue)" \
    bash -c "[ -z \"\$(find '$TILES/$((ino_gone % 256))' -name '$ino_gone.*')\" ]"

version_a0=$(version_of "$(tile_file "$ino_a" 0)")
version_b0=$(version_of "$(tile_file "$ino_b" 0)")
((version_a0 < version_b0)) || fail "a's tile 0 (version $version_a0) was not written before b's ($version_b0)"
real_tiles=()
for tile in 0 1 2; do real_tiles+=("$(tile_file "$ino_a" "$tile")"); done
for tile in 0 1 2 3 4; do real_tiles+=("$(tile_file "$ino_b" "$tile")"); done
# Old as well, so that only meta's map keeps them.
touch -d "2 hours ago" "${real_tiles[@]}"

# plant PATH MTIME: a 64 KiB tile file with that mtime ("" = now).
plant() {
    head -c 64K /dev/urandom >"$1"
    [ -z "$2" ] || touch -d "$2" "$1"
}
bucket_gone=$TILES/$((ino_gone % 256))
bucket_b=$TILES/$((ino_b % 256))
unissued_ino=$((1 << 40))
old_unmapped=("$bucket_gone/$ino_gone.0.$version_b0" "$bucket_gone/$ino_gone.1.$version_a0"
    "$bucket_b/$ino_b.0.$version_a0")
kept=("$TILES/$((unissued_ino % 256))/$unissued_ino.0.$version_a0"
    "$bucket_gone/$ino_gone.2.$version_b0" "$bucket_b/$ino_b.1.$version_a0")
for file in "${old_unmapped[@]}" "${kept[0]}"; do plant "$file" "2 hours ago"; done
for file in "${kept[@]:1}"; do plant "$file" ""; done
log "planted ${#old_unmapped[@]} old unmapped tile files, 1 old of an unissued inode, 2 young"

passes_before=$(grep -c 'reclaim: pass' "$NODE_LOG" || true)
all_gone() {
    local file
    for file in "${old_unmapped[@]}"; do [ ! -e "$file" ] || return 1; done
}
wait_for 60 "the old unmapped tile files to be deleted (none of ${old_unmapped[*]##*/} may stay)" \
    all_gone
log "old unmapped tile files deleted"
# A whole pass more, begun after the deletions: it must keep the rest too.
passes_after=$(grep -c 'reclaim: pass' "$NODE_LOG" || true)
wait_for 30 "two more reclaim passes" \
    bash -c "(( \$(grep -c 'reclaim: pass' '$NODE_LOG') >= $passes_after + 2 ))"
for file in "${kept[@]}"; do
    [ -e "$file" ] || fail "$file was deleted: it is young or its inode was never issued"
done
for file in "${real_tiles[@]}"; do
    [ -e "$file" ] || fail "$file, a tile of a real file, was deleted"
done
grep -q 'reclaim: deleted .* tile file' "$NODE_LOG" || fail "no deletion count in the datanode's log"
grep -q 'never issued' "$NODE_LOG" || fail "no warning about the unissued inode in the datanode's log"
grep 'reclaim: pass' "$NODE_LOG" | tail -n 1 | grep -q ' 8 mapped here' ||
    fail "the last pass did not find the 8 tiles of a and b mapped"

stats=$("$TESSERA_TOOL" node stats 1 --meta "$SMALL_META" --json 2>&1) || fail "node stats failed: $stats"
[[ $stats == *'"tiles_reclaimed": 3, "bytes_reclaimed": 196608,'* ]] ||
    fail "node stats does not count the 3 reclaimed tile files of 64 KiB: $stats"
log "passes: $passes_before before planting, $(grep -c 'reclaim: pass' "$NODE_LOG") at the end; " \
    "$(grep 'reclaim: pass' "$NODE_LOG" | tail -n 1 | sed 's/.*reclaim: //')"

kill -0 "$SMALL_NODE_PID" 2>/dev/null || fail "the datanode died"
FRESH=$T/mnt-fresh
small_mount "$SMALL" "$FRESH"
cmp "$first" "$FRESH/a" || fail "a differs after reclaiming"
cmp "$second" "$FRESH/b" || fail "b differs after reclaiming"
[ ! -e "$FRESH/gone" ] || fail "the deleted file is back"

# Meta unreachable (stopped): an old unmapped file stays while it is, and
# goes once meta answers again.
meta_pid=${IT_PIDS[0]}
tr '\0' ' ' <"/proc/$meta_pid/cmdline" | grep -q tessera-meta || fail "pid $meta_pid is not tessera-meta"
kill -STOP "$meta_pid"
orphan=$bucket_gone/$ino_gone.3.$version_b0
plant "$orphan" "2 hours ago"
wait_for 30 "the reclaimer to find meta unreachable" grep -q 'reclaim: cannot ask meta' "$NODE_LOG"
wait_for 30 "a pass that left files unchecked" grep -Eq 'reclaim: pass .* [1-9][0-9]* unchecked' "$NODE_LOG"
[ -e "$orphan" ] || { kill -CONT "$meta_pid"; fail "$orphan was deleted while meta did not answer"; }
kill -CONT "$meta_pid"
wait_for 60 "$orphan to be deleted once meta answers again" test ! -e "$orphan"
log "nothing deleted while meta was stopped; deleted once it answered"

log "ok"
