#!/usr/bin/env bash
# pjdfstest, FreeBSD's POSIX file system suite (tests/pjdfstest/README.tessera),
# ~8,800 checks of chmod, chown, link, mkdir, mkfifo, mknod, open, rename,
# rmdir, symlink, truncate, unlink, utimensat and more, each as root and as
# other users, run on a real Tessera mount: every one must pass. It found a
# stale link count in the mount's attribute cache that our own tests missed.
source "$(dirname "$0")/lib.sh"

[ -x "${PJDFSTEST:-}" ] && [ -d "${PJDFSTEST_TESTS:-}" ] ||
    fail "PJDFSTEST and PJDFSTEST_TESTS are not set (run through meson test)"
command -v prove >/dev/null || fail "prove (Perl's TAP runner) is missing: apt-get install perl"

cluster_up

# misc.sh looks for the tool in the tests' parent directories.
mkdir -p "$T/pjd" || fail "mkdir $T/pjd failed"
cp -r "$PJDFSTEST_TESTS" "$T/pjd/tests" && cp "$PJDFSTEST" "$T/pjd/pjdfstest" ||
    fail "could not copy pjdfstest into $T/pjd"
mkdir "$MNT/pjd" || fail "mkdir on the mount failed"
rc=0
(cd "$MNT/pjd" && prove -r "$T/pjd/tests") >"$T/prove.out" 2>&1 || rc=$?
summary=$(grep -E '^Files=|^Result' "$T/prove.out" | tr '\n' ' ')
log "pjdfstest: $summary"
if [ "$rc" != 0 ] || ! grep -q '^Result: PASS' "$T/prove.out"; then
    grep -E 'Failed|Wstat|not ok' "$T/prove.out" | head -40 >&2
    fail "pjdfstest failed on the mount (exit $rc): $summary"
fi
assert_daemons_alive
log "ok"
