/*
 * @file reply.c
 * See reply.h.
 */
#include "reply.h"

#include "proto.h"
#include "status.h"

#include <errno.h>
#include <stdio.h>

int reply_bad_message(struct rpc_response *response, uint16_t op)
{
    snprintf(response->error_text, sizeof(response->error_text), "malformed %s request",
             ts_op_name(op));
    return TS_ERR_BADMSG;
}

int reply_encoded(int len, struct rpc_response *response)
{
    if (len < 0) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "reply does not fit in a frame");
        return TS_ERR_INTERNAL;
    }
    response->payload_len = (size_t)len;
    return TS_OK;
}

int reply_store_status(int err)
{
    switch (err) {
    case 0: return TS_OK;
    case -ENOMEM: return TS_ERR_NOMEM;
    case -ENOSPC: return TS_ERR_NOSPC;
    default: return TS_ERR_INTERNAL;
    }
}
