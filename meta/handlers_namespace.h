/*
 * @file handlers_namespace.h
 * The requests of the namespace (proto.h: LOOKUP, GETATTR, MKNOD, MKDIR,
 * SYMLINK, UNLINK, RMDIR, UNLINK_MANY, RENAME, LINK, READLINK, CREATE_MANY).
 * Same contract as every handler of handlers.h, whose table lists them:
 * ctx is the struct service, one transaction per request, TS_ERR_BADMSG
 * for a malformed payload; a name in a directory another mount holds a
 * lease on gets TS_ERR_LEASED (leases.h).
 */
#ifndef TESSERA_META_HANDLERS_NAMESPACE_H
#define TESSERA_META_HANDLERS_NAMESPACE_H

#include "rpc.h"

int handlers_namespace_lookup(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response);
int handlers_namespace_getattr(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response);
int handlers_namespace_mknod(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response);
int handlers_namespace_mkdir(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response);
int handlers_namespace_symlink(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response);
int handlers_namespace_unlink(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response);
int handlers_namespace_rmdir(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response);
int handlers_namespace_unlink_many(void *ctx, const struct rpc_request *request,
                                   struct rpc_response *response);
int handlers_namespace_rename(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response);
int handlers_namespace_link(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response);
int handlers_namespace_readlink(void *ctx, const struct rpc_request *request,
                                struct rpc_response *response);
int handlers_namespace_create_many(void *ctx, const struct rpc_request *request,
                                   struct rpc_response *response);

#endif
