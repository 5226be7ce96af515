/*
 * @file replicaset.h
 * A tile's replica set (DESIGN.md "Replicas and integrity"): its holders,
 * the primary (the `tiles` table's entry, tiles.h) first, then the further
 * replicas (the `copies` table, copies.h) in node order. Every holder is
 * its own tile file on its own datanode, with its own version (versions
 * are issued once, STORE_NEXT_VERSION, so a version names one holder's
 * file for good).
 *
 * Invariants kept here: a set is never emptied by a drop (the last holder
 * stays); a holder that leaves the set enters the garbage table in the same
 * transaction; when the primary leaves, the lowest-node replica becomes the
 * primary (keeping the tile's flags) in that transaction too.
 */
#ifndef TESSERA_META_REPLICASET_H
#define TESSERA_META_REPLICASET_H

#include "proto.h"
#include "store.h"
#include "tiles.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct replicaset_holder {
    uint32_t node;
    uint64_t version;
};

struct replicaset {
    uint32_t flags; /* the tile's TS_TILE_* */
    size_t count;   /* holders[0] is the primary */
    struct replicaset_holder holders[TS_MAX_HOLDERS];
};

/*
 * The holders of (ino, tile): 0, -ENOENT for a hole, or a negative errno.
 * Replicas past TS_MAX_HOLDERS (none are ever made) are not listed.
 */
int replicaset_get(struct store_txn *txn, uint64_t ino, uint64_t tile, struct replicaset *set);

/* Index of node in set, or -1. */
int replicaset_find(const struct replicaset *set, uint32_t node);

/*
 * Removes holder (node, version) of (ino, tile) as REPLICA_DROP says
 * (proto.h): *dropped tells whether it did (false: the tile is a hole, or
 * node no longer holds that version: nothing changes). Returns 0, -EBUSY
 * when that holder is the tile's last, or a negative errno.
 */
int replicaset_drop(struct store_txn *txn, uint64_t ino, uint64_t tile, uint32_t node,
                    uint64_t version, bool *dropped);

#endif
