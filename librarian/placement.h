/*
 * @file placement.h
 * Choosing datanodes for new tiles. Pure: a snapshot of the candidate nodes
 * goes in, node ids come out. The core uses round-robin; throughput-driven
 * policies (Panda's static and dynamic allocation) plug in behind the same
 * call.
 */
#ifndef TESSERA_PLACEMENT_H
#define TESSERA_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

enum placement_policy { PLACEMENT_ROUNDROBIN = 0 };

/* What placement knows of one datanode. */
struct placement_node {
    uint32_t id;
    int up;              /* nonzero if it takes new tiles */
    uint64_t free_bytes; /* free space it last reported */
};

/*
 * Picks a node for each of `count` new tiles, tiles first_tile..., of a file
 * whose tiles have tile_bytes each, writing node ids to out[count].
 * Round-robin: tile i goes to the (i + ino) mod n-th usable node, so
 * different files start on different nodes. A node is usable when up and
 * with room for at least one tile.
 * Returns 0, or -ENOSPC when no node is usable (nodes exist but are full)
 * or -ENODEV when none is up.
 */
int placement_choose(enum placement_policy policy, const struct placement_node *nodes,
                     size_t node_count, uint64_t ino, uint64_t first_tile, uint32_t tile_bytes,
                     size_t count, uint32_t *out);

#endif
