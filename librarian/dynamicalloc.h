/*
 * @file dynamicalloc.h
 * Panda's dynamic allocation (seed 000, section 3.2): nodes pull work in
 * rounds, and the rounds shrink as a write of known size nears its end, so
 * that an uneven early split is smoothed over at the end.
 *
 * The schedule, with N tiles per node per round (the paper used N = 20):
 * while more than half of the tiles are left, a round hands out N tiles per
 * node; once between 1/m and 1/(m+1) of them is left (m >= 1, i.e.
 * m = floor(total / left)), at most max(1, floor(N / m)) per node. A round
 * is split among the nodes by their speed, as static allocation splits it.
 *
 * The paper's example, 128 tiles, two nodes of 5 and 3 MB/s, N = 20:
 * round 1 hands out 40 tiles (25 and 15); 88 are left, more than half, so
 * round 2 again 40 (25 and 15); 48 are left (between 1/2 and 1/3: m = 2),
 * so round 3 hands out 2 * floor(20 / 2) = 20; and so on until none is left.
 *
 * In Tessera the writer (the FUSE client) is Panda's manager: it keeps a
 * bounded number of tiles in flight per datanode and, when a node frees a
 * slot, asks meta (TILE_MAP with allocate = 1 and node = that node) for
 * the node's next batch, sized by dynamicalloc_batch(..., nodes = 1).
 * Pure arithmetic: no clock, no I/O.
 */
#ifndef TESSERA_DYNAMICALLOC_H
#define TESSERA_DYNAMICALLOC_H

#include <stddef.h>
#include <stdint.h>

/* The paper's N: tiles per node in a round while more than half is left. */
#define DYNAMICALLOC_DEFAULT_BATCH 20

/*
 * Tiles to hand out in the next round to `nodes` nodes, when tiles_left of
 * a write of tiles_total tiles are not handed out yet and `batch` is N:
 * nodes * max(1, floor(batch / m)) with m = floor(tiles_total / tiles_left),
 * never more than tiles_left. With nodes = 1 it is one node's next batch.
 *
 * Edge cases: tiles_left = 0 gives 0; tiles_total = 0 means the size is not
 * known (a stream): every round is nodes * batch, capped by tiles_left
 * (pass UINT64_MAX when that is unknown too); tiles_left > tiles_total is
 * taken as m = 1; batch 0 is taken as 1; the result saturates at
 * UINT32_MAX.
 */
uint32_t dynamicalloc_batch(uint64_t tiles_left, uint64_t tiles_total, uint32_t batch,
                            uint32_t nodes);

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
