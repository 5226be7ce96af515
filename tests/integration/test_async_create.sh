#!/usr/bin/env bash
# Creates answered before meta has them, under directory leases
# (fuse/dirlease.h), must look synchronous to everyone: the creating mount
# lists, stats, writes and reads its new files at once; a second mount sees
# every one of them, with the same inode numbers, as soon as it looks (meta
# makes it wait for the lease and calls it back); two mounts creating the
# same names with O_EXCL at the same time never both succeed; files created
# just before tessera-meta is killed, or just before unmount, are there
# afterwards.
source "$(dirname "$0")/lib.sh"

cluster_up

pgrep -f "tessera-mount .*$MNT" >/dev/null || fail "no tessera-mount for $MNT"
grep -q -- '--async-creates' <("$TESSERA_MOUNT" --help) || fail "tessera-mount has no --async-creates"
MNT2=$T/mnt2
mount_second "$MNT2"

python3 - "$MNT" "$MNT2" <<'EOF2' || fail "create-then-use checks failed (see above)"
import errno, os, sys
one, two = sys.argv[1], sys.argv[2]
d = os.path.join(one, "made")
os.mkdir(d)
names = ["f%05d" % i for i in range(3000)]
for n in names:
    fd = os.open(os.path.join(d, n), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)
    if n.endswith("7"):
        os.write(fd, n.encode() * 100)
    os.close(fd)
# This mount, at once: listing, attributes, contents, O_EXCL again.
assert sorted(os.listdir(d)) == names, "listing right after the creates"
st = os.stat(os.path.join(d, "f00017"))
assert st.st_size == 600 and (st.st_mode & 0o777) == 0o640, st
with open(os.path.join(d, "f00017"), "rb") as f:
    assert f.read() == b"f00017" * 100
try:
    os.open(os.path.join(d, "f02999"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    raise AssertionError("O_EXCL create of an existing name succeeded")
except FileExistsError:
    pass
# The other mount: every name, the same inodes, sizes and modes.
seen = sorted(os.listdir(os.path.join(two, "made")))
assert seen == names, "mount 2 lists %d of the 3000 names" % len(seen)
for n in names[::97] + ["f00017"]:
    a, b = os.stat(os.path.join(d, n)), os.stat(os.path.join(two, "made", n))
    assert (a.st_ino, a.st_size, a.st_mode) == (b.st_ino, b.st_size, b.st_mode), (n, a, b)
with open(os.path.join(two, "made", "f00017"), "rb") as f:
    assert f.read() == b"f00017" * 100, "content of f00017 on mount 2"
try:
    os.open(os.path.join(two, "made", "f00000"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    raise AssertionError("O_EXCL create on mount 2 of a name mount 1 made succeeded")
except FileExistsError:
    pass
print("# create-then-use, second mount: ok")
EOF2

# Each mount creates in its own directory (under its lease) while removing
# the other's old files: removals from a leased directory go through
# without recalling the lease, and every change lands on both mounts.
python3 - "$MNT" "$MNT2" <<'EOF2' || fail "crossed creates and removals"
import os, sys
one, two = sys.argv[1], sys.argv[2]
for d in ("a", "b"):
    os.mkdir(os.path.join(one, d))
    for i in range(500):
        open(os.path.join(one, d, "old%03d" % i), "w").close()
def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(fd)
    os.close(fd)
for mnt, d in ((two, "a"), (one, "b")):  # the remover's cache knows the old names
    for i in range(500):
        os.stat(os.path.join(mnt, d, "old%03d" % i))
if os.fork() == 0:
    for i in range(1000):
        open(os.path.join(two, "b", "new%04d" % i), "w").close()
        if i % 2 == 0:
            os.unlink(os.path.join(two, "a", "old%03d" % (i // 2)))
    fsync_dir(os.path.join(two, "a"))  # what other mounts see at once (nsqueue.h)
    os._exit(0)
for i in range(1000):
    open(os.path.join(one, "a", "new%04d" % i), "w").close()
    if i % 2 == 0:
        os.unlink(os.path.join(one, "b", "old%03d" % (i // 2)))
fsync_dir(os.path.join(one, "b"))
_, status = os.wait()
assert status == 0, "the process on mount 2 failed"
want = ["new%04d" % i for i in range(1000)]
for mnt in (one, two):
    for d in ("a", "b"):
        got = sorted(os.listdir(os.path.join(mnt, d)))
        assert got == want, "%s/%s: %d names, %d old" % (mnt, d, len(got),
                                                         sum(n.startswith("old") for n in got))
print("# crossed creates and removals: ok")
EOF2
grep -q "failed in tessera-meta" "$T/mount2.log" "$STATE/logs/mount.log" &&
    fail "a change answered early failed in meta: $(grep -h "failed in tessera-meta" "$T/mount2.log" "$STATE/logs/mount.log" | head -3)"

# Both mounts create the same names with O_EXCL at once: exactly one wins each.
cat >"$T/race.py" <<'EOF2'
import os, sys
d, tag = sys.argv[1], sys.argv[2]
won = []
# One racer goes up, the other down: they meet halfway and fight over names.
for i in (range(1500) if tag == "one" else range(1499, -1, -1)):
    p = os.path.join(d, "r%05d" % i)
    try:
        fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        continue
    os.write(fd, tag.encode())
    os.close(fd)
    won.append("r%05d" % i)
print("\n".join(won))
EOF2
mkdir "$MNT/race"
python3 "$T/race.py" "$MNT/race" one >"$T/won.one" &
racer=$!
python3 "$T/race.py" "$MNT2/race" two >"$T/won.two" || fail "racer on mount 2 failed"
wait "$racer" || fail "racer on mount 1 failed"
both=$(sort "$T/won.one" "$T/won.two" | uniq -d | grep -c . || true)
total=$(cat "$T/won.one" "$T/won.two" | grep -c . || true)
log "O_EXCL race: mount 1 won $(grep -c . "$T/won.one" || true), mount 2 $(grep -c . "$T/won.two" || true)"
[ "$both" = 0 ] || fail "$both names created with O_EXCL by both mounts: $(sort "$T/won.one" "$T/won.two" | uniq -d | head -3)"
[ "$total" = 1500 ] || fail "$total of the 1500 names were won (each must be won once)"
python3 - "$MNT/race" "$MNT2/race" "$T/won.one" "$T/won.two" <<'EOF2' || fail "a racer's file holds the wrong tag"
import sys
for mount in sys.argv[1:3]:
    for tag, won in (("one", sys.argv[3]), ("two", sys.argv[4])):
        for n in open(won).read().split():
            got = open(mount + "/" + n).read()
            assert got == tag, "%s/%s holds %r, its winner wrote %r" % (mount, n, got, tag)
EOF2

# A fresh mount's creates in a directory of its own are answered early (its
# exit log counts them, and nothing else).
fusermount3 -u "$MNT2" || fail "unmount of the second mount failed"
wait "$MOUNT2_PID" 2>/dev/null || true
MNT2=$T/mnt3
mount_second "$MNT2"
python3 - "$MNT2" <<'EOF2' || fail "creates on the third mount"
import os, sys
d = os.path.join(sys.argv[1], "own")
os.mkdir(d)
for i in range(2000):
    open(os.path.join(d, "o%05d" % i), "w").close()
EOF2
fusermount3 -u "$MNT2" || fail "unmount of the third mount failed"
wait "$MOUNT2_PID" 2>/dev/null || true
early=$(sed -n 's/.*creates: \([0-9]*\) answered before tessera-meta had them.*/\1/p' "$T/mount2.log")
[ -n "${early:-}" ] || fail "the third mount logged no create count: $(tail -n 5 "$T/mount2.log")"
log "third mount: $early creates answered early"
[ "$early" -ge 1800 ] || fail "only $early of the 2000 creates in its own directory were answered early"
[ "$(ls "$MNT/own" | wc -l)" = 2000 ] || fail "mount 1 lists $(ls "$MNT/own" | wc -l) of the 2000 files the third mount made"

# tessera-meta killed right after creates were answered: the mount sends them
# again, with the same inode numbers, to the restarted meta.
mkdir "$MNT/killed"
python3 - "$MNT/killed" >"$T/killed.inodes" <<'EOF2' || fail "creates before the meta kill"
import os, sys
for i in range(1000):
    p = os.path.join(sys.argv[1], "k%04d" % i)
    open(p, "w").close()
    print(p.rsplit("/", 1)[1], os.stat(p).st_ino)
EOF2
pid=$(pid_of meta)
it_pid_is_ours "$pid" || fail "meta pid $pid is not a daemon of this test"
kill -KILL "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
log "killed tessera-meta (pid $pid) right after 1000 creates"
cluster_restart
wait_for 60 "all 1000 files in the restarted meta" \
    bash -c "[ \$(ls '$MNT/killed' | wc -l) = 1000 ]"
while read -r n ino; do
    now=$(stat -c %i "$MNT/killed/$n") || fail "$n is gone after the meta kill"
    [ "$now" = "$ino" ] || fail "$n has inode $now after the meta kill, $ino before"
done <"$T/killed.inodes"

# Creates queued at unmount are sent before the mount exits.
mkdir "$MNT/last"
for i in $(seq 1 400); do : >"$MNT/last/l$i"; done
cluster_down
cluster_restart
[ "$(ls "$MNT/last" | wc -l)" = 400 ] || fail "$(ls "$MNT/last" | wc -l) of the 400 files made just before unmount are there after a restart"

assert_daemons_alive
log "ok"
