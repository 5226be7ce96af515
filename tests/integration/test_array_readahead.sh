#!/usr/bin/env bash
# Issue 34, item 2: a buffered reader of one quadrant of a 2-D array file
# (row segments read with pread, as a quadrant reader does) makes the
# datanodes serve that quadrant's tiles and hardly more. The kernel's
# read-ahead follows the file's bytes, and the bytes after each row
# segment belong to the next quadrant: before read-only array handles went
# past the page cache, such a reader pulled whole rows (over 2x its
# quadrant). The mount's own read-ahead follows the reader's stride down
# its block (readpath.c, array_read_ahead). A second mount with a machine
# name of its own and no tile streams reads as a remote host does; the
# datanodes' counters (tessera node stats) say what they served; a reader
# on the datanodes' machine loads its tiles over the local tile streams. Also: the
# bytes are right buffered, O_DIRECT and through a private mmap, and a
# shared mmap works on a mount with --array-direct 0.
source "$(dirname "$0")/lib.sh"

cluster_up
mount_second "$T/mnt2" --tile-streams 0 --machine far-away

ROWS=2048
COLS=1024
quadrant_bytes=$((ROWS * COLS * 4 / 4))
touch "$MNT/grid"
setfattr -n user.tessera.array -v "f32 ${ROWS}x${COLS} BLOCK,BLOCK mesh=2x2 threshold=128K" \
    "$MNT/grid" || fail "setfattr user.tessera.array failed"
source_file=$(random_file $((ROWS * COLS * 4)))
dd if="$source_file" of="$MNT/grid" bs=1M conv=fsync status=none || fail "dd into the array failed"


reader=$(dirname "$0")/quadrant_read.py

too_much=""
for quadrant in 0 3; do
    expected=$(python3 "$reader" "$source_file" "$quadrant" "$ROWS" "$COLS" 0)
    for direct in 0 1; do
        datanodes_reset_stats 1 2 3 4 # cluster_up starts 4
        drop_file_cache "$T/mnt2/grid"
        got=$(python3 "$reader" "$T/mnt2/grid" "$quadrant" "$ROWS" "$COLS" "$direct") ||
            fail "reading quadrant $quadrant (O_DIRECT $direct) failed"
        [ "$got" = "$expected" ] || fail "quadrant $quadrant (O_DIRECT $direct) read wrong bytes"
        served=$(datanodes_served_bytes 1 2 3 4)
        log "quadrant $quadrant, O_DIRECT $direct: the datanodes served $served bytes for its $quadrant_bytes"
        [ "$served" -ge "$quadrant_bytes" ] ||
            fail "quadrant $quadrant was read with only $served bytes served: the counters are off"
        [ "$served" -le $((quadrant_bytes * 105 / 100)) ] ||
            too_much+="quadrant $quadrant, O_DIRECT $direct: $served bytes; "
    done
done
[ -z "$too_much" ] ||
    fail "quadrant readers made the datanodes serve more than 1.05x their $quadrant_bytes-byte quadrant: $too_much"

# The whole file reads back right through the second mount, buffered and
# through a private mapping (a shared one needs FUSE_CAP_DIRECT_IO_ALLOW_MMAP).
cmp "$source_file" "$T/mnt2/grid" || fail "the array reads back wrong, buffered"
python3 - "$T/mnt2/grid" "$source_file" <<'PY' || fail "a private mapping of the array reads wrong bytes"
import mmap, sys
with open(sys.argv[1], "rb") as f, open(sys.argv[2], "rb") as src:
    mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    if mapped[:] != src.read():
        sys.exit("mapped bytes differ")
PY

# A shared mapping: past the page cache it works with libfuse 3.16 and fails
# loudly (ENODEV) before it, never with wrong bytes; with --array-direct 0
# the array stays in the page cache and a shared mapping works everywhere.
shared_map_check='
import errno, mmap, sys
with open(sys.argv[1], "rb") as f, open(sys.argv[2], "rb") as src:
    try:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        if e.errno == errno.ENODEV and sys.argv[3] == "may-refuse":
            print("refused")
            sys.exit(0)
        raise
    if mapped[:] != src.read():
        sys.exit("mapped bytes differ")
    print("mapped")
'
outcome=$(python3 -c "$shared_map_check" "$T/mnt2/grid" "$source_file" may-refuse) ||
    fail "a shared mapping of the array failed otherwise than ENODEV or read wrong bytes"
log "shared mapping past the page cache: $outcome"
mount_second "$T/mnt3" --array-direct 0
outcome=$(python3 -c "$shared_map_check" "$T/mnt3/grid" "$source_file" must-map) ||
    fail "with --array-direct 0 a shared mapping of the array failed or read wrong bytes"
fusermount3 -u "$T/mnt3" || fail "unmount of $T/mnt3 failed"
wait "$MOUNT2_PID" 2>/dev/null || true

# A reader on the datanodes' machine: its read-ahead loads whole tiles over
# the local tile streams, not ZeroMQ (whose CURVE encryption of every byte
# made local array readers CPU-bound); the mount's log at exit counts them.
mount_second "$T/mnt4"
expected=$(python3 "$reader" "$source_file" 1 "$ROWS" "$COLS" 0)
got=$(python3 "$reader" "$T/mnt4/grid" 1 "$ROWS" "$COLS" 1) || fail "a local quadrant reader failed"
[ "$got" = "$expected" ] || fail "a local quadrant reader read wrong bytes"
fusermount3 -u "$T/mnt4" || fail "unmount of $T/mnt4 failed"
wait "$MOUNT2_PID" 2>/dev/null || true
streamed=$(sed -n 's/.*tile streams: [0-9]* reads ([0-9]* spliced, \([0-9]*\) bytes).*/\1/p' \
    "$T/mount2.log" | tail -n 1)
log "a local quadrant reader: ${streamed:-no} bytes over the tile streams for its $quadrant_bytes"
[ -n "$streamed" ] && [ "$streamed" -ge "$quadrant_bytes" ] ||
    fail "a local quadrant reader's tiles came over the tile streams with ${streamed:-no} bytes, not its $quadrant_bytes: $(grep 'tile streams:' "$T/mount2.log")"
log "ok"
