/*
 * @file arrayhome.h
 * The home datanode of each disk chunk of an array file (issue 31, Panda's
 * "we respect the user's choice of high-level disk layout"): the mesh
 * says how the array spreads over I/O nodes, so the chunks go to distinct
 * machines first, then to distinct datanodes, instead of wherever the
 * writer's placement would put every tile (its own fastest node).
 *
 * Homes are dealt from the up datanodes in machine-interleaved order:
 * the machines (in the order their first up node appears in the
 * snapshot) rotated by ino, then round r takes the r-th up node of each
 * machine that has one. Chunk c gets entry c mod n, so the first chunks
 * of a file land on distinct machines while there are machines, then on
 * the machines' other nodes, and different files start
 * on different machines. Pure: no I/O.
 *
 * A home that is down or full is routed around by placement_choose_named()
 * (arrayhome_place()). A home that is slow is routed around too, the
 * Panda way: its chunk is cut into subchunks (the tiles) and those go by
 * static allocation (staticalloc.h, earliest finish given each node's
 * measured write throughput and backlog) over every usable node, the slow
 * home included with its share by speed. Slow means its measured write
 * throughput is below ARRAYHOME_SLOW_PERCENT % of the median measured
 * throughput of the other up nodes: a throttled or failing disk, not the
 * noise between healthy ones (the start-up probe of a few fsynced MiB
 * measured 57 to 344 MB/s on four datanodes sharing one disk of a busy
 * machine, and at 25 % two homes of a 2x2 mesh were judged slow; a chunk
 * moved on noise scatters the mesh the user asked for); an unmeasured home, or one with no
 * measured peer, is not slow. The chunks of healthy homes stay put, so
 * one slow node never piles the mesh on another.
 */
#ifndef TESSERA_ARRAYHOME_H
#define TESSERA_ARRAYHOME_H

#include "arraylayout.h"
#include "placement.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Disk chunks the layout has (the product of the chunks along each axis). */
uint64_t arrayhome_chunk_count(const struct arraylayout *layout);

/* The row-major index of tile `tile`'s disk chunk: 0, or -EINVAL when there is no such tile. */
int arrayhome_chunk_of(const struct arraylayout *layout, uint64_t tile, uint64_t *chunk);

/*
 * The home of chunk `chunk` of file `ino` among nodes[0..count) (their
 * `up` and `machine` fields; room is not looked at: a full home is the
 * caller's to route around). Returns 0 with *home the node id, or
 * -ENODEV when no node is up, -ENOMEM.
 */
int arrayhome_pick(const struct placement_node *nodes, size_t count, uint64_t ino, uint64_t chunk,
                   uint32_t *home);

/* Below this percentage of its peers' median measured write throughput, a home is slow. */
#define ARRAYHOME_SLOW_PERCENT 10

/* Whether node `home` (an id among nodes[0..count)) is slow, as defined above. */
bool arrayhome_slow(const struct placement_node *nodes, size_t count, uint32_t home);

/*
 * Places tile `tile` (of tile_bytes) of array file `ino`: on its chunk's
 * home while that is usable and not slow, else by static allocation (see
 * above), booking it on the snapshot as placement_choose() does. Returns
 * 0 with *node; -EINVAL for a tile the layout does not have; otherwise as
 * placement_choose() (-ENOSPC, -ENODEV, -ENOMEM).
 */
int arrayhome_place(struct placement_node *nodes, size_t count, const struct arraylayout *layout,
                    uint64_t ino, uint64_t tile, uint32_t tile_bytes, uint32_t *node);

#endif
