/*
 * @file handlers_nodes.h
 * The requests about the datanodes (proto.h: HEARTBEAT, NODE_LIST,
 * STATFS). Same contract as every handler of handlers.h, whose table lists
 * them: ctx is the struct service, one transaction per request,
 * TS_ERR_BADMSG for a malformed payload.
 */
#ifndef TESSERA_META_HANDLERS_NODES_H
#define TESSERA_META_HANDLERS_NODES_H

#include "rpc.h"

int handlers_nodes_statfs(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response);
int handlers_nodes_list(void *ctx, const struct rpc_request *request,
                        struct rpc_response *response);
int handlers_nodes_heartbeat(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response);

#endif
