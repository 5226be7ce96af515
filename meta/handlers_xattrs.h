/*
 * @file handlers_xattrs.h
 * The requests of extended attributes (proto.h: SETXATTR, GETXATTR,
 * LISTXATTR, REMOVEXATTR), user.tessera.layout and user.tessera.array
 * among them. Same contract as every handler of handlers.h, whose table
 * lists them: ctx is the struct service, one transaction per request,
 * TS_ERR_BADMSG for a malformed payload, and a refused hint names its
 * cause in response->error_text.
 *
 * Also the array hint's part in other requests: a new inode's inheritance
 * of it (handlers_namespace.c) and an array file's compiled layout
 * (handlers_files.c).
 */
#ifndef TESSERA_META_HANDLERS_XATTRS_H
#define TESSERA_META_HANDLERS_XATTRS_H

#include "arrayhint.h"
#include "inodes.h"
#include "rpc.h"
#include "service.h"
#include "store.h"

#include <stdint.h>

int handlers_xattrs_set(void *ctx, const struct rpc_request *request,
                        struct rpc_response *response);
int handlers_xattrs_get(void *ctx, const struct rpc_request *request,
                        struct rpc_response *response);
int handlers_xattrs_list(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response);
int handlers_xattrs_remove(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response);

/*
 * A new inode in directory `parent` takes its array hint: a regular file
 * the hint resolved with its own tile size (and TS_ATTR_ARRAY), a
 * subdirectory the text as it is. Called before the new record is stored.
 */
int handlers_xattrs_array_inherit(struct store_txn *txn, struct service *service,
                                  struct inodes_record *created, uint64_t parent);

/*
 * The compiled layout of an array file into a buffer the caller frees;
 * TS_OK or a failure status (a missing or damaged record is internal).
 */
int handlers_xattrs_array_load(struct store_txn *txn, uint64_t ino, struct arraylayout **layoutp);

#endif
