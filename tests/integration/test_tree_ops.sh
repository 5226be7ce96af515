#!/usr/bin/env bash
# Directory trees: cp -a a source tree in, then the same mkdir / mv / rm -r /
# rename-over / hard link / symlink operations on the mount and on a local
# copy; after every step diff -r and a listing of types, modes, sizes, link
# counts and symlink targets must agree, and failing operations must fail
# with the same error on both.
source "$(dirname "$0")/lib.sh"

cluster_up

# make_tree DIR: a tree with the shapes that break file systems.
make_tree() {
    local root=$1 i
    mkdir -p "$root"/a/b/c/d "$root"/e "$root"/f/g "$root/with space" "$root/empty"
    : >"$root/a/empty-file"
    printf x >"$root/a/b/one-byte"
    head -c 4097 /dev/urandom >"$root/a/b/c/page-and-one"
    head -c $((1536 * 1024)) /dev/urandom >"$root/a/b/c/d/one-and-a-half-mib"
    head -c $((3 * 1048576 + 1)) /dev/urandom >"$root/e/three-mib-and-one"
    printf 'hello\n' >"$root/with space/fichier été.txt"
    seq 1 20000 >"$root/f/g/numbers"
    chmod 0600 "$root/f/g/numbers"
    printf '#!/bin/sh\necho hi\n' >"$root/f/script"
    chmod 0755 "$root/f/script"
    printf 'ro\n' >"$root/f/read-only"
    chmod 0444 "$root/f/read-only"
    chmod 0700 "$root/f/g"
    ln -s b/c/page-and-one "$root/a/relative-link"
    ln -s /nonexistent/target "$root/a/dangling-link"
    ln "$root/f/script" "$root/f/script-hardlink"
    printf 'long\n' >"$root/e/$(printf 'n%.0s' $(seq 1 255))"
    mkdir "$root/many"
    for ((i = 0; i < 300; i++)); do
        printf '%d\n' "$i" >"$root/many/entry-$i"
    done
}

LOCAL=$T/local/tree
REMOTE=$MNT/tree
SOURCE=$T/source
make_tree "$SOURCE"
mkdir -p "$T/local"

cp -a "$SOURCE" "$LOCAL"
cp -a "$SOURCE" "$REMOTE" 2>"$T/cp.err" || fail "cp -a of the tree into the mount failed: $(head "$T/cp.err")"

check_same() {
    local step=$1
    diff -r --no-dereference "$LOCAL" "$REMOTE" >"$T/diff.out" 2>&1 ||
        fail "after $step: diff -r differs: $(head -n 20 "$T/diff.out")"
    tree_listing "$LOCAL" >"$T/listing.local"
    tree_listing "$REMOTE" >"$T/listing.mount" || fail "after $step: listing the mount failed"
    diff "$T/listing.local" "$T/listing.mount" >"$T/diff.out" 2>&1 ||
        fail "after $step: types/modes/sizes/links differ (local <, mount >): $(head -n 20 "$T/diff.out")"
}

check_same "cp -a"
# cp -a also keeps modification times (setattr of mtime).
(cd "$LOCAL" && find . ! -type l -printf '%P %Ts\n' | LC_ALL=C sort) >"$T/times.local"
(cd "$REMOTE" && find . ! -type l -printf '%P %Ts\n' | LC_ALL=C sort) >"$T/times.mount"
diff "$T/times.local" "$T/times.mount" >"$T/diff.out" ||
    fail "cp -a did not keep mtimes (local <, mount >): $(head -n 20 "$T/diff.out")"
# shellcheck disable=SC2012 # ls on purpose: readdir as users see it
entries=$(ls "$REMOTE/many" | wc -l)
[ "$entries" = 300 ] || fail "ls of a 300-entry directory shows $entries entries"

# both 'COMMANDS': run COMMANDS with each tree as the working directory; the
# exit status and the messages must be the same, then the trees.
both() {
    local commands=$1 rc_local=0 rc_mount=0
    (cd "$LOCAL" && eval "$commands") >"$T/out.local" 2>&1 || rc_local=$?
    (cd "$REMOTE" && eval "$commands") >"$T/out.mount" 2>&1 || rc_mount=$?
    [ "$rc_local" = "$rc_mount" ] ||
        fail "'$commands' exited $rc_mount on the mount ($(head -c 300 "$T/out.mount")), $rc_local locally ($(head -c 300 "$T/out.local"))"
    cmp -s "$T/out.local" "$T/out.mount" ||
        fail "'$commands' printed '$(head -c 300 "$T/out.mount")' on the mount, '$(head -c 300 "$T/out.local")' locally"
    check_same "$commands"
}

both 'mv a/b b-moved-up'
both 'mv e b-moved-up/c/d/e-moved-down'
both 'mv f/g/numbers f/g/renamed && mv f/read-only f/g/'
both 'mv -f f/script f/g/renamed'                  # rename over an existing file
both 'mv -T "with space" empty'                    # rename a directory over an empty one
both 'mkdir -p new/x/y/z && cp -a many new/x/y/z/'
both 'rm -r many'
both 'rm -r b-moved-up/c'
both 'ln -s ../new/x new-link && ln f/script-hardlink f/third-link'
both 'cat new-link/y/z/many/entry-7 && ls new-link/y/z/many | wc -l'
both 'echo appended >> f/third-link && cat f/script-hardlink'
both 'touch -d "2001-02-03 04:05:06" a/empty-file && stat -c %Y a/empty-file'
both 'chmod 640 f/third-link && stat -c %a f/script-hardlink'
# Operations that must fail, with the same error as on a local disk.
both 'rmdir new'                                   # ENOTEMPTY
both 'mkdir new'                                   # EEXIST
both 'mv new new/x/inside-itself'                  # EINVAL
both 'rm does-not-exist'                           # ENOENT
both 'cat new'                                     # EISDIR
both 'rmdir f/third-link'                          # ENOTDIR
both 'mv -T empty new'                             # ENOTEMPTY on rename over a full dir
both 'rm -r new && rmdir empty'
both 'ls -A | LC_ALL=C sort'

assert_daemons_alive
log "ok"
