# shellcheck shell=bash
#
# @file lib.sh
# Shared harness of the integration tests, sourced by every test_*.sh.
#
# Each test gets its own temporary directory $T (state dir $STATE, mount point
# $MNT, logs), its own /dev/shm directory $SHM for random input files, and its
# own block of ten TCP ports starting at $BASE, derived from the test's pid so
# that tests never collide with each other or with a cluster already running
# on the default ports. cluster_up starts the real daemons with the built
# `tessera up`; one EXIT trap tears everything down whatever happened:
# `tessera down`, every pid the test started (checked to be ours before it is
# killed), `fusermount3 -uz` on every mount point, then the directories.
#
# Conventions: a test calls fail "why" to stop with the daemons' log tails on
# stderr; it never sleeps blindly but polls with wait_for and a deadline; it
# exits 77 (skip) through skip "why" when the machine cannot run it.
# Set IT_KEEP=1 to keep $T after the run for debugging.

set -euo pipefail
exec </dev/null # CI has no stdin; nothing here may ever prompt

IT_NAME=$(basename "$0" .sh)
IT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESSERA_BUILD=${TESSERA_BUILD:-$IT_DIR/../../build}
TESSERA_TOOL=$TESSERA_BUILD/tools/tessera
TESSERA_META=$TESSERA_BUILD/meta/tessera-meta
TESSERA_DATANODE=$TESSERA_BUILD/datanode/tessera-datanode
TESSERA_MOUNT=$TESSERA_BUILD/fuse/tessera-mount
# `tessera up` may look its daemons up in PATH: make it find the built ones.
PATH=$TESSERA_BUILD/tools:$TESSERA_BUILD/meta:$TESSERA_BUILD/datanode:$TESSERA_BUILD/fuse:$PATH
export PATH

IO_TIMEOUT_MS=2000 # the mount's --io-timeout-ms in every test cluster

T=""
SHM=""
STATE=""
MNT=""
BASE=0
IT_PIDS=()     # processes the test started itself (second mount, ...)
IT_MOUNTS=()   # every mount point the test used
IT_STATES=()   # every state dir given to `tessera up`
IT_LOGS_SHOWN=0

log() { printf '# %s: %s\n' "$IT_NAME" "$*"; }

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Print the tail of every log the test produced (daemons, tools, commands).
dump_logs() {
    local file
    [ -n "$T" ] && [ -d "$T" ] || return 0
    IT_LOGS_SHOWN=1
    while IFS= read -r file; do
        echo "---- $file (last 40 lines)"
        tail -n 40 "$file"
    done < <(find "$T" -path "$T/mnt*" -prune -o -path '*/tiles' -prune -o -type f \
        \( -name '*.log' -o -path '*/log/*' -o -path '*/logs/*' -o -name '*.err' \) -print |
        sort)
    if [ -n "$STATE" ] && [ -d "$STATE/run" ]; then
        echo "---- pid files in $STATE/run"
        local pidfile
        for pidfile in "$STATE"/run/*.pid; do
            [ -e "$pidfile" ] || continue
            local pid
            pid=$(cat "$pidfile" 2>/dev/null || true)
            if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
                echo "$(basename "$pidfile"): $pid alive"
            else
                echo "$(basename "$pidfile"): $pid not running"
            fi
        done
    fi
}

# fail MESSAGE: stop the test with MESSAGE and the logs; the EXIT trap cleans up.
# The message comes before the logs and again after them, where meson's
# truncated error log shows it.
fail() {
    echo "FAIL: $IT_NAME: $*" >&2
    dump_logs >&2
    echo "FAIL: $IT_NAME: $*" >&2
    exit 1
}

# skip MESSAGE: the machine cannot run this test; meson counts exit 77 as skipped.
skip() {
    echo "SKIP: $IT_NAME: $*"
    exit 77
}

it_on_error() {
    local status=$1 line=$2 command=$3
    echo "FAIL: $IT_NAME: line $line: '$command' exited with $status" >&2
    if [ "$IT_LOGS_SHOWN" = 0 ]; then
        dump_logs >&2
        echo "FAIL: $IT_NAME: line $line: '$command' exited with $status" >&2
    fi
}

# True if pid is alive and was started for this test (its command line names
# our temporary directory), so a recycled pid is never killed by mistake.
it_pid_is_ours() {
    local pid=$1 cmdline
    if [ -z "$pid" ] || [ -z "$T" ] || [ ! -r "/proc/$pid/cmdline" ]; then
        return 1
    fi
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ $cmdline == *"$T"* ]]
}

# Stop one of our processes: SIGTERM, up to 10 s, then SIGKILL.
it_stop_pid() {
    local pid=$1 i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    kill -CONT "$pid" 2>/dev/null || true # a test may have stopped it (SIGSTOP)
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    echo "# $IT_NAME: pid $pid ignored SIGTERM for 10 s, sending SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
}

# it_teardown RC: stop and remove everything the test started, in the order
# below; exits with RC, or 1 if something was left over or a sanitizer
# reported an error.
it_teardown() {
    local rc=$1
    local mnt state pid pidfile
    set +e
    trap - ERR
    # Mounts the test made itself first, so their daemons see a clean unmount.
    for mnt in "${IT_MOUNTS[@]}"; do
        if mountpoint -q "$mnt" 2>/dev/null; then
            timeout -k 5 20 fusermount3 -u "$mnt" 2>/dev/null
        fi
    done
    for pid in "${IT_PIDS[@]}"; do
        it_stop_pid "$pid"
    done
    for state in "${IT_STATES[@]}"; do
        if [ -x "$TESSERA_TOOL" ] && [ -d "$state" ]; then
            echo "== tessera down --state $state (cleanup)" >>"$T/tool.log"
            timeout -k 5 60 "$TESSERA_TOOL" down --state "$state" >>"$T/tool.log" 2>&1 ||
                echo "# $IT_NAME: 'tessera down' in cleanup failed, see tool.log" >&2
        fi
        # Whatever `tessera down` left behind, by its pid file, if it is ours.
        for pidfile in "$state"/run/*.pid; do
            [ -e "$pidfile" ] || continue
            pid=$(cat "$pidfile" 2>/dev/null)
            if it_pid_is_ours "$pid"; then
                echo "# $IT_NAME: $(basename "$pidfile" .pid) (pid $pid) still running after down; killing" >&2
                kill -KILL "$pid" 2>/dev/null
                [ "$rc" -eq 0 ] && rc=1
            fi
        done
    done
    for mnt in "${IT_MOUNTS[@]}"; do
        fusermount3 -uz "$mnt" 2>/dev/null
    done
    # A sanitizer report in any daemon's log fails the test even if the
    # commands on the mount all succeeded.
    if [ -n "$T" ] && [ -d "$T" ]; then
        local reports
        reports=$(grep -rlE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' \
            --include='*.log' --exclude-dir='mnt*' --exclude-dir=tiles "$T" 2>/dev/null)
        if [ -n "$reports" ]; then
            echo "FAIL: $IT_NAME: sanitizer report in: $reports" >&2
            grep -rhE -A 30 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' \
                --include='*.log' --exclude-dir='mnt*' --exclude-dir=tiles "$T" >&2
            [ "$rc" -eq 0 ] && rc=1
        fi
    fi
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ "$IT_LOGS_SHOWN" = 0 ]; then
        dump_logs >&2
    fi
    for mnt in "${IT_MOUNTS[@]}"; do
        if mountpoint -q "$mnt" 2>/dev/null; then
            echo "# $IT_NAME: $mnt is still mounted; leaving $T in place" >&2
            [ "$rc" -eq 0 ] && rc=1
            T=""
        fi
    done
    if [ "${IT_KEEP:-0}" = 1 ]; then
        [ -n "$T" ] && echo "# $IT_NAME: kept $T (IT_KEEP=1)" >&2
    elif [ -n "$T" ]; then
        rm -rf --one-file-system "$T"
    fi
    [ -n "$SHM" ] && rm -rf "$SHM"
    exit "$rc"
}

it_cleanup() {
    it_teardown $?
}

# SIGTERM/SIGINT: meson sends SIGTERM to the test's process group on a
# timeout and SIGKILL half a second later, too soon for `tessera down`. Show
# the logs now, then tear down from a new session that the SIGKILL misses.
it_on_signal() {
    local rc=$1
    trap '' TERM INT
    trap - EXIT ERR
    echo "FAIL: $IT_NAME: stopped by a signal (timeout?); tearing down in the background" >&2
    [ "$IT_LOGS_SHOWN" = 1 ] || dump_logs >&2
    setsid -f bash -c "$(declare -p T SHM STATE TESSERA_TOOL IT_NAME IT_PIDS IT_MOUNTS IT_STATES)
        $(declare -f it_teardown it_stop_pid it_pid_is_ours dump_logs)
        IT_LOGS_SHOWN=1
        it_teardown $rc" </dev/null >/dev/null 2>&1
    exit "$rc"
}

# Pick ten free TCP ports BASE..BASE+9: the block numbered from the pid
# (20000 + (pid % blocks) * 10), or the next free one. Blocks stay below the
# kernel's ephemeral range (ip_local_port_range, usually from 32768), where
# any outgoing connection may hold a port at any time. IT_PORT_SHIFT moves
# the choice on after a collision (see cluster_up).
IT_PORT_SHIFT=0
it_pick_base() {
    local try candidate port busy listening ephemeral_low blocks
    ephemeral_low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    blocks=$(((ephemeral_low - 20000) / 10))
    [ "$blocks" -ge 100 ] || blocks=2000 # odd port range: use the plain formula
    listening=$(ss -Htlnu 2>/dev/null | awk '{print $5}' | sed 's/.*://' | sort -u)
    for ((try = 0; try < blocks; try++)); do
        candidate=$((20000 + (($$ + IT_PORT_SHIFT + try * 7) % blocks) * 10))
        busy=0
        for ((port = candidate; port < candidate + 10; port++)); do
            if grep -qx "$port" <<<"$listening"; then
                busy=1
                break
            fi
        done
        if [ "$busy" = 0 ]; then
            BASE=$candidate
            return 0
        fi
    done
    fail "no free block of 10 TCP ports from 20000 up to $((20000 + blocks * 10))"
}

# True if a daemon log under (or at) PATH says its port was taken meanwhile.
it_port_was_taken() {
    grep -rqs 'Address already in use' --include='*.log' "$1"
}

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND until it succeeds.
wait_for() {
    local seconds=$1 description=$2
    shift 2
    local deadline=$(($(now_ms) + seconds * 1000))
    until "$@" >/dev/null 2>&1; do
        if (($(now_ms) > deadline)); then
            fail "timed out after ${seconds}s waiting for $description"
        fi
        sleep 0.1
    done
}

# random_file SIZE: print the path of a new file of SIZE random bytes (head -c
# syntax: 200M, 4K, 12345) in this test's /dev/shm directory.
random_file() {
    local file
    file=$(mktemp "$SHM/random.XXXXXX")
    head -c "$1" /dev/urandom >"$file"
    echo "$file"
}

# datanodes_served_bytes NODE...: the tile bytes the datanodes NODE... read
# since their counters were last reset (tessera node stats).
datanodes_served_bytes() {
    local node total=0 bytes
    for node in "$@"; do
        bytes=$("$TESSERA_TOOL" node stats "$node" --json --state "$STATE" |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["bytes_read"])') ||
            fail "tessera node stats $node failed"
        total=$((total + bytes))
    done
    echo "$total"
}

# datanodes_reset_stats NODE...: resets the datanodes' counters.
datanodes_reset_stats() {
    local node
    for node in "$@"; do
        "$TESSERA_TOOL" node stats "$node" --reset --state "$STATE" >/dev/null ||
            fail "tessera node stats $node --reset failed"
    done
}

# drop_file_cache FILE: flush FILE and drop its pages from the kernel's page
# cache (posix_fadvise DONTNEED through dd), so the next read of a file on the
# mount really goes to the datanodes. Unlike drop_caches this touches only
# that file, needs no root, and leaves other users of the machine alone.
drop_file_cache() {
    sync "$1"
    dd if="$1" iflag=nocache count=0 status=none
}

# pid_of NAME: the pid recorded in $STATE/run/NAME.pid (meta, node2, mount...).
pid_of() {
    local file=$STATE/run/$1.pid
    [ -r "$file" ] || fail "no pid file $file (tessera up did not write it)"
    cat "$file"
}

# The meta endpoint of the cluster: read from the running meta's --listen
# argument or its --config file (tessera up's), else the convention that
# meta listens on the base port.
meta_endpoint() {
    local pid args endpoint="" config=""
    pid=$(cat "$STATE/run/meta.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ]; then
        mapfile -d '' -t args <"/proc/$pid/cmdline"
        local i
        for ((i = 0; i < ${#args[@]}; i++)); do
            case ${args[$i]} in
            --listen) endpoint=${args[$((i + 1))]:-} ;;
            --listen=*) endpoint=${args[$i]#--listen=} ;;
            --config) config=${args[$((i + 1))]:-} ;;
            esac
        done
    fi
    if [ -z "$endpoint" ] && [ -n "$config" ] && [ -r "$config" ]; then
        endpoint=$(sed -n 's/^listen *= *//p' "$config" | tail -n 1)
    fi
    echo "${endpoint:-tcp://127.0.0.1:$BASE}"
}

# Fail unless every daemon named in $STATE/run is alive (catches crashes
# that the commands on the mount did not notice). Names given as arguments
# are left out (a test that killed node2 passes node2).
assert_daemons_alive() {
    local pidfile name pid skip_name skipped
    [ -d "$STATE/run" ] || fail "no $STATE/run directory"
    for pidfile in "$STATE"/run/*.pid; do
        [ -e "$pidfile" ] || fail "no pid files in $STATE/run"
        name=$(basename "$pidfile" .pid)
        skipped=0
        for skip_name in "$@"; do
            [ "$name" = "$skip_name" ] && skipped=1
        done
        [ "$skipped" = 1 ] && continue
        pid=$(cat "$pidfile")
        kill -0 "$pid" 2>/dev/null || fail "daemon $name (pid $pid) is no longer running"
    done
}

# run_tool ARGS...: the built `tessera` with ARGS, output to tool.log.
run_tool() {
    echo "== tessera $*" >>"$T/tool.log"
    timeout -k 5 120 "$TESSERA_TOOL" "$@" >>"$T/tool.log" 2>&1
}

wait_mounted() {
    local mnt=$1
    wait_for 30 "a tessera mount at $mnt" mountpoint -q "$mnt"
    wait_for 30 "$mnt to answer stat" stat "$mnt/."
}

# mount_second DIR [MOUNT ARGS...]: another tessera-mount of this cluster at
# DIR, unmounted and stopped with the rest; its pid in MOUNT2_PID, its log in
# $T/mount2.log. Its key is mount2's, or MOUNT2_KEY's when that names another.
mount_second() {
    local dir=$1 key
    shift
    mkdir -p "$dir"
    IT_MOUNTS+=("$dir")
    mapfile -t key < <(key_args "${MOUNT2_KEY:-mount2}" mount)
    "$TESSERA_MOUNT" --meta "$(meta_endpoint)" --io-timeout-ms "$IO_TIMEOUT_MS" -f \
        -o default_permissions "${key[@]}" "$@" "$dir" >"$T/mount2.log" 2>&1 &
    MOUNT2_PID=$!
    IT_PIDS+=("$MOUNT2_PID")
    local deadline=$(($(now_ms) + 30000))
    until mountpoint -q "$dir"; do
        kill -0 "$MOUNT2_PID" 2>/dev/null ||
            fail "second tessera-mount exited: $(tail -n 20 "$T/mount2.log")"
        (($(now_ms) < deadline)) || fail "second mount at $dir not up after 30 s"
        sleep 0.1
    done
    wait_mounted "$dir"
    log "second mount at $dir (pid $MOUNT2_PID)"
}

# key_args NAME ROLE: the arguments "--key FILE" that give a daemon of this
# cluster named NAME its own key (made with `tessera keys add` on first
# use), one per line; nothing for a cluster without keys. Use as
# mapfile -t args < <(key_args far datanode).
key_args() {
    local dir=$STATE/keys
    [ -f "$dir/known_keys" ] || return 0
    if [ ! -f "$dir/$1.key" ]; then
        "$TESSERA_TOOL" keys add --dir "$dir" --role "$2" "$1" >>"$T/tool.log" 2>&1 ||
            fail "tessera keys add --role $2 $1 failed (see tool.log)"
    fi
    printf -- '--key\n%s\n' "$dir/$1.key"
}

# start_daemon NAME LOG COMMAND...: run COMMAND in the background and wait
# for its "ready" log line. Returns 1 if it exited because its port was
# taken (the caller tries other ports); fails the test on any other exit.
start_daemon() {
    local name=$1 log_file=$2 pid deadline
    shift 2
    "$@" >"$log_file" 2>&1 &
    pid=$!
    IT_PIDS+=("$pid")
    SMALL_LAST_PID=$pid
    deadline=$(($(now_ms) + 30000))
    until grep -q 'info: ready' "$log_file"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            it_port_was_taken "$log_file" && return 1
            fail "$name exited before it was ready"
        fi
        (($(now_ms) < deadline)) || fail "$name not ready after 30 s"
        sleep 0.1
    done
}

# under_asan BINARY: whether BINARY is built with AddressSanitizer (whose
# shadow memory and quarantine make resident-memory caps meaningless). The
# ldd output is taken whole first: `ldd | grep -q` under pipefail fails at
# random when grep exits before ldd has written everything (SIGPIPE).
under_asan() {
    local libraries
    libraries=$(ldd "$1" 2>/dev/null) || true
    [[ $libraries == *libasan* ]]
}

# small_cluster_up DIR [DATANODE ARGS]: a cluster of its own, outside
# `tessera up`: one meta and one datanode (started with DATANODE ARGS) on
# BASE+5 and BASE+6, their data and logs under DIR. Sets SMALL_META (meta's
# endpoint) and SMALL_NODE_PID. Tries other ports if one is taken meanwhile.
small_cluster_up() {
    local dir=$1 attempt pid
    shift
    for attempt in 1 2 3; do
        rm -rf "$dir"
        mkdir -p "$dir/meta" "$dir/node1"
        SMALL_META=tcp://127.0.0.1:$((BASE + 5))
        if start_daemon tessera-meta "$dir/meta.log" \
            "$TESSERA_META" --listen "$SMALL_META" --data "$dir/meta" &&
            start_daemon tessera-datanode "$dir/node1.log" \
                "$TESSERA_DATANODE" --listen "tcp://127.0.0.1:$((BASE + 6))" \
                --meta "$SMALL_META" --data "$dir/node1" "$@"; then
            SMALL_NODE_PID=$SMALL_LAST_PID
            return
        fi
        [ "$attempt" != 3 ] || fail "ports taken three times over"
        log "a port of $BASE-$((BASE + 9)) was taken meanwhile; starting again on other ports"
        for pid in "${IT_PIDS[@]}"; do it_stop_pid "$pid"; done
        IT_PIDS=()
        mkdir -p "$T/attempt-$attempt"
        mv "$dir"/*.log "$T/attempt-$attempt/"
        IT_PORT_SHIFT=$((IT_PORT_SHIFT + 1 + RANDOM % 500))
        it_pick_base
    done
}

# small_mount DIR MNT [MOUNT ARGS]: a mount of small_cluster_up's cluster
# at MNT (log DIR/mount-NAME.log, where NAME is MNT's last part); sets
# SMALL_MOUNT_PID.
small_mount() {
    local dir=$1 mnt=$2 deadline
    shift 2
    mkdir -p "$mnt"
    IT_MOUNTS+=("$mnt")
    "$TESSERA_MOUNT" --meta "$SMALL_META" --io-timeout-ms "$IO_TIMEOUT_MS" -f \
        -o default_permissions "$@" "$mnt" >"$dir/mount-$(basename "$mnt").log" 2>&1 &
    SMALL_MOUNT_PID=$!
    IT_PIDS+=("$SMALL_MOUNT_PID")
    deadline=$(($(now_ms) + 30000))
    until mountpoint -q "$mnt"; do
        kill -0 "$SMALL_MOUNT_PID" 2>/dev/null || fail "tessera-mount at $mnt exited before mounting"
        (($(now_ms) < deadline)) || fail "mount at $mnt not up after 30 s"
        sleep 0.1
    done
}

# cluster_up [EXTRA ARGS]: meta + 4 datanodes + mount at $MNT under $STATE.
# If another program takes one of our ports between it_pick_base and the
# daemons' bind, `tessera up` fails (and stops what it started); then the
# cluster is started afresh on another block, up to three times.
cluster_up() {
    local attempt
    mkdir -p "$MNT"
    IT_STATES+=("$STATE")
    IT_MOUNTS+=("$MNT")
    for attempt in 1 2 3; do
        echo "== tessera up (attempt $attempt)" >"$T/up-attempt.log"
        if timeout -k 5 120 "$TESSERA_TOOL" up --state "$STATE" --mount "$MNT" --nodes 4 \
            --port "$BASE" --io-timeout-ms "$IO_TIMEOUT_MS" "$@" >>"$T/up-attempt.log" 2>&1; then
            cat "$T/up-attempt.log" >>"$T/tool.log"
            rm "$T/up-attempt.log"
            break
        fi
        # `tessera up` checks the ports first ("is in use"); a daemon that
        # loses the race to bind says so in its log.
        if [ "$attempt" = 3 ] ||
            ! { grep -q 'is in use' "$T/up-attempt.log" || it_port_was_taken "$STATE"; }; then
            fail "tessera up --state $STATE --mount $MNT --nodes 4 --port $BASE failed"
        fi
        log "a port of $BASE-$((BASE + 9)) was taken meanwhile; starting again on other ports"
        cat "$T/up-attempt.log" >>"$T/tool.log"
        [ -d "$STATE/logs" ] && mv "$STATE/logs" "$T/logs-attempt-$attempt"
        rm -rf "$STATE"
        IT_PORT_SHIFT=$((IT_PORT_SHIFT + 1 + RANDOM % 500))
        it_pick_base
    done
    wait_mounted "$MNT"
    assert_daemons_alive
    # The tool and client_helper given --meta (not --state) use this cluster's admin key.
    if [ -f "$STATE/keys/admin.key" ]; then
        export TESSERA_KEY=$STATE/keys/admin.key
    fi
    log "cluster up: state $STATE, mount $MNT, meta $(meta_endpoint)"
}

# cluster_restart: `tessera up --state $STATE` again, with the saved settings;
# it starts whatever is not running and must leave the rest alone.
cluster_restart() {
    run_tool up --state "$STATE" || fail "tessera up --state $STATE (restart) failed"
    wait_mounted "$MNT"
    assert_daemons_alive
}

# cluster_down: `tessera down`, then check nothing is left mounted or running.
cluster_down() {
    local pidfile pid
    run_tool down --state "$STATE" || fail "tessera down --state $STATE failed"
    if mountpoint -q "$MNT"; then
        fail "$MNT still mounted after tessera down"
    fi
    for pidfile in "$STATE"/run/*.pid; do
        [ -e "$pidfile" ] || continue
        pid=$(cat "$pidfile")
        if it_pid_is_ours "$pid"; then
            fail "$(basename "$pidfile" .pid) (pid $pid) still running after tessera down"
        fi
    done
}

# tree_listing DIR: one line per entry, sorted: path, type, mode, and for
# non-directories size, link count and link target (a directory's size and
# link count are the file system's own business). What a copy of a tree must
# reproduce besides the file contents.
tree_listing() {
    (cd "$1" && find . -mindepth 1 \( -type d -printf '%P %y %m\n' \) -o \
        -printf '%P %y %m %s %n %l\n' | LC_ALL=C sort)
}

# tree_checksums DIR: sha256 of every regular file, sorted by path.
tree_checksums() {
    (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
}

it_setup() {
    [ -c /dev/fuse ] || skip "/dev/fuse is missing (no FUSE on this machine)"
    # libfuse opens /dev/fuse itself before it mounts, even through fusermount3.
    if [ ! -r /dev/fuse ] || [ ! -w /dev/fuse ]; then
        skip "uid $(id -u) may not open /dev/fuse ($(stat -c %A /dev/fuse)); run as root or chmod 0666 /dev/fuse"
    fi
    command -v fusermount3 >/dev/null || skip "fusermount3 is missing (apt-get install fuse3)"
    local exe
    for exe in "$TESSERA_TOOL" "$TESSERA_META" "$TESSERA_DATANODE" "$TESSERA_MOUNT"; do
        [ -x "$exe" ] || fail "$exe not built (run ninja -C $TESSERA_BUILD)"
    done
    T=$(mktemp -d "${TMPDIR:-/tmp}/tessera-$IT_NAME.XXXXXX")
    SHM=$(mktemp -d "/dev/shm/tessera-$IT_NAME.XXXXXX")
    STATE=$T/state
    MNT=$T/mnt
    # The tools default to the user's own cluster ($TESSERA_STATE, else
    # ~/.local/state/tessera: its cluster.conf and admin key). A demo left
    # running or stopped there must not leak into a test: a keyless test meta
    # would never answer a tool that found the demo's key.
    export TESSERA_STATE=$T/user-state
    unset TESSERA_KEY
    trap it_cleanup EXIT
    trap 'it_on_signal 143' TERM
    trap 'it_on_signal 130' INT
    trap 'it_on_error $? $LINENO "$BASH_COMMAND"' ERR
    it_pick_base
    log "temp dir $T, ports $BASE-$((BASE + 9))"
}

it_setup
