#!/usr/bin/env bash
# bench/smallfiles.sh DIR LABEL: the everyday small-file work of issue 34 on
# DIR, one round, each workload timed in seconds (lower is better), written
# as OUTROOT/LABEL-smallfiles/results.tsv in run-peer-bench.sh's format so
# that bench/run.sh puts them in its table (--only smallfiles):
#   sf_tar        tar xf of /usr/include (~9k entries) + sync
#   sf_rsync      rsync -a of /usr/share/doc (~6k entries) + sync (needs rsync)
#   sf_git_clone  git clone --no-local of this repository + sync
#   sf_make       make -j2 of a generated 64-file C project + sync
#   sf_find_stat  find + stat of every entry of the tar tree, caches dropped
#   sf_rm         rm -r of all of it + sync
# Inputs are made once in /dev/shm (SF_CACHE) so that reading them costs
# the same for every target. Run as root (drop_caches).
set -euo pipefail

DIR=${1:?usage: bench/smallfiles.sh DIR LABEL}
LABEL=${2:?usage: bench/smallfiles.sh DIR LABEL}
OUT=${OUTROOT:-/tmp/peerbench/results}/$LABEL-smallfiles
CACHE=${SF_CACHE:-/dev/shm/tessera-smallfiles}
REPO=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
W=$DIR/smallfiles.$$
mkdir -p "$OUT" "$CACHE" "$W"
RES=$OUT/results.tsv
printf 'workload\trep\tvalue\tunit\n' >"$RES"
trap 'rm -rf "$W"' EXIT

log() { echo "[$(date +%T)] smallfiles: $*"; }
now() { date +%s.%N; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# timed NAME COMMAND...: runs it, records the seconds it took; a command
# that fails (the do-nothing FUSE mount reads back zeros, so git and make
# fail there) records nothing, so the table shows "-" rather than a time
# for half the work.
timed() {
    local name=$1 t0 t1 secs
    shift
    t0=$(now)
    if ! "$@" >"$OUT/$name.err" 2>&1; then
        log "$name failed on this target (no figure): $(tail -n 1 "$OUT/$name.err")"
        return 0
    fi
    t1=$(now)
    secs=$(python3 -c "print('%.3f' % ($t1 - $t0))")
    printf '%s\t1\t%s\ts\n' "$name" "$secs" >>"$RES"
    log "$name: $secs s"
}

# ---- inputs, once ----
[ -s "$CACHE/include.tar" ] || tar cf "$CACHE/include.tar" -C /usr include
[ -d "$CACHE/repo.git" ] || git clone -q --bare "$REPO" "$CACHE/repo.git"
if [ ! -f "$CACHE/cproject/Makefile" ]; then
    mkdir -p "$CACHE/cproject"
    for ((i = 0; i < 64; i++)); do
        {
            echo "#include <stdio.h>"
            echo "#include <string.h>"
            for ((j = 0; j < 8; j++)); do
                echo "int f${i}_$j(const char *s) { int n = 0; for (size_t k = 0; k < strlen(s); k++) n += s[k] * $j; return n + $i; }"
            done
        } >"$CACHE/cproject/unit$i.c"
    done
    {
        echo "int main(void) { return 0; }"
    } >"$CACHE/cproject/main.c"
    printf 'SRCS := $(wildcard *.c)\nOBJS := $(SRCS:.c=.o)\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n%%.o: %%.c\n\t$(CC) -O1 -c -o $@ $<\n' \
        >"$CACHE/cproject/Makefile"
fi

# ---- the workloads ----
drop
timed sf_tar sh -c "tar xf '$CACHE/include.tar' -C '$W' && sync -f '$W'"
if command -v rsync >/dev/null; then
    drop
    timed sf_rsync sh -c "rsync -a /usr/share/doc/ '$W/doc/' && sync -f '$W'"
else
    log "no rsync on this machine: sf_rsync skipped (apt-get install rsync)"
fi
drop
timed sf_git_clone sh -c "git clone -q --no-local 'file://$CACHE/repo.git' '$W/clone' && sync -f '$W'"
cp -r "$CACHE/cproject" "$W/cproject" || log "cannot copy the C project to $W"
drop
timed sf_make sh -c "make -s -j2 -C '$W/cproject' >/dev/null && sync -f '$W'"
drop
timed sf_find_stat sh -c "find '$W/include' -printf '%s %T@ %m\n' >/dev/null"
drop
timed sf_rm sh -c "rm -rf '$W' && sync -f '$DIR'"
