/*
 * @file handlers_moves.h
 * The requests that change a tile's replica set (proto.h: REPLICA_DROP,
 * MOVE_BEGIN, MOVE_COMMIT, MOVE_ABORT, MOVE_LIST). Same
 * contract as every handler of handlers.h, whose table lists them: ctx is
 * the struct service, one transaction per request, TS_ERR_BADMSG for a
 * malformed payload, and a refusal names its cause in
 * response->error_text.
 */
#ifndef TESSERA_META_HANDLERS_MOVES_H
#define TESSERA_META_HANDLERS_MOVES_H

#include "rpc.h"

int handlers_moves_replica_drop(void *ctx, const struct rpc_request *request,
                                struct rpc_response *response);
int handlers_moves_begin(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response);
int handlers_moves_commit(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response);
int handlers_moves_abort(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response);
int handlers_moves_list(void *ctx, const struct rpc_request *request,
                        struct rpc_response *response);

#endif
