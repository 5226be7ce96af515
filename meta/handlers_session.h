/*
 * @file handlers_session.h
 * The requests of mount sessions (proto.h: SESSION_RENEW, SESSION_HOLDS):
 * a mount's lease on the opens it holds, and its announcement of them
 * after meta restarted or its lease expired. Same contract as every
 * handler of handlers.h, whose table lists them.
 */
#ifndef TESSERA_META_HANDLERS_SESSION_H
#define TESSERA_META_HANDLERS_SESSION_H

#include "rpc.h"

int handlers_session_renew(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response);
int handlers_session_holds(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response);

#endif
