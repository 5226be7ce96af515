/*
 * @file plan_frequent.h
 * The `frequent` policy: profile-guided partitioning for a homogeneous
 * cluster (seed 004, section 4.2: "For every contiguous data chunk
 * accessed, we identify which process accesses each chunk most
 * frequently. We can then simply assign it to the local disk of the
 * associated node.").
 *
 * Per tile, from its profile records:
 * - accessors are ranked by accesses (reads + writes), then bytes, then
 *   whether the machine already holds the tile on an up node (so a tie
 *   never moves a tile for nothing), then the earlier first access, then
 *   the machine name (strcmp): this is the tie rule;
 * - read by several machines and never written ("If the chunk is
 *   read-only by multiple processes, we can replicate the chunk"): the
 *   primary goes to the top-ranked accessor, copies to the other readers
 *   in rank order, max_copies holders in all;
 * - written by one machine and read by others ("we let the writing
 *   process broadcast the updated data to those processes that are going
 *   to read it later"): the primary stays at (goes to) the writer, copies
 *   at the readers, bounded the same way;
 * - written by several machines (the paper's "shared file partition"):
 *   one holder, at the top-ranked accessor, no copies;
 * - accessed by one machine: one holder, there.
 * A machine's datanode is the up node of that machine already holding the
 * tile, else its up node with room and the highest read throughput (ties:
 * earlier in the snapshot). When the machine wanted for the primary has
 * no such node, the next machine in rank takes it; when none has, the
 * current primary stays (the first up holder if the primary is down).
 * Tiles claim space on their targets hottest first (most bytes accessed),
 * so when a node fills up it is the cold tiles that stay remote.
 */
#ifndef TESSERA_PLAN_FREQUENT_H
#define TESSERA_PLAN_FREQUENT_H

#include "plan.h"
#include "plan_work.h"

/*
 * Plans `frequent` (conventions in plan.h); options may be NULL. Returns
 * 0 with *out to plan_release(), -EINVAL for bad input, -ENOMEM.
 */
int plan_frequent(const struct plan_cluster *cluster, const struct plan_profile *profile,
                  const struct plan_tilemap *map, const struct plan_options *options,
                  struct plan *out);

/*
 * The policy on a built work: writes the wanted holders of every work
 * tile to targets[work->tile_count] (not finalized; tiles that are not
 * movable get their current holders). Returns 0 or -ENOMEM.
 */
int plan_frequent_targets(const struct plan_work *work, struct plan_placement *targets);

#endif
