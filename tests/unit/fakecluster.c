/*
 * @file fakecluster.c
 * See fakecluster.h. Meta's tile records and the datanodes' tile files are
 * plain arrays searched linearly: tests use a few files of a few tiles.
 */
#include "fakecluster.h"

#include "nodedir.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"
#include "tilestream.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define MAX_RECORDS 1024
#define MAX_FILES 64
#define MAX_COUNTS 2048

struct meta_record {
    uint64_t ino;
    uint64_t tile;
    struct tile_location location;
};

struct meta_file {
    uint64_t ino;
    uint64_t size;
    uint32_t placement;
    int commits;
    int releases;
};

struct tile_file {
    uint32_t node;
    uint64_t ino;
    uint64_t tile;
    uint64_t version;
    uint32_t length;
    uint8_t *bytes; /* tile_bytes */
    bool moved_away;
};

struct request_count {
    uint32_t node;
    uint16_t op;
    uint64_t ino;
    uint64_t tile;
    int count;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* fakecluster_meta_hold(): TILE_MAP, GETATTR and COMMIT wait at the gate. */
static pthread_cond_t gate_opened = PTHREAD_COND_INITIALIZER;
static bool meta_held;
static int meta_waiting;
static uint32_t tile_bytes;
static uint64_t next_version;
static struct meta_record records[MAX_RECORDS];
static size_t record_count;
static struct meta_file files[MAX_FILES];
static size_t file_count;
static struct tile_file tiles[MAX_RECORDS];
static size_t tile_count;
static struct request_count counts[MAX_COUNTS];
static size_t count_count;
static int32_t write_failure[FAKECLUSTER_NODES + 1];
static int32_t sync_failure[FAKECLUSTER_NODES + 1];
static int32_t read_failure[FAKECLUSTER_NODES + 1];
static uint32_t copies = 1; /* holders of each new tile */
static int replica_drops;
static int write_delay_us;

void fakecluster_free(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < tile_count; i++)
        free(tiles[i].bytes);
    tile_count = 0;
    pthread_mutex_unlock(&lock);
}

void fakecluster_reset(uint32_t bytes)
{
    fakecluster_free();
    pthread_mutex_lock(&lock);
    tile_bytes = bytes;
    next_version = 1;
    record_count = file_count = count_count = 0;
    memset(write_failure, 0, sizeof(write_failure));
    memset(sync_failure, 0, sizeof(sync_failure));
    memset(read_failure, 0, sizeof(read_failure));
    copies = 1;
    replica_drops = 0;
    write_delay_us = 0;
    pthread_mutex_unlock(&lock);
}

/* ---- meta --------------------------------------------------------------- */

static struct meta_file *file_find(uint64_t ino)
{
    for (size_t i = 0; i < file_count; i++)
        if (files[i].ino == ino)
            return &files[i];
    return NULL;
}

static struct ts_attr attr_of(const struct meta_file *file)
{
    return (struct ts_attr){.ino = file->ino,
                            .mode = S_IFREG | 0644,
                            .nlink = 1,
                            .size = file->size,
                            .tile_bytes = tile_bytes,
                            .placement = file->placement,
                            .copies = copies};
}

struct ts_attr fakecluster_file(uint64_t ino, uint64_t size, uint32_t placement)
{
    pthread_mutex_lock(&lock);
    struct meta_file *file = file_find(ino);
    if (!file && file_count < MAX_FILES)
        file = &files[file_count++];
    if (!file) {
        fprintf(stderr, "fakecluster: more than %d files: raise MAX_FILES\n", MAX_FILES);
        abort();
    }
    *file = (struct meta_file){.ino = ino, .size = size, .placement = placement};
    struct ts_attr attr = attr_of(file);
    pthread_mutex_unlock(&lock);
    return attr;
}

struct fakecluster_meta fakecluster_meta_of(uint64_t ino)
{
    struct fakecluster_meta meta = {0};
    pthread_mutex_lock(&lock);
    struct meta_file *file = file_find(ino);
    if (file)
        meta = (struct fakecluster_meta){file->size, file->commits, file->releases};
    pthread_mutex_unlock(&lock);
    return meta;
}

static struct meta_record *record_find(uint64_t ino, uint64_t tile)
{
    for (size_t i = 0; i < record_count; i++)
        if (records[i].ino == ino && records[i].tile == tile)
            return &records[i];
    return NULL;
}

static struct meta_record *record_get(uint64_t ino, uint64_t tile)
{
    struct meta_record *record = record_find(ino, tile);
    if (!record && record_count < MAX_RECORDS) {
        record = &records[record_count++];
        *record = (struct meta_record){.ino = ino, .tile = tile};
    }
    return record;
}

bool fakecluster_location(uint64_t ino, uint64_t tile, struct tile_location *location)
{
    pthread_mutex_lock(&lock);
    struct meta_record *record = record_find(ino, tile);
    bool mapped = record && record->location.node != 0;
    *location = mapped ? record->location : (struct tile_location){0};
    pthread_mutex_unlock(&lock);
    return mapped;
}

void fakecluster_map(uint64_t ino, uint64_t tile, const struct tile_location *location)
{
    pthread_mutex_lock(&lock);
    struct meta_record *record = record_get(ino, tile);
    if (record)
        record->location = *location;
    pthread_mutex_unlock(&lock);
}

/* Called with `lock` held: waits while meta is held. */
static void meta_gate(void)
{
    meta_waiting++;
    while (meta_held)
        pthread_cond_wait(&gate_opened, &lock);
    meta_waiting--;
}

void fakecluster_meta_hold(bool hold)
{
    pthread_mutex_lock(&lock);
    meta_held = hold;
    pthread_cond_broadcast(&gate_opened);
    pthread_mutex_unlock(&lock);
}

bool fakecluster_meta_wait_for_caller(void)
{
    for (int i = 0; i < 5000; i++) {
        pthread_mutex_lock(&lock);
        int waiting = meta_waiting;
        pthread_mutex_unlock(&lock);
        if (waiting > 0)
            return true;
        usleep(1000);
    }
    return false;
}

int metaclient_tile_map(struct metaclient *client, uint64_t ino, uint64_t first, uint32_t count,
                        int allocate, uint32_t node, struct tile_location *locations)
{
    return metaclient_tile_map_sized(client, ino, first, count, allocate, node, locations, NULL);
}

int metaclient_tile_map_sized(struct metaclient *client, uint64_t ino, uint64_t first,
                              uint32_t count, int allocate, uint32_t node,
                              struct tile_location *locations, uint64_t *size)
{
    (void)client;
    pthread_mutex_lock(&lock);
    meta_gate();
    struct meta_file *file = file_find(ino);
    if (size)
        *size = file ? file->size : 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t tile = first + i;
        struct meta_record *record = record_find(ino, tile);
        if ((!record || record->location.node == 0) && allocate) {
            record = record_get(ino, tile);
            if (!record) {
                pthread_mutex_unlock(&lock);
                return TS_ERR_NOSPC;
            }
            uint32_t primary =
                node != 0 ? node : (uint32_t)((ino + tile) % FAKECLUSTER_NODES) + 1;
            struct tile_location *location = &record->location;
            *location = (struct tile_location){.node = primary, .version = next_version};
            /* Further holders on the next nodes, each with a version of its own. */
            for (uint32_t h = 0; h < copies; h++) {
                location->holders[h].node = (primary - 1 + h) % FAKECLUSTER_NODES + 1;
                location->holders[h].version = next_version++;
            }
            location->holder_count = copies;
            location->read_node = primary;
            location->read_version = location->version;
        }
        locations[i] = record ? record->location : (struct tile_location){0};
    }
    pthread_mutex_unlock(&lock);
    return TS_OK;
}

int metaclient_replica_drop(struct metaclient *client, uint64_t ino, uint64_t tile, uint32_t node,
                            uint64_t version, struct tile_location *location)
{
    (void)client;
    pthread_mutex_lock(&lock);
    struct meta_record *record = record_find(ino, tile);
    if (!record) {
        pthread_mutex_unlock(&lock);
        return TS_ERR_NOENT;
    }
    struct tile_location *now = &record->location;
    for (uint32_t h = 0; h < now->holder_count; h++) {
        if (now->holders[h].node != node || now->holders[h].version != version)
            continue;
        if (now->holder_count == 1) {
            pthread_mutex_unlock(&lock);
            return TS_ERR_BUSY;
        }
        memmove(&now->holders[h], &now->holders[h + 1],
                (now->holder_count - h - 1) * sizeof(now->holders[0]));
        now->holder_count--;
        now->node = now->holders[0].node; /* a dropped primary: the next one is primary */
        now->version = now->holders[0].version;
        now->read_node = now->node;
        now->read_version = now->version;
        replica_drops++;
        break;
    }
    *location = *now;
    pthread_mutex_unlock(&lock);
    return TS_OK;
}

void fakecluster_set_copies(uint32_t holders)
{
    pthread_mutex_lock(&lock);
    copies = holders;
    pthread_mutex_unlock(&lock);
}

int fakecluster_replica_drops(void)
{
    pthread_mutex_lock(&lock);
    int drops = replica_drops;
    pthread_mutex_unlock(&lock);
    return drops;
}

void fakecluster_fail_reads(uint32_t node, int32_t status)
{
    pthread_mutex_lock(&lock);
    if (node <= FAKECLUSTER_NODES)
        read_failure[node] = status;
    pthread_mutex_unlock(&lock);
}

int metaclient_commit(struct metaclient *client, uint64_t ino, uint64_t min_size,
                      const struct timespec *mtime, int sync, struct ts_attr *attr)
{
    (void)client;
    (void)mtime;
    (void)sync;
    pthread_mutex_lock(&lock);
    meta_gate();
    struct meta_file *file = file_find(ino);
    if (!file) {
        pthread_mutex_unlock(&lock);
        return TS_ERR_NOENT;
    }
    if (min_size > file->size)
        file->size = min_size;
    file->commits++;
    *attr = attr_of(file);
    pthread_mutex_unlock(&lock);
    return TS_OK;
}

int metaclient_getattr(struct metaclient *client, uint64_t ino, struct ts_attr *attr)
{
    (void)client;
    pthread_mutex_lock(&lock);
    meta_gate();
    struct meta_file *file = file_find(ino);
    if (file)
        *attr = attr_of(file);
    pthread_mutex_unlock(&lock);
    return file ? TS_OK : TS_ERR_NOENT;
}

/* Sizes only; no tile is cut (cut_node 0). */
int metaclient_setattr(struct metaclient *client, const struct ts_setattr_req *request,
                       struct ts_setattr_rep *reply)
{
    (void)client;
    pthread_mutex_lock(&lock);
    struct meta_file *file = file_find(request->ino);
    if (file && (request->valid & TS_SET_SIZE)) {
        file->commits += request->min_size != 0; /* the COMMIT it carries */
        file->size = request->size;
    }
    if (file)
        *reply = (struct ts_setattr_rep){.attr = attr_of(file)};
    pthread_mutex_unlock(&lock);
    return file ? TS_OK : TS_ERR_NOENT;
}

int metaclient_punch(struct metaclient *client, uint64_t ino, uint64_t first_tile,
                     uint64_t last_tile, struct ts_attr *attr)
{
    (void)client;
    pthread_mutex_lock(&lock);
    struct meta_file *file = file_find(ino);
    for (uint64_t tile = first_tile; file && tile <= last_tile; tile++) {
        struct meta_record *record = record_find(ino, tile);
        if (record)
            record->location = (struct tile_location){0};
    }
    if (file)
        *attr = attr_of(file);
    pthread_mutex_unlock(&lock);
    return file ? TS_OK : TS_ERR_NOENT;
}

/* Opens ino; truncate != 0 empties it first (every tile record gone). */
int metaclient_open(struct metaclient *client, uint64_t ino, uint32_t flags, uint32_t truncate,
                    struct ts_attr *attr, char **array_spec)
{
    (void)client;
    (void)flags;
    *array_spec = NULL;
    pthread_mutex_lock(&lock);
    struct meta_file *file = file_find(ino);
    if (file && truncate != 0) {
        file->size = 0;
        for (size_t i = 0; i < record_count; i++)
            if (records[i].ino == ino)
                records[i].location = (struct tile_location){0};
    }
    if (file)
        *attr = attr_of(file);
    pthread_mutex_unlock(&lock);
    return file ? TS_OK : TS_ERR_NOENT;
}

int metaclient_release(struct metaclient *client, uint64_t ino)
{
    (void)client;
    pthread_mutex_lock(&lock);
    struct meta_file *file = file_find(ino);
    if (file)
        file->releases++;
    pthread_mutex_unlock(&lock);
    return TS_OK;
}

void metaclient_on_lost(struct metaclient *client, metaclient_lost_fn fn, void *ctx)
{
    (void)client;
    (void)fn;
    (void)ctx;
}

/* ---- datanodes ---------------------------------------------------------- */

static struct tile_file *tile_find(uint32_t node, uint64_t ino, uint64_t tile)
{
    for (size_t i = 0; i < tile_count; i++)
        if (tiles[i].node == node && tiles[i].ino == ino && tiles[i].tile == tile)
            return &tiles[i];
    return NULL;
}

static struct tile_file *tile_get(uint32_t node, uint64_t ino, uint64_t tile)
{
    struct tile_file *file = tile_find(node, ino, tile);
    if (!file && tile_count < MAX_RECORDS) {
        file = &tiles[tile_count++];
        *file = (struct tile_file){.node = node, .ino = ino, .tile = tile};
        file->bytes = calloc(1, tile_bytes);
    }
    return file;
}

int fakecluster_tile_bytes(uint32_t node, uint64_t ino, uint64_t tile, void *out, uint32_t cap)
{
    pthread_mutex_lock(&lock);
    struct tile_file *file = tile_find(node, ino, tile);
    int length = -1;
    if (file && !file->moved_away) {
        length = (int)(file->length < cap ? file->length : cap);
        memcpy(out, file->bytes, (size_t)length);
    }
    pthread_mutex_unlock(&lock);
    return length;
}

void fakecluster_store(uint32_t node, uint64_t ino, uint64_t tile, uint64_t version,
                       const void *bytes, uint32_t length)
{
    pthread_mutex_lock(&lock);
    struct tile_file *file = tile_get(node, ino, tile);
    file->version = version;
    file->length = length;
    file->moved_away = false;
    memcpy(file->bytes, bytes, length);
    pthread_mutex_unlock(&lock);
}

void fakecluster_moved_away(uint32_t node, uint64_t ino, uint64_t tile)
{
    pthread_mutex_lock(&lock);
    tile_get(node, ino, tile)->moved_away = true;
    pthread_mutex_unlock(&lock);
}

void fakecluster_fail_writes(uint32_t node, int32_t status)
{
    pthread_mutex_lock(&lock);
    write_failure[node] = status;
    pthread_mutex_unlock(&lock);
}

void fakecluster_fail_syncs(uint32_t node, int32_t status)
{
    pthread_mutex_lock(&lock);
    sync_failure[node] = status;
    pthread_mutex_unlock(&lock);
}

void fakecluster_write_delay_us(int max_us)
{
    pthread_mutex_lock(&lock);
    write_delay_us = max_us;
    pthread_mutex_unlock(&lock);
}

static void request_counted(uint32_t node, uint16_t op, uint64_t ino, uint64_t tile)
{
    for (size_t i = 0; i < count_count; i++) {
        struct request_count *count = &counts[i];
        if (count->node == node && count->op == op && count->ino == ino && count->tile == tile) {
            count->count++;
            return;
        }
    }
    if (count_count < MAX_COUNTS)
        counts[count_count++] = (struct request_count){node, op, ino, tile, 1};
}

int fakecluster_requests(uint32_t node, uint16_t op, uint64_t ino, uint64_t tile)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < count_count; i++) {
        struct request_count *count = &counts[i];
        if (count->node == node && count->op == op && count->ino == ino && count->tile == tile)
            found = count->count;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

/* A reply whose data frame holds `length` bytes, as rpc.c would leave it. */
static void reply_with_data(struct rpc_reply *reply, const uint8_t *bytes, uint32_t length)
{
    zmq_msg_init(&reply->frame);
    zmq_msg_init_size(&reply->data_frame, length);
    memcpy(zmq_msg_data(&reply->data_frame), bytes, length);
    reply->frames_held = 2;
    reply->data = zmq_msg_data(&reply->data_frame);
    reply->data_len = length;
}

static int32_t tile_read(uint32_t node, const uint8_t *payload, size_t payload_len,
                         struct rpc_reply *reply)
{
    struct ts_tile_read_req request;
    if (ts_tile_read_req_decode(&request, payload, payload_len) != 0)
        return TS_ERR_BADMSG;
    request_counted(node, TS_OP_TILE_READ, request.ino, request.tile);
    if (read_failure[node] != TS_OK)
        return read_failure[node];
    struct tile_file *file = tile_find(node, request.ino, request.tile);
    if (file && file->moved_away)
        return TS_ERR_STALE;
    if (!file)
        return TS_ERR_NOENT;
    uint32_t end = request.offset + request.length;
    if (end > file->length)
        end = file->length;
    uint32_t length = end > request.offset ? end - request.offset : 0;
    reply_with_data(reply, file->bytes + request.offset, length);
    return TS_OK;
}

static int32_t tile_write(uint32_t node, const uint8_t *payload, size_t payload_len,
                          const uint8_t *data, size_t data_len)
{
    struct ts_tile_write_req request;
    if (ts_tile_write_req_decode(&request, payload, payload_len) != 0)
        return TS_ERR_BADMSG;
    request_counted(node, TS_OP_TILE_WRITE, request.ino, request.tile);
    if (write_failure[node] != TS_OK)
        return write_failure[node];
    struct tile_file *file = tile_find(node, request.ino, request.tile);
    if (file && file->moved_away)
        return TS_ERR_STALE;
    if (request.offset + data_len > tile_bytes)
        return TS_ERR_INVAL;
    file = tile_get(node, request.ino, request.tile);
    file->version = request.version;
    memcpy(file->bytes + request.offset, data, data_len);
    if (request.offset + data_len > file->length)
        file->length = (uint32_t)(request.offset + data_len);
    struct meta_record *record = record_find(request.ino, request.tile);
    if (record && record->location.node == node)
        record->location.flags |= TS_TILE_STORED;
    return TS_OK;
}

int nodedir_call(struct nodedir *dir, uint32_t node, uint16_t op, const void *payload,
                 size_t payload_len, const void *data, size_t data_len, struct rpc_reply *reply)
{
    (void)dir;
    int32_t status = TS_OK;
    memset(reply, 0, sizeof(*reply));
    if (node == 0 || node > FAKECLUSTER_NODES)
        return TS_ERR_IO;
    if (op == TS_OP_TILE_WRITE) {
        /* Before the bytes land: two writes of a tile the data path let
         * overlap would then land in either order. */
        pthread_mutex_lock(&lock);
        int delay_us = write_delay_us > 0 ? rand() % write_delay_us : 0;
        pthread_mutex_unlock(&lock);
        if (delay_us > 0)
            usleep((useconds_t)delay_us);
    }
    pthread_mutex_lock(&lock);
    if (op == TS_OP_TILE_READ)
        status = tile_read(node, payload, payload_len, reply);
    else if (op == TS_OP_TILE_WRITE)
        status = tile_write(node, payload, payload_len, data, data_len);
    else if (op == TS_OP_TILE_SYNC || op == TS_OP_TILE_TRUNCATE) {
        request_counted(node, op, 0, 0);
        if (op == TS_OP_TILE_SYNC)
            status = sync_failure[node];
    }
    else
        status = TS_ERR_INVAL;
    pthread_mutex_unlock(&lock);
    return status;
}

int nodedir_call_owned(struct nodedir *dir, uint32_t node, uint16_t op, const void *payload,
                       size_t payload_len, const void *data, size_t data_len,
                       const struct rpc_data_owner *owner, struct rpc_reply *reply)
{
    int status = nodedir_call(dir, node, op, payload, payload_len, data, data_len, reply);
    if (owner)
        owner->free_fn((void *)data, owner->hint); /* "sent": ZeroMQ lets go */
    return status;
}

size_t nodedir_candidates(struct nodedir *dir, uint32_t *ids, size_t cap)
{
    (void)dir;
    size_t count = 0;
    for (uint32_t node = 1; node <= FAKECLUSTER_NODES && count < cap; node++)
        ids[count++] = node;
    return count;
}

bool nodedir_is_local(struct nodedir *dir, uint32_t node)
{
    (void)dir;
    (void)node;
    return false;
}

void nodedir_endpoint(struct nodedir *dir, uint32_t node, char *out, size_t cap)
{
    (void)dir;
    snprintf(out, cap, "fake datanode %u", node);
}

void nodedir_suspect(struct nodedir *dir)
{
    (void)dir;
}

/* ---- tile streams: none (the data path is given none) ------------------- */

int tilestream_read(struct tilestream *streams, uint32_t node,
                    const struct ts_tile_read_req *request, bool reader_keeps, int32_t *status,
                    uint32_t *got)
{
    (void)streams, (void)node, (void)request, (void)reader_keeps, (void)status, (void)got;
    return -EPIPE;
}

int tilestream_read_into(struct tilestream *streams, uint32_t node,
                         const struct ts_tile_read_req *request, bool reader_keeps, void *buf,
                         int32_t *status, uint32_t *got)
{
    (void)streams, (void)node, (void)request, (void)reader_keeps, (void)buf, (void)status,
        (void)got;
    return -EPIPE;
}

int tilestream_write(struct tilestream *streams, uint32_t node,
                     const struct ts_tile_write_req *request, const void *data, uint32_t length,
                     int32_t *status)
{
    (void)streams, (void)node, (void)request, (void)data, (void)length, (void)status;
    return -EPIPE;
}

/* ---- the data path over it ---------------------------------------------- */

int fakecluster_mount(struct fakecluster_mount *mount, uint32_t bytes, uint32_t readahead_tiles)
{
    fakecluster_reset(bytes);
    memset(mount, 0, sizeof(*mount));
    mount->workers = workers_new(8);
    mount->guard = attrguard_new(60.0, NULL);
    struct datapath_config config = {.memory_bytes = 32ull * bytes,
                                     .readahead_tiles = readahead_tiles,
                                     .io_timeout_ms = 2000,
                                     .guard = mount->guard};
    if (mount->workers && mount->guard)
        mount->datapath = datapath_new(NULL, NULL, mount->workers, &config);
    if (!mount->datapath) {
        fakecluster_unmount(mount);
        return -ENOMEM;
    }
    return 0;
}

void fakecluster_unmount(struct fakecluster_mount *mount)
{
    datapath_destroy(&mount->datapath);
    workers_destroy(&mount->workers);
    attrguard_destroy(&mount->guard);
    fakecluster_free();
}

ssize_t fakecluster_read(struct fakecluster_mount *mount, struct open_file *file, void *out,
                         size_t size, uint64_t offset)
{
    struct datapath_read result;
    ssize_t got = datapath_read(mount->datapath, file, size, offset, false, -1, &result);
    if (got >= 0) {
        size_t at = 0;
        for (size_t i = 0; i < result.count; i++) {
            memcpy((uint8_t *)out + at, result.iov[i].iov_base, result.iov[i].iov_len);
            at += result.iov[i].iov_len;
        }
    }
    datapath_read_done(mount->datapath, &result);
    return got;
}
