#!/usr/bin/env bash
# tessera-meta killed with SIGKILL while the cluster is idle loses nothing:
# `tessera up --state S` starts it again, the mount that stayed up reconnects,
# and the tree (names, modes, sizes, links, contents) is intact; new writes
# work; a full down/up afterwards still shows the same tree.
source "$(dirname "$0")/lib.sh"

cluster_up

mkdir -p "$MNT/m/a/b" "$MNT/m/c"
cp "$(random_file 9M)" "$MNT/m/a/nine-mib"
cp "$(random_file 70000)" "$MNT/m/a/b/small"
for i in $(seq 1 50); do printf '%d\n' "$i" >"$MNT/m/c/f$i"; done
mv "$MNT/m/c/f1" "$MNT/m/c/renamed"
rm "$MNT/m/c/f2"
ln -s a/b "$MNT/m/link"
chmod 0600 "$MNT/m/a/b/small"
sync -f "$MNT/m" || fail "sync -f failed"
tree_listing "$MNT/m" >"$T/listing.before"
tree_checksums "$MNT/m" >"$T/sums.before"

# Idle: no request in flight when meta dies.
pid=$(pid_of meta)
it_pid_is_ours "$pid" || fail "meta pid $pid is not a daemon of this test"
kill -KILL "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
log "killed tessera-meta (pid $pid)"

# While meta is down, a namespace operation fails (or waits) within a bound
# instead of hanging forever.
start=$(now_ms)
rc=0
timeout -k 5 60 mkdir "$MNT/m/while-meta-down" 2>"$T/mkdir.err" || rc=$?
log "mkdir with meta down: exit $rc after $(($(now_ms) - start)) ms: $(cat "$T/mkdir.err")"
[ "$rc" -lt 124 ] || fail "mkdir with meta down hung for 60 s"

cluster_restart
[ "$(pid_of meta)" != "$pid" ] || fail "tessera up did not restart meta"

# The mount that stayed up reconnects to the new meta.
wait_for 30 "the mount to answer after meta restarted" ls "$MNT/m"
rmdir "$MNT/m/while-meta-down" 2>/dev/null || true # if the mkdir above got through
tree_listing "$MNT/m" >"$T/listing.after" || fail "listing after meta restart failed"
diff "$T/listing.before" "$T/listing.after" >"$T/diff.out" ||
    fail "tree changed across the meta kill (before <, after >): $(head -n 20 "$T/diff.out")"
for file in "$MNT/m/a/nine-mib" "$MNT/m/a/b/small"; do drop_file_cache "$file"; done
tree_checksums "$MNT/m" >"$T/sums.after" || fail "reading files after meta restart failed"
diff "$T/sums.before" "$T/sums.after" >"$T/diff.out" ||
    fail "file contents changed across the meta kill: $(head -n 20 "$T/diff.out")"

# New metadata and data operations work against the new meta.
new_file=$(random_file 2500000)
cp "$new_file" "$MNT/m/c/new" || fail "write after meta restart failed"
mv "$MNT/m/c/new" "$MNT/m/a/new" || fail "rename after meta restart failed"
drop_file_cache "$MNT/m/a/new"
cmp "$new_file" "$MNT/m/a/new" || fail "file written after meta restart differs"
tree_listing "$MNT/m" >"$T/listing.before2"
tree_checksums "$MNT/m" >"$T/sums.before2"

# And a clean down/up sees the same tree (the store on disk is consistent).
cluster_down
cluster_restart
tree_listing "$MNT/m" >"$T/listing.after2" || fail "listing after down/up failed"
diff "$T/listing.before2" "$T/listing.after2" >"$T/diff.out" ||
    fail "tree changed across down/up after the meta kill: $(head -n 20 "$T/diff.out")"
tree_checksums "$MNT/m" >"$T/sums.after2" || fail "reading after down/up failed"
diff "$T/sums.before2" "$T/sums.after2" >"$T/diff.out" ||
    fail "contents changed across down/up after the meta kill: $(head -n 20 "$T/diff.out")"

assert_daemons_alive
log "ok"
