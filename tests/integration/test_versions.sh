#!/usr/bin/env bash
# Every program answers --version with exit 0 and one line "NAME VERSION
# (revision REV, protocol N)", all four built from the same revision; the
# tool also takes `tessera version`. With git at hand the revision is the
# source tree's commit (vcs_tag rewrites it at every build).
source "$(dirname "$0")/lib.sh"

revisions=()
for exe in "$TESSERA_TOOL" "$TESSERA_META" "$TESSERA_DATANODE" "$TESSERA_MOUNT"; do
    name=$(basename "$exe")
    line=$("$exe" --version) || fail "$name --version exited $?"
    [[ "$line" =~ ^$name\ [0-9]+\.[0-9]+\.[0-9]+\ \(revision\ ([^,]+),\ protocol\ [0-9]+\)$ ]] ||
        fail "$name --version printed '$line'"
    revisions+=("${BASH_REMATCH[1]}")
    grep -q -- '--version' <("$exe" --help 2>&1) || fail "$name --help does not list --version"
done
[ "$(printf '%s\n' "${revisions[@]}" | sort -u | wc -l)" = 1 ] ||
    fail "the programs report different revisions: ${revisions[*]}"
[ "$("$TESSERA_TOOL" version)" = "$("$TESSERA_TOOL" --version)" ] ||
    fail "tessera version and tessera --version differ"

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
if command -v git >/dev/null && commit=$(git -C "$source_dir" rev-parse --short=7 HEAD 2>/dev/null); then
    [[ "${revisions[0]}" == "$commit"* ]] ||
        log "note: built from ${revisions[0]}, the tree is at $commit now (rebuild to update)"
fi
log "versions: ${revisions[0]} on all four programs"
