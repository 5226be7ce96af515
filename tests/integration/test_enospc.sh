#!/usr/bin/env bash
# A full datanode gives ENOSPC, like a full disk: a separate small cluster
# (one meta, one datanode started by hand with --capacity 8M, one mount)
# takes a 4 MiB file, refuses a 16 MiB one with "No space left on device"
# (not EIO, not a hang), keeps the first file intact, and after rm has room
# again.
source "$(dirname "$0")/lib.sh"

SMALL=$T/small
SMALL_MNT=$T/mnt-small

small_cluster_up "$SMALL" --capacity 8M
small_mount "$SMALL" "$SMALL_MNT"
log "small cluster: meta $SMALL_META, one 8 MiB datanode, mount $SMALL_MNT"
log "df: $(df -B1 --output=size,used,avail "$SMALL_MNT" | tail -n 1)"

# The datanode registers with meta asynchronously (heartbeat): wait until a
# first small write goes through.
first=$(random_file 4M)
wait_for 15 "a 4 MiB write to succeed on the fresh small cluster" \
    bash -c "cp '$first' '$SMALL_MNT/fits' && sync '$SMALL_MNT/fits'"

big=$(random_file 16M)
start=$(now_ms)
rc=0
timeout -k 5 120 bash -c "cp '$big' '$SMALL_MNT/too-big' && sync '$SMALL_MNT/too-big'" 2>"$T/enospc.err" || rc=$?
elapsed=$(($(now_ms) - start))
log "16 MiB write on an 8 MiB cluster: exit $rc after $elapsed ms: $(cat "$T/enospc.err")"
[ "$rc" -lt 124 ] || fail "16 MiB write on an 8 MiB cluster hung for 120 s"
[ "$rc" != 0 ] || fail "16 MiB write on an 8 MiB cluster succeeded"
grep -q 'No space left on device' "$T/enospc.err" ||
    fail "16 MiB write failed with '$(cat "$T/enospc.err")', expected ENOSPC"

drop_file_cache "$SMALL_MNT/fits"
cmp "$first" "$SMALL_MNT/fits" || fail "the 4 MiB file is damaged after the ENOSPC"

rm -f "$SMALL_MNT/too-big" || fail "rm of the partial file failed"
rm "$SMALL_MNT/fits" || fail "rm of the 4 MiB file failed"
second=$(random_file 6M)
wait_for 20 "space to come back after rm (a 6 MiB write to succeed)" \
    bash -c "cp '$second' '$SMALL_MNT/after-rm' && sync '$SMALL_MNT/after-rm'"
drop_file_cache "$SMALL_MNT/after-rm"
cmp "$second" "$SMALL_MNT/after-rm" || fail "file written after rm differs"

log "ok"
