/*
 * @file dynamicalloc.c
 * See dynamicalloc.h.
 */
#include "dynamicalloc.h"

#include "staticalloc.h"

#include <errno.h>
#include <stdlib.h>

uint32_t dynamicalloc_pick(const struct dynamicalloc_node *nodes, size_t count, uint32_t start,
                           uint32_t tiles, int slots)
{
    uint32_t chosen = 0;
    int best_load = slots;
    for (size_t k = 0; k < count; k++) {
        const struct dynamicalloc_node *node = &nodes[((size_t)start + k) % count];
        if (node->in_flight + (int)tiles <= slots && node->in_flight < best_load) {
            best_load = node->in_flight;
            chosen = node->id;
        }
    }
    return chosen;
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
