/*
 * @file tiles.h
 * The `tiles` table: where each allocated tile of a file lives.
 * Key: u64 BE ino + u64 BE tile index, so a file's tiles are one cursor
 * range in index order. Value: u32 node id, u64 version, u32 flags
 * (TS_TILE_STORED; records written before flags existed end after the
 * version and read as 0). A tile without a record is a hole (reads as
 * zeros); a record without TS_TILE_STORED is a tile placed but not yet
 * reported written by any holder (a missing file still reads as zeros).
 */
#ifndef TESSERA_META_TILES_H
#define TESSERA_META_TILES_H

#include "store.h"

#include <stdint.h>

struct tiles_entry {
    uint32_t node;    /* datanode holding the tile, never 0 */
    uint64_t version; /* names the tile file on the datanode */
    uint32_t flags;   /* TS_TILE_* (proto.h) */
};

/* 0, -ENOENT for a hole, or a negative errno. */
int tiles_get(struct store_txn *txn, uint64_t ino, uint64_t tile, struct tiles_entry *entry);
int tiles_put(struct store_txn *txn, uint64_t ino, uint64_t tile, const struct tiles_entry *entry);
/*
 * Drops every tile of ino with index >= first_tile and queues each in the
 * garbage table for its datanode, the other replicas (copies.h) included;
 * *dropped (may be NULL) counts the primaries only (tiles_allocated).
 * Returns 0 or a negative errno.
 */
int tiles_drop_from(struct store_txn *txn, uint64_t ino, uint64_t first_tile, uint64_t *dropped);
/* As tiles_drop_from, for the tiles first_tile..last_tile (inclusive) only. */
int tiles_drop_range(struct store_txn *txn, uint64_t ino, uint64_t first_tile, uint64_t last_tile,
                     uint64_t *dropped);

#endif
