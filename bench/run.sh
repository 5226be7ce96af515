#!/usr/bin/env bash
#
# run.sh: Tessera next to a local directory, the do-nothing FUSE ceiling
# (bench/nullfs) and optionally MooseFS, measured side by side in one run with
# the same workloads, and one table of medians and ratios at the end.
#
# It builds a release binary in build-release/, then runs the peer benchmark
# (run-peer-bench.sh from $PEER_BENCH_DIR) in rounds, each round once on every
# target in turn: a 4-datanode Tessera cluster on free ports in a temporary
# state directory, nullfs, and with --with-moosefs a loopback MooseFS (Debian
# packages). A target's daemons run only during its own turn (see run_target).
# Everything it starts is stopped by pid and every mount unmounted on
# exit, failure or Ctrl-C. Not part of `meson test`: regressions are caught by
# running this, not by timed tests.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/run.sh [--with-moosefs] [--size-mb N] [--reps N] [--only "SECTIONS"]
                    [--rr-secs N] [--meta-n N] [--nodes N] [--copies N] [--no-local]
                    [--no-nullfs] [--baseline BUILD_DIR] [--baseline-args "ARGS"]

Runs dd, cp, fio (4 streams, 4 KiB random reads) and metadata workloads on a
Tessera mount, a local directory, a nullfs mount (the FUSE ceiling) and, with
--with-moosefs, MooseFS; prints one table of medians with the ratios
Tessera/MooseFS, Tessera/local and Tessera/nullfs (the fraction of the ceiling).

  --with-moosefs     also run on MooseFS (apt-get installs moosefs-master,
                     moosefs-chunkserver and moosefs-client if missing)
  --size-mb N        dd and cp file size in MiB (default 2048)
  --reps N           rounds; each runs every workload once on every target in
                     turn, and the table shows medians over rounds (default 3)
  --only "LIST"      run only these sections: dd cp fio randread randread_direct meta
                     smallfiles (bench/smallfiles.sh: tar, rsync, git clone, make,
                     find+stat, rm -r) (default: all)
  --rr-secs N        seconds per random-read run (default 30)
  --meta-n N         files for create/stat/unlink (default 10000)
  --nodes N          Tessera datanodes (default 4)
  --copies N         replicas per tile on Tessera (its root directory's layout)
                     and MooseFS's goal (default 2, tessera-meta's default)
  --no-local         skip the local directory
  --no-nullfs        skip the nullfs ceiling
  --baseline DIR     also run an older Tessera build (its release build
                     directory, e.g. a worktree at an earlier commit) as the
                     target "baseline", same cluster shape; the table adds
                     T / baseline. A build without copies= in its layouts
                     runs with its own default (one copy).
  --baseline-args "ARGS"  extra arguments for the baseline's `tessera up`,
                     split on spaces; e.g. --baseline build-release
                     --baseline-args --insecure measures this build with keys
                     (CURVE) against itself without them in one run
  -h, --help         this text

Environment:
  PEER_BENCH_DIR   the peer benchmark scripts (default: ../shared/bench next to
                   the repository); run-peer-bench.sh, pbmeta.py, moosefs-up.sh
                   and moosefs-down.sh are used from there
  BUILD_DIR        release build directory (default: REPO/build-release)
  BENCH_DIR        where results and logs go (default: a new /tmp/tessera-bench.*)
  READAHEAD_KB     read_ahead_kb set on the nullfs mount's bdi (default: the
                   Tessera mount's own value if it raised it above 128, else 1024)
  TESSERA_READAHEAD_KB  if set, also set on the Tessera mount's bdi (default: leave
                   the mount's own setting, so the table shows what users get)
  CS_FSYNC         MooseFS chunkservers fsync chunk files (default 1: the fair
                   comparison with Tessera's durable fsync)
  PREFAULT_GB      RAM run-peer-bench.sh touches before each run (default: 16, or
                   less so that 4 GiB + twice the file size stay available)
  LOCAL_DIR        the local directory (default BENCH_DIR/local)
  QUIET_PERCENT, QUIET_MAX_S  each target's turn starts once the CPUs are under
                   QUIET_PERCENT % busy for a second (default 5), or after
                   QUIET_MAX_S seconds of waiting (default 120)

Run as root (drop_caches, mounts). Exit status: 0 done, 1 a step failed, 2 usage.
USAGE
}

die() {
    echo "run.sh: $*" >&2
    exit 1
}

with_moosefs=0 size_mb=2048 reps=3 only="" rr_secs=30 meta_n=10000 nodes=4 copies=2
run_local=1 run_nullfs=1 baseline_build="" baseline_up_args=""
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --with-moosefs) with_moosefs=1; shift ;;
    --no-local) run_local=0; shift ;;
    --no-nullfs) run_nullfs=0; shift ;;
    --size-mb | --reps | --only | --rr-secs | --meta-n | --nodes | --copies | --baseline | \
        --baseline-args)
        [ $# -ge 2 ] || { echo "run.sh: $1 needs a value (see --help)" >&2; exit 2; }
        case $1 in
        --size-mb) size_mb=$2 ;;
        --reps) reps=$2 ;;
        --only) only=$2 ;;
        --rr-secs) rr_secs=$2 ;;
        --meta-n) meta_n=$2 ;;
        --nodes) nodes=$2 ;;
        --copies) copies=$2 ;;
        --baseline) baseline_build=$2 ;;
        --baseline-args) baseline_up_args=$2 ;;
        esac
        shift 2 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
for pair in "size-mb:$size_mb" "reps:$reps" "rr-secs:$rr_secs" "meta-n:$meta_n" "nodes:$nodes" "copies:$copies"; do
    [[ "${pair#*:}" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --${pair%%:*} wants a positive integer" >&2; exit 2; }
done
for section in $only; do
    case $section in
    dd | cp | fio | randread | randread_direct | meta | smallfiles) ;;
    *) echo "run.sh: --only knows dd cp fio randread randread_direct meta smallfiles, not $section" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "run.sh: run as root (drop_caches, mounts, MooseFS)" >&2; exit 2; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEER_BENCH_DIR=${PEER_BENCH_DIR:-$REPO/../shared/bench}
for script in run-peer-bench.sh pbmeta.py moosefs-up.sh moosefs-down.sh; do
    [ -f "$PEER_BENCH_DIR/$script" ] || {
        echo "run.sh: $PEER_BENCH_DIR/$script not found: set PEER_BENCH_DIR to the directory" \
            "with the peer benchmark scripts (run-peer-bench.sh, pbmeta.py, moosefs-up.sh)" >&2
        exit 2
    }
done
PEER_BENCH_DIR=$(cd "$PEER_BENCH_DIR" && pwd)
if [ -n "$baseline_build" ]; then
    for binary in tools/tessera fuse/tessera-mount meta/tessera-meta datanode/tessera-datanode; do
        [ -x "$baseline_build/$binary" ] ||
            { echo "run.sh: --baseline $baseline_build has no $binary: build it first" >&2; exit 2; }
    done
    baseline_build=$(cd "$baseline_build" && pwd)
fi
BUILD_DIR=${BUILD_DIR:-$REPO/build-release}
READAHEAD_KB=${READAHEAD_KB:-}

# ---- state, filled in as things start; cleanup() undoes whatever is set ----
BENCH_DIR=${BENCH_DIR:-$(mktemp -d /tmp/tessera-bench.XXXXXX)}
WORK=$BENCH_DIR/work          # removed at the end; results/ and logs/ stay
RESULTS=$BENCH_DIR/results
LOGS=$BENCH_DIR/logs
STATE=$WORK/tessera-state
TESSERA_MNT=$WORK/mnt-tessera
BASE_STATE=$WORK/baseline-state
BASE_MNT=$WORK/mnt-baseline
NULLFS_MNT=$WORK/mnt-nullfs
LOCAL=${LOCAL_DIR:-$WORK/local}
MFS_PB=$WORK/moosefs           # moosefs-up.sh's PB: its configs, chunks, pids
MFS_MNT=$WORK/mnt-moosefs
tessera_started=0 baseline_started=0 moosefs_started=0 nullfs_pid="" child_pid="" cleaned=0
tessera_pids=() baseline_pids=()
src_was_there=0
[ -e /dev/shm/pb-src.bin ] && src_was_there=1

log() { echo "[$(date +%T)] $*" | tee -a "$LOGS/run.log" >&2; }

# unmount DIR: fusermount3 -u, retried for 5 s, then a lazy unmount.
unmount() {
    local dir=$1
    for _ in $(seq 25); do
        mountpoint -q "$dir" 2>/dev/null || return 0
        fusermount3 -u "$dir" 2>/dev/null || umount "$dir" 2>/dev/null || true
        sleep 0.2
    done
    mountpoint -q "$dir" 2>/dev/null && { fusermount3 -uz "$dir" 2>/dev/null || umount -l "$dir"; }
    return 0
}

# stop_pid PID NAME: SIGTERM, up to 15 s, then SIGKILL. Only PIDs this run started.
stop_pid() {
    local pid=$1 name=$2
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 75); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
    echo "run.sh: $name (pid $pid) ignored SIGTERM, sending SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
}

# cleanup_cluster LABEL BUILD STATE MNT PID...: `tessera down` of a Tessera
# target (its own build's tool), its mount point unmounted, whatever of its
# PIDs is left stopped, its logs kept under LOGS/LABEL.
cleanup_cluster() {
    local label=$1 build=$2 state=$3 mnt=$4 pid
    shift 4
    "$build/tools/tessera" down --state "$state" >>"$LOGS/$label-down.log" 2>&1 ||
        echo "run.sh: $label: tessera down failed, see $LOGS/$label-down.log" >&2
    unmount "$mnt"
    for pid in "$@"; do stop_pid "$pid" "$label-daemon"; done
    cp -r "$state/logs" "$LOGS/$label" 2>/dev/null
    return 0
}

cleanup() {
    local status=$?
    [ "$cleaned" = 1 ] && return
    cleaned=1
    trap '' INT TERM
    set +e
    if [ -n "$child_pid" ] && kill -0 "$child_pid" 2>/dev/null; then
        echo "run.sh: stopping the running benchmark (process group $child_pid)" >&2
        kill -TERM -- "-$child_pid" 2>/dev/null
        wait "$child_pid" 2>/dev/null
    fi
    if [ -n "$nullfs_pid" ]; then
        unmount "$NULLFS_MNT"
        stop_pid "$nullfs_pid" nullfs
        wait "$nullfs_pid" 2>/dev/null
    fi
    [ "$tessera_started" = 1 ] &&
        cleanup_cluster tessera "$BUILD_DIR" "$STATE" "$TESSERA_MNT" "${tessera_pids[@]}"
    [ "$baseline_started" = 1 ] &&
        cleanup_cluster baseline "$baseline_build" "$BASE_STATE" "$BASE_MNT" "${baseline_pids[@]}"
    if [ "$moosefs_started" = 1 ]; then
        cp -r "$MFS_PB/moosefs/logs" "$LOGS/moosefs" 2>/dev/null
        PB=$MFS_PB MNT=$MFS_MNT "$PEER_BENCH_DIR/moosefs-down.sh" --purge >>"$LOGS/moosefs-down.log" 2>&1
        unmount "$MFS_MNT"
        for f in "$MFS_PB"/moosefs/pids/*.pid; do
            [ -e "$f" ] && stop_pid "$(cat "$f")" moosefs-daemon
        done
    fi
    [ "$src_was_there" = 1 ] || rm -f /dev/shm/pb-src.bin
    # Remove the work tree only when nothing is mounted in it any more.
    if ! grep -q " $WORK/" /proc/self/mounts; then
        rm -rf --one-file-system "$WORK"
    else
        echo "run.sh: something is still mounted under $WORK; left it in place" >&2
    fi
    [ "$LOCAL" = "$WORK/local" ] || rm -f "$LOCAL/cpsrc.bin"
    [ "$status" = 0 ] || echo "run.sh: failed (exit $status); logs in $LOGS" >&2
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$WORK" "$RESULTS" "$LOGS" "$LOCAL" "$TESSERA_MNT" "$NULLFS_MNT" "$BASE_MNT"
chmod 755 "$BENCH_DIR" "$WORK" # the MooseFS daemons run as user mfs below it

# ---- packages: fio always, MooseFS on demand (Debian names) ----
need_packages() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$package")
    done
    [ ${#missing[@]} = 0 ] && return 0
    log "installing ${missing[*]} with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
        >>"$LOGS/apt.log" 2>&1 ||
        { DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$LOGS/apt.log" 2>&1 &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
                "${missing[@]}" >>"$LOGS/apt.log" 2>&1; } ||
        die "apt-get install ${missing[*]} failed, see $LOGS/apt.log"
}
need_packages fio python3
[ "$with_moosefs" = 1 ] && need_packages moosefs-master moosefs-chunkserver moosefs-client

# ---- release build ----
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    log "meson setup $BUILD_DIR --buildtype=release -Dtests=false"
    meson setup "$BUILD_DIR" "$REPO" --buildtype=release -Dtests=false -Dbench=true \
        >"$LOGS/build.log" 2>&1 || die "meson setup failed, see $LOGS/build.log"
fi
log "ninja -C $BUILD_DIR"
ninja -C "$BUILD_DIR" >>"$LOGS/build.log" 2>&1 || die "build failed, see $LOGS/build.log"
# what was built: the commit, and whether the tree had changes on top of it
built_from=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')
git -C "$REPO" diff --quiet HEAD 2>/dev/null || built_from="$built_from (+ uncommitted changes)"
for binary in tools/tessera fuse/tessera-mount meta/tessera-meta datanode/tessera-datanode \
    bench/nullfs; do
    [ -x "$BUILD_DIR/$binary" ] || die "$BUILD_DIR/$binary missing after the build (is -Dbench=false?)"
done

# free_port_base COUNT: a port P such that P..P+COUNT-1 are all free on 127.0.0.1,
# below the ephemeral range (the kernel hands those to outgoing connections,
# and a target restarted for its next turn must find its ports free again).
free_port_base() {
    local count=$1 base used low
    used=$(ss -Htan | awk '{ n = split($4, a, ":"); print a[n] }' | sort -u)
    low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    [ "$low" -gt 20000 ] || low=32768
    for _ in $(seq 200); do
        base=$((10000 + RANDOM % (low - 10000 - count)))
        local clash=0
        for ((p = base; p < base + count; p++)); do
            grep -qx "$p" <<<"$used" && { clash=1; break; }
        done
        [ "$clash" = 0 ] && { echo "$base"; return 0; }
    done
    die "no $count free consecutive ports found"
}

# raise_readahead DIR KB: the kernel reads ahead at most the mount's bdi
# read_ahead_kb (128 by default, whatever FUSE's max_readahead says), so
# buffered reads of a FUSE mount arrive in 128 KiB requests unless raised.
raise_readahead() {
    local dir=$1 kb=$2 bdi
    bdi=/sys/class/bdi/$(mountpoint -d "$dir")/read_ahead_kb
    [ -w "$bdi" ] || die "cannot set read-ahead: $bdi missing"
    echo "$kb" >"$bdi"
}
readahead_of() { cat "/sys/class/bdi/$(mountpoint -d "$1")/read_ahead_kb" 2>/dev/null || echo "?"; }

# wait_mounted DIR PID: until DIR is a mountpoint (10 s), failing if PID died.
wait_mounted() {
    for _ in $(seq 100); do
        mountpoint -q "$1" && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# proc_usage PID: "peak-RSS-MiB current-RSS-MiB cpu-seconds" of a live process.
proc_usage() {
    local pid=$1 hwm rss ticks
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    # utime + stime: fields 14 and 15, counted after the ")" that ends the name
    ticks=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{ print $12 + $13 }')
    awk -v h="${hwm:-0}" -v r="${rss:-0}" -v t="${ticks:-0}" -v hz="$(getconf CLK_TCK)" \
        'BEGIN { printf "%.1f %.1f %.1f", h / 1024, r / 1024, t / hz }'
}

# record_usage TARGET NAME PID: appends one line, for one turn, to the memory/CPU table.
record_usage() {
    local usage
    usage=$(proc_usage "$3")
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${usage// /$'\t'}" >>"$RESULTS/processes.tsv"
}
printf 'target\tprocess\tpid\tpeak_rss_mib\trss_mib\tcpu_s\n' >"$RESULTS/processes.tsv"

# run-peer-bench.sh touches PREFAULT_GB GiB of RAM through /dev/shm before
# each run (see its comments). Its default, 16 GiB, next to the 2 GiB source
# file and the daemons, can make the OOM killer stop a daemon on a 24 GiB
# machine whose /dev/shm holds other files: keep a margin of 4 GiB plus twice
# the file size.
if [ -z "${PREFAULT_GB:-}" ]; then
    available_gib=$(awk '/^MemAvailable:/ { print int($2 / 1048576) }' /proc/meminfo)
    PREFAULT_GB=$((available_gib - 4 - 2 * (size_mb + 1023) / 1024))
    [ "$PREFAULT_GB" -gt 16 ] && PREFAULT_GB=16
    [ "$PREFAULT_GB" -lt 0 ] && PREFAULT_GB=0
fi
export PREFAULT_GB

# ---- the targets: each one's daemons run only during its own turn ----
# Idle daemons are not free on a small machine: an idle MooseFS (master, 4
# chunkservers and mfsmount, at nice -19) keeps ~10 % of 2 CPUs busy, and
# Tessera measured beside it lost 10-15 % of its dd write speed and a third
# of its creates per second. So each turn starts its target's daemons and
# stops them after (their data stays for the next turn): every target is
# measured alone, on the same machine, in the same run.
tessera_port=$(free_port_base $((nodes + 1)))
baseline_port=""
if [ -n "$baseline_build" ]; then
    baseline_port=$(free_port_base $((nodes + 1)))
    while [ "$baseline_port" -le $((tessera_port + nodes)) ] &&
        [ $((baseline_port + nodes)) -ge "$tessera_port" ]; do
        baseline_port=$(free_port_base $((nodes + 1)))
    done
fi
mfs_port=""
if [ "$with_moosefs" = 1 ]; then
    mfs_port=$(free_port_base 8)
    while [ "$mfs_port" -le $((tessera_port + nodes)) ] && [ $((mfs_port + 7)) -ge "$tessera_port" ]; do
        mfs_port=$(free_port_base 8)
    done
fi

# target_up LABEL: starts LABEL's daemons and mounts it (nothing for local).
target_up() {
    case $1 in
    tessera)
        tessera_started=1
        "$BUILD_DIR/tools/tessera" up --nodes "$nodes" --state "$STATE" --mount "$TESSERA_MNT" \
            --port "$tessera_port" >>"$LOGS/tessera-up.log" 2>&1 ||
            die "tessera up failed, see $LOGS/tessera-up.log"
        local f
        for f in "$STATE"/run/*.pid; do tessera_pids+=("$(cat "$f")"); done
        if [ -n "${TESSERA_READAHEAD_KB:-}" ]; then
            raise_readahead "$TESSERA_MNT" "$TESSERA_READAHEAD_KB"
        fi
        # tessera-mount raises its own bdi after FUSE_INIT, on its first request
        stat "$TESSERA_MNT" >/dev/null
        setfattr -n user.tessera.layout -v "copies=$copies" "$TESSERA_MNT" ||
            die "cannot set copies=$copies on $TESSERA_MNT"
        ;;
    baseline)
        baseline_started=1
        # shellcheck disable=SC2086 # --baseline-args is split on spaces
        "$baseline_build/tools/tessera" up --nodes "$nodes" --state "$BASE_STATE" --mount "$BASE_MNT" \
            --port "$baseline_port" $baseline_up_args >>"$LOGS/baseline-up.log" 2>&1 ||
            die "baseline tessera up failed, see $LOGS/baseline-up.log"
        local f
        for f in "$BASE_STATE"/run/*.pid; do baseline_pids+=("$(cat "$f")"); done
        stat "$BASE_MNT" >/dev/null
        # An older build may not know copies= (it then keeps one copy).
        setfattr -n user.tessera.layout -v "copies=$copies" "$BASE_MNT" 2>/dev/null ||
            log "baseline: copies=$copies not accepted, it runs with its own default"
        ;;
    nullfs)
        "$BUILD_DIR/bench/nullfs" "$NULLFS_MNT" 2>>"$LOGS/nullfs.log" &
        nullfs_pid=$!
        wait_mounted "$NULLFS_MNT" "$nullfs_pid" || die "nullfs did not mount, see $LOGS/nullfs.log"
        raise_readahead "$NULLFS_MNT" "$READAHEAD_KB"
        ;;
    moosefs)
        moosefs_started=1
        PB=$MFS_PB MNT=$MFS_MNT PORT0=$mfs_port NCS=4 CS_FSYNC=${CS_FSYNC:-1} GOAL=$copies \
            "$PEER_BENCH_DIR/moosefs-up.sh" >>"$LOGS/moosefs-up.log" 2>&1 ||
            die "moosefs-up.sh failed, see $LOGS/moosefs-up.log"
        ;;
    esac
}

# stop_tessera: tessera down (it stops the daemons by their pids and unmounts),
# then forgets their pids: by cleanup time they may belong to other processes.
stop_tessera() {
    "$BUILD_DIR/tools/tessera" down --state "$STATE" >>"$LOGS/tessera-down.log" 2>&1 ||
        die "tessera down failed, see $LOGS/tessera-down.log"
    ! mountpoint -q "$TESSERA_MNT" || die "$TESSERA_MNT still mounted after tessera down"
    tessera_pids=()
}

# target_down LABEL: records the memory and CPU of LABEL's daemons over its
# turn, then stops them and unmounts, keeping their data.
target_down() {
    local f
    case $1 in
    tessera)
        kill -0 "$(cat "$STATE/run/mount.pid")" 2>/dev/null ||
            die "tessera-mount died during its turn (see $STATE/logs and dmesg)"
        for f in "$STATE"/run/*.pid; do
            record_usage tessera "$(basename "$f" .pid)" "$(cat "$f")"
        done
        stop_tessera
        ;;
    baseline)
        for f in "$BASE_STATE"/run/*.pid; do
            record_usage baseline "$(basename "$f" .pid)" "$(cat "$f")"
        done
        "$baseline_build/tools/tessera" down --state "$BASE_STATE" >>"$LOGS/baseline-down.log" 2>&1 ||
            die "baseline tessera down failed, see $LOGS/baseline-down.log"
        baseline_pids=()
        ;;
    nullfs)
        record_usage nullfs nullfs "$nullfs_pid"
        unmount "$NULLFS_MNT"
        stop_pid "$nullfs_pid" nullfs
        wait "$nullfs_pid" 2>/dev/null || true
        nullfs_pid=""
        ;;
    moosefs)
        for f in "$MFS_PB"/moosefs/pids/*.pid; do
            record_usage moosefs "mfs$(basename "$f" .pid)" "$(cat "$f")"
        done
        PB=$MFS_PB MNT=$MFS_MNT "$PEER_BENCH_DIR/moosefs-down.sh" >>"$LOGS/moosefs-down.log" 2>&1 ||
            die "moosefs-down.sh failed, see $LOGS/moosefs-down.log"
        ;;
    esac
}

# Tessera once first: it must start at all, and the ceiling reads ahead as
# far as Tessera does.
log "tessera up: $nodes datanodes, port $tessera_port, state $STATE"
target_up tessera
tessera_readahead=$(readahead_of "$TESSERA_MNT")
stop_tessera
if [ -z "$READAHEAD_KB" ]; then
    READAHEAD_KB=1024
    [[ "$tessera_readahead" =~ ^[0-9]+$ ]] && [ "$tessera_readahead" -gt 128 ] &&
        READAHEAD_KB=$tessera_readahead
fi
[ "$with_moosefs" = 1 ] && log "MooseFS: 4 chunkservers, ports from $mfs_port, CS_FSYNC=${CS_FSYNC:-1}"

# ---- run the peer benchmark: rounds, each over every target in turn ----
# Interleaving (round r runs every target once, REPS=1) keeps slow drifts of
# this shared VM (other load, memory the host reclaimed) from landing on one
# target only; medians are taken over the rounds.
# Another target's daemons may still be busy after their turn (MooseFS deletes
# the chunks of removed files in the background, for tens of seconds), and
# that CPU would be charged to whoever runs next: Tessera's rounds 2 and 3,
# after MooseFS, came out ~25 % slower than its round 1. So every turn starts
# on a quiet machine. cpu_busy_percent: the share of all CPUs busy over 1 s.
cpu_busy_percent() {
    local a b
    read -r -a a < <(head -n 1 /proc/stat)
    sleep 1
    read -r -a b < <(head -n 1 /proc/stat)
    # cpu user nice system idle iowait irq softirq steal
    local busy=$(( (b[1] + b[2] + b[3] + b[6] + b[7] + b[8]) - (a[1] + a[2] + a[3] + a[6] + a[7] + a[8]) ))
    local idle=$(( (b[4] + b[5]) - (a[4] + a[5]) ))
    echo $(( 100 * busy / (busy + idle > 0 ? busy + idle : 1) ))
}

# wait_quiet: until the CPUs are under QUIET_PERCENT busy (default 5) for a
# second, at most QUIET_MAX_S seconds (default 120; then it says so and goes on).
wait_quiet() {
    local start=$SECONDS busy
    while :; do
        busy=$(cpu_busy_percent)
        [ "$busy" -lt "${QUIET_PERCENT:-5}" ] && break
        if [ $((SECONDS - start)) -ge "${QUIET_MAX_S:-120}" ]; then
            log "machine still ${busy}% busy after ${QUIET_MAX_S:-120} s; going on"
            return
        fi
    done
    [ $((SECONDS - start)) -le 1 ] || log "waited $((SECONDS - start)) s for a quiet machine (${busy}% busy)"
}

# run_target LABEL DIR ROUND: starts the target, runs run-peer-bench.sh in its
# own process group (so cleanup can stop it and its dd/fio as one), waits for
# it, and stops the target.
run_target() {
    local label=$1 dir=$2 round=$3
    target_up "$label"
    if [ "$label" != local ] && ! mountpoint -q "$dir" 2>/dev/null; then
        die "$label: $dir is not mounted (did its daemon die? see $LOGS and dmesg)"
    fi
    wait_quiet
    log "== round $round/$reps: $label, $dir (read_ahead_kb $(readahead_of "$dir"))"
    SIZE_MB=$size_mb REPS=1 META_N=$meta_n RR_SECS=$rr_secs LOCAL=$LOCAL ONLY=$only \
        OUTROOT=$RESULTS/peer setsid "$PEER_BENCH_DIR/run-peer-bench.sh" "$dir" "$label-r$round" \
        > >(tee -a "$LOGS/$label.log") 2>&1 &
    child_pid=$!
    wait "$child_pid" || die "run-peer-bench.sh failed on $label, see $LOGS/$label.log"
    child_pid=""
    if [ -z "$only" ] || [[ " $only " == *" smallfiles "* ]]; then
        wait_quiet
        OUTROOT=$RESULTS/peer setsid "$REPO/bench/smallfiles.sh" "$dir" "$label-r$round" \
            > >(tee -a "$LOGS/$label.log") 2>&1 &
        child_pid=$!
        wait "$child_pid" || die "bench/smallfiles.sh failed on $label, see $LOGS/$label.log"
        child_pid=""
    fi
    target_down "$label"
}

targets=()
[ "$run_local" = 1 ] && targets+=("local:$LOCAL")
[ "$run_nullfs" = 1 ] && targets+=("nullfs:$NULLFS_MNT")
targets+=("tessera:$TESSERA_MNT")
[ -n "$baseline_build" ] && targets+=("baseline:$BASE_MNT")
[ "$with_moosefs" = 1 ] && targets+=("moosefs:$MFS_MNT")
for ((round = 1; round <= reps; round++)); do
    for target in "${targets[@]}"; do
        run_target "${target%%:*}" "${target#*:}" "$round"
    done
done

# ---- the table: medians over the rounds, with their spread ----
python3 - "$RESULTS" "$size_mb" "$reps" >"$RESULTS/table.md" <<'PY'
import csv, glob, os, statistics, sys

results, size_mb, reps = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def load(name):
    """workload -> values of every round, from peer/NAME-rR-*/results.tsv."""
    values = {}
    for path in sorted(glob.glob(os.path.join(results, "peer", name + "-r*", "results.tsv"))):
        for row in csv.DictReader(open(path), delimiter="\t"):
            values.setdefault(row["workload"], []).append(float(row["value"]))
    if not values:
        return None
    with open(os.path.join(results, name + ".tsv"), "w") as out:
        out.write("workload\tmedian\tmin\tmax\tall\n")
        for key, vals in values.items():
            out.write("%s\t%g\t%g\t%g\t%s\n" % (key, statistics.median(vals), min(vals),
                                                max(vals), ",".join("%g" % v for v in vals)))
    return values

local, nullfs, tessera, moosefs, baseline = (load(n) for n in
                                             ("local", "nullfs", "tessera", "moosefs", "baseline"))
size = "%g GiB" % (size_mb / 1024) if size_mb >= 1024 else "%d MiB" % size_mb
rows = [
    ("dd write %s bs=1M conv=fsync" % size, "MB/s", "dd_write"),
    ("dd read %s bs=1M, caches dropped" % size, "MB/s", "dd_read"),
    ("cp %s local -> target + sync" % size, "MB/s", "cp_in"),
    ("cp %s target -> local + sync" % size, "MB/s", "cp_out"),
    ("fio 4 x 512 MiB seq write, end_fsync", "MB/s", "fio_seqwrite"),
    ("  same, wall clock incl. fsync", "MB/s", "fio_seqwrite_wall"),
    ("fio 4 x 512 MiB seq read, cold", "MB/s", "fio_seqread"),
    ("fio 4 KiB randread QD1, buffered", "IOPS", "fio_randread_iops"),
    ("fio 4 KiB randread QD1, O_DIRECT", "IOPS", "fio_randread_direct_iops"),
    ("create empty files", "ops/s", "meta_create_ops"),
    ("stat files, caches dropped", "ops/s", "meta_stat_ops"),
    ("unlink files", "ops/s", "meta_unlink_ops"),
    ("tar xf /usr/include + sync", "s", "sf_tar"),
    ("rsync -a /usr/share/doc + sync", "s", "sf_rsync"),
    ("git clone (this repo) + sync", "s", "sf_git_clone"),
    ("make -j2, 65 C files + sync", "s", "sf_make"),
    ("find + stat the tar tree, cold", "s", "sf_find_stat"),
    ("rm -r all of it + sync", "s", "sf_rm"),
]
# Rows in seconds: lower is better, so their ratios are the other's time
# over Tessera's (> 1 still means Tessera is faster).
LOWER_BETTER = {"s"}

def median(target, key):
    vals = target.get(key) if target else None
    return statistics.median(vals) if vals else None

def num(v):
    return "{:,.0f}".format(v) if v >= 100 else "%.2f" % v

def cell(target, key):
    vals = target.get(key) if target else None
    if not vals:
        return "-"
    if len(vals) == 1:
        return num(vals[0])
    return "%s (%s–%s)" % (num(statistics.median(vals)), num(min(vals)), num(max(vals)))

def ratio(a, b):
    return "-" if a is None or not b else "%.2f" % (a / b)

columns = [("local dir", local), ("nullfs (FUSE ceiling)", nullfs), ("MooseFS", moosefs),
           ("Tessera baseline", baseline), ("Tessera", tessera)]
columns = [(n, t) for n, t in columns if t is not None or n == "Tessera"]
head = ["workload", "unit"] + [n for n, _ in columns]
if moosefs: head.append("T / MooseFS")
if local: head.append("T / local")
if nullfs: head.append("T / nullfs")
if baseline: head.append("T / baseline")
print("| " + " | ".join(head) + " |")
print("|---|---|" + "---:|" * (len(head) - 2))
for label, unit, key in rows:
    cells = [cell(t, key) for _, t in columns]
    if all(c == "-" for c in cells):
        continue
    t = median(tessera, key)
    def versus(other):
        o = median(other, key)
        return ratio(o, t) if unit in LOWER_BETTER else ratio(t, o)
    if moosefs: cells.append(versus(moosefs))
    if local: cells.append(versus(local))
    if nullfs: cells.append(versus(nullfs))
    if baseline: cells.append(versus(baseline))
    print("| %s | %s | %s |" % (label, unit, " | ".join(cells)))
print()
print("Median (min–max) of %s rounds, every round running each target once in turn;"
      " MB/s = 10^6 bytes/s; T = Tessera; ratios of medians, > 1: Tessera faster"
      " (for times in s: the other's time over Tessera's)." % reps)
PY

{
    echo
    echo "## bench/run.sh: ${targets[*]%%:*} ($(date '+%F %T'), $(nproc) CPUs, kernel $(uname -r))"
    echo "Tessera: $nodes datanodes, built from $built_from; read_ahead_kb: Tessera ${tessera_readahead}, nullfs ${READAHEAD_KB}$([ "$with_moosefs" = 1 ] && echo "; MooseFS CS_FSYNC=${CS_FSYNC:-1}")"
    echo
    cat "$RESULTS/table.md"
    echo
    echo "Daemons, over all their turns (peak RSS = the largest VmHWM of a turn, CPU = user +"
    echo "system seconds summed over the turns):"
    awk -F'\t' 'NR > 1 {
            key = $1 "\t" $2
            if (!(key in turns)) order[++n] = key
            turns[key]++
            if ($4 + 0 > peak[key] + 0) peak[key] = $4
            cpu[key] += $6
        }
        END {
            print "target\tprocess\tturns\tpeak_rss_mib\tcpu_s"
            for (i = 1; i <= n; i++)
                printf "%s\t%d\t%.1f\t%.1f\n", order[i], turns[order[i]], peak[order[i]], cpu[order[i]]
        }' "$RESULTS/processes.tsv" | column -t -s $'\t'
    mount_peak=$(awk -F'\t' '$2 == "mount" && $4 + 0 > max + 0 { max = $4 } END { print max }' \
        "$RESULTS/processes.tsv")
    echo
    echo "tessera-mount peak RSS: ${mount_peak:-?} MiB"
    echo "Results and logs: $BENCH_DIR (per-run data in $RESULTS/peer)"
} | tee "$RESULTS/report.md"
