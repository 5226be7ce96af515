/*
 * @file nodeclient.c
 * See nodeclient.h.
 */
#include "nodeclient.h"

#include "status.h"

#include <string.h>

int nodeclient_tile_pull(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t tile,
                         uint64_t version, uint64_t new_version, const char *source,
                         struct ts_tile_pull_rep *answer, char *error_text, size_t error_cap)
{
    struct ts_tile_pull_req request = {
        .ino = ino,
        .tile = tile,
        .version = version,
        .new_version = new_version,
        .source = ts_str_of(source),
    };
    struct rpc_reply reply;
    uint8_t payload[64 + TS_MAX_STRING];
    int len = ts_tile_pull_req_encode(&request, payload, sizeof(payload));
    int status;

    if (error_text && error_cap > 0)
        error_text[0] = '\0';
    if (len < 0)
        return TS_ERR_INVAL;
    status =
        rpc_client_call(client, TS_OP_TILE_PULL, payload, (size_t)len, NULL, 0, timeout_ms, &reply);
    if (status == TS_OK && ts_tile_pull_rep_decode(answer, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    if (status != TS_OK && error_text)
        rpc_reply_error_text(&reply, error_text, error_cap);
    rpc_reply_release(&reply);
    return status;
}

int nodeclient_tile_fence(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t tile,
                          uint64_t version, uint32_t action, uint32_t lease_ms,
                          uint64_t new_version, uint64_t *bytes, uint32_t *checksum,
                          char *error_text, size_t error_cap)
{
    struct ts_tile_fence_req request = {.ino = ino,
                                        .tile = tile,
                                        .version = version,
                                        .action = action,
                                        .lease_ms = lease_ms,
                                        .new_version = new_version};
    struct ts_tile_fence_rep answer;
    struct rpc_reply reply;
    uint8_t payload[64];
    int len = ts_tile_fence_req_encode(&request, payload, sizeof(payload));
    int status;

    if (error_text && error_cap > 0)
        error_text[0] = '\0';
    if (len < 0)
        return TS_ERR_INVAL;
    status = rpc_client_call(client, TS_OP_TILE_FENCE, payload, (size_t)len, NULL, 0, timeout_ms,
                             &reply);
    if (status == TS_OK && ts_tile_fence_rep_decode(&answer, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    if (status == TS_OK) {
        *bytes = answer.bytes;
        *checksum = answer.checksum;
    } else if (error_text) {
        rpc_reply_error_text(&reply, error_text, error_cap);
    }
    rpc_reply_release(&reply);
    return status;
}
