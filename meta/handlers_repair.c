/*
 * @file handlers_repair.c
 * See handlers_repair.h. REPAIR_SCAN walks the tiles table from a cursor in
 * one read transaction, gathers each tile's replica set (replicaset.h), and
 * asks librarian/repairplan.h what the tile needs; it stops early at
 * max_steps, or after REPAIR_SCAN_TILES tiles, so one request never holds
 * the loop for long on a big map. The drops of replicas whose nodes are
 * down are not steps: nothing there can be frozen or retired, and the
 * executor would wait out a timeout for each; meta drops them itself, in
 * one write transaction after the scan (replicaset_drop: garbage-queued for
 * the node, should it ever come back).
 */
#include "handlers_repair.h"

#include "handlers_i.h"
#include "inodepath.h"
#include "inodes.h"
#include "layout.h"
#include "journal.h"
#include "log.h"
#include "nodes.h"
#include "repairplan.h"
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

#define REPAIR_SCAN_TILES 65536 /* tiles visited per request at most */
#define REPAIR_MAX_DIRECT_DROPS 1024 /* replicas of down nodes dropped per request */

/* ---- NODE_ADMIN ----------------------------------------------------------- */

static int node_admin_body(struct store_txn *txn, void *arg)
{
    const struct ts_node_admin_req *request = arg;
    struct nodes_record record;
    int err = nodes_get(txn, request->node_id, &record);
    if (err == -ENOENT)
        return TS_ERR_NOENT;
    if (err < 0)
        return reply_store_status(err);
    record.admin = request->admin;
    return reply_store_status(nodes_put(txn, &record));
}

int handlers_repair_node_admin(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_node_admin_req message;

    if (ts_node_admin_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.admin != TS_NODE_ACTIVE && message.admin != TS_NODE_DRAINING &&
        message.admin != TS_NODE_REMOVED) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "NODE_ADMIN: admin must be 0 (active), 1 (draining) or 2 (removed), not %u",
                 message.admin);
        return TS_ERR_INVAL;
    }
    int status = store_write(service->store, node_admin_body, &message);
    if (status == TS_ERR_NOENT)
        snprintf(response->error_text, sizeof(response->error_text),
                 "NODE_ADMIN: no datanode has id %u (tessera status lists them)",
                 message.node_id);
    if (status == TS_OK)
        log_info("datanode %u is now %s", message.node_id,
                 message.admin == TS_NODE_ACTIVE     ? "active"
                 : message.admin == TS_NODE_DRAINING ? "draining"
                                                     : "removed");
    return status;
}

/* ---- REPAIR_SCAN ---------------------------------------------------------- */

struct repair_scan_op {
    struct service *service;
    const struct ts_repair_scan_req *request;
    int64_t now_ms;
    struct repairplan_node *nodes;
    size_t node_count;
    struct nodes_record *records; /* nodes[i].machine points into these */
    struct ts_writer steps;
    uint32_t step_count;
    uint32_t visited;
    bool stopped; /* ended before the map's end */
    uint64_t next_ino, next_tile;
    /* the inode of the tiles being visited */
    uint64_t ino;
    bool have_inode;
    uint32_t copies;
    uint64_t tile_bytes;
    struct store_txn *txn; /* the scan's, for the visitor */
    /* replicas of down nodes to drop after the scan */
    struct repair_direct_drop {
        uint64_t ino, tile, version;
        uint32_t node;
    } drops[REPAIR_MAX_DIRECT_DROPS];
    size_t drop_count;
};

static int repair_scan_nodes(struct store_txn *txn, struct repair_scan_op *op)
{
    int err = nodes_list(txn, &op->records, &op->node_count);
    if (err < 0)
        return err;
    op->nodes = calloc(op->node_count ? op->node_count : 1, sizeof(*op->nodes));
    if (!op->nodes)
        return -ENOMEM;
    for (size_t i = 0; i < op->node_count; i++) {
        const struct nodes_record *record = &op->records[i];
        struct repairplan_node *node = &op->nodes[i];
        int64_t age = nodes_live_age_ms(op->service->live, record->id, op->now_ms);
        node->id = record->id;
        node->up = nodes_live_is_up(op->service->live, record->id, op->now_ms);
        node->admin = record->admin;
        /* Not heard from since meta started: down since the start, at most. */
        node->down_ms = age >= 0 ? age : op->now_ms - op->service->started_ms;
        node->free_bytes = record->free_bytes;
        node->read_bytes_per_sec = record->read_bytes_per_sec;
        node->write_bytes_per_sec = record->write_bytes_per_sec;
        node->machine = record->machine;
    }
    return 0;
}

/* The tile (ino, tile): its health counted, its steps written. */
static int repair_scan_tile(struct store_txn *txn, struct repair_scan_op *op, uint64_t ino,
                            uint64_t tile)
{
    struct replicaset set;
    struct repairplan_holder holders[TS_MAX_HOLDERS];
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    struct journal_entry move;
    int err;

    if (!op->have_inode || op->ino != ino) {
        struct inodes_record inode;
        op->ino = ino;
        err = inodes_get(txn, ino, &inode);
        if (err < 0 && err != -ENOENT)
            return err;
        op->have_inode = err == 0;
        if (op->have_inode) {
            struct layout layout;
            inodes_layout(&inode, &op->service->defaults, &layout);
            op->copies = layout.copies;
            op->tile_bytes = layout.tile_bytes;
        }
    }
    if (!op->have_inode)
        return 0; /* tiles of an inode being deleted: its garbage goes anyway */
    err = replicaset_get(txn, ino, tile, &set);
    if (err == -ENOENT)
        return 0;
    if (err < 0)
        return err;
    for (size_t i = 0; i < set.count; i++)
        holders[i] = (struct repairplan_holder){set.holders[i].node, set.holders[i].version};
    struct repairplan_tile planned = {.holders = holders,
                                      .holder_count = set.count,
                                      .copies = op->copies,
                                      .tile_bytes = op->tile_bytes};
    repairplan_tile(op->nodes, op->node_count, &planned,
                    (int64_t)op->request->replace_after_ms, steps, &verdict);
    repairpass_count(&op->service->repair_pass.running, ino, op->tile_bytes, verdict.health);
    err = journal_get(txn, ino, tile, &move);
    if (err < 0 && err != -ENOENT)
        return err;
    if (err == 0)
        return 0; /* a relocation owns the tile now; the next pass sees it again */
    for (size_t i = 0; i < verdict.steps; i++) {
        if (steps[i].kind == REPAIRPLAN_DROP && steps[i].node_down) {
            if (op->drop_count < REPAIR_MAX_DIRECT_DROPS)
                op->drops[op->drop_count++] = (struct repair_direct_drop){
                    ino, tile, steps[i].version, steps[i].from_node};
            continue;
        }
        struct ts_repair_step_rec record = {.kind = (uint32_t)steps[i].kind,
                                            .ino = ino,
                                            .tile = tile,
                                            .version = steps[i].version,
                                            .from_node = steps[i].from_node,
                                            .to_node = steps[i].to_node,
                                            .tile_bytes = op->tile_bytes};
        ts_repair_step_rec_write(&op->steps, &record);
        op->step_count++;
        if (steps[i].kind == REPAIRPLAN_COPY) {
            op->service->repair_pass.running.steps++;
            op->service->repair_pass.running.steps_bytes += op->tile_bytes;
        }
    }
    return op->steps.failed ? -ENOBUFS : 0;
}

static int repair_scan_visit(void *arg, const MDB_val *key, const MDB_val *value)
{
    struct repair_scan_op *op = arg;
    (void)value;

    if (key->mv_size != 16)
        return -EIO;
    uint64_t ino = store_be64_get(key->mv_data);
    uint64_t tile = store_be64_get((const uint8_t *)key->mv_data + 8);
    if (op->step_count + REPAIRPLAN_MAX_STEPS > op->request->max_steps ||
        op->drop_count + REPAIRPLAN_MAX_STEPS > REPAIR_MAX_DIRECT_DROPS ||
        op->visited >= REPAIR_SCAN_TILES) {
        op->stopped = true;
        return 1;
    }
    int err = repair_scan_tile(op->txn, op, ino, tile);
    if (err < 0)
        return err;
    op->visited++;
    op->next_ino = ino;
    op->next_tile = tile;
    return 0;
}

static int repair_scan_body(struct store_txn *txn, void *arg)
{
    struct repair_scan_op *op = arg;
    uint8_t start[16];
    uint64_t ino = op->request->after_ino;
    uint64_t tile = op->request->after_tile;

    /* Re-runnable: every output is reset. */
    op->steps.len = 0;
    op->steps.failed = false;
    op->step_count = 0;
    op->drop_count = 0;
    op->visited = 0;
    op->stopped = false;
    op->have_inode = false;
    op->txn = txn;
    if (!op->nodes) {
        int err = repair_scan_nodes(txn, op);
        if (err < 0)
            return reply_store_status(err);
    }
    /* The first key after (ino, tile); (0, 0) is before every tile. */
    if (ino != 0 || tile != 0) {
        if (tile == UINT64_MAX) {
            ino++;
            tile = 0;
        } else {
            tile++;
        }
    }
    store_be64_put(start, ino);
    store_be64_put(start + 8, tile);
    int err = store_scan(txn, STORE_TILES, start, sizeof(start), repair_scan_visit, op);
    if (err < 0)
        return reply_store_status(err);
    return TS_OK;
}

static int repair_drops_body(struct store_txn *txn, void *arg)
{
    struct repair_scan_op *op = arg;
    for (size_t i = 0; i < op->drop_count; i++) {
        const struct repair_direct_drop *drop = &op->drops[i];
        bool dropped = false;
        int err = replicaset_drop(txn, drop->ino, drop->tile, drop->node, drop->version, &dropped);
        if (err < 0 && err != -EBUSY)
            return reply_store_status(err);
    }
    return TS_OK;
}

int handlers_repair_scan(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_repair_scan_req message;
    struct repair_scan_op op = {.service = service, .request = &message};
    struct ts_repair_scan_rep reply = {0};
    struct repairpass *pass = &service->repair_pass;

    if (ts_repair_scan_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.max_steps < REPAIRPLAN_MAX_STEPS || message.max_steps > TS_MAX_REPAIR_STEPS) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "REPAIR_SCAN: max_steps must be %u..%u, not %u", REPAIRPLAN_MAX_STEPS,
                 TS_MAX_REPAIR_STEPS, message.max_steps);
        return TS_ERR_INVAL;
    }
    op.now_ms = util_monotonic_ms();
    if (message.after_ino == 0 && message.after_tile == 0)
        memset(&pass->running, 0, sizeof(pass->running));
    struct repairpass_counts before = pass->running;
    ts_writer_init(&op.steps, service->scratch, SERVICE_SCRATCH_BYTES);
    int status = store_read(service->store, repair_scan_body, &op);
    free(op.nodes);
    free(op.records);
    if (status == TS_OK && op.drop_count > 0) {
        status = store_write(service->store, repair_drops_body, &op);
        if (status == TS_OK)
            log_info("repair: dropped %zu replicas of datanodes down longer than %llu ms "
                     "(or removed) from the tile map",
                     op.drop_count, (unsigned long long)message.replace_after_ms);
    }
    if (status != TS_OK) {
        pass->running = before;
        return status;
    }
    if (!op.stopped) {
        pass->last = pass->running;
        pass->have_last = true;
        pass->last_ended_ms = op.now_ms;
        reply.done = 1;
    } else {
        reply.next_ino = op.next_ino;
        reply.next_tile = op.next_tile;
    }
    reply.count = op.step_count;
    reply.steps.ptr = (const char *)service->scratch;
    reply.steps.len = (uint32_t)op.steps.len;
    return REPLY_ENCODE(repair_scan_rep, &reply, response);
}

/* ---- HEALTH --------------------------------------------------------------- */

struct health_op {
    const struct repairpass_counts *counts;
    char (*paths)[INODEPATH_MAX];
};

static int health_body(struct store_txn *txn, void *arg)
{
    struct health_op *op = arg;
    uint64_t inos[TS_MAX_HEALTH_FILES];
    for (uint32_t i = 0; i < op->counts->file_count; i++)
        inos[i] = op->counts->files[i].ino;
    return reply_store_status(inodepath_find(txn, inos, op->counts->file_count, op->paths));
}

int handlers_repair_health(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    struct service *service = ctx;
    const struct repairpass *pass = &service->repair_pass;
    const struct repairpass_counts *counts = &pass->last;
    static char paths[TS_MAX_HEALTH_FILES][INODEPATH_MAX];
    struct health_op op = {.counts = counts, .paths = paths};
    struct repairpass_progress progress = {0};
    struct ts_health_rep reply = {0};
    struct ts_writer files;

    if (!handlers_payload_empty(request))
        return reply_bad_message(response, request->header.type);
    int status = store_read(service->store, health_body, &op);
    if (status != TS_OK)
        return status;
    if (service->repair_progress)
        service->repair_progress(service->repair_progress_ctx, &progress);
    ts_writer_init(&files, service->scratch, SERVICE_SCRATCH_BYTES);
    for (uint32_t i = 0; i < counts->file_count; i++) {
        struct ts_health_file_rec record = {.ino = counts->files[i].ino,
                                            .tiles = counts->files[i].tiles,
                                            .path = ts_str_of(paths[i])};
        ts_health_file_rec_write(&files, &record);
    }
    reply.state = counts->unavailable_tiles > 0 ? TS_UNAVAILABLE
                  : counts->degraded_tiles > 0  ? TS_DEGRADED
                                                : TS_HEALTHY;
    reply.tiles = counts->tiles;
    reply.degraded_tiles = counts->degraded_tiles;
    reply.degraded_bytes = counts->degraded_bytes;
    reply.unavailable_tiles = counts->unavailable_tiles;
    reply.pass_age_ms =
        pass->have_last ? (uint64_t)(util_monotonic_ms() - pass->last_ended_ms) : UINT64_MAX;
    reply.repair_steps_done = progress.steps_done;
    reply.repair_bytes_done = progress.bytes_done;
    reply.repair_bytes_per_sec = progress.bytes_per_sec;
    reply.repair_steps_waiting = progress.steps_waiting;
    reply.repair_bytes_waiting = progress.bytes_waiting;
    reply.repair_steps_failed = progress.steps_failed;
    reply.file_count = counts->file_count;
    reply.files.ptr = (const char *)service->scratch;
    reply.files.len = (uint32_t)files.len;
    return REPLY_ENCODE(health_rep, &reply, response);
}
