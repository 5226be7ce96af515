/*
 * @file handlers_files.h
 * The requests of a file's data (proto.h: OPEN, RELEASE, RELEASE_MANY,
 * SETATTR, TILE_MAP, COMMIT, PUNCH). Same contract as every handler of
 * handlers.h, whose table lists them: ctx is the struct service, one
 * transaction per request, TS_ERR_BADMSG for a malformed payload.
 */
#ifndef TESSERA_META_HANDLERS_FILES_H
#define TESSERA_META_HANDLERS_FILES_H

#include "rpc.h"

int handlers_files_open(void *ctx, const struct rpc_request *request,
                        struct rpc_response *response);
int handlers_files_release(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response);
int handlers_files_release_many(void *ctx, const struct rpc_request *request,
                                struct rpc_response *response);
int handlers_files_setattr(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response);
int handlers_files_tile_map(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response);
int handlers_files_commit(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response);
int handlers_files_punch(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response);

#endif
