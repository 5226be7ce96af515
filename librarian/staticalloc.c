/*
 * @file staticalloc.c
 * See staticalloc.h. Finish times are fractions (bytes / bytes per second);
 * two are compared by cross-multiplying in 128 bits, which is exact for any
 * u64 backlog and speed, so the paper's examples come out tie for tie.
 */
#include "staticalloc.h"

#include <errno.h>

__extension__ typedef unsigned __int128 staticalloc_wide;

/* Work a node would have after one more tile, saturating. */
static uint64_t staticalloc_work(const struct staticalloc_node *node, uint32_t tile_bytes)
{
    uint64_t work = node->backlog_bytes + tile_bytes;
    return work < node->backlog_bytes ? UINT64_MAX : work;
}

/* Whether a would finish its next tile strictly before b. */
static int staticalloc_earlier(const struct staticalloc_node *a, const struct staticalloc_node *b,
                               uint32_t tile_bytes)
{
    staticalloc_wide a_side = (staticalloc_wide)staticalloc_work(a, tile_bytes) * b->bytes_per_sec;
    staticalloc_wide b_side = (staticalloc_wide)staticalloc_work(b, tile_bytes) * a->bytes_per_sec;
    return a_side < b_side;
}

size_t staticalloc_pick(struct staticalloc_node *nodes, size_t node_count, uint32_t tile_bytes,
                        size_t first)
{
    size_t best = first % node_count;

    /* Visiting from `first` and replacing only on strictly earlier keeps ties there. */
    for (size_t step = 1; step < node_count; step++) {
        size_t candidate = (first + step) % node_count;
        if (staticalloc_earlier(&nodes[candidate], &nodes[best], tile_bytes))
            best = candidate;
    }
    nodes[best].backlog_bytes = staticalloc_work(&nodes[best], tile_bytes);
    return best;
}

int staticalloc_assign(struct staticalloc_node *nodes, size_t node_count, uint32_t tile_bytes,
                       size_t count, size_t first, size_t *out)
{
    if (node_count == 0)
        return -EINVAL;
    for (size_t i = 0; i < node_count; i++) {
        if (nodes[i].bytes_per_sec == 0)
            return -EINVAL;
    }
    first %= node_count;
    for (size_t i = 0; i < count; i++)
        out[i] = staticalloc_pick(nodes, node_count, tile_bytes, first + i % node_count);
    return 0;
}
