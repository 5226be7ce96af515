/*
 * @file filetiles.h
 * The byte-range -> tile mapping of any file (DESIGN.md "Layout of a
 * file"): which (tile, offset in tile, length) segments a byte range
 * touches and how big each tile is, for linear files (common/tile.h) and
 * array files (arraylayout.h) alike. Pure; the mount's data path walks
 * every read and write through it.
 */
#ifndef TESSERA_FILETILES_H
#define TESSERA_FILETILES_H

#include "arraylayout.h"
#include "tile.h"

#include <stdbool.h>
#include <stdint.h>

struct filetiles {
    uint32_t max_tile_bytes;    /* the largest tile: the size of a buffer */
    struct arraylayout *array;  /* NULL for a linear file; owned */
};

struct filetiles_walk {
    bool is_array;
    struct tile_walk linear;
    struct arraylayout_walk array;
};

/* A linear layout of tile_bytes tiles. */
void filetiles_init_linear(struct filetiles *layout, uint32_t tile_bytes);
/*
 * An array layout from the text of user.tessera.array. Returns 0, or
 * -EINVAL with the reason in message, or -ENOMEM.
 */
int filetiles_init_array(struct filetiles *layout, const char *text, size_t len, char *message,
                      size_t cap);
void filetiles_fini(struct filetiles *layout);

void filetiles_walk_init(struct filetiles_walk *walk, const struct filetiles *layout,
                      uint64_t offset, uint64_t length);
bool filetiles_walk_next(struct filetiles_walk *walk, struct tile_segment *segment);
/* Bytes tile `tile` holds when full. */
uint32_t filetiles_tile_bytes(const struct filetiles *layout, uint64_t tile);
/* Tiles a file of `size` bytes spans (all tiles, for an array). */
uint64_t filetiles_tile_count(const struct filetiles *layout, uint64_t size);

#endif
