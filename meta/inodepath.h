/*
 * @file inodepath.h
 * A name for an inode, for messages that must name files (HEALTH's
 * unavailable files): meta keeps no parent of a regular file, so this
 * scans the dirents table, once per directory level for all the inodes
 * asked at once. For the rare reports that need it, never a request path.
 */
#ifndef TESSERA_META_INODEPATH_H
#define TESSERA_META_INODEPATH_H

#include "store.h"

#include <stddef.h>
#include <stdint.h>

#define INODEPATH_MAX 1024

/*
 * Fills paths[i] (INODEPATH_MAX bytes each) with "/dir/name" of inos[i]
 * (one of its names if it has several), "" when none is found (unlinked,
 * or deeper than 64 levels). count <= 64. 0 or a negative errno.
 */
int inodepath_find(struct store_txn *txn, const uint64_t *inos, size_t count,
                   char (*paths)[INODEPATH_MAX]);

#endif
