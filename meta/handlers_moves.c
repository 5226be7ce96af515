/*
 * @file handlers_moves.c
 * Replica sets and the relocation journal: REPLICA_DROP and MOVE_BEGIN,
 * MOVE_COMMIT, MOVE_ABORT, MOVE_LIST, found through handlers_table like
 * every other handler.
 *
 * Same shape as handlers.c: decode, check what needs no store, run one
 * transaction body through store_write() or store_read(), encode. Bodies
 * change nothing outside the transaction (store_write() may run them
 * twice) and write why they refused into their op's `why`, which the
 * handler passes on as the reply's text.
 *
 * Invariants kept here, with copies.h and journal.h:
 *  - a tile has one primary (tiles table) and further replicas (copies
 *    table), each on another node, TS_MAX_HOLDERS in all at most: a copy
 *    past that is refused at MOVE_BEGIN;
 *  - a move never lowers a tile below its file's copies (DESIGN.md
 *    "Replicas and integrity"): a drop that would leave fewer holders is
 *    refused at MOVE_BEGIN, and aborted at MOVE_COMMIT when the set shrank
 *    meanwhile (a client's REPLICA_DROP); a MOVE keeps the count as it is;
 *    MOVE_COMMIT never leaves a tile without a holder;
 *  - every tile file that stops being referenced (a moved or dropped
 *    holder, an uncopied copy, an aborted move's target) enters the garbage
 *    table in the transaction that stops referencing it;
 *  - a journal entry names a holder (from_node, version) that held the tile
 *    when it began; MOVE_COMMIT checks it still does, and otherwise aborts
 *    the entry instead of committing (TS_ERR_STALE);
 *  - a committed entry stays (TS_MOVE_COMMITTED) until the executor has
 *    retired the old holder's file and commits again: it is never aborted,
 *    and no other relocation of its tile begins before it is finished;
 *  - no copy is begun or committed while its file is open on a client
 *    (sessions.h): a client that cached the tile without copies would write
 *    the primary without TILE_UNCOPY and leave the copy stale.
 */
#include "handlers_moves.h"

#include "copies.h"
#include "garbage.h"
#include "handlers_exports.h"
#include "handlers_i.h"
#include "inodes.h"
#include "journal.h"
#include "log.h"
#include "nodes.h"
#include "readsource.h"
#include "replicaset.h"
#include "reply.h"
#include "roles.h"
#include "service.h"
#include "sessions.h"
#include "status.h"
#include "store.h"
#include "tiles.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* MOVE_LIST pages: 16384 records of 56 bytes, well inside a frame. */
#define HANDLERS_MOVE_LIST_MAX_RECORDS 16384

/* ---- REPLICA_DROP ------------------------------------------------------- */

struct replica_drop_op {
    const struct ts_replica_drop_req *request;
    struct ts_writer records; /* the tile's TILE_MAP record as it is after */
    int64_t now_ms;
    const struct nodes_live *live;
    uint32_t token_rights; /* what the holders' tile tokens grant (readsource_grant) */
    bool dropped;
    char why[HANDLERS_WHY_MAX];
};

static int replica_drop_body(struct store_txn *txn, void *arg)
{
    struct replica_drop_op *op = arg;
    const struct ts_replica_drop_req *request = op->request;
    struct inodes_record record;
    struct readsource *source;
    struct tiles_entry primary = {0, 0, 0};

    op->records.len = 0;
    op->records.failed = false;
    int status = handlers_load_file_why(txn, request->ino, &record, op->why);
    if (status != TS_OK)
        return status;
    int err = replicaset_drop(txn, request->ino, request->tile, request->node, request->version,
                              &op->dropped);
    if (err == -EBUSY) {
        snprintf(op->why, sizeof(op->why),
                 "datanode %u is the last holder of tile %llu of inode %llu: not dropped",
                 request->node, (unsigned long long)request->tile,
                 (unsigned long long)request->ino);
        return TS_ERR_BUSY;
    }
    if (err == 0)
        err = tiles_get(txn, request->ino, request->tile, &primary);
    if (err == -ENOENT)
        err = 0; /* a hole now (truncated): an empty record says so */
    if (err == 0)
        err = readsource_load(txn, op->live, op->now_ms, request->ino, request->tile, 1,
                              request->machine, &source);
    if (err < 0)
        return reply_store_status(err);
    readsource_grant(source, op->token_rights);
    readsource_record(source, request->tile, &primary, &op->records);
    readsource_free(&source);
    return op->records.failed ? TS_ERR_INTERNAL : TS_OK;
}

int handlers_moves_replica_drop(void *ctx, const struct rpc_request *request,
                                struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_replica_drop_req message;
    struct replica_drop_op op = {.request = &message};
    struct ts_tile_map_rep reply;

    if (ts_replica_drop_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.node == 0)
        return TS_ERR_INVAL;
    /* A mount drops a holder only after its own write, sync or cut of the
     * file failed there: with the file open, or just told to cut it by a
     * truncate (recentcuts.h). Any other mount key's drop would only strip
     * a file it does not use of its replicas. */
    uint64_t sender = handlers_sender_mount(request);
    if (roles_of_user(request->key_user) == ROLES_MOUNT &&
        sessions_holds(service->sessions, sender, message.ino) == 0 &&
        !recentcuts_has(&service->recent_cuts, sender, message.ino, util_monotonic_ms())) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "%s holds inode %llu not open: it may not drop its replicas", request->key_user,
                 (unsigned long long)message.ino);
        log_warn("refused REPLICA_DROP of inode %llu tile %llu from %s: file not open there",
                 (unsigned long long)message.ino, (unsigned long long)message.tile,
                 request->key_user);
        return TS_ERR_PERM;
    }
    ts_writer_init(&op.records, service->scratch, SERVICE_SCRATCH_BYTES);
    op.now_ms = util_monotonic_ms();
    op.live = service->live;
    op.token_rights = handlers_exports_token_rights(service, request->key_user);
    int status = store_write(service->store, replica_drop_body, &op);
    if (status != TS_OK)
        return handlers_refused(status, op.why, response);
    if (op.dropped)
        log_warn("inode %llu tile %llu: datanode %u (version %llu) failed a client's write and "
                 "left the tile's replica set",
                 (unsigned long long)message.ino, (unsigned long long)message.tile, message.node,
                 (unsigned long long)message.version);
    reply.count = 1;
    reply.size = 0;
    reply.tiles.ptr = (const char *)service->scratch;
    reply.tiles.len = (uint32_t)op.records.len;
    return REPLY_ENCODE(tile_map_rep, &reply, response);
}

/* ---- the relocation journal: checks --------------------------------------- */

static const char *move_kind_name(uint32_t kind)
{
    switch (kind) {
    case TS_MOVE_COPY: return "copy";
    case TS_MOVE_MOVE: return "move";
    case TS_MOVE_DROP: return "drop";
    default: return "?";
    }
}

/* Who holds a tile now, as far as one move is concerned. */
struct move_holders {
    struct tiles_entry primary;
    bool from_is_primary;
    bool from_holds; /* from_node holds the tile at the entry's version */
    bool to_holds;   /* to_node holds the tile, as primary or copy */
    bool has_copy;   /* the tile has at least one copy */
    struct copies_entry first_copy;
    size_t holder_count; /* the primary and every copy */
};

static int move_count_copy(void *arg, const struct copies_entry *entry)
{
    struct move_holders *holders = arg;
    if (!holders->has_copy)
        holders->first_copy = *entry;
    holders->has_copy = true;
    holders->holder_count++;
    return 0;
}

/*
 * Reads who holds (ino, tile) with respect to entry. TS_OK, TS_ERR_STALE
 * with why when the tile is a hole, or a failure status.
 */
static int move_holders_get(struct store_txn *txn, const struct journal_entry *entry,
                            struct move_holders *holders, char *why)
{
    uint64_t version;
    int err;

    memset(holders, 0, sizeof(*holders));
    err = tiles_get(txn, entry->ino, entry->tile, &holders->primary);
    if (err == -ENOENT) {
        snprintf(why, HANDLERS_WHY_MAX, "tile %llu of inode %llu is a hole now (truncated?)",
                 (unsigned long long)entry->tile, (unsigned long long)entry->ino);
        return TS_ERR_STALE;
    }
    if (err < 0)
        return reply_store_status(err);
    if (holders->primary.node == entry->from_node) {
        holders->from_is_primary = true;
        holders->from_holds = holders->primary.version == entry->version;
    } else {
        err = copies_get(txn, entry->ino, entry->tile, entry->from_node, &version);
        if (err < 0 && err != -ENOENT)
            return reply_store_status(err);
        holders->from_holds = err == 0 && version == entry->version;
    }
    if (entry->to_node != 0) {
        holders->to_holds = holders->primary.node == entry->to_node;
        if (!holders->to_holds) {
            err = copies_get(txn, entry->ino, entry->tile, entry->to_node, &version);
            if (err < 0 && err != -ENOENT)
                return reply_store_status(err);
            holders->to_holds = err == 0;
        }
    }
    holders->holder_count = 1;
    err = copies_scan(txn, entry->ino, entry->tile, entry->tile, move_count_copy, holders);
    return err < 0 ? reply_store_status(err) : TS_OK;
}

/*
 * Whether entry keeps its tile within its holder bounds: a copy needs room
 * for one more holder (TS_MAX_HOLDERS; TS_ERR_TOOBIG), a drop must leave
 * the file's copies (TS_ERR_INVAL); a move changes no count. TS_OK, or the
 * refusal with why. `copies` is the file's effective copies (inodes_layout).
 */
static int move_holder_bounds(const struct journal_entry *entry, const struct move_holders *holders,
                              uint32_t copies, char *why)
{
    if (entry->kind == TS_MOVE_COPY && holders->holder_count >= TS_MAX_HOLDERS) {
        snprintf(why, HANDLERS_WHY_MAX,
                 "tile %llu of inode %llu has %zu holders already, the most a tile can have "
                 "(TS_MAX_HOLDERS): no further replica is made",
                 (unsigned long long)entry->tile, (unsigned long long)entry->ino,
                 holders->holder_count);
        return TS_ERR_TOOBIG;
    }
    if (entry->kind == TS_MOVE_DROP && holders->holder_count <= copies) {
        snprintf(why, HANDLERS_WHY_MAX,
                 "tile %llu of inode %llu has %zu holders and its file keeps copies=%u: dropping "
                 "the one on node %u would leave it under its copies",
                 (unsigned long long)entry->tile, (unsigned long long)entry->ino,
                 holders->holder_count, copies, entry->from_node);
        return TS_ERR_INVAL;
    }
    return TS_OK;
}

static void move_not_held(const struct journal_entry *entry, const struct move_holders *holders,
                          char *why)
{
    snprintf(why, HANDLERS_WHY_MAX,
             "datanode %u does not hold tile %llu of inode %llu at version %llu any more "
             "(primary: node %u version %llu)",
             entry->from_node, (unsigned long long)entry->tile, (unsigned long long)entry->ino,
             (unsigned long long)entry->version, holders->primary.node,
             (unsigned long long)holders->primary.version);
}

/* ---- MOVE_BEGIN --------------------------------------------------------- */

struct move_begin_op {
    const struct ts_move_begin_req *request;
    const struct layout_defaults *defaults; /* the cluster's copies for files naming none */
    int64_t now_sec;
    uint64_t new_version;
    bool resumed;
    char why[HANDLERS_WHY_MAX];
};

static int move_node_known(struct store_txn *txn, uint32_t node, char *why)
{
    struct nodes_record record;
    int err = nodes_get(txn, node, &record);
    if (err == -ENOENT) {
        snprintf(why, HANDLERS_WHY_MAX, "no datanode %u is registered", node);
        return TS_ERR_INVAL;
    }
    return reply_store_status(err);
}

static int move_begin_body(struct store_txn *txn, void *arg)
{
    struct move_begin_op *op = arg;
    const struct ts_move_begin_req *request = op->request;
    struct journal_entry entry = {
        .ino = request->ino,
        .tile = request->tile,
        .kind = request->kind,
        .from_node = request->from_node,
        .to_node = request->to_node,
        .version = request->version,
        .started_sec = op->now_sec,
        .state = TS_MOVE_BEGUN,
    };
    struct journal_entry existing;
    struct move_holders holders;
    struct inodes_record record;
    struct layout layout;
    int status;
    int err;

    op->resumed = false;
    status = handlers_load_file_why(txn, request->ino, &record, op->why);
    if (status != TS_OK)
        return status;
    err = journal_get(txn, request->ino, request->tile, &existing);
    if (err < 0 && err != -ENOENT)
        return reply_store_status(err);
    if (err == 0 && existing.state == TS_MOVE_COMMITTED) {
        snprintf(op->why, sizeof(op->why),
                 "tile %llu of inode %llu has a committed %s in the journal whose old file on "
                 "node %u is not retired yet: `tessera rebalance apply` or `abort` finishes it",
                 (unsigned long long)request->tile, (unsigned long long)request->ino,
                 move_kind_name(existing.kind), existing.from_node);
        return TS_ERR_BUSY;
    }
    if (err == 0) {
        if (existing.kind == entry.kind && existing.from_node == entry.from_node &&
            existing.to_node == entry.to_node && existing.version == entry.version) {
            op->new_version = existing.new_version;
            op->resumed = true;
            return TS_OK;
        }
        snprintf(op->why, sizeof(op->why),
                 "tile %llu of inode %llu is already in the journal (%s from node %u to node %u, "
                 "version %llu): commit or abort that first",
                 (unsigned long long)request->tile, (unsigned long long)request->ino,
                 move_kind_name(existing.kind), existing.from_node, existing.to_node,
                 (unsigned long long)existing.version);
        return TS_ERR_BUSY;
    }
    status = move_node_known(txn, request->from_node, op->why);
    if (status == TS_OK && request->to_node != 0)
        status = move_node_known(txn, request->to_node, op->why);
    if (status == TS_OK)
        status = move_holders_get(txn, &entry, &holders, op->why);
    if (status != TS_OK)
        return status;
    if (!holders.from_holds) {
        move_not_held(&entry, &holders, op->why);
        return TS_ERR_STALE;
    }
    if (holders.to_holds) {
        snprintf(op->why, sizeof(op->why), "datanode %u already holds tile %llu of inode %llu",
                 request->to_node, (unsigned long long)request->tile,
                 (unsigned long long)request->ino);
        return TS_ERR_EXIST;
    }
    if (request->kind == TS_MOVE_DROP && holders.from_is_primary && !holders.has_copy) {
        snprintf(op->why, sizeof(op->why),
                 "datanode %u holds the only copy of tile %llu of inode %llu: dropping it would "
                 "lose the tile",
                 request->from_node, (unsigned long long)request->tile,
                 (unsigned long long)request->ino);
        return TS_ERR_INVAL;
    }
    inodes_layout(&record, op->defaults, &layout);
    status = move_holder_bounds(&entry, &holders, layout.copies, op->why);
    if (status != TS_OK)
        return status;
    if (request->kind != TS_MOVE_DROP) {
        err = store_counter_take(txn, STORE_NEXT_VERSION, &entry.new_version);
        if (err < 0)
            return reply_store_status(err);
    }
    err = journal_put(txn, &entry);
    if (err < 0)
        return reply_store_status(err);
    op->new_version = entry.new_version;
    return TS_OK;
}

int handlers_moves_begin(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_move_begin_req message;
    struct move_begin_op op = {.request = &message};
    struct ts_move_begin_rep reply;
    const char *problem = NULL;
    int status;

    if (ts_move_begin_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.kind != TS_MOVE_COPY && message.kind != TS_MOVE_MOVE &&
        message.kind != TS_MOVE_DROP)
        problem = "kind must be 1 (copy), 2 (move) or 3 (drop)";
    else if (message.from_node == 0)
        problem = "from_node must name a datanode";
    else if (message.kind == TS_MOVE_DROP && message.to_node != 0)
        problem = "a drop has no target: to_node must be 0";
    else if (message.kind != TS_MOVE_DROP && message.to_node == 0)
        problem = "a copy or move needs a target: to_node must name a datanode";
    else if (message.to_node == message.from_node)
        problem = "from_node and to_node are the same datanode";
    else if (message.version == 0)
        problem = "version must name the tile file on from_node";
    if (problem) {
        snprintf(response->error_text, sizeof(response->error_text), "MOVE_BEGIN: %s", problem);
        return TS_ERR_INVAL;
    }
    op.now_sec = util_now().tv_sec;
    op.defaults = &service->defaults;
    status = store_write(service->store, move_begin_body, &op);
    if (status != TS_OK)
        return handlers_refused(status, op.why, response);
    if (!op.resumed)
        log_debug("relocation begun: %s of inode %llu tile %llu from node %u to node %u",
                  move_kind_name(message.kind), (unsigned long long)message.ino,
                  (unsigned long long)message.tile, message.from_node, message.to_node);
    reply.new_version = op.new_version;
    return REPLY_ENCODE(move_begin_rep, &reply, response);
}

/* ---- MOVE_COMMIT -------------------------------------------------------- */

struct move_tile_op {
    const struct ts_move_tile_req *request;
    const struct layout_defaults *defaults; /* MOVE_COMMIT: the cluster's copies */
    struct journal_entry entry;
    bool stale; /* the entry was aborted instead of committed */
    char why[HANDLERS_WHY_MAX];
};

/* The journal entry of the request's tile: TS_OK, TS_ERR_NOENT with why, or a failure. */
static int move_entry(struct store_txn *txn, struct move_tile_op *op)
{
    int err = journal_get(txn, op->request->ino, op->request->tile, &op->entry);
    if (err == -ENOENT) {
        snprintf(op->why, sizeof(op->why),
                 "no relocation of tile %llu of inode %llu is in the journal (committed or "
                 "aborted already?)",
                 (unsigned long long)op->request->tile, (unsigned long long)op->request->ino);
        return TS_ERR_NOENT;
    }
    return reply_store_status(err);
}

/* Switches the tile map as entry says; holders is the tile as it is now. */
static int move_apply(struct store_txn *txn, const struct journal_entry *entry,
                      const struct move_holders *holders)
{
    struct garbage_record freed = {entry->from_node, entry->ino, entry->tile, entry->version};
    struct copies_entry target = {entry->tile, entry->to_node, entry->new_version};
    int err = 0;

    switch (entry->kind) {
    case TS_MOVE_COPY:
        /*
         * The source holds the tile as new_version too (TILE_FENCE relink):
         * both holders are named at it, and the source's old name, retired
         * next, goes with the garbage, so that every client that cached
         * the old replica set is sent back here before it writes again.
         */
        if (holders->from_is_primary) {
            struct tiles_entry primary = {entry->from_node, entry->new_version,
                                          holders->primary.flags};
            err = tiles_put(txn, entry->ino, entry->tile, &primary);
        } else {
            struct copies_entry source = {entry->tile, entry->from_node, entry->new_version};
            err = copies_put(txn, entry->ino, &source);
        }
        if (err == 0)
            err = copies_put(txn, entry->ino, &target);
        break;
    case TS_MOVE_MOVE:
        if (holders->from_is_primary) {
            /* The bytes went along: a tile that was stored stays stored. */
            struct tiles_entry primary = {entry->to_node, entry->new_version,
                                          holders->primary.flags};
            err = tiles_put(txn, entry->ino, entry->tile, &primary);
        } else {
            err = copies_delete(txn, entry->ino, entry->tile, entry->from_node);
            if (err == 0)
                err = copies_put(txn, entry->ino, &target);
        }
        break;
    case TS_MOVE_DROP:
        if (holders->from_is_primary) {
            /* The first copy becomes the primary: writes go there from now on. */
            struct tiles_entry promoted = {holders->first_copy.node, holders->first_copy.version,
                                           holders->primary.flags};
            err = tiles_put(txn, entry->ino, entry->tile, &promoted);
            if (err == 0)
                err = copies_delete(txn, entry->ino, entry->tile, promoted.node);
        } else {
            err = copies_delete(txn, entry->ino, entry->tile, entry->from_node);
        }
        break;
    default: log_error("journal entry of unknown kind %u", entry->kind); return -EIO;
    }
    if (err == 0)
        err = garbage_add(txn, &freed);
    return err;
}

static int move_commit_body(struct store_txn *txn, void *arg)
{
    struct move_tile_op *op = arg;
    const struct journal_entry *entry = &op->entry;
    struct move_holders holders;
    struct inodes_record record;
    int status;
    int err;

    op->stale = false;
    op->why[0] = '\0';
    status = move_entry(txn, op);
    if (status != TS_OK)
        return status;
    /* Committed before: the old holder is retired now, and the entry is done. */
    if (entry->state == TS_MOVE_COMMITTED)
        return reply_store_status(journal_delete(txn, entry->ino, entry->tile));
    status = handlers_load_inode_why(txn, entry->ino, &record, op->why);
    if (status == TS_OK)
        status = move_holders_get(txn, entry, &holders, op->why);
    if (status == TS_OK && !holders.from_holds) {
        move_not_held(entry, &holders, op->why);
        status = TS_ERR_STALE;
    } else if (status == TS_OK && holders.to_holds) {
        snprintf(op->why, sizeof(op->why),
                 "datanode %u holds tile %llu of inode %llu already (the map changed)",
                 entry->to_node, (unsigned long long)entry->tile, (unsigned long long)entry->ino);
        status = TS_ERR_STALE;
    } else if (status == TS_OK && entry->kind == TS_MOVE_DROP && holders.from_is_primary &&
               !holders.has_copy) {
        snprintf(op->why, sizeof(op->why),
                 "tile %llu of inode %llu lost its copies since MOVE_BEGIN: dropping its primary "
                 "on node %u would lose it",
                 (unsigned long long)entry->tile, (unsigned long long)entry->ino, entry->from_node);
        status = TS_ERR_STALE;
    } else if (status == TS_OK) {
        /* The set may have shrunk since MOVE_BEGIN (a client's REPLICA_DROP). */
        struct layout layout;
        inodes_layout(&record, op->defaults, &layout);
        if (move_holder_bounds(entry, &holders, layout.copies, op->why) != TS_OK)
            status = TS_ERR_STALE;
    }
    if (status == TS_ERR_STALE || status == TS_ERR_NOENT) {
        /* The tile changed under the move: the entry goes, and its target file with it. */
        op->stale = true;
        return reply_store_status(journal_abort(txn, entry));
    }
    if (status != TS_OK)
        return status;
    err = move_apply(txn, entry, &holders);
    if (err == 0) {
        struct journal_entry committed = *entry;
        committed.state = TS_MOVE_COMMITTED;
        err = journal_put(txn, &committed);
    }
    return reply_store_status(err);
}

int handlers_moves_commit(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_move_tile_req message;
    struct move_tile_op op = {.request = &message};
    int status;

    if (ts_move_tile_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    op.defaults = &service->defaults;
    status = store_write(service->store, move_commit_body, &op);
    if (status == TS_OK && op.stale) {
        log_info("relocation of inode %llu tile %llu aborted at commit: %s",
                 (unsigned long long)message.ino, (unsigned long long)message.tile, op.why);
        snprintf(response->error_text, sizeof(response->error_text), "%s; the move was aborted",
                 op.why);
        return TS_ERR_STALE;
    }
    if (status != TS_OK)
        return handlers_refused(status, op.why, response);
    /* op.entry is the entry as it was found: BEGUN for a commit, COMMITTED for a finish. */
    log_debug("relocation %s: %s of inode %llu tile %llu from node %u to node %u",
              op.entry.state == TS_MOVE_COMMITTED ? "finished" : "committed",
              move_kind_name(op.entry.kind), (unsigned long long)message.ino,
              (unsigned long long)message.tile, op.entry.from_node, op.entry.to_node);
    response->payload_len = 0;
    return TS_OK;
}

/* ---- MOVE_ABORT --------------------------------------------------------- */

static int move_abort_body(struct store_txn *txn, void *arg)
{
    struct move_tile_op *op = arg;
    const struct journal_entry *entry = &op->entry;
    int status = move_entry(txn, op);
    if (status != TS_OK)
        return status;
    if (entry->state == TS_MOVE_COMMITTED) {
        snprintf(op->why, sizeof(op->why),
                 "the %s of tile %llu of inode %llu is committed: it cannot be undone, only "
                 "finished (retire node %u's old file, MOVE_COMMIT again: `tessera rebalance "
                 "abort`)",
                 move_kind_name(entry->kind), (unsigned long long)entry->tile,
                 (unsigned long long)entry->ino, entry->from_node);
        return TS_ERR_INVAL;
    }
    return reply_store_status(journal_abort(txn, entry));
}

int handlers_moves_abort(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_move_tile_req message;
    struct move_tile_op op = {.request = &message};
    int status;

    if (ts_move_tile_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    status = store_write(service->store, move_abort_body, &op);
    if (status != TS_OK)
        return handlers_refused(status, op.why, response);
    log_info("relocation aborted: %s of inode %llu tile %llu from node %u to node %u",
             move_kind_name(op.entry.kind), (unsigned long long)message.ino,
             (unsigned long long)message.tile, op.entry.from_node, op.entry.to_node);
    response->payload_len = 0;
    return TS_OK;
}

/* ---- MOVE_LIST ---------------------------------------------------------- */

struct move_list_op {
    const struct ts_move_list_req *request;
    uint32_t max_records;
    struct ts_writer records;
    uint32_t count;
    bool done;
};

static int move_list_visit(void *arg, const struct journal_entry *entry)
{
    struct move_list_op *op = arg;
    if (op->count >= op->max_records)
        return 1;
    journal_write_record(&op->records, entry);
    if (op->records.failed)
        return -ENOBUFS;
    op->count++;
    return 0;
}

static int move_list_body(struct store_txn *txn, void *arg)
{
    struct move_list_op *op = arg;
    int result;
    op->records.len = 0;
    op->records.failed = false;
    op->count = 0;
    result = journal_scan_after(txn, op->request->after_ino, op->request->after_tile,
                                move_list_visit, op);
    if (result < 0)
        return reply_store_status(result);
    op->done = result == 0;
    return TS_OK;
}

int handlers_moves_list(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_move_list_req message;
    struct move_list_op op = {.request = &message};
    struct ts_move_list_rep reply;
    int status;

    if (ts_move_list_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    op.max_records = message.max_records;
    if (op.max_records == 0 || op.max_records > HANDLERS_MOVE_LIST_MAX_RECORDS)
        op.max_records = HANDLERS_MOVE_LIST_MAX_RECORDS;
    ts_writer_init(&op.records, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_read(service->store, move_list_body, &op);
    if (status != TS_OK)
        return status;
    reply.count = op.count;
    reply.done = op.done ? 1 : 0;
    reply.records.ptr = (const char *)service->scratch;
    reply.records.len = (uint32_t)op.records.len;
    return REPLY_ENCODE(move_list_rep, &reply, response);
}
