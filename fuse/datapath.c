/*
 * @file datapath.c
 * See datapath.h.
 *
 * Locking: datapath->lock protects the open-file table and each file's
 * reference count (`handles`: kernel handles plus short-lived references
 * taken by setattr/getattr); it is never held across I/O. file->lock protects everything else in the file and is held
 * across the network calls of one operation, so operations on one file are
 * serialised (the order of writes and truncations stays simple to reason
 * about); different files proceed in parallel. Never take datapath->lock
 * while holding file->lock.
 */
#include "datapath.h"

#include "log.h"
#include "proto.h"
#include "status.h"
#include "tile.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define OPEN_TABLE_BUCKETS 1024
/* Tile locations remembered per open file (direct-mapped by tile index). */
#define LOCATION_CACHE_SLOTS 1024
/* Tiles asked of meta at once when reading. */
#define TILE_MAP_BATCH 64

struct cached_location {
    uint64_t tile;
    struct tile_location location; /* node 0: slot empty */
};

/* A tile written since the last fsync, to be synced on its datanode. */
struct dirty_tile {
    uint32_t node;
    uint64_t tile;
    uint64_t version;
};

struct open_file {
    uint64_t ino;
    int handles;             /* protected by datapath->lock */
    struct open_file *next;  /* hash chain, protected by datapath->lock */
    pthread_mutex_t lock;    /* protects all fields below */
    uint32_t tile_bytes;
    uint64_t size;           /* size as this mount sees it */
    bool size_dirty;         /* size or mtime not yet committed to meta */
    struct timespec mtime;
    int error;               /* first write error not yet reported by flush/fsync */
    /* write buffer: bytes [buffer_low, buffer_high) of tile buffer_tile */
    uint8_t *buffer;
    bool buffer_used;
    uint64_t buffer_tile;
    uint32_t buffer_low;
    uint32_t buffer_high;
    struct cached_location *locations;
    struct dirty_tile *dirty;
    size_t dirty_count;
    size_t dirty_cap;
};

struct datapath {
    struct metaclient *meta;
    struct nodedir *nodes;
    pthread_mutex_t lock;
    struct open_file *buckets[OPEN_TABLE_BUCKETS];
};

static int errno_of(int status) { return -status_to_errno(status); }

struct datapath *datapath_new(struct metaclient *meta, struct nodedir *nodes)
{
    struct datapath *datapath = calloc(1, sizeof(*datapath));
    if (!datapath)
        return NULL;
    datapath->meta = meta;
    datapath->nodes = nodes;
    pthread_mutex_init(&datapath->lock, NULL);
    return datapath;
}

static void open_file_free(struct open_file *file)
{
    pthread_mutex_destroy(&file->lock);
    free(file->buffer);
    free(file->locations);
    free(file->dirty);
    free(file);
}

void datapath_destroy(struct datapath **datapathp)
{
    if (!datapathp || !*datapathp)
        return;
    struct datapath *datapath = *datapathp;
    for (size_t i = 0; i < OPEN_TABLE_BUCKETS; i++) {
        while (datapath->buckets[i]) {
            struct open_file *file = datapath->buckets[i];
            datapath->buckets[i] = file->next;
            open_file_free(file);
        }
    }
    pthread_mutex_destroy(&datapath->lock);
    free(datapath);
    *datapathp = NULL;
}

static struct open_file **bucket_of(struct datapath *datapath, uint64_t ino)
{
    return &datapath->buckets[ino % OPEN_TABLE_BUCKETS];
}

/* Finds the open file of ino; called with datapath->lock held. */
static struct open_file *open_file_find(struct datapath *datapath, uint64_t ino)
{
    for (struct open_file *file = *bucket_of(datapath, ino); file; file = file->next) {
        if (file->ino == ino)
            return file;
    }
    return NULL;
}

/* The open file of ino with one more reference, or NULL. */
static struct open_file *open_file_get(struct datapath *datapath, uint64_t ino)
{
    pthread_mutex_lock(&datapath->lock);
    struct open_file *file = open_file_find(datapath, ino);
    if (file)
        file->handles++;
    pthread_mutex_unlock(&datapath->lock);
    return file;
}

static void open_file_put(struct datapath *datapath, struct open_file *file);

int datapath_open(struct datapath *datapath, const struct ts_attr *attr,
                  struct open_file **out)
{
    struct open_file *file = open_file_get(datapath, attr->ino);
    struct open_file *created;

    if (file) {
        pthread_mutex_lock(&file->lock);
        /* Another mount may have changed the file since (close-to-open). */
        if (!file->size_dirty)
            file->size = attr->size;
        memset(file->locations, 0, LOCATION_CACHE_SLOTS * sizeof(*file->locations));
        pthread_mutex_unlock(&file->lock);
        *out = file;
        return 0;
    }
    created = calloc(1, sizeof(*created));
    if (created)
        created->locations = calloc(LOCATION_CACHE_SLOTS, sizeof(*created->locations));
    if (!created || !created->locations) {
        free(created);
        return -ENOMEM;
    }
    created->ino = attr->ino;
    created->handles = 1;
    created->tile_bytes = attr->tile_bytes ? attr->tile_bytes : TILE_DEFAULT_BYTES;
    created->size = attr->size;
    pthread_mutex_init(&created->lock, NULL);

    pthread_mutex_lock(&datapath->lock);
    file = open_file_find(datapath, attr->ino);
    if (file) {
        /* Another thread opened it meanwhile: share its state. */
        file->handles++;
    } else {
        created->next = *bucket_of(datapath, attr->ino);
        *bucket_of(datapath, attr->ino) = created;
        file = created;
        created = NULL;
    }
    pthread_mutex_unlock(&datapath->lock);
    if (created)
        open_file_free(created);
    *out = file;
    return 0;
}

/* ---- tile locations --------------------------------------------------- */

static struct cached_location *location_slot(struct open_file *file, uint64_t tile)
{
    return &file->locations[tile % LOCATION_CACHE_SLOTS];
}

static void location_remember(struct open_file *file, uint64_t tile,
                              const struct tile_location *location)
{
    if (location->node == 0)
        return; /* holes are asked again: another mount may fill them */
    struct cached_location *slot = location_slot(file, tile);
    slot->tile = tile;
    slot->location = *location;
}

/*
 * The location of `tile`; with allocate, a hole gets a tile placed by meta.
 * location->node is 0 for a hole (only without allocate).
 */
static int location_get(struct datapath *datapath, struct open_file *file, uint64_t tile,
                        bool allocate, struct tile_location *location)
{
    struct cached_location *slot = location_slot(file, tile);
    struct tile_location batch[TILE_MAP_BATCH];
    uint32_t count = 1;
    int status;

    if (slot->location.node != 0 && slot->tile == tile) {
        *location = slot->location;
        return 0;
    }
    if (!allocate) {
        /* Reads go forward: fetch the tiles up to the end of the file too. */
        uint64_t tiles_in_file = tile_count_for(file->size, file->tile_bytes);
        if (tiles_in_file > tile + 1)
            count = (uint32_t)(tiles_in_file - tile < TILE_MAP_BATCH ? tiles_in_file - tile
                                                                     : TILE_MAP_BATCH);
    }
    status = metaclient_tile_map(datapath->meta, file->ino, tile, count, allocate, batch);
    if (status != TS_OK)
        return errno_of(status);
    for (uint32_t i = 0; i < count; i++)
        location_remember(file, tile + i, &batch[i]);
    *location = batch[0];
    return 0;
}

static void locations_forget_from(struct open_file *file, uint64_t first_tile)
{
    for (size_t i = 0; i < LOCATION_CACHE_SLOTS; i++) {
        if (file->locations[i].tile >= first_tile)
            memset(&file->locations[i], 0, sizeof(file->locations[i]));
    }
}

/* ---- writing out ------------------------------------------------------ */

static int dirty_remember(struct open_file *file, uint32_t node, uint64_t tile,
                          uint64_t version)
{
    if (file->dirty_count > 0) {
        struct dirty_tile *last = &file->dirty[file->dirty_count - 1];
        if (last->node == node && last->tile == tile && last->version == version)
            return 0;
    }
    if (file->dirty_count == file->dirty_cap) {
        size_t new_cap = file->dirty_cap ? file->dirty_cap * 2 : 16;
        struct dirty_tile *grown = realloc(file->dirty, new_cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        file->dirty = grown;
        file->dirty_cap = new_cap;
    }
    file->dirty[file->dirty_count++] = (struct dirty_tile){node, tile, version};
    return 0;
}

/* Sends the write buffer to its tile's datanode. Keeps the first error. */
static int buffer_write_out(struct datapath *datapath, struct open_file *file)
{
    struct tile_location location;
    struct rpc_reply reply;
    uint8_t payload[64];
    int result;

    if (!file->buffer_used)
        return 0;
    result = location_get(datapath, file, file->buffer_tile, true, &location);
    if (result == 0) {
        struct ts_tile_write_req request = {.ino = file->ino,
                                            .tile = file->buffer_tile,
                                            .version = location.version,
                                            .offset = file->buffer_low};
        int len = ts_tile_write_req_encode(&request, payload, sizeof(payload));
        int status = nodedir_call(datapath->nodes, location.node, TS_OP_TILE_WRITE, payload,
                                  (size_t)len, file->buffer + file->buffer_low,
                                  file->buffer_high - file->buffer_low, &reply);
        rpc_reply_release(&reply);
        result = errno_of(status);
        if (result == 0)
            result = dirty_remember(file, location.node, file->buffer_tile, location.version);
    }
    if (result != 0) {
        log_error("write of inode %llu tile %llu failed: %s",
                  (unsigned long long)file->ino, (unsigned long long)file->buffer_tile,
                  strerror(-result));
        if (file->error == 0)
            file->error = result;
    }
    /* A failed buffer is dropped: its error is reported instead. */
    file->buffer_used = false;
    return result;
}

/* Commits size and mtime if this mount changed them. */
static int commit_size(struct datapath *datapath, struct open_file *file, int sync)
{
    struct ts_attr attr;
    int status;
    if (!file->size_dirty && !sync)
        return 0;
    status = metaclient_commit(datapath->meta, file->ino, file->size,
                               file->size_dirty ? &file->mtime : NULL, sync, &attr);
    if (status != TS_OK)
        return errno_of(status);
    file->size_dirty = false;
    file->size = attr.size;
    return 0;
}

/* Takes the pending error, reporting it once. */
static int take_error(struct open_file *file)
{
    int error = file->error;
    file->error = 0;
    return error;
}

int datapath_flush(struct datapath *datapath, struct open_file *file)
{
    int result;
    pthread_mutex_lock(&file->lock);
    buffer_write_out(datapath, file);
    result = take_error(file);
    if (result == 0)
        result = commit_size(datapath, file, 0);
    pthread_mutex_unlock(&file->lock);
    return result;
}

/* Asks each datanode to sync the tiles written to it since the last fsync. */
static int sync_dirty_tiles(struct datapath *datapath, struct open_file *file)
{
    size_t done = 0;
    int result = 0;
    uint8_t *records = malloc(file->dirty_count * TS_GARBAGE_RECORD_BYTES + 1);
    uint8_t payload[64];

    if (!records)
        return -ENOMEM;
    while (done < file->dirty_count && result == 0) {
        /* One request per node, with all of that node's tiles. */
        uint32_t node = 0;
        uint32_t count = 0;
        struct ts_writer writer;
        ts_writer_init(&writer, records, file->dirty_count * TS_GARBAGE_RECORD_BYTES);
        for (size_t i = 0; i < file->dirty_count; i++) {
            struct dirty_tile *tile = &file->dirty[i];
            if (tile->node == 0)
                continue;
            if (node == 0)
                node = tile->node;
            if (tile->node != node)
                continue;
            ts_writer_u64(&writer, file->ino);
            ts_writer_u64(&writer, tile->tile);
            ts_writer_u64(&writer, tile->version);
            tile->node = 0; /* taken */
            count++;
            done++;
        }
        struct ts_tile_sync_req request = {.count = count,
                                           .tiles = {(const char *)records, (uint32_t)writer.len}};
        size_t payload_cap = writer.len + 16;
        uint8_t *buf = payload_cap <= sizeof(payload) ? payload : malloc(payload_cap);
        if (!buf) {
            result = -ENOMEM;
            break;
        }
        int len = ts_tile_sync_req_encode(&request, buf, payload_cap);
        struct rpc_reply reply;
        int status = nodedir_call(datapath->nodes, node, TS_OP_TILE_SYNC, buf, (size_t)len, NULL,
                                  0, &reply);
        rpc_reply_release(&reply);
        if (buf != payload)
            free(buf);
        result = errno_of(status);
    }
    free(records);
    file->dirty_count = 0;
    return result;
}

int datapath_fsync(struct datapath *datapath, struct open_file *file)
{
    int result;
    pthread_mutex_lock(&file->lock);
    buffer_write_out(datapath, file);
    result = take_error(file);
    if (result == 0)
        result = sync_dirty_tiles(datapath, file);
    if (result == 0)
        result = commit_size(datapath, file, 1);
    pthread_mutex_unlock(&file->lock);
    return result;
}

/* Drops one reference; the last one writes out, frees and tells meta. */
static void open_file_put(struct datapath *datapath, struct open_file *file)
{
    bool last;
    uint64_t ino = file->ino;

    pthread_mutex_lock(&datapath->lock);
    last = --file->handles == 0;
    if (last) {
        struct open_file **link = bucket_of(datapath, file->ino);
        while (*link != file)
            link = &(*link)->next;
        *link = file->next;
    }
    pthread_mutex_unlock(&datapath->lock);
    if (!last)
        return;
    /* flush() normally did this already; a release without flush (mmap
     * writeback after close) still must not lose data. */
    pthread_mutex_lock(&file->lock);
    buffer_write_out(datapath, file);
    commit_size(datapath, file, 0);
    pthread_mutex_unlock(&file->lock);
    open_file_free(file);
    metaclient_release(datapath->meta, ino);
}

void datapath_release(struct datapath *datapath, struct open_file *file)
{
    open_file_put(datapath, file);
}

ssize_t datapath_write(struct datapath *datapath, struct open_file *file, const char *buf,
                       size_t size, uint64_t offset)
{
    struct tile_walk walk;
    struct tile_segment segment;
    ssize_t result = (ssize_t)size;

    if (size > (uint64_t)INT64_MAX - offset)
        return -EFBIG;
    pthread_mutex_lock(&file->lock);
    if (file->error != 0) {
        result = file->error;
        goto out;
    }
    if (!file->buffer) {
        file->buffer = malloc(file->tile_bytes);
        if (!file->buffer) {
            result = -ENOMEM;
            goto out;
        }
    }
    tile_walk_init(&walk, offset, size, file->tile_bytes);
    while (tile_walk_next(&walk, &segment)) {
        uint32_t low = segment.tile_offset;
        uint32_t high = segment.tile_offset + segment.length;
        /* The buffer holds one contiguous run: merge only touching writes. */
        bool mergeable = file->buffer_used && file->buffer_tile == segment.tile &&
                         low <= file->buffer_high && high >= file->buffer_low;
        if (file->buffer_used && !mergeable && buffer_write_out(datapath, file) != 0) {
            result = file->error;
            goto out;
        }
        if (!file->buffer_used) {
            file->buffer_used = true;
            file->buffer_tile = segment.tile;
            file->buffer_low = low;
            file->buffer_high = high;
        }
        memcpy(file->buffer + low, buf + (segment.file_offset - offset), segment.length);
        if (low < file->buffer_low)
            file->buffer_low = low;
        if (high > file->buffer_high)
            file->buffer_high = high;
        if (file->buffer_high - file->buffer_low == file->tile_bytes &&
            buffer_write_out(datapath, file) != 0) {
            result = file->error;
            goto out;
        }
    }
    if (offset + size > file->size)
        file->size = offset + size;
    file->size_dirty = true;
    file->mtime = util_now();
out:
    pthread_mutex_unlock(&file->lock);
    return result;
}

/* Reads one segment from its datanode into out (zeros for holes). */
static int read_segment(struct datapath *datapath, struct open_file *file,
                        const struct tile_segment *segment, char *out)
{
    struct tile_location location;
    struct rpc_reply reply;
    uint8_t payload[64];
    int result = location_get(datapath, file, segment->tile, false, &location);
    if (result != 0)
        return result;
    if (location.node == 0) {
        memset(out, 0, segment->length);
        return 0;
    }
    struct ts_tile_read_req request = {.ino = file->ino,
                                       .tile = segment->tile,
                                       .version = location.version,
                                       .offset = segment->tile_offset,
                                       .length = segment->length};
    int len = ts_tile_read_req_encode(&request, payload, sizeof(payload));
    int status = nodedir_call(datapath->nodes, location.node, TS_OP_TILE_READ, payload,
                              (size_t)len, NULL, 0, &reply);
    if (status == TS_OK && reply.data_len > segment->length)
        status = TS_ERR_BADMSG;
    if (status == TS_OK) {
        if (reply.data_len > 0)
            memcpy(out, reply.data, reply.data_len);
        memset(out + reply.data_len, 0, segment->length - reply.data_len);
    } else {
        log_error("read of inode %llu tile %llu from datanode %u failed: %s",
                  (unsigned long long)file->ino, (unsigned long long)segment->tile,
                  location.node, status_text(status));
    }
    rpc_reply_release(&reply);
    return errno_of(status);
}

ssize_t datapath_read(struct datapath *datapath, struct open_file *file, char *buf, size_t size,
                      uint64_t offset)
{
    struct tile_walk walk;
    struct tile_segment segment;
    ssize_t result = 0;

    pthread_mutex_lock(&file->lock);
    if (file->buffer_used) {
        uint64_t buffer_start = file->buffer_tile * file->tile_bytes;
        if (offset < buffer_start + file->buffer_high && offset + size > buffer_start)
            buffer_write_out(datapath, file);
    }
    if (offset + size > file->size && !file->size_dirty) {
        /* The file may have grown through another mount. */
        struct ts_attr attr;
        if (metaclient_getattr(datapath->meta, file->ino, &attr) == TS_OK)
            file->size = attr.size;
    }
    if (offset >= file->size)
        goto out;
    if (size > file->size - offset)
        size = (size_t)(file->size - offset);
    tile_walk_init(&walk, offset, size, file->tile_bytes);
    while (tile_walk_next(&walk, &segment)) {
        int error = read_segment(datapath, file, &segment, buf + (segment.file_offset - offset));
        if (error != 0) {
            result = error;
            goto out;
        }
    }
    result = (ssize_t)size;
out:
    pthread_mutex_unlock(&file->lock);
    return result;
}

/* Cuts the tile the new end falls in, as meta's SETATTR reply says. */
static int cut_tile(struct datapath *datapath, uint64_t ino, const struct ts_setattr_rep *reply)
{
    struct rpc_reply node_reply;
    uint8_t payload[64];
    if (reply->cut_node == 0)
        return 0;
    struct ts_tile_truncate_req request = {.ino = ino,
                                           .tile = reply->cut_tile,
                                           .version = reply->cut_version,
                                           .length = reply->cut_bytes};
    int len = ts_tile_truncate_req_encode(&request, payload, sizeof(payload));
    int status = nodedir_call(datapath->nodes, reply->cut_node, TS_OP_TILE_TRUNCATE, payload,
                              (size_t)len, NULL, 0, &node_reply);
    rpc_reply_release(&node_reply);
    return errno_of(status);
}

int datapath_setattr(struct datapath *datapath, const struct ts_setattr_req *request,
                     struct ts_attr *attr)
{
    struct ts_setattr_rep reply;
    struct open_file *file;
    int result = 0;
    int status;

    file = open_file_get(datapath, request->ino);
    if (file) {
        pthread_mutex_lock(&file->lock);
        buffer_write_out(datapath, file);
        result = commit_size(datapath, file, 0);
    }
    if (result == 0) {
        status = metaclient_setattr(datapath->meta, request, &reply);
        result = errno_of(status);
    }
    if (result == 0 && (request->valid & TS_SET_SIZE)) {
        result = cut_tile(datapath, request->ino, &reply);
        if (file) {
            file->size = reply.attr.size;
            locations_forget_from(file, tile_count_for(reply.attr.size, file->tile_bytes));
        }
    }
    if (result == 0)
        *attr = reply.attr;
    if (file) {
        pthread_mutex_unlock(&file->lock);
        open_file_put(datapath, file);
    }
    return result;
}

void datapath_overlay_attr(struct datapath *datapath, struct ts_attr *attr)
{
    struct open_file *file = open_file_get(datapath, attr->ino);
    if (!file)
        return;
    pthread_mutex_lock(&file->lock);
    if (file->size_dirty) {
        if (file->size > attr->size)
            attr->size = file->size;
        attr->mtime_sec = file->mtime.tv_sec;
        attr->mtime_nsec = (uint32_t)file->mtime.tv_nsec;
    }
    pthread_mutex_unlock(&file->lock);
    open_file_put(datapath, file);
}
