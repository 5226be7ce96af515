#!/usr/bin/env bash
# The C POSIX conformance runner (tests/posix/posix_test DIR, TAP on stdout,
# exit 0 when every case passes) against a directory inside the mount.
source "$(dirname "$0")/lib.sh"

POSIX_TEST=${POSIX_TEST:-$TESSERA_BUILD/tests/posix/posix_test}
[ -x "$POSIX_TEST" ] || skip "POSIX runner $POSIX_TEST is not built"

# The runner's permission cases switch to an unprivileged uid, which must be
# able to reach the directory: open up the (mktemp 0700) test directory.
chmod 0755 "$T"
cluster_up

mkdir "$MNT/posix" || fail "mkdir in the mount failed"
rc=0
timeout -k 5 300 "$POSIX_TEST" "$MNT/posix" 2>&1 | tee "$T/posix.log" || rc=$?
if [ "$rc" != 0 ]; then
    grep -E '^not ok' "$T/posix.log" >&2 || true
    fail "posix_test exited $rc ($(grep -c '^not ok' "$T/posix.log" || true) cases not ok)"
fi

assert_daemons_alive
log "ok"
