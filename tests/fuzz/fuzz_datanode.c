/*
 * @file fuzz_datanode.c
 * libFuzzer target: tessera-datanode's request handlers on arbitrary
 * messages, through nodehandlers_table, the table the daemon serves from,
 * on a real tile store (fuzzdatanode.h).
 *
 * An input is a u16 little-endian opcode, a u16 payload length, the
 * payload, and what follows as the data frame (a write's bytes). A handler
 * must return a known status, never crash, never read outside the message
 * (ASan), and leave a reply that fits its buffer; a read's data is freed
 * as ZeroMQ would free it.
 */
#include "fuzzdatanode.h"
#include "proto.h"
#include "status.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_DATANODE_REPLY_CAP (TS_MAX_FRAME_BYTES - TS_HEADER_BYTES)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t *reply;
    struct nodehandlers_context *context = fuzzdatanode_context("fuzz_datanode");
    struct rpc_request request;
    struct rpc_response response;
    uint16_t op;
    size_t payload_len;
    int status;

    if (!reply && !(reply = malloc(FUZZ_DATANODE_REPLY_CAP)))
        abort();
    if (size < 4)
        return 0;
    op = (uint16_t)(data[0] | data[1] << 8);
    payload_len = (size_t)(data[2] | data[3] << 8);
    if (op >= TS_OP_MAX || !nodehandlers_table[op] || payload_len > size - 4)
        return -1; /* the server answers these itself; not worth keeping in the corpus */

    memset(&request, 0, sizeof(request));
    request.key_user = "";
    request.header.magic = TS_PROTO_MAGIC;
    request.header.version = TS_PROTO_VERSION;
    request.header.type = op;
    request.header.payload_bytes = (uint32_t)payload_len;
    request.payload = data + 4;
    request.payload_len = payload_len;
    if (size - 4 > payload_len) {
        request.data = data + 4 + payload_len;
        request.data_len = size - 4 - payload_len;
    }
    memset(&response, 0, sizeof(response));
    response.payload = reply;
    response.payload_cap = FUZZ_DATANODE_REPLY_CAP;

    pthread_mutex_lock(&context->lock);
    status = nodehandlers_table[op](context, &request, &response);
    pthread_mutex_unlock(&context->lock);

    if (strcmp(status_text(status), "unknown status") == 0 ||
        memchr(response.error_text, '\0', sizeof(response.error_text)) == NULL ||
        response.payload_len > response.payload_cap ||
        (response.data && response.data_len > TS_MAX_DATA_BYTES)) {
        fprintf(stderr, "fuzz_datanode: %s returned status %d, reply %zu bytes, data %zu\n",
                ts_op_name(op), status, response.payload_len, response.data_len);
        abort();
    }
    if (response.data && response.data_free)
        response.data_free(response.data, NULL);
    return 0;
}
