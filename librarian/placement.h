/*
 * @file placement.h
 * Choosing datanodes for new tiles. Pure: a snapshot of the candidate nodes
 * goes in, node ids come out, and the snapshot is updated with what was
 * placed (free space down, backlog up), so one call can place many tiles
 * and a caller can carry the snapshot from call to call.
 *
 * Policies (DESIGN.md "Placement by live throughput"):
 * - PLACEMENT_ROUNDROBIN: tile i on the (i + ino) mod n-th usable node; the
 *   baseline, blind to speed.
 * - PLACEMENT_STATIC: Panda's static allocation (staticalloc.h): each tile
 *   to the node that would finish it earliest given its measured write
 *   throughput and its backlog.
 * Dynamic placement is the writer's: it picks the node for a batch
 * (dynamicalloc_pick() in dynamicalloc.h) and meta places the batch there
 * (placement_choose_named()).
 *
 * A node is usable when it is up and has room for one more tile; full and
 * down nodes never get new tiles.
 */
#ifndef TESSERA_PLACEMENT_H
#define TESSERA_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

enum placement_policy { PLACEMENT_ROUNDROBIN = 0, PLACEMENT_STATIC = 1 };

/* steady_write_bytes_per_sec of a node measured by its start-up probe only. */
#define PLACEMENT_SPEED_UNPROVEN UINT64_MAX

/* What placement knows of one datanode. */
struct placement_node {
    uint32_t id;
    int up;                       /* nonzero if it takes new tiles */
    uint64_t free_bytes;          /* free space it last reported */
    uint64_t write_bytes_per_sec; /* measured write throughput, 0 = not measured yet */
    uint64_t backlog_bytes;       /* work queued on it (the caller's estimate) */
    uint32_t machine;             /* nodes on one machine share it (placement_choose_replicas) */
    /* The same held over tens of seconds (meta's nodes_live_steady_write()),
     * what array homes are judged slow on; 0 = not known: write_bytes_per_sec;
     * PLACEMENT_SPEED_UNPROVEN = measured by its start-up probe only. */
    uint64_t steady_write_bytes_per_sec;
};

/*
 * Picks a node for each of `count` new tiles, tiles first_tile..., of file
 * ino whose tiles have tile_bytes each, writing node ids to out[count].
 * Every placed tile takes tile_bytes from its node's free_bytes and adds
 * tile_bytes to its backlog_bytes, so a node that fills up mid-way stops
 * getting tiles.
 *
 * Round-robin: tile i goes to the (i + ino) mod u-th of the u usable nodes,
 * so different files start on different nodes.
 * Static: earliest finish time; a node not measured yet is taken to be as
 * fast as the average measured usable node (all equal when none is
 * measured); equal finish times rotate with (ino + tile), so equal idle
 * nodes take turns as in round-robin.
 *
 * Returns 0, or -ENOSPC when no node is usable (nodes are up but full) or
 * -ENODEV when none is up, or -ENOMEM. On failure out[] and the snapshot
 * may hold a partial placement: discard both.
 */
int placement_choose(enum placement_policy policy, struct placement_node *nodes, size_t node_count,
                     uint64_t ino, uint64_t first_tile, uint32_t tile_bytes, size_t count,
                     uint32_t *out);

/*
 * Dynamic placement with the writer's choice: tiles go to node `named`
 * while it is usable; once it is down or full, the rest are placed as
 * PLACEMENT_STATIC would place them. Returns as placement_choose(), or
 * -ENOENT if no node in the snapshot has id `named`.
 */
int placement_choose_named(uint32_t named, struct placement_node *nodes, size_t node_count,
                           uint64_t ino, uint64_t first_tile, uint32_t tile_bytes, size_t count,
                           uint32_t *out);

/*
 * The further holders of one tile whose first holders are held[0..held_count)
 * (node ids; the primary first): up to `wanted` more nodes, written to
 * out[], each usable, none already a holder, each on a machine no holder
 * (chosen before it or given) is on; when no usable node is on another
 * machine, on a node that is not a holder yet. Among those, the one that
 * would finish the tile earliest (as PLACEMENT_STATIC), ties rotating with
 * (ino + tile). Books each on the snapshot as placement_choose() does.
 * Returns how many were chosen (0..wanted: fewer when too few nodes are
 * usable; the tile is then under-replicated, which is not an error), or
 * -ENOMEM.
 */
int placement_choose_replicas(struct placement_node *nodes, size_t node_count, uint64_t ino,
                              uint64_t tile, uint32_t tile_bytes, const uint32_t *held,
                              size_t held_count, size_t wanted, uint32_t *out);

#endif
