#!/usr/bin/env bash
# Data sieving: small random reads that come back to a tile have the mount
# read it whole and put it into the kernel's page cache. What the page cache
# gets must never be older than what the mount wrote, nor than what another
# mount wrote before a reopen: sieve_check.py compares random 4 KiB reads
# with a model of the file across writes (pwrite, mmap, racing the reads),
# truncation and regrowth on the same mount and on a second one, and checks
# with mincore() that tiles really are stored (and not for O_DIRECT). The
# read-ahead of a sequential reader starts small: a look at a file's head
# loads two tiles.
source "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || skip "python3 is not installed"
cluster_up

MNT2=$T/mnt2
mount_second "$MNT2"

timeout -k 5 300 python3 "$IT_DIR/sieve_check.py" "$MNT" "$MNT2" 2>&1 | tee "$T/sieve_check.log" ||
    fail "sieve_check.py: $(grep FAIL "$T/sieve_check.log" || tail -n 5 "$T/sieve_check.log")"

# The read-ahead of a sequential reader ramps up: a look at a file's head
# loads its first tile and one more, not the whole read-ahead window.
node_bytes_read() {
    local id sum=0 bytes
    for id in 1 2 3 4; do
        bytes=$(timeout -k 5 60 "$TESSERA_TOOL" node stats "$id" --json --state "$STATE" |
            sed -n 's/.*"bytes_read": \([0-9]*\).*/\1/p')
        [ -n "$bytes" ] || fail "tessera node stats $id gave no bytes_read"
        sum=$((sum + bytes))
    done
    echo "$sum"
}
head_src=$(random_file 16M)
cp "$head_src" "$MNT/head" || fail "cp of a 16 MiB file into the mount failed"
drop_file_cache "$MNT/head"
before=$(node_bytes_read)
cmp <(head -c 4096 "$head_src") <(head -c 4096 "$MNT/head") || fail "the first 4 KiB differ"
sleep 0.5 # read-ahead in flight lands
loaded=$(($(node_bytes_read) - before))
log "a 4 KiB read of the head of a 16 MiB file loaded $loaded bytes"
[ "$loaded" -le $((2 * 1048576)) ] ||
    fail "a 4 KiB read of a file's head loaded $loaded bytes, more than 2 tiles"
drop_file_cache "$MNT/head"
cmp "$head_src" "$MNT/head" || fail "the 16 MiB file read whole differs"

kill -0 "$MOUNT2_PID" 2>/dev/null || fail "the second tessera-mount exited: $(tail -n 20 "$T/mount2.log")"
assert_daemons_alive
log "ok"
