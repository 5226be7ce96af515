/*
 * @file handlers.c
 * See handlers.h. Handlers run on the datanode's one loop thread, so the
 * counters need no lock. A handler never trusts a count or length it has
 * not checked against the frame: record arrays must fill their blob
 * exactly, and a read is bounded by TS_MAX_DATA_BYTES before anything is
 * allocated. Tile bytes arrive in the request's frame 1 and leave in the
 * reply's frame 1; a read's buffer is handed to ZeroMQ, not copied.
 */
#include "handlers.h"

#include "log.h"
#include "status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Answers a payload that does not decode; the text names the message. */
static int handlers_badmsg(struct rpc_response *response, const char *what)
{
    snprintf(response->error_text, sizeof(response->error_text),
             "malformed %s request (fields do not fill the frame exactly)", what);
    return TS_ERR_BADMSG;
}

/*
 * Turns a tilestore result into a reply status; failures other than the
 * expected ones (bad arguments, full disk) are logged, since only the
 * datanode's log can say which file failed.
 */
static int handlers_status(struct rpc_response *response, const char *op, uint64_t ino,
                           uint64_t tile, uint64_t version, int rc)
{
    if (rc == 0)
        return TS_OK;
    if (rc != -EINVAL && rc != -ENOSPC)
        log_warn("%s of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 " failed: %s", op, ino, tile,
                 version, strerror(-rc));
    snprintf(response->error_text, sizeof(response->error_text),
             "%s tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 " on datanode: %s", op, ino, tile, version,
             strerror(-rc));
    return status_from_errno(rc);
}

void handlers_free_data(void *data, void *hint)
{
    (void)hint;
    free(data);
}

static int handle_ping(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    struct ts_ping_rep reply = {.role = ts_str_of("datanode")};
    (void)ctx;
    if (request->payload_len != 0)
        return handlers_badmsg(response, "PING");
    int len = ts_ping_rep_encode(&reply, response->payload, response->payload_cap);
    if (len < 0)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    return TS_OK;
}

static int handle_tile_write(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct handlers_context *context = ctx;
    struct ts_tile_write_req req;
    if (ts_tile_write_req_decode(&req, request->payload, request->payload_len) != 0)
        return handlers_badmsg(response, "TILE_WRITE");
    /* No frame 1 means no bytes: validated, nothing written. */
    int rc = diskio_write(context->disk, req.ino, req.tile, req.version, req.offset, request->data,
                          request->data ? request->data_len : 0);
    if (rc == 0)
        context->stats.bytes_written += request->data ? request->data_len : 0;
    return handlers_status(response, "write", req.ino, req.tile, req.version, rc);
}

static int handle_tile_read(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    struct handlers_context *context = ctx;
    struct ts_tile_read_req req;
    size_t got = 0;
    uint8_t *buf;
    int rc;

    if (ts_tile_read_req_decode(&req, request->payload, request->payload_len) != 0)
        return handlers_badmsg(response, "TILE_READ");
    if (req.length > TS_MAX_DATA_BYTES) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_READ of %" PRIu32 " bytes: at most %u per request", req.length,
                 TS_MAX_DATA_BYTES);
        return TS_ERR_INVAL;
    }
    if (req.length == 0)
        return handlers_status(response, "read", req.ino, req.tile, req.version,
                               tilestore_read(context->store, req.ino, req.tile, req.version,
                                              req.offset, 0, NULL, &got));
    buf = malloc(req.length);
    if (!buf)
        return TS_ERR_NOMEM;
    rc = diskio_read(context->disk, req.ino, req.tile, req.version, req.offset, req.length, buf,
                     &got);
    if (rc != 0 || got == 0) {
        /* A hole or a failure: no frame 1 at all. */
        free(buf);
        return handlers_status(response, "read", req.ino, req.tile, req.version, rc);
    }
    response->data = buf;
    response->data_len = got;
    response->data_free = handlers_free_data;
    context->stats.bytes_read += got;
    if (!context->stats.tiles_read)
        readset_new(TS_MAX_STATS_TILES, &context->stats.tiles_read); /* NULL: not listed */
    if (context->stats.tiles_read)
        readset_add(context->stats.tiles_read, req.ino, req.tile, got);
    return TS_OK;
}

static int handle_tile_sync(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    struct handlers_context *context = ctx;
    struct ts_tile_sync_req req;
    struct ts_cursor cursor;
    int first_status = TS_OK;

    if (ts_tile_sync_req_decode(&req, request->payload, request->payload_len) != 0 ||
        (uint64_t)req.count * TS_GARBAGE_RECORD_BYTES != req.tiles.len)
        return handlers_badmsg(response, "TILE_SYNC");
    ts_cursor_init(&cursor, req.tiles.ptr, req.tiles.len);
    /* Sync every tile even after a failure; the first failure is the answer. */
    for (uint32_t i = 0; i < req.count; i++) {
        uint64_t ino = ts_cursor_u64(&cursor);
        uint64_t tile = ts_cursor_u64(&cursor);
        uint64_t version = ts_cursor_u64(&cursor);
        int rc = diskio_sync(context->disk, ino, tile, version);
        if (rc != 0 && first_status == TS_OK)
            first_status = handlers_status(response, "sync", ino, tile, version, rc);
    }
    return first_status;
}

static int handle_tile_truncate(void *ctx, const struct rpc_request *request,
                                struct rpc_response *response)
{
    struct handlers_context *context = ctx;
    struct ts_tile_truncate_req req;
    if (ts_tile_truncate_req_decode(&req, request->payload, request->payload_len) != 0)
        return handlers_badmsg(response, "TILE_TRUNCATE");
    int rc = tilestore_truncate(context->store, req.ino, req.tile, req.version, req.length);
    return handlers_status(response, "truncate", req.ino, req.tile, req.version, rc);
}

static int handle_node_throttle(void *ctx, const struct rpc_request *request,
                                struct rpc_response *response)
{
    struct handlers_context *context = ctx;
    struct ts_node_throttle req;
    struct ts_node_throttle reply;
    uint64_t before = diskio_throttle(context->disk);

    if (ts_node_throttle_decode(&req, request->payload, request->payload_len) != 0)
        return handlers_badmsg(response, "NODE_THROTTLE");
    if (req.bytes_per_sec > HANDLERS_MAX_THROTTLE_BYTES_PER_SEC) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "throttle of %" PRIu64 " bytes/s: at most %llu (or 0 for none)", req.bytes_per_sec,
                 HANDLERS_MAX_THROTTLE_BYTES_PER_SEC);
        return TS_ERR_INVAL;
    }
    diskio_set_throttle(context->disk, req.bytes_per_sec);
    if (req.bytes_per_sec != before) {
        if (req.bytes_per_sec == 0)
            log_info("disk throttle off (was %.1f MB/s)", (double)before / 1e6);
        else
            log_info("disk throttle set to %.1f MB/s", (double)req.bytes_per_sec / 1e6);
    }
    reply.bytes_per_sec = diskio_throttle(context->disk);
    int len = ts_node_throttle_encode(&reply, response->payload, response->payload_cap);
    if (len < 0)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    return TS_OK;
}

/*
 * NODE_STATS. Its wrapper (below) has counted this request already, so it
 * is in the reply; a reset happens once the reply is encoded.
 */
static int handle_node_stats(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct handlers_context *context = ctx;
    struct handlers_stats *stats = &context->stats;
    struct ts_node_stats_req req;
    struct ts_node_stats_rep reply;
    struct ts_writer ops;
    struct ts_writer tiles;
    uint8_t op_records[TS_OP_MAX * TS_STATS_OP_RECORD_BYTES];
    const struct readset_entry *entries = NULL;
    size_t tile_count = 0;
    uint8_t *tile_records;
    int len;

    if (ts_node_stats_req_decode(&req, request->payload, request->payload_len) != 0 ||
        req.reset > 1)
        return handlers_badmsg(response, "NODE_STATS");
    if (stats->tiles_read)
        entries = readset_entries(stats->tiles_read, &tile_count);
    tile_records = malloc(tile_count ? tile_count * TS_STATS_TILE_RECORD_BYTES : 1);
    if (!tile_records)
        return TS_ERR_NOMEM;
    memset(&reply, 0, sizeof(reply));
    ts_writer_init(&ops, op_records, sizeof(op_records));
    for (uint32_t op = 0; op < TS_OP_MAX; op++) {
        uint64_t count = stats->requests[op];
        if (count == 0)
            continue;
        ts_writer_u32(&ops, op);
        ts_writer_u64(&ops, count);
        reply.op_count++;
        reply.requests += count;
    }
    ts_writer_init(&tiles, tile_records, tile_count * TS_STATS_TILE_RECORD_BYTES);
    for (size_t i = 0; i < tile_count; i++) {
        ts_writer_u64(&tiles, entries[i].ino);
        ts_writer_u64(&tiles, entries[i].tile);
        ts_writer_u64(&tiles, entries[i].reads);
        ts_writer_u64(&tiles, entries[i].bytes);
    }
    reply.failures = stats->failures;
    reply.bytes_read = stats->bytes_read;
    reply.bytes_written = stats->bytes_written;
    reply.ops.ptr = (const char *)op_records;
    reply.ops.len = (uint32_t)ops.len;
    reply.tile_count = (uint32_t)tile_count;
    reply.tiles_dropped = stats->tiles_read ? readset_dropped(stats->tiles_read) : 0;
    reply.tiles.ptr = (const char *)tile_records;
    reply.tiles.len = (uint32_t)tiles.len;
    len = ts_node_stats_rep_encode(&reply, response->payload, response->payload_cap);
    free(tile_records);
    if (len < 0 || ops.failed || tiles.failed)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    if (req.reset) {
        struct readset *tiles_read = stats->tiles_read;
        memset(stats, 0, sizeof(*stats));
        if (tiles_read)
            readset_clear(tiles_read);
        stats->tiles_read = tiles_read;
    }
    return TS_OK;
}

/*
 * The table entries count the request before the real handler runs (so
 * NODE_STATS sees itself) and its failure after, so no handler can forget
 * to.
 */
#define HANDLERS_COUNTED(name, op)                                                                 \
    static int counted_##name(void *ctx, const struct rpc_request *request,                        \
                              struct rpc_response *response)                                       \
    {                                                                                              \
        struct handlers_context *context = ctx;                                                    \
        context->stats.requests[op]++;                                                             \
        int status = handle_##name(ctx, request, response);                                        \
        if (status != TS_OK)                                                                       \
            context->stats.failures++;                                                             \
        return status;                                                                             \
    }
HANDLERS_COUNTED(ping, TS_OP_PING)
HANDLERS_COUNTED(tile_write, TS_OP_TILE_WRITE)
HANDLERS_COUNTED(tile_read, TS_OP_TILE_READ)
HANDLERS_COUNTED(tile_sync, TS_OP_TILE_SYNC)
HANDLERS_COUNTED(tile_truncate, TS_OP_TILE_TRUNCATE)
HANDLERS_COUNTED(node_throttle, TS_OP_NODE_THROTTLE)
HANDLERS_COUNTED(node_stats, TS_OP_NODE_STATS)

const rpc_handler_fn handlers_table[TS_OP_MAX] = {
    [TS_OP_PING] = counted_ping,
    [TS_OP_TILE_WRITE] = counted_tile_write,
    [TS_OP_TILE_READ] = counted_tile_read,
    [TS_OP_TILE_SYNC] = counted_tile_sync,
    [TS_OP_TILE_TRUNCATE] = counted_tile_truncate,
    [TS_OP_NODE_THROTTLE] = counted_node_throttle,
    [TS_OP_NODE_STATS] = counted_node_stats,
};

void handlers_log_stats(const struct handlers_stats *stats)
{
    log_info("served: %" PRIu64 " PING, %" PRIu64 " TILE_WRITE (%" PRIu64 " bytes), %" PRIu64
             " TILE_READ (%" PRIu64 " bytes), %" PRIu64 " TILE_SYNC, %" PRIu64
             " TILE_TRUNCATE; %" PRIu64 " failed",
             stats->requests[TS_OP_PING], stats->requests[TS_OP_TILE_WRITE], stats->bytes_written,
             stats->requests[TS_OP_TILE_READ], stats->bytes_read, stats->requests[TS_OP_TILE_SYNC],
             stats->requests[TS_OP_TILE_TRUNCATE], stats->failures);
}

void handlers_stats_fini(struct handlers_stats *stats)
{
    readset_destroy(&stats->tiles_read);
    memset(stats, 0, sizeof(*stats));
}
