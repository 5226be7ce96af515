/*
 * @file handlers_tiles.c
 * TILE_RECONCILE and TILE_HOLDERS: questions about the tile map that change
 * nothing, each answered from one read transaction (store_read()).
 *
 * TILE_RECONCILE is what lets a datanode delete tile files no one refers to
 * (a writer that died between its tile writes and their map commit, a
 * garbage record lost with a node that was down, a pull whose move never
 * committed). Its answer errs on the side of keeping: a file is UNMAPPED
 * only when neither the tile map (primary or other replica, on this node or
 * another), nor the relocation journal, nor the garbage queue names that
 * exact file, and its inode and version are ones this meta has issued; and
 * a node meta has not registered gets no answer at all. The last two are
 * what keep a meta started on an empty or older store (a wrong --data, a
 * restored backup) from declaring a whole cluster's data garbage: it has
 * never issued the versions the datanodes hold.
 */
#include "handlers_tiles.h"

#include "copies.h"
#include "garbage.h"
#include "journal.h"
#include "nodes.h"
#include "reply.h"
#include "service.h"
#include "status.h"
#include "store.h"
#include "tiles.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- TILE_RECONCILE ------------------------------------------------------ */

struct reconcile_op {
    uint32_t node;
    uint32_t count;
    struct ts_cursor files;    /* count TS_REC_TILE_FILE records */
    struct ts_writer verdicts; /* count TS_REC_RECONCILE_VERDICT records */
};

/* copies_scan visitor: stops (1) at a copy of exactly *arg's version. */
static int reconcile_copy_has_version(void *arg, const struct copies_entry *entry)
{
    const uint64_t *version = arg;
    return entry->version == *version ? 1 : 0;
}

/*
 * The verdict on one file held by op->node; next_ino and next_version are
 * the counters' next values (what this meta has issued lies below them).
 * 0 or a negative errno.
 */
static int reconcile_file(struct store_txn *txn, uint32_t node, uint64_t next_ino,
                          uint64_t next_version, const struct ts_tile_file_rec *file,
                          struct ts_reconcile_verdict_rec *verdict)
{
    struct tiles_entry primary;
    struct journal_entry move;
    uint64_t copy_version = 0;
    bool has_primary;
    int err;

    verdict->mapped_version = 0;
    if (file->ino == 0 || file->ino >= next_ino || file->version == 0 ||
        file->version >= next_version) {
        verdict->state = TS_RECONCILE_UNISSUED;
        return 0;
    }
    err = tiles_get(txn, file->ino, file->tile, &primary);
    if (err < 0 && err != -ENOENT)
        return err;
    has_primary = err == 0;
    if (has_primary && primary.node == node)
        verdict->mapped_version = primary.version;
    err = copies_get(txn, file->ino, file->tile, node, &copy_version);
    if (err < 0 && err != -ENOENT)
        return err;
    if (err == 0 && verdict->mapped_version == 0)
        verdict->mapped_version = copy_version;
    if ((has_primary && primary.node == node && primary.version == file->version) ||
        (err == 0 && copy_version == file->version)) {
        verdict->state = TS_RECONCILE_MAPPED;
        return 0;
    }
    err = journal_get(txn, file->ino, file->tile, &move);
    if (err < 0 && err != -ENOENT)
        return err;
    if (err == 0 && ((move.to_node == node && move.new_version == file->version) ||
                     (move.from_node == node && move.version == file->version))) {
        verdict->state = TS_RECONCILE_MOVING;
        return 0;
    }
    struct garbage_record queued = {
        .node = node, .ino = file->ino, .tile = file->tile, .version = file->version};
    err = garbage_has(txn, &queued);
    if (err < 0)
        return err;
    if (err == 1) {
        verdict->state = TS_RECONCILE_QUEUED;
        return 0;
    }
    /* The same file mapped to another node: versions are issued once, so
     * this node may be that one under a new id (its node.id was lost). */
    bool elsewhere = has_primary && primary.version == file->version;
    if (!elsewhere) {
        uint64_t version = file->version;
        err = copies_scan(txn, file->ino, file->tile, file->tile, reconcile_copy_has_version,
                          &version);
        if (err < 0)
            return err;
        elsewhere = err > 0;
    }
    verdict->state = elsewhere ? TS_RECONCILE_ELSEWHERE : TS_RECONCILE_UNMAPPED;
    return 0;
}

static int reconcile_body(struct store_txn *txn, void *arg)
{
    struct reconcile_op *op = arg;
    struct nodes_record node;
    uint64_t next_ino, next_version;
    /* A node meta does not know has nothing mapped: it would hear "delete
     * everything". Its heartbeat registers it; ask again then. */
    int err = nodes_get(txn, op->node, &node);

    if (err == -ENOENT)
        return TS_ERR_NOENT;
    if (err == 0)
        err = store_counter_peek(txn, STORE_NEXT_INO, &next_ino);
    if (err == 0)
        err = store_counter_peek(txn, STORE_NEXT_VERSION, &next_version);
    for (uint32_t i = 0; err == 0 && i < op->count; i++) {
        struct ts_tile_file_rec file;
        struct ts_reconcile_verdict_rec verdict;
        if (ts_tile_file_rec_read(&op->files, &file) != 0)
            return TS_ERR_BADMSG; /* cannot happen: the handler checked the length */
        err = reconcile_file(txn, op->node, next_ino, next_version, &file, &verdict);
        if (err == 0)
            ts_reconcile_verdict_rec_write(&op->verdicts, &verdict);
        if (op->verdicts.failed)
            return TS_ERR_INTERNAL;
    }
    return reply_store_status(err);
}

int handlers_tiles_reconcile(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_tile_reconcile_req message;
    struct ts_tile_reconcile_rep reply;
    struct reconcile_op op;
    int status;

    if (ts_tile_reconcile_req_decode(&message, request->payload, request->payload_len) != 0 ||
        (uint64_t)message.count * ts_tile_file_rec_bytes != message.files.len)
        return reply_bad_message(response, request->header.type);
    if (message.node_id == 0 || message.count > TS_MAX_RECONCILE_FILES) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_RECONCILE: node_id must be a registered node's and count 0..%u "
                 "(node %u, count %u)",
                 TS_MAX_RECONCILE_FILES, message.node_id, message.count);
        return TS_ERR_INVAL;
    }
    op.node = message.node_id;
    op.count = message.count;
    ts_cursor_init(&op.files, message.files.ptr, message.files.len);
    ts_writer_init(&op.verdicts, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_read(service->store, reconcile_body, &op);
    if (status == TS_ERR_NOENT)
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_RECONCILE: node %u is not registered", message.node_id);
    if (status != TS_OK)
        return status;
    reply.count = message.count;
    reply.verdicts.ptr = (const char *)service->scratch;
    reply.verdicts.len = (uint32_t)op.verdicts.len;
    return REPLY_ENCODE(tile_reconcile_rep, &reply, response);
}

/* ---- TILE_HOLDERS -------------------------------------------------------- */

struct holders_op {
    const struct ts_tile_holders_req *request;
    struct ts_writer holders;
    uint32_t count;
    uint64_t tile; /* the tile whose copies are being listed */
};

static void holders_append(struct holders_op *op, uint64_t tile, uint32_t node, uint64_t version,
                           uint32_t kind)
{
    struct ts_tile_holder_rec record = {
        .tile = tile, .node = node, .version = version, .kind = kind};
    ts_tile_holder_rec_write(&op->holders, &record);
    op->count++;
}

static int holders_copy(void *arg, const struct copies_entry *entry)
{
    struct holders_op *op = arg;
    holders_append(op, entry->tile, entry->node, entry->version, TS_HOLDER_COPY);
    return op->holders.failed ? -ENOBUFS : 0;
}

static int holders_body(struct store_txn *txn, void *arg)
{
    struct holders_op *op = arg;
    const struct ts_tile_holders_req *request = op->request;

    op->holders.len = 0;
    op->holders.failed = false;
    op->count = 0;
    for (uint64_t tile = request->first; tile < request->first + request->count; tile++) {
        struct tiles_entry primary;
        int err = tiles_get(txn, request->ino, tile, &primary);
        if (err == -ENOENT)
            continue; /* a hole: copies exist only of tiles with a primary */
        if (err < 0)
            return reply_store_status(err);
        holders_append(op, tile, primary.node, primary.version, TS_HOLDER_PRIMARY);
        err = copies_scan(txn, request->ino, tile, tile, holders_copy, op);
        if (err == -ENOBUFS || op->holders.failed)
            return TS_ERR_TOOBIG;
        if (err < 0)
            return reply_store_status(err);
    }
    return TS_OK;
}

int handlers_tiles_holders(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_tile_holders_req message;
    struct holders_op op = {.request = &message};
    struct ts_tile_holders_rep reply;
    int status;

    if (ts_tile_holders_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.count == 0 || message.count > TS_MAX_TILES_PER_MAP ||
        message.first > UINT64_MAX - message.count) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_HOLDERS: count must be 1..%u and the range end below 2^64 (first %llu, "
                 "count %u)",
                 TS_MAX_TILES_PER_MAP, (unsigned long long)message.first, message.count);
        return TS_ERR_INVAL;
    }
    ts_writer_init(&op.holders, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_read(service->store, holders_body, &op);
    if (status == TS_ERR_TOOBIG)
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_HOLDERS: the holders of %u tiles do not fit one reply; ask for fewer",
                 message.count);
    if (status != TS_OK)
        return status;
    reply.count = op.count;
    reply.holders.ptr = (const char *)service->scratch;
    reply.holders.len = (uint32_t)op.holders.len;
    return REPLY_ENCODE(tile_holders_rep, &reply, response);
}
