/*
 * @file tile.h
 * Tile arithmetic of linear layouts: which tiles a byte range of a file
 * touches, and where in each tile. Tile i holds file bytes
 * [i * tile_bytes, (i + 1) * tile_bytes).
 */
#ifndef TESSERA_TILE_H
#define TESSERA_TILE_H

#include <stdbool.h>
#include <stdint.h>

#define TILE_DEFAULT_BYTES (1u << 20)

/* One piece of a byte range that falls inside a single tile. */
struct tile_segment {
    uint64_t tile;        /* tile index */
    uint32_t tile_offset; /* offset inside the tile */
    uint32_t length;      /* bytes in this tile */
    uint64_t file_offset; /* where the piece starts in the file */
};

/* Walks the segments of [offset, offset + length) in order. */
struct tile_walk {
    uint64_t next_offset;
    uint64_t end;
    uint32_t tile_bytes;
};

void tile_walk_init(struct tile_walk *walk, uint64_t offset, uint64_t length,
                    uint32_t tile_bytes);
/* Fills segment with the next piece; returns false when the range is done. */
bool tile_walk_next(struct tile_walk *walk, struct tile_segment *segment);

/* Index of the tile holding byte `offset`. */
uint64_t tile_index_of(uint64_t offset, uint32_t tile_bytes);
/* Number of tiles needed to hold `size` bytes. */
uint64_t tile_count_for(uint64_t size, uint32_t tile_bytes);
/* Bytes of tile `tile` that lie below `size` (0..tile_bytes). */
uint32_t tile_bytes_below(uint64_t tile, uint64_t size, uint32_t tile_bytes);

#endif
