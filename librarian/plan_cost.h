/*
 * @file plan_cost.h
 * The predicted cost of a tile map under an access profile, the measure
 * every planner minimises and every plan reports before and after.
 *
 * The model is the paper's cost matrix (seed 004, section 4.3.1) applied
 * to every profiled access: serving S bytes from datanode j costs
 *
 *     S / B_j              when the accessing machine is j's machine,
 *     S / B_j + S / NB     when it is not,
 *
 * with B_j the node's measured read (or write) throughput and NB the
 * network bandwidth, and that time is added to node j's column: "if
 * another chunk is assigned to the same disk later, it needs to wait for
 * the service time of the previous chunk". A node's busy time is its
 * column sum, and the makespan, the time the whole profiled workload
 * takes, is the largest column (the paper's Figure 2: "the overall
 * execution time will be 8, which is determined by the slowest disk").
 *
 * Which node serves an access:
 * - a read is served by a copy on the reader's own machine when there is
 *   one (buddy access; the fastest such node), otherwise by the holder
 *   with the highest read throughput (ties: the earlier in the list);
 * - a write goes to every holder: to the primary, and to each copy as the
 *   paper's "writing process broadcast[s] the updated data" (in Tessera
 *   the copy is dropped and re-made, which costs the same transfer).
 * Up or down does not matter to the prediction. Bytes, not counts, are
 * what costs: a machine that read a tile three times moved 3 S bytes.
 * Each machine's own time (the sum of its accesses' times) is reported
 * too, but does not enter the makespan.
 */
#ifndef TESSERA_PLAN_COST_H
#define TESSERA_PLAN_COST_H

#include "plan.h"
#include "plan_work.h"

#include <stddef.h>

/* The predicted cost of one tile map. Release with plan_cost_release(). */
struct plan_cost {
    double *node_seconds; /* indexed like the snapshot's nodes */
    size_t node_count;
    const char **machines;   /* every machine of the snapshot and profile, sorted */
    double *machine_seconds; /* indexed like machines */
    size_t machine_count;
    double makespan; /* max of node_seconds; 0 with no nodes */
};

/*
 * Predicts the cost of `map` under `profile` on `cluster`. Returns 0,
 * -EINVAL for bad input (as plan_work_build()), -ENOMEM; on failure *out
 * is empty. The machine names point into the caller's structs.
 */
int plan_cost_evaluate(const struct plan_cluster *cluster, const struct plan_profile *profile,
                       const struct plan_tilemap *map, struct plan_cost *out);

/* Frees what a cost holds and empties it; accepts NULL. */
void plan_cost_release(struct plan_cost *cost);

/*
 * The seconds work tile `tile_index` costs with holders `placement` (node
 * indices, at least one), summed over all its accesses. Each access's
 * time is also added to node_seconds[node] and machine_seconds[machine]
 * when those are not NULL.
 */
double plan_cost_tile(const struct plan_work *work, size_t tile_index,
                      const struct plan_placement *placement, double *node_seconds,
                      double *machine_seconds);

/* The holder (node index) serving a read by `machine`: a local one, else the fastest. */
uint32_t plan_cost_serving_reader(const struct plan_work *work,
                                  const struct plan_placement *placement, size_t machine);

/*
 * Fills node_seconds[work->node_count] (and machine_seconds[machine_count]
 * if not NULL) for placements[i] of every work tile; returns the makespan.
 */
double plan_cost_work(const struct plan_work *work, const struct plan_placement *placements,
                      double *node_seconds, double *machine_seconds);

/*
 * Compares two busy-time vectors of `count` nodes by makespan, then by
 * the second-busiest node, and so on (both sorted from the busiest down;
 * values within a relative 1e-9 are equal): < 0 when `a` is better, 0
 * when they tie, > 0 when `b` is. scratch holds 2 * count doubles.
 */
int plan_cost_compare(const double *a, const double *b, size_t count, double *scratch);

#endif
