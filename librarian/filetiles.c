/*
 * @file filetiles.c
 * See filetiles.h.
 */
#include "filetiles.h"

#include <errno.h>
#include <stdlib.h>

void filetiles_init_linear(struct filetiles *layout, uint32_t tile_bytes)
{
    layout->max_tile_bytes = tile_bytes ? tile_bytes : TILE_DEFAULT_BYTES;
    layout->array = NULL;
}

int filetiles_init_array(struct filetiles *layout, const char *text, size_t len, char *message,
                      size_t cap)
{
    struct arrayspec spec;
    int error = arrayspec_parse(text, len, &spec, message, cap);
    if (error != 0)
        return error;
    layout->array = malloc(sizeof(*layout->array));
    if (!layout->array)
        return -ENOMEM;
    error = arraylayout_init(layout->array, &spec, message, cap);
    if (error != 0) {
        free(layout->array);
        layout->array = NULL;
        return error;
    }
    layout->max_tile_bytes = layout->array->max_tile_bytes;
    return 0;
}

void filetiles_fini(struct filetiles *layout)
{
    free(layout->array);
    layout->array = NULL;
}

void filetiles_walk_init(struct filetiles_walk *walk, const struct filetiles *layout,
                      uint64_t offset, uint64_t length)
{
    walk->is_array = layout->array != NULL;
    if (walk->is_array)
        arraylayout_walk_init(&walk->array, layout->array, offset, length);
    else
        tile_walk_init(&walk->linear, offset, length, layout->max_tile_bytes);
}

bool filetiles_walk_next(struct filetiles_walk *walk, struct tile_segment *segment)
{
    if (walk->is_array)
        return arraylayout_walk_next(&walk->array, segment);
    return tile_walk_next(&walk->linear, segment);
}

uint32_t filetiles_tile_bytes(const struct filetiles *layout, uint64_t tile)
{
    if (layout->array)
        return arraylayout_tile_bytes(layout->array, tile);
    return layout->max_tile_bytes;
}

uint64_t filetiles_tile_count(const struct filetiles *layout, uint64_t size)
{
    if (layout->array)
        return arraylayout_tile_count(layout->array);
    return tile_count_for(size, layout->max_tile_bytes);
}
