#!/usr/bin/env bash
#
# trust.sh: issue 29's data-safety acceptance at the issue's own sizes,
# which are too long for the CI suite (there the same tests run smaller):
#  1. tests/integration/test_scrub_repair.sh with 100 flipped replicas
#     (then 50 more read through): scrub names exactly the 100, the
#     repairer makes them again, fsck --deep is clean, every byte right;
#  2. tests/multihost/test_heal.sh with a 2 GiB `dd conv=fsync` through the
#     SIGKILL of a datanode (after the 4 writers + 4 readers through a
#     datanode's death and its data directory's deletion).
# Each step prints its own log; the summary at the end says which passed.
# Not part of `meson test`. Needs root, network namespaces and FUSE.
set -uo pipefail
exec </dev/null

usage() {
    cat <<'USAGE'
usage: bench/trust.sh [--flips N] [--dd-mb MIB] [--only scrub|heal]

  --flips N     replicas flipped in step 1 (default 100; then N/2 more)
  --dd-mb MIB   size of step 2's dd through the datanode's death (default 2048)
  --only STEP   run only step scrub or heal
  -h, --help    this text

Environment: TESSERA_BUILD=DIR (default ./build, built with the tests).
Exit status: 0 every step passed, 1 a step failed, 2 usage.
USAGE
}

flips=100 dd_mb=2048 only=""
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --flips | --dd-mb | --only)
        [ $# -ge 2 ] || { echo "trust.sh: $1 needs a value (see --help)" >&2; exit 2; }
        case $1 in
        --flips) flips=$2 ;;
        --dd-mb) dd_mb=$2 ;;
        --only) only=$2 ;;
        esac
        shift 2 ;;
    *) echo "trust.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$flips" =~ ^[1-9][0-9]*$ && "$dd_mb" =~ ^[1-9][0-9]*$ ]] ||
    { echo "trust.sh: --flips and --dd-mb want positive integers" >&2; exit 2; }
case $only in "" | scrub | heal) ;; *) echo "trust.sh: --only wants scrub or heal" >&2; exit 2 ;; esac

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export TESSERA_BUILD=${TESSERA_BUILD:-$REPO/build}
[ -x "$TESSERA_BUILD/tools/tessera" ] ||
    { echo "trust.sh: no build in $TESSERA_BUILD (meson setup build && ninja -C build)" >&2; exit 2; }

declare -A result
run_step() {
    local name=$1
    shift
    local start=$SECONDS
    echo "== $name: $*" >&2
    if env "$@"; then
        result[$name]="passed in $((SECONDS - start)) s"
    else
        result[$name]="FAILED (exit $?) after $((SECONDS - start)) s"
    fi
}

if [ -z "$only" ] || [ "$only" = scrub ]; then
    # Four tiles per file, one flipped replica per tile at most: enough files
    # for both rounds' distinct tiles.
    files=$(((flips + flips / 2 + 3) / 4 + 4))
    run_step scrub SCRUB_FLIPS_A="$flips" SCRUB_FLIPS_B=$((flips / 2)) SCRUB_FILES="$files" \
        "$REPO/tests/integration/test_scrub_repair.sh"
fi
if [ -z "$only" ] || [ "$only" = heal ]; then
    run_step heal HEAL_DD_MB="$dd_mb" "$REPO/tests/multihost/test_heal.sh"
fi

status=0
echo
echo "| step | size | result |"
echo "|---|---|---|"
for name in scrub heal; do
    [ -n "${result[$name]:-}" ] || continue
    size="$flips flipped replicas (+ $((flips / 2)) read through)"
    [ "$name" = heal ] && size="$dd_mb MiB dd conv=fsync through a SIGKILL"
    echo "| $name | $size | ${result[$name]} |"
    [[ "${result[$name]}" == passed* ]] || status=1
done
exit "$status"
