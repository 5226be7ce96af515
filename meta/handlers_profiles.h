/*
 * @file handlers_profiles.h
 * The requests of access profiles (proto.h: PROFILE_SET, PROFILE_RECORD,
 * PROFILE_GET). Same contract as every handler of handlers.h, whose table
 * lists them: ctx is the struct service, one transaction per request,
 * TS_ERR_BADMSG for a malformed payload, and a refusal names its cause in
 * response->error_text.
 */
#ifndef TESSERA_META_HANDLERS_PROFILES_H
#define TESSERA_META_HANDLERS_PROFILES_H

#include "rpc.h"

int handlers_profiles_set(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response);
int handlers_profiles_record(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response);
int handlers_profiles_get(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response);

#endif
