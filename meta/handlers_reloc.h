/*
 * @file handlers_reloc.h
 * The requests of access profiles, read copies and the relocation journal
 * (proto.h: TILE_UNCOPY, PROFILE_SET, PROFILE_RECORD, PROFILE_GET,
 * MOVE_BEGIN, MOVE_COMMIT, MOVE_ABORT, MOVE_LIST). Same contract as every
 * handler of handlers.h, whose table lists them: ctx is the struct service,
 * one transaction per request, TS_ERR_BADMSG for a malformed payload, and a
 * refusal names its cause in response->error_text.
 */
#ifndef TESSERA_META_HANDLERS_RELOC_H
#define TESSERA_META_HANDLERS_RELOC_H

#include "rpc.h"

int handlers_reloc_tile_uncopy(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response);
int handlers_reloc_profile_set(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response);
int handlers_reloc_profile_record(void *ctx, const struct rpc_request *request,
                                  struct rpc_response *response);
int handlers_reloc_profile_get(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response);
int handlers_reloc_move_begin(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response);
int handlers_reloc_move_commit(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response);
int handlers_reloc_move_abort(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response);
int handlers_reloc_move_list(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response);

#endif
