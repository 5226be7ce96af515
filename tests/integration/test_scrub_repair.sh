#!/usr/bin/env bash
# Issue 29's checksum acceptance, with copies=2 (the default): one random
# byte flipped in many replica files (at most one replica per tile) is
# never served, and the cluster heals itself.
# (SCRUB_FLIPS_A / SCRUB_FLIPS_B / SCRUB_FILES set the counts; bench/trust.sh
# runs the issue's 100 flips.)
#  A. 24 flipped replicas: `tessera scrub` names exactly those 24 (exit
#     1); meta drops them from their tiles' sets, the repairer makes them
#     again from the good replicas; health ends HEALTHY, `tessera fsck
#     --deep` is clean, every file reads back as written.
#  B. 12 more flipped replicas, then every file is read at once (page
#     cache dropped): every byte right, the reads failing over to the good
#     replica; after the repair fsck --deep is clean again.
#  C. `tessera scrub DIR`: replicas flipped in files inside DIR and
#     outside it; the scrub names exactly the inside ones, by path and tile
#     (exit 1), at the pace --max-mbps asks; they are repaired; a second
#     scrub of DIR is clean (exit 0).
source "$(dirname "$0")/lib.sh"

cluster_up

health_ok() { "$TESSERA_TOOL" health --state "$STATE" >/dev/null; }
fsck_deep_clean() { "$TESSERA_TOOL" fsck "$MNT" --deep >"$T/fsck.out" 2>&1; }
all_tiles_reported() {
    local total
    total=$("$TESSERA_TOOL" status --state "$STATE" --json |
        python3 -c "import json,sys; print(sum(n['tiles'] for n in json.load(sys.stdin)))")
    [ "$total" -ge "$1" ]
}

flips_a=${SCRUB_FLIPS_A:-24}
flips_b=${SCRUB_FLIPS_B:-12}
files=${SCRUB_FILES:-16}
declare -a source
for ((i = 0; i < files; i++)); do
    source[i]=$(random_file 4M)
    cp "${source[i]}" "$MNT/f$i" || fail "cp f$i failed"
done
sync "$MNT"/f* || fail "fsync failed"
wait_for 30 "the datanodes to report every replica" all_tiles_reported $((files * 4 * 2))
wait_for 30 "health HEALTHY" health_ok

# flip_replicas N: flips one random byte in one replica file of N distinct
# tiles not flipped before; prints the flipped files' names.
declare -A used_tile
# FLIP_INOS="INO ...": only tiles of those inodes.
flip_replicas() {
    FLIP_INOS=${FLIP_INOS:-} python3 - "$1" "$STATE" "$files" "${!used_tile[@]}" <<'PY'
import glob, os, random, sys
count, state, files = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
used = set(sys.argv[4:])
only = set(os.environ["FLIP_INOS"].split())
candidates = []
for path in glob.glob(os.path.join(state, "node*", "tiles", "*", "*")):
    name = os.path.basename(path)
    if name.endswith(".crc") or name.startswith(".") or name.count(".") != 2:
        continue
    ino, tile, _ = name.split(".")
    if only and ino not in only:
        continue
    candidates.append((f"{ino}.{tile}", path))
random.shuffle(candidates)
done = set()
for key, path in candidates:
    if len(done) == count:
        break
    if key in used or key in done or os.path.getsize(path) == 0:
        continue
    done.add(key)
    at = random.randrange(os.path.getsize(path))
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ (1 << random.randrange(8))]))
    print(key, os.path.basename(path))
if len(done) != count:
    sys.exit(f"only {len(done)} tiles to flip")
PY
}
check_files() {
    local i
    for ((i = 0; i < files; i++)); do
        drop_file_cache "$MNT/f$i"
        cmp "${source[i]}" "$MNT/f$i" || fail "f$i reads wrong bytes ($1)"
    done
}

# ---- A: the scrub finds exactly the flipped replicas, the repair heals ------
flip_replicas "$flips_a" >"$T/flipped-a" || fail "could not flip $flips_a replicas"
while read -r key name; do used_tile[$key]=1; done <"$T/flipped-a"
rc=0
timeout -k 5 300 "$TESSERA_TOOL" scrub --state "$STATE" >"$T/scrub.out" 2>&1 || rc=$?
cat "$T/scrub.out" >>"$T/tool.log"
[ "$rc" = 1 ] || fail "tessera scrub exited $rc with $flips_a corrupt replicas, expected 1"
grep -q "$flips_a corrupt tile files found" "$T/scrub.out" || fail "tessera scrub: $(tail -3 "$T/scrub.out")"
while read -r key name; do
    grep -q "tile file $name " "$T/scrub.out" || fail "tessera scrub did not name $name"
done <"$T/flipped-a"
[ "$(grep -c '^corrupt:' "$T/scrub.out")" = "$flips_a" ] || fail "tessera scrub named other files too"
log "scrub named exactly the $flips_a flipped replicas"
wait_for 180 "the repair of the $flips_a corrupt replicas (fsck --deep clean)" fsck_deep_clean
wait_for 30 "health HEALTHY after the repair" health_ok
check_files "after the scrub's repair"
for name in $(cut -d' ' -f2 "$T/flipped-a"); do
    ! compgen -G "$STATE/node*/tiles/*/$name" >/dev/null || fail "corrupt replica $name is still on disk"
done
log "repaired: fsck --deep clean, health HEALTHY, every file right, the bad files gone"

# ---- B: reads fail over to the good replica -----------------------------------
flip_replicas "$flips_b" >"$T/flipped-b" || fail "could not flip $flips_b more replicas"
check_files "with $flips_b corrupt replicas, before any repair"
log "every file read right with $flips_b corrupt replicas on the datanodes"
wait_for 90 "the repair of the replicas the reads found corrupt (fsck --deep clean)" fsck_deep_clean
check_files "after the second repair"
while read -r key name; do used_tile[$key]=1; done <"$T/flipped-b"

# ---- C: the scrub of one directory ------------------------------------------
mkdir "$MNT/d" || fail "mkdir d failed"
declare -A inside_path
for ((i = 0; i < 4; i++)); do
    inside[i]=$(random_file 4M)
    cp "${inside[i]}" "$MNT/d/g$i" || fail "cp d/g$i failed"
    inside_path[$(stat -c %i "$MNT/d/g$i")]=$MNT/d/g$i
done
sync "$MNT"/d/g* || fail "fsync failed"
wait_for 30 "the datanodes to report every replica" all_tiles_reported $(((files + 4) * 4 * 2))
FLIP_INOS="${!inside_path[*]}" flip_replicas 3 >"$T/flipped-in" || fail "could not flip 3 replicas in d"
while read -r key name; do used_tile[$key]=1; done <"$T/flipped-in"
outside_inos=$(for ((i = 0; i < files; i++)); do stat -c %i "$MNT/f$i"; done)
FLIP_INOS="$outside_inos" flip_replicas 2 >"$T/flipped-out" || fail "could not flip 2 replicas outside d"
rc=0
timeout -k 5 300 "$TESSERA_TOOL" scrub "$MNT/d" --max-mbps 100 >"$T/scrub-d.out" 2>&1 || rc=$?
cat "$T/scrub-d.out" >>"$T/tool.log"
[ "$rc" = 1 ] || fail "tessera scrub d exited $rc with 3 corrupt replicas in it, expected 1"
grep -q "^scrub: 4 files, 16 tiles, 32 replicas, .* 3 corrupt replicas found" "$T/scrub-d.out" ||
    fail "tessera scrub d: $(tail -3 "$T/scrub-d.out")"
while read -r key name; do
    path=${inside_path[${key%.*}]} tile=${key#*.}
    grep -q "^corrupt: $path: tile $tile: " "$T/scrub-d.out" || fail "tessera scrub d did not name $path tile $tile"
done <"$T/flipped-in"
[ "$(grep -c '^corrupt:' "$T/scrub-d.out")" = 3 ] || fail "tessera scrub d named other replicas too"
log "scrub of d named exactly its 3 flipped replicas by path"
fsck_d_clean() { "$TESSERA_TOOL" fsck "$MNT/d" --deep >"$T/fsck.out" 2>&1; }
wait_for 90 "the repair of d's corrupt replicas (fsck d --deep clean)" fsck_d_clean
"$TESSERA_TOOL" scrub "$MNT/d" >"$T/scrub-d2.out" 2>&1 || fail "the scrub of d after the repair failed: $(tail -3 "$T/scrub-d2.out")"
grep -q "^scrub: 4 files, 16 tiles, 32 replicas, .* 0 corrupt replicas found" "$T/scrub-d2.out" ||
    fail "the clean scrub of d says: $(tail -3 "$T/scrub-d2.out")"
for ((i = 0; i < 4; i++)); do
    drop_file_cache "$MNT/d/g$i"
    cmp "${inside[i]}" "$MNT/d/g$i" || fail "d/g$i reads wrong bytes after the repair"
done
log "d repaired: scrub d clean, every file right"
cluster_down
