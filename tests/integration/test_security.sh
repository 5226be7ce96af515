#!/usr/bin/env bash
# CURVE on every link (issue 30, part A). `tessera up` makes the cluster's
# keys; then, from an outsider's plain ZeroMQ DEALER socket (client_helper
# probe), LOOKUP, TILE_MAP, TILE_READ and HEARTBEAT to meta and to a
# datanode get no answer at all, with no key and with a key the cluster
# does not know: refused at the handshake, each refusal logged with the
# peer's address. The daemons stay up and the mount keeps serving the same
# bytes. A member key works until `tessera keys revoke`, then its next
# connection is refused too. A daemon without keys does not listen beyond
# loopback unless --insecure, and says so.
source "$(dirname "$0")/lib.sh"

[ -n "${CLIENT_HELPER:-}" ] && [ -x "$CLIENT_HELPER" ] ||
    fail "CLIENT_HELPER is not set to the built client_helper (run through meson test)"

cluster_up
KEYS=$STATE/keys
[ -f "$KEYS/known_keys" ] || fail "tessera up made no keys in $KEYS"
for file in server.key meta.key admin.key node1.key mount.key; do
    [ "$(stat -c %a "$KEYS/$file")" = 600 ] || fail "$KEYS/$file is not mode 600"
done
grep -q 'ready: listening on .* (CURVE, known keys only)' "$STATE/logs/meta.log" ||
    fail "meta did not say it serves with CURVE"
run_tool status --state "$STATE" || fail "tessera status failed"
grep -q '^security: CURVE' "$T/tool.log" || fail "tessera status does not say CURVE is on"

meta=$(meta_endpoint)
node=tcp://127.0.0.1:$((BASE + 1))
head -c $((3 * 1048576 + 12345)) /dev/urandom >"$T/data"
cp "$T/data" "$MNT/data"
sync "$MNT/data"
want=$(sha256sum <"$T/data" | cut -d' ' -f1)

# probe ENDPOINT KEY: every message an outsider would try, one connection each.
probe() {
    echo "== probe $*" >>"$T/probe.log"
    "$CLIENT_HELPER" probe "$1" "$2" LOOKUP TILE_MAP TILE_READ HEARTBEAT | tee -a "$T/probe.log"
}

# Control: the probe itself is answered when it holds a member's key.
answered=$(probe "$meta" "$KEYS/admin.key" | grep -c ' answered$' || true)
[ "$answered" = 4 ] || fail "an admin key's probes of meta were not all answered ($answered of 4)"

for target in "$meta" "$node"; do
    for key in none "fresh=$KEYS/server.pub"; do
        out=$(probe "$target" "$key")
        [ "$(grep -c ' silent$' <<<"$out")" = 4 ] ||
            fail "$target answered an outsider with key $key: $out"
    done
done
wait_for 10 "meta to log a refusal without keys" \
    grep -q 'refused a connection from 127\.0\.0\.1:[0-9]*: its handshake on .* failed' "$STATE/logs/meta.log"
wait_for 10 "meta to log an unknown key" \
    grep -q 'refused a connection from 127\.0\.0\.1: key .* is unknown to this cluster' \
    "$STATE/logs/meta.log"
wait_for 10 "node1 to log a refusal without keys" \
    grep -q 'refused a connection from 127\.0\.0\.1:[0-9]*: its handshake on .* failed' "$STATE/logs/node1.log"
wait_for 10 "node1 to log an unknown key" \
    grep -q 'refused a connection from 127\.0\.0\.1: key .* is unknown to this cluster' \
    "$STATE/logs/node1.log"

assert_daemons_alive
drop_file_cache "$MNT/data"
got=$(sha256sum <"$MNT/data" | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "the mount serves other bytes after the probes"
echo more >"$MNT/after" && [ "$(cat "$MNT/after")" = more ] || fail "the mount no longer writes"

# A member key works until revoked; then its next connection is refused.
run_tool keys add --state "$STATE" --role mount visitor || fail "tessera keys add failed"
out=$(probe "$meta" "$KEYS/visitor.key")
[ "$(grep -c ' answered$' <<<"$out")" = 4 ] || fail "a newly added key was not let in: $out"
run_tool keys revoke --state "$STATE" visitor || fail "tessera keys revoke failed"
run_tool keys list --state "$STATE" || fail "tessera keys list failed"
grep -q '^mount  *visitor  *.* revoked$' "$T/tool.log" || fail "keys list does not show visitor revoked"
sleep 1.5 # meta and the datanodes look at known_keys twice a second
for target in "$meta" "$node"; do
    out=$(probe "$target" "$KEYS/visitor.key")
    [ "$(grep -c ' silent$' <<<"$out")" = 4 ] || fail "$target let a revoked key in: $out"
done
wait_for 10 "meta to log the revoked key" \
    grep -q 'refused a connection from 127\.0\.0\.1: key .* (mount visitor) is revoked' \
    "$STATE/logs/meta.log"
assert_daemons_alive
got=$(sha256sum <"$MNT/data" | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "the mount serves other bytes after the revocation"

# A secret key others may read is refused, naming the fix.
cp "$KEYS/admin.key" "$T/loose.key"
chmod 644 "$T/loose.key"
cp "$KEYS/server.pub" "$T/server.pub"
rc=0
"$TESSERA_TOOL" --key "$T/loose.key" status --state "$STATE" >"$T/loose.out" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "tessera used a key file of mode 644"
grep -q "chmod 600 $T/loose.key" "$T/loose.out" || fail "no chmod 600 advice: $(cat "$T/loose.out")"

# Without keys, beyond loopback: refused, unless --insecure (which says so).
mkdir -p "$T/open"
rc=0
timeout -k 5 20 "$TESSERA_META" --listen "tcp://0.0.0.0:$((BASE + 8))" --data "$T/open" \
    >"$T/open.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "tessera-meta listened on 0.0.0.0 without keys"
grep -q 'refusing to listen on tcp://0.0.0.0:.* without keys' "$T/open.log" ||
    fail "tessera-meta did not say why it refused: $(cat "$T/open.log")"
start_daemon "insecure meta" "$T/insecure.log" \
    "$TESSERA_META" --listen "tcp://0.0.0.0:$((BASE + 8))" --data "$T/open" --insecure ||
    fail "tessera-meta --insecure did not start (port taken?)"
grep -q 'INSECURE: listening on tcp://0.0.0.0:.* without keys' "$T/insecure.log" ||
    fail "an insecure meta does not say so in its log"
# A tool without keys (not this cluster's admin key, which cluster_up exported).
env -u TESSERA_KEY TESSERA_STATE="$T/no-such-state" "$TESSERA_TOOL" status \
    --meta "tcp://127.0.0.1:$((BASE + 8))" >"$T/insecure-status.out" 2>&1 ||
    fail "tessera status of the insecure meta failed: $(cat "$T/insecure-status.out")"
grep -q '^security: NONE' "$T/insecure-status.out" ||
    fail "tessera status does not say the insecure meta has no keys"
it_stop_pid "$SMALL_LAST_PID"

cluster_down
log "ok"
