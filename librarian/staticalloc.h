/*
 * @file staticalloc.h
 * Panda's static allocation (seed 000, section 3.2): each new tile goes to
 * the node that would finish writing it earliest, given how fast each node
 * writes and how much work it already has queued.
 *
 *   finish(n) = (backlog(n) + tile_bytes) / bytes_per_sec(n)
 *
 * The tile goes to the node with the smallest finish(n), whose backlog then
 * grows by tile_bytes, and the next tile is placed the same way. The paper's
 * example: speeds 5 and 2 MB/s, 1 MB tiles, no backlog: tile 0 to node 0
 * (0.2 s < 0.5 s), tile 1 to node 0 (0.4 s < 0.5 s), tile 2 to node 1
 * (0.6 s > 0.5 s).
 *
 * Pure arithmetic on plain structs: no clock, no I/O. Finish times are
 * compared exactly (128-bit cross products), so ties are real ties and are
 * broken by a caller-given rotation, not by rounding noise.
 */
#ifndef TESSERA_STATICALLOC_H
#define TESSERA_STATICALLOC_H

#include <stddef.h>
#include <stdint.h>

struct staticalloc_node {
    uint64_t bytes_per_sec; /* write throughput; must be > 0 */
    uint64_t backlog_bytes; /* queued work; grows by each tile assigned */
};

/*
 * The index of the node that finishes one more tile of tile_bytes earliest.
 * Equal finish times go to the first such node at or after index `first`,
 * counting cyclically (so equal nodes take turns when `first` advances).
 * The chosen node's backlog grows by tile_bytes. node_count must be > 0 and
 * every bytes_per_sec > 0 (the caller substitutes an estimate for unknown
 * speeds); first is taken modulo node_count.
 */
size_t staticalloc_pick(struct staticalloc_node *nodes, size_t node_count, uint32_t tile_bytes,
                        size_t first);

/*
 * Assigns `count` tiles one after another with staticalloc_pick(), tile i
 * breaking ties from index (first + i): out[i] gets the node index of
 * tile i. Returns 0, or -EINVAL if node_count is 0 or a node has
 * bytes_per_sec 0 (nothing is assigned then).
 */
int staticalloc_assign(struct staticalloc_node *nodes, size_t node_count, uint32_t tile_bytes,
                       size_t count, size_t first, size_t *out);

#endif
