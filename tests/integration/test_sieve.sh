#!/usr/bin/env bash
# Data sieving: small random reads that come back to a tile have the mount
# read it whole and put it into the kernel's page cache. What the page cache
# gets must never be older than what the mount wrote, nor than what another
# mount wrote before a reopen: sieve_check.py compares random 4 KiB reads
# with a model of the file across writes (pwrite, mmap, racing the reads),
# truncation and regrowth on the same mount and on a second one, and checks
# with mincore() that tiles really are stored (and not for O_DIRECT).
source "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || skip "python3 is not installed"
cluster_up

MNT2=$T/mnt2
mount_second "$MNT2"

timeout -k 5 300 python3 "$IT_DIR/sieve_check.py" "$MNT" "$MNT2" 2>&1 | tee "$T/sieve_check.log" ||
    fail "sieve_check.py: $(grep FAIL "$T/sieve_check.log" || tail -n 5 "$T/sieve_check.log")"

kill -0 "$MOUNT2_PID" 2>/dev/null || fail "the second tessera-mount exited: $(tail -n 20 "$T/mount2.log")"
assert_daemons_alive
log "ok"
