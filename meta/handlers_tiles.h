/*
 * @file handlers_tiles.h
 * Read-only questions about the tile map (proto.h: TILE_RECONCILE from a
 * datanode reconciling its tile directory with the map, TILE_HOLDERS from
 * `tessera layout show`). Same contract as every handler of handlers.h,
 * whose table lists them: ctx is the struct service, one (read)
 * transaction per request, TS_ERR_BADMSG for a malformed payload, and a
 * refusal names its cause in response->error_text.
 */
#ifndef TESSERA_META_HANDLERS_TILES_H
#define TESSERA_META_HANDLERS_TILES_H

#include "rpc.h"

int handlers_tiles_reconcile(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response);
int handlers_tiles_holders(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response);

#endif
