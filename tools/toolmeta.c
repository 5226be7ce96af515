/*
 * @file toolmeta.c
 * See toolmeta.h. NODE_LIST records are read through a ts_cursor and the
 * whole blob must be consumed exactly, so a reply from a meta with another
 * record layout is reported as malformed instead of shown as garbage.
 */
#include "toolmeta.h"

#include "status.h"

#include <stdbool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Meta never lists more datanodes than this; a bigger count is a bad reply. */
#define TOOLMETA_MAX_NODES 100000u
/* The smallest record: fixed fields and two empty strings. */
#define TOOLMETA_MIN_RECORD_BYTES (4 + 4 + 8 * 5 + 8 + 8 + 4 + 8 + 2 + 2)

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
    node->id = ts_cursor_u32(cursor);
    node->state = ts_cursor_u32(cursor);
    node->capacity = ts_cursor_u64(cursor);
    node->free_bytes = ts_cursor_u64(cursor);
    node->used_bytes = ts_cursor_u64(cursor);
    node->tiles = ts_cursor_u64(cursor);
    node->heartbeat_age_ms = ts_cursor_u64(cursor);
    node->read_bytes_per_sec = ts_cursor_u64(cursor);
    node->write_bytes_per_sec = ts_cursor_u64(cursor);
    node->queue_depth = ts_cursor_u32(cursor);
    node->throttle_bytes_per_sec = ts_cursor_u64(cursor);
    toolmeta_copy_text(ts_cursor_str(cursor), node->machine, sizeof(node->machine));
    toolmeta_copy_text(ts_cursor_str(cursor), node->address, sizeof(node->address));
}

/* Decodes the records; TS_OK or TS_ERR_BADMSG / TS_ERR_NOMEM. */
static int toolmeta_decode_nodes(const struct ts_node_list_rep *list,
                                   struct toolmeta_node **nodes, size_t *count)
{
    struct ts_cursor cursor;
    struct toolmeta_node *array;

    if (list->count > TOOLMETA_MAX_NODES ||
        (uint64_t)list->count * TOOLMETA_MIN_RECORD_BYTES > list->nodes.len)
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

int toolmeta_tile_map(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t first,
                        uint32_t count, uint32_t *nodes, uint64_t *versions, uint32_t *flags,
                        char *error_text, size_t error_cap)
{
    struct ts_tile_map_req request = {.ino = ino, .first = first, .count = count};
    struct ts_tile_map_rep answer;
    struct ts_cursor cursor;
    struct rpc_reply reply;
    uint8_t payload[64];
    int len = ts_tile_map_req_encode(&request, payload, sizeof(payload));
    int status;

    if (error_text && error_cap > 0)
        error_text[0] = '\0';
    if (len < 0)
        return TS_ERR_INTERNAL;
    status =
        rpc_client_call(client, TS_OP_TILE_MAP, payload, (size_t)len, NULL, 0, timeout_ms, &reply);
    if (status != TS_OK) {
        if (error_text)
            rpc_reply_error_text(&reply, error_text, error_cap);
        goto out;
    }
    if (ts_tile_map_rep_decode(&answer, reply.payload, reply.payload_len) != 0 ||
        answer.count != count || answer.tiles.len != (uint64_t)count * TS_TILE_RECORD_BYTES) {
        status = TS_ERR_BADMSG;
        goto out;
    }
    ts_cursor_init(&cursor, answer.tiles.ptr, answer.tiles.len);
    for (uint32_t i = 0; i < count; i++) {
        nodes[i] = ts_cursor_u32(&cursor);
        versions[i] = ts_cursor_u64(&cursor);
        ts_cursor_bytes(&cursor, 4 + 4 + 8); /* copies, read source */
        uint32_t tile_flags = ts_cursor_u32(&cursor);
        if (flags)
            flags[i] = tile_flags;
    }
out:
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
                            uint32_t count, const char *machine, struct toolmeta_tile *tiles,
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
        answer.count != count || answer.tiles.len != (uint64_t)count * TS_TILE_RECORD_BYTES) {
        status = TS_ERR_BADMSG;
        goto out;
    }
    ts_cursor_init(&cursor, answer.tiles.ptr, answer.tiles.len);
    for (uint32_t i = 0; i < count; i++) {
        tiles[i].node = ts_cursor_u32(&cursor);
        tiles[i].version = ts_cursor_u64(&cursor);
        tiles[i].copies = ts_cursor_u32(&cursor);
        tiles[i].read_node = ts_cursor_u32(&cursor);
        tiles[i].read_version = ts_cursor_u64(&cursor);
        tiles[i].flags = ts_cursor_u32(&cursor);
    }
out:
    rpc_reply_release(&reply);
    return status;
}

int toolmeta_tile_holders(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t first,
                            uint32_t count, struct toolmeta_holder **holders,
                            size_t *holder_count, char *error_text, size_t error_cap)
{
    struct ts_tile_holders_req request = {.ino = ino, .first = first, .count = count};
    struct ts_tile_holders_rep answer;
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
        (uint64_t)answer.count * TS_TILE_HOLDER_RECORD_BYTES != answer.holders.len) {
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
    for (uint32_t i = 0; i < answer.count; i++) {
        struct ts_tile_holder_rec record;
        struct toolmeta_holder *holder = &(*holders)[i];
        if (ts_tile_holder_rec_decode(&record,
                                      (const uint8_t *)answer.holders.ptr +
                                          (size_t)i * TS_TILE_HOLDER_RECORD_BYTES,
                                      TS_TILE_HOLDER_RECORD_BYTES) != 0 ||
            record.tile < first || record.tile - first >= count) {
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

/* The smallest PROFILE_GET record: an empty machine name. */
#define TOOLMETA_MIN_PROFILE_RECORD (8 + 2 + 6 * 8)

int toolmeta_profile_decode(const struct ts_profile_get_rep *reply,
                              struct toolmeta_access **records, size_t *count)
{
    struct ts_cursor cursor;
    struct toolmeta_access *array;

    *records = NULL;
    *count = 0;
    if ((uint64_t)reply->count * TOOLMETA_MIN_PROFILE_RECORD > reply->records.len)
        return TS_ERR_BADMSG;
    if (reply->count == 0)
        return reply->records.len == 0 ? TS_OK : TS_ERR_BADMSG;
    array = calloc(reply->count, sizeof(*array));
    if (!array)
        return TS_ERR_NOMEM;
    ts_cursor_init(&cursor, reply->records.ptr, reply->records.len);
    for (uint32_t i = 0; i < reply->count; i++) {
        struct toolmeta_access *record = &array[i];
        record->tile = ts_cursor_u64(&cursor);
        toolmeta_copy_text(ts_cursor_str(&cursor), record->machine, sizeof(record->machine));
        record->reads = ts_cursor_u64(&cursor);
        record->writes = ts_cursor_u64(&cursor);
        record->bytes_read = ts_cursor_u64(&cursor);
        record->bytes_written = ts_cursor_u64(&cursor);
        record->local_bytes = ts_cursor_u64(&cursor);
        record->first_access_ns = ts_cursor_u64(&cursor);
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

int toolmeta_move_begin(struct rpc_client *client, int timeout_ms,
                          const struct toolmeta_move *move, uint64_t *new_version,
                          char *error_text, size_t error_cap)
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

int toolmeta_move_decode(const struct ts_move_list_rep *reply, struct toolmeta_move **moves,
                           size_t *count)
{
    struct ts_cursor cursor;
    struct toolmeta_move *array;

    *moves = NULL;
    *count = 0;
    if ((uint64_t)reply->count * TS_MOVE_RECORD_BYTES != reply->records.len)
        return TS_ERR_BADMSG;
    if (reply->count == 0)
        return TS_OK;
    array = calloc(reply->count, sizeof(*array));
    if (!array)
        return TS_ERR_NOMEM;
    ts_cursor_init(&cursor, reply->records.ptr, reply->records.len);
    for (uint32_t i = 0; i < reply->count; i++) {
        struct toolmeta_move *move = &array[i];
        move->ino = ts_cursor_u64(&cursor);
        move->tile = ts_cursor_u64(&cursor);
        move->kind = ts_cursor_u32(&cursor);
        move->from_node = ts_cursor_u32(&cursor);
        move->to_node = ts_cursor_u32(&cursor);
        move->version = ts_cursor_u64(&cursor);
        move->new_version = ts_cursor_u64(&cursor);
        move->started_sec = ts_cursor_i64(&cursor);
        move->state = ts_cursor_u32(&cursor);
    }
    *moves = array;
    *count = reply->count;
    return TS_OK;
}

/* Journal entries asked for per MOVE_LIST page. */
#define TOOLMETA_MOVE_PAGE 4096

int toolmeta_move_list(struct rpc_client *client, int timeout_ms, struct toolmeta_move **moves,
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
        struct toolmeta_move *page = NULL;
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
