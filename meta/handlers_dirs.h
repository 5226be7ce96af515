/*
 * @file handlers_dirs.h
 * The requests of directories as a whole (proto.h: READDIR, READDIRPLUS,
 * DIR_LEASE). Same contract as every handler of handlers.h, whose table
 * lists them: ctx is the struct service, one transaction per request,
 * TS_ERR_BADMSG for a malformed payload.
 */
#ifndef TESSERA_META_HANDLERS_DIRS_H
#define TESSERA_META_HANDLERS_DIRS_H

#include "rpc.h"

int handlers_dirs_readdir(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response);
int handlers_dirs_readdirplus(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response);
int handlers_dirs_lease(void *ctx, const struct rpc_request *request,
                        struct rpc_response *response);

#endif
