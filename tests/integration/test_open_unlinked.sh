#!/usr/bin/env bash
# A file unlinked while a process holds it open lives as long as the process
# holds it, whatever happens to tessera-meta and to other mounts:
#  1. meta killed (SIGKILL) and started again while a shell holds two fds on
#     an unlinked file: after meta's grace period the bytes still read back
#     through the fds, new writes and fsync through them succeed; closing
#     both reclaims the tiles on the datanode (neither the restart nor a
#     second handle leaves it held forever);
#  2. a second mount killed with SIGKILL while it holds an unlinked file
#     open: once its lease expires (a short --mount-lease-ms) meta deletes
#     the file and the datanode its tiles;
#  3. a mount stopped (SIGSTOP) for longer than its lease while it holds an
#     unlinked file: meta deletes the file; when the mount runs again its
#     reads of that file fail with EIO instead of returning garbage.
# A hand-started cluster (one meta, one datanode) so meta can be restarted
# by pid with the same flags.
source "$(dirname "$0")/lib.sh"

# Over twice the mount's --meta-timeout-ms (given below): a renewal lost
# with the killed meta times out and the next still comes within the grace.
LEASE_MS=3000
MOUNT_ARGS=(--meta-timeout-ms 1500)
DIR=$T/cluster
META_ARGS=()
# A meta without sessions (before issue 27) has no --mount-lease-ms: it runs
# with its defaults, and this test shows what it loses.
if "$TESSERA_META" --help | grep -q -- '--mount-lease-ms'; then
    META_ARGS=(--mount-lease-ms "$LEASE_MS")
fi

small_cluster_up "$DIR"
# small_cluster_up starts meta without our flags: start it again with them.
META_PID=$(pgrep -f -- "--data $DIR/meta" | head -n 1)
it_pid_is_ours "$META_PID" || fail "cannot find the meta this test started"

# start_meta: tessera-meta on SMALL_META with the store in $DIR/meta,
# without the shell's fds on the mount (a daemon holding one would keep the
# file open itself).
start_meta() {
    local log_file=$DIR/meta.$1.log
    start_daemon tessera-meta "$log_file" bash -c 'exec "$@" 3<&- 4<&- 5<&- 6<&-' meta \
        "$TESSERA_META" --listen "$SMALL_META" --data "$DIR/meta" "${META_ARGS[@]}" ||
        fail "tessera-meta could not bind $SMALL_META again"
    META_PID=$SMALL_LAST_PID
    META_LOG=$log_file
}

# kill_meta: SIGKILL of the running meta, by pid, and wait until it is gone.
kill_meta() {
    it_pid_is_ours "$META_PID" || fail "meta pid $META_PID is not ours"
    kill -KILL "$META_PID"
    while kill -0 "$META_PID" 2>/dev/null; do sleep 0.05; done
}

kill_meta
start_meta 1
small_mount "$DIR" "$T/mnt" "${MOUNT_ARGS[@]}"
M=$T/mnt
MOUNT_PID=$SMALL_MOUNT_PID

# tiles_of INO: how many tile files of inode INO the datanode holds.
tiles_of() {
    local files=("$DIR"/node1/tiles/$(($1 % 256))/"$1".*.*[0-9]) # not the .crc sidecars
    [ -e "${files[0]}" ] && echo "${#files[@]}" || echo 0
}

# wait_tiles_gone INO WHY: up to 30 s for the datanode to delete them.
wait_tiles_gone() {
    local deadline=$(($(now_ms) + 30000))
    while [ "$(tiles_of "$1")" != 0 ]; do
        (($(now_ms) < deadline)) || fail "$2: $(tiles_of "$1") tile files of inode $1 remain after 30 s"
        sleep 0.2
    done
}

# fd_check FD ORIGINAL: reads the whole file through the shell's FD (its page
# cache dropped first, so the bytes come from the datanode) and compares.
fd_check() {
    python3 - "$1" "$2" <<'EOF'
import os, sys
fd = int(sys.argv[1])
want = open(sys.argv[2], "rb").read()
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
got = os.pread(fd, len(want) + 4096, 0)
if got != want:
    sys.exit("fd %d: %d bytes read, %d expected, first difference at %s" % (
        fd, len(got), len(want),
        next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), "the end")))
EOF
}

# fd_write FD FILE OFFSET: writes FILE's bytes at OFFSET through FD, fsyncs,
# and updates FILE to what the whole file must now hold ($FILE.full).
fd_write() {
    python3 - "$@" <<'EOF'
import os, sys
fd, path, offset = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
patch = os.urandom(300000)
os.pwrite(fd, patch, offset)
os.fsync(fd)
full = bytearray(open(path, "rb").read())
if len(full) < offset + len(patch):
    full.extend(b"\0" * (offset + len(patch) - len(full)))
full[offset:offset + len(patch)] = patch
open(path, "wb").write(full)
EOF
}

# ---- 1. meta restarts while an unlinked file is open -----------------------

original=$(random_file 3000000)
cp "$original" "$M/held"
sync "$M/held"
ino=$(stat -c %i "$M/held")
exec 3<>"$M/held"
exec 4<"$M/held" # a second handle of the same mount on the same file
rm "$M/held"
[ ! -e "$M/held" ] || fail "held is still listed after rm"
[ "$(tiles_of "$ino")" -gt 0 ] || fail "no tile files of inode $ino on the datanode"
fd_check 3 "$original" || fail "reading the unlinked open file before the restart failed"
log "inode $ino open twice and unlinked; $(tiles_of "$ino") tile files"

kill_meta
log "killed tessera-meta"
start_meta 2
if [ ${#META_ARGS[@]} -gt 0 ]; then
    # The mount finds its session unknown and announces its opens; after a
    # lease, meta sweeps the orphans nobody announced.
    wait_for 30 "the mount to announce its opens to the new meta" \
        grep -q 'announced [1-9][0-9]* opens' "$DIR/mount-mnt.log"
    wait_for 30 "meta's orphan sweep a lease after its start" \
        grep -q 'orphan sweep' "$META_LOG"
fi
fd_check 3 "$original" || fail "the unlinked open file does not read back after meta restarted"
fd_write 3 "$original" 1500000 || fail "a write and fsync through the fd after the restart failed"
fd_write 3 "$original" 2900000 || fail "a write past the end and fsync after the restart failed"
fd_check 3 "$original" || fail "the bytes written after the restart do not read back"
fd_check 4 "$original" || fail "the second handle does not read what the first wrote"
[ "$(tiles_of "$ino")" -gt 0 ] || fail "the tiles of the open file were deleted"
log "after meta's restart the unlinked file reads and writes through both fds"

exec 4<&-
exec 3<&-
wait_tiles_gone "$ino" "after the last close of the unlinked file"
log "closing both fds reclaimed the tiles"

# ---- 2. a mount killed with SIGKILL while it holds an unlinked file -------

mkdir -p "$T/mnt2"
small_mount "$DIR" "$T/mnt2" "${MOUNT_ARGS[@]}"
KILLED_PID=$SMALL_MOUNT_PID
cp "$(random_file 2000000)" "$T/mnt2/doomed"
sync "$T/mnt2/doomed"
ino2=$(stat -c %i "$T/mnt2/doomed")
exec 5<"$T/mnt2/doomed"
rm "$T/mnt2/doomed"
[ "$(tiles_of "$ino2")" -gt 0 ] || fail "no tile files of inode $ino2"
it_pid_is_ours "$KILLED_PID" || fail "mount pid $KILLED_PID is not ours"
kill -KILL "$KILLED_PID"
while kill -0 "$KILLED_PID" 2>/dev/null; do sleep 0.05; done
log "killed the second mount (pid $KILLED_PID) holding inode $ino2 open"
wait_tiles_gone "$ino2" "after the killed mount's lease expired"
exec 5<&- 2>/dev/null || true # its connection is gone
fusermount3 -uz "$T/mnt2" 2>/dev/null || true
log "meta reaped the file the killed mount held"

# ---- 3. a mount cut off longer than its lease comes back -------------------

# The fd is held by a process of its own: while the mount is stopped, every
# child of this shell that inherited an fd on the mount would hang in its
# exit (the kernel asks the mount to flush it).
if [ ${#META_ARGS[@]} -gt 0 ]; then
    cp "$(random_file 1500000)" "$M/stopped"
    sync "$M/stopped"
    ino3=$(stat -c %i "$M/stopped")
    python3 -c '
import errno, os, signal, sys
path, out = sys.argv[1], sys.argv[2]
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
fd = os.open(path, os.O_RDONLY)
open(out + ".ready", "w").close()
signal.sigwait([signal.SIGUSR1])
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
try:
    result = "read %d bytes" % len(os.pread(fd, 4096, 0))
except OSError as e:
    result = errno.errorcode[e.errno]
open(out + ".tmp", "w").write(result)
os.rename(out + ".tmp", out)
' "$M/stopped" "$T/holder" &
    HOLDER_PID=$!
    IT_PIDS+=("$HOLDER_PID")
    wait_for 30 "the holder to open the file" test -e "$T/holder.ready"
    rm "$M/stopped"
    it_pid_is_ours "$MOUNT_PID" || fail "mount pid $MOUNT_PID is not ours"
    kill -STOP "$MOUNT_PID"
    log "stopped the mount (pid $MOUNT_PID) while a process holds inode $ino3 open"
    deadline=$(($(now_ms) + 30000))
    while [ "$(tiles_of "$ino3")" != 0 ] && (($(now_ms) < deadline)); do sleep 0.2; done
    kill -CONT "$MOUNT_PID"
    [ "$(tiles_of "$ino3")" = 0 ] || fail "meta kept the file of a mount silent for 30 s"
    wait_for 30 "the mount to learn its open file was deleted" \
        grep -q 'deleted by tessera-meta while this mount' "$DIR/mount-mnt.log"
    kill -USR1 "$HOLDER_PID"
    wait_for 30 "the holder's read" test -e "$T/holder"
    wait "$HOLDER_PID" || true
    # EIO from the mount's data path; ENOENT or ESTALE when the kernel asks
    # for the attributes first. Never bytes.
    case $(cat "$T/holder") in
    EIO | ENOENT | ESTALE) ;;
    *) fail "a read of the deleted file gave: $(cat "$T/holder")" ;;
    esac
    # The mount goes on working.
    echo fine >"$M/after" && [ "$(cat "$M/after")" = fine ] || fail "the mount broke after SIGCONT"
    log "after its lease expired the mount's read of the deleted file failed: $(cat "$T/holder")"
fi

kill -0 "$META_PID" || fail "tessera-meta died"
kill -0 "$MOUNT_PID" || fail "the mount died"
log "ok"
