#!/usr/bin/env bash
# Unlinks answered before meta has done them (fuse/nsqueue.h) must look
# synchronous to everyone on the mount: right after removing thousands of
# files the directory lists empty, the same names can be created again with
# O_EXCL, an emptied directory can be removed at once, an unlinked open file
# still reads, and after fsync of the directory a second mount that never
# saw the names finds them gone. Unmounting sends what is queued: the files
# removed just before `tessera down` stay removed after a restart.
source "$(dirname "$0")/lib.sh"

cluster_up

# The mount really answers unlinks early (the default), or this test proves nothing.
pgrep -f "tessera-mount .*$MNT" >/dev/null || fail "no tessera-mount for $MNT"
grep -q -- '--async-unlinks' <("$TESSERA_MOUNT" --help) || fail "tessera-mount has no --async-unlinks"

python3 - "$MNT" <<'EOF' || fail "unlink-then-use checks failed (see above)"
import errno, os, sys
root = sys.argv[1]
d = os.path.join(root, "many")
os.mkdir(d)
names = ["f%05d" % i for i in range(3000)]
for n in names:
    os.close(os.open(os.path.join(d, n), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
for n in names:
    os.unlink(os.path.join(d, n))
left = os.listdir(d)
assert left == [], "listed right after the unlinks: %d names, e.g. %s" % (len(left), left[:3])
for n in names[:5]:
    try:
        os.stat(os.path.join(d, n))
        raise AssertionError("stat of an unlinked name succeeded: " + n)
    except FileNotFoundError:
        pass
# The same names again, exclusively: an unlink sent late would remove these.
for n in names:
    fd = os.open(os.path.join(d, n), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(fd, n.encode())
    os.close(fd)
for n in names[::2]:
    os.unlink(os.path.join(d, n))
left = sorted(os.listdir(d))
assert left == names[1::2], "after removing every other name: %d left" % len(left)
for n in names[1::2][:50]:
    with open(os.path.join(d, n), "rb") as f:
        assert f.read() == n.encode(), "content of " + n
# rm -r: files, then their directory at once.
sub = os.path.join(root, "tree", "sub")
os.makedirs(sub)
for i in range(500):
    with open(os.path.join(sub, "x%d" % i), "w") as f:
        f.write("x")
for i in range(500):
    os.unlink(os.path.join(sub, "x%d" % i))
os.rmdir(sub)
os.rmdir(os.path.join(root, "tree"))
try:
    os.rmdir(d)
    raise AssertionError("rmdir of a directory with 1500 files left succeeded")
except OSError as e:
    assert e.errno == errno.ENOTEMPTY, e
# An open file outlives its name.
p = os.path.join(root, "open-file")
with open(p, "wb") as f:
    f.write(b"still here" * 100000)
fd = os.open(p, os.O_RDONLY)
os.unlink(p)
assert not os.path.exists(p)
data = os.pread(fd, 10, 500000)
assert data == b"still here", data
os.close(fd)
print("# unlink-then-use: ok")
EOF

# fsync of the directory: a second mount that never looked at the names sees them gone.
MNT2=$T/mnt2
mount_second "$MNT2"
python3 - "$MNT" "$MNT2" <<'EOF' || fail "unlink + fsync(dir) not seen by the second mount"
import os, sys
one, two = sys.argv[1], sys.argv[2]
d = os.path.join(one, "synced")
os.mkdir(d)
for i in range(300):
    open(os.path.join(d, "s%d" % i), "w").close()
for i in range(300):
    os.unlink(os.path.join(d, "s%d" % i))
fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
os.fsync(fd)
os.close(fd)
seen = [i for i in range(300) if os.path.exists(os.path.join(two, "synced", "s%d" % i))]
assert not seen, "still there on mount 2 after fsync(dir): %d names" % len(seen)
print("# fsync(dir) then second mount: ok")
EOF
# A walk of stats, then an rm of the same names in the same order (what a
# metadata benchmark does): the mount keeps only the last statahead window of
# the walk while the kernel still trusts its entries for the first names, so
# their unlinks reach the mount with nothing cached. They must still be
# answered early, from statahead windows fetched for them, not wait for meta
# one at a time; and stay exact.
python3 - "$MNT" "$MNT2" <<'EOF' || fail "unlink walks on the second mount"
import os, subprocess, sys, time
one, two = sys.argv[1], sys.argv[2]
os.mkdir(os.path.join(one, "walked"))
names = ["w%05d" % i for i in range(2000)]
for n in names:
    open(os.path.join(one, "walked", n), "w").close()
for n in names:
    os.stat(os.path.join(two, "walked", n))
for n in names:
    os.unlink(os.path.join(two, "walked", n))
assert os.listdir(os.path.join(two, "walked")) == [], "listed on mount 2 after the rm"
fd = os.open(os.path.join(two, "walked"), os.O_RDONLY | os.O_DIRECTORY)
os.fsync(fd)
os.close(fd)
left = os.listdir(os.path.join(one, "walked"))
assert left == [], "mount 1 still lists %d names after fsync(dir) on mount 2" % len(left)
os.rmdir(os.path.join(one, "walked"))
# rm -r of a tree mount 2 never looked at: its kernel asks LOOKUP, then
# UNLINK, for every name; that too is a walk the mount answers early.
os.mkdir(os.path.join(one, "tree2"))
for i in range(1000):
    open(os.path.join(one, "tree2", "t%04d" % i), "w").close()
# (Its last step, rmdir of tree2, succeeds only once meta has every unlink.)
subprocess.run(["rm", "-r", os.path.join(two, "tree2")], check=True)
assert not os.path.exists(os.path.join(two, "tree2")), "tree2 still there after rm -r"
# Files this mount made, removed in order once its cached entries expired
# (--attr-timeout 1 s): again LOOKUP then UNLINK for each name, no readdir.
made = os.path.join(two, "made")
os.mkdir(made)
for i in range(1000):
    open(os.path.join(made, "m%04d" % i), "w").close()
time.sleep(1.5)
for i in range(1000):
    os.unlink(os.path.join(made, "m%04d" % i))
os.rmdir(made)
print("# stat walk then rm, rm -r, made then removed: ok")
EOF
fusermount3 -u "$MNT2" || fail "unmount of the second mount failed"
wait "$MOUNT2_PID" 2>/dev/null || true
# The mount's last words: "unlinks: N answered before tessera-meta had them, M waited for it".
read -r early waited < <(sed -n 's/.*unlinks: \([0-9]*\) answered before tessera-meta had them, \([0-9]*\) waited.*/\1 \2/p' "$T/mount2.log")
[ -n "${early:-}" ] || fail "the second mount logged no unlink counts: $(tail -n 5 "$T/mount2.log")"
log "second mount: $early unlinks answered early, $waited waited for meta"
[ "$early" -ge 3800 ] ||
    fail "only $early of the 4000 unlinks (a stat walk then rm, an rm -r, files made then removed) were answered early"

# Unlinks queued at unmount are sent before the mount exits.
mkdir "$MNT/last"
for i in $(seq 1 400); do : >"$MNT/last/l$i"; done
rm -f "$MNT/last"/l*
cluster_down
cluster_restart
left=$(find "$MNT/last" -mindepth 1 | wc -l)
[ "$left" = 0 ] || fail "$left files removed just before unmount are back after a restart"
rmdir "$MNT/last" || fail "rmdir of the emptied directory after restart failed"

assert_daemons_alive
log "ok"
