/*
 * @file handlers.h
 * The requests tessera-meta serves: one handler per opcode, found through
 * one opcode-indexed table. The daemon gives the table to rpc_server_new();
 * the unit tests and the fuzzer call the same entries directly.
 *
 * Every handler takes a struct service * as ctx, decodes its request with
 * the generated ts_*_decode (a malformed payload gets TS_ERR_BADMSG and a
 * text naming the opcode), runs in one LMDB transaction (the request
 * happens completely or not at all) and encodes its reply into
 * response->payload.
 */
#ifndef TESSERA_META_HANDLERS_H
#define TESSERA_META_HANDLERS_H

#include "rpc.h"

/* handlers_table[op]: the handler of op, NULL for opcodes meta does not serve. */
extern const rpc_handler_fn handlers_table[TS_OP_MAX];

#endif
