/*
 * @file tile.c
 * See tile.h.
 */
#include "tile.h"

uint64_t tile_index_of(uint64_t offset, uint32_t tile_bytes) { return offset / tile_bytes; }

uint64_t tile_count_for(uint64_t size, uint32_t tile_bytes)
{
    return size / tile_bytes + (size % tile_bytes != 0);
}

uint32_t tile_bytes_below(uint64_t tile, uint64_t size, uint32_t tile_bytes)
{
    uint64_t start = tile * tile_bytes;
    if (size <= start)
        return 0;
    if (size - start >= tile_bytes)
        return tile_bytes;
    return (uint32_t)(size - start);
}

void tile_walk_init(struct tile_walk *walk, uint64_t offset, uint64_t length,
                    uint32_t tile_bytes)
{
    walk->next_offset = offset;
    /* Saturate instead of wrapping for ranges that reach past 2^64. */
    walk->end = length > UINT64_MAX - offset ? UINT64_MAX : offset + length;
    walk->tile_bytes = tile_bytes;
}

bool tile_walk_next(struct tile_walk *walk, struct tile_segment *segment)
{
    if (walk->tile_bytes == 0 || walk->next_offset >= walk->end)
        return false;
    uint64_t tile = walk->next_offset / walk->tile_bytes;
    uint32_t tile_offset = (uint32_t)(walk->next_offset % walk->tile_bytes);
    uint64_t room = walk->tile_bytes - tile_offset;
    uint64_t left = walk->end - walk->next_offset;
    segment->tile = tile;
    segment->tile_offset = tile_offset;
    segment->length = (uint32_t)(left < room ? left : room);
    segment->file_offset = walk->next_offset;
    walk->next_offset += segment->length;
    return true;
}
