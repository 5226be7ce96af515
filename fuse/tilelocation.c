/*
 * @file tilelocation.c
 * See tilelocation.h.
 *
 * Relocation: every tile request (read, write, truncate) that a datanode
 * answers with TS_ERR_STALE goes through tilelocation_relocate(), which asks meta
 * for the tile's location now and sleeps 5, 10, 20.. up to 100 ms between
 * tries while meta still gives the same one (a move not yet committed, or
 * a frozen tile), until io_timeout_ms have passed: then EIO. Workers never
 * take file->lock to do so (a thread may hold it while it waits for budget
 * the worker holds): they ask meta directly and put the new location into
 * the file's cache when they finish, under the lock they take anyway. A
 * write job retries inside its job, so the tile stays in `writing` and the
 * next write of that tile waits for it: writes of one tile keep their order.
 *
 * Meta is never asked with file->lock held: a slow meta reply would stall
 * every reader and writer of the file. A lookup lets the lock go while it
 * asks and keeps the answer only if no truncation or punch forgot the
 * file's locations meanwhile (`locations_epoch`); otherwise it asks again.
 * Callers therefore find the file may have changed across the call (other
 * writes, reads and loads ran), and look up what they need after it.
 */
#include "tilelocation.h"

#include "log.h"
#include "metaclient.h"
#include "tileplace.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Tile locations remembered per open file, direct-mapped by tile index: a
 * few KiB for small files (64 slots of 208 bytes, each holder's tile token
 * included), so that many open files stay cheap, growing with the file up
 * to a cap (random readers of a big file then find every location without
 * asking meta again). */
#define LOCATION_CACHE_MIN 64
#define LOCATION_CACHE_MAX 65536
/* Tiles asked of meta at once when reading. */
#define TILE_MAP_BATCH 64
/* Tiles allocated at once for a sequential writer. */
#define ALLOCATE_BATCH 16
/* Backoff between tries of a tile whose datanode says it is stale while
 * meta still names it (a move about to commit): doubling, capped. */
#define STALE_FIRST_DELAY_MS 5
#define STALE_MAX_DELAY_MS 100
/* How often a write asks meta again while no datanode is up. */
#define NONODES_RETRY_MS 200

static struct cached_location *location_slot(struct open_file *file, uint64_t tile)
{
    return &file->locations[tile & (file->location_slots - 1)];
}

/* The slot's location when it holds tile's: true and *location, else false. */
static bool location_cached(const struct cached_location *slot, uint64_t tile,
                            struct tile_location *location)
{
    if (slot->node == 0 || slot->tile != tile)
        return false;
    memset(location, 0, sizeof(*location));
    location->node = slot->node;
    location->version = slot->version;
    location->read_node = slot->read_node;
    location->read_version = slot->read_version;
    location->flags = slot->flags;
    location->holder_count = slot->holder_count;
    memcpy(location->holders, slot->holders, slot->holder_count * sizeof(slot->holders[0]));
    return true;
}

/* Packs location into slot: false (slot untouched) when it has more than CACHED_HOLDERS. */
static bool location_pack(struct cached_location *slot, uint64_t tile,
                          const struct tile_location *location)
{
    if (location->holder_count > CACHED_HOLDERS)
        return false;
    memset(slot, 0, sizeof(*slot));
    slot->tile = tile;
    slot->node = location->node;
    slot->version = location->version;
    slot->read_node = location->read_node;
    slot->read_version = location->read_version;
    slot->flags = location->flags;
    slot->holder_count = location->holder_count;
    memcpy(slot->holders, location->holders, location->holder_count * sizeof(slot->holders[0]));
    return true;
}

/* Grows the location cache to hold `tiles` tiles (up to the cap). */
static void location_cache_grow(struct open_file *file, uint64_t tiles)
{
    size_t slots = file->location_slots;
    while (slots < tiles && slots < LOCATION_CACHE_MAX)
        slots *= 2;
    if (slots == file->location_slots)
        return;
    struct cached_location *grown = calloc(slots, sizeof(*grown));
    if (!grown)
        return; /* a smaller cache only costs meta round trips */
    for (size_t i = 0; i < file->location_slots; i++) {
        struct cached_location *old = &file->locations[i];
        if (old->node != 0)
            grown[old->tile & (slots - 1)] = *old;
    }
    free(file->locations);
    file->locations = grown;
    file->location_slots = slots;
}

int tilelocation_init(struct open_file *file)
{
    file->locations = calloc(LOCATION_CACHE_MIN, sizeof(*file->locations));
    if (!file->locations)
        return -ENOMEM;
    file->location_slots = LOCATION_CACHE_MIN;
    return 0;
}

void tilelocation_fini(struct open_file *file)
{
    free(file->locations);
}

void tilelocation_remember(struct open_file *file, uint64_t tile,
                           const struct tile_location *location)
{
    if (location->node == 0)
        return; /* holes are asked again: another mount may fill them */
    if (tile >= file->location_slots)
        location_cache_grow(file, tile + 1);
    struct cached_location *slot = location_slot(file, tile);
    if (!location_pack(slot, tile, location) && slot->tile == tile)
        memset(slot, 0, sizeof(*slot)); /* too many holders to cache: none, not an old set */
}

/*
 * Asks meta for the locations of tiles [tile, tile + count) with file->lock
 * let go, so that one slow meta reply stalls none of the file's other
 * readers and writers (the caller holds a reference, so the file stays).
 * *kept: no truncation or punch forgot locations meanwhile; otherwise the
 * answer may name tiles that are gone, and the caller asks again. *size
 * (may be NULL): the file's size as meta answered. Returns meta's status.
 */
static int tile_map_unlocked(struct datapath *datapath, struct open_file *file, uint64_t tile,
                             uint32_t count, bool allocate, uint32_t node,
                             struct tile_location *locations, uint64_t *size, bool *kept)
{
    uint64_t epoch = file->locations_epoch;
    pthread_mutex_unlock(&file->lock);
    int status = metaclient_tile_map_sized(datapath->meta, file->ino, tile, count, allocate, node,
                                           locations, size);
    pthread_mutex_lock(&file->lock);
    *kept = *kept && file->locations_epoch == epoch;
    return status;
}

/*
 * Meta said no datanode is up to take tile: one may be restarting, or meta
 * may have missed their heartbeats for a moment. Asks again every
 * NONODES_RETRY_MS for io_timeout_ms, as long as a silent datanode is
 * waited for, before the write fails. Called with file->lock held; lets it
 * go while sleeping and asking. Returns meta's last status (one tile in
 * *location).
 */
static int nodes_wait_and_allocate(struct datapath *datapath, struct open_file *file, uint64_t tile,
                                   struct tile_location *location, bool *kept)
{
    int64_t deadline_ms = util_monotonic_ms() + datapath->io_timeout_ms;
    int status = TS_ERR_NONODES;

    log_warn("no datanode is up to take inode %llu tile %llu; waiting up to %d ms for one",
             (unsigned long long)file->ino, (unsigned long long)tile, datapath->io_timeout_ms);
    while (status == TS_ERR_NONODES && util_monotonic_ms() < deadline_ms) {
        pthread_mutex_unlock(&file->lock);
        util_sleep_ms(NONODES_RETRY_MS);
        pthread_mutex_lock(&file->lock);
        status = tile_map_unlocked(datapath, file, tile, 1, true, 0, location, NULL, kept);
    }
    if (status == TS_OK)
        log_info("inode %llu tile %llu placed on datanode %u after waiting",
                 (unsigned long long)file->ino, (unsigned long long)tile, location->node);
    return status;
}

/* How many tiles from `tile` one TILE_MAP asks for, and the node a dynamic
 * writer names (0: meta places). May let file->lock go (tileplace_pick). */
static uint32_t tile_map_batch_wanted(struct datapath *datapath, struct open_file *file,
                                      uint64_t tile, bool allocate, uint32_t *node)
{
    *node = 0;
    if (allocate && file->placement == TS_PLACEMENT_DYNAMIC) {
        *node = tileplace_pick(datapath, file, TILEPLACE_BATCH);
        return TILEPLACE_BATCH;
    }
    if (allocate)
        return tile == file->last_written_tile + 1 || (tile == 0 && file->size == 0)
                   ? ALLOCATE_BATCH
                   : 1;
    /* Reads go forward: fetch the tiles up to the end of the file too. */
    uint64_t tiles_in_file = filetiles_tile_count(&file->layout, file->size);
    if (tiles_in_file <= tile + 1)
        return 1;
    return (uint32_t)(tiles_in_file - tile < TILE_MAP_BATCH ? tiles_in_file - tile
                                                             : TILE_MAP_BATCH);
}

/* The batch, never past an array file's last tile: meta refuses a TILE_MAP
 * that asks for tiles the array lacks (TS_ERR_FBIG), and a write near an
 * array's end with round-robin or static placement asked ALLOCATE_BATCH. */
static uint32_t tile_map_batch(struct datapath *datapath, struct open_file *file, uint64_t tile,
                               bool allocate, uint32_t *node)
{
    uint32_t count = tile_map_batch_wanted(datapath, file, tile, allocate, node);
    if (file->layout.array) {
        uint64_t tiles = arraylayout_tile_count(file->layout.array);
        uint64_t left = tiles > tile ? tiles - tile : 1;
        if (count > left)
            count = (uint32_t)left;
    }
    return count;
}

int tilelocation_get(struct datapath *datapath, struct open_file *file, uint64_t tile,
                     bool allocate, struct tile_location *location)
{
    struct tile_location batch[TILE_MAP_BATCH];
    int status;

    for (;;) {
        if (location_cached(location_slot(file, tile), tile, location))
            return 0;
        uint32_t node;
        uint32_t count = tile_map_batch(datapath, file, tile, allocate, &node);
        bool kept = true;
        status = tile_map_unlocked(datapath, file, tile, count, allocate, node, batch, NULL, &kept);
        if ((status == TS_ERR_NOSPC || status == TS_ERR_NONODES) && (count > 1 || node != 0)) {
            /* The batch may not fit, or the node may have filled up since
             * meta last said: one tile, placed by meta. */
            count = 1;
            status = tile_map_unlocked(datapath, file, tile, count, allocate, 0, batch, NULL, &kept);
        }
        if (status == TS_ERR_NONODES && allocate)
            status = nodes_wait_and_allocate(datapath, file, tile, batch, &kept);
        if (status != TS_OK)
            return errno_of_status(status);
        if (!kept)
            continue; /* a truncation came meanwhile: what meta said may be gone */
        for (uint32_t i = 0; i < count; i++)
            tilelocation_remember(file, tile + i, &batch[i]);
        *location = batch[0];
        return 0;
    }
}

int tilelocation_size_at(struct datapath *datapath, struct open_file *file, uint64_t offset,
                         uint64_t *size)
{
    struct tile_location batch[TILE_MAP_BATCH];
    struct filetiles_walk walk;
    struct tile_segment segment;
    bool kept = true;

    /* An array's tiles cover its bytes; past them it has no tile to ask about. */
    if (file->layout.array && offset >= file->layout.array->array_bytes)
        return -ERANGE;
    filetiles_walk_init(&walk, &file->layout, offset, 1);
    if (!filetiles_walk_next(&walk, &segment))
        return -ERANGE;
    uint32_t count = file->layout.array ? 1 : TILE_MAP_BATCH;
    int status = tile_map_unlocked(datapath, file, segment.tile, count, false, 0, batch, size,
                                   &kept);
    if (status != TS_OK)
        return errno_of_status(status);
    if (!kept)
        return -EAGAIN;
    for (uint32_t i = 0; i < count; i++)
        tilelocation_remember(file, segment.tile + i, &batch[i]);
    return 0;
}

void tilelocation_forget_from(struct open_file *file, uint64_t first_tile)
{
    file->locations_epoch++;
    for (size_t i = 0; i < file->location_slots; i++) {
        if (file->locations[i].tile >= first_tile)
            memset(&file->locations[i], 0, sizeof(file->locations[i]));
    }
}

void tilelocation_forget_range(struct open_file *file, uint64_t first_tile, uint64_t last_tile)
{
    file->locations_epoch++;
    for (size_t i = 0; i < file->location_slots; i++) {
        uint64_t tile = file->locations[i].tile;
        if (tile >= first_tile && tile <= last_tile)
            memset(&file->locations[i], 0, sizeof(file->locations[i]));
    }
}

void tilelocation_forget_all(struct open_file *file)
{
    file->locations_epoch++;
    memset(file->locations, 0, file->location_slots * sizeof(*file->locations));
}

/* Whether two locations name the same holders (node and version each, in order). */
static bool holders_equal(const struct tile_location *a, const struct tile_location *b)
{
    if (a->node != b->node || a->version != b->version || a->holder_count != b->holder_count)
        return false;
    for (uint32_t i = 0; i < a->holder_count; i++) {
        if (a->holders[i].node != b->holders[i].node ||
            a->holders[i].version != b->holders[i].version)
            return false;
    }
    return true;
}

/* Whether b's holders carry the same tile tokens as a's (holders_equal(a, b) first). */
static bool tokens_equal(const struct tile_location *a, const struct tile_location *b)
{
    for (uint32_t i = 0; i < a->holder_count; i++) {
        if (a->holders[i].token_expiry != b->holders[i].token_expiry)
            return false;
    }
    return true;
}

/* Equal down to the tokens: a refreshed token is worth caching, so the
 * next write of the tile does not find the expired one again. */
static bool location_equal(const struct tile_location *a, const struct tile_location *b)
{
    return holders_equal(a, b) && tokens_equal(a, b) && a->read_node == b->read_node &&
           a->read_version == b->read_version && a->flags == b->flags;
}

void tilelocation_replace(struct open_file *file, uint64_t tile, const struct tile_location *before,
                          const struct tile_location *now)
{
    struct cached_location *slot = location_slot(file, tile);
    struct tile_location cached;
    if (location_equal(before, now))
        return;
    if (location_cached(slot, tile, &cached) && !location_equal(&cached, before))
        return;
    if (now->node == 0) { /* a hole now: asked again next time */
        if (slot->tile == tile)
            memset(slot, 0, sizeof(*slot));
        return;
    }
    tilelocation_remember(file, tile, now);
}

void tilelocation_read_source(const struct tile_location *location, uint32_t *node,
                              uint64_t *version)
{
    if (location->read_node != 0) {
        *node = location->read_node;
        *version = location->read_version;
    } else {
        *node = location->node;
        *version = location->version;
    }
}

struct ts_tile_read_req tilelocation_read_request(const struct tile_location *location,
                                                  uint64_t ino, uint64_t tile, uint32_t offset,
                                                  uint32_t length, uint32_t *node)
{
    uint64_t version;
    tilelocation_read_source(location, node, &version);
    struct ts_tile_read_req request = {
        .ino = ino, .tile = tile, .version = version, .offset = offset, .length = length};
    for (uint32_t i = 0; i < location->holder_count && i < TS_MAX_HOLDERS; i++) {
        const struct tile_holder *holder = &location->holders[i];
        if (holder->node == *node && holder->version == version && holder->token_expiry != 0) {
            request.token_expiry = holder->token_expiry;
            request.token = (struct ts_str){.ptr = (const char *)holder->token,
                                            .len = TILETOKEN_MAC_BYTES};
            break;
        }
    }
    return request;
}

static const char *access_name(enum tile_access access)
{
    return access == TILE_ACCESS_READ ? "read" : access == TILE_ACCESS_WRITE ? "write" : "truncate";
}

bool tilelocation_same_for(enum tile_access access, const struct tile_location *a,
                           const struct tile_location *b)
{
    uint32_t a_node, b_node;
    uint64_t a_version, b_version;
    if (access != TILE_ACCESS_READ)
        return holders_equal(a, b);
    tilelocation_read_source(a, &a_node, &a_version);
    tilelocation_read_source(b, &b_node, &b_version);
    return a_node == b_node && a_version == b_version;
}

int tilelocation_relocate(struct datapath *datapath, uint64_t ino, uint64_t tile,
                          enum tile_access access, struct stale_retry *retry,
                          struct tile_location *location)
{
    struct tile_location now;
    int64_t now_ms = util_monotonic_ms();

    if (!retry->started) {
        retry->started = true;
        retry->deadline_ms = now_ms + datapath->io_timeout_ms;
        retry->delay_ms = STALE_FIRST_DELAY_MS;
    }
    if (now_ms >= retry->deadline_ms) {
        log_error("%s of inode %llu tile %llu: datanode %u still refuses the tile as moved or "
                  "being moved, and meta still places it there, after %d ms (a relocation "
                  "stuck? see `tessera rebalance`); failing with EIO",
                  access_name(access), (unsigned long long)ino, (unsigned long long)tile,
                  location->node, datapath->io_timeout_ms);
        return -EIO;
    }
    int status =
        metaclient_tile_map(datapath->meta, ino, tile, 1, access == TILE_ACCESS_WRITE, 0, &now);
    if (status != TS_OK) {
        log_error("%s of inode %llu tile %llu: the tile moved and meta cannot say where: %s",
                  access_name(access), (unsigned long long)ino, (unsigned long long)tile,
                  status_text(status));
        return errno_of_status(status);
    }
    bool same = tilelocation_same_for(access, location, &now);
    /* An expired tile token, now replaced by meta's fresh one: no wait. */
    bool refreshed = holders_equal(location, &now) && !tokens_equal(location, &now);
    *location = now;
    if (same && !refreshed) {
        int64_t left = retry->deadline_ms - now_ms;
        util_sleep_ms(retry->delay_ms < left ? retry->delay_ms : left);
        retry->delay_ms =
            retry->delay_ms * 2 < STALE_MAX_DELAY_MS ? retry->delay_ms * 2 : STALE_MAX_DELAY_MS;
    } else {
        log_debug("%s of inode %llu tile %llu: the tile moved to datanode %u", access_name(access),
                  (unsigned long long)ino, (unsigned long long)tile, now.node);
    }
    return 0;
}

bool tilelocation_read_next(struct tile_location *location, uint32_t *tried)
{
    for (uint32_t i = 0; i < location->holder_count; i++) {
        if (location->holders[i].node == location->read_node &&
            location->holders[i].version == location->read_version)
            *tried |= 1u << i;
    }
    for (uint32_t i = 0; i < location->holder_count; i++) {
        if (!(*tried & (1u << i))) {
            location->read_node = location->holders[i].node;
            location->read_version = location->holders[i].version;
            return true;
        }
    }
    return false;
}

int tilelocation_drop_holder(struct datapath *datapath, uint64_t ino, uint64_t tile,
                             const struct tile_holder *holder, int failure,
                             struct tile_location *location)
{
    struct tile_location now;
    int status = metaclient_replica_drop(datapath->meta, ino, tile, holder->node, holder->version,
                                         &now);
    if (status != TS_OK) {
        log_error("inode %llu tile %llu: datanode %u failed (%s) and meta could not drop it "
                  "from the tile's replicas: %s",
                  (unsigned long long)ino, (unsigned long long)tile, holder->node,
                  status_text(failure), status_text(status));
        return errno_of_status(status);
    }
    log_warn("inode %llu tile %llu: datanode %u failed (%s); it left the tile's replicas, "
             "%u holder(s) remain",
             (unsigned long long)ino, (unsigned long long)tile, holder->node,
             status_text(failure), now.holder_count);
    *location = now;
    return 0;
}
