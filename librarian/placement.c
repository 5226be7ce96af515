/*
 * @file placement.c
 * See placement.h.
 */
#include "placement.h"

#include <errno.h>

static int placement_usable(const struct placement_node *node, uint32_t tile_bytes)
{
    return node->up && node->free_bytes >= tile_bytes;
}

int placement_choose(enum placement_policy policy, const struct placement_node *nodes,
                     size_t node_count, uint64_t ino, uint64_t first_tile, uint32_t tile_bytes,
                     size_t count, uint32_t *out)
{
    size_t usable = 0;
    size_t any_up = 0;

    (void)policy; /* round-robin is the only policy so far */
    for (size_t i = 0; i < node_count; i++) {
        usable += placement_usable(&nodes[i], tile_bytes) != 0;
        any_up += nodes[i].up != 0;
    }
    if (usable == 0)
        return any_up ? -ENOSPC : -ENODEV;
    for (size_t t = 0; t < count; t++) {
        size_t rank = (size_t)((first_tile + t + ino) % usable);
        for (size_t i = 0; i < node_count; i++) {
            if (!placement_usable(&nodes[i], tile_bytes))
                continue;
            if (rank == 0) {
                out[t] = nodes[i].id;
                break;
            }
            rank--;
        }
    }
    return 0;
}
