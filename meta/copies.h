/*
 * @file copies.h
 * The `copies` table: the replicas of tiles besides the primary in the
 * `tiles` table (replicaset.h reads both as one set): those a file's
 * copies=N asks for, and those `tessera rebalance` adds above it (ViPIOS
 * buddy access: a machine that reads a tile often gets a replica on its
 * own datanode). Key: u64 BE ino + u64 BE tile + u32 BE node, so a file's
 * replicas are one cursor range in (tile, node) order. Value: u64 version,
 * the replica's own tile file on that node.
 *
 * Invariants kept by the callers: a replica exists only for a tile that has
 * a primary, never on the primary's node, at most one per node; every one
 * that leaves the table enters the garbage table in the same transaction.
 * Writers write every replica (the mount fans each write out to all).
 */
#ifndef TESSERA_META_COPIES_H
#define TESSERA_META_COPIES_H

#include "store.h"

#include <stdint.h>

struct copies_entry {
    uint64_t tile;
    uint32_t node;
    uint64_t version;
};

/* Node's copy of (ino, tile): 0 and *version, -ENOENT if none, or a negative errno. */
int copies_get(struct store_txn *txn, uint64_t ino, uint64_t tile, uint32_t node,
               uint64_t *version);
/* Records (or replaces) node's copy of (ino, tile). 0 or a negative errno. */
int copies_put(struct store_txn *txn, uint64_t ino, const struct copies_entry *entry);
/* Forgets node's copy, without queueing it. 0, -ENOENT, or a negative errno. */
int copies_delete(struct store_txn *txn, uint64_t ino, uint64_t tile, uint32_t node);

/*
 * Calls visit for each copy of tiles first_tile..last_tile (inclusive) of
 * ino, in (tile, node) order. visit returns 0 to go on, > 0 to stop, < 0 to
 * fail. Returns 0 when the range is exhausted, visit's positive value when
 * it stopped, or a negative errno. visit must not change the table.
 */
typedef int (*copies_visit_fn)(void *arg, const struct copies_entry *entry);
int copies_scan(struct store_txn *txn, uint64_t ino, uint64_t first_tile, uint64_t last_tile,
                copies_visit_fn visit, void *arg);

/*
 * Drops every copy of tiles first_tile..last_tile (inclusive) of ino and
 * queues each in the garbage table for its node; *dropped (may be NULL)
 * counts them. Returns 0 or a negative errno.
 */
int copies_drop(struct store_txn *txn, uint64_t ino, uint64_t first_tile, uint64_t last_tile,
                uint64_t *dropped);

#endif
