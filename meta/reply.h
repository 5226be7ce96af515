/*
 * @file reply.h
 * What every meta handler does with its reply: the malformed-request
 * answer, the reply length from a generated encoder's result, and the
 * status of an unexpected store failure. Shared by handlers.c and every
 * handlers_<area>.c.
 */
#ifndef TESSERA_META_REPLY_H
#define TESSERA_META_REPLY_H

#include "rpc.h"

#include <stdint.h>

/* Answers a payload that does not decode: TS_ERR_BADMSG naming the opcode. */
int reply_bad_message(struct rpc_response *response, uint16_t op);

/* Sets the reply length from an encoder's result (-1: TS_ERR_INTERNAL). */
int reply_encoded(int len, struct rpc_response *response);

/*
 * The status of an unexpected store failure (the store logged the cause):
 * 0 is TS_OK, -ENOMEM TS_ERR_NOMEM, -ENOSPC TS_ERR_NOSPC (the map is full:
 * store_write() grows it and retries), anything else TS_ERR_INTERNAL.
 */
int reply_store_status(int err);

/* Encodes message `name` into the response's payload buffer. */
#define REPLY_ENCODE(name, message, response)                                                      \
    reply_encoded(ts_##name##_encode((message), (response)->payload, (response)->payload_cap),     \
                  (response))

#endif
