/*
 * @file layout.h
 * A file's layout as the data path sees it: which tiles a byte range
 * touches and how big each tile is, for linear files (common/tile.h) and
 * array files (librarian/arraylayout.h) alike.
 */
#ifndef TESSERA_LAYOUT_H
#define TESSERA_LAYOUT_H

#include "arraylayout.h"
#include "tile.h"

#include <stdbool.h>
#include <stdint.h>

struct file_layout {
    uint32_t max_tile_bytes;    /* the largest tile: the size of a buffer */
    struct arraylayout *array;  /* NULL for a linear file; owned */
};

struct layout_walk {
    bool is_array;
    struct tile_walk linear;
    struct arraylayout_walk array;
};

/* A linear layout of tile_bytes tiles. */
void layout_init_linear(struct file_layout *layout, uint32_t tile_bytes);
/*
 * An array layout from the text of user.tessera.array. Returns 0, or
 * -EINVAL with the reason in message, or -ENOMEM.
 */
int layout_init_array(struct file_layout *layout, const char *text, size_t len, char *message,
                      size_t cap);
void layout_fini(struct file_layout *layout);

void layout_walk_init(struct layout_walk *walk, const struct file_layout *layout,
                      uint64_t offset, uint64_t length);
bool layout_walk_next(struct layout_walk *walk, struct tile_segment *segment);
/* Bytes tile `tile` holds when full. */
uint32_t layout_tile_bytes(const struct file_layout *layout, uint64_t tile);
/* Tiles a file of `size` bytes spans (all tiles, for an array). */
uint64_t layout_tile_count(const struct file_layout *layout, uint64_t size);

#endif
