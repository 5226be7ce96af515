/*
 * @file tilecache.c
 * See tilecache.h. A slot is LOADING while a worker fills it (nobody else
 * touches it then), READY or FAILED after; readers pin a READY slot while
 * the kernel copies from it, and a slot whose bytes went stale meanwhile is
 * marked `discard` and cleared by the loader or the last reader. A hole is
 * READY at once with no bytes. Loads never hold file->lock while they
 * read.
 */
#include "tilecache.h"

#include "tile.h"
#include "tilelocation.h"
#include "tileread.h"
#include "tilestream.h"

#include <stdlib.h>
#include <string.h>

void tilecache_slot_clear(struct datapath *datapath, struct open_file *file, struct read_slot *slot)
{
    rpc_reply_release(&slot->reply);
    free(slot->streamed);
    if (slot->holds_budget)
        budget_give(&datapath->read_budget, file->tile_bytes);
    memset(slot, 0, sizeof(*slot));
}

void tilecache_forget_range(struct datapath *datapath, struct open_file *file, uint64_t first,
                            uint64_t last)
{
    for (int i = 0; i < READ_SLOTS; i++) {
        struct read_slot *slot = &file->slots[i];
        if (slot->state == SLOT_EMPTY || slot->tile < first || slot->tile > last)
            continue;
        if (slot->state == SLOT_LOADING || slot->pins > 0)
            slot->discard = true; /* the loader or the last reader clears it */
        else
            tilecache_slot_clear(datapath, file, slot);
    }
}

void tilecache_size_learned(struct datapath *datapath, struct open_file *file, uint64_t size)
{
    if (size > file->size) {
        uint64_t first = file->layout.array ? 0 : tile_index_of(file->size, file->tile_bytes);
        tilecache_forget_range(datapath, file, first, UINT64_MAX);
    }
    file->size = size;
}

struct read_slot *tilecache_find(struct open_file *file, uint64_t tile)
{
    for (int i = 0; i < READ_SLOTS; i++) {
        struct read_slot *slot = &file->slots[i];
        if (slot->state != SLOT_EMPTY && !slot->discard && slot->tile == tile)
            return slot;
    }
    return NULL;
}

/* Twice the kernel's read-ahead window (ops.c's READAHEAD_TILES): a tile
 * this far behind the furthest one asked for will not be asked for again
 * by a sequential reader. */
#define TILECACHE_PASSED_TILES 64

struct load_job {
    struct worker_job job;
    struct datapath *datapath;
    struct open_file *file;
    struct read_slot *slot;
    struct tile_location location;
    uint64_t tile;
};

/*
 * Loads the tile over the tile stream of a datanode on this machine into a
 * buffer of its own (slot->streamed), as the direct reads do: ZeroMQ's
 * path costs two more thread hand-offs and, with keys, CURVE's encryption
 * of every byte on both sides, which made an array reader's read-ahead of
 * local tiles CPU-bound (measured: a third of the machine's CPU in
 * ZeroMQ's I/O threads and libsodium). False: nothing loaded (no stream
 * to the read source, or it answered other than with bytes), and ZeroMQ
 * is asked, which also deals with every other answer.
 */
static bool load_streamed(struct datapath *datapath, const struct open_file *file,
                          uint64_t tile, uint32_t length, const struct tile_location *location,
                          struct read_slot *slot, uint32_t *got)
{
    uint32_t node;
    int32_t status = TS_OK;
    if (!datapath->streams || location->node == 0 || length == 0)
        return false;
    struct ts_tile_read_req request =
        tilelocation_read_request(location, file->ino, tile, 0, length, &node);
    uint8_t *bytes = malloc(length); /* within the tile_bytes the slot holds of the budget */
    if (!bytes)
        return false;
    if (tilestream_read_into(datapath->streams, node, &request, false, bytes, &status, got) != 0 ||
        status != TS_OK) {
        free(bytes);
        return false;
    }
    slot->streamed = bytes;
    return true;
}

static void load_job_run(struct worker_job *worker_job)
{
    struct load_job *job = (struct load_job *)worker_job;
    struct open_file *file = job->file;
    struct read_slot *slot = job->slot;
    struct tile_location location = job->location;
    uint32_t length = filetiles_tile_bytes(&file->layout, job->tile);
    uint32_t got = 0;
    int error = 0;
    bool local;
    /* Nobody else touches a LOADING slot, so the bytes go straight into it:
     * a zmq_msg_t must not be copied (small messages live inside it). */
    if (load_streamed(job->datapath, file, job->tile, length, &location, slot, &got)) {
        local = job->datapath->profile != NULL; /* streams reach this machine only */
    } else {
        error = tileread_fetch(job->datapath, file->ino, job->tile, 0, length, &location,
                               &slot->reply);
        got = error == 0 ? (uint32_t)slot->reply.data_len : 0;
        local = error == 0 && job->datapath->profile &&
                tileread_is_local(job->datapath, &location);
    }
    pthread_mutex_lock(&file->lock);
    tilelocation_replace(file, job->tile, &job->location, &location);
    slot->local = local;
    slot->state = error == 0 ? SLOT_READY : SLOT_FAILED;
    slot->error = error;
    slot->length = error == 0 ? got : 0;
    if (slot->discard)
        tilecache_slot_clear(job->datapath, file, slot);
    file->loads_in_flight--;
    pthread_cond_broadcast(&file->changed);
    pthread_mutex_unlock(&file->lock);
    free(job);
}

/*
 * A slot to load a tile into: a free one, else the least recently used of
 * those whose bytes have all been served, else the least recently used of
 * the others that some read has served from, which a reader may come back to
 * (sieved and array tiles). A slot loaded ahead and not yet read, or read in
 * part, is never taken: the kernel's read-ahead asks for a tile in several
 * requests, 32 tiles ahead, and a slot taken after the first of them made
 * the rest load the tile again (each tile fetched 1.2-1.7 times, measured).
 * A slot far behind the furthest tile asked for (TILECACHE_PASSED_TILES)
 * counts as all served: the reader went past it. NULL when every slot is
 * loading, pinned or awaited: the caller reads directly.
 */
static struct read_slot *cache_victim(struct datapath *datapath, struct open_file *file)
{
    struct read_slot *victim = NULL;
    bool victim_done = false;
    uint64_t asked = file->next_read_offset / (file->tile_bytes ? file->tile_bytes : 1);
    for (int i = 0; i < READ_SLOTS; i++) {
        struct read_slot *slot = &file->slots[i];
        if (slot->state == SLOT_EMPTY)
            return slot;
        if (slot->state == SLOT_LOADING || slot->pins > 0 || slot->discard)
            continue;
        bool done = slot->state == SLOT_FAILED || slot->served_bytes >= file->tile_bytes ||
                    (slot->served_bytes > 0 && slot->served_bytes >= slot->length) ||
                    (!file->layout.array && slot->tile + TILECACHE_PASSED_TILES < asked);
        bool reread = slot->sieved || file->layout.array;
        if (!done && !(reread && slot->served_bytes > 0))
            continue;
        if (!victim || (done && !victim_done) ||
            (done == victim_done && slot->last_use < victim->last_use)) {
            victim = slot;
            victim_done = done;
        }
    }
    if (victim)
        tilecache_slot_clear(datapath, file, victim);
    return victim;
}

struct read_slot *tilecache_load(struct datapath *datapath, struct open_file *file, uint64_t tile,
                                 const struct tile_location *where)
{
    struct tile_location location = *where;
    struct read_slot *slot;

    if (location.node != 0 && !budget_try_take(&datapath->read_budget, file->tile_bytes))
        return NULL;
    struct load_job *job = location.node != 0 ? calloc(1, sizeof(*job)) : NULL;
    slot = (location.node == 0 || job) ? cache_victim(datapath, file) : NULL;
    if (!slot) {
        free(job);
        if (location.node != 0)
            budget_give(&datapath->read_budget, file->tile_bytes);
        return NULL;
    }
    slot->tile = tile;
    slot->last_use = ++file->use_clock;
    slot->generation = file->generation;
    if (location.node == 0) { /* a hole: nothing to fetch */
        slot->state = SLOT_READY;
        slot->length = 0;
        return slot;
    }
    slot->holds_budget = true;
    slot->state = SLOT_LOADING;
    job->job.run = load_job_run;
    job->datapath = datapath;
    job->file = file;
    job->slot = slot;
    job->location = location;
    job->tile = tile;
    file->loads_in_flight++;
    workers_submit(datapath->workers, &job->job);
    return slot;
}

void tilecache_free(struct datapath *datapath, struct open_file *file)
{
    for (int i = 0; i < READ_SLOTS; i++) {
        rpc_reply_release(&file->slots[i].reply);
        free(file->slots[i].streamed);
        if (file->slots[i].holds_budget)
            budget_give(&datapath->read_budget, file->tile_bytes);
    }
}
