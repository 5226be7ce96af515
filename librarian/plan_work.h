/*
 * @file plan_work.h
 * The planners' shared working form of their input, and the step that
 * turns a target placement into a plan. Internal to librarian/: callers
 * use plan.h.
 *
 * plan_work_build() checks and indexes a (cluster, profile, tile map)
 * triple once: machine names interned to small integers, node speeds
 * resolved (no zeros left), profile records summed per (tile, machine)
 * and joined to the tile map. Placements are then arrays of node indices
 * (positions in the snapshot), primary first.
 */
#ifndef TESSERA_PLAN_WORK_H
#define TESSERA_PLAN_WORK_H

#include "plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A node's machine index when it names none: local to no accessor. */
#define PLAN_WORK_NO_MACHINE SIZE_MAX

struct plan_work_node {
    uint32_t id;
    size_t machine; /* index into machines, or PLAN_WORK_NO_MACHINE */
    bool up;
    double read_bytes_per_sec; /* resolved: always > 0 */
    double write_bytes_per_sec;
    uint64_t free_bytes;
};

/* All of one machine's accesses to one tile. */
struct plan_work_access {
    size_t machine;
    uint64_t reads;
    uint64_t writes;
    uint64_t bytes_read;
    uint64_t bytes_written;
    uint64_t first_access_ns; /* earliest known; UINT64_MAX when unknown */
};

/* Node indices (into work->nodes) holding a tile, primary first. */
struct plan_placement {
    uint32_t count;
    uint32_t node[PLAN_MAX_COPIES];
};

/* A tile that is both in the map and in the profile. */
struct plan_work_tile {
    const struct plan_tile *tile; /* the caller's map entry */
    struct plan_placement current;
    const struct plan_work_access *accesses; /* by machine index */
    size_t access_count;
    uint64_t first_access_ns; /* earliest over its accesses */
    uint64_t bytes_accessed;  /* read + written, all machines */
    uint32_t min_copies;      /* >= 1 */
    bool movable;             /* some holder is up: it can be copied */
};

struct plan_work {
    struct plan_work_node *nodes; /* in snapshot order */
    size_t node_count;
    const char **machines; /* sorted, unique, borrowed */
    size_t machine_count;
    struct plan_work_tile *tiles; /* in (ino, tile) order */
    size_t tile_count;
    struct plan_work_access *accesses;
    size_t access_count;
    double network_bytes_per_sec; /* resolved: > 0 */
    uint32_t max_copies;          /* resolved: 1..PLAN_MAX_COPIES */
    bool coarse_only;
    bool greedy_only;
    const struct plan_predictor *predictor; /* NULL: none (plan_options) */
};

/*
 * Builds the working form; options may be NULL. Returns 0, -ENOMEM, or
 * -EINVAL when: an argument is NULL (a count of 0 with a NULL array is
 * fine); a node id is 0 or repeats; a profile record has no machine; a
 * tile appears twice in the map, names more than PLAN_MAX_COPIES nodes,
 * names a node twice or names a node id not in the snapshot (meta lists
 * every registered node, up or down, so a snapshot always covers its
 * map). On failure *work is empty.
 */
int plan_work_build(const struct plan_cluster *cluster, const struct plan_profile *profile,
                    const struct plan_tilemap *map, const struct plan_options *options,
                    struct plan_work *work);

/* Frees what plan_work_build() allocated; accepts an empty work. */
void plan_work_release(struct plan_work *work);

/* True when placement holds node index `node`. */
bool plan_placement_has(const struct plan_placement *placement, uint32_t node);

/*
 * The holders a tile ends with when a planner wants `target` (which must
 * hold at least one node): target, then current holders kept to reach the
 * tile's min_copies (up ones first, in their current order); and the
 * current placement unchanged when target has the same set of nodes.
 */
void plan_work_finalize(const struct plan_work *work, size_t tile_index,
                        const struct plan_placement *target, struct plan_placement *final);

/*
 * Makes *out from the targets, one per work tile (targets[i] for
 * work->tiles[i]; a tile that is not movable must keep its current
 * placement): finalizes each, lists the steps, and predicts costs before
 * and after with plan_cost_work(). Returns 0 or -ENOMEM (then *out is
 * empty).
 */
int plan_work_emit(const struct plan_work *work, const struct plan_placement *targets,
                   enum plan_basis basis, struct plan *out);

/* The work's predictor's seconds for placements; 0 without a predictor. */
double plan_work_model_seconds(const struct plan_work *work,
                               const struct plan_placement *placements);

/* A policy's targets for every work tile (see plan_work_emit()); 0 or a negative errno. */
typedef int (*plan_work_targets_fn)(const struct plan_work *work,
                                    const struct plan_options *options,
                                    struct plan_placement *targets);

/*
 * The whole of a simple planner: builds the work, asks `targets` for each
 * tile's wanted holders and emits the plan with `basis`. Returns 0 with
 * *out to plan_release(); -EINVAL (out NULL, or plan_work_build()'s
 * checks), -ENOMEM, or what `targets` returned; on failure *out is empty.
 */
int plan_work_plan(const struct plan_cluster *cluster, const struct plan_profile *profile,
                   const struct plan_tilemap *map, const struct plan_options *options,
                   plan_work_targets_fn targets, enum plan_basis basis, struct plan *out);

#endif
