#!/usr/bin/env bash
# A 200 MiB random file copied in and out with cp compares equal with cmp,
# both from the page cache and after its pages are dropped (so the bytes
# really come back from the datanodes), and its size and df look right.
source "$(dirname "$0")/lib.sh"

cluster_up

source_file=$(random_file 200M)
start=$(now_ms)
cp "$source_file" "$MNT/big" || fail "cp into the mount failed"
log "cp of 200 MiB into the mount: $(($(now_ms) - start)) ms"
[ "$(stat -c %s "$MNT/big")" = $((200 << 20)) ] ||
    fail "size on the mount is $(stat -c %s "$MNT/big"), expected $((200 << 20))"

cmp "$source_file" "$MNT/big" || fail "200 MiB file differs right after cp (page cache)"

drop_file_cache "$MNT/big"
start=$(now_ms)
cp "$MNT/big" "$T/copy-out" || fail "cp out of the mount failed"
log "cp of 200 MiB out of the mount (cache dropped): $(($(now_ms) - start)) ms"
cmp "$source_file" "$T/copy-out" || fail "200 MiB file copied out differs from the original"

# The kernel reads 32 tiles ahead on the mount (root may raise the bdi's
# read_ahead_kb), and may queue 512 background (read-ahead) requests: at
# its default 12 the read-ahead of streams is dropped. fusectl
# shows the connection's limits; mount it for the look if nobody has.
conn="/sys/fs/fuse/connections/$(mountpoint -d "$MNT" | cut -d: -f2)"
fusectl_mounted_here=
if [ ! -e "$conn" ] && mount -t fusectl fusectl /sys/fs/fuse/connections 2>/dev/null; then
    fusectl_mounted_here=1
fi
max_background=$(cat "$conn/max_background" 2>/dev/null || echo unknown)
[ -z "$fusectl_mounted_here" ] || umount /sys/fs/fuse/connections
[ "$max_background" = unknown ] && log "note: fusectl not available, max_background not checked"
[ "$max_background" = unknown ] || [ "$max_background" = 512 ] ||
    fail "the mount allows $max_background background requests, expected 512"
read_ahead_kb=$(cat "/sys/class/bdi/$(mountpoint -d "$MNT")/read_ahead_kb")
[ "$(id -u)" != 0 ] || [ "$read_ahead_kb" = 32768 ] ||
    fail "the mount's bdi reads $read_ahead_kb KiB ahead, expected 32768 (32 tiles)"

# A second name for the same bytes, copied inside the mount.
cp "$MNT/big" "$MNT/big2" || fail "cp inside the mount failed"
drop_file_cache "$MNT/big2"
cmp "$source_file" "$MNT/big2" || fail "copy made inside the mount differs"

# df counts what we stored (at least the 400 MiB written).
used_kib=$(df -k --output=used "$MNT" | tail -n 1 | tr -d ' ')
[ "$used_kib" -ge $((400 << 10)) ] || log "note: df reports only ${used_kib} KiB used after 400 MiB written"

rm "$MNT/big" "$MNT/big2" || fail "rm of the copies failed"
[ ! -e "$MNT/big" ] || fail "big still exists after rm"

assert_daemons_alive
log "ok"
