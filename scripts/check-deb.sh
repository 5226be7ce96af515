#!/usr/bin/env bash
#
# check-deb.sh: install the built package (scripts/build-deb.sh) the way an
# operator would and use it, without touching this machine: in a private
# mount namespace, / is an overlay of the real root with a tmpfs on top, and
# everything happens chrooted there, so dpkg -i, /etc and /sbin changes and
# the data vanish with the namespace. There: dpkg -i; the helpers, units,
# man pages and example conffiles are where they belong; a cluster (meta,
# two datanodes) starts from /etc/tessera files alone; an fstab line mounts
# it with `mount DIR`; 8 MiB written and read back equal; umount.
# Needs root and /dev/fuse; the daemons listen on 127.0.0.1:PORT..PORT+2.
# Not part of the test suite (it needs a built package).
#
#   ./scripts/check-deb.sh build-deb/tessera_VERSION_ARCH.deb [PORT, default 27400]
set -euo pipefail

deb=$(realpath "${1:?usage: check-deb.sh PACKAGE.deb [PORT]}")
port=${2:-27400}
[ "$(id -u)" = 0 ] || { echo "check-deb: needs root (a mount namespace, chroot, FUSE)" >&2; exit 1; }

if [ "${CHECK_DEB_STAGE:-}" = "" ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-check-deb.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    CHECK_DEB_STAGE=namespace CHECK_DEB_WORK=$work \
        unshare -m --propagation private bash "$0" "$deb" "$port"
    exit
fi

if [ "$CHECK_DEB_STAGE" = namespace ]; then
    work=$CHECK_DEB_WORK
    mkdir -p "$work/layer"
    mount -t tmpfs tmpfs "$work/layer"
    mkdir "$work/layer/upper" "$work/layer/work" "$work/layer/root"
    root=$work/layer/root
    mount -t overlay overlay -o "lowerdir=/,upperdir=$work/layer/upper,workdir=$work/layer/work" "$root"
    mount --rbind /proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    # Empty /run and /tmp: no host systemd or daemon sockets reachable from dpkg's scripts.
    mount -t tmpfs tmpfs "$root/run"
    mount -t tmpfs tmpfs "$root/tmp"
    cp "$deb" "$root/root/tessera.deb"
    cp "$0" "$root/root/check-deb.sh"
    rc=0
    CHECK_DEB_STAGE=chroot chroot "$root" bash /root/check-deb.sh /root/tessera.deb "$port" || rc=$?
    # What the chroot started, stopped by its pids whatever happened.
    umount "$root/mnt/tessera-check" 2>/dev/null || true
    pids=$(cat "$root/root/pids" 2>/dev/null || true)
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    for _ in $(seq 50); do
        alive=0
        for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 0.2
    done
    for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
    [ "$rc" = 0 ] && echo "check-deb: the package installs, runs a cluster from /etc/tessera and mounts through fstab"
    exit "$rc"
fi

# CHECK_DEB_STAGE=chroot: inside the overlay.
set -x
meta=tcp://127.0.0.1:$port
dpkg -i "$deb"
for path in /sbin/mount.tessera /sbin/mount.fuse.tessera; do
    [ "$(readlink "$path")" = /usr/bin/tessera-mount ]
done
for unit in tessera-meta.service tessera-datanode@.service tessera-mount@.service; do
    [ -f "/lib/systemd/system/$unit" ]
done
man -w tessera tessera-rebalance tessera-meta tessera-datanode tessera-mount mount.tessera mount.fuse.tessera tessera.conf
[ -f /usr/share/bash-completion/completions/tessera ]
grep -q /etc/tessera/meta.conf /var/lib/dpkg/info/tessera.conffiles
tessera --version
mkdir -p /var/lib/tessera /srv/tessera/disk1 /srv/tessera/disk2 /mnt/tessera-check /var/log/tessera
printf '[meta]\nlisten = %s\ndata = /var/lib/tessera/meta\nlog-file = /var/log/tessera/meta.log\n' \
    "$meta" >/etc/tessera/meta.conf
for i in 1 2; do
    sed -e "s|^; listen = .*|listen = tcp://127.0.0.1:$((port + i))|" -e "s|^; meta = .*|meta = $meta|" \
        -e "s|^; data = .*|data = /srv/tessera/disk$i|" /etc/tessera/datanode.conf \
        >/etc/tessera/datanode-disk$i.conf
    echo "log-file = /var/log/tessera/disk$i.log" >>/etc/tessera/datanode-disk$i.conf
done
for file in /etc/tessera/meta.conf /etc/tessera/datanode-disk1.conf /etc/tessera/datanode-disk2.conf; do
    tessera config check "$file"
done
# What the units' ExecStart lines run (no systemd in a chroot).
tessera-meta --config /etc/tessera/meta.conf &
echo $! >/root/pids
for i in 1 2; do
    tessera-datanode --config /etc/tessera/datanode-disk$i.conf &
    echo $! >>/root/pids
done
set +x
for _ in $(seq 100); do
    [ "$(tessera status --meta "$meta" 2>/dev/null | grep -c ' up ')" = 2 ] && break
    sleep 0.2
done
set -x
tessera status --meta "$meta"
echo "$meta  /mnt/tessera-check  fuse.tessera  _netdev,allow_other,io_timeout_ms=3000  0 0" >>/etc/fstab
mount /mnt/tessera-check
findmnt /mnt/tessera-check
head -c 8388608 /dev/urandom >/root/data
cp /root/data /mnt/tessera-check/data
sync /mnt/tessera-check/data
cmp /root/data /mnt/tessera-check/data
umount /mnt/tessera-check
! mountpoint -q /mnt/tessera-check
