#!/usr/bin/env bash
# What `tar x` and friends do to each small file, with as few meta round
# trips as issue 34 asks (the COMMIT rides on the first SETATTR after the
# writes, a setattr's answer serves the kernel's getattr after it, a new
# directory is known empty), must stay exactly right for everyone: a second
# mount sees every extracted file with the archive's bytes, size, mode,
# owner and mtime (`tar --compare`), and a write followed by times set on
# the open descriptor ends with the writes' size and the set times.
source "$(dirname "$0")/lib.sh"

cluster_up
MNT2=$T/mnt2
mount_second "$MNT2"

# A tree of small files with assorted modes, owners, times and sizes.
python3 - "$T/src" <<'EOF2' || fail "could not make the source tree"
import os, sys
root = sys.argv[1]
for d in range(12):
    sub = os.path.join(root, "d%02d" % d, "inner")
    os.makedirs(sub)
    for i in range(25):
        p = os.path.join(sub if i % 2 else os.path.dirname(sub), "f%02d.txt" % i)
        with open(p, "wb") as f:
            f.write(os.urandom((d * 977 + i * 131) % 20000))
        os.chmod(p, (0o600, 0o644, 0o755, 0o640)[i % 4])
        os.chown(p, 1000 + i % 3, 100 + d % 2)
        os.utime(p, (1_600_000_000 + i, 1_500_000_000 + d * 1000 + i))
    os.symlink("inner/f01.txt", os.path.join(root, "d%02d" % d, "link"))
EOF2
tar cf "$T/tree.tar" -C "$T/src" . || fail "tar c of the source tree failed"

mkdir "$MNT/x" || fail "mkdir on the mount failed"
tar xf "$T/tree.tar" -C "$MNT/x" || fail "tar x into the mount failed"
# Right at once on this mount, and on the other one.
tar --compare -f "$T/tree.tar" -C "$MNT/x" >"$T/cmp1" 2>&1 ||
    fail "tar --compare on the extracting mount: $(head -5 "$T/cmp1")"
tar --compare -f "$T/tree.tar" -C "$MNT2/x" >"$T/cmp2" 2>&1 ||
    fail "tar --compare on the second mount: $(head -5 "$T/cmp2")"
log "tar x: 300 files, 24 directories, 12 symlinks compare equal on both mounts"

# Writes, then times, owner and mode set on the open descriptor of a file
# this mount created: this mount sees each change at once (they wait for the
# file's commit, fuse/attrwriteback.h), the other one after fsync or close
# (close-to-open, as for the bytes); a write after set times moves mtime on;
# a truncation or another fsync takes what waits along.
python3 - "$MNT" "$MNT2" <<'EOF2' || fail "write then set attributes on the open file"
import os, sys, time
one, two = sys.argv[1], sys.argv[2]
os.mkdir(os.path.join(one, "y"))
p1, p2 = os.path.join(one, "y", "w"), os.path.join(two, "y", "w")
def appears(what, check, path):
    deadline = time.monotonic() + 5
    while True:
        try:
            st = os.stat(path)
            if check(st):
                return
        except FileNotFoundError:
            st = None
        if time.monotonic() > deadline:
            raise AssertionError("%s: %s" % (what, st))
        time.sleep(0.1)
fd = os.open(p1, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
os.write(fd, b"a" * 70000)
os.utime(fd, (1_400_000_000, 1_300_000_000))
for st in (os.fstat(fd), os.stat(p1)):
    assert st.st_size == 70000 and st.st_mtime == 1_300_000_000, ("after utime", st)
    assert st.st_atime == 1_400_000_000, ("atime after utime", st)
os.fsync(fd)
appears("mount 2 after utime and fsync",
        lambda st: st.st_size == 70000 and st.st_mtime == 1_300_000_000, p2)
os.write(fd, b"b" * 1000)          # a write after the set times moves mtime on
os.fchmod(fd, 0o751)
os.fchown(fd, 4242, 4343)
for st in (os.fstat(fd), os.stat(p1)):
    assert st.st_size == 71000 and (st.st_mode & 0o7777) == 0o751, ("after fchmod", st)
    assert (st.st_uid, st.st_gid) == (4242, 4343), ("owner", st)
    assert st.st_mtime > 1_300_000_000, ("the later write's mtime", st)
os.ftruncate(fd, 71000)            # a truncation sends what waits with it
appears("mount 2 after ftruncate", lambda st: st.st_size == 71000 and st.st_uid == 4242 and
        (st.st_mode & 0o7777) == 0o751 and st.st_mtime > 1_300_000_000, p2)
os.utime(fd, (1_400_000_000, 1_200_000_000))
os.fchmod(fd, 0o640)
st = os.stat(p1)
assert st.st_mtime == 1_200_000_000 and (st.st_mode & 0o7777) == 0o640, ("before close", st)
os.close(fd)
st = os.stat(p1)
assert st.st_size == 71000 and st.st_mtime == 1_200_000_000, ("after close", st)
appears("mount 2 after close", lambda st: st.st_size == 71000 and st.st_mtime == 1_200_000_000 and
        (st.st_mode & 0o7777) == 0o640 and st.st_atime == 1_400_000_000, p2)
for p in (p1, p2):
    with open(p, "rb") as f:
        assert f.read() == b"a" * 70000 + b"b" * 1000, p
# chmod by path (no descriptor) of an open file, and a set-id bit.
fd = os.open(os.path.join(one, "y", "v"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
os.chmod(os.path.join(one, "y", "v"), 0o4755)
os.utime(os.path.join(one, "y", "v"), (5, 6))
st = os.stat(os.path.join(one, "y", "v"))
assert (st.st_mode & 0o7777) == 0o4755 and st.st_mtime == 6, ("chmod by path", st)
os.close(fd)
appears("mount 2 after chmod by path", lambda st: (st.st_mode & 0o7777) == 0o4755 and
        st.st_mtime == 6, os.path.join(two, "y", "v"))
print("# write then attributes on the open file: ok")
EOF2

# A directory made here is known empty here; a name the other mount adds to
# it is still found by an exclusive create, and listed once it is looked for.
python3 - "$MNT" "$MNT2" <<'EOF2' || fail "names added by another mount to a new directory"
import os, sys
one, two = sys.argv[1], sys.argv[2]
os.mkdir(os.path.join(one, "fresh"))
open(os.path.join(two, "fresh", "theirs"), "w").close()
try:
    os.open(os.path.join(one, "fresh", "theirs"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    raise AssertionError("O_EXCL create of a name the other mount made succeeded")
except FileExistsError:
    pass
assert os.listdir(os.path.join(one, "fresh")) == ["theirs"]
print("# new directory and the other mount: ok")
EOF2
log "ok"
