/*
 * @file dynamicalloc.c
 * See dynamicalloc.h.
 */
#include "dynamicalloc.h"

#include "staticalloc.h"

#include <errno.h>
#include <stdlib.h>

uint32_t dynamicalloc_batch(uint64_t tiles_left, uint64_t tiles_total, uint32_t batch,
                            uint32_t nodes)
{
    uint64_t per_node = batch ? batch : 1;
    uint64_t round;

    if (tiles_left == 0 || nodes == 0)
        return 0;
    if (tiles_total != 0 && tiles_left < tiles_total) {
        /* Between 1/m and 1/(m+1) of the write is left. */
        uint64_t m = tiles_total / tiles_left;
        per_node = per_node / m;
        if (per_node == 0)
            per_node = 1;
    }
    round = per_node * nodes; /* both below 2^32: no overflow */
    if (round > tiles_left)
        round = tiles_left;
    return round > UINT32_MAX ? UINT32_MAX : (uint32_t)round;
}

int dynamicalloc_round(const uint64_t *bytes_per_sec, size_t node_count, uint32_t tile_bytes,
                       uint32_t round_tiles, uint32_t *counts)
{
    struct staticalloc_node *queues;

    if (node_count == 0)
        return -EINVAL;
    for (size_t i = 0; i < node_count; i++) {
        if (bytes_per_sec[i] == 0)
            return -EINVAL;
    }
    queues = calloc(node_count, sizeof(*queues));
    if (!queues)
        return -ENOMEM;
    for (size_t i = 0; i < node_count; i++) {
        queues[i].bytes_per_sec = bytes_per_sec[i];
        counts[i] = 0;
    }
    for (uint32_t tile = 0; tile < round_tiles; tile++)
        counts[staticalloc_pick(queues, node_count, tile_bytes, 0)]++;
    free(queues);
    return 0;
}
