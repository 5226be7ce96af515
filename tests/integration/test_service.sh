#!/usr/bin/env bash
# The daemons as systemd Type=notify services, without systemd: each runs
# with $NOTIFY_SOCKET naming a datagram socket this test listens on
# (notify_listen.py) and --log-file. READY=1 arrives only once it serves
# (meta and the datanode accept connections on their ports, the mount is
# mounted); the log lines carry ISO 8601 times with their zone; SIGHUP
# after the log file was moved away (logrotate) writes on into a new file
# and the daemon goes on; SIGTERM (the mount: its unmount) sends STOPPING=1
# and a clean exit 0 logged in the new file. The unit files pass
# `systemd-analyze verify` (when it is installed), pointed at the built
# binaries.
source "$(dirname "$0")/lib.sh"

LISTEN=$IT_DIR/notify_listen.py
META=tcp://127.0.0.1:$((BASE + 5))
NODE_PORT=$((BASE + 6))
MNT2=$T/svc-mnt
mkdir -p "$T/svc/meta" "$T/svc/node1" "$MNT2"

# listener NAME CHECK: a notification socket $T/NAME.sock, messages in $T/NAME.notify.
listener() {
    python3 "$LISTEN" "$T/$1.sock" "$T/$1.notify" "$2" &
    IT_PIDS+=("$!")
    wait_for 10 "the $1 notification socket" test -S "$T/$1.sock"
}
# ready_checked NAME: wait for READY=1 from NAME and the check made then.
ready_checked() {
    wait_for 30 "READY=1 from $1" grep -q '^CHECK ' "$T/$1.notify"
    grep -q '^READY=1$' "$T/$1.notify" || fail "$1 sent no READY=1: $(cat "$T/$1.notify")"
    grep -q '^CHECK ok$' "$T/$1.notify" ||
        fail "$1 sent READY=1 before it served: $(cat "$T/$1.notify")"
    grep -q '^STATUS=' "$T/$1.notify" || fail "$1 sent no STATUS= line"
}
# rotate NAME PID: move NAME's log away, SIGHUP, and wait for the new file.
rotate() {
    mv "$T/$1.log" "$T/$1.log.1"
    kill -HUP "$2"
    wait_for 10 "$1 to reopen $T/$1.log after SIGHUP" test -e "$T/$1.log"
    kill -0 "$2" 2>/dev/null || fail "$1 died of SIGHUP"
}
# stopped_cleanly NAME PID LINE: PID exited 0, STOPPING=1 was sent, LINE is in the new log only.
stopped_cleanly() {
    local rc=0
    wait "$2" || rc=$?
    [ "$rc" = 0 ] || fail "$1 exited $rc after its stop, not 0: $(tail -n 5 "$T/$1.log")"
    grep -q '^STOPPING=1$' "$T/$1.notify" || fail "$1 sent no STOPPING=1: $(cat "$T/$1.notify")"
    grep -q "$3" "$T/$1.log" || fail "$1's reopened log lacks '$3': $(cat "$T/$1.log")"
    if grep -q "$3" "$T/$1.log.1"; then
        fail "$1 still wrote into the rotated log after SIGHUP"
    fi
}

listener meta "tcp:$((BASE + 5))"
NOTIFY_SOCKET=$T/meta.sock "$TESSERA_META" --listen "$META" --data "$T/svc/meta" \
    --log-file "$T/meta.log" &
meta_pid=$!
IT_PIDS+=("$meta_pid")
ready_checked meta

listener node1 "tcp:$NODE_PORT"
NOTIFY_SOCKET=$T/node1.sock "$TESSERA_DATANODE" --listen "tcp://127.0.0.1:$NODE_PORT" \
    --meta "$META" --data "$T/svc/node1" --log-file "$T/node1.log" &
node_pid=$!
IT_PIDS+=("$node_pid")
ready_checked node1

listener mount "mount:$MNT2"
IT_MOUNTS+=("$MNT2")
NOTIFY_SOCKET=$T/mount.sock "$TESSERA_MOUNT" --meta "$META" --io-timeout-ms "$IO_TIMEOUT_MS" \
    --log-file "$T/mount.log" -f "$MNT2" &
mount_pid=$!
IT_PIDS+=("$mount_pid")
ready_checked mount
log "READY=1 from meta, the datanode and the mount, each once it served"

iso='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} tessera-'
for name in meta node1 mount; do
    [ -s "$T/$name.log" ] || fail "$name wrote nothing to its --log-file"
    bad=$(grep -Evc "$iso" "$T/$name.log" || true)
    [ "$bad" = 0 ] || fail "$name has $bad log lines without an ISO 8601 time and zone: $(head -n 3 "$T/$name.log")"
done

rotate meta "$meta_pid"
rotate node1 "$node_pid"
rotate mount "$mount_pid"
head -c 2000000 /dev/urandom >"$SHM/input"
cp "$SHM/input" "$MNT2/file" || fail "cannot write to the mount after SIGHUP"
drop_file_cache "$MNT2/file"
cmp "$SHM/input" "$MNT2/file" || fail "the file read back differs"
log "SIGHUP after rotation: each daemon reopened its log and went on serving"

fusermount3 -u "$MNT2" || fail "cannot unmount $MNT2"
stopped_cleanly mount "$mount_pid" "unmounted $MNT2"
kill -TERM "$node_pid"
stopped_cleanly node1 "$node_pid" "info: stopped"
kill -TERM "$meta_pid"
stopped_cleanly meta "$meta_pid" "stopping on signal 15"
log "STOPPING=1 and exit 0 on SIGTERM (the mount on its unmount), logged after the rotation"

if ! command -v systemd-analyze >/dev/null; then
    log "systemd-analyze is not installed: the unit files are not verified"
    exit 0
fi
mkdir -p "$T/units"
for unit in "$TESSERA_BUILD"/packaging/systemd/*.service; do
    # The installed binaries' paths, pointed at the built ones.
    sed -E -e "s|/[^ ]*/bin/tessera-meta|$TESSERA_META|g" \
        -e "s|/[^ ]*/bin/tessera-datanode|$TESSERA_DATANODE|g" \
        -e "s|/[^ ]*/bin/tessera-mount|$TESSERA_MOUNT|g" "$unit" >"$T/units/$(basename "$unit")"
done
[ -f "$T/units/tessera-meta.service" ] || fail "no unit files in $TESSERA_BUILD/packaging/systemd"
grep -q '^Type=notify$' "$T/units/tessera-datanode@.service" || fail "the datanode unit is not Type=notify"
systemd-analyze verify "$T/units/tessera-meta.service" "$T/units/tessera-datanode@disk1.service" \
    "$T/units/tessera-mount@home.service" >"$T/verify.out" 2>&1 ||
    fail "systemd-analyze verify failed: $(cat "$T/verify.out")"
[ ! -s "$T/verify.out" ] || fail "systemd-analyze verify warns: $(cat "$T/verify.out")"
log "the three unit files pass systemd-analyze verify"
