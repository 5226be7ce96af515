#!/usr/bin/env bash
# docs/deployment.md followed as a new operator would, on five hosts
# (network namespaces m1, d1, d2, d3, ws at the guide's addresses
# 10.0.0.11-15): the build installed once with `meson install --destdir`,
# then on each host only the guide's steps, read from the guide itself
# (guide_steps.py): its files written, its commands run, meta and the
# datanodes started from their config files alone, the mounts made from
# /etc/fstab lines with `mount`. Each host has a mount namespace of its
# own where the install is overlaid on /usr/local and /sbin and where
# /etc, /var/lib, /var/log and /mnt are overlays private to the host, so
# the guide's paths are used as written and nothing of the real system
# changes; `ssh HOST` and `scp FILES HOST:DIR` in the guide reach the
# other hosts' namespaces. Then: 24 MiB written on ws's mount read back on
# d1's, HEALTHY, d3 added, d1 drained (HEALTHY again), d1's datanode
# stopped, and every byte still read right on both mounts.
export MH_SUBNET=10.0.0 # the guide's addresses; they exist only in the namespaces
source "$(dirname "$0")/lib.sh"

MH_REPO=$(cd "$(dirname "$0")/../.." && pwd)
GUIDE=$MH_REPO/docs/deployment.md
command -v unshare >/dev/null || mh_skip "unshare is missing (util-linux)"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems || mh_skip "no overlay filesystem in this kernel"
prefix=$(meson introspect --buildoptions "$TESSERA_BUILD" |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
case $prefix in
/usr/local | /opt/*) ;;
*) mh_skip "PREFIX $prefix: the test overlays the install on /usr/local or /opt/... only" ;;
esac

mh_hosts 5
# The guide's machines, in the order of the hosts' addresses (.11 is host 1).
NAMES=(- m1 d1 d2 d3 ws)
declare -A HOST_OF=([m1]=1 [d1]=2 [d2]=3 [d3]=4 [ws]=5)
HOLDER=()

# ---- the install, once ----
ROOT=$MH_DIR/install
meson install -C "$TESSERA_BUILD" --no-rebuild --quiet --destdir "$ROOT" >"$MH_LOGS/install.log" 2>&1 ||
    mh_fail "meson install --destdir failed: $(tail -5 "$MH_LOGS/install.log")"
{ [ -x "$ROOT$prefix/bin/tessera-meta" ] && [ -L "$ROOT/sbin/mount.fuse.tessera" ]; } ||
    mh_fail "meson install did not install the programs and the mount helpers"

# ---- a mount namespace per host, held by a sleeping process ----
cat >"$MH_DIR/holder.sh" <<'HOLD'
set -eu
H=$1 ROOT=$2 PREFIX=$3
for dir in /etc /var/lib /var/log /mnt; do
    name=${dir//\//-}
    mkdir -p "$H/upper$name" "$H/work$name"
    mount -t overlay overlay -o "lowerdir=$dir,upperdir=$H/upper$name,workdir=$H/work$name" "$dir"
done
# The install on top of the system's (read-only overlays: nothing written there).
sbin=$(realpath /sbin)
mount -t overlay overlay -o "lowerdir=$ROOT/sbin:$sbin" "$sbin"
mkdir -p "$ROOT$PREFIX"
mount -t overlay overlay -o "lowerdir=$ROOT$PREFIX:$PREFIX" "$PREFIX"
echo ready >"$H/holder.ready"
exec sleep infinity
HOLD
: >"$MH_DIR/hosts"
for ((i = 1; i <= 5; i++)); do
    h=$MH_DIR/host$i
    mh__start "machine-${NAMES[$i]}" "$MH_LOGS/holder-${NAMES[$i]}.log" "${MH_NS[$i]}" \
        unshare -m --propagation private bash "$MH_DIR/holder.sh" "$h" "$ROOT" "$prefix"
    HOLDER[i]=$MH__PID
    MH_WAIT_PIDS="$MH__PID:machine-${NAMES[$i]}" \
        mh_wait_for 10 "${NAMES[$i]}'s mount namespace" test -e "$h/holder.ready"
    echo "${NAMES[$i]} ${HOLDER[$i]}" >>"$MH_DIR/hosts"
done

# on NAME CMD...: run CMD on the guide's machine NAME: its network, its
# mount namespace, a clean environment whose PATH finds the install and
# the ssh/scp below.
BIN=$MH_DIR/bin
mkdir -p "$BIN"
HOST_PATH=$BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
on() {
    local name=$1
    shift
    local pid=${HOLDER[${HOST_OF[$name]:-0}]:-}
    [ -n "$pid" ] || mh_fail "no machine $name"
    nsenter -t "$pid" -m -n --wd=/ -- env -i PATH="$HOST_PATH" HOME=/root MH_HOSTS_FILE="$MH_DIR/hosts" \
        HOST_PATH="$HOST_PATH" "$@"
}
# ssh HOST CMD... and scp [-p] FILES... HOST:DIR as the guide uses them.
cat >"$BIN/ssh" <<'SSH'
#!/bin/bash
set -eu
pid=$(awk -v h="$1" '$1 == h { print $2 }' "$MH_HOSTS_FILE")
[ -n "$pid" ] || { echo "ssh: no host $1" >&2; exit 255; }
shift
exec nsenter -t "$pid" -m -n --wd=/ -- env -i PATH="$HOST_PATH" bash -c "$*"
SSH
cat >"$BIN/scp" <<'SCP'
#!/bin/bash
set -eu
keep=()
files=()
for arg in "$@"; do
    case $arg in
    -p) keep=(-p) ;;
    -*) echo "scp: option $arg not known here" >&2; exit 1 ;;
    *) files+=("$arg") ;;
    esac
done
target=${files[-1]}
unset 'files[-1]'
host=${target%%:*} dir=${target#*:}
pid=$(awk -v h="$host" '$1 == h { print $2 }' "$MH_HOSTS_FILE")
[ -n "$pid" ] && [ "$host" != "$target" ] || { echo "scp: $target is not HOST:DIR of a host" >&2; exit 1; }
exec cp "${keep[@]}" -- "${files[@]}" "/proc/$pid/root$dir"
SCP
chmod +x "$BIN/ssh" "$BIN/scp"

# ---- readiness after a `start` step ----
admin() { on m1 env TESSERA_KEY=/etc/tessera/keys/admin.key tessera "$@" --meta tcp://10.0.0.11:7400; }
meta_serves() { admin status --timeout-ms 1000; }
datanode_listed() { # NAME: meta lists NAME's datanode up at its address
    local address=tcp://10.0.0.$((10 + HOST_OF[$1])):7401
    admin status --json --timeout-ms 1000 |
        grep -F "\"machine\": \"$1\", \"address\": \"$address\", \"state\": \"up\"" >/dev/null
}
mounted() { on "$1" mountpoint -q /mnt/tessera && on "$1" stat /mnt/tessera/. >/dev/null; }
wait_started() { # NAME WHAT
    case $2 in
    meta) mh_wait_for 30 "meta on $1" meta_serves ;;
    datanode) mh_wait_for 30 "meta to list $1's datanode up" datanode_listed "$1" ;;
    mount) mh_wait_for 30 "the mount on $1" mounted "$1" ;;
    *) mh_fail "the guide starts '$2', which the test does not know" ;;
    esac
}

# ---- the guide, step by step ----
STEPS=$MH_DIR/steps
python3 "$(dirname "$0")/guide_steps.py" "$GUIDE" "$STEPS" || mh_fail "cannot read the steps of $GUIDE"
while read -r number kind name arg; do
    block=$STEPS/$number
    [ -n "${HOST_OF[$name]:-}" ] || mh_fail "guide step $number names machine '$name', not one of ${NAMES[*]:1}"
    case $kind in
    file)
        # shellcheck disable=SC2016 # expanded by the host's bash
        on "$name" bash -c 'mkdir -p "$(dirname "$1")" && cat >"$1"' file "$arg" <"$block" ||
            mh_fail "guide step $number: cannot write $arg on $name"
        ;;
    run | start)
        on "$name" bash -e <"$block" >"$MH_LOGS/step$number-$name.out" 2>&1 ||
            mh_fail "guide step $number on $name failed: $(cat "$block") => $(tail -n 20 "$MH_LOGS/step$number-$name.out")"
        [ "$kind" = run ] || wait_started "$name" "$arg"
        ;;
    esac
    mh_log "guide step $number ($kind on $name${arg:+ $arg}) done"
    # Each host's daemon logs join the harness's, for the failure dump and
    # the sanitizer check at teardown.
    for log in "$MH_DIR/host${HOST_OF[$name]}/upper-var-log/tessera/"*.log; do
        [ -e "$log" ] && ln -sf "$log" "$MH_LOGS/$name-$(basename "$log")"
    done
    # After the checks of step 6: data across hosts, before d3 comes.
    if [ "$kind" = run ] && grep -q "tessera stats" "$block"; then
        grep -q "security: CURVE" "$MH_LOGS/step$number-$name.out" || mh_fail "status does not say CURVE"
        grep -q HEALTHY "$MH_LOGS/step$number-$name.out" || mh_fail "health is not HEALTHY"
        for kind_seen in meta datanode; do
            grep -q "^$kind_seen " "$MH_LOGS/step$number-$name.out" ||
                mh_fail "tessera stats shows no $kind_seen: $(cat "$MH_LOGS/step$number-$name.out")"
        done
        for size in 24M 1M 100K; do
            mh_random_file "$size" >>"$MH_DIR/inputs"
        done
        n=0
        while read -r input; do
            n=$((n + 1))
            on ws cp "$input" "/mnt/tessera/file$n" || mh_fail "cannot write file$n on ws"
        done <"$MH_DIR/inputs"
        on ws sync
        n=0
        while read -r input; do
            n=$((n + 1))
            on d1 cmp "$input" "/mnt/tessera/file$n" || mh_fail "file$n written on ws reads wrong on d1"
        done <"$MH_DIR/inputs"
        mh_log "3 files written on ws read back right on d1"
    fi
done <"$STEPS/index"

# ---- after the drain: HEALTHY again, then d1's datanode stopped ----
healthy() { admin health --timeout-ms 2000; }
# Drained as the guide says: datanode 1 (d1's) draining and holding no
# tile file any more, and the cluster HEALTHY.
drained() {
    admin status --json --timeout-ms 2000 | python3 -c '
import json, sys
listed = json.load(sys.stdin)
nodes = {n["id"]: n for n in (listed["datanodes"] if isinstance(listed, dict) else listed)}
d1 = nodes[1]
sys.exit(not (d1["machine"] == "d1" and d1["admin"] == "draining" and d1["tiles"] == 0))' &&
        healthy
}
mh_wait_for 180 "d1's datanode drained (no tiles, HEALTHY): $(admin status 2>&1 | tail -n 8)" drained
d1_datanode=""
for pid in $(ip netns pids "${MH_NS[${HOST_OF[d1]}]}"); do
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q '^tessera-datanode --config' && d1_datanode=$pid
done
[ -n "$d1_datanode" ] || mh_fail "cannot find d1's datanode"
kill -TERM "$d1_datanode"
mh_wait_for 15 "d1's datanode to stop" eval "! kill -0 $d1_datanode 2>/dev/null"
for host in ws d1; do
    n=0
    while read -r input; do
        n=$((n + 1))
        # this file's pages out of the host's page cache: the read goes to the datanodes
        on "$host" dd if="/mnt/tessera/file$n" iflag=nocache count=0 status=none
        on "$host" cmp "$input" "/mnt/tessera/file$n" || mh_fail "file$n reads wrong on $host after d1's datanode stopped"
    done <"$MH_DIR/inputs"
done
mh_wait_for 30 "HEALTHY with d1's datanode stopped" healthy
mh_log "the guide followed: cluster from config files, fstab mounts, d3 added, d1 drained and stopped, every file right"
