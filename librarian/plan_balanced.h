/*
 * @file plan_balanced.h
 * The `balanced` policy: load balancing for datanodes of different speeds
 * (seed 004, section 4.3), "taking into account differences in disk
 * bandwidth" with the throughput each datanode measured.
 *
 * 1. Coarse-grained (4.3.1). The work is cut into units: a tile with all
 *    its accesses, or, for a read-shared tile (several readers, no
 *    writer, max_copies >= 2), one unit per reader, each of which may
 *    bring a copy (max_copies distinct holders at most). The cost of unit
 *    u on node j is the paper's matrix entry generalised to bytes and
 *    several accessors,
 *        T[u][j] = sum over u's accesses of S/B_j (+ S/NB if not local),
 *    which for a chunk read once by one peer is exactly "S_i/B_j if S_i is
 *    local-to-Peer P_j, S_i/B_j + S_i/NB if not". Units are taken in the
 *    order of their first access (ties: (ino, tile), then reader rank),
 *    each to the usable node j with the lowest column[j] + T[u][j] (ties:
 *    a node that holds or already got the tile, then the earlier node in
 *    the snapshot), whose column then grows by T[u][j]: "update the
 *    matrix T by adding the lowest cost to other unassigned data chunks in
 *    the same column".
 * 2. Fine-grained (4.3.2), unless options->coarse_only. "Data chunks on
 *    heavily-loaded nodes can be split and migrated to peers that are less
 *    heavily loaded": while it helps, the busiest node j gives the least
 *    busy nodes i (in turn) a portion of its share of the size given by
 *    the paper's equation (2), plan_balanced_split_bytes(). Tiles are
 *    Tessera's unit of placement and cannot be cut, so the portion is
 *    moved as whole units (a unit goes when at least half of it fits in
 *    s), cheapest to move first, and only while each move lowers the
 *    larger of the two columns.
 * 3. The greedy is a heuristic ("Data partitioning is a well known NP-hard
 *    problem"), so its result is compared, by plan_cost.h's model, with
 *    the `frequent` placement and with leaving the map as it is, and the
 *    best is taken (by makespan, then the next busiest node, and so on;
 *    ties prefer the current map, then the greedy). plan->basis says which.
 * 4. Polish, tile by tile: a change that buys nothing is undone (the
 *    greedy places every tile afresh and would pay a transfer for a tie),
 *    and a tile takes the other candidate's holders for it when that is
 *    strictly better and fits. Hence balanced never predicts worse than
 *    `frequent` or than the current map.
 * With options->predictor (the performance model, planmodel.h), steps 3
 * and 4 answer to it instead: a candidate replaces the current map (then
 * the greedy) only when the model predicts it faster by more than
 * PLAN_MODEL_MARGIN, and the polish is kept only if the model does not
 * predict it slower by as much. The model knows what plan_cost.h does not
 * (the mounts' CPU, each link, the datanodes' CPU), so a plan it predicts
 * faster is one whose bottleneck really moved.
 * options->greedy_only skips 3 and 4: the paper's algorithm alone, which
 * on Figure 2 gives exactly the paper's assignment (C_0 on D_2, C_1 on
 * D_1, C_2 and C_3 on D_3, execution time 4); polished, C_2 stays local
 * on D_2, which keeps the time at 4 and leaves D_3 less busy.
 */
#ifndef TESSERA_PLAN_BALANCED_H
#define TESSERA_PLAN_BALANCED_H

/* A predicted gain below this fraction is within the model's error: no plan for it. */
#define PLAN_MODEL_MARGIN 0.02

#include "plan.h"

/*
 * Plans `balanced` (conventions in plan.h); options may be NULL. Returns
 * 0 with *out to plan_release(), -EINVAL for bad input, -ENOMEM.
 */
int plan_balanced(const struct plan_cluster *cluster, const struct plan_profile *profile,
                  const struct plan_tilemap *map, const struct plan_options *options,
                  struct plan *out);

/*
 * The paper's equation (2): the bytes s to move from disk D_j (share
 * share_j bytes, bandwidth bandwidth_j) to D_i (share_i, bandwidth_i) so
 * that both finish together, network bandwidth nb:
 *
 *     s ~= (B_i S_j - B_j S_i) / (B_i + B_j + B_i B_j / NB)
 *
 * which solves equation (1), (S_j - s)/B_j = (S_i + s)/B_i + s/NB.
 * All bandwidths > 0. Returns <= 0 when D_j is not the busier disk.
 */
double plan_balanced_split_bytes(double share_i, double bandwidth_i, double share_j,
                                 double bandwidth_j, double nb);

#endif
