/*
 * @file readpath.c
 * datapath_read and its reply (datapath.h): which tiles a read goes
 * through the cache for, reads straight from the datanodes or over the
 * tile streams, and the pieces of the reply.
 *
 * Reads (read-ahead): a sequential reader of a linear file gets whole tiles
 * loaded into the file's tile cache ahead of it, from all their datanodes in
 * parallel, one more tile ahead for each tile it enters in a row, up to
 * readahead_tiles; other reads fetch just the bytes asked for. Tiles on
 * datanodes of this machine go over their tile streams instead, straight
 * into the kernel's page cache: there the kernel's own read-ahead (the
 * bdi's read_ahead_kb, several tiles) keeps enough requests in flight, and
 * the datanodes' stream threads serve them in parallel. Array files always
 * read whole tiles (data sieving: a sub-block reader comes back to the same
 * tile row after row). Cache slots are bounded per file and their memory by
 * the read budget.
 *
 * Data sieving (sieve.h): a small read outside a stream whose tile was
 * touched shortly before reads the whole tile into the cache instead, which
 * the caller may then put into the kernel's page cache (pagestore.c).
 *
 * Reads see this mount's writes: a read first settles each tile it covers
 * (writes out its buffer and waits for its write job), and a tile with
 * bytes not yet written out is never loaded into the cache.
 */
#include "datapath_i.h"

#include "metaclient.h"
#include "openfiles.h"
#include "tile.h"
#include "tilecache.h"
#include "tilelocation.h"
#include "tileread.h"
#include "util.h"
#include "writebehind.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Reads of at most this fraction of a tile may be sieved (sieve.h). */
#define SIEVE_MAX_READ_FRACTION 4
/* A direct read ending this close to the end of the file may outrun the
 * size the kernel caches: a page, the unit the kernel rounds it to. */
#define DIRECT_READ_NEAR_END 4096

/*
 * tilecache_load() for a tile of which this mount has written out every
 * byte; NULL otherwise, as the load would miss them: the read then goes
 * around the cache.
 */
static struct read_slot *load_if_written_out(struct datapath *datapath, struct open_file *file,
                                             uint64_t tile, const struct tile_location *location)
{
    if (writebehind_tile_unsent(file, tile))
        return NULL;
    return tilecache_load(datapath, file, tile, location);
}

/*
 * Starts loading the tiles after `tile` that a sequential reader will want:
 * as many as it has entered in a row, up to readahead_tiles (as the
 * kernel's read-ahead ramps up). Only tiles past the furthest one a read
 * has asked for: the kernel's own read-ahead sends its requests out of
 * order, and a late request for an early tile would otherwise load again
 * the tiles after it that were read and dropped already.
 */
static void cache_read_ahead(struct datapath *datapath, struct open_file *file, uint64_t tile)
{
    uint64_t tiles_in_file = filetiles_tile_count(&file->layout, file->size);
    uint32_t ahead =
        file->run_tiles < datapath->readahead_tiles ? file->run_tiles : datapath->readahead_tiles;
    uint64_t asked = file->next_read_offset > 0
                         ? tile_index_of(file->next_read_offset - 1, file->tile_bytes)
                         : 0;
    uint64_t first = (asked > tile ? asked : tile) + 1;
    for (uint64_t next = first; next <= tile + ahead && next < tiles_in_file; next++) {
        struct tile_location location;
        if (tilecache_find(file, next))
            continue;
        if (tilelocation_get(datapath, file, next, false, &location) != 0)
            break;
        /* The lock may have gone meanwhile: another reader may have loaded it. */
        if (tilecache_find(file, next))
            continue;
        if (!load_if_written_out(datapath, file, next, &location))
            break;
    }
}

/* The tile holding byte `offset` of an array file. */
static uint64_t array_tile_at(const struct open_file *file, uint64_t offset)
{
    struct filetiles_walk walk;
    struct tile_segment segment;
    filetiles_walk_init(&walk, &file->layout, offset, 1);
    return filetiles_walk_next(&walk, &segment) ? segment.tile : UINT64_MAX;
}

/* Disk chunks of the current read that read-ahead may go on into. */
#define ARRAY_AHEAD_MAX_CHUNKS 8

struct array_chunks {
    uint32_t count;
    uint64_t chunk[ARRAY_AHEAD_MAX_CHUNKS][ARRAYSPEC_MAX_DIMS];
};

/*
 * Whether the disk chunk of `tile` is one of *chunks; if not and `add`,
 * adds it (when there is room).
 */
static bool array_chunks_hold(const struct open_file *file, struct array_chunks *chunks,
                              uint64_t tile, bool add)
{
    struct arraylayout_tile info;
    size_t bytes = file->layout.array->spec.ndims * sizeof(info.chunk[0]);
    if (arraylayout_tile_info(file->layout.array, tile, &info) != 0)
        return false;
    for (uint32_t i = 0; i < chunks->count; i++)
        if (memcmp(chunks->chunk[i], info.chunk, bytes) == 0)
            return true;
    if (add && chunks->count < ARRAY_AHEAD_MAX_CHUNKS)
        memcpy(chunks->chunk[chunks->count++], info.chunk, bytes);
    return false;
}

/* How many strides ahead an array file's read-ahead looks at most: 64 Ki
 * rows of a sub-block reader, far past any tile's height. */
#define ARRAY_AHEAD_MAX_STRIDES 65536

/*
 * Read-ahead for an array file: the reader's own block, not the file's
 * byte order. A sub-block reader (a quadrant of a 2-D array read row by
 * row) reads `size` bytes every `stride` bytes; the next bytes of the file
 * belong to another block, mostly other hosts' tiles. Once two strides in
 * a row were equal, this loads the tiles that the reads predicted along
 * that stride will enter next and the current read does not touch, up to
 * readahead_tiles of them, and no others: tiles the reader has not
 * approached stay where they are. Binary search finds the next stride at
 * which the first byte's tile changes (row-major tiles of a row-major
 * walk only grow), so a read costs a few walks, not one per row.
 */
static void array_read_ahead(struct datapath *datapath, struct open_file *file, uint64_t offset,
                             size_t size)
{
    uint64_t stride = offset > file->array_last_offset ? offset - file->array_last_offset : 0;
    bool steady = stride > 0 && stride == file->array_stride;
    file->array_stride = stride;
    file->array_last_offset = offset;
    if (!steady || datapath->readahead_tiles == 0)
        return;
    uint64_t tiles_in_file = filetiles_tile_count(&file->layout, file->size);
    /* The disk chunks this read touches: a sub-block reader's block is
     * mostly one chunk (a quadrant of mesh=2x2), and read-ahead past its
     * edge would load the next block's tiles, which it never reads. */
    struct array_chunks chunks = {0};
    struct filetiles_walk walk;
    struct tile_segment segment;
    filetiles_walk_init(&walk, &file->layout, offset, size);
    while (filetiles_walk_next(&walk, &segment))
        array_chunks_hold(file, &chunks, segment.tile, true);
    uint32_t loaded = 0;
    uint64_t step = 0; /* strides ahead of `offset` looked at so far */
    uint64_t tile_now = array_tile_at(file, offset);
    while (loaded < datapath->readahead_tiles && step < ARRAY_AHEAD_MAX_STRIDES) {
        /* The first stride past `step` whose first byte is in another tile. */
        uint64_t low = step + 1, high = ARRAY_AHEAD_MAX_STRIDES;
        if (offset + high * stride >= file->size)
            high = (file->size - 1 - offset) / stride;
        if (low > high || array_tile_at(file, offset + high * stride) == tile_now)
            return;
        while (low < high) {
            uint64_t middle = low + (high - low) / 2;
            if (array_tile_at(file, offset + middle * stride) == tile_now)
                low = middle + 1;
            else
                high = middle;
        }
        step = low;
        uint64_t ahead_offset = offset + step * stride;
        tile_now = array_tile_at(file, ahead_offset);
        uint64_t length = size < file->size - ahead_offset ? size : file->size - ahead_offset;
        bool inside = false; /* the predicted read touches a tile of the reader's chunks */
        filetiles_walk_init(&walk, &file->layout, ahead_offset, length);
        while (loaded < datapath->readahead_tiles && filetiles_walk_next(&walk, &segment)) {
            struct tile_location location;
            if (segment.tile >= tiles_in_file ||
                !array_chunks_hold(file, &chunks, segment.tile, false))
                continue;
            inside = true;
            if (tilecache_find(file, segment.tile))
                continue;
            if (tilelocation_get(datapath, file, segment.tile, false, &location) != 0)
                return;
            /* The lock may have gone meanwhile: another reader may have loaded it. */
            if (tilecache_find(file, segment.tile))
                continue;
            if (!load_if_written_out(datapath, file, segment.tile, &location))
                return; /* no free slot: the next read tries again */
            loaded++;
        }
        if (!inside)
            return; /* the reader's stride left its chunks: it reads elsewhere next */
    }
}

/* Zeros for the parts of a read that no tile holds. */
static const char zeros[64 * 1024];

/* Appends a piece to the result's vector. */
static int result_add(struct datapath_read *result, const void *base, size_t len)
{
    if (len == 0)
        return 0;
    if (result->count == result->cap) {
        size_t new_cap = result->cap * 2;
        struct iovec *grown;
        if (result->iov == result->inline_iov) {
            grown = malloc(new_cap * sizeof(*grown));
            if (grown)
                memcpy(grown, result->iov, result->count * sizeof(*grown));
        } else {
            grown = realloc(result->iov, new_cap * sizeof(*grown));
        }
        if (!grown)
            return -ENOMEM;
        result->iov = grown;
        result->cap = new_cap;
    }
    result->iov[result->count].iov_base = (void *)base;
    result->iov[result->count].iov_len = len;
    result->count++;
    result->bytes += len;
    return 0;
}

static int result_add_zeros(struct datapath_read *result, size_t len)
{
    while (len > 0) {
        size_t piece = len < sizeof(zeros) ? len : sizeof(zeros);
        int error = result_add(result, zeros, piece);
        if (error != 0)
            return error;
        len -= piece;
    }
    return 0;
}

/* Whether the read already holds a pin on the slot. */
static bool result_pins(const struct datapath_read *result, const struct read_slot *slot)
{
    for (int i = 0; i < result->pinned_count; i++)
        if (result->pinned[i] == slot)
            return true;
    return false;
}

/*
 * Adds a segment served from a cached tile, waiting for it to load, and
 * pins the slot (once per read: an array file's read comes back to the same
 * tile every row). Returns -EAGAIN if the slot went away meanwhile.
 */
static int cache_serve(struct datapath *datapath, struct open_file *file, struct read_slot *slot,
                       const struct tile_segment *segment, struct datapath_read *result,
                       bool *local)
{
    uint64_t tile = slot->tile;
    while (slot->state == SLOT_LOADING && slot->tile == tile && !slot->discard)
        pthread_cond_wait(&file->changed, &file->lock);
    if (slot->tile != tile || slot->state == SLOT_EMPTY || slot->discard)
        return -EAGAIN; /* dropped while we waited: read directly */
    if (slot->state == SLOT_FAILED) {
        int error = slot->error;
        tilecache_slot_clear(datapath, file, slot); /* the next reader tries again */
        return error == -EAGAIN ? -EIO : error;
    }
    if (!result_pins(result, slot)) {
        if (result->pinned_count == DATAPATH_READ_MAX_PINS)
            return -EAGAIN;
        slot->pins++;
        result->pinned[result->pinned_count++] = slot;
    }
    slot->last_use = ++file->use_clock;
    slot->served_bytes += segment->length;
    *local = slot->local;
    uint32_t start = segment->tile_offset;
    uint32_t end = start + segment->length;
    uint32_t have = slot->length;
    int error = 0;
    if (have > start)
        error = result_add(result, (const char *)read_slot_bytes(slot) + start,
                           (end < have ? end : have) - start);
    if (error == 0 && end > have)
        error = result_add_zeros(result, end - (have > start ? have : start));
    return error;
}

/*
 * A short direct read over the tile stream of a datanode on this machine,
 * into `out` (the rest of the segment zeros): fewer hand-offs between
 * threads than ZeroMQ's. False: nothing was read, ask over ZeroMQ (which
 * also deals with anything but bytes).
 */
static bool stream_read_into(struct datapath *datapath, struct open_file *file,
                             const struct tile_location *location,
                             const struct tile_segment *segment, bool buffered, char *out,
                             bool *local)
{
    uint32_t node;
    int32_t status = TS_OK;
    uint32_t got = 0;
    struct ts_tile_read_req request = tilelocation_read_request(
        location, file->ino, segment->tile, segment->tile_offset, segment->length, &node);
    int error =
        tilestream_read_into(datapath->streams, node, &request, buffered, out, &status, &got);
    if (error != 0 || status != TS_OK)
        return false;
    memset(out + got, 0, segment->length - got);
    if (file->profiled && datapath->profile)
        *local = true; /* streams reach datanodes on this machine only */
    return true;
}

/*
 * Reads a segment's bytes directly (no cache) into `out`, zeros where the
 * tile holds none; *local: they came from a datanode on this machine (set
 * for profiled files).
 */
static int direct_fetch(struct datapath *datapath, struct open_file *file,
                        const struct tile_segment *segment, const struct tile_location *where,
                        bool buffered, char *out, bool *local)
{
    struct tile_location location = *where;
    struct rpc_reply reply;
    int error;
    if (location.node == 0) {
        memset(out, 0, segment->length);
        return 0;
    }
    if (datapath->streams &&
        stream_read_into(datapath, file, &location, segment, buffered, out, local))
        return 0;
    struct tile_location planned = location;
    error = tileread_fetch(datapath, file->ino, segment->tile, segment->tile_offset,
                           segment->length, &location, &reply);
    tilelocation_replace(file, segment->tile, &planned, &location);
    if (error == 0 && file->profiled && datapath->profile)
        *local = tileread_is_local(datapath, &location);
    if (error == 0) {
        if (reply.data_len > 0)
            memcpy(out, reply.data, reply.data_len);
        memset(out + reply.data_len, 0, segment->length - reply.data_len);
    }
    rpc_reply_release(&reply);
    return error;
}

/* Adds a segment read directly (no cache) into the result's scratch buffer. */
static int direct_serve(struct datapath *datapath, struct open_file *file,
                        const struct tile_segment *segment, const struct tile_location *location,
                        struct datapath_read *result, bool *local)
{
    char *out = result->scratch + result->scratch_used;
    int error = direct_fetch(datapath, file, segment, location, result->buffered, out, local);
    if (error != 0)
        return error;
    result->scratch_used += segment->length;
    return result_add(result, out, segment->length);
}

/* The span of `tile` this read fetched already, or NULL. */
static const struct datapath_span *span_find(const struct datapath_read *result, uint64_t tile)
{
    for (size_t i = 0; i < result->span_count; i++)
        if (result->spans[i].tile == tile)
            return &result->spans[i];
    return NULL;
}

/*
 * Adds a segment of an array file that the cache could not serve. The
 * first time the read meets a tile there, one request fetches every byte
 * of the tile that the rest of the read covers, not each short row on its
 * own: since tile and file are both row-major, those bytes are one run of
 * the tile, and the runs of all tiles add up to at most the read's size
 * (the scratch buffer). `rest`: the walk after this segment.
 */
static int gathered_serve(struct datapath *datapath, struct open_file *file,
                          const struct tile_segment *segment, const struct tile_location *location,
                          const struct filetiles_walk *rest, struct datapath_read *result,
                          bool *local)
{
    const struct datapath_span *span = span_find(result, segment->tile);
    if (!span) {
        struct tile_segment run = *segment;
        struct tile_segment next;
        struct filetiles_walk walk = *rest;
        while (filetiles_walk_next(&walk, &next))
            if (next.tile == segment->tile)
                run.length = next.tile_offset + next.length - run.tile_offset;
        if (result->span_count == result->span_cap) {
            size_t cap = result->span_cap ? result->span_cap * 2 : 16;
            struct datapath_span *grown = realloc(result->spans, cap * sizeof(*grown));
            if (!grown)
                return -ENOMEM;
            result->spans = grown;
            result->span_cap = cap;
        }
        char *bytes = result->scratch + result->scratch_used;
        int error = direct_fetch(datapath, file, &run, location, result->buffered, bytes, local);
        if (error != 0)
            return error;
        result->scratch_used += run.length;
        result->spans[result->span_count] = (struct datapath_span){
            .tile = run.tile, .start = run.tile_offset, .length = run.length, .bytes = bytes};
        span = &result->spans[result->span_count++];
    }
    return result_add(result, span->bytes + (segment->tile_offset - span->start), segment->length);
}

/* Moves the pieces added since the last flush into the pipe. 0 or -EPIPE. */
static int result_flush(struct datapath_read *result)
{
    while (result->flushed < result->count) {
        struct iovec *piece = &result->iov[result->flushed];
        size_t pieces = result->count - result->flushed;
        /* Non-blocking: the pipe holds a whole reply, so "full" is a failure, not a wait. */
        ssize_t moved = vmsplice(result->pipe_fd, piece, pieces < IOV_MAX ? pieces : IOV_MAX,
                                 SPLICE_F_NONBLOCK);
        if (moved < 0 && errno == EINTR)
            continue;
        if (moved <= 0)
            return -EPIPE;
        result->piped = true;
        while (moved > 0) {
            size_t take = (size_t)moved < piece->iov_len ? (size_t)moved : piece->iov_len;
            piece->iov_base = (char *)piece->iov_base + take;
            piece->iov_len -= take;
            moved -= (ssize_t)take;
            if (piece->iov_len == 0) {
                result->flushed++;
                piece++;
            }
        }
    }
    return 0;
}

/*
 * Reads a segment over its datanode's tile stream into the result's
 * pipe, after the pieces before it. Returns 0, -EAGAIN (read it over
 * ZeroMQ instead: no stream, or the datanode answered other than with
 * bytes) or -EPIPE (the pipe is spoilt). Called with file->lock held, which
 * it drops while the bytes come, so a stream's reads overlap.
 */
static int pipe_serve(struct datapath *datapath, struct open_file *file,
                      const struct tile_segment *segment, const struct tile_location *location,
                      struct datapath_read *result, bool *local)
{
    int32_t status = TS_OK;
    uint32_t got = 0;
    uint32_t node;

    if (location->node == 0)
        return result_add_zeros(result, segment->length);
    int error = result_flush(result);
    if (error != 0)
        return error;
    struct ts_tile_read_req request = tilelocation_read_request(
        location, file->ino, segment->tile, segment->tile_offset, segment->length, &node);
    pthread_mutex_unlock(&file->lock);
    error = tilestream_read(datapath->streams, node, &request, result->buffered, &status, &got);
    pthread_mutex_lock(&file->lock);
    if (error != 0)
        return error;
    if (status != TS_OK)
        return -EAGAIN; /* ZeroMQ's answer says what it is, and tileread_fetch acts on it */
    result->piped = true;
    result->bytes += got;
    if (file->profiled && datapath->profile)
        *local = true; /* streams reach datanodes on this machine only */
    return result_add_zeros(result, segment->length - got);
}

ssize_t datapath_read(struct datapath *datapath, struct open_file *file, size_t size,
                      uint64_t offset, bool buffered, int pipe_fd, struct datapath_read *result)
{
    struct filetiles_walk walk;
    struct tile_segment segment;
    struct profiler_batch batch;
    bool profiled = false;
    ssize_t outcome = 0;
    bool sequential;

    memset(result, 0, sizeof(*result));
    result->buffered = buffered;
    result->pipe_fd = datapath->streams ? pipe_fd : -1;
    /* The kernel may release the file as soon as it has the reply, before
     * datapath_read_done unpins: the result holds a reference. */
    openfiles_hold(datapath, file);
    result->file = file;
    result->iov = result->inline_iov;
    result->cap = sizeof(result->inline_iov) / sizeof(result->inline_iov[0]);
    pthread_mutex_lock(&file->lock);
    profiled = file->profiled && datapath->profile;
    if (profiled)
        profiler_batch_init(&batch, file->ino, false);
    if (atomic_load(&file->lost)) {
        outcome = -EIO;
        goto out;
    }
    /* Only a read past the end this mount knows can come back short, and
     * the kernel keeps a short read's zero fill as the file's bytes if
     * attributes that grow the file reach it first: such reads hold those
     * back until they are answered (attrguard.h). */
    if (buffered && offset + size > file->size)
        result->guarded = attrguard_read_begin(datapath->guard, file->ino);
    if (offset + size > file->size && !file->size_dirty) {
        /* The file may have grown through another mount: meta's size and
         * where the tiles from here are, in one round trip (the lock let
         * go meanwhile). */
        uint64_t size_now;
        /* A write here meanwhile knows better, unless meta's is larger. */
        if (tilelocation_size_at(datapath, file, offset, &size_now) == 0 &&
            (!file->size_dirty || size_now > file->size)) {
            result->size_refresh = size_now > file->size;
            tilecache_size_learned(datapath, file, size_now);
        }
    }
    if (offset >= file->size)
        goto out;
    if (size > file->size - offset)
        size = (size_t)(file->size - offset);
    else if (!buffered && offset + size + DIRECT_READ_NEAR_END > file->size)
        result->size_refresh = true; /* see datapath_read.size_refresh */
    /* The kernel's read-ahead sends a stream's requests slightly out of order.
     * Array files always read whole tiles: see the file comment. A tile
     * cached for sieving says nothing of a stream. */
    struct read_slot *first =
        file->layout.array ? NULL : tilecache_find(file, tile_index_of(offset, file->tile_bytes));
    sequential = file->layout.array != NULL || offset == file->next_read_offset ||
                 (first && !first->sieved) ||
                 (offset > file->next_read_offset &&
                  offset - file->next_read_offset < 4ull * file->tile_bytes);
    if (offset + size > file->next_read_offset)
        file->next_read_offset = offset + size;
    bool sieving = !sequential && size <= file->tile_bytes / SIEVE_MAX_READ_FRACTION;
    /* Streams carry reads of a tile or more; array files read whole tiles
     * for their short rows: cached. */
    bool streaming = result->pipe_fd >= 0 && !file->layout.array;
    bool through_cache = false; /* a tile of this sequential read has no stream */
    uint64_t tiles_in_file = filetiles_tile_count(&file->layout, file->size);

    uint64_t last_tile = 0;
    filetiles_walk_init(&walk, &file->layout, offset, size);
    while (filetiles_walk_next(&walk, &segment)) {
        /* Reads see this mount's writes. */
        writebehind_settle(datapath, file, segment.tile);
        last_tile = segment.tile;
        /*
         * Where the tile is, when the read may need it: asking meta lets
         * the lock go, so the slot is looked for after. A tile in the cache
         * is served even if meta cannot be asked (a stream's reader only
         * wants to know whether the tile is local).
         */
        struct tile_location location = {0};
        bool located = false;
        struct read_slot *slot = tilecache_find(file, segment.tile);
        int error = 0;
        if (!slot || (sequential && streaming)) {
            error = tilelocation_get(datapath, file, segment.tile, false, &location);
            located = error == 0;
            slot = tilecache_find(file, segment.tile);
        }
        if (!slot && !located) {
            outcome = error;
            goto out;
        }
        bool cached = slot != NULL;
        bool cache_it =
            sequential && !(streaming && located && tileread_is_local(datapath, &location));
        through_cache = through_cache || cache_it;
        if (!slot && cache_it) {
            slot = load_if_written_out(datapath, file, segment.tile, &location);
        } else if (!slot && sieving &&
                   sieve_touch(&file->sieve, segment.tile, tiles_in_file, util_monotonic_ms(),
                               buffered)) {
            slot = load_if_written_out(datapath, file, segment.tile, &location);
            if (slot)
                slot->sieved = true;
        }
        bool local = false;
        error = slot ? cache_serve(datapath, file, slot, &segment, result, &local) : -EAGAIN;
        if (error == 0 && slot->sieved) {
            if (cached)
                sieve_hit(&file->sieve);
            if (buffered && !slot->stored && !result->store_slot)
                result->store_slot = slot; /* pinned by cache_serve */
        }
        if (error == -EAGAIN && !located) {
            /* The cached tile could not serve (its load failed): read it. */
            error = tilelocation_get(datapath, file, segment.tile, false, &location);
            error = error == 0 ? -EAGAIN : error;
        }
        if (error == -EAGAIN && streaming)
            error = pipe_serve(datapath, file, &segment, &location, result, &local);
        if (error == -EAGAIN) {
            if (!result->scratch)
                result->scratch = malloc(size);
            if (!result->scratch)
                error = -ENOMEM;
            else if (file->layout.array)
                error = gathered_serve(datapath, file, &segment, &location, &walk, result, &local);
            else
                error = direct_serve(datapath, file, &segment, &location, result, &local);
        }
        if (error != 0) {
            outcome = error;
            goto out;
        }
        if (profiled)
            profiler_batch_add(datapath->profile, &batch, segment.tile, segment.length, local);
    }
    if (!sequential) {
        file->run_tiles = 0;
    } else if (file->run_tiles == 0 || last_tile > file->run_last_tile) {
        if (file->run_tiles < READ_SLOTS)
            file->run_tiles++;
        file->run_last_tile = last_tile;
    }
    if (sequential && !file->layout.array && through_cache)
        cache_read_ahead(datapath, file, last_tile);
    if (file->layout.array)
        array_read_ahead(datapath, file, offset, size);
    if (result->piped) {
        int error = result_flush(result);
        if (error != 0) {
            outcome = error;
            goto out;
        }
    }
    outcome = (ssize_t)result->bytes;
out:
    pthread_mutex_unlock(&file->lock);
    if (profiled && outcome >= 0)
        profiler_batch_commit(datapath->profile, &batch);
    return outcome;
}

void datapath_read_replied(struct datapath *datapath, struct datapath_read *result)
{
    if (result->guarded)
        attrguard_read_end(datapath->guard, result->file->ino);
    result->guarded = false;
}

void datapath_read_done(struct datapath *datapath, struct datapath_read *result)
{
    struct open_file *file = result->file;
    datapath_read_replied(datapath, result);
    if (result->pinned_count > 0) {
        pthread_mutex_lock(&file->lock);
        for (int i = 0; i < result->pinned_count; i++) {
            struct read_slot *slot = result->pinned[i];
            if (--slot->pins == 0 && slot->discard && slot->state != SLOT_LOADING)
                tilecache_slot_clear(datapath, file, slot);
        }
        pthread_mutex_unlock(&file->lock);
    }
    if (result->iov != result->inline_iov)
        free(result->iov);
    free(result->scratch);
    free(result->spans);
    memset(result, 0, sizeof(*result));
    openfiles_put(datapath, file);
}
