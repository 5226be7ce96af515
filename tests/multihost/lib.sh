# shellcheck shell=bash
#
# @file lib.sh
# A cluster of K "machines" on one Linux box, for the multi-host tests and
# the bench/ scripts: each host is a network namespace with its own address,
# its own tessera-datanode (own data directory) and its own FUSE mount;
# tessera-meta runs on host 1. The hosts hang off one bridge that lives in a
# namespace of its own (the "switch"), so the root namespace's interfaces,
# routes and firewall are never touched, and every link is capped with tc so
# that a remote tile costs what it would over a real network.
#
#   source tests/multihost/lib.sh
#   mh_up 4                              # K = 4 hosts, links at $MH_LINK_MBPS
#   mh_exec 1 dd if=SRC of="${MH_MNT[1]}/f" bs=1M conv=fsync
#   mh_exec 3 cmp SRC "${MH_MNT[3]}/f"
#   # the EXIT trap tears it all down, or call mh_down
#
# Sourcing the file only defines things; mh_up (or mh_setup) checks the
# machine, installs the traps and starts the cluster.
#
# Network. Host i (1..K) is namespace ${MH_ID}-host$i with eth0 at
# $MH_SUBNET.(10+i)/24 (10.77.0.11, .12, ...); the other end of its veth is
# h$i in namespace ${MH_ID}-switch, a port of bridge br0 there. The addresses
# exist only inside these namespaces, so they cannot collide with anything
# outside, and nothing here ever sends to an address it did not create. Two
# clusters at once (two tests, a test and a bench) do not meet: each has its
# own namespaces, and ports are per namespace, so every cluster uses the
# fixed ports $MH_META_PORT (meta) and $MH_NODE_PORT (datanodes).
#
# Links. A tbf qdisc caps each host's link at $MH_LINK_MBPS MB/s (10^6
# bytes/s, as dd and `tessera-datanode --throttle-mbps` count) in both
# directions: egress of the host's eth0 is its upload, egress of the
# switch's h$i its download. A host reading from three others at once thus
# still gets one link's worth, as a real NIC would. Traffic between a host's
# own processes (its mount and its datanode, host 1's meta) goes over the
# namespace's loopback and is not capped: a local tile is cheap. TCP gets
# about 96 % of the cap as payload (25 MB/s: 24.0 MB/s measured).
#
# Daemons. Every one runs inside its host's namespace through
# `ip netns exec` (which execs, so the pid we hold is the daemon's):
#   host 1: tessera-meta --listen tcp://0.0.0.0:$MH_META_PORT
#   host i: tessera-datanode --listen tcp://0.0.0.0:$MH_NODE_PORT
#           --advertise tcp://ADDR_i:$MH_NODE_PORT --machine host$i
#           --meta $MH_META --data $MH_DIR/host$i/data
#   host i: tessera-mount --meta $MH_META --machine host$i -f $MH_MNT[i]
# Readiness is polled with deadlines, checking on every round that the
# daemons waited for are still alive: meta answers `tessera status` run on
# host 1, every datanode is listed "up" with its machine and address, every
# mount shows in /proc/<mount pid>/mountinfo and answers stat.
#
# Mounts, and how to reach them. `ip netns exec` also unshares the mount
# namespace (a fresh one per call, a slave of the root's), so a FUSE mount
# made by tessera-mount exists only in the private mount namespace of that
# tessera-mount process: `mount` in the root namespace does not list it, a
# second `ip netns exec` does not see it either, and $MH_MNT[i] is an empty
# directory to everyone else. The gain: the mount can never leak into the
# machine's mount table, and it vanishes with its process even after a
# kill -9. To use host i's mount:
#   mh_exec I CMD...   runs CMD in host i's network namespace AND in its
#                      mount's mount namespace (nsenter -t <mount pid> -m -n,
#                      keeping the working directory), so CMD sees
#                      $MH_MNT[i] mounted and uses host i's network. This is
#                      the way to run "a process on host i".
#   mh_path I [REL]    prints /proc/<mount pid>/root$MH_MNT[i]/REL, the same
#                      mount reached from the root namespace (root only), for
#                      tools that must run outside (the transfers are still
#                      host i's: the tessera-mount daemon does them).
# As on real machines, host i's mount is seen on host i only. CMD must be
# a program (use bash -c '...' for a script), and its paths should be
# absolute or relative to the current directory. Anything outside the
# mounts (source files in /dev/shm, $MH_DIR) is the same file everywhere.
# Never write to $MH_MNT[i] from the root namespace: it is the empty
# directory under the mount there.
#
# Teardown. Everything started is written to $MH_DIR/registry as it is
# started (namespaces, daemons with their start times, mounts). One
# function, mh__teardown, undoes it from the registry: test processes left
# in the hosts' namespaces, then every mount (fusermount3 -u inside its
# mount namespace), every daemon by its pid (SIGTERM, then SIGKILL after
# 10 s; a pid is only signalled if its start time is the one recorded),
# whatever still runs in our namespaces, the namespaces (which takes the
# veths and the bridge with them) and the temporary directories; then it
# checks that none of it is left and that no daemon log holds a sanitizer
# report (either fails the run; $MH_DIR is then kept). It runs from the EXIT trap (also after
# INT and TERM), from mh_down, and from a reaper: a small process in its own
# session (setsid) that polls the test's pid and tears down if the test died
# without doing so (kill -9, or meson's SIGKILL of the process group right
# after its SIGTERM). Bash runs a trap only once the foreground command
# has ended; mh_exec waits with `wait`, which a signal interrupts, so a
# SIGTERM during a long mh_exec tears down at once.
#
# Skips (exit 77, with the reason): not root, no ip/tc/nsenter/fusermount3,
# no /dev/fuse, or the kernel refuses a network namespace, bridge, veth or
# tbf qdisc. Nothing is installed at test time (scripts/install-deps.sh
# installs iproute2, fuse3, attr).
#
# Settings (environment, read by mh_up):
#   TESSERA_BUILD     meson build dir with meta/tessera-meta,
#                     datanode/tessera-datanode, fuse/tessera-mount,
#                     tools/tessera (default: build/ of this repository)
#   MH_HOSTS          K, when mh_up is given no count (default 4, at most 64)
#   MH_LINK_MBPS      link cap per host and direction in MB/s; 0 = no cap
#                     (default 25)
#   MH_TRUNK_AT       two subclusters: hosts 1..N on switch br0, the others
#                     on br1, the two switches joined by one link (veth
#                     tr0-tr1 in the switch namespace); 0 = one switch
#                     (default)
#   MH_TRUNK_MBPS     that link's cap each way in MB/s (default 10)
#   MH_SUBNET         first three octets of the hosts' /24 (default 10.77.0)
#   MH_META_PORT, MH_NODE_PORT   (default 7400, 7401)
#   MH_IO_TIMEOUT_MS  the mounts' --io-timeout-ms (default 5000)
#   MH_READY_TIMEOUT  seconds to wait for each readiness step (default 30)
#   MH_TMPDIR         where $MH_DIR is made (default $TMPDIR or /tmp; use
#                     /dev/shm to keep the tiles in RAM)
#   MH_META_ARGS, MH_NODE_ARGS, MH_MOUNT_ARGS   extra arguments for every
#                     meta / datanode / mount (split on spaces)
#   MH_NODE_ARGS_<i>, MH_MOUNT_ARGS_<i>         extra arguments for host i
#   MH_KEEP=1         keep $MH_DIR (logs, data) after the teardown
# Set by mh_up (arrays are indexed by host, 1..K):
#   MH_K, MH_ID, MH_DIR, MH_LOGS, MH_SHM (scratch dir in /dev/shm), MH_META
#   (meta's endpoint), MH_SWITCH_NS, MH_NS[i], MH_ADDR[i], MH_MACHINE[i]
#   (host$i), MH_NODE_EP[i] (advertised endpoint), MH_DATA[i] (datanode
#   data dir), MH_MNT[i] (mount point, see above), MH_META_PID,
#   MH_NODE_PID[i], MH_MOUNT_PID[i], MH_TOOL (tools/tessera)
# Functions (each described where it is defined):
#   mh_up [K], mh_down                  start the cluster / tear it down
#   mh_hosts [K]                        the hosts' network alone (mh_up's first half)
#   mh_exec I CMD..., mh_path I [REL]   use host I (see "Mounts" above)
#   mh_status [ARGS], mh_node_id I      `tessera status` on host 1; node ids
#   mh_set_link I MBPS                  change host I's cap at run time
#   mh_link_bytes I rx|tx               bytes host I's link moved so far
#   mh_tiles_on I INO                   tiles of a file on host I's datanode
#   mh_drop_cache I FILE, mh_random_file SIZE
#   mh_stop_node I [SIG], mh_start_node I     (also _mount, and
#   mh_stop_meta [SIG], mh_start_meta          for kill -9 tests)
#   mh_assert_alive, mh_wait_for SECS DESC CMD..., mh_now_ms,
#   mh_log, mh_fail, mh_skip, mh_setup (checks and traps; mh_up calls it)

MH_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
MH_NAME=${MH_NAME:-$(basename "$0" .sh)}
TESSERA_BUILD=${TESSERA_BUILD:-$(dirname "$MH_LIB")/../../build}
MH_TOOL=$TESSERA_BUILD/tools/tessera
MH_META_BIN=$TESSERA_BUILD/meta/tessera-meta
MH_DATANODE_BIN=$TESSERA_BUILD/datanode/tessera-datanode
MH_MOUNT_BIN=$TESSERA_BUILD/fuse/tessera-mount

MH_HOSTS=${MH_HOSTS:-4}
MH_LINK_MBPS=${MH_LINK_MBPS:-25}
MH_TRUNK_AT=${MH_TRUNK_AT:-0}
MH_TRUNK_MBPS=${MH_TRUNK_MBPS:-10}
MH_SUBNET=${MH_SUBNET:-10.77.0}
MH_META_PORT=${MH_META_PORT:-7400}
MH_NODE_PORT=${MH_NODE_PORT:-7401}
MH_IO_TIMEOUT_MS=${MH_IO_TIMEOUT_MS:-5000}
MH_READY_TIMEOUT=${MH_READY_TIMEOUT:-30}
MH_TMPDIR=${MH_TMPDIR:-${TMPDIR:-/tmp}}
MH_KEEP=${MH_KEEP:-0}

MH_K=0
MH_ID=""
MH_DIR=""
MH_LOGS=""
MH_SHM=""
MH_META=""
MH_SWITCH_NS=""
MH_META_PID=""
MH_NS=()
MH_ADDR=()
MH_MACHINE=()
MH_NODE_EP=()
MH_DATA=()
MH_MNT=()
MH_NODE_PID=()
MH_MOUNT_PID=()
MH_SETUP_DONE=0
MH_LOGS_SHOWN=0

mh_log() { printf '# %s: %s\n' "$MH_NAME" "$*"; }

mh_now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Print the last lines of every daemon log of this cluster.
mh__dump_logs() {
    local file
    [ -n "$MH_LOGS" ] && [ -d "$MH_LOGS" ] || return 0
    MH_LOGS_SHOWN=1
    for file in "$MH_LOGS"/*.log; do
        [ -e "$file" ] || continue
        echo "---- $file (last 30 lines)"
        tail -n 30 "$file"
    done
}

# mh_fail MESSAGE: stop with MESSAGE and the daemons' logs; the EXIT trap
# tears down. The message is repeated after the logs, where a truncated
# test log still shows it.
mh_fail() {
    echo "FAIL: $MH_NAME: $*" >&2
    mh__dump_logs >&2
    echo "FAIL: $MH_NAME: $*" >&2
    exit 1
}

# mh_skip MESSAGE: this machine cannot run the test; meson counts 77 as a skip.
mh_skip() {
    echo "SKIP: $MH_NAME: $*"
    exit 77
}

# The start time of pid (field 22 of /proc/PID/stat, in clock ticks since
# boot): with the pid it names one process, whatever pids get reused.
mh__starttime() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) } # the command name may hold spaces; fields 3.. follow ") "
    # shellcheck disable=SC2086
    set -- $stat
    echo "${20}"
}

# True if PID is alive (not a zombie) and started at START.
mh__alive() {
    local start
    start=$(mh__starttime "$1") || return 1
    [ "$start" = "$2" ] && mh__pid_running "$1"
}

# True if pid $1 (a daemon we started) is still running (not a zombie).
mh__pid_running() {
    local state
    [ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# mh_wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND until it succeeds;
# fail after SECONDS. Every round also checks that the daemons listed in
# MH_WAIT_PIDS (pid:name words) are alive, so a crash fails at once.
MH_WAIT_PIDS=""
mh_wait_for() {
    local seconds=$1 description=$2 word
    shift 2
    local deadline=$(($(mh_now_ms) + seconds * 1000))
    until "$@" >/dev/null 2>&1; do
        for word in $MH_WAIT_PIDS; do
            mh__pid_running "${word%%:*}" ||
                mh_fail "${word#*:} (pid ${word%%:*}) died while waiting for $description"
        done
        if (($(mh_now_ms) > deadline)); then
            mh_fail "timed out after ${seconds}s waiting for $description"
        fi
        sleep 0.1
    done
}

mh__register() { echo "$*" >>"$MH_DIR/registry"; }

# ---------------------------------------------------------------- teardown

# mh__stop_pid PID START LABEL: SIGTERM, up to 10 s, then SIGKILL; only if
# PID is still the process started at START.
mh__stop_pid() {
    local pid=$1 start=$2 label=$3 i
    mh__alive "$pid" "$start" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do
        mh__alive "$pid" "$start" || return 0
        sleep 0.1
    done
    echo "teardown: $label (pid $pid) ignored SIGTERM for 10 s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null
    for ((i = 0; i < 50; i++)); do
        mh__alive "$pid" "$start" || return 0
        sleep 0.1
    done
}

# mh__kill_ns_pids NS KEEP...: SIGTERM to every process in network namespace
# NS but the pids in KEEP, 3 s, then SIGKILL. Only we put processes in our
# namespaces, so they are all ours.
mh__kill_ns_pids() {
    local ns=$1 pid keep i left
    shift
    local -a victims=()
    for pid in $(ip netns pids "$ns" 2>/dev/null); do
        for keep in "$@"; do
            [ "$pid" = "$keep" ] && continue 2
        done
        victims+=("$pid")
    done
    [ "${#victims[@]}" = 0 ] && return 0
    echo "teardown: stopping processes left in $ns: ${victims[*]}"
    kill -TERM "${victims[@]}" 2>/dev/null
    for ((i = 0; i < 30; i++)); do
        left=0
        for pid in "${victims[@]}"; do
            kill -0 "$pid" 2>/dev/null && left=1
        done
        [ "$left" = 0 ] && return 0
        sleep 0.1
    done
    kill -KILL "${victims[@]}" 2>/dev/null
}

# mh__teardown DIR KEEP: undo everything $DIR/registry lists (see @file),
# then remove DIR unless KEEP=1. Prints what it did and what was left;
# returns 1 if something could not be removed (DIR is kept then) or a
# daemon's log has a sanitizer report. Uses nothing but its
# arguments and the registry, so the reaper can run it after the test died.
mh__teardown() {
    local dir=$1 keep=${2:-0} kind a b c d ns pid start mnt i left=0 line
    local -a namespaces=() procs=() mounts=() dirs=() daemon_pids=()
    [ -n "$dir" ] && [ -f "$dir/registry" ] || return 0
    while IFS= read -r line; do
        read -r kind a b c d <<<"$line"
        case $kind in
        ns) namespaces+=("$a") ;;
        proc) procs+=("$a $b $c") daemon_pids+=("$a") ;;
        mount) mounts+=("$a $b $c $d") daemon_pids+=("$a") ;;
        dir) dirs+=("$a") ;;
        esac
    done <"$dir/registry"

    # 1. What the test left running on the hosts (a dd in the background...).
    for ((i = ${#namespaces[@]} - 1; i >= 0; i--)); do
        mh__kill_ns_pids "${namespaces[$i]}" "${daemon_pids[@]}"
    done
    # 2. The mounts, inside their mount namespaces; tessera-mount -f exits
    # once its mount is gone.
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
        read -r pid start mnt _ <<<"${mounts[$i]}"
        mh__alive "$pid" "$start" || continue
        if grep -qF " $mnt " "/proc/$pid/mountinfo" 2>/dev/null; then
            timeout -k 2 20 nsenter -t "$pid" -m fusermount3 -u "$mnt" 2>&1 ||
                timeout -k 2 20 nsenter -t "$pid" -m fusermount3 -uz "$mnt" 2>&1
        fi
        mh__stop_pid "$pid" "$start" "mount $mnt"
    done
    # 3. Daemons, last started first (datanodes before meta).
    for ((i = ${#procs[@]} - 1; i >= 0; i--)); do
        read -r pid start label <<<"${procs[$i]}"
        mh__stop_pid "$pid" "$start" "$label"
    done
    # 4. Anything still in our namespaces, then the namespaces themselves:
    # deleting a host's takes its veth (both ends) along, the switch's the
    # bridge.
    for ((i = ${#namespaces[@]} - 1; i >= 0; i--)); do
        ns=${namespaces[$i]}
        [ -e "/run/netns/$ns" ] || continue
        mh__kill_ns_pids "$ns"
        ip netns del "$ns" 2>&1 || left=1
    done
    # 5. Check: no namespace, process or mount of ours is left.
    for ns in "${namespaces[@]}"; do
        if [ -e "/run/netns/$ns" ]; then
            echo "teardown: namespace $ns is still there"
            left=1
        fi
    done
    for line in "${procs[@]}" "${mounts[@]}"; do
        read -r pid start _ <<<"$line"
        if mh__alive "$pid" "$start"; then
            echo "teardown: pid $pid ($line) is still running"
            left=1
        fi
    done
    # A sanitizer report in a daemon's log (a build with -Db_sanitize) fails
    # the run even if every command on the mounts succeeded; the daemons
    # are stopped now, so their exit-time reports are in.
    local pattern='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:'
    local -a reports=()
    mapfile -t reports < <(grep -lE "$pattern" "$dir"/logs/*.log 2>/dev/null)
    if [ "${#reports[@]}" != 0 ]; then
        echo "teardown: sanitizer report in: ${reports[*]}"
        grep -hE -A 30 "$pattern" "${reports[@]}"
        left=1
    fi
    for d in "${dirs[@]}"; do # scratch files
        rm -rf --one-file-system "$d"
    done
    if [ "$left" = 1 ] || [ "$keep" = 1 ]; then
        echo "teardown: kept $dir"
    else
        rm -rf --one-file-system "$dir"
    fi
    [ "$left" = 0 ]
}

# The reaper: waits (polling) for the test process PID/START to end; if it
# ended without tearing down (the registry is still there), tears down.
mh__reaper() {
    local pid=$1 start=$2 dir=$3 keep=$4
    echo "$BASHPID $(mh__starttime "$BASHPID")" >"$dir/reaper.pid"
    while mh__alive "$pid" "$start"; do
        [ -f "$dir/registry" ] || return 0
        sleep 0.5
    done
    [ -f "$dir/registry" ] || return 0
    echo "reaper: test process $pid ended without tearing down; tearing down $dir"
    mh__teardown "$dir" "$keep"
}

# mh_down: tear the cluster down now (the EXIT trap does it otherwise).
# Returns 1 if something was left over.
mh_down() {
    local rc=0 reaper="" pid start
    [ -n "$MH_DIR" ] && [ -f "$MH_DIR/registry" ] || return 0
    reaper=$(cat "$MH_DIR/reaper.pid" 2>/dev/null || true)
    if [ "$MH_KEEP" = 1 ]; then
        mh__teardown "$MH_DIR" 1 >>"$MH_DIR/teardown.log" 2>&1 || rc=1
    else
        # The directory goes away, so the log goes to stderr if it says anything.
        local log
        log=$(mh__teardown "$MH_DIR" 0 2>&1) || rc=1
        [ -z "$log" ] || printf '%s\n' "$log" >&2
    fi
    if [ -f "$MH_DIR/registry" ]; then
        mv "$MH_DIR/registry" "$MH_DIR/registry.done"
    fi
    # The reaper has nothing left to watch. (One that has not written its
    # pid yet ends by itself: it finds no registry.)
    if [ -n "$reaper" ]; then
        read -r pid start <<<"$reaper"
        if mh__alive "$pid" "$start"; then
            kill -TERM "$pid" 2>/dev/null || true
        fi
    fi
    if [ "$rc" = 0 ]; then
        mh_log "teardown done: no namespace, process or mount of cluster $MH_ID left"
    else
        echo "# $MH_NAME: teardown of $MH_ID found a leftover or a sanitizer report (see above)" >&2
    fi
    MH_DIR=""
    MH_K=0
    return "$rc"
}

mh__on_exit() {
    local rc=$?
    set +e
    trap - ERR
    trap '' INT TERM
    if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ "$MH_LOGS_SHOWN" = 0 ]; then
        mh__dump_logs >&2
    fi
    mh_down || { [ "$rc" = 0 ] && rc=1; }
    exit "$rc"
}

mh__on_signal() {
    trap '' INT TERM
    echo "FAIL: $MH_NAME: stopped by signal $2; tearing down" >&2
    exit "$1" # runs the EXIT trap
}

# ---------------------------------------------------------------- setup

# mh_setup: check the machine (skip if it cannot host namespaces and FUSE)
# and the binaries, install the traps. mh_up calls it.
mh_setup() {
    local exe tool
    [ "$MH_SETUP_DONE" = 1 ] && return 0
    [ "$(id -u)" = 0 ] ||
        mh_skip "needs root (network namespaces, tc and FUSE mounts inside them); run as root"
    for tool in ip tc nsenter fusermount3 setsid; do
        command -v "$tool" >/dev/null ||
            mh_skip "'$tool' is missing (scripts/install-deps.sh installs iproute2, fuse3)"
    done
    [ -c /dev/fuse ] || mh_skip "/dev/fuse is missing (no FUSE on this machine)"
    for exe in "$MH_TOOL" "$MH_META_BIN" "$MH_DATANODE_BIN" "$MH_MOUNT_BIN"; do
        [ -x "$exe" ] || mh_fail "$exe is not built (run ninja -C $TESSERA_BUILD)"
    done
    trap mh__on_exit EXIT
    trap 'mh__on_signal 143 TERM' TERM
    trap 'mh__on_signal 130 INT' INT
    MH_SETUP_DONE=1
}

# mh__net CMD...: run a network setup command; if the kernel refuses it,
# the machine cannot host the harness: skip (the trap removes what exists).
mh__net() {
    local err
    if ! err=$("$@" 2>&1); then
        mh_skip "cannot build the test network: '$*' failed: $err"
    fi
}

# mh_set_link I MBPS: cap host I's link at MBPS MB/s each way (0: no cap).
mh_set_link() {
    local i=$1 mbps=$2
    if [ "$mbps" = 0 ]; then
        tc -n "${MH_NS[$i]}" qdisc del dev eth0 root 2>/dev/null || true
        tc -n "$MH_SWITCH_NS" qdisc del dev "h$i" root 2>/dev/null || true
        return 0
    fi
    [[ $mbps =~ ^[0-9]+$ ]] || mh_fail "mh_set_link: '$mbps' is not a whole number of MB/s"
    mh__tbf "${MH_NS[$i]}" eth0 "$mbps"
    mh__tbf "$MH_SWITCH_NS" "h$i" "$mbps"
}

# mh__tbf NS DEV MBPS: cap DEV's egress in namespace NS at MBPS MB/s.
mh__tbf() {
    local bits=$(($3 * 8))mbit burst=$(($3 * 10000))
    # A burst of 10 ms of traffic (at least 64 KiB, one GSO packet): enough
    # for the timer not to lose rate, small enough not to show as a spike.
    # 100 ms of queue, so TCP fills the pipe without a drop per window.
    [ "$burst" -ge 65536 ] || burst=65536
    mh__net tc -n "$1" qdisc replace dev "$2" root tbf rate "$bits" burst "$burst" latency 100ms
}

# The network: switch namespace with br0 (and br1 with MH_TRUNK_AT), K host
# namespaces, veths, caps.
mh__network_up() {
    local i ns bridge=br0
    [[ $MH_TRUNK_AT =~ ^[0-9]+$ && $MH_TRUNK_MBPS =~ ^[1-9][0-9]*$ ]] ||
        mh_fail "MH_TRUNK_AT='$MH_TRUNK_AT', MH_TRUNK_MBPS='$MH_TRUNK_MBPS' must be whole numbers"
    MH_SWITCH_NS=$MH_ID-switch
    mh__register ns "$MH_SWITCH_NS"
    mh__net ip netns add "$MH_SWITCH_NS"
    mh__net ip -n "$MH_SWITCH_NS" link set lo up
    mh__net ip -n "$MH_SWITCH_NS" link add br0 type bridge
    mh__net ip -n "$MH_SWITCH_NS" link set br0 up
    if [ "$MH_TRUNK_AT" -gt 0 ]; then
        # Two switches and the one capped link between them: all traffic
        # between the subclusters shares it, each way.
        mh__net ip -n "$MH_SWITCH_NS" link add br1 type bridge
        mh__net ip -n "$MH_SWITCH_NS" link set br1 up
        mh__net ip -n "$MH_SWITCH_NS" link add tr0 type veth peer name tr1
        mh__net ip -n "$MH_SWITCH_NS" link set tr0 master br0 up
        mh__net ip -n "$MH_SWITCH_NS" link set tr1 master br1 up
        mh__tbf "$MH_SWITCH_NS" tr0 "$MH_TRUNK_MBPS"
        mh__tbf "$MH_SWITCH_NS" tr1 "$MH_TRUNK_MBPS"
    fi
    for ((i = 1; i <= MH_K; i++)); do
        ns=$MH_ID-host$i
        MH_NS[i]=$ns
        MH_ADDR[i]=$MH_SUBNET.$((10 + i))
        MH_MACHINE[i]=host$i
        mh__register ns "$ns"
        mh__net ip netns add "$ns"
        mh__net ip -n "$MH_SWITCH_NS" link add "h$i" type veth peer name eth0 netns "$ns"
        [ "$MH_TRUNK_AT" -gt 0 ] && [ "$i" -gt "$MH_TRUNK_AT" ] && bridge=br1
        mh__net ip -n "$MH_SWITCH_NS" link set "h$i" master "$bridge" up
        mh__net ip -n "$ns" link set lo up
        mh__net ip -n "$ns" addr add "${MH_ADDR[$i]}/24" dev eth0
        mh__net ip -n "$ns" link set eth0 up
        mh_set_link "$i" "$MH_LINK_MBPS"
    done
}

# mh__start LABEL LOG NS CMD...: start CMD in namespace NS in the background
# with stdout and stderr to LOG; registers it; sets MH__PID.
MH__PID=""
mh__start() {
    local label=$1 log=$2 ns=$3 start
    shift 3
    ip netns exec "$ns" "$@" </dev/null >>"$log" 2>&1 &
    MH__PID=$!
    start=$(mh__starttime "$MH__PID") || mh_fail "$label exited at once; see $log: $(tail -n 5 "$log")"
    mh__register proc "$MH__PID" "$start" "$label"
}

# The extra arguments of host i from MH_<WHAT>_ARGS and MH_<WHAT>_ARGS_<i>.
mh__extra_args() {
    local what=$1 i=$2 all per
    all=MH_${what}_ARGS
    per=MH_${what}_ARGS_$i
    echo "${!all:-} ${!per:-}"
}

# True if the daemon PID has logged its "ready" line in LOG (common/log.c
# writes "NAME[PID] info: ready..."). After a restart this tells the new
# process from the old one, which meta may still list as up.
mh__logged_ready() {
    grep -q "\[$1\] info: ready" "$2" 2>/dev/null
}

mh__meta_ready() {
    mh__logged_ready "$MH_META_PID" "$MH_LOGS/meta.log" &&
        ip netns exec "${MH_NS[1]}" "$MH_TOOL" status --meta "$MH_META" --timeout-ms 1000
}

# True if host i's datanode is ready and meta lists it up at its
# advertised endpoint.
mh__node_listed() {
    local i=$1 json
    mh__logged_ready "${MH_NODE_PID[$i]}" "$MH_LOGS/node$i.log" || return 1
    json=$(ip netns exec "${MH_NS[1]}" "$MH_TOOL" status --meta "$MH_META" --json --timeout-ms 1000) ||
        return 1
    grep -F "\"machine\": \"${MH_MACHINE[$i]}\", \"address\": \"${MH_NODE_EP[$i]}\", \"state\": \"up\"" \
        <<<"$json" >/dev/null
}

mh__mounted() {
    local i=$1 pid=${MH_MOUNT_PID[$1]}
    grep -q " ${MH_MNT[$i]} .* - fuse.tessera " "/proc/$pid/mountinfo" 2>/dev/null &&
        nsenter -t "$pid" -m stat "${MH_MNT[$i]}/." >/dev/null
}

# mh_start_node I: start host I's datanode and wait until meta lists it up.
mh_start_node() {
    local i=$1 log
    log=$MH_LOGS/node$i.log
    # shellcheck disable=SC2046
    mh__start "datanode-host$i" "$log" "${MH_NS[$i]}" "$MH_DATANODE_BIN" \
        --listen "tcp://0.0.0.0:$MH_NODE_PORT" --advertise "${MH_NODE_EP[$i]}" \
        --meta "$MH_META" --data "${MH_DATA[$i]}" --machine "${MH_MACHINE[$i]}" \
        --key "$MH_KEYS/node$i.key" $(mh__extra_args NODE "$i")
    MH_NODE_PID[i]=$MH__PID
    MH_WAIT_PIDS="$MH__PID:datanode-host$i" \
        mh_wait_for "$MH_READY_TIMEOUT" "meta to list host$i's datanode up" mh__node_listed "$i"
}

# mh_stop_node I [SIGNAL]: stop host I's datanode (SIGTERM and wait, or e.g.
# KILL to crash it) and wait until it is gone.
mh_stop_node() {
    local i=$1 signal=${2:-TERM} pid=${MH_NODE_PID[$1]:-}
    [ -n "$pid" ] || return 0
    kill "-$signal" "$pid" 2>/dev/null || true
    mh_wait_for 15 "host$i's datanode (pid $pid) to exit" eval "! mh__pid_running $pid"
    wait "$pid" 2>/dev/null || true
    MH_NODE_PID[i]=""
}

# mh_start_meta: start meta on host 1 (again, after mh_stop_meta) and wait
# until it answers and lists every running datanode up again.
mh_start_meta() {
    local i
    # shellcheck disable=SC2086 # extra arguments are split on spaces
    mh__start "meta-host1" "$MH_LOGS/meta.log" "${MH_NS[1]}" "$MH_META_BIN" \
        --listen "tcp://0.0.0.0:$MH_META_PORT" --data "$MH_DIR/host1/meta" --key "$MH_KEYS/meta.key" \
        ${MH_META_ARGS:-}
    MH_META_PID=$MH__PID
    MH_WAIT_PIDS="$MH_META_PID:meta" mh_wait_for "$MH_READY_TIMEOUT" "meta at $MH_META" mh__meta_ready
    for ((i = 1; i <= MH_K; i++)); do
        [ -n "${MH_NODE_PID[$i]:-}" ] || continue
        MH_WAIT_PIDS="$MH_META_PID:meta ${MH_NODE_PID[$i]}:datanode-host$i" \
            mh_wait_for "$MH_READY_TIMEOUT" "the restarted meta to list host$i's datanode up" \
            mh__node_listed "$i"
    done
}

# mh_stop_meta [SIGNAL]: stop meta (SIGTERM, or e.g. KILL to crash it) and
# wait until it is gone.
mh_stop_meta() {
    local signal=${1:-TERM} pid=$MH_META_PID
    [ -n "$pid" ] || return 0
    kill "-$signal" "$pid" 2>/dev/null || true
    mh_wait_for 15 "meta (pid $pid) to exit" eval "! mh__pid_running $pid"
    wait "$pid" 2>/dev/null || true
    MH_META_PID=""
}

# mh_start_mount I: mount host I's FUSE client and wait until it answers.
mh_start_mount() {
    local i=$1 log
    log=$MH_LOGS/mount$i.log
    mkdir -p "${MH_MNT[$i]}"
    # shellcheck disable=SC2046
    mh__start "mount-host$i" "$log" "${MH_NS[$i]}" "$MH_MOUNT_BIN" \
        --meta "$MH_META" --machine "${MH_MACHINE[$i]}" --io-timeout-ms "$MH_IO_TIMEOUT_MS" \
        --key "$MH_KEYS/mount$i.key" $(mh__extra_args MOUNT "$i") -f -o default_permissions,allow_other "${MH_MNT[$i]}"
    MH_MOUNT_PID[i]=$MH__PID
    # The registry line for the mount: teardown unmounts before it kills.
    mh__register mount "$MH__PID" "$(mh__starttime "$MH__PID")" "${MH_MNT[$i]}" "host$i"
    MH_WAIT_PIDS="$MH__PID:mount-host$i" \
        mh_wait_for "$MH_READY_TIMEOUT" "host$i's mount at ${MH_MNT[$i]}" mh__mounted "$i"
}

# mh_stop_mount I [SIGNAL]: unmount host I's mount (inside its namespace),
# or with SIGNAL (e.g. KILL) kill its process; wait until the process is gone.
mh_stop_mount() {
    local i=$1 signal=${2:-} pid=${MH_MOUNT_PID[$1]:-}
    [ -n "$pid" ] || return 0
    if [ -n "$signal" ]; then
        kill "-$signal" "$pid" 2>/dev/null || true
    else
        nsenter -t "$pid" -m fusermount3 -u "${MH_MNT[$i]}" ||
            mh_fail "fusermount3 -u ${MH_MNT[$i]} on host$i failed"
    fi
    mh_wait_for 15 "host$i's mount process (pid $pid) to exit" eval "! mh__pid_running $pid"
    wait "$pid" 2>/dev/null || true
    MH_MOUNT_PID[i]=""
}

# mh_hosts [K]: the K hosts alone (directory, reaper, network, addresses),
# no key and no daemon: for a test that sets the cluster up itself
# (test_deploy.sh follows docs/deployment.md). mh_up calls it.
mh_hosts() {
    local i start
    MH_K=${1:-$MH_HOSTS}
    if ! [[ $MH_K =~ ^[0-9]+$ ]] || [ "$MH_K" -lt 1 ] || [ "$MH_K" -gt 64 ]; then
        mh_fail "mh_up: host count '$MH_K' must be 1 to 64"
    fi
    [[ $MH_LINK_MBPS =~ ^[0-9]+$ ]] || mh_fail "MH_LINK_MBPS='$MH_LINK_MBPS' must be a whole number"
    [[ $MH_SUBNET =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || mh_fail "MH_SUBNET='$MH_SUBNET' must be like 10.77.0"
    [ -z "$MH_DIR" ] || mh_fail "mh_up: a cluster is already up ($MH_DIR); mh_down first"
    mh_setup
    case $MH_TMPDIR in
    *[[:space:]]*) mh_fail "MH_TMPDIR='$MH_TMPDIR' has white space; the registry cannot hold it" ;;
    esac
    MH_DIR=$(mktemp -d "$MH_TMPDIR/tessera-mh-$MH_NAME.XXXXXX")
    MH_ID=tmh$$-$(basename "$MH_DIR" | sed 's/.*\.//')
    MH_LOGS=$MH_DIR/logs
    mkdir -p "$MH_LOGS"
    # Tools default to the user's own cluster (~/.local/state/tessera and its
    # admin key): never let a demo left there speak for the test's cluster.
    export TESSERA_STATE=$MH_DIR/user-state
    unset TESSERA_KEY
    : >"$MH_DIR/registry"
    MH_SHM=$(mktemp -d "/dev/shm/tessera-mh-$MH_NAME.XXXXXX")
    mh__register dir "$MH_SHM"
    # The reaper, in its own session: neither our process group's signals
    # nor our death reach it. It ends by itself once the registry is gone.
    start=$(mh__starttime $$)
    # shellcheck disable=SC2016 # expanded by the reaper's bash
    setsid -f bash -c 'source "$1"; mh__reaper "$2" "$3" "$4" "$5"' mh-reaper \
        "$MH_LIB" "$$" "$start" "$MH_DIR" "$MH_KEEP" </dev/null >>"$MH_DIR/reaper.log" 2>&1

    mh__network_up
    MH_META=tcp://${MH_ADDR[1]}:$MH_META_PORT
    for ((i = 1; i <= MH_K; i++)); do
        MH_NODE_EP[i]=tcp://${MH_ADDR[$i]}:$MH_NODE_PORT
        MH_DATA[i]=$MH_DIR/host$i/data
        MH_MNT[i]=$MH_DIR/host$i/mnt
        mkdir -p "$MH_DIR/host$i"
    done
    mh_log "cluster $MH_ID: $MH_K hosts on $MH_SUBNET.0/24, links ${MH_LINK_MBPS} MB/s, dir $MH_DIR"
}

# mh_up [K]: build the network and start meta, K datanodes and K mounts.
mh_up() {
    local i
    mh_hosts "$@"
    # CURVE keys, one pair per member; daemons listen on every interface,
    # which they refuse to do without keys. The tool uses admin's.
    MH_KEYS=$MH_DIR/keys
    "$MH_TOOL" keys init "$MH_KEYS" >/dev/null || mh_fail "tessera keys init $MH_KEYS failed"
    for ((i = 1; i <= MH_K; i++)); do
        "$MH_TOOL" keys add --dir "$MH_KEYS" --role datanode "node$i" >/dev/null &&
            "$MH_TOOL" keys add --dir "$MH_KEYS" --role mount "mount$i" >/dev/null ||
            mh_fail "tessera keys add for host$i failed"
    done
    export TESSERA_KEY=$MH_KEYS/admin.key

    mh_start_meta
    for ((i = 1; i <= MH_K; i++)); do
        mh_start_node "$i"
    done
    for ((i = 1; i <= MH_K; i++)); do
        mh_start_mount "$i"
    done
    mh_assert_alive
    mh_log "cluster $MH_ID up: meta $MH_META, datanodes ${MH_NODE_EP[*]}"
}

# mh_assert_alive: fail unless meta and every datanode and mount still run
# (those stopped with mh_stop_* are left out).
mh_assert_alive() {
    local i
    if [ -n "$MH_META_PID" ] && ! mh__pid_running "$MH_META_PID"; then
        mh_fail "meta (pid $MH_META_PID) is no longer running"
    fi
    for ((i = 1; i <= MH_K; i++)); do
        if [ -n "${MH_NODE_PID[$i]:-}" ] && ! mh__pid_running "${MH_NODE_PID[$i]}"; then
            mh_fail "host$i's datanode (pid ${MH_NODE_PID[$i]}) is no longer running"
        fi
        if [ -n "${MH_MOUNT_PID[$i]:-}" ] && ! mh__pid_running "${MH_MOUNT_PID[$i]}"; then
            mh_fail "host$i's mount (pid ${MH_MOUNT_PID[$i]}) is no longer running"
        fi
    done
}

# ---------------------------------------------------------------- use

# mh_exec I CMD...: run CMD on host I (its network namespace and its mount's
# mount namespace; see @file), in the current directory. Waits in a way a
# signal to the test interrupts, so a SIGTERM tears down at once.
mh_exec() {
    local i=$1 pid
    shift
    [ -n "${MH_NS[$i]:-}" ] || mh_fail "mh_exec: no host $i"
    pid=${MH_MOUNT_PID[$i]:-}
    if [ -n "$pid" ] && mh__pid_running "$pid"; then
        nsenter -t "$pid" -m -n --wd="$PWD" -- "$@" 0<&0 &
    else
        # No mount on that host: its network, the root's file systems.
        nsenter --net="/run/netns/${MH_NS[$i]}" --wd="$PWD" -- "$@" 0<&0 &
    fi
    wait $!
}

# mh_path I [REL]: host I's mount reached from the root namespace.
mh_path() {
    local i=$1 rel=${2:-}
    [ -n "${MH_MOUNT_PID[$i]:-}" ] || mh_fail "mh_path: host $i has no mount"
    echo "/proc/${MH_MOUNT_PID[$i]}/root${MH_MNT[$i]}${rel:+/$rel}"
}

# mh_status [ARGS]: `tessera status --meta $MH_META ARGS` run on host 1.
mh_status() {
    mh_exec 1 "$MH_TOOL" status --meta "$MH_META" "$@"
}

# mh_node_id I: the id meta gave host I's datanode.
mh_node_id() {
    mh_status --json | grep -F "\"machine\": \"${MH_MACHINE[$1]}\"," |
        sed -n 's/.*"id": \([0-9]*\),.*/\1/p' | head -n 1
}

# mh_tiles_on I INO: the tile indices of inode INO stored on host I's
# datanode, one per line, sorted (DATA/tiles/<ino % 256>/<ino>.<tile>.<version>).
mh_tiles_on() {
    local i=$1 ino=$2 file
    for file in "${MH_DATA[$i]}/tiles/$((ino % 256))/$ino".*; do
        [ -e "$file" ] || continue
        file=${file##*/}
        file=${file#"$ino".}
        echo "${file%%.*}"
    done | sort -n -u
}

# mh_link_bytes I rx|tx: bytes host I's eth0 has received (rx: its
# download) or sent (tx: its upload) so far, frames with their headers.
# /proc/net/dev shows the network namespace of the process reading it.
mh_link_bytes() {
    local i=$1 dir=$2
    nsenter --net="/run/netns/${MH_NS[$i]}" cat /proc/net/dev |
        awk -v dir="$dir" '$1 == "eth0:" { print (dir == "rx" ? $2 : $10) }'
}

# mh_drop_cache I FILE: flush FILE (a path on host I's mount) and drop its
# pages from the kernel's page cache there, so the next read really goes
# to the datanodes.
mh_drop_cache() {
    mh_exec "$1" sync "$2"
    mh_exec "$1" dd if="$2" iflag=nocache count=0 status=none
}

# mh_random_file SIZE: print the path of a new file of SIZE random bytes
# (head -c syntax: 64M, 4K) in $MH_SHM, which every namespace sees.
mh_random_file() {
    local file
    file=$(mktemp "$MH_SHM/random.XXXXXX")
    head -c "$1" /dev/urandom >"$file"
    echo "$file"
}
