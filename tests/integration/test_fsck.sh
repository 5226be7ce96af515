#!/usr/bin/env bash
# `tessera fsck` (issue 29) on a 4-node cluster with copies=2:
#  - a fresh tree is clean (exit 0);
#  - replica files deleted from datanodes' disks are named, with their
#    files, as missing (exit 4); a copies=1 file whose only replica was
#    deleted is LOST, and named;
#  - `fsck --repair` drops the missing replicas of tiles that have a good
#    one (exit 4: the lost tile cannot be repaired), meta's repairer makes
#    them again, and fsck of the repairable files is then clean (exit 0),
#    every byte as written.
source "$(dirname "$0")/lib.sh"

cluster_up

fsck() { "$TESSERA_TOOL" fsck "$@"; }
health_ok() { "$TESSERA_TOOL" health --state "$STATE" >/dev/null; }

mkdir "$MNT/tree" "$MNT/scratch" || fail "mkdir failed"
setfattr -n user.tessera.layout -v "copies=1" "$MNT/scratch" || fail "setfattr copies=1 failed"
declare -A source
for name in a b c; do
    source[$name]=$(random_file 5M)
    cp "${source[$name]}" "$MNT/tree/$name" || fail "cp $name failed"
done
lone=$(random_file 2M)
cp "$lone" "$MNT/scratch/lone" || fail "cp lone failed"
sync -f "$MNT/tree/a"
wait_for 30 "health HEALTHY after the writes" health_ok
# Meta knows a tile has bytes once a holder's heartbeat reported its file.
all_tiles_reported() {
    local total
    total=$("$TESSERA_TOOL" status --state "$STATE" --json |
        python3 -c "import json,sys; print(sum(n['tiles'] for n in json.load(sys.stdin)))")
    [ "$total" -ge 32 ]
}
wait_for 30 "the datanodes to report their 32 tile files" all_tiles_reported

rc=0
fsck "$MNT" >"$T/fsck-clean.txt" 2>&1 || rc=$?
cat "$T/fsck-clean.txt" >>"$T/tool.log"
[ "$rc" = 0 ] || fail "fsck of a fresh tree exited $rc: $(cat "$T/fsck-clean.txt")"
grep -q "4 files, 17 tiles, 32 replicas" "$T/fsck-clean.txt" ||
    fail "fsck counted otherwise: $(tail -1 "$T/fsck-clean.txt")"

# Delete one replica of tile 1 of a and of tile 3 of b, and lone's tile 0.
delete_one_replica() {
    local ino=$1 tile=$2 files
    files=$(compgen -G "$STATE/node*/tiles/$((ino % 256))/$ino.$tile.*" | grep -v '\.crc$' | head -n 1)
    [ -n "$files" ] || fail "no replica file of inode $ino tile $tile on any datanode"
    rm -f "$files"
    echo "$files"
}
ino_a=$(stat -c %i "$MNT/tree/a")
ino_b=$(stat -c %i "$MNT/tree/b")
ino_lone=$(stat -c %i "$MNT/scratch/lone")
delete_one_replica "$ino_a" 1 >/dev/null
delete_one_replica "$ino_b" 3 >/dev/null
delete_one_replica "$ino_lone" 0 >/dev/null

rc=0
fsck "$MNT" >"$T/fsck-bad.txt" 2>&1 || rc=$?
cat "$T/fsck-bad.txt" >>"$T/tool.log"
[ "$rc" = 4 ] || fail "fsck with replicas deleted exited $rc, expected 4: $(cat "$T/fsck-bad.txt")"
grep -q "/tree/a: tile 1: the replica on datanode [0-9]* (version [0-9]*) is missing" "$T/fsck-bad.txt" ||
    fail "fsck did not name a's missing replica: $(cat "$T/fsck-bad.txt")"
grep -q "/tree/b: tile 3: the replica on datanode [0-9]* (version [0-9]*) is missing" "$T/fsck-bad.txt" ||
    fail "fsck did not name b's missing replica"
grep -q "/scratch/lone: tile 0: LOST" "$T/fsck-bad.txt" || fail "fsck did not name lone's lost tile"
grep -q "3 missing, 0 corrupt, 2 tiles under-replicated, 0 unavailable, 1 lost" "$T/fsck-bad.txt" ||
    fail "fsck's summary: $(tail -1 "$T/fsck-bad.txt")"

rc=0
fsck "$MNT/tree" --repair >"$T/fsck-repair.txt" 2>&1 || rc=$?
cat "$T/fsck-repair.txt" >>"$T/tool.log"
[ "$rc" = 1 ] || fail "fsck --repair of tree exited $rc, expected 1: $(cat "$T/fsck-repair.txt")"
grep -q "2 bad replicas dropped for repair" "$T/fsck-repair.txt" ||
    fail "fsck --repair: $(tail -1 "$T/fsck-repair.txt")"

tree_clean() { fsck "$MNT/tree" >/dev/null 2>&1; }
wait_for 60 "the repairer to make the dropped replicas again (fsck of tree clean)" tree_clean
for name in a b c; do
    drop_file_cache "$MNT/tree/$name"
    cmp "${source[$name]}" "$MNT/tree/$name" || fail "$name differs after the repair"
done
rc=0
fsck "$MNT/scratch" --repair >"$T/fsck-lost.txt" 2>&1 || rc=$?
[ "$rc" = 4 ] || fail "fsck --repair of a lost tile exited $rc, expected 4"
log "fsck: clean, then 3 replicas missing named, repaired, lone's lost tile named"
cluster_down
