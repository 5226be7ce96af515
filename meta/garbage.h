/*
 * @file garbage.h
 * The `garbage` table: tiles that no file refers to any more and that their
 * datanode still has to delete. A tile goes here in the same transaction that
 * drops it from the tile map (truncate, unlink of the last link), is handed
 * to its datanode in each HEARTBEAT reply, and leaves when the datanode
 * reports it deleted. Key: u32 BE node + u64 BE ino + u64 BE tile + u64 BE
 * version, so one node's records are one cursor range.
 */
#ifndef TESSERA_META_GARBAGE_H
#define TESSERA_META_GARBAGE_H

#include "proto.h"
#include "store.h"

#include <stdint.h>

struct garbage_record {
    uint32_t node;
    uint64_t ino;
    uint64_t tile;
    uint64_t version;
};

/* Queues a tile for deletion (idempotent). 0 or a negative errno. */
int garbage_add(struct store_txn *txn, const struct garbage_record *record);
/* Whether the tile is queued: 1, 0, or a negative errno. */
int garbage_has(struct store_txn *txn, const struct garbage_record *record);
/* Forgets a deleted tile. 0, -ENOENT if it was not queued, or a negative errno. */
int garbage_remove(struct store_txn *txn, const struct garbage_record *record);
/*
 * Appends up to `max` of node's queued tiles to `out` as wire records
 * (TS_REC_TILE_FILE, ts_tile_file_rec_bytes each) and sets
 * *count. Returns 0, -ENOBUFS if `out` filled up first, or a negative errno.
 */
int garbage_list(struct store_txn *txn, uint32_t node, uint32_t max, struct ts_writer *out,
                 uint32_t *count);

#endif
