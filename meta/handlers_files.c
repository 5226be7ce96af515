/*
 * @file handlers_files.c
 * A file's data: OPEN and RELEASE (the open counts that keep unlinked files
 * alive, sessions.h), SETATTR (a truncate drops tiles), TILE_MAP (where
 * the tiles are, and the placement of new ones), COMMIT (the size and
 * mtime a writer's tiles make) and PUNCH (dropping a range of tiles). Same
 * shape as every handler (handlers.c).
 *
 * Invariants kept here: tiles_allocated in an inode equals its records in
 * the tiles table, and every tile that leaves the tiles table enters the
 * garbage table, and so does every replica that leaves the copies table
 * (copies.h). A tile placed here gets its file's `copies` holders
 * (placement_choose_replicas), fewer only when too few nodes are usable.
 */
#include "handlers_files.h"

#include "arrayhint.h"
#include "arrayhome.h"
#include "copies.h"
#include "handlers_exports.h"
#include "handlers_i.h"
#include "handlers_xattrs.h"
#include "inodes.h"
#include "log.h"
#include "nodes.h"
#include "placement.h"
#include "readsource.h"
#include "reply.h"
#include "service.h"
#include "sessions.h"
#include "status.h"
#include "store.h"
#include "tile.h"
#include "tiles.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- RELEASE ---------------------------------------------------------- */

/*
 * One release of ino by mount: counts down what mount holds (a release of
 * an open it does not hold, sent twice or from before a restart of meta,
 * changes nothing) and deletes the inode after the last close of an
 * unlinked file.
 */
static void release_one(struct service *service, uint64_t mount, uint64_t ino)
{
    struct handlers_inode_op op;

    if (!sessions_release(service->sessions, mount, ino) ||
        sessions_open_count(service->sessions, ino) > 0)
        return;
    /* A read first: most last closes are of linked files, which stay. */
    op.ino = ino;
    if (store_read(service->store, handlers_getattr_body, &op) != TS_OK || op.found.attr.nlink > 0)
        return;
    service_reap(service, &ino, 1, util_monotonic_ms(), NULL);
}

int handlers_files_release(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    struct ts_release_req message;

    if (ts_release_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    release_one(ctx, handlers_sender_mount(request), message.ino);
    return TS_OK;
}

int handlers_files_release_many(void *ctx, const struct rpc_request *request,
                                struct rpc_response *response)
{
    struct ts_release_many_req message;
    struct ts_cursor cursor;

    if (ts_release_many_req_decode(&message, request->payload, request->payload_len) != 0 ||
        message.count > TS_MAX_RELEASES ||
        message.inos.len != (uint64_t)message.count * ts_release_rec_bytes)
        return reply_bad_message(response, request->header.type);
    ts_cursor_init(&cursor, message.inos.ptr, message.inos.len);
    for (uint32_t i = 0; i < message.count; i++) {
        struct ts_release_rec record;
        (void)ts_release_rec_read(&cursor, &record); /* the length was checked */
        release_one(ctx, handlers_sender_mount(request), record.ino);
    }
    return TS_OK;
}

/* ---- SETATTR ------------------------------------------------------------ */

struct setattr_op {
    const struct ts_setattr_req *request;
    struct timespec now;
    struct inodes_record record;
    struct ts_setattr_rep reply;
    char why[160]; /* why a size change of an array file was refused */
};

/*
 * The sizes an array file may take (its tiles are hyper-rectangles, not
 * byte ranges, so a partial cut has no tile boundary to fall on): 0, which
 * drops every tile and keeps the layout; its current size (nothing
 * changes); or anything up to the array's size, growing (the rest reads as
 * zeros). Shrinking to another size is TS_ERR_INVAL, past the array's size
 * TS_ERR_FBIG.
 */
static int setattr_array_size(struct store_txn *txn, struct setattr_op *op)
{
    const struct ts_attr *attr = &op->record.attr;
    uint64_t size = op->request->size;
    struct arraylayout *layout;
    int status = handlers_xattrs_array_load(txn, attr->ino, &layout);
    if (status != TS_OK)
        return status;
    uint64_t array_bytes = layout->array_bytes;
    free(layout);
    if (size > array_bytes) {
        snprintf(op->why, sizeof(op->why),
                 "size %llu is past the end of the array (%llu bytes, user.tessera.array)",
                 (unsigned long long)size, (unsigned long long)array_bytes);
        return TS_ERR_FBIG;
    }
    if (size != 0 && size < attr->size) {
        snprintf(op->why, sizeof(op->why),
                 "an array file can only be truncated to 0 or grown (asked %llu, size %llu)",
                 (unsigned long long)size, (unsigned long long)attr->size);
        return TS_ERR_INVAL;
    }
    return TS_OK;
}

/*
 * Truncates a regular file's tiles at new_size: drops (into garbage) every
 * tile wholly past the end and, with `cut`, names the tile the end falls
 * inside so that the client cuts it on its datanode.
 */
static int shrink_tiles(struct store_txn *txn, struct setattr_op *op, uint64_t new_size, bool cut)
{
    struct inodes_record *record = &op->record;
    uint32_t tile_bytes = record->attr.tile_bytes;
    uint64_t dropped = 0;
    struct tiles_entry last;
    int err =
        tiles_drop_from(txn, record->attr.ino, tile_count_for(new_size, tile_bytes), &dropped);
    if (err < 0)
        return reply_store_status(err);
    record->tiles_allocated =
        record->tiles_allocated > dropped ? record->tiles_allocated - dropped : 0;
    if (!cut || new_size % tile_bytes == 0)
        return TS_OK;
    /*
     * The client cuts every holder of the tile the end falls in (it asks
     * TILE_MAP for them): a replica left uncut would keep the bytes past
     * the end and show them if the file grows.
     */
    err = tiles_get(txn, record->attr.ino, new_size / tile_bytes, &last);
    if (err == -ENOENT)
        return TS_OK;
    if (err < 0)
        return reply_store_status(err);
    op->reply.cut_node = last.node;
    op->reply.cut_tile = new_size / tile_bytes;
    op->reply.cut_version = last.version;
    op->reply.cut_bytes = (uint32_t)(new_size % tile_bytes);
    return TS_OK;
}

static int setattr_body(struct store_txn *txn, void *arg)
{
    struct setattr_op *op = arg;
    const struct ts_setattr_req *request = op->request;
    struct ts_attr *attr = &op->record.attr;
    uint32_t valid = request->valid;
    int status;

    memset(&op->reply, 0, sizeof(op->reply));
    status = handlers_load_inode(txn, request->ino, &op->record);
    if (status != TS_OK)
        return status;
    bool commits = request->min_size != 0 || request->commit_mtime_sec != 0;
    if (valid & TS_SET_SIZE) {
        if (S_ISDIR(attr->mode))
            return TS_ERR_ISDIR;
        if (!S_ISREG(attr->mode))
            return TS_ERR_INVAL;
        if (attr->tile_bytes == 0)
            return TS_ERR_INTERNAL;
    } else if (commits && !S_ISREG(attr->mode)) {
        return TS_ERR_INVAL;
    }
    /* The sender's COMMIT first (proto.h): what its writes put past a new
     * end is cut, and a time this request sets wins over its writes'.
     * An array's size only grows to bytes inside it: the sender refuses
     * writes past its end. */
    if (request->min_size > attr->size)
        attr->size = request->min_size;
    if (request->commit_mtime_sec != 0) {
        attr->mtime_sec = attr->ctime_sec = request->commit_mtime_sec;
        attr->mtime_nsec = attr->ctime_nsec = request->commit_mtime_nsec;
    }
    if ((valid & TS_SET_SIZE) && (attr->flags & TS_ATTR_ARRAY)) {
        status = setattr_array_size(txn, op);
        if (status != TS_OK)
            return status;
    }
    if (valid & TS_SET_MODE)
        attr->mode = (attr->mode & S_IFMT) | (request->mode & 07777);
    if ((valid & TS_SET_KILL_PRIV) && S_ISREG(attr->mode)) {
        attr->mode &= ~(uint32_t)S_ISUID;
        if (attr->mode & S_IXGRP)
            attr->mode &= ~(uint32_t)S_ISGID;
    }
    if (valid & TS_SET_UID)
        attr->uid = request->uid;
    if (valid & TS_SET_GID)
        attr->gid = request->gid;
    /*
     * Truncating to the current size or below also drops tiles past the end
     * that a crashed writer allocated but never committed (O_TRUNC of an
     * empty file clears them). Growing leaves every tile alone: a writer may
     * have tiles in flight beyond the old end. An array file's tile indices
     * are not file order: only truncating it to 0 drops tiles (all of them).
     */
    bool array = (attr->flags & TS_ATTR_ARRAY) != 0;
    if ((valid & TS_SET_SIZE) && request->size <= attr->size && (!array || request->size == 0)) {
        status = shrink_tiles(txn, op, request->size, request->size < attr->size);
        if (status != TS_OK)
            return status;
    }
    if ((valid & TS_SET_SIZE) && request->size != attr->size) {
        attr->size = request->size;
        handlers_time_set(&attr->mtime_sec, &attr->mtime_nsec, op->now);
    }
    if (valid & TS_SET_ATIME_NOW)
        handlers_time_set(&attr->atime_sec, &attr->atime_nsec, op->now);
    else if (valid & TS_SET_ATIME) {
        attr->atime_sec = request->atime_sec;
        attr->atime_nsec = request->atime_nsec;
    }
    if (valid & TS_SET_MTIME_NOW)
        handlers_time_set(&attr->mtime_sec, &attr->mtime_nsec, op->now);
    else if (valid & TS_SET_MTIME) {
        attr->mtime_sec = request->mtime_sec;
        attr->mtime_nsec = request->mtime_nsec;
    }
    handlers_time_set(&attr->ctime_sec, &attr->ctime_nsec, op->now);
    return reply_store_status(inodes_put(txn, &op->record));
}

int handlers_files_setattr(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_setattr_req message;
    struct setattr_op op = {.request = &message};
    int status;

    if (ts_setattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (((message.valid & TS_SET_SIZE) && message.size > INT64_MAX) || message.min_size > INT64_MAX)
        return TS_ERR_FBIG;
    if (((message.valid & TS_SET_ATIME) && message.atime_nsec >= HANDLERS_NSEC_PER_SEC) ||
        ((message.valid & TS_SET_MTIME) && message.mtime_nsec >= HANDLERS_NSEC_PER_SEC) ||
        message.commit_mtime_nsec >= HANDLERS_NSEC_PER_SEC)
        return TS_ERR_INVAL;
    status = handlers_lease_check(service, handlers_sender_mount(request), message.ino);
    if (status != TS_OK)
        return status;
    op.now = util_now();
    status = store_write(service->store, setattr_body, &op);
    if (status != TS_OK && op.why[0]) {
        log_info("setattr of inode %llu refused: %s", (unsigned long long)message.ino, op.why);
        snprintf(response->error_text, sizeof(response->error_text), "%s", op.why);
    }
    if (status != TS_OK)
        return status;
    if (op.reply.cut_node != 0) /* a holder failing the cut may leave the set (recentcuts.h) */
        recentcuts_note(&service->recent_cuts, handlers_sender_mount(request), message.ino,
                        util_monotonic_ms());
    inodes_attr(&op.record, &service->defaults, &op.reply.attr);
    return REPLY_ENCODE(setattr_rep, &op.reply, response);
}

/* ---- OPEN ------------------------------------------------------------- */

/*
 * OPEN's transaction: the truncation of open(O_TRUNC) when asked (the
 * SETATTR body, so the same rules hold), then the array text of an array
 * file.
 */
struct open_op {
    struct setattr_op truncation; /* its record is the inode either way */
    bool truncate;
    char array_spec[ARRAYSPEC_TEXT_MAX + 1];
    size_t array_len;
};

static int open_body(struct store_txn *txn, void *arg)
{
    struct open_op *op = arg;
    struct inodes_record *record = &op->truncation.record;
    int status = op->truncate ? setattr_body(txn, &op->truncation)
                              : handlers_load_inode(txn, op->truncation.request->ino, record);
    op->array_len = 0;
    op->array_spec[0] = '\0';
    if (status != TS_OK || !(record->attr.flags & TS_ATTR_ARRAY))
        return status;
    int err = arrayhint_get(txn, record->attr.ino, op->array_spec, sizeof(op->array_spec),
                            &op->array_len);
    return err < 0 ? reply_store_status(err) : TS_OK;
}

int handlers_files_open(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_open_req message;
    struct ts_setattr_req truncation = {0};
    struct open_op *op;
    struct ts_open_rep reply;
    int status;

    if (ts_open_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.truncate != 0 && ((message.truncate & ~TS_OPEN_TRUNCATE_BITS) != 0 ||
                                  !(message.truncate & TS_SET_SIZE)))
        return TS_ERR_INVAL;
    if (message.truncate != 0) {
        status = handlers_lease_check(service, handlers_sender_mount(request), message.ino);
        if (status != TS_OK)
            return status;
    }
    op = calloc(1, sizeof(*op));
    if (!op)
        return TS_ERR_NOMEM;
    truncation.ino = message.ino;
    truncation.valid = message.truncate;
    op->truncation.request = &truncation;
    op->truncation.now = util_now();
    op->truncate = message.truncate != 0;
    status = op->truncate ? store_write(service->store, open_body, op)
                          : store_read(service->store, open_body, op);
    if (status != TS_OK && op->truncation.why[0]) {
        log_info("open(O_TRUNC) of inode %llu refused: %s", (unsigned long long)message.ino,
                 op->truncation.why);
        snprintf(response->error_text, sizeof(response->error_text), "%s", op->truncation.why);
    }
    if (status == TS_OK && sessions_open(service->sessions, handlers_sender_mount(request),
                                         message.ino, util_monotonic_ms()) < 0)
        status = TS_ERR_NOMEM;
    if (status == TS_OK) {
        inodes_attr(&op->truncation.record, &service->defaults, &reply.attr);
        reply.array_spec = (struct ts_str){.ptr = op->array_spec, .len = (uint32_t)op->array_len};
        status = REPLY_ENCODE(open_rep, &reply, response);
    }
    free(op);
    return status;
}

/* ---- TILE_MAP ----------------------------------------------------------- */

/*
 * Placement of new tiles (DESIGN.md "Placement by live throughput"). The
 * file's policy (its layout, else the cluster's default) decides:
 * - roundrobin: placement_choose(PLACEMENT_ROUNDROBIN);
 * - static: earliest finish time over each node's measured write
 *   throughput and the backlog meta keeps for it (nodes.h);
 * - dynamic: the writer names the node (request->node) and the tiles go
 *   there while it is up and has room, the rest by earliest finish time; a
 *   request naming no node (a writer that does not schedule itself) is
 *   placed by earliest finish time, the closest meta can come to "the node
 *   that frees a slot first".
 * A named node is honoured for dynamic files only: a file that asked for
 * static or round-robin placement gets it whoever writes it.
 *
 * The snapshot of the nodes is built inside the transaction (from the
 * nodes table and the in-memory backlog) and carries every tile placed by
 * the request; once the transaction has committed, the handler stores the
 * grown backlogs back, so an aborted request leaves no trace.
 */

struct tile_map_op {
    struct service *service;
    const struct ts_tile_map_req *request;
    struct ts_writer records;
    int64_t now_ms;
    /* placement snapshot, built on the first missing tile, freed by the handler */
    struct placement_node *candidates;
    size_t candidate_count;
    bool have_candidates;
    struct arraylayout *array; /* an array file's layout, freed by the handler */
    uint64_t size;             /* the file's size, for the reply */
    bool under_replicated_logged; /* one log line per request */
    uint32_t writer_machine; /* candidates' machine number of the asking client's; 0: none */
    uint32_t token_rights;   /* what the holders' tile tokens grant (readsource_grant) */
};

/* The registered nodes: up or not, free space, speed and backlog as of now. */
static int tile_map_candidates(struct store_txn *txn, struct tile_map_op *op)
{
    struct nodes_record *nodes;
    size_t count;
    int err = nodes_list(txn, &nodes, &count);
    if (err < 0)
        return reply_store_status(err);
    op->candidates = calloc(count ? count : 1, sizeof(*op->candidates));
    if (!op->candidates) {
        free(nodes);
        return TS_ERR_NOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        struct placement_node *candidate = &op->candidates[i];
        candidate->id = nodes[i].id;
        /* A draining or removed node takes no new tiles (NODE_ADMIN). */
        candidate->up = nodes[i].admin == TS_NODE_ACTIVE &&
                        nodes_live_is_up(op->service->live, nodes[i].id, op->now_ms);
        candidate->free_bytes = nodes[i].free_bytes;
        candidate->write_bytes_per_sec = nodes[i].write_bytes_per_sec;
        candidate->steady_write_bytes_per_sec =
            nodes_live_steady_write(op->service->live, nodes[i].id);
        candidate->backlog_bytes = nodes_live_backlog(op->service->live, nodes[i].id, op->now_ms);
        /* Nodes of one machine share a number; a node that named none is a machine of its own. */
        candidate->machine = (uint32_t)i + 1;
        for (size_t j = 0; j < i && nodes[i].machine[0] != '\0'; j++) {
            if (strcmp(nodes[j].machine, nodes[i].machine) == 0) {
                candidate->machine = op->candidates[j].machine;
                break;
            }
        }
        struct ts_str writer = op->request->machine;
        if (op->writer_machine == 0 && writer.len > 0 && strlen(nodes[i].machine) == writer.len &&
            memcmp(nodes[i].machine, writer.ptr, writer.len) == 0)
            op->writer_machine = candidate->machine;
    }
    op->candidate_count = count;
    op->have_candidates = true;
    free(nodes);
    return TS_OK;
}

/*
 * Gives a newly placed tile (its primary in *entry) the file's further
 * replicas, up to copies - 1 of them, each with a version of its own
 * (placement_choose_replicas: distinct machines, then distinct nodes). Too
 * few usable nodes leave the tile under-replicated; the write goes on.
 */
/*
 * The writer's own datanode as a tile's second holder when the primary is
 * on another machine: the mount sends every holder the bytes itself
 * (fan-out), so a local holder costs its link nothing and the tile crosses
 * it once, as a chain from the client through the holders would. The
 * usable node of the writer's machine with the least backlog; 0 if none.
 */
static uint32_t tile_map_writer_node(const struct tile_map_op *op, uint32_t primary,
                                     uint32_t tile_bytes)
{
    const struct placement_node *best = NULL;
    if (op->writer_machine == 0)
        return 0;
    for (size_t i = 0; i < op->candidate_count; i++) {
        const struct placement_node *node = &op->candidates[i];
        if (node->id == primary && node->machine == op->writer_machine)
            return 0; /* the primary is local already */
    }
    for (size_t i = 0; i < op->candidate_count; i++) {
        const struct placement_node *node = &op->candidates[i];
        if (node->machine != op->writer_machine || !node->up || node->id == primary ||
            node->free_bytes < tile_bytes)
            continue;
        if (!best || node->backlog_bytes < best->backlog_bytes)
            best = node;
    }
    return best ? best->id : 0;
}

static int tile_map_replicate(struct store_txn *txn, struct tile_map_op *op, uint64_t ino,
                              uint64_t tile, uint32_t tile_bytes, uint32_t copies,
                              const struct tiles_entry *entry)
{
    uint32_t chosen[TS_MAX_COPIES];
    uint32_t held[2] = {entry->node, 0};
    size_t held_count = 1;
    int found = 0;
    if (copies <= 1)
        return TS_OK;
    if (copies > TS_MAX_COPIES)
        copies = TS_MAX_COPIES;
    held[1] = tile_map_writer_node(op, entry->node, tile_bytes);
    if (held[1] != 0) {
        chosen[found++] = held[1];
        held_count = 2;
    }
    int more = placement_choose_replicas(op->candidates, op->candidate_count, ino, tile,
                                         tile_bytes, held, held_count, copies - 1 - found,
                                         chosen + found);
    if (more < 0)
        return TS_ERR_NOMEM;
    found += more;
    if ((uint32_t)found < copies - 1 && !op->under_replicated_logged) {
        op->under_replicated_logged = true;
        log_warn("inode %llu tile %llu: %d of %u holders placed (too few datanodes up with "
                 "room); the tile is under-replicated",
                 (unsigned long long)ino, (unsigned long long)tile, found + 1, copies);
    }
    for (int i = 0; i < found; i++) {
        struct copies_entry replica = {tile, chosen[i], 0};
        int err = store_counter_take(txn, STORE_NEXT_VERSION, &replica.version);
        if (err == 0)
            err = copies_put(txn, ino, &replica);
        if (err < 0)
            return reply_store_status(err);
    }
    return TS_OK;
}

/* Places tile `tile` of the file on its nodes (primary and replicas) and records it. */
static int tile_map_allocate(struct store_txn *txn, struct tile_map_op *op,
                             const struct inodes_record *record, uint64_t tile,
                             struct tiles_entry *entry)
{
    /* An array file's tiles differ in size: the placement model weighs each. */
    uint32_t tile_bytes =
        op->array ? arraylayout_tile_bytes(op->array, tile) : record->attr.tile_bytes;
    uint32_t placement =
        record->attr.placement ? record->attr.placement : op->service->defaults.placement;
    uint32_t node = 0;
    int status;
    int err;

    if (!op->have_candidates) {
        status = tile_map_candidates(txn, op);
        if (status != TS_OK)
            return status;
    }
    /*
     * An array file's tile goes to its disk chunk's home (arrayhome.h): the
     * mesh spreads the chunks over distinct machines, then distinct nodes,
     * whoever writes them; a home that is down, full or slow sends the
     * tile where static allocation finishes it earliest.
     */
    if (op->array)
        err = arrayhome_place(op->candidates, op->candidate_count, op->array, record->attr.ino,
                              tile, tile_bytes, &node);
    else if (placement == TS_PLACEMENT_DYNAMIC && op->request->node != 0)
        err = placement_choose_named(op->request->node, op->candidates, op->candidate_count,
                                     record->attr.ino, tile, tile_bytes, 1, &node);
    else
        err = placement_choose(
            placement == TS_PLACEMENT_ROUNDROBIN ? PLACEMENT_ROUNDROBIN : PLACEMENT_STATIC,
            op->candidates, op->candidate_count, record->attr.ino, tile, tile_bytes, 1, &node);
    if (err == -ENOENT || err == -EINVAL)
        return TS_ERR_INVAL; /* a node id meta never registered, a tile the array lacks */
    if (err == -ENOSPC)
        return TS_ERR_NOSPC;
    if (err == -ENOMEM)
        return TS_ERR_NOMEM;
    if (err < 0)
        return TS_ERR_NONODES;
    entry->node = node;
    err = store_counter_take(txn, STORE_NEXT_VERSION, &entry->version);
    if (err == 0)
        err = tiles_put(txn, record->attr.ino, tile, entry);
    if (err < 0)
        return reply_store_status(err);
    struct layout layout;
    inodes_layout(record, &op->service->defaults, &layout);
    return tile_map_replicate(txn, op, record->attr.ino, tile, tile_bytes, layout.copies, entry);
}

static int tile_map_body(struct store_txn *txn, void *arg)
{
    struct tile_map_op *op = arg;
    const struct ts_tile_map_req *request = op->request;
    struct inodes_record record;
    struct readsource *source;
    uint64_t allocated = 0;
    int status;
    int err;

    op->records.len = 0;
    op->records.failed = false;
    /* A rerun (map growth) starts from a fresh snapshot. */
    free(op->candidates);
    op->candidates = NULL;
    op->have_candidates = false;
    free(op->array);
    op->array = NULL;
    status = handlers_load_inode(txn, request->ino, &record);
    if (status != TS_OK)
        return status;
    if (!S_ISREG(record.attr.mode) || record.attr.tile_bytes == 0)
        return TS_ERR_INVAL;
    op->size = record.attr.size;
    if (record.attr.flags & TS_ATTR_ARRAY) {
        /* An array has its tiles, whatever the file's size so far. */
        status = handlers_xattrs_array_load(txn, request->ino, &op->array);
        if (status != TS_OK)
            return status;
        if (request->first + request->count > arraylayout_tile_count(op->array))
            return TS_ERR_FBIG;
    } else if (request->first + (request->count - 1) >
               (uint64_t)INT64_MAX / record.attr.tile_bytes) {
        /* The last tile must hold bytes below the largest file size. */
        return TS_ERR_FBIG;
    }
    /* Tiles are placed first: the records list every holder of each. */
    for (uint32_t i = 0; request->allocate && i < request->count && status == TS_OK; i++) {
        struct tiles_entry entry = {0, 0, 0}; /* a new tile: no flags yet */
        err = tiles_get(txn, request->ino, request->first + i, &entry);
        if (err == -ENOENT) {
            status = tile_map_allocate(txn, op, &record, request->first + i, &entry);
            allocated++;
        } else if (err < 0) {
            status = reply_store_status(err);
        }
    }
    if (status != TS_OK)
        return status;
    /* The replicas and the nodes, for each record's holders in read order. */
    err = readsource_load(txn, op->service->live, op->now_ms, request->ino, request->first,
                          request->count, request->machine, &source);
    if (err < 0)
        return reply_store_status(err);
    readsource_grant(source, op->token_rights);
    for (uint32_t i = 0; i < request->count && status == TS_OK; i++) {
        uint64_t tile = request->first + i;
        struct tiles_entry entry = {0, 0, 0};
        err = tiles_get(txn, request->ino, tile, &entry);
        if (err < 0 && err != -ENOENT)
            status = reply_store_status(err);
        readsource_record(source, tile, &entry, &op->records);
    }
    readsource_free(&source);
    if (status != TS_OK)
        return status;
    if (op->records.failed)
        return TS_ERR_INTERNAL;
    if (allocated == 0)
        return TS_OK;
    record.tiles_allocated += allocated;
    return reply_store_status(inodes_put(txn, &record));
}

int handlers_files_tile_map(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_tile_map_req message;
    struct tile_map_op op = {.service = service, .request = &message};
    struct ts_tile_map_rep reply;
    int status;

    if (ts_tile_map_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.count == 0 || message.count > TS_MAX_TILES_PER_MAP)
        return TS_ERR_INVAL;
    if (message.first > UINT64_MAX - message.count)
        return TS_ERR_FBIG;
    ts_writer_init(&op.records, service->scratch, SERVICE_SCRATCH_BYTES);
    op.now_ms = util_monotonic_ms();
    op.token_rights = handlers_exports_token_rights(service, request->key_user);
    if (message.allocate)
        status = store_write(service->store, tile_map_body, &op);
    else
        status = store_read(service->store, tile_map_body, &op);
    /* Committed: the tiles just placed are now part of their nodes' backlog. */
    for (size_t i = 0; status == TS_OK && i < op.candidate_count; i++)
        nodes_live_set_backlog(service->live, op.candidates[i].id, op.candidates[i].backlog_bytes,
                               op.now_ms);
    free(op.candidates);
    if (status == TS_ERR_FBIG && op.array)
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_MAP: tiles %llu..%llu asked, the array has %llu",
                 (unsigned long long)message.first,
                 (unsigned long long)(message.first + message.count - 1),
                 (unsigned long long)arraylayout_tile_count(op.array));
    free(op.array);
    if (status == TS_ERR_INVAL && message.allocate && message.node != 0)
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_MAP: no datanode %u is registered (or the file is not a regular file)",
                 message.node);
    if (status != TS_OK)
        return status;
    reply.count = message.count;
    reply.size = op.size;
    reply.tiles.ptr = (const char *)service->scratch;
    reply.tiles.len = (uint32_t)op.records.len;
    return REPLY_ENCODE(tile_map_rep, &reply, response);
}

/* ---- COMMIT ------------------------------------------------------------- */

struct commit_op {
    const struct ts_commit_req *request;
    struct timespec now;
    struct inodes_record record;
};

static int commit_body(struct store_txn *txn, void *arg)
{
    struct commit_op *op = arg;
    const struct ts_commit_req *request = op->request;
    struct ts_attr *attr = &op->record.attr;
    int status = handlers_load_inode(txn, request->ino, &op->record);
    if (status != TS_OK)
        return status;
    if (!S_ISREG(attr->mode))
        return TS_ERR_INVAL;
    if ((attr->flags & TS_ATTR_ARRAY) && request->min_size > attr->size) {
        struct arraylayout *layout;
        status = handlers_xattrs_array_load(txn, request->ino, &layout);
        if (status != TS_OK)
            return status;
        uint64_t array_bytes = layout->array_bytes;
        free(layout);
        if (request->min_size > array_bytes)
            return TS_ERR_FBIG; /* the client refuses such writes; a bug if it gets here */
    }
    if (request->min_size > attr->size)
        attr->size = request->min_size;
    if (request->mtime_sec != 0) {
        attr->mtime_sec = attr->ctime_sec = request->mtime_sec;
        attr->mtime_nsec = attr->ctime_nsec = request->mtime_nsec;
    }
    return reply_store_status(inodes_put(txn, &op->record));
}

int handlers_files_commit(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_commit_req message;
    struct commit_op op = {.request = &message};
    struct ts_attr_rep reply;
    int status;

    if (ts_commit_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.min_size > INT64_MAX)
        return TS_ERR_FBIG;
    if (message.mtime_nsec >= HANDLERS_NSEC_PER_SEC)
        return TS_ERR_INVAL;
    op.now = util_now();
    status = store_write(service->store, commit_body, &op);
    if (status != TS_OK)
        return status;
    if (message.sync && store_sync(service->store, true) < 0)
        return TS_ERR_IO;
    inodes_attr(&op.record, &service->defaults, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

/* ---- PUNCH -------------------------------------------------------------- */

struct punch_op {
    const struct ts_punch_req *request;
    struct inodes_record record;
    struct timespec now;
};

static int punch_body(struct store_txn *txn, void *arg)
{
    struct punch_op *op = arg;
    const struct ts_punch_req *request = op->request;
    struct ts_attr *attr = &op->record.attr;
    uint64_t dropped = 0;
    int status = handlers_load_inode(txn, request->ino, &op->record);
    if (status != TS_OK)
        return status;
    if (!S_ISREG(attr->mode))
        return TS_ERR_INVAL;
    if (attr->flags & TS_ATTR_ARRAY)
        return TS_ERR_NOTSUP;
    int err =
        tiles_drop_range(txn, request->ino, request->first_tile, request->last_tile, &dropped);
    if (err < 0)
        return reply_store_status(err);
    op->record.tiles_allocated =
        op->record.tiles_allocated > dropped ? op->record.tiles_allocated - dropped : 0;
    handlers_time_set(&attr->mtime_sec, &attr->mtime_nsec, op->now);
    handlers_time_set(&attr->ctime_sec, &attr->ctime_nsec, op->now);
    return reply_store_status(inodes_put(txn, &op->record));
}

int handlers_files_punch(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_punch_req message;
    struct punch_op op = {.request = &message};
    struct ts_attr_rep reply;

    if (ts_punch_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.first_tile > message.last_tile)
        return TS_ERR_INVAL;
    op.now = util_now();
    int status = store_write(service->store, punch_body, &op);
    if (status != TS_OK)
        return status;
    inodes_attr(&op.record, &service->defaults, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}
