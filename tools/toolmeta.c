/*
 * @file toolmeta.c
 * See toolmeta.h. Replies' records are read with proto.h's record readers
 * and the whole blob must be consumed exactly, so a reply from a meta with
 * another record layout is reported as malformed instead of shown as
 * garbage.
 */
#include "toolmeta.h"

#include "status.h"

#include <stdbool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Meta never lists more datanodes than this; a bigger count is a bad reply. */
#define TOOLMETA_MAX_NODES 100000u

int toolmeta_ping(struct rpc_client *client, int timeout_ms)
{
    struct rpc_reply reply;
    int status = rpc_client_call(client, TS_OP_PING, NULL, 0, NULL, 0, timeout_ms, &reply);
    rpc_reply_release(&reply);
    return status;
}

int toolmeta_cluster_id(struct rpc_client *client, int timeout_ms, char *out, size_t cap)
{
    struct ts_cluster_id_rep answer;
    struct rpc_reply reply;
    int status = rpc_client_call(client, TS_OP_CLUSTER_ID, NULL, 0, NULL, 0, timeout_ms, &reply);

    if (status == TS_OK &&
        (ts_cluster_id_rep_decode(&answer, reply.payload, reply.payload_len) != 0 ||
         ts_str_copy(answer.cluster_id, out, cap) != 0))
        status = TS_ERR_BADMSG;
    rpc_reply_release(&reply);
    return status;
}

/* Copies a wire string into a fixed buffer, cutting what does not fit. */
static void toolmeta_copy_text(struct ts_str text, char *out, size_t cap)
{
    snprintf(out, cap, "%.*s", (int)text.len, text.ptr ? text.ptr : "");
}

static void toolmeta_read_node(struct ts_cursor *cursor, struct toolmeta_node *node)
{
    struct ts_node_list_rec record;
    (void)ts_node_list_rec_read(cursor, &record); /* the caller checks the cursor */
    node->id = record.id;
    node->state = record.state;
    node->admin = record.admin;
    node->corrupt_files = record.corrupt_files;
    node->scrub_running = record.scrub_running;
    node->scrub_files = record.scrub_files;
    node->scrub_bytes = record.scrub_bytes;
    node->scrub_corrupt = record.scrub_corrupt;
    node->scrub_rate = record.scrub_rate;
    node->scrub_passes = record.scrub_passes;
    node->disk_id = record.disk_id;
    node->disk_bytes = record.disk_bytes;
    node->disk_free = record.disk_free;
    node->capacity = record.capacity;
    node->free_bytes = record.free_bytes;
    node->used_bytes = record.used_bytes;
    node->tiles = record.tiles;
    node->heartbeat_age_ms = record.heartbeat_age_ms;
    node->read_bytes_per_sec = record.read_bytes_per_sec;
    node->write_bytes_per_sec = record.write_bytes_per_sec;
    node->queue_depth = record.queue_depth;
    node->throttle_bytes_per_sec = record.throttle_bytes_per_sec;
    toolmeta_copy_text(record.machine, node->machine, sizeof(node->machine));
    toolmeta_copy_text(record.address, node->address, sizeof(node->address));
}

/* Decodes the records; TS_OK or TS_ERR_BADMSG / TS_ERR_NOMEM. */
static int toolmeta_decode_nodes(const struct ts_node_list_rep *list,
                                   struct toolmeta_node **nodes, size_t *count)
{
    struct ts_cursor cursor;
    struct toolmeta_node *array;

    if (list->count > TOOLMETA_MAX_NODES ||
        !ts_records_fit(list->count, list->nodes.len, ts_node_list_rec_bytes))
        return TS_ERR_BADMSG;
    if (list->count == 0)
        return list->nodes.len == 0 ? TS_OK : TS_ERR_BADMSG;
    array = calloc(list->count, sizeof(*array));
    if (!array)
        return TS_ERR_NOMEM;
    ts_cursor_init(&cursor, list->nodes.ptr, list->nodes.len);
    for (uint32_t i = 0; i < list->count; i++)
        toolmeta_read_node(&cursor, &array[i]);
    if (cursor.failed || cursor.left != 0) {
        free(array);
        return TS_ERR_BADMSG;
    }
    *nodes = array;
    *count = list->count;
    return TS_OK;
}

int toolmeta_node_list(struct rpc_client *client, int timeout_ms, struct toolmeta_node **nodes,
                         size_t *count, char *error_text, size_t error_cap)
{
    struct rpc_reply reply;
    struct ts_node_list_rep list;
    int status;

    *nodes = NULL;
    *count = 0;
    if (error_text && error_cap > 0)
        error_text[0] = '\0';
    status = rpc_client_call(client, TS_OP_NODE_LIST, NULL, 0, NULL, 0, timeout_ms, &reply);
    if (status != TS_OK) {
        if (error_text)
            rpc_reply_error_text(&reply, error_text, error_cap);
        goto out;
    }
    if (ts_node_list_rep_decode(&list, reply.payload, reply.payload_len) != 0) {
        status = TS_ERR_BADMSG;
        goto out;
    }
    status = toolmeta_decode_nodes(&list, nodes, count);
out:
    rpc_reply_release(&reply);
    return status;
}

int toolmeta_statfs(struct rpc_client *client, int timeout_ms, struct ts_statfs_rep *totals)
{
    struct rpc_reply reply;
    int status = rpc_client_call(client, TS_OP_STATFS, NULL, 0, NULL, 0, timeout_ms, &reply);

    if (status == TS_OK && ts_statfs_rep_decode(totals, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    rpc_reply_release(&reply);
    return status;
}

int toolmeta_getattr(struct rpc_client *client, int timeout_ms, uint64_t ino,
                       struct ts_attr *attr)
{
    struct ts_getattr_req request = {.ino = ino};
    struct ts_attr_rep answer;
    struct rpc_reply reply;
    uint8_t payload[16];
    int len = ts_getattr_req_encode(&request, payload, sizeof(payload));
    int status;

    if (len < 0)
        return TS_ERR_INTERNAL;
    status =
        rpc_client_call(client, TS_OP_GETATTR, payload, (size_t)len, NULL, 0, timeout_ms, &reply);
    if (status == TS_OK && ts_attr_rep_decode(&answer, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    if (status == TS_OK)
        *attr = answer.attr;
    rpc_reply_release(&reply);
    return status;
}

/*
 * One request with a payload. On failure error_text (if not NULL) gets
 * meta's text. The caller decodes reply on TS_OK and releases it always.
 */
static int toolmeta_call(struct rpc_client *client, uint16_t op, const uint8_t *payload, int len,
                           int timeout_ms, struct rpc_reply *reply, char *error_text,
                           size_t error_cap)
{
    int status;

    if (error_text && error_cap > 0)
        error_text[0] = '\0';
    if (len < 0) {
        memset(reply, 0, sizeof(*reply));
        return TS_ERR_INTERNAL;
    }
    status = rpc_client_call(client, op, payload, (size_t)len, NULL, 0, timeout_ms, reply);
    if (status != TS_OK && error_text)
        rpc_reply_error_text(reply, error_text, error_cap);
    return status;
}

int toolmeta_tile_records(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t first,
                          uint32_t count, const char *machine, struct ts_tile_map_rec *tiles,
                          char *error_text, size_t error_cap)
{
    struct ts_tile_map_req request = {
        .ino = ino, .first = first, .count = count, .machine = ts_str_of(machine ? machine : "")};
    struct ts_tile_map_rep answer;
    struct ts_cursor cursor;
    struct rpc_reply reply;
    uint8_t payload[64 + TS_MAX_STRING];
    int status = toolmeta_call(client, TS_OP_TILE_MAP, payload,
                                 ts_tile_map_req_encode(&request, payload, sizeof(payload)),
                                 timeout_ms, &reply, error_text, error_cap);

    if (status != TS_OK)
        goto out;
    if (ts_tile_map_rep_decode(&answer, reply.payload, reply.payload_len) != 0 ||
        answer.count != count) {
        status = TS_ERR_BADMSG;
        goto out;
    }
    ts_cursor_init(&cursor, answer.tiles.ptr, answer.tiles.len);
    for (uint32_t i = 0; i < count && !cursor.failed; i++) {
        (void)ts_tile_map_rec_read(&cursor, &tiles[i]); /* a failure stays in the cursor */
        if (tiles[i].holders > TS_MAX_HOLDERS)
            cursor.failed = true;
        /* Every holder is TILE_HOLDERS's to tell (toolmeta_tile_holders): skipped here. */
        for (uint32_t h = 0; h < tiles[i].holders && !cursor.failed; h++) {
            struct ts_replica_rec holder;
            (void)ts_replica_rec_read(&cursor, &holder);
        }
    }
    if (cursor.failed || cursor.left != 0)
        status = TS_ERR_BADMSG;
out:
    rpc_reply_release(&reply);
    return status;
}

int toolmeta_tile_map(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t first,
                      uint32_t count, uint32_t *nodes, uint64_t *versions, uint32_t *flags,
                      char *error_text, size_t error_cap)
{
    struct ts_tile_map_rec *tiles = malloc((count ? count : 1) * sizeof(*tiles));
    int status;

    if (!tiles) {
        if (error_text && error_cap > 0)
            error_text[0] = '\0';
        return TS_ERR_NOMEM;
    }
    status = toolmeta_tile_records(client, timeout_ms, ino, first, count, "", tiles, error_text,
                                   error_cap);
    for (uint32_t i = 0; status == TS_OK && i < count; i++) {
        nodes[i] = tiles[i].node;
        versions[i] = tiles[i].version;
        if (flags)
            flags[i] = tiles[i].flags;
    }
    free(tiles);
    return status;
}

int toolmeta_tile_holders(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t first,
                            uint32_t count, struct toolmeta_holder **holders,
                            size_t *holder_count, char *error_text, size_t error_cap)
{
    struct ts_tile_holders_req request = {.ino = ino, .first = first, .count = count};
    struct ts_tile_holders_rep answer;
    struct ts_cursor cursor;
    struct rpc_reply reply;
    uint8_t payload[64];
    int status = toolmeta_call(client, TS_OP_TILE_HOLDERS, payload,
                                 ts_tile_holders_req_encode(&request, payload, sizeof(payload)),
                                 timeout_ms, &reply, error_text, error_cap);

    *holders = NULL;
    *holder_count = 0;
    if (status != TS_OK)
        goto out;
    if (ts_tile_holders_rep_decode(&answer, reply.payload, reply.payload_len) != 0 ||
        (uint64_t)answer.count * ts_tile_holder_rec_bytes != answer.holders.len) {
        status = TS_ERR_BADMSG;
        goto out;
    }
    if (answer.count == 0)
        goto out;
    *holders = calloc(answer.count, sizeof(**holders));
    if (!*holders) {
        status = TS_ERR_NOMEM;
        goto out;
    }
    ts_cursor_init(&cursor, answer.holders.ptr, answer.holders.len);
    for (uint32_t i = 0; i < answer.count; i++) {
        struct ts_tile_holder_rec record;
        struct toolmeta_holder *holder = &(*holders)[i];
        if (ts_tile_holder_rec_read(&cursor, &record) != 0 || record.tile < first ||
            record.tile - first >= count) {
            free(*holders);
            *holders = NULL;
            status = TS_ERR_BADMSG;
            goto out;
        }
        holder->tile = record.tile;
        holder->node = record.node;
        holder->version = record.version;
        holder->kind = record.kind;
    }
    *holder_count = answer.count;
out:
    rpc_reply_release(&reply);
    return status;
}

int toolmeta_profile_set(struct rpc_client *client, int timeout_ms, uint64_t ino, uint32_t action,
                           uint32_t *profiling, char *error_text, size_t error_cap)
{
    struct ts_profile_set_req request = {.ino = ino, .action = action};
    struct ts_profile_set_rep answer;
    struct rpc_reply reply;
    uint8_t payload[32];
    int status = toolmeta_call(client, TS_OP_PROFILE_SET, payload,
                                 ts_profile_set_req_encode(&request, payload, sizeof(payload)),
                                 timeout_ms, &reply, error_text, error_cap);

    if (status == TS_OK &&
        ts_profile_set_rep_decode(&answer, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    if (status == TS_OK && profiling)
        *profiling = answer.profiling;
    rpc_reply_release(&reply);
    return status;
}

int toolmeta_profile_decode(const struct ts_profile_get_rep *reply,
                              struct toolmeta_access **records, size_t *count)
{
    struct ts_cursor cursor;
    struct toolmeta_access *array;

    *records = NULL;
    *count = 0;
    if (!ts_records_fit(reply->count, reply->records.len, ts_profile_get_rec_bytes))
        return TS_ERR_BADMSG;
    if (reply->count == 0)
        return reply->records.len == 0 ? TS_OK : TS_ERR_BADMSG;
    array = calloc(reply->count, sizeof(*array));
    if (!array)
        return TS_ERR_NOMEM;
    ts_cursor_init(&cursor, reply->records.ptr, reply->records.len);
    for (uint32_t i = 0; i < reply->count; i++) {
        struct toolmeta_access *record = &array[i];
        struct ts_profile_get_rec wire;
        if (ts_profile_get_rec_read(&cursor, &wire) != 0)
            break;
        record->tile = wire.tile;
        toolmeta_copy_text(wire.machine, record->machine, sizeof(record->machine));
        record->reads = wire.reads;
        record->writes = wire.writes;
        record->bytes_read = wire.bytes_read;
        record->bytes_written = wire.bytes_written;
        record->local_bytes = wire.local_bytes;
        record->first_access_ns = wire.first_access_ns;
    }
    if (cursor.failed || cursor.left != 0) {
        free(array);
        return TS_ERR_BADMSG;
    }
    *records = array;
    *count = reply->count;
    return TS_OK;
}

/* Appends page[count] to *all (grown with realloc); TS_OK or TS_ERR_NOMEM. */
static int toolmeta_append(void **all, size_t *all_count, size_t *all_cap, const void *page,
                             size_t count, size_t size)
{
    if (*all_count + count > *all_cap) {
        size_t cap = *all_cap ? *all_cap : 256;
        while (cap < *all_count + count)
            cap *= 2;
        void *grown = realloc(*all, cap * size);
        if (!grown)
            return TS_ERR_NOMEM;
        *all = grown;
        *all_cap = cap;
    }
    if (count > 0)
        memcpy((char *)*all + *all_count * size, page, count * size);
    *all_count += count;
    return TS_OK;
}

/* Records asked for per PROFILE_GET page. */
#define TOOLMETA_PROFILE_PAGE 4096

int toolmeta_profile_all(struct rpc_client *client, int timeout_ms, uint64_t ino,
                           struct toolmeta_access **records, size_t *count, uint32_t *profiling,
                           char *error_text, size_t error_cap)
{
    void *all = NULL;
    size_t all_count = 0, all_cap = 0;
    uint64_t first_tile = 0;
    int status;

    *records = NULL;
    *count = 0;
    for (;;) {
        struct ts_profile_get_req request = {
            .ino = ino, .first_tile = first_tile, .max_records = TOOLMETA_PROFILE_PAGE};
        struct ts_profile_get_rep answer;
        struct toolmeta_access *page = NULL;
        size_t page_count = 0;
        struct rpc_reply reply;
        uint8_t payload[32];

        status = toolmeta_call(client, TS_OP_PROFILE_GET, payload,
                                 ts_profile_get_req_encode(&request, payload, sizeof(payload)),
                                 timeout_ms, &reply, error_text, error_cap);
        if (status == TS_OK &&
            ts_profile_get_rep_decode(&answer, reply.payload, reply.payload_len) != 0)
            status = TS_ERR_BADMSG;
        if (status == TS_OK)
            status = toolmeta_profile_decode(&answer, &page, &page_count);
        /* Pages hold whole tiles, so each moves on; one that does not would loop. */
        if (status == TS_OK && !answer.done && answer.next_tile <= first_tile)
            status = TS_ERR_BADMSG;
        if (status == TS_OK)
            status = toolmeta_append(&all, &all_count, &all_cap, page, page_count, sizeof(*page));
        free(page);
        rpc_reply_release(&reply);
        if (status != TS_OK) {
            free(all);
            return status;
        }
        if (profiling)
            *profiling = answer.profiling;
        if (answer.done)
            break;
        first_tile = answer.next_tile;
    }
    *records = all;
    *count = all_count;
    return TS_OK;
}

int toolmeta_move_begin(struct rpc_client *client, int timeout_ms, const struct ts_move_rec *move,
                        uint64_t *new_version, char *error_text, size_t error_cap)
{
    struct ts_move_begin_req request = {
        .ino = move->ino,
        .tile = move->tile,
        .version = move->version,
        .kind = move->kind,
        .from_node = move->from_node,
        .to_node = move->to_node,
    };
    struct ts_move_begin_rep answer;
    struct rpc_reply reply;
    uint8_t payload[64];
    int status = toolmeta_call(client, TS_OP_MOVE_BEGIN, payload,
                                 ts_move_begin_req_encode(&request, payload, sizeof(payload)),
                                 timeout_ms, &reply, error_text, error_cap);

    if (status == TS_OK && ts_move_begin_rep_decode(&answer, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    if (status == TS_OK)
        *new_version = answer.new_version;
    rpc_reply_release(&reply);
    return status;
}

int toolmeta_move_end(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t tile,
                        int abort, char *error_text, size_t error_cap)
{
    struct ts_move_tile_req request = {.ino = ino, .tile = tile};
    struct rpc_reply reply;
    uint8_t payload[32];
    int status = toolmeta_call(client, abort ? TS_OP_MOVE_ABORT : TS_OP_MOVE_COMMIT, payload,
                                 ts_move_tile_req_encode(&request, payload, sizeof(payload)),
                                 timeout_ms, &reply, error_text, error_cap);
    rpc_reply_release(&reply);
    return status;
}

int toolmeta_move_decode(const struct ts_move_list_rep *reply, struct ts_move_rec **moves,
                         size_t *count)
{
    struct ts_cursor cursor;
    struct ts_move_rec *array;

    *moves = NULL;
    *count = 0;
    if (!ts_records_fit(reply->count, reply->records.len, ts_move_rec_bytes))
        return TS_ERR_BADMSG;
    if (reply->count == 0)
        return reply->records.len == 0 ? TS_OK : TS_ERR_BADMSG;
    array = calloc(reply->count, sizeof(*array));
    if (!array)
        return TS_ERR_NOMEM;
    ts_cursor_init(&cursor, reply->records.ptr, reply->records.len);
    for (uint32_t i = 0; i < reply->count; i++)
        (void)ts_move_rec_read(&cursor, &array[i]); /* a failure stays in the cursor */
    if (cursor.failed || cursor.left != 0) {
        free(array);
        return TS_ERR_BADMSG;
    }
    *moves = array;
    *count = reply->count;
    return TS_OK;
}

/* Journal entries asked for per MOVE_LIST page. */
#define TOOLMETA_MOVE_PAGE 4096

int toolmeta_move_list(struct rpc_client *client, int timeout_ms, struct ts_move_rec **moves,
                       size_t *count, char *error_text, size_t error_cap)
{
    void *all = NULL;
    size_t all_count = 0, all_cap = 0;
    uint64_t after_ino = 0, after_tile = 0;
    int status;

    *moves = NULL;
    *count = 0;
    for (;;) {
        struct ts_move_list_req request = {
            .after_ino = after_ino, .after_tile = after_tile, .max_records = TOOLMETA_MOVE_PAGE};
        struct ts_move_list_rep answer;
        struct ts_move_rec *page = NULL;
        size_t page_count = 0;
        struct rpc_reply reply;
        uint8_t payload[32];

        status = toolmeta_call(client, TS_OP_MOVE_LIST, payload,
                                 ts_move_list_req_encode(&request, payload, sizeof(payload)),
                                 timeout_ms, &reply, error_text, error_cap);
        if (status == TS_OK &&
            ts_move_list_rep_decode(&answer, reply.payload, reply.payload_len) != 0)
            status = TS_ERR_BADMSG;
        if (status == TS_OK)
            status = toolmeta_move_decode(&answer, &page, &page_count);
        /* A page that is not done must hand over something, or it loops. */
        if (status == TS_OK && !answer.done && page_count == 0)
            status = TS_ERR_BADMSG;
        if (status == TS_OK)
            status = toolmeta_append(&all, &all_count, &all_cap, page, page_count, sizeof(*page));
        rpc_reply_release(&reply);
        if (status != TS_OK) {
            free(page);
            free(all);
            return status;
        }
        if (answer.done) {
            free(page);
            break;
        }
        after_ino = page[page_count - 1].ino;
        after_tile = page[page_count - 1].tile;
        free(page);
    }
    *moves = all;
    *count = all_count;
    return TS_OK;
}

void toolmeta_move_step(const struct ts_move_rec *move, struct relocate_step *step)
{
    memset(step, 0, sizeof(*step));
    step->kind = (enum plan_action_kind)move->kind;
    step->ino = move->ino;
    step->tile = move->tile;
    step->version = move->version;
    step->from_node = move->from_node;
    step->to_node = move->kind == TS_MOVE_DROP ? 0 : move->to_node;
    step->committed = move->state == TS_MOVE_COMMITTED;
}

int toolmeta_apply_lock(struct rpc_client *client, int timeout_ms,
                        const struct ts_apply_lock_req *request, struct toolmeta_apply_lock *out,
                        char *error_text, size_t error_cap)
{
    struct ts_apply_lock_rep answer;
    struct rpc_reply reply;
    uint8_t payload[512];
    int status = toolmeta_call(client, TS_OP_APPLY_LOCK, payload,
                               ts_apply_lock_req_encode(request, payload, sizeof(payload)),
                               timeout_ms, &reply, error_text, error_cap);

    memset(out, 0, sizeof(*out));
    if (status == TS_OK && ts_apply_lock_rep_decode(&answer, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    if (status == TS_OK) {
        out->granted = answer.granted != 0;
        out->held = answer.held != 0;
        /* A description longer than ours is cut, not refused: it is only shown. */
        snprintf(out->holder, sizeof(out->holder), "%.*s", (int)answer.holder.len,
                 answer.holder.ptr ? answer.holder.ptr : "");
        out->since_sec = answer.since_sec;
        out->steps_total = answer.steps_total;
        out->steps_done = answer.steps_done;
        out->left_ms = answer.left_ms;
    }
    rpc_reply_release(&reply);
    return status;
}
