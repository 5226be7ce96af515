/*
 * @file plan.h
 * Rebalancing plans (DESIGN.md "Profiles and the librarian"; seed 004,
 * Wang & Kaeli). A planner is a pure function: a snapshot of the cluster,
 * an access profile and the current tile map go in, a list of moves,
 * copies and drops comes out, each with its predicted cost before and
 * after. No clock, no I/O; the relocation executor and the CLI sit on top.
 *
 * The policies:
 * - PLAN_FREQUENT (plan_frequent.h): every tile to the datanode of the
 *   machine that accesses it most, copies of read-shared tiles at their
 *   readers (the paper's section 4.2);
 * - PLAN_BALANCED (plan_balanced.h): the paper's coarse-grained greedy over
 *   the cost matrix, then its fine-grained split by equation (2), for
 *   disks of different speeds (section 4.3); never predicted worse than
 *   PLAN_FREQUENT or than leaving the map as it is;
 * - PLAN_LBM (plan_lbm.h): each file's tiles in groups ("roles"), each
 *   role served from its own machine chosen by Load Balance Matching, or
 *   by Load Balance Traversing over a topology (seed 003, Wu et al.).
 * How "cost" is predicted is in plan_cost.h.
 *
 * Conventions shared by every planner:
 * - A tile's holders are listed primary first, then its other replicas;
 *   every write reaches all of them (the data path's job, not the
 *   planner's). min_copies of them are the file's floor; those above it
 *   are the read copies a plan may add or drop.
 * - A datanode is a possible target only when it is up and, unless it
 *   holds the tile already, has free_bytes >= the tile's bytes after the
 *   tiles the plan already sends it. Down and full nodes never receive a
 *   tile. Space a move frees is not counted as free: the executor may run
 *   moves in any order.
 * - A machine that accesses tiles but runs no usable datanode is never a
 *   target; its accesses are remote wherever the tile goes, and the
 *   frequent policy passes its tiles to the next accessor in rank.
 * - A tile whose holders are all down is left where it is (nothing can be
 *   copied from it); its cost still counts. A down holder is never a
 *   source; a plan may drop it (meta deletes the copy when the node
 *   returns).
 * - A tile never ends with fewer holders than its min_copies. Beyond
 *   that, only a tile read by machines other than its single writer (or,
 *   unwritten, by several machines) gets copies, max_copies holders in
 *   all; balanced makes copies only of unwritten tiles.
 * - Tiles in the profile but not in the map (holes, deleted files) are
 *   ignored; tiles in the map but not in the profile cost nothing and
 *   never move.
 * - When a tile's holders stay the same set, the plan leaves it alone even
 *   if a policy would have listed them in another order.
 */
#ifndef TESSERA_PLAN_H
#define TESSERA_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* Holders one tile may have in a snapshot or a plan. */
#define PLAN_MAX_COPIES 8
/* max_copies when the caller passes 0 (the CLI's --max-copies default). */
#define PLAN_DEFAULT_MAX_COPIES 3
/* A disk speed for nodes not measured yet when no node is measured. */
#define PLAN_DEFAULT_DISK_BYTES_PER_SEC 100000000ull
/* The network bandwidth NB when the snapshot gives none (1 Gbit/s). */
#define PLAN_DEFAULT_NETWORK_BYTES_PER_SEC 125000000ull

/* One datanode as the planner sees it. */
struct plan_node {
    uint32_t id;                  /* datanode id, non-zero, unique */
    const char *machine;          /* machine it runs on (borrowed); NULL: local to nobody */
    int up;                       /* nonzero when it serves and takes tiles */
    uint64_t read_bytes_per_sec;  /* measured disk read throughput, 0 = not measured */
    uint64_t write_bytes_per_sec; /* measured disk write throughput, 0 = not measured */
    uint64_t free_bytes;          /* free space it last reported */
};

/*
 * The cluster snapshot. Unmeasured speeds (0) are taken as the mean of the
 * measured up nodes' speeds of that kind, or PLAN_DEFAULT_DISK_BYTES_PER_SEC
 * when none is measured. The network is one bandwidth NB between any two
 * machines, as in the paper; 0 means PLAN_DEFAULT_NETWORK_BYTES_PER_SEC.
 */
struct plan_cluster {
    const struct plan_node *nodes;
    size_t node_count;
    uint64_t network_bytes_per_sec;
};

/*
 * One profile record: what one machine did to one tile (the paper's
 * record of process, file, address, size, type and timestamp, counted per
 * tile). Several records for the same (ino, tile, machine) are summed.
 */
struct plan_access {
    uint64_t ino;
    uint64_t tile;
    const char *machine; /* the accessing machine (borrowed), not NULL */
    uint64_t reads;
    uint64_t writes;
    uint64_t bytes_read;
    uint64_t bytes_written;
    uint64_t first_access_ns; /* wall clock of its first access; 0 = unknown */
};

struct plan_profile {
    const struct plan_access *accesses;
    size_t count;
};

/* Where one tile lives now (or, in a plan's output, will live). */
struct plan_tile {
    uint64_t ino;
    uint64_t tile;
    uint64_t version;                /* the version seen; a copy commits only if still current */
    uint64_t tile_bytes;             /* bytes stored, what a move transfers */
    uint32_t min_copies;             /* the file's copies= setting; 0 is taken as 1 */
    uint32_t node_count;             /* 1..PLAN_MAX_COPIES; 0 = a hole, ignored */
    uint32_t nodes[PLAN_MAX_COPIES]; /* datanode ids, primary first */
};

struct plan_tilemap {
    const struct plan_tile *tiles; /* each (ino, tile) at most once */
    size_t count;
};

struct topology;       /* topology.h */
struct arraylayout;    /* arraylayout.h */
struct plan_work;      /* plan_work.h */
struct plan_placement; /* plan_work.h */

/*
 * A whole-workload prediction: the seconds the profiled I/O takes when
 * each work tile i has holders placements[i] (planmodel.h's performance
 * model: mounts' CPU, links, datanodes' CPU and disks as overlapping
 * queues). Given one, plans report its before/after too, and `balanced`
 * chooses among its candidates by it: a plan is made only when the model
 * predicts it faster (plan_balanced.h).
 */
struct plan_predictor {
    double (*seconds)(void *arg, const struct plan_work *work,
                      const struct plan_placement *placements);
    void *arg;
};

/* An array file's disk layout, for the lbm policy's roles. */
struct plan_array_file {
    uint64_t ino;
    const struct arraylayout *layout;
};

struct plan_options {
    /*
     * Holders a read-shared tile may have in all, the primary included:
     * 1 = no copies; 0 = PLAN_DEFAULT_MAX_COPIES; above PLAN_MAX_COPIES is
     * taken as PLAN_MAX_COPIES.
     */
    uint32_t max_copies;
    /* balanced: stop after the coarse-grained greedy (no equation-(2) split). */
    int coarse_only;
    /*
     * balanced: the paper's algorithm alone: its placement as it comes
     * out of the greedy (and split), not compared with `frequent` or the
     * current map and not polished (plan_balanced.h, step 3). For
     * measuring the paper's heuristic; it can predict worse than both.
     */
    int greedy_only;
    /*
     * lbm: roles per file, each a contiguous group of its tiles; 0 = one
     * per machine that runs an up datanode. Never more than those machines.
     */
    uint32_t groups;
    /* lbm: the cluster's subclusters and links (topology.h); NULL = one same-cost subcluster. */
    const struct topology *topology;
    /*
     * lbm: the array files among the map's (plan_lbm.h): their roles are
     * their mesh's disk chunks, whatever `groups` says. NULL/0 = none.
     */
    const struct plan_array_file *arrays;
    size_t array_count;
    /* NULL: plans are predicted and compared by plan_cost.h alone. */
    const struct plan_predictor *predictor;
};

enum plan_policy { PLAN_FREQUENT = 1, PLAN_BALANCED = 2, PLAN_LBM = 3 };

enum plan_action_kind {
    PLAN_COPY = 1, /* to_node pulls the tile from from_node; from_node keeps it */
    PLAN_MOVE = 2, /* to_node pulls the tile from from_node, which then loses it */
    PLAN_DROP = 3, /* from_node loses its copy (to_node is 0) */
};

/*
 * One step. The steps of one tile are listed together, copies first, then
 * moves, then drops, and must run in that order: a copy may pull from a
 * node that a later move or drop of the same tile releases, and a drop
 * never comes before the tile's new holders have it. from_node of a copy
 * or move is always up.
 */
struct plan_action {
    enum plan_action_kind kind;
    uint64_t ino;
    uint64_t tile;
    uint64_t version;
    uint64_t tile_bytes;
    uint32_t from_node;
    uint32_t to_node;
    double cost_before; /* predicted seconds of this tile's profiled I/O now */
    double cost_after;  /* ... and once all of this tile's steps are done */
};

/* Which placement a plan was built from (balanced compares candidates). */
enum plan_basis {
    PLAN_BASIS_FREQUENT = 1, /* the most-frequent-accessor placement */
    PLAN_BASIS_BALANCED = 2, /* the coarse-grained greedy and its split */
    PLAN_BASIS_CURRENT = 3,  /* nothing predicted better than the current map */
    PLAN_BASIS_LBM = 4,      /* roles on the machines Load Balance Matching/Traversing chose */
};

/*
 * A plan. actions are in (ino, tile) order; changed holds the tile map
 * entries after the plan for exactly the tiles it changes, in the same
 * order (nodes[0] the new primary), which is what meta commits per tile.
 * node_seconds_* are indexed like the snapshot's nodes: the predicted busy
 * time of each datanode (plan_cost.h) before and after; the makespans are
 * their maxima. Owned by the caller; release with plan_release().
 */
struct plan {
    struct plan_action *actions;
    size_t action_count;
    struct plan_tile *changed;
    size_t changed_count;
    double *node_seconds_before;
    double *node_seconds_after;
    size_t node_count;
    double makespan_before;
    double makespan_after;
    uint64_t transfer_bytes; /* bytes the copies and moves pull */
    enum plan_basis basis;
    /* The options' predictor's seconds before and after; both 0 without one. */
    double model_seconds_before;
    double model_seconds_after;
};

/*
 * Runs `policy` (plan_frequent() or plan_balanced()); options may be NULL
 * (all defaults). On success *out is a plan to plan_release(); returns 0,
 * -EINVAL for a bad policy or input (see plan_work_build() in
 * plan_work.h for what is checked), -ENOMEM. On failure *out is empty.
 */
int plan_make(enum plan_policy policy, const struct plan_cluster *cluster,
              const struct plan_profile *profile, const struct plan_tilemap *map,
              const struct plan_options *options, struct plan *out);

/* Frees what a plan holds and empties it; accepts NULL and empty plans. */
void plan_release(struct plan *plan);

/* "frequent" / "balanced" / "lbm" to a policy: 0, or -EINVAL for any other name. */
int plan_policy_parse(const char *name, enum plan_policy *out);
/* The policy's name, "?" when unknown. */
const char *plan_policy_name(enum plan_policy policy);
/* "copy", "move", "drop", "?". */
const char *plan_action_kind_name(enum plan_action_kind kind);

#endif
