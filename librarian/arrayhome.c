/*
 * @file arrayhome.c
 * See arrayhome.h. The interleaved order is built per call: snapshots have
 * tens of nodes, and meta builds one snapshot per TILE_MAP request.
 */
#include "arrayhome.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

__extension__ typedef unsigned __int128 arrayhome_wide;

uint64_t arrayhome_chunk_count(const struct arraylayout *layout)
{
    uint64_t count = 1;
    for (uint32_t d = 0; d < layout->grid.dims; d++)
        count *= layout->grid.axis[d].chunks;
    return count;
}

int arrayhome_chunk_of(const struct arraylayout *layout, uint64_t tile, uint64_t *chunk)
{
    struct arraylayout_tile info;
    uint64_t index = 0;
    int rc = arraylayout_tile_info(layout, tile, &info);

    if (rc < 0)
        return rc;
    for (uint32_t d = 0; d < layout->grid.dims; d++)
        index = index * layout->grid.axis[d].chunks + info.chunk[d];
    *chunk = index;
    return 0;
}

int arrayhome_pick(const struct placement_node *nodes, size_t count, uint64_t ino, uint64_t chunk,
                   uint32_t *home)
{
    size_t *order = NULL, *rank = NULL, *first = NULL;
    size_t up = 0, machines = 0, dealt = 0;
    int rc = -ENOMEM;

    for (size_t i = 0; i < count; i++)
        up += nodes[i].up != 0;
    if (up == 0)
        return -ENODEV;
    order = calloc(up, sizeof(*order));
    rank = calloc(count, sizeof(*rank));
    first = calloc(up, sizeof(*first));
    if (!order || !rank || !first)
        goto out;
    /*
     * rank[i]: how many up nodes of i's machine come before i; first[]:
     * each machine's first up node, in snapshot order.
     */
    for (size_t i = 0; i < count; i++) {
        if (!nodes[i].up)
            continue;
        for (size_t j = 0; j < i; j++)
            rank[i] += nodes[j].up && nodes[j].machine == nodes[i].machine;
        if (rank[i] == 0)
            first[machines++] = i;
    }
    /*
     * Round r deals the rank-r node of each machine, the machines rotated
     * by ino, so the first `machines` chunks of every file are on distinct
     * machines whatever file it is.
     */
    for (size_t round = 0; dealt < up; round++) {
        for (size_t k = 0; k < machines; k++) {
            uint32_t machine = nodes[first[(ino % machines + k) % machines]].machine;
            for (size_t i = 0; i < count; i++) {
                if (nodes[i].up && nodes[i].machine == machine && rank[i] == round)
                    order[dealt++] = i;
            }
        }
    }
    *home = nodes[order[chunk % up]].id;
    rc = 0;
out:
    free(order);
    free(rank);
    free(first);
    return rc;
}

/* What a node is judged slow on: its steady measure when meta has one
 * (0: an unproven node is neither slow nor a peer to compare with). */
static uint64_t arrayhome_speed(const struct placement_node *node)
{
    if (node->steady_write_bytes_per_sec == PLACEMENT_SPEED_UNPROVEN)
        return 0;
    return node->steady_write_bytes_per_sec ? node->steady_write_bytes_per_sec
                                            : node->write_bytes_per_sec;
}

static int arrayhome_compare_speeds(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

bool arrayhome_slow(const struct placement_node *nodes, size_t count, uint32_t home)
{
    uint64_t home_speed = 0, median;
    uint64_t *peers = calloc(count ? count : 1, sizeof(*peers));
    size_t measured = 0;
    bool slow;

    if (!peers)
        return false; /* no memory to judge: the home keeps its chunk */
    for (size_t i = 0; i < count; i++) {
        if (nodes[i].id == home)
            home_speed = arrayhome_speed(&nodes[i]);
        else if (nodes[i].up && arrayhome_speed(&nodes[i]) > 0)
            peers[measured++] = arrayhome_speed(&nodes[i]);
    }
    if (home_speed == 0 || measured == 0) {
        free(peers);
        return false;
    }
    qsort(peers, measured, sizeof(*peers), arrayhome_compare_speeds);
    /* The mean of the middle two when even, halved first so it cannot overflow. */
    median = peers[(measured - 1) / 2] / 2 + peers[measured / 2] / 2 +
             (peers[(measured - 1) / 2] % 2 + peers[measured / 2] % 2) / 2;
    free(peers);
    slow = (arrayhome_wide)home_speed * 100 < (arrayhome_wide)median * ARRAYHOME_SLOW_PERCENT;
    return slow;
}

int arrayhome_place(struct placement_node *nodes, size_t count, const struct arraylayout *layout,
                    uint64_t ino, uint64_t tile, uint32_t tile_bytes, uint32_t *node)
{
    uint64_t chunk;
    uint32_t home;
    int rc = arrayhome_chunk_of(layout, tile, &chunk);

    if (rc < 0)
        return rc;
    rc = arrayhome_pick(nodes, count, ino, chunk, &home);
    if (rc < 0)
        return rc;
    if (arrayhome_slow(nodes, count, home))
        return placement_choose(PLACEMENT_STATIC, nodes, count, ino, tile, tile_bytes, 1, node);
    return placement_choose_named(home, nodes, count, ino, tile, tile_bytes, 1, node);
}
