/*
 * @file handlers_session.h
 * The requests of mount sessions (proto.h: SESSION_RENEW, SESSION_HOLDS):
 * a mount's lease on the opens it holds, and its announcement of them
 * after meta restarted or its lease expired. Same contract as every
 * handler of handlers.h, whose table lists them.
 */
#ifndef TESSERA_META_HANDLERS_SESSION_H
#define TESSERA_META_HANDLERS_SESSION_H

#include "rpc.h"

int handlers_session_renew(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response);
/*
 * Whether request's sender may use the mount session id it names (its
 * routing id, leases_mount_of()): TS_OK when it names none, comes on a
 * link without keys, or the id is its key's (sessionkeys.h: bound to the
 * first key that used it); TS_ERR_PERM, logged with the peer's address,
 * when another key owns the id; TS_ERR_BUSY when meta can bind no more ids
 * now. Meta's gate (handlers_exports_gate) asks it before every request.
 */
int handlers_session_key_check(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response);
int handlers_session_holds(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response);

#endif
