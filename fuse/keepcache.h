/*
 * @file keepcache.h
 * Whether the kernel may keep a file's cached pages when it is opened
 * again: the rule NFS clients use for close-to-open consistency. At each
 * open the mount has the file's attributes fresh from meta; if its
 * mtime, ctime, size and generation are those of the last open through
 * this mount, no one has changed its bytes since (every write, truncate or
 * replacement moves them: ctime cannot be set by hand), so the pages the
 * kernel holds are still right and a re-read costs no request at all.
 * Otherwise the kernel drops them, as it did at every open before.
 *
 * Writes through this mount are in the page cache too, but a write that
 * fails on its way to the datanodes would leave pages no datanode has:
 * a handle that wrote forgets its file at release, so the next open drops
 * them.
 *
 * A fixed table of the files opened last (a newer file takes an older
 * one's slot: forgetting only costs a re-read). Thread-safe.
 */
#ifndef TESSERA_KEEPCACHE_H
#define TESSERA_KEEPCACHE_H

#include "proto.h"

#include <stdbool.h>
#include <stddef.h>

struct keepcache;

/* A table of `slots` files (rounded up to a power of two); NULL: no memory. */
struct keepcache *keepcache_new(size_t slots);
/* Frees; accepts NULL, clears *cachep. */
void keepcache_destroy(struct keepcache **cachep);

/*
 * At an open, with the attributes meta answered: true when the kernel may
 * keep the file's pages (nothing changed since the last open here). The
 * attributes are remembered for the next open either way.
 */
bool keepcache_open(struct keepcache *cache, const struct ts_attr *attr);

/* The file's pages may differ from what the datanodes hold: drop them at the next open. */
void keepcache_forget(struct keepcache *cache, uint64_t ino);

#endif
