/*
 * @file dynamicalloc.h
 * Panda's dynamic allocation (seed 000, section 3.2): nodes pull work at
 * their own pace instead of being handed a split fixed ahead.
 *
 * In Tessera the writer (the FUSE client) is Panda's manager, without the
 * central hot spot: it keeps at most `slots` tile writes in flight per
 * datanode and hands its next batch of new tiles to a node with room for
 * all of it, the least loaded first (dynamicalloc_pick(), called by the
 * mount's fuse/tileplace.c over a snapshot of its writes in flight); meta
 * then places the batch there (TILE_MAP with allocate = 1 and node = the
 * pick; placement_choose_named()). A fast node frees its slots first and so
 * gets the next batch; a slow one is never waited on while another has
 * room. The writer does not know how long a stream will be, so its batches
 * have a fixed size (the paper shrinks them as a write of known size nears
 * its end; nothing here does).
 *
 * dynamicalloc_round() splits one of the paper's rounds among nodes by
 * their speed; the mount does not use it (its nodes pull instead).
 * Pure arithmetic: no clock, no I/O.
 */
#ifndef TESSERA_DYNAMICALLOC_H
#define TESSERA_DYNAMICALLOC_H

#include <stddef.h>
#include <stdint.h>

/* One datanode as the writer sees it when it picks. */
struct dynamicalloc_node {
    uint32_t id;   /* nonzero */
    int in_flight; /* tile writes the writer has in flight to it */
};

/*
 * The node that gets the writer's next `tiles` new tiles: among the
 * `count` nodes with in_flight + tiles <= slots, the one with the fewest
 * in flight; ties go to the first met in the order nodes[start % count],
 * nodes[(start + 1) % count], ..., so a caller that advances `start` after
 * each pick has equally loaded nodes take turns. Returns its id, or 0 when
 * no node has room for the batch (or count is 0): the caller waits for a
 * write to finish, or leaves the choice to meta.
 */
uint32_t dynamicalloc_pick(const struct dynamicalloc_node *nodes, size_t count, uint32_t start,
                           uint32_t tiles, int slots);

/*
 * Splits a round of round_tiles tiles among node_count nodes in proportion
 * to their speed, by earliest finish time from an empty queue
 * (staticalloc_pick(), ties to the lower index): counts[i] gets node i's
 * share; the shares add up to round_tiles. Returns 0, -EINVAL if
 * node_count is 0 or a speed is 0, or -ENOMEM.
 */
int dynamicalloc_round(const uint64_t *bytes_per_sec, size_t node_count, uint32_t tile_bytes,
                       uint32_t round_tiles, uint32_t *counts);

#endif
