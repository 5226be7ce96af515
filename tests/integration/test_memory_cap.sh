#!/usr/bin/env bash
# The mount's memory stays under its cap (--memory, default 256 MiB) however
# many files are open and however they are written: a writer that keeps many
# files open and writes a little into each holds a partial tile buffer per
# tile it touched; when they would take the whole write budget, they are sent
# early (the file's own, and other files' by the reclaimer) instead of
# making the writer wait for memory nobody will give back. Checked on a
# mount capped at 64 MiB and on the default one: files written that way, many
# parallel streams, and readers alongside, all with their bytes intact, and
# the mount's peak resident memory (VmHWM) under the cap (not under
# AddressSanitizer, whose shadow memory and quarantine are not the mount's).
source "$(dirname "$0")/lib.sh"

cluster_up
SMALL=$T/mnt-capped # under $T/mnt*: a failing run's log search skips it
mount_second "$SMALL" --memory 64M

# many_files DIR FILES TILES: opens FILES files, writes 100 bytes into each of
# TILES tiles of every file in turn, keeping them all open, closes them and
# checks every byte. A writer stuck waiting for write budget fails it after
# 120 s instead of hanging the suite.
many_files() {
    timeout -k 5 120 python3 - "$@" <<'PY' || fail "many open files on $1: writer stuck or wrong bytes"
import os, sys
d, files, tiles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fds = [os.open(f"{d}/many{i}", os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644) for i in range(files)]
for tile in range(tiles):
    for i, fd in enumerate(fds):
        os.pwrite(fd, bytes([(i + tile) % 251]) * 100, tile * (1 << 20) + 4096)
for fd in fds:
    os.close(fd)
for i in range(files):
    with open(f"{d}/many{i}", "rb") as f:
        data = f.read()
    for tile in range(tiles):
        at = tile * (1 << 20) + 4096
        assert data[at:at + 100] == bytes([(i + tile) % 251]) * 100, (i, tile)
        assert data[at - 4096:at] == bytes(4096), (i, tile)
PY
    log "$2 files open on $1, 100 bytes into $3 tiles of each: written and read back"
}

# streams DIR: 12 parallel writers of 16 MiB each, then 6 readers at once.
streams() {
    local dir=$1 i pids=()
    source_file=${source_file:-$(random_file 16M)}
    for i in $(seq 12); do
        dd if="$source_file" of="$dir/stream$i" bs=1M status=none &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || fail "a parallel dd into $dir failed"; done
    pids=()
    for i in $(seq 6); do
        drop_file_cache "$dir/stream$i"
        cmp "$source_file" "$dir/stream$i" >"$T/cmp$i.log" 2>&1 &
        pids+=($!)
    done
    for i in "${pids[@]}"; do
        wait "$i" || fail "a stream read back from $dir differs: $(cat "$T"/cmp*.log)"
    done
    log "12 parallel 16 MiB writers and 6 readers on $dir: bytes intact"
}

peak_mib() { awk '/^VmHWM:/ {print int($2 / 1024)}' "/proc/$1/status"; }

# check_cap PID CAP_MIB: the mount's peak resident memory is under its cap.
check_cap() {
    local peak
    peak=$(peak_mib "$1")
    if under_asan "$TESSERA_MOUNT"; then
        log "mount pid $1: peak $peak MiB under AddressSanitizer (cap $2 MiB not checked)"
        return
    fi
    [ "$peak" -le "$2" ] || fail "mount pid $1 peaked at $peak MiB, over its $2 MiB cap"
    log "mount pid $1: peak resident $peak MiB, cap $2 MiB ($(grep -E "^Rss(Anon|File)" "/proc/$1/status" | tr -s " \t\n" " "))"
}

# 64 MiB cap: about 10 MiB of write buffers. 200 files x 2 partial tiles would hold 400.
many_files "$SMALL" 200 2
streams "$SMALL"
check_cap "$MOUNT2_PID" 64

# The default mount (256 MiB: 64 MiB of write buffers): 100 files x 3 tiles.
many_files "$MNT" 100 3
streams "$MNT"
check_cap "$(pid_of mount)" 256

for node in node1 node2 node3 node4; do
    log "$node: peak resident $(peak_mib "$(pid_of "$node")") MiB"
done
assert_daemons_alive
log "memory caps held"
