#!/usr/bin/env bash
# A remount never uncovers the bare mountpoint: while a writer creates files
# with fsync in the mount's top directory, the mount process is killed with
# SIGKILL and `tessera up` is run at once, several times over. Each `tessera
# up` must succeed right after the kill (it recognises its own dying mount),
# every file the writer saw succeed must be in the cluster, only one mount
# may be left at the mountpoint, and once everything is unmounted the
# directory underneath must be empty: a file there was written to the local
# disk while the mountpoint was bare, and hidden by the next mount.
source "$(dirname "$0")/lib.sh"

ROUNDS=${REMOUNT_ROUNDS:-6}

cluster_up

# writer: one file per iteration, fsync'd by dd; the names that succeeded
# are listed in $T/written. Failures are expected while the mount is dead.
writer() {
    local i=0
    while [ ! -e "$T/stop-writer" ]; do
        i=$((i + 1))
        if printf 'file %d\n' "$i" | dd of="$MNT/w$i" conv=fsync status=none 2>/dev/null; then
            echo "w$i" >>"$T/written"
        else
            echo "w$i" >>"$T/failed"
        fi
    done
}
: >"$T/written"
: >"$T/failed"
writer &
WRITER_PID=$!
IT_PIDS+=("$WRITER_PID")

written_count() { wc -l <"$T/written"; }

# wait_written N: until the writer has N more successful files than now.
wait_written() {
    local target=$(($(written_count) + $1)) deadline=$(($(now_ms) + 30000))
    until [ "$(written_count)" -ge "$target" ]; do
        kill -0 "$WRITER_PID" 2>/dev/null || fail "the writer loop ended"
        (($(now_ms) < deadline)) || fail "the writer made no progress on the mount for 30 s"
        sleep 0.05
    done
}

problems=()
wait_written 20
for ((round = 1; round <= ROUNDS; round++)); do
    pid=$(pid_of mount)
    it_pid_is_ours "$pid" || fail "mount pid $pid is not a daemon of this test"
    kill -KILL "$pid"
    start=$(now_ms)
    if ! run_tool up --state "$STATE"; then
        problems+=("round $round: tessera up right after the kill failed: $(grep '^tessera up:' "$T/tool.log" | tail -n 2 | tr '\n' ' ')")
        # Go on all the same, to look for files in the bare mountpoint too.
        deadline=$(($(now_ms) + 30000))
        until run_tool up --state "$STATE"; do
            (($(now_ms) < deadline)) || fail "tessera up did not succeed within 30 s of the kill"
            sleep 0.2
        done
    fi
    log "round $round: killed the mount (pid $pid), up again after $(($(now_ms) - start)) ms"
    wait_mounted "$MNT"
    [ "$(pid_of mount)" != "$pid" ] || fail "tessera up did not start a new mount"
    wait_written 10
done

touch "$T/stop-writer"
wait "$WRITER_PID" || true
log "$(written_count) files written, $(wc -l <"$T/failed") writes failed while the mount was dead"

stacked=$(awk -v mnt="$MNT" '$5 == mnt' /proc/self/mountinfo | wc -l)
[ "$stacked" = 1 ] || problems+=("$stacked mounts at $MNT instead of one: $(awk -v mnt="$MNT" '$5 == mnt' /proc/self/mountinfo)")

# Every acknowledged file is in the cluster, with its contents.
lost=()
while read -r name; do
    if [ "$(cat "$MNT/$name" 2>/dev/null)" != "file ${name#w}" ]; then
        lost+=("$name")
    fi
done <"$T/written"
[ "${#lost[@]}" = 0 ] ||
    problems+=("${#lost[@]} files the writer saw written are not in the cluster: ${lost[*]:0:10}")
assert_daemons_alive

# Nothing under the mount: unmount everything (tessera down unmounts every
# mount stacked there) and look at the bare directory.
cluster_down
leftover=$(ls -A "$MNT")
[ -z "$leftover" ] ||
    problems+=("files written into the bare mountpoint: $(echo "$leftover" | head -n 10 | tr '\n' ' ')")

if [ "${#problems[@]}" != 0 ]; then
    fail "$(printf '%s; ' "${problems[@]}")"
fi
log "ok"
