/*
 * @file handlers_exports.h
 * Meta's export table (exports.h) applied to every request of a mount key,
 * before its handler runs: a key the table does not list gets
 * TS_ERR_PERM, a read-only export TS_ERR_ROFS for every namespace change
 * (and for opening to write, allocating tiles, a directory lease for
 * creates), and with root_squash the owners it sends (uid or gid 0)
 * become EXPORTS_NOBODY. Requests of other keys, and every request on a
 * link without keys, go straight to their handler.
 */
#ifndef TESSERA_META_HANDLERS_EXPORTS_H
#define TESSERA_META_HANDLERS_EXPORTS_H

#include "rpc.h"

#include <stdint.h>

/*
 * Fills table with handlers_table's handlers, each behind the export gate
 * (NULL where handlers_table has none): the table meta's server uses.
 */
void handlers_exports_table(rpc_handler_fn table[TS_OP_MAX]);

/* The gate itself: checks request against the exports, then calls handlers_table[op]. */
int handlers_exports_gate(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response);

/*
 * The tile token rights (common/tiletoken.h) meta gives the holders in a
 * TILE_MAP or REPLICA_DROP reply to the peer with ZAP user id key_user:
 * TILETOKEN_READ | TILETOKEN_WRITE to a mount key whose export may write,
 * and on a link without keys (""); TILETOKEN_READ to a read-only export
 * and to every other key (admin: fsck and layout read the map, never
 * write a tile). The gate before (handlers_subtree.c) answers TILE_MAP
 * only for files of the mount's subtree, so a mount holds read tokens for
 * those alone.
 */
struct service;
uint32_t handlers_exports_token_rights(struct service *service, const char *key_user);

/*
 * Reads service->exports_path into service->exports when the file changed
 * (mtime or size) or appeared or went away; now_ms limits the checks to one
 * a second unless force. A file that does not parse leaves the table as it
 * was (logged). 0, or -EINVAL with why when forced and the file is bad.
 */
struct service;
int handlers_exports_refresh(struct service *service, int64_t now_ms, bool force, char *why,
                             size_t why_cap);

#endif
