/*
 * @file tilecheck.h
 * TILE_CHECK (proto.h), for `tessera fsck`: whether this datanode holds
 * the tile files meta maps to it, and (deep) whether their bytes are
 * intact. Runs under the handlers' lock, like every handler.
 */
#ifndef TESSERA_DATANODE_TILECHECK_H
#define TESSERA_DATANODE_TILECHECK_H

#include "rpc.h"
#include "tilestore.h"

/* Answers request into response from store. Returns a status. */
int tilecheck_handle(struct tilestore *store, const struct rpc_request *request,
                     struct rpc_response *response);

#endif
