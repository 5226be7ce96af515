/*
 * @file handlers_nodes.c
 * The datanodes as meta sees them: HEARTBEAT (a datanode registers, reports
 * its space and speed, confirms deleted tiles and learns which to delete),
 * NODE_LIST (the registry with liveness, for the tools) and STATFS (the
 * space of the nodes that are up). Same shape as every handler
 * (handlers.c); liveness and backlog are in memory (nodes.h) and change
 * only after the transaction committed.
 */
#include "handlers_nodes.h"

#include "copies.h"
#include "diskspace.h"
#include "garbage.h"
#include "handlers_i.h"
#include "inodes.h"
#include "log.h"
#include "nodes.h"
#include "replicaset.h"
#include "reply.h"
#include "service.h"
#include "status.h"
#include "store.h"
#include "tiles.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- STATFS ------------------------------------------------------------- */

struct statfs_op {
    struct service *service;
    struct ts_statfs_rep reply;
};

/* The up nodes' space, a disk several of them share counted once (diskspace.h). */
static int statfs_body(struct store_txn *txn, void *arg)
{
    struct statfs_op *op = arg;
    struct nodes_record *nodes;
    size_t count;
    int64_t now_ms = util_monotonic_ms();
    int err = nodes_list(txn, &nodes, &count);
    if (err < 0)
        return reply_store_status(err);
    memset(&op->reply, 0, sizeof(op->reply));
    struct diskspace_node *space = calloc(count ? count : 1, sizeof(*space));
    if (!space) {
        free(nodes);
        return TS_ERR_NOMEM;
    }
    size_t up = 0;
    for (size_t i = 0; i < count; i++) {
        if (!nodes_live_is_up(op->service->live, nodes[i].id, now_ms))
            continue;
        struct nodes_disk disk;
        nodes_live_disk_get(op->service->live, nodes[i].id, &disk);
        space[up++] = (struct diskspace_node){.machine = nodes[i].machine,
                                              .disk_id = disk.id,
                                              .disk_bytes = disk.bytes,
                                              .disk_free = disk.free,
                                              .capacity = nodes[i].capacity,
                                              .free_bytes = nodes[i].free_bytes};
    }
    struct diskspace_total total;
    diskspace_sum(space, up, &total);
    op->reply.total_bytes = total.capacity;
    op->reply.free_bytes = total.free_bytes;
    op->reply.nodes_up = up;
    free(space);
    free(nodes);
    return reply_store_status(inodes_count(txn, &op->reply.files));
}

int handlers_nodes_statfs(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct service *service = ctx;
    struct statfs_op op = {.service = service};
    int status;

    if (!handlers_payload_empty(request))
        return reply_bad_message(response, request->header.type);
    status = store_read(service->store, statfs_body, &op);
    if (status != TS_OK)
        return status;
    return REPLY_ENCODE(statfs_rep, &op.reply, response);
}

/* ---- NODE_LIST ---------------------------------------------------------- */

struct node_list_op {
    struct service *service;
    struct ts_writer records;
    uint32_t count;
};

static int node_list_body(struct store_txn *txn, void *arg)
{
    struct node_list_op *op = arg;
    struct nodes_record *nodes;
    size_t count;
    int64_t now_ms = util_monotonic_ms();
    int err = nodes_list(txn, &nodes, &count);
    if (err < 0)
        return reply_store_status(err);
    for (size_t i = 0; i < count; i++) {
        int64_t age = nodes_live_age_ms(op->service->live, nodes[i].id, now_ms);
        bool up = nodes_live_is_up(op->service->live, nodes[i].id, now_ms);
        struct nodes_integrity integrity;
        nodes_live_integrity_get(op->service->live, nodes[i].id, &integrity);
        struct ts_node_list_rec record = {.id = nodes[i].id,
                                          .state = up ? TS_NODE_UP : TS_NODE_DOWN,
                                          .capacity = nodes[i].capacity,
                                          .free_bytes = nodes[i].free_bytes,
                                          .used_bytes = nodes[i].used_bytes,
                                          .tiles = nodes[i].tiles,
                                          .heartbeat_age_ms = age < 0 ? UINT64_MAX : (uint64_t)age,
                                          .read_bytes_per_sec = nodes[i].read_bytes_per_sec,
                                          .write_bytes_per_sec = nodes[i].write_bytes_per_sec,
                                          .queue_depth = nodes[i].queue_depth,
                                          .throttle_bytes_per_sec = nodes[i].throttle_bytes_per_sec,
                                          .machine = ts_str_of(nodes[i].machine),
                                          .address = ts_str_of(nodes[i].address),
                                          .admin = nodes[i].admin,
                                          .corrupt_files = integrity.corrupt_files,
                                          .scrub_running = integrity.scrub_running,
                                          .scrub_files = integrity.scrub_files,
                                          .scrub_bytes = integrity.scrub_bytes,
                                          .scrub_corrupt = integrity.scrub_corrupt,
                                          .scrub_rate = integrity.scrub_rate,
                                          .scrub_passes = integrity.scrub_passes};
        struct nodes_disk disk;
        nodes_live_disk_get(op->service->live, nodes[i].id, &disk);
        record.disk_id = disk.id;
        record.disk_bytes = disk.bytes;
        record.disk_free = disk.free;
        ts_node_list_rec_write(&op->records, &record);
    }
    op->count = (uint32_t)count;
    free(nodes);
    return op->records.failed ? TS_ERR_TOOBIG : TS_OK;
}

int handlers_nodes_list(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    struct service *service = ctx;
    struct node_list_op op = {.service = service};
    struct ts_node_list_rep reply;
    int status;

    if (!handlers_payload_empty(request))
        return reply_bad_message(response, request->header.type);
    ts_writer_init(&op.records, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_read(service->store, node_list_body, &op);
    if (status != TS_OK)
        return status;
    reply.count = op.count;
    reply.nodes.ptr = (const char *)service->scratch;
    reply.nodes.len = (uint32_t)op.records.len;
    return REPLY_ENCODE(node_list_rep, &reply, response);
}

/* ---- HEARTBEAT ---------------------------------------------------------- */

struct heartbeat_op {
    const struct ts_heartbeat_req *request;
    const char *key_user; /* the sender's key, "ROLE:NAME" ("" without CURVE) */
    struct ts_writer garbage;
    uint32_t garbage_count;
    uint32_t node_id;  /* the id the node has after this heartbeat */
    uint32_t replaced; /* a new node took the address of this one (0: none) */
    bool reclaimed;    /* a node without node.id was known by its identity */
    uint32_t stored;   /* tiles its `created` records marked TS_TILE_STORED */
    uint32_t corrupt_dropped; /* corrupt replicas it reported that left their sets */
    uint32_t corrupt_kept;    /* ... and those kept: their tile's last holder */
    char why[256];     /* why the heartbeat was refused (fits an error reply) */
};

/*
 * The corrupt tile files the node reports (HEARTBEAT `corrupt`) leave their
 * tiles' replica sets, garbage-queued (so the node deletes them) and left
 * to meta's repairer to make again from a good replica. A tile's last
 * holder stays: a read of it fails with EIO rather than serve bad bytes,
 * and `tessera fsck --deep` names it. 0 or a negative errno.
 */
static int heartbeat_drop_corrupt(struct store_txn *txn, struct heartbeat_op *op)
{
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, op->request->corrupt.ptr, op->request->corrupt.len);
    for (uint32_t i = 0; i < op->request->corrupt_count; i++) {
        struct ts_tile_file_rec file;
        bool dropped = false;
        (void)ts_tile_file_rec_read(&cursor, &file); /* the handler checked the length */
        int err = replicaset_drop(txn, file.ino, file.tile, op->node_id, file.version, &dropped);
        if (err == -EBUSY) {
            op->corrupt_kept++;
            continue;
        }
        if (err < 0)
            return err;
        op->corrupt_dropped += dropped;
    }
    return 0;
}

/*
 * Whether a heartbeat of a registered node may speak for it: the data
 * directory must be the one it registered with. A record without an
 * incarnation (written before identities) takes the first one it is given.
 */
static bool heartbeat_identity_matches(const struct nodes_record *known, uint64_t incarnation)
{
    return known->incarnation == 0 || known->incarnation == incarnation;
}

/*
 * Whether key_user may speak for a registered node: the key it registered
 * with, or any when either side has none (a cluster without keys, a record
 * from before keys, which the first keyed heartbeat then binds). A node id
 * cannot be taken over by another key: the refusal is written into why.
 */
static bool heartbeat_key_matches(const struct nodes_record *known, const char *key_user,
                                  const struct ts_heartbeat_req *request, char *why, size_t cap)
{
    if (known->key_user[0] == '\0' || key_user[0] == '\0' || strcmp(known->key_user, key_user) == 0)
        return true;
    snprintf(why, cap,
             "a heartbeat for node %u (address %.*s) came with key %s, but node %u registered "
             "with key %s: a node id cannot be taken over",
             known->id, (int)request->address.len, request->address.ptr, key_user, known->id,
             known->key_user);
    return false;
}

/*
 * For a node registering anew (no node.id): into *same the registered node
 * whose data directory it has (its identity), which it then is again, its
 * node.id lost; else into *previous the registered node that had its
 * address, if any. A new directory does not hold that node's tiles: only
 * the log says so, the old node stays registered (down). 0 = none.
 */
static int heartbeat_known_directory(struct store_txn *txn, const struct ts_heartbeat_req *request,
                                     uint32_t *same, uint32_t *previous)
{
    struct nodes_record *nodes = NULL;
    size_t count = 0;
    *same = 0;
    *previous = 0;
    int err = nodes_list(txn, &nodes, &count);
    if (err < 0)
        return err;
    for (size_t i = 0; i < count; i++) {
        if (request->incarnation != 0 && nodes[i].incarnation == request->incarnation)
            *same = nodes[i].id;
        if (strlen(nodes[i].address) == request->address.len &&
            memcmp(nodes[i].address, request->address.ptr, request->address.len) == 0)
            *previous = nodes[i].id;
    }
    free(nodes);
    if (*same != 0)
        *previous = 0;
    return 0;
}

/*
 * Marks the tiles of `created` records (TS_REC_TILE_FILE) that node holds, as primary or copy at
 * that version, TS_TILE_STORED. Records of tiles it no longer holds (moved, dropped, deleted since)
 * are skipped. *stored counts the tiles marked now.
 */
static int heartbeat_mark_stored(struct store_txn *txn, uint32_t node, struct ts_str created,
                                 uint32_t count, uint32_t *stored)
{
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, created.ptr, created.len);
    *stored = 0;
    for (uint32_t i = 0; i < count; i++) {
        struct ts_tile_file_rec file;
        (void)ts_tile_file_rec_read(&cursor, &file); /* the handler checked the length */
        uint64_t ino = file.ino;
        uint64_t tile = file.tile;
        uint64_t version = file.version;
        uint64_t copy_version = 0;
        struct tiles_entry primary;
        int err = tiles_get(txn, ino, tile, &primary);
        if (err == -ENOENT || (err == 0 && (primary.flags & TS_TILE_STORED)))
            continue;
        if (err < 0)
            return err;
        bool holds = primary.node == node && primary.version == version;
        if (!holds) {
            err = copies_get(txn, ino, tile, node, &copy_version);
            if (err < 0 && err != -ENOENT)
                return err;
            holds = err == 0 && copy_version == version;
        }
        if (!holds)
            continue;
        primary.flags |= TS_TILE_STORED;
        err = tiles_put(txn, ino, tile, &primary);
        if (err < 0)
            return err;
        (*stored)++;
    }
    return 0;
}

/*
 * A fresh node id that no registered node has. Ids are u32 on the wire; a
 * node that adopted a huge id may push the counter past them, so it wraps
 * to 1 and skips the ids in use.
 */
static int heartbeat_new_id(struct store_txn *txn, uint32_t *id)
{
    for (uint32_t tries = 0; tries < HANDLERS_WALK_MAX; tries++) {
        struct nodes_record existing;
        uint64_t next;
        int err = store_counter_take(txn, STORE_NEXT_NODE_ID, &next);
        if (err < 0)
            return reply_store_status(err);
        if (next == 0 || next > UINT32_MAX) {
            err = store_counter_set(txn, STORE_NEXT_NODE_ID, 1);
            if (err < 0)
                return reply_store_status(err);
            continue;
        }
        err = nodes_get(txn, (uint32_t)next, &existing);
        if (err == -ENOENT) {
            *id = (uint32_t)next;
            return TS_OK;
        }
        if (err < 0)
            return reply_store_status(err);
    }
    log_error("no free datanode id found");
    return TS_ERR_INTERNAL;
}

static int heartbeat_body(struct store_txn *txn, void *arg)
{
    struct heartbeat_op *op = arg;
    const struct ts_heartbeat_req *request = op->request;
    struct nodes_record record;
    struct ts_cursor deleted;
    int status;
    int err;

    op->garbage.len = 0;
    op->garbage.failed = false;
    op->node_id = request->node_id;
    op->replaced = 0;
    op->stored = 0;
    op->why[0] = '\0';
    op->reclaimed = false;
    if (op->node_id == 0) {
        uint32_t same = 0;
        err = heartbeat_known_directory(txn, request, &same, &op->replaced);
        if (err < 0)
            return reply_store_status(err);
        if (same != 0) {
            err = nodes_get(txn, same, &record);
            if (err < 0)
                return reply_store_status(err);
            if (!heartbeat_key_matches(&record, op->key_user, request, op->why, sizeof(op->why)))
                return TS_ERR_PERM;
        }
        op->reclaimed = same != 0;
        op->node_id = same;
        if (!op->reclaimed) {
            status = heartbeat_new_id(txn, &op->node_id);
            if (status != TS_OK)
                return status;
        }
    } else {
        err = nodes_get(txn, op->node_id, &record);
        if (err < 0 && err != -ENOENT)
            return reply_store_status(err);
        if (err == 0 &&
            !heartbeat_key_matches(&record, op->key_user, request, op->why, sizeof(op->why)))
            return TS_ERR_PERM;
        if (err == 0 && !heartbeat_identity_matches(&record, request->incarnation)) {
            snprintf(op->why, sizeof(op->why),
                     "data directory %016llx of the datanode at %.*s is not the one node %u "
                     "registered with (%016llx): wiped or replaced, node %u's tiles are not in "
                     "it; restore it, or delete its node.id to join as a new node",
                     (unsigned long long)request->incarnation, (int)request->address.len,
                     request->address.ptr, op->node_id, (unsigned long long)record.incarnation,
                     op->node_id);
            return TS_ERR_STALE;
        }
        /* An id meta may not know (its store was wiped): take it as given. */
        err = store_counter_raise(txn, STORE_NEXT_NODE_ID, (uint64_t)op->node_id + 1);
        if (err < 0)
            return reply_store_status(err);
    }
    /* The operator's drain or removal outlives what the node reports. */
    uint32_t admin = TS_NODE_ACTIVE;
    char key_user[NODES_MAX_KEY_USER + 1] = "";
    err = nodes_get(txn, op->node_id, &record);
    if (err < 0 && err != -ENOENT)
        return reply_store_status(err);
    if (err == 0) {
        admin = record.admin;
        memcpy(key_user, record.key_user, sizeof(key_user));
    }
    /* The node is bound to the first key it heartbeats with (checked above). */
    if (key_user[0] == '\0' && strlen(op->key_user) <= NODES_MAX_KEY_USER)
        snprintf(key_user, sizeof(key_user), "%s", op->key_user);
    memset(&record, 0, sizeof(record));
    record.id = op->node_id;
    record.admin = admin;
    memcpy(record.key_user, key_user, sizeof(record.key_user));
    record.incarnation = request->incarnation;
    ts_str_copy(request->machine, record.machine, sizeof(record.machine));
    ts_str_copy(request->address, record.address, sizeof(record.address));
    record.capacity = request->capacity;
    record.free_bytes = request->free_bytes;
    record.used_bytes = request->used_bytes;
    record.tiles = request->tiles;
    record.read_bytes_per_sec = request->read_bytes_per_sec;
    record.write_bytes_per_sec = request->write_bytes_per_sec;
    record.queue_depth = request->queue_depth;
    record.throttle_bytes_per_sec = request->throttle_bytes_per_sec;
    err = nodes_put(txn, &record);
    if (err < 0)
        return reply_store_status(err);
    ts_cursor_init(&deleted, request->deleted.ptr, request->deleted.len);
    for (uint32_t i = 0; i < request->deleted_count; i++) {
        struct ts_tile_file_rec file;
        (void)ts_tile_file_rec_read(&deleted, &file); /* the handler checked the length */
        struct garbage_record done = {
            .node = op->node_id, .ino = file.ino, .tile = file.tile, .version = file.version};
        err = garbage_remove(txn, &done);
        if (err < 0 && err != -ENOENT)
            return reply_store_status(err);
    }
    err = heartbeat_mark_stored(txn, op->node_id, request->created, request->created_count,
                                &op->stored);
    if (err < 0)
        return reply_store_status(err);
    op->corrupt_dropped = 0;
    op->corrupt_kept = 0;
    err = heartbeat_drop_corrupt(txn, op);
    if (err < 0)
        return reply_store_status(err);
    err = garbage_list(txn, op->node_id, TS_MAX_GARBAGE, &op->garbage, &op->garbage_count);
    return reply_store_status(err);
}

/*
 * Logs the corrupt tile files a heartbeat reports and counts them for
 * NODE_LIST, with the node's scrub progress (heartbeat_drop_corrupt took
 * them out of their replica sets).
 */
static void heartbeat_note_integrity(struct service *service, uint32_t node_id,
                                     const struct ts_heartbeat_req *message)
{
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, message->corrupt.ptr, message->corrupt.len);
    for (uint32_t i = 0; i < message->corrupt_count; i++) {
        struct ts_tile_file_rec file;
        (void)ts_tile_file_rec_read(&cursor, &file); /* the handler checked the length */
        log_error("datanode %u: tile file %llu.%llu.%llu (inode %llu, tile %llu, version %llu) "
                  "fails its checksums; its bytes are never served",
                  node_id, (unsigned long long)file.ino, (unsigned long long)file.tile,
                  (unsigned long long)file.version, (unsigned long long)file.ino,
                  (unsigned long long)file.tile, (unsigned long long)file.version);
    }
    struct nodes_integrity scrub = {.scrub_running = message->scrub_running,
                                    .scrub_files = message->scrub_files,
                                    .scrub_bytes = message->scrub_bytes,
                                    .scrub_corrupt = message->scrub_corrupt,
                                    .scrub_rate = message->scrub_rate,
                                    .scrub_passes = message->scrub_passes};
    nodes_live_integrity(service->live, node_id, message->corrupt_count, &scrub);
    struct nodes_disk disk = {
        .id = message->disk_id, .bytes = message->disk_bytes, .free = message->disk_free};
    nodes_live_disk(service->live, node_id, &disk);
}

int handlers_nodes_heartbeat(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_heartbeat_req message;
    struct heartbeat_op op = {.request = &message,
                              .key_user = request->key_user ? request->key_user : ""};
    struct ts_heartbeat_rep reply;
    int status;

    if (ts_heartbeat_req_decode(&message, request->payload, request->payload_len) != 0 ||
        (uint64_t)message.deleted_count * ts_tile_file_rec_bytes != message.deleted.len ||
        message.created_count > TS_MAX_CREATED ||
        (uint64_t)message.created_count * ts_tile_file_rec_bytes != message.created.len ||
        message.corrupt_count > TS_MAX_CREATED ||
        (uint64_t)message.corrupt_count * ts_tile_file_rec_bytes != message.corrupt.len)
        return reply_bad_message(response, request->header.type);
    if (message.machine.len > NODES_MAX_TEXT || message.address.len > NODES_MAX_TEXT ||
        message.address.len == 0)
        return TS_ERR_INVAL;
    ts_writer_init(&op.garbage, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_write(service->store, heartbeat_body, &op);
    if (status == TS_ERR_PERM && op.why[0]) {
        log_warn("refused a heartbeat: %s", op.why);
        snprintf(response->error_text, sizeof(response->error_text), "%s", op.why);
    }
    if (status == TS_ERR_STALE && op.why[0]) {
        log_error("refused a heartbeat: %s", op.why);
        snprintf(response->error_text, sizeof(response->error_text), "%s", op.why);
    }
    if (status != TS_OK)
        return status;
    if (op.reclaimed)
        log_warn("the datanode at %.*s has no node.id but the data directory of node %u "
                 "(identity %016llx): it is node %u again",
                 (int)message.address.len, message.address.ptr, op.node_id,
                 (unsigned long long)message.incarnation, op.node_id);
    else if (message.node_id == 0 && op.replaced != 0)
        log_warn("new datanode %u at %.*s, where node %u was: a new data directory (identity "
                 "%016llx), so node %u's tiles are not on it; node %u stays registered, down "
                 "until its own data directory comes back",
                 op.node_id, (int)message.address.len, message.address.ptr, op.replaced,
                 (unsigned long long)message.incarnation, op.replaced, op.replaced);
    else if (message.node_id == 0)
        log_info("new datanode %u at %.*s (data directory identity %016llx)", op.node_id,
                 (int)message.address.len, message.address.ptr,
                 (unsigned long long)message.incarnation);
    if (op.stored > 0)
        log_debug("datanode %u reported %u tiles written", op.node_id, op.stored);
    int64_t now_ms = util_monotonic_ms();
    if (nodes_live_beat(service->live, op.node_id, now_ms) < 0)
        return TS_ERR_NOMEM;
    nodes_live_load(service->live, op.node_id, message.write_bytes_per_sec, message.queue_depth,
                    now_ms);
    nodes_live_steady_note(service->live, op.node_id, message.write_bytes_per_sec,
                           message.throttle_bytes_per_sec, now_ms);
    heartbeat_note_integrity(service, op.node_id, &message);
    int listed = metricsdir_note(service->metrics_dir, TS_METRICS_DATANODE, op.node_id,
                                 message.machine, message.metrics, now_ms);
    if (listed < 0)
        log_debug("datanode %u's metrics endpoint is not listed: %s", op.node_id,
                  strerror(-listed));
    if (op.corrupt_dropped > 0 || op.corrupt_kept > 0)
        log_warn("datanode %u: %u corrupt replicas left their tiles' sets for meta's repairer to "
                 "make again; %u kept, being their tile's last holder (tessera fsck --deep "
                 "names their files)",
                 op.node_id, op.corrupt_dropped, op.corrupt_kept);
    reply.node_id = op.node_id;
    reply.garbage_count = op.garbage_count;
    reply.garbage.ptr = (const char *)service->scratch;
    reply.garbage.len = (uint32_t)op.garbage.len;
    return REPLY_ENCODE(heartbeat_rep, &reply, response);
}
