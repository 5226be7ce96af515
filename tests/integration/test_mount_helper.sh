#!/usr/bin/env bash
# The mount works the way mount(8) and fstab call it: in a private mount
# namespace whose /sbin holds only the helpers `meson install` puts there
# (mount.tessera and mount.fuse.tessera, links to tessera-mount):
#  - `mount -t fuse.tessera tcp://HOST:PORT DIR -o allow_other,io_timeout_ms=3000,_netdev`
#  - `mount -t tessera tessera:tcp://HOST:PORT DIR -o meta_timeout_ms=2000`
#  - an fstab line `tcp://HOST:PORT DIR fuse.tessera _netdev,nofail,x-systemd.automount,... 0 0`
#    mounted with `mount --fstab FILE DIR`
# each mounts, serves the cluster's files (written on the main mount, and
# a write through it read back on the main mount), shows its source and
# type, and unmounts; the -o values reached the mount (its log). Also the
# `tessera SOURCE DIR -o ...` form mount.fuse runs for fuse.tessera. A bad
# -o value fails the mount with a message naming the option.
source "$(dirname "$0")/lib.sh"

command -v unshare >/dev/null || skip "unshare is missing (util-linux)"
cluster_up
meta=$(meta_endpoint)
# The cluster has keys (tessera up): every mount below gives its own with -o key=FILE.
mapfile -t key < <(key_args helper mount)
[ "${#key[@]}" = 2 ] || fail "the cluster has no keys for the helper's mounts"
key=${key[1]}
echo "written on the main mount" >"$MNT/shared"
sync "$MNT/shared"

sbin=$T/sbin
mkdir -p "$sbin" "$T/mnt-type" "$T/mnt-plain" "$T/mnt-fstab" "$T/mnt-tool"
IT_MOUNTS+=("$T/mnt-type" "$T/mnt-plain" "$T/mnt-fstab" "$T/mnt-tool")
ln -s "$TESSERA_MOUNT" "$sbin/mount.fuse.tessera"
ln -s "$TESSERA_MOUNT" "$sbin/mount.tessera"
printf '%s %s fuse.tessera _netdev,nofail,x-systemd.automount,comment=test,allow_other,io_timeout_ms=2500,key=%s 0 0\n' \
    "$meta" "$T/mnt-fstab" "$key" >"$T/fstab"

# Inside the namespace: every mount made, checked and unmounted again (the
# EXIT trap unmounts what a failure left); the daemons' pids are written
# out so the test's own cleanup can stop any that outlived it.
cat >"$T/in-namespace.sh" <<'NS'
set -eu
T=$1 SBIN=$2 META=$3 MNT=$4 KEY=$5
trap 'for d in "$T"/mnt-type "$T"/mnt-plain "$T"/mnt-fstab; do umount -l "$d" 2>/dev/null || true; done' EXIT
mount --bind "$SBIN" "$(realpath /sbin)"
note_pids() {
    for p in /proc/[0-9]*; do
        tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q -- "$T/mnt-" && echo "${p#/proc/}" >>"$T/ns-pids"
    done
    return 0
}
check() {
    local dir=$1 type=$2
    mountpoint -q "$dir" || { echo "$dir is not mounted"; return 1; }
    [ "$(cat "$dir/shared")" = "written on the main mount" ] || { echo "$dir: wrong bytes"; return 1; }
    echo "through $dir" >"$dir/back-${dir##*-}"
    sync "$dir/back-${dir##*-}"
    [ "$(findmnt -no FSTYPE "$dir")" = "$type" ] || { echo "$dir: type $(findmnt -no FSTYPE "$dir")"; return 1; }
    findmnt -no SOURCE "$dir" | grep -q "${META#tcp://}" || { echo "$dir: source $(findmnt -no SOURCE "$dir")"; return 1; }
}
mount -t fuse.tessera "$META" "$T/mnt-type" -o allow_other,io_timeout_ms=3000,_netdev,key="$KEY"
note_pids
check "$T/mnt-type" fuse.tessera
mount -t tessera "tessera:$META" "$T/mnt-plain" -o meta_timeout_ms=2000,key="$KEY"
note_pids
check "$T/mnt-plain" fuse.tessera
mount --fstab "$T/fstab" "$T/mnt-fstab"
note_pids
check "$T/mnt-fstab" fuse.tessera
if mount -t fuse.tessera "$META" "$T/mnt-tool" -o io_timeout_ms=soon,key="$KEY" 2>"$T/bad-option.err"; then
    echo "a bad io_timeout_ms mounted"; exit 1
fi
for d in "$T"/mnt-type "$T"/mnt-plain "$T"/mnt-fstab; do umount "$d"; done
NS
unshare -m --propagation private bash "$T/in-namespace.sh" "$T" "$sbin" "$meta" "$MNT" "$key" \
    >"$T/namespace.log" 2>&1 || rc=$?
while read -r pid; do IT_PIDS+=("$pid"); done < <(sort -u "$T/ns-pids" 2>/dev/null)
[ "${rc:-0}" = 0 ] || fail "mount(8) in a namespace failed: $(tail -5 "$T/namespace.log")"
grep -q "io_timeout_ms\|io-timeout-ms" "$T/bad-option.err" ||
    fail "a bad -o io_timeout_ms was refused without naming it: $(cat "$T/bad-option.err")"
for name in type plain fstab; do
    [ "$(cat "$MNT/back-$name")" = "through $T/mnt-$name" ] ||
        fail "the write through the $name mount did not reach the cluster"
done
grep -q "mounting $T/mnt-type from .*(datanode timeout 3000 ms)" "$T/namespace.log" ||
    fail "mount -t fuse.tessera -o io_timeout_ms=3000 did not reach the mount: $(cat "$T/namespace.log")"
grep -q "mounting $T/mnt-fstab from .*(datanode timeout 2500 ms)" "$T/namespace.log" ||
    fail "the fstab line's io_timeout_ms=2500 did not reach the mount: $(cat "$T/namespace.log")"
log "mount -t fuse.tessera, mount -t tessera and an fstab line each mounted, served and unmounted"

# What mount.fuse runs for fuse.tessera when no mount.fuse.tessera is installed.
"$TESSERA_TOOL" "$meta" "$T/mnt-tool" -o io_timeout_ms=3000,key="$key" >"$T/tool-mount.log" 2>&1 ||
    fail "tessera SOURCE DIR -o ... did not mount: $(cat "$T/tool-mount.log")"
[ "$(cat "$T/mnt-tool/shared")" = "written on the main mount" ] || fail "the tool-run mount reads wrong bytes"
fusermount3 -u "$T/mnt-tool" || fail "cannot unmount $T/mnt-tool"
log "tessera SOURCE DIR -o ... mounted through tessera-mount"
cluster_down
