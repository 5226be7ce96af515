#!/usr/bin/env bash
# The mount works the way mount(8) and fstab call it, with the helpers where
# `meson install` puts them: the build is installed into a DESTDIR, and in a
# private mount namespace that DESTDIR's /sbin is bound over /sbin (and its
# PREFIX over PREFIX, so the helpers' links to PREFIX/bin/tessera-mount
# resolve), nothing of the real system touched and all of it gone with the
# namespace. There:
#  - `mount -t fuse.tessera tcp://HOST:PORT DIR -o allow_other,io_timeout_ms=3000,_netdev`
#  - `mount -t tessera tessera:tcp://HOST:PORT DIR -o meta_timeout_ms=2000`
#  - an fstab line `tcp://HOST:PORT DIR fuse.tessera _netdev,nofail,x-systemd.automount,... 0 0`
#    mounted by `mount -a --fstab FILE`, which leaves its `noauto` line alone; that
#    one is mounted by `mount --fstab FILE DIR`
# each mounts, serves the cluster's files (written on the main mount, and
# a write through it read back on the main mount), shows its source and
# type, and unmounts with umount(8); the -o values reached the mount (its
# log). Also the `tessera SOURCE DIR -o ...` form mount.fuse runs for
# fuse.tessera. A bad -o value, an unknown -o option and a mistyped one
# fail the mount at once with a message naming the option.
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "mount(8) runs helpers from /sbin only for root"
command -v unshare >/dev/null || skip "unshare is missing (util-linux)"
# Where `meson install` puts the helpers and the links' target (PREFIX/bin).
prefix=$(meson introspect --buildoptions "$TESSERA_BUILD" |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
case $prefix in
/ | /usr | /bin | /sbin | /lib*) skip "PREFIX $prefix cannot be bound over in the namespace" ;;
esac
cluster_up
meta=$(meta_endpoint)
# The cluster has keys (tessera up): every mount below gives its own with -o key=FILE.
mapfile -t key < <(key_args helper mount)
[ "${#key[@]}" = 2 ] || fail "the cluster has no keys for the helper's mounts"
key=${key[1]}
echo "written on the main mount" >"$MNT/shared"
sync "$MNT/shared"

root=$T/root
meson install -C "$TESSERA_BUILD" --no-rebuild --quiet --destdir "$root" >"$T/install.log" 2>&1 ||
    fail "meson install --destdir failed: $(tail -5 "$T/install.log")"
for helper in mount.tessera mount.fuse.tessera; do
    [ "$(readlink "$root/sbin/$helper")" = "$prefix/bin/tessera-mount" ] ||
        fail "meson install put /sbin/$helper as '$(readlink "$root/sbin/$helper")', not a link to $prefix/bin/tessera-mount"
done
[ -x "$root$prefix/bin/tessera-mount" ] || fail "meson install did not install $prefix/bin/tessera-mount"
mkdir -p "$T/mnt-type" "$T/mnt-plain" "$T/mnt-fstab" "$T/mnt-noauto" "$T/mnt-tool" "$T/mnt-bad"
IT_MOUNTS+=("$T/mnt-type" "$T/mnt-plain" "$T/mnt-fstab" "$T/mnt-noauto" "$T/mnt-tool" "$T/mnt-bad")
{
    printf '%s %s fuse.tessera _netdev,nofail,x-systemd.automount,comment=test,allow_other,io_timeout_ms=2500,key=%s 0 0\n' \
        "$meta" "$T/mnt-fstab" "$key"
    printf '%s %s fuse.tessera _netdev,noauto,defaults,key=%s 0 0\n' "$meta" "$T/mnt-noauto" "$key"
} >"$T/fstab"

# Inside the namespace: every mount made, checked and unmounted again (the
# EXIT trap unmounts what a failure left); the daemons' pids are written
# out so the test's own cleanup can stop any that outlived it.
cat >"$T/in-namespace.sh" <<'NS'
set -eu
T=$1 ROOT=$2 PREFIX=$3 META=$4 MNT=$5 KEY=$6
trap 'for d in "$T"/mnt-type "$T"/mnt-plain "$T"/mnt-fstab "$T"/mnt-noauto "$T"/mnt-bad; do umount -l "$d" 2>/dev/null || true; done' EXIT
mount --bind "$ROOT/sbin" "$(realpath /sbin)"
mount --bind "$ROOT$PREFIX" "$PREFIX"
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
mount -a --fstab "$T/fstab" -t fuse.tessera
note_pids
check "$T/mnt-fstab" fuse.tessera
if mountpoint -q "$T/mnt-noauto"; then echo "mount -a mounted the noauto line"; exit 1; fi
mount --fstab "$T/fstab" "$T/mnt-noauto"
note_pids
check "$T/mnt-noauto" fuse.tessera
# Refused at once (before the mount forks or asks meta), each naming its option.
for bad in io_timeout_ms=soon bogus_option io_timeout=3000; do
    started=$(date +%s%N)
    if mount -t fuse.tessera "$META" "$T/mnt-bad" -o "$bad,key=$KEY" 2>"$T/bad-$bad.err"; then
        note_pids
        echo "-o $bad mounted"; exit 1
    fi
    echo "-o $bad refused in $((($(date +%s%N) - started) / 1000000)) ms"
done
for d in "$T"/mnt-type "$T"/mnt-plain "$T"/mnt-fstab "$T"/mnt-noauto; do
    umount "$d"
    if mountpoint -q "$d"; then echo "umount left $d mounted"; exit 1; fi
done
NS
unshare -m --propagation private bash "$T/in-namespace.sh" "$T" "$root" "$prefix" "$meta" "$MNT" "$key" \
    >"$T/namespace.log" 2>&1 || rc=$?
while read -r pid; do IT_PIDS+=("$pid"); done < <(sort -u "$T/ns-pids" 2>/dev/null)
[ "${rc:-0}" = 0 ] || fail "mount(8) in a namespace failed: $(tail -5 "$T/namespace.log")"
grep -q "io_timeout_ms\|io-timeout-ms" "$T/bad-io_timeout_ms=soon.err" ||
    fail "a bad -o io_timeout_ms was refused without naming it: $(cat "$T/bad-io_timeout_ms=soon.err")"
grep -q "unknown mount option -o bogus_option" "$T/bad-bogus_option.err" ||
    fail "an unknown -o option was refused without naming it: $(cat "$T/bad-bogus_option.err")"
grep -q "unknown mount option -o io_timeout=3000.*did you mean io_timeout_ms" "$T/bad-io_timeout=3000.err" ||
    fail "a mistyped -o option got no hint: $(cat "$T/bad-io_timeout=3000.err")"
# "At once": not after meta's 5 s timeout, as before the check moved into parsing.
while read -r ms; do
    [ "$ms" -lt 3000 ] || fail "a bad -o option took $ms ms to be refused"
done < <(sed -n 's/^-o .* refused in \([0-9]*\) ms$/\1/p' "$T/namespace.log")
[ "$(grep -c 'refused in' "$T/namespace.log")" = 3 ] || fail "not every bad -o option was tried: $(cat "$T/namespace.log")"
for name in type plain fstab noauto; do
    [ "$(cat "$MNT/back-$name")" = "through $T/mnt-$name" ] ||
        fail "the write through the $name mount did not reach the cluster"
done
grep -q "mounting $T/mnt-type from .*(datanode timeout 3000 ms)" "$T/namespace.log" ||
    fail "mount -t fuse.tessera -o io_timeout_ms=3000 did not reach the mount: $(cat "$T/namespace.log")"
grep -q "mounting $T/mnt-fstab from .*(datanode timeout 2500 ms)" "$T/namespace.log" ||
    fail "the fstab line's io_timeout_ms=2500 did not reach the mount: $(cat "$T/namespace.log")"
log "installed helpers: mount -t fuse.tessera, mount -t tessera, mount -a and mount DIR of fstab lines (noauto left out by -a) each mounted, served and unmounted; bad options refused by name"

# What mount.fuse runs for fuse.tessera when no mount.fuse.tessera is installed.
"$TESSERA_TOOL" "$meta" "$T/mnt-tool" -o io_timeout_ms=3000,key="$key" >"$T/tool-mount.log" 2>&1 ||
    fail "tessera SOURCE DIR -o ... did not mount: $(cat "$T/tool-mount.log")"
[ "$(cat "$T/mnt-tool/shared")" = "written on the main mount" ] || fail "the tool-run mount reads wrong bytes"
fusermount3 -u "$T/mnt-tool" || fail "cannot unmount $T/mnt-tool"
log "tessera SOURCE DIR -o ... mounted through tessera-mount"
cluster_down
