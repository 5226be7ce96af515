/*
 * @file handlers_applylock.h
 * APPLY_LOCK (proto.h): the lease of the one `tessera rebalance apply`
 * or `abort` that may run on the cluster at a time (applylock.h). Same
 * contract as every handler of handlers.h: ctx is the struct service,
 * TS_ERR_BADMSG for a malformed payload, a refusal's cause in
 * response->error_text. No store: the lease lives in memory.
 */
#ifndef TESSERA_META_HANDLERS_APPLYLOCK_H
#define TESSERA_META_HANDLERS_APPLYLOCK_H

#include "rpc.h"

int handlers_applylock(void *ctx, const struct rpc_request *request,
                       struct rpc_response *response);

#endif
