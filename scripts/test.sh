#!/usr/bin/env bash
#
# test.sh: everything CI checks, in one command. Installs the Debian packages,
# builds and runs every meson test suite (unit, integration, ...) in build/,
# then does the same in an ASan+UBSan build in build-asan/. Runs both even if
# the first fails; exits non-zero if any test failed.
#
# Works non-interactively as root (CI=true, no stdin) and for a normal user
# with sudo (asked only when packages are missing). The integration tests
# need /dev/fuse; without it meson reports them as skipped.
#
#   ./scripts/test.sh [extra meson test arguments, e.g. --suite unit]
set -euo pipefail

cd "$(dirname "$0")/.."
./scripts/install-deps.sh

failed=()

# build_and_test DIR [meson setup options...]
build_and_test() {
    local dir=$1
    shift
    echo "== $dir: setup and build"
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@" || return 1
    fi
    ninja -C "$dir" || return 1
    echo "== $dir: meson test"
    meson test -C "$dir" --print-errorlogs "${test_args[@]}" </dev/null
}

test_args=("$@")
build_and_test build || failed+=(build)

# Sanitizer reports must fail the test, not scroll by: abort on the first
# UBSan finding too (ASan already does).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
build_and_test build-asan -Db_sanitize=address,undefined -Db_lundef=false || failed+=(build-asan)

if [ "${#failed[@]}" -ne 0 ]; then
    echo "test.sh: FAILED in: ${failed[*]} (logs: <dir>/meson-logs/testlog.txt)" >&2
    exit 1
fi
echo "test.sh: all suites passed in build and build-asan"
