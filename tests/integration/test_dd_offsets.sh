#!/usr/bin/env bash
# dd with block sizes from 1 byte to 4 MiB at odd offsets (around tile
# boundaries, past the end, into holes), each run twice: on a file in the
# mount and on a local copy. After every step both files must be identical,
# and reads of odd ranges must return the same bytes, from the page cache and
# after it is dropped.
source "$(dirname "$0")/lib.sh"

cluster_up

data=$(random_file 16M)                # where the written bytes come from
initial=$(random_file $((5 * 1048576 + 12345)))
local_file=$T/local.bin
mount_file=$MNT/odd.bin
cp "$initial" "$local_file"
cp "$initial" "$mount_file" || fail "cp of the initial file into the mount failed"

compare_files() {
    local what=$1 local_size mount_size
    local_size=$(stat -c %s "$local_file")
    mount_size=$(stat -c %s "$mount_file")
    [ "$local_size" = "$mount_size" ] ||
        fail "after $what: size $mount_size on the mount, $local_size locally"
    cmp "$local_file" "$mount_file" >"$T/cmp.out" 2>&1 ||
        fail "after $what: contents differ: $(cat "$T/cmp.out")"
}

# write BS COUNT SEEK_BYTES SKIP_BYTES [notrunc|trunc]: the same dd on both files.
write_both() {
    local bs=$1 count=$2 seek=$3 skip=$4 conv=${5:-notrunc} file
    local bytes=$(($(numfmt --from=iec "$bs") * count))
    # shellcheck disable=SC2054 # the commas are dd's flag lists
    local args=(if="$data" bs="$bs" count="$bytes" seek="$seek" skip="$skip"
        iflag=skip_bytes,count_bytes oflag=seek_bytes status=none)
    [ "$conv" = notrunc ] && args+=(conv=notrunc)
    for file in "$local_file" "$mount_file"; do
        dd "${args[@]}" of="$file" 2>"$T/dd.err" ||
            fail "dd ${args[*]} of=$file failed: $(cat "$T/dd.err")"
    done
    compare_files "dd bs=$bs count=$count seek=$seek skip=$skip conv=$conv"
}

# read BS COUNT SKIP_BYTES: the same dd read from both files gives equal bytes.
read_both() {
    local bs=$1 count=$2 skip=$3
    local args=(bs="$bs" count="$count" skip="$skip" iflag=skip_bytes status=none)
    dd if="$local_file" "${args[@]}" of="$SHM/read.local" 2>"$T/dd.err" ||
        fail "local dd read ${args[*]} failed: $(cat "$T/dd.err")"
    dd if="$mount_file" "${args[@]}" of="$SHM/read.mount" 2>"$T/dd.err" ||
        fail "dd read ${args[*]} on the mount failed: $(cat "$T/dd.err")"
    cmp "$SHM/read.local" "$SHM/read.mount" >"$T/cmp.out" 2>&1 ||
        fail "dd read bs=$bs count=$count skip=$skip differs: $(cat "$T/cmp.out")"
}

compare_files "cp"

#          bs      count seek(bytes)  skip(bytes)
write_both 1       1     0            0
write_both 1       1     1048575      7        # last byte of tile 0
write_both 1       1     1048576      9        # first byte of tile 1
write_both 1       300   2097000      13       # 300 single-byte writes over a boundary
write_both 3       5     1048574      11       # 15 bytes across the boundary
write_both 512     3     777          100
write_both 4095    2     2097151      3
write_both 4096    4     4096         0        # page aligned
write_both 65537   3     3145000      12345
write_both 131072  8     333333       1
write_both 1M      1     1048577      0        # a whole tile, off by one
write_both 1M      2     2097152      5        # two aligned tiles
write_both 1M      3     524288       5        # straddles four tiles
write_both 4M      1     123457       17
write_both 4M      2     4000001      99       # grows the file past 12 MB
write_both 1M      1     20000000     0        # past EOF: leaves a hole
write_both 7       3     14000000     3        # into the hole
read_both 1 1 0
read_both 1 1 1048575
read_both 3 7 1048570
read_both 4096 3 13000000                      # inside the hole: zeros
read_both 65536 40 1000000
read_both 1M 5 1048575
read_both 4M 3 7
read_both 4M 1 19000000                        # up to and past EOF

drop_file_cache "$mount_file"
compare_files "dropping the page cache"
read_both 1 1 1048576
read_both 12345 3 2097140
read_both 1M 2 20000000

# dd without notrunc truncates at seek: the file shrinks mid-tile, and when it
# grows again the old bytes past the cut must read back as zeros.
write_both 1000    1     3000000      21       trunc
write_both 1       1     9000000      0        # regrow over the truncated tiles
drop_file_cache "$mount_file"
compare_files "truncate and regrow, cache dropped"
read_both 1M 7 2999999

truncate -s 1048577 "$local_file"
truncate -s 1048577 "$mount_file" || fail "truncate -s 1048577 on the mount failed"
truncate -s 5000000 "$local_file"
truncate -s 5000000 "$mount_file" || fail "truncate -s 5000000 on the mount failed"
drop_file_cache "$mount_file"
compare_files "truncate down to 1048577 and up to 5000000"

# Aligned whole tiles are taken from the memory the FUSE request was read
# into instead of copied (reqloop, datapath buffer_fill): the same bytes
# must reach the datanodes, and the mount counts them at exit.
dd if="$data" of="$MNT/aligned.bin" bs=1M count=8 conv=fsync status=none 2>"$T/dd.err" ||
    fail "dd of 8 aligned tiles failed: $(cat "$T/dd.err")"
drop_file_cache "$MNT/aligned.bin"
cmp -n 8388608 "$data" "$MNT/aligned.bin" >"$T/cmp.out" 2>&1 ||
    fail "8 aligned tiles read back differ: $(cat "$T/cmp.out")"

assert_daemons_alive
cluster_down
read -r taken copied < <(sed -n 's/.*whole-tile writes: \([0-9]*\) taken from the request, \([0-9]*\) copied.*/\1 \2/p' \
    "$STATE/logs/mount.log" | tail -n 1)
[ -n "${taken:-}" ] || fail "the mount logged no whole-tile write counts at exit"
[ "$taken" -ge 8 ] ||
    fail "only $taken whole-tile writes were taken from the request ($copied copied), want the 8 aligned ones at least"
log "whole-tile writes: $taken taken from the request, $copied copied"
log "ok"
