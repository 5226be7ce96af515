/*
 * @file handlers_repair.h
 * Self-healing in meta (proto.h NODE_ADMIN, REPAIR_SCAN, HEALTH): the
 * operator's drain and removal of datanodes, the repair steps meta's
 * repairer runs, and the health they add up to.
 */
#ifndef TESSERA_META_HANDLERS_REPAIR_H
#define TESSERA_META_HANDLERS_REPAIR_H

#include "rpc.h"

int handlers_repair_node_admin(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response);
int handlers_repair_scan(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response);
int handlers_repair_health(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response);

#endif
