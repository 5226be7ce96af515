/*
 * @file plan_lbm.h
 * The `lbm` policy: server placement by Load Balance Matching
 * (loadmatch.h) or, with a topology, Load Balance Traversing
 * (loadtraverse.h), seed 003 (Wu et al.).
 *
 * The paper's I/O servers are roles. An array file's roles (named in
 * options->arrays) are the disk chunks of its mesh (arrayhome_chunk_of(),
 * the chunks whose homes meta deals when it is written); when the mesh has
 * more chunks than machines that can serve, each role is a run of whole
 * consecutive chunks, as even as the counts allow. A linear file's
 * roles are its tiles cut into options->groups contiguous groups of equal
 * tile count over the span of its profiled tiles (tile indices 0 .. the
 * largest profiled one). Roles with no profiled tile need no server and
 * are left out. Each file is placed on its own: the roles of one file go
 * to distinct machines.
 *
 * The I/O matrix W of a file has w[role][machine] = bytes the machine read
 * and wrote in the role's tiles. Only machines with an up datanode can
 * serve; the others (clients) count in the row sums, so their bytes are
 * remote wherever the role goes. Without a topology the cluster is one
 * subcluster and LBT is exactly LBM.
 *
 * Targets: every movable tile of a role to its machine's datanode (an up
 * node of that machine already holding it, else its fastest-reading up
 * node with room; tiles claim room hottest first); one holder, plus what
 * plan_work_finalize() keeps for min_copies. When the machine has no node
 * with room, the tile stays where it is.
 */
#ifndef TESSERA_PLAN_LBM_H
#define TESSERA_PLAN_LBM_H

#include "plan.h"
#include "plan_work.h"

#include <stddef.h>
#include <stdint.h>

/* One role and where LBM/LBT puts it. */
struct plan_lbm_role {
    uint64_t ino;
    uint64_t first_tile; /* the group's tile indices, inclusive */
    uint64_t last_tile;
    const char *machine;   /* the serving machine (borrowed from the snapshot or profile) */
    size_t subcluster;     /* index into the topology's subclusters; 0 without one */
    uint64_t bytes;        /* read + written in the group by every machine */
    uint64_t remote_bytes; /* of those, the bytes not from the serving machine: y[role][machine] */
};

/* The whole assignment, for `tessera place`. Release with plan_lbm_assignment_release(). */
struct plan_lbm_assignment {
    struct plan_lbm_role *roles; /* by file (ino), then by group */
    size_t role_count;
    uint64_t *link_down_bytes; /* per subcluster: its link to its parent (equation 1), all files */
    uint64_t *link_up_bytes;   /* (equation 2); both NULL without a topology */
    size_t subcluster_count;
};

/*
 * Places the roles of every file of a built work. Returns 0 with *out;
 * -EINVAL when a topology is given and an accessing or serving machine is
 * not in it; -EOVERFLOW; -ENOMEM. With no machine that can serve, there
 * are no roles.
 */
int plan_lbm_assign(const struct plan_work *work, const struct plan_options *options,
                    struct plan_lbm_assignment *out);

/* plan_lbm_assign() on a snapshot, profile and map (plan.h); same results. */
int plan_lbm_place(const struct plan_cluster *cluster, const struct plan_profile *profile,
                   const struct plan_tilemap *map, const struct plan_options *options,
                   struct plan_lbm_assignment *out);

void plan_lbm_assignment_release(struct plan_lbm_assignment *assignment);

/* Plans `lbm` (conventions in plan.h). Returns 0, -EINVAL, -EOVERFLOW, -ENOMEM. */
int plan_lbm(const struct plan_cluster *cluster, const struct plan_profile *profile,
             const struct plan_tilemap *map, const struct plan_options *options, struct plan *out);

#endif
