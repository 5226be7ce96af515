/*
 * @file plan_lbm.c
 * The `lbm` policy (plan_lbm.h): roles from tile groups, one Load Balance
 * Traversing run per file (one subcluster without a topology, where it is
 * Load Balance Matching), then the tiles of each role to a datanode of
 * its machine.
 */
#include "plan_lbm.h"

#include "arrayhome.h"
#include "loadtraverse.h"
#include "topology.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 lbm_wide;

/* The cluster as LBT sees it, shared by every file. */
struct lbm_cluster {
    size_t subcluster_count;
    size_t *parent;
    double *link_bytes_per_sec; /* NULL without a topology: all links equal */
    size_t *subcluster_of_machine;
    unsigned char *can_serve;
    size_t serving_count;
};

static void lbm_cluster_release(struct lbm_cluster *c)
{
    free(c->parent);
    free(c->link_bytes_per_sec);
    free(c->subcluster_of_machine);
    free(c->can_serve);
    memset(c, 0, sizeof(*c));
}

static int lbm_cluster_build(const struct plan_work *work, const struct topology *topology,
                             struct lbm_cluster *c)
{
    size_t machines = work->machine_count ? work->machine_count : 1;

    memset(c, 0, sizeof(*c));
    c->subcluster_count = topology ? topology->subcluster_count : 1;
    c->parent = calloc(c->subcluster_count, sizeof(*c->parent));
    c->subcluster_of_machine = calloc(machines, sizeof(*c->subcluster_of_machine));
    c->can_serve = calloc(machines, sizeof(*c->can_serve));
    if (topology)
        c->link_bytes_per_sec = calloc(c->subcluster_count, sizeof(*c->link_bytes_per_sec));
    if (!c->parent || !c->subcluster_of_machine || !c->can_serve ||
        (topology && !c->link_bytes_per_sec)) {
        lbm_cluster_release(c);
        return -ENOMEM;
    }
    if (topology) {
        memcpy(c->parent, topology->parent, c->subcluster_count * sizeof(*c->parent));
        memcpy(c->link_bytes_per_sec, topology->link_bytes_per_sec,
               c->subcluster_count * sizeof(*c->link_bytes_per_sec));
        for (size_t m = 0; m < work->machine_count; m++) {
            if (topology_subcluster_of(topology, work->machines[m], &c->subcluster_of_machine[m]) <
                0) {
                lbm_cluster_release(c);
                return -EINVAL;
            }
        }
    } else {
        c->parent[0] = LOADTRAVERSE_ROOT;
    }
    for (size_t n = 0; n < work->node_count; n++) {
        size_t machine = work->nodes[n].machine;
        if (work->nodes[n].up && machine != PLAN_WORK_NO_MACHINE && !c->can_serve[machine]) {
            c->can_serve[machine] = 1;
            c->serving_count++;
        }
    }
    return 0;
}

/* True when subcluster `v` is `ancestor` or below it. */
static bool within_subtree(const struct lbm_cluster *c, size_t v, size_t ancestor)
{
    for (size_t steps = 0; steps <= c->subcluster_count; steps++) {
        if (v == ancestor)
            return true;
        if (c->parent[v] == LOADTRAVERSE_ROOT)
            return false;
        v = c->parent[v];
    }
    return false;
}

/* Grows the role array by one; 0 or -ENOMEM. */
static int push_role(struct plan_lbm_assignment *out, size_t *capacity,
                     const struct plan_lbm_role *role)
{
    if (out->role_count == *capacity) {
        size_t wanted = *capacity ? *capacity * 2 : 16;
        struct plan_lbm_role *bigger = realloc(out->roles, wanted * sizeof(*bigger));
        if (!bigger)
            return -ENOMEM;
        out->roles = bigger;
        *capacity = wanted;
    }
    out->roles[out->role_count++] = *role;
    return 0;
}

/* Per-file scratch: the roles' W split by reads and writes, and LBT's answer. */
struct lbm_file {
    size_t first; /* work tiles [first, end) are the file's */
    size_t end;
    const struct arraylayout *array; /* NULL: a linear file, cut into groups */
    uint64_t group_size;
    size_t role_count;    /* groups with a profiled tile */
    uint64_t *read_bytes; /* role_count x machine_count */
    uint64_t *write_bytes;
    size_t *machine_of_role;
    size_t *subcluster_of_role;
};

/*
 * The group (role key) of a tile, nondecreasing in tile order. A linear
 * file's: tile / group_size. An array file's: its disk chunk; when the
 * mesh has more chunks than serving machines, runs of whole consecutive
 * chunks (chunk * serving / chunks), since a role needs a machine of its
 * own. A chunk's tiles are consecutive (arraylayout.h), so either way a
 * role is a contiguous run of tiles. 0, or -EINVAL for a tile the array
 * does not have.
 */
static int tile_group(const struct lbm_file *f, size_t serving, uint64_t tile, uint64_t *group)
{
    uint64_t chunk, chunks;

    if (!f->array) {
        *group = tile / f->group_size;
        return 0;
    }
    if (arrayhome_chunk_of(f->array, tile, &chunk) < 0)
        return -EINVAL;
    chunks = arrayhome_chunk_count(f->array);
    *group = chunks <= serving ? chunk : (uint64_t)((lbm_wide)chunk * serving / chunks);
    return 0;
}

/*
 * One file: its roles, LBT, the roles into out, each work tile's machine
 * into machine_of_tile (may be NULL), its link loads added to out's.
 * Frees and clears *f's arrays (and *f) before it returns.
 */
static int place_file(const struct plan_work *work, const struct lbm_cluster *c, uint32_t groups,
                      struct lbm_file *f, struct plan_lbm_assignment *out, size_t *role_capacity,
                      size_t *machine_of_tile)
{
    size_t machines = work->machine_count;
    uint64_t span = work->tiles[f->end - 1].tile->tile + 1;
    uint64_t previous_group = UINT64_MAX;
    size_t *role_of_tile = NULL;
    unsigned char *in_subtree = NULL;
    int rc = -ENOMEM;

    f->group_size = span / groups + (span % groups != 0);
    role_of_tile = calloc(f->end - f->first, sizeof(*role_of_tile));
    if (!role_of_tile)
        return -ENOMEM;
    f->role_count = 0;
    for (size_t i = f->first; i < f->end; i++) {
        uint64_t group;
        rc = tile_group(f, c->serving_count, work->tiles[i].tile->tile, &group);
        if (rc < 0)
            goto out;
        if (group != previous_group)
            f->role_count++;
        previous_group = group;
        role_of_tile[i - f->first] = f->role_count - 1;
    }
    rc = -ENOMEM;
    f->read_bytes = calloc(f->role_count * machines, sizeof(*f->read_bytes));
    f->write_bytes = calloc(f->role_count * machines, sizeof(*f->write_bytes));
    f->machine_of_role = calloc(f->role_count, sizeof(*f->machine_of_role));
    f->subcluster_of_role = calloc(f->role_count, sizeof(*f->subcluster_of_role));
    in_subtree = calloc(f->role_count, sizeof(*in_subtree));
    if (!f->read_bytes || !f->write_bytes || !f->machine_of_role || !f->subcluster_of_role ||
        !in_subtree)
        goto out;
    rc = -EOVERFLOW;
    for (size_t i = f->first; i < f->end; i++) {
        const struct plan_work_tile *tile = &work->tiles[i];
        size_t role = role_of_tile[i - f->first];
        for (size_t a = 0; a < tile->access_count; a++) {
            const struct plan_work_access *access = &tile->accesses[a];
            uint64_t *read = &f->read_bytes[role * machines + access->machine];
            uint64_t *write = &f->write_bytes[role * machines + access->machine];
            if (access->bytes_read > UINT64_MAX - *read ||
                access->bytes_written > UINT64_MAX - *write)
                goto out;
            *read += access->bytes_read;
            *write += access->bytes_written;
        }
    }

    struct loadtraverse_input input = {
        .subcluster_count = c->subcluster_count,
        .parent = c->parent,
        .link_bytes_per_sec = c->link_bytes_per_sec,
        .machine_count = machines,
        .subcluster_of_machine = c->subcluster_of_machine,
        .can_serve = c->can_serve,
        .server_count = f->role_count,
        .read_bytes = f->read_bytes,
        .write_bytes = f->write_bytes,
    };
    rc = loadtraverse_assign(&input, NULL, f->machine_of_role, f->subcluster_of_role);
    if (rc < 0)
        goto out;

    for (size_t role = 0, i = f->first; role < f->role_count; role++) {
        struct plan_lbm_role entry = {
            .ino = work->tiles[f->first].tile->ino,
            .machine = work->machines[f->machine_of_role[role]],
            .subcluster = f->subcluster_of_role[role],
        };
        entry.first_tile = work->tiles[i].tile->tile;
        while (i < f->end && role_of_tile[i - f->first] == role) {
            entry.last_tile = work->tiles[i].tile->tile;
            if (machine_of_tile)
                machine_of_tile[i] = f->machine_of_role[role];
            i++;
        }
        for (size_t m = 0; m < machines; m++) {
            uint64_t bytes =
                f->read_bytes[role * machines + m] + f->write_bytes[role * machines + m];
            entry.bytes += bytes;
            if (m != f->machine_of_role[role])
                entry.remote_bytes += bytes;
        }
        rc = push_role(out, role_capacity, &entry);
        if (rc < 0)
            goto out;
    }
    for (size_t v = 0; out->link_down_bytes && v < c->subcluster_count; v++) {
        uint64_t down, up;
        if (c->parent[v] == LOADTRAVERSE_ROOT)
            continue;
        for (size_t role = 0; role < f->role_count; role++)
            in_subtree[role] = within_subtree(c, f->subcluster_of_role[role], v);
        rc = loadtraverse_link_load(&input, v, in_subtree, &down, &up);
        if (rc < 0)
            goto out;
        out->link_down_bytes[v] += down;
        out->link_up_bytes[v] += up;
    }
    rc = 0;
out:
    free(role_of_tile);
    free(in_subtree);
    free(f->read_bytes);
    free(f->write_bytes);
    free(f->machine_of_role);
    free(f->subcluster_of_role);
    memset(f, 0, sizeof(*f));
    return rc;
}

/* The layout of file `ino` when options name it an array file, else NULL. */
static const struct arraylayout *array_of(const struct plan_options *options, uint64_t ino)
{
    for (size_t k = 0; options && k < options->array_count; k++) {
        if (options->arrays[k].ino == ino)
            return options->arrays[k].layout;
    }
    return NULL;
}

/* plan_lbm_assign(), also giving each work tile's machine when machine_of_tile is not NULL. */
static int assign_roles(const struct plan_work *work, const struct plan_options *options,
                        struct plan_lbm_assignment *out, size_t *machine_of_tile)
{
    const struct topology *topology = options ? options->topology : NULL;
    struct lbm_cluster cluster;
    size_t role_capacity = 0;
    uint32_t groups;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = lbm_cluster_build(work, topology, &cluster);
    if (rc < 0)
        return rc;
    if (topology) {
        out->subcluster_count = cluster.subcluster_count;
        out->link_down_bytes = calloc(cluster.subcluster_count, sizeof(*out->link_down_bytes));
        out->link_up_bytes = calloc(cluster.subcluster_count, sizeof(*out->link_up_bytes));
        if (!out->link_down_bytes || !out->link_up_bytes) {
            rc = -ENOMEM;
            goto out;
        }
    }
    groups = options && options->groups ? options->groups : (uint32_t)cluster.serving_count;
    if (groups > cluster.serving_count)
        groups = (uint32_t)cluster.serving_count;
    for (size_t first = 0; groups > 0 && first < work->tile_count;) {
        size_t end = first;
        while (end < work->tile_count && work->tiles[end].tile->ino == work->tiles[first].tile->ino)
            end++;
        struct lbm_file file = {
            .first = first, .end = end, .array = array_of(options, work->tiles[first].tile->ino)};
        rc = place_file(work, &cluster, groups, &file, out, &role_capacity, machine_of_tile);
        if (rc < 0)
            goto out;
        first = end;
    }
    rc = 0;
out:
    lbm_cluster_release(&cluster);
    if (rc < 0)
        plan_lbm_assignment_release(out);
    return rc;
}

int plan_lbm_assign(const struct plan_work *work, const struct plan_options *options,
                    struct plan_lbm_assignment *out)
{
    if (!work || !out)
        return -EINVAL;
    return assign_roles(work, options, out, NULL);
}

int plan_lbm_place(const struct plan_cluster *cluster, const struct plan_profile *profile,
                   const struct plan_tilemap *map, const struct plan_options *options,
                   struct plan_lbm_assignment *out)
{
    struct plan_work work;
    int rc;

    if (!out)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    rc = plan_work_build(cluster, profile, map, options, &work);
    if (rc < 0)
        return rc;
    rc = assign_roles(&work, options, out, NULL);
    plan_work_release(&work);
    return rc;
}

void plan_lbm_assignment_release(struct plan_lbm_assignment *assignment)
{
    if (!assignment)
        return;
    free(assignment->roles);
    free(assignment->link_down_bytes);
    free(assignment->link_up_bytes);
    memset(assignment, 0, sizeof(*assignment));
}

/*
 * The node of `machine` for a tile: an up holder on it (fastest read), else
 * its fastest-reading up node with room. Returns true with *out.
 */
static bool machine_node(const struct plan_work *work, const struct plan_work_tile *tile,
                         const uint64_t *room, size_t machine, uint32_t *out)
{
    bool found = false;

    for (uint32_t k = 0; k < tile->current.count; k++) {
        uint32_t node = tile->current.node[k];
        if (!work->nodes[node].up || work->nodes[node].machine != machine)
            continue;
        if (!found || work->nodes[node].read_bytes_per_sec > work->nodes[*out].read_bytes_per_sec)
            *out = node;
        found = true;
    }
    for (uint32_t node = 0; !found && node < work->node_count; node++) {
        if (!work->nodes[node].up || work->nodes[node].machine != machine ||
            room[node] < tile->tile->tile_bytes)
            continue;
        *out = node;
        for (uint32_t other = node + 1; other < work->node_count; other++) {
            if (work->nodes[other].up && work->nodes[other].machine == machine &&
                room[other] >= tile->tile->tile_bytes &&
                work->nodes[other].read_bytes_per_sec > work->nodes[*out].read_bytes_per_sec)
                *out = other;
        }
        found = true;
    }
    return found;
}

/* Hottest tile first; ties by index. */
static int compare_heat(const void *a, const void *b, void *context)
{
    const struct plan_work *work = context;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    uint64_t heat_x = work->tiles[x].bytes_accessed, heat_y = work->tiles[y].bytes_accessed;
    if (heat_x != heat_y)
        return heat_x > heat_y ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* The wanted holders of every work tile (plan_work_emit()'s input). */
static int lbm_targets(const struct plan_work *work, const struct plan_options *options,
                       struct plan_placement *targets)
{
    struct plan_lbm_assignment assignment;
    size_t slots = work->tile_count ? work->tile_count : 1;
    size_t *machine_of_tile = malloc(slots * sizeof(*machine_of_tile));
    size_t *by_heat = malloc(slots * sizeof(*by_heat));
    uint64_t *room = calloc(work->node_count ? work->node_count : 1, sizeof(*room));
    int rc = -ENOMEM;

    if (!machine_of_tile || !by_heat || !room)
        goto out;
    for (size_t i = 0; i < work->tile_count; i++) {
        machine_of_tile[i] = PLAN_WORK_NO_MACHINE;
        by_heat[i] = i;
    }
    rc = assign_roles(work, options, &assignment, machine_of_tile);
    if (rc < 0)
        goto out;
    plan_lbm_assignment_release(&assignment);
    for (size_t n = 0; n < work->node_count; n++)
        room[n] = work->nodes[n].free_bytes;
    qsort_r(by_heat, work->tile_count, sizeof(*by_heat), compare_heat, (void *)work);
    for (size_t k = 0; k < work->tile_count; k++) {
        size_t i = by_heat[k];
        const struct plan_work_tile *tile = &work->tiles[i];
        uint32_t node = 0;
        targets[i] = tile->current;
        if (!tile->movable || machine_of_tile[i] == PLAN_WORK_NO_MACHINE ||
            !machine_node(work, tile, room, machine_of_tile[i], &node))
            continue;
        if (!plan_placement_has(&tile->current, node))
            room[node] -= tile->tile->tile_bytes;
        targets[i].count = 1;
        targets[i].node[0] = node;
    }
    rc = 0;
out:
    free(machine_of_tile);
    free(by_heat);
    free(room);
    return rc;
}

int plan_lbm(const struct plan_cluster *cluster, const struct plan_profile *profile,
             const struct plan_tilemap *map, const struct plan_options *options, struct plan *out)
{
    return plan_work_plan(cluster, profile, map, options, lbm_targets, PLAN_BASIS_LBM, out);
}
