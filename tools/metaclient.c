/*
 * @file metaclient.c
 * See metaclient.h. NODE_LIST records are read through a ts_cursor and the
 * whole blob must be consumed exactly, so a reply from a meta with another
 * record layout is reported as malformed instead of shown as garbage.
 */
#include "metaclient.h"

#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Meta never lists more datanodes than this; a bigger count is a bad reply. */
#define METACLIENT_MAX_NODES 100000u
/* The smallest record: fixed fields and two empty strings. */
#define METACLIENT_MIN_RECORD_BYTES (4 + 4 + 8 * 5 + 8 + 8 + 4 + 8 + 2 + 2)

int metaclient_ping(struct rpc_client *client, int timeout_ms)
{
    struct rpc_reply reply;
    int status = rpc_client_call(client, TS_OP_PING, NULL, 0, NULL, 0, timeout_ms, &reply);
    rpc_reply_release(&reply);
    return status;
}

/* Copies a wire string into a fixed buffer, cutting what does not fit. */
static void metaclient_copy_text(struct ts_str text, char *out, size_t cap)
{
    snprintf(out, cap, "%.*s", (int)text.len, text.ptr ? text.ptr : "");
}

static void metaclient_read_node(struct ts_cursor *cursor, struct metaclient_node *node)
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
    metaclient_copy_text(ts_cursor_str(cursor), node->machine, sizeof(node->machine));
    metaclient_copy_text(ts_cursor_str(cursor), node->address, sizeof(node->address));
}

/* Decodes the records; TS_OK or TS_ERR_BADMSG / TS_ERR_NOMEM. */
static int metaclient_decode_nodes(const struct ts_node_list_rep *list,
                                   struct metaclient_node **nodes, size_t *count)
{
    struct ts_cursor cursor;
    struct metaclient_node *array;

    if (list->count > METACLIENT_MAX_NODES ||
        (uint64_t)list->count * METACLIENT_MIN_RECORD_BYTES > list->nodes.len)
        return TS_ERR_BADMSG;
    if (list->count == 0)
        return list->nodes.len == 0 ? TS_OK : TS_ERR_BADMSG;
    array = calloc(list->count, sizeof(*array));
    if (!array)
        return TS_ERR_NOMEM;
    ts_cursor_init(&cursor, list->nodes.ptr, list->nodes.len);
    for (uint32_t i = 0; i < list->count; i++)
        metaclient_read_node(&cursor, &array[i]);
    if (cursor.failed || cursor.left != 0) {
        free(array);
        return TS_ERR_BADMSG;
    }
    *nodes = array;
    *count = list->count;
    return TS_OK;
}

int metaclient_node_list(struct rpc_client *client, int timeout_ms, struct metaclient_node **nodes,
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
    status = metaclient_decode_nodes(&list, nodes, count);
out:
    rpc_reply_release(&reply);
    return status;
}

int metaclient_statfs(struct rpc_client *client, int timeout_ms, struct ts_statfs_rep *totals)
{
    struct rpc_reply reply;
    int status = rpc_client_call(client, TS_OP_STATFS, NULL, 0, NULL, 0, timeout_ms, &reply);

    if (status == TS_OK && ts_statfs_rep_decode(totals, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    rpc_reply_release(&reply);
    return status;
}

int metaclient_getattr(struct rpc_client *client, int timeout_ms, uint64_t ino,
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

int metaclient_tile_map(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t first,
                        uint32_t count, uint32_t *nodes, uint64_t *versions, char *error_text,
                        size_t error_cap)
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
        ts_cursor_bytes(&cursor, TS_TILE_RECORD_BYTES - 12); /* copies, read source */
    }
out:
    rpc_reply_release(&reply);
    return status;
}
