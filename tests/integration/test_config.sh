#!/usr/bin/env bash
# Configuration files (common/conffile.h). `tessera config check` tells a
# good file of each daemon from a bad one, naming each error with its line
# (an unknown key with the key meant, a bad value, a missing section). A
# cluster starts from configuration files alone: meta, a datanode and a
# mount each given only --config FILE (the mount also -f), a flag given
# beside the file winning over it; a file written on the mount reads back.
# `tessera up` writes the same files in STATE/conf and starts its daemons
# with --config.
source "$(dirname "$0")/lib.sh"

CONF=$T/conf
mkdir -p "$CONF" "$T/small/meta" "$T/small/node1"
META=tcp://127.0.0.1:$((BASE + 5))

# check FILE: `tessera config check FILE`, output in $T/check.out; returns its exit code.
check() {
    local rc=0
    timeout -k 5 30 "$TESSERA_TOOL" config check "$1" >"$T/check.out" 2>&1 || rc=$?
    { echo "== tessera config check $1 (exit $rc)"; cat "$T/check.out"; } >>"$T/tool.log"
    return "$rc"
}
# expect_in_check TEXT: the last check said TEXT.
expect_in_check() {
    grep -qF -- "$1" "$T/check.out" || fail "tessera config check did not say '$1': $(cat "$T/check.out")"
}

cat >"$CONF/meta.conf" <<EOF
# tessera-meta for this test
[meta]
listen = tcp://127.0.0.1:1   ; replaced by --listen on the command line
data = $T/small/meta
copies = 1
EOF
cat >"$CONF/datanode.conf" <<EOF
[datanode]
listen = tcp://127.0.0.1:$((BASE + 6))
meta = $META
data = $T/small/node1
log-level = error
EOF
cat >"$CONF/mount.conf" <<EOF
[mount]
meta = $META
io-timeout-ms = $IO_TIMEOUT_MS
fuse-options = default_permissions
mountpoint = $T/small-mnt
EOF

for daemon in meta datanode mount; do
    check "$CONF/$daemon.conf" || fail "tessera config check $daemon.conf failed: $(cat "$T/check.out")"
    expect_in_check "$CONF/$daemon.conf: the configuration is valid"
done

cat >"$T/bad-datanode.conf" <<EOF
[datanode]
lisen = tcp://127.0.0.1:7401
meta = $META
data = $T/nowhere
capacity = lots
insecure = maybe
EOF
rc=0
check "$T/bad-datanode.conf" || rc=$?
[ "$rc" = 2 ] || fail "tessera config check of a bad file exited $rc, not 2"
expect_in_check "bad-datanode.conf:2: unknown key 'lisen' (did you mean 'listen'?)"
expect_in_check "bad-datanode.conf:6: 'insecure' is a switch: true or false, not 'maybe'"
# The key errors are all told at once; fixed, the values are checked, each with its line.
sed -i -e 's/^lisen/listen/' -e '/^insecure/d' "$T/bad-datanode.conf"
echo "scrub-mbps = fast" >>"$T/bad-datanode.conf"
rc=0
check "$T/bad-datanode.conf" || rc=$?
[ "$rc" = 2 ] || fail "tessera config check of bad values exited $rc, not 2"
expect_in_check "(--capacity=lots is set on line 5 of $T/bad-datanode.conf)"
expect_in_check "(--scrub-mbps=fast is set on line 6 of $T/bad-datanode.conf)"
printf 'data = /x\n' >"$T/no-section.conf"
check "$T/no-section.conf" && fail "a file without a section passed the check"
expect_in_check "missing section"
printf '[metta]\ndata = /x\n' >"$T/typo.conf"
check "$T/typo.conf" && fail "a file with section [metta] passed the check"
expect_in_check "unknown section [metta] (did you mean [meta]?)"

# A cluster from the files alone (and one flag that wins over the file).
start_daemon tessera-meta "$T/small/meta.log" \
    "$TESSERA_META" --config "$CONF/meta.conf" --listen "$META" ||
    fail "meta's port $((BASE + 5)) was taken"
# The file says log-level = error: the flag's info brings the "ready" line.
start_daemon tessera-datanode "$T/small/node1.log" \
    "$TESSERA_DATANODE" --config "$CONF/datanode.conf" --log-level info ||
    fail "the datanode's port $((BASE + 6)) was taken"
mkdir -p "$T/small-mnt"
IT_MOUNTS+=("$T/small-mnt")
"$TESSERA_MOUNT" --config "$CONF/mount.conf" -f >"$T/small/mount.log" 2>&1 &
mount_pid=$!
IT_PIDS+=("$mount_pid")
wait_for 30 "the mount made from mount.conf" mountpoint -q "$T/small-mnt"
head -c 3000000 /dev/urandom >"$SHM/input"
cp "$SHM/input" "$T/small-mnt/file" || fail "cannot write to the mount made from mount.conf"
drop_file_cache "$T/small-mnt/file"
cmp "$SHM/input" "$T/small-mnt/file" || fail "the file read back differs"
grep -q "copies 1" "$T/small/meta.log" || fail "meta did not take copies = 1 from its file"
kill -0 "$mount_pid" || fail "the mount exited"
log "meta, datanode and mount started from configuration files; 3 MB written and read back"

# `tessera up` writes the same kind of files and starts its daemons from them.
cluster_up
for name in meta node1 node4 mount; do
    [ -f "$STATE/conf/$name.conf" ] || fail "tessera up wrote no $STATE/conf/$name.conf"
    check "$STATE/conf/$name.conf" || fail "tessera up's $name.conf does not pass the check: $(cat "$T/check.out")"
    tr '\0' ' ' <"/proc/$(pid_of "$name")/cmdline" | grep -qF -- "--config $STATE/conf/$name.conf" ||
        fail "tessera up did not start $name with --config $STATE/conf/$name.conf"
done
echo hello >"$MNT/hello" && [ "$(cat "$MNT/hello")" = hello ] || fail "the tessera up mount does not work"
log "tessera up: every daemon started with --config STATE/conf/NAME.conf"
