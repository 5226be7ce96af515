/*
 * @file handlers_subtree.h
 * The subtree half of meta's export gate (handlers_exports.h): for a mount
 * key whose export names a directory other than `/` (exports.h), every
 * inode a request names is mapped and checked before its handler runs.
 * Inode 1 (the mount's FUSE root) becomes the exported directory, `..`
 * of that directory becomes `.`, and an inode not under the directory
 * (subtree.h) refuses the whole request with TS_ERR_PERM, so the handlers
 * themselves never learn about exports. An unlinked inode passes while
 * the sending mount holds it open (sessions.h), and SESSION_HOLDS may
 * announce any unlinked inode (it only keeps it, after a restart of meta,
 * for a mount that had it open).
 */
#ifndef TESSERA_META_HANDLERS_SUBTREE_H
#define TESSERA_META_HANDLERS_SUBTREE_H

#include "exports.h"
#include "rpc.h"

#include <stddef.h>
#include <stdint.h>

struct service;

/*
 * Checks request against rule's subtree and writes the request's payload,
 * its inodes mapped, into out (cap bytes, at least twice the payload's
 * length plus 64: batches are built twice in it). TS_OK with *out_len set
 * (SIZE_MAX: the op names no inode, the original payload goes on as it
 * is), TS_ERR_PERM with why (why_cap bytes), TS_ERR_BADMSG with why for a
 * payload that does not decode, or a failure status.
 */
int handlers_subtree_check(struct service *service, const struct exports_rule *rule,
                           const struct rpc_request *request, uint8_t *out, size_t cap,
                           size_t *out_len, char *why, size_t why_cap);

#endif
