/*
 * @file plan_work.c
 * Checks and indexes a planner's input once (see plan_work.h), and turns
 * the target placement a policy chose into the steps of a plan.
 *
 * Invariants of a built work: every node speed and the network bandwidth
 * are > 0; machines are sorted and unique; tiles are sorted by (ino, tile)
 * and each has at least one access with a non-zero count or byte total;
 * a tile's accesses are sorted by machine index, one per machine.
 */
#include "plan_work.h"

#include "plan_cost.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A profile record with its machine interned, for sorting. */
struct keyed_access {
    uint64_t ino;
    uint64_t tile;
    size_t machine;
    const struct plan_access *access;
};

/* A node index sorted by id, to resolve the ids a tile map names. */
struct keyed_node {
    uint32_t id;
    uint32_t index;
};

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int compare_keyed_access(const void *a, const void *b)
{
    const struct keyed_access *x = a;
    const struct keyed_access *y = b;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    if (x->tile != y->tile)
        return x->tile < y->tile ? -1 : 1;
    if (x->machine != y->machine)
        return x->machine < y->machine ? -1 : 1;
    return 0;
}

static int compare_keyed_node(const void *a, const void *b)
{
    const struct keyed_node *x = a;
    const struct keyed_node *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return 0;
}

static int compare_tile_pointers(const void *a, const void *b)
{
    const struct plan_tile *x = *(const struct plan_tile *const *)a;
    const struct plan_tile *y = *(const struct plan_tile *const *)b;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    if (x->tile != y->tile)
        return x->tile < y->tile ? -1 : 1;
    return 0;
}

/* Index of `name` in the sorted machine table (it is always there). */
static size_t machine_index(const struct plan_work *work, const char *name)
{
    const char **found =
        bsearch(&name, work->machines, work->machine_count, sizeof(*work->machines), compare_names);
    return (size_t)(found - work->machines);
}

/* Interns every machine name of the nodes and the profile. */
static int build_machines(const struct plan_cluster *cluster, const struct plan_profile *profile,
                          struct plan_work *work)
{
    size_t total = cluster->node_count + profile->count;
    size_t count = 0;

    work->machines = calloc(total ? total : 1, sizeof(*work->machines));
    if (!work->machines)
        return -ENOMEM;
    for (size_t i = 0; i < cluster->node_count; i++) {
        if (cluster->nodes[i].machine)
            work->machines[count++] = cluster->nodes[i].machine;
    }
    for (size_t i = 0; i < profile->count; i++) {
        if (!profile->accesses[i].machine)
            return -EINVAL;
        work->machines[count++] = profile->accesses[i].machine;
    }
    qsort(work->machines, count, sizeof(*work->machines), compare_names);
    work->machine_count = 0;
    for (size_t i = 0; i < count; i++) {
        if (work->machine_count == 0 ||
            strcmp(work->machines[work->machine_count - 1], work->machines[i]) != 0)
            work->machines[work->machine_count++] = work->machines[i];
    }
    return 0;
}

/* Mean of the measured up nodes' speeds of one kind, or the default. */
static double mean_speed(const struct plan_cluster *cluster, bool write)
{
    double sum = 0;
    size_t measured = 0;

    for (size_t i = 0; i < cluster->node_count; i++) {
        const struct plan_node *node = &cluster->nodes[i];
        uint64_t speed = write ? node->write_bytes_per_sec : node->read_bytes_per_sec;
        if (node->up && speed > 0) {
            sum += (double)speed;
            measured++;
        }
    }
    return measured ? sum / (double)measured : (double)PLAN_DEFAULT_DISK_BYTES_PER_SEC;
}

static int build_nodes(const struct plan_cluster *cluster, struct plan_work *work,
                       struct keyed_node **by_id_out)
{
    double read_default = mean_speed(cluster, false);
    double write_default = mean_speed(cluster, true);
    struct keyed_node *by_id;

    if (cluster->node_count > UINT32_MAX)
        return -EINVAL;
    work->nodes = calloc(cluster->node_count ? cluster->node_count : 1, sizeof(*work->nodes));
    by_id = calloc(cluster->node_count ? cluster->node_count : 1, sizeof(*by_id));
    if (!work->nodes || !by_id) {
        free(by_id);
        return -ENOMEM;
    }
    work->node_count = cluster->node_count;
    for (size_t i = 0; i < cluster->node_count; i++) {
        const struct plan_node *node = &cluster->nodes[i];
        struct plan_work_node *out = &work->nodes[i];
        out->id = node->id;
        out->machine = node->machine ? machine_index(work, node->machine) : PLAN_WORK_NO_MACHINE;
        out->up = node->up != 0;
        out->read_bytes_per_sec =
            node->read_bytes_per_sec ? (double)node->read_bytes_per_sec : read_default;
        out->write_bytes_per_sec =
            node->write_bytes_per_sec ? (double)node->write_bytes_per_sec : write_default;
        out->free_bytes = node->free_bytes;
        by_id[i].id = node->id;
        by_id[i].index = (uint32_t)i;
    }
    qsort(by_id, cluster->node_count, sizeof(*by_id), compare_keyed_node);
    for (size_t i = 0; i < cluster->node_count; i++) {
        if (by_id[i].id == 0 || (i > 0 && by_id[i].id == by_id[i - 1].id)) {
            free(by_id);
            return -EINVAL;
        }
    }
    *by_id_out = by_id;
    return 0;
}

/* Resolves a map entry's node ids to indices; -EINVAL if it names a bad set. */
static int resolve_holders(const struct plan_tile *tile, const struct keyed_node *by_id,
                           size_t node_count, struct plan_placement *out)
{
    if (tile->node_count > PLAN_MAX_COPIES)
        return -EINVAL;
    out->count = 0;
    for (uint32_t k = 0; k < tile->node_count; k++) {
        struct keyed_node key = {.id = tile->nodes[k], .index = 0};
        const struct keyed_node *found =
            bsearch(&key, by_id, node_count, sizeof(*by_id), compare_keyed_node);
        if (!found || plan_placement_has(out, found->index))
            return -EINVAL;
        out->node[out->count++] = found->index;
    }
    return 0;
}

/*
 * Sums the sorted records of one (ino, tile) starting at keyed[*at] into
 * accesses per machine; returns how many it wrote, advancing *at past the
 * group. Records with no count and no bytes say nothing and are skipped.
 */
static size_t sum_group(const struct keyed_access *keyed, size_t keyed_count, size_t *at,
                        struct plan_work_access *out)
{
    size_t written = 0;
    size_t i = *at;
    uint64_t ino = keyed[i].ino;
    uint64_t tile = keyed[i].tile;

    while (i < keyed_count && keyed[i].ino == ino && keyed[i].tile == tile) {
        struct plan_work_access sum = {.machine = keyed[i].machine, .first_access_ns = UINT64_MAX};
        for (; i < keyed_count && keyed[i].ino == ino && keyed[i].tile == tile &&
               keyed[i].machine == sum.machine;
             i++) {
            const struct plan_access *access = keyed[i].access;
            sum.reads += access->reads;
            sum.writes += access->writes;
            sum.bytes_read += access->bytes_read;
            sum.bytes_written += access->bytes_written;
            if (access->first_access_ns != 0 && access->first_access_ns < sum.first_access_ns)
                sum.first_access_ns = access->first_access_ns;
        }
        if (sum.reads || sum.writes || sum.bytes_read || sum.bytes_written)
            out[written++] = sum;
    }
    *at = i;
    return written;
}

/* Joins the profile (summed per tile and machine) with the sorted map. */
static int build_tiles(const struct plan_profile *profile, const struct plan_tile **sorted,
                       size_t sorted_count, const struct keyed_node *by_id, struct plan_work *work)
{
    struct keyed_access *keyed;
    size_t at = 0;
    size_t map_at = 0;
    int rc = 0;

    keyed = calloc(profile->count ? profile->count : 1, sizeof(*keyed));
    work->accesses = calloc(profile->count ? profile->count : 1, sizeof(*work->accesses));
    work->tiles = calloc(profile->count ? profile->count : 1, sizeof(*work->tiles));
    if (!keyed || !work->accesses || !work->tiles) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < profile->count; i++) {
        keyed[i].ino = profile->accesses[i].ino;
        keyed[i].tile = profile->accesses[i].tile;
        keyed[i].machine = machine_index(work, profile->accesses[i].machine);
        keyed[i].access = &profile->accesses[i];
    }
    qsort(keyed, profile->count, sizeof(*keyed), compare_keyed_access);

    while (at < profile->count) {
        struct plan_tile key = {.ino = keyed[at].ino, .tile = keyed[at].tile};
        const struct plan_tile *key_pointer = &key;
        struct plan_work_access *accesses = &work->accesses[work->access_count];
        size_t count = sum_group(keyed, profile->count, &at, accesses);
        struct plan_work_tile *tile;

        /* The map is sorted too: walk it forward instead of searching. */
        while (map_at < sorted_count && compare_tile_pointers(&sorted[map_at], &key_pointer) < 0)
            map_at++;
        if (count == 0 || map_at == sorted_count ||
            compare_tile_pointers(&sorted[map_at], &key_pointer) != 0)
            continue; /* nothing counted, or a hole or a deleted file */

        tile = &work->tiles[work->tile_count++];
        tile->tile = sorted[map_at];
        rc = resolve_holders(tile->tile, by_id, work->node_count, &tile->current);
        if (rc < 0)
            goto out;
        tile->accesses = accesses;
        tile->access_count = count;
        tile->first_access_ns = UINT64_MAX;
        for (size_t k = 0; k < count; k++) {
            tile->bytes_accessed += accesses[k].bytes_read + accesses[k].bytes_written;
            if (accesses[k].first_access_ns < tile->first_access_ns)
                tile->first_access_ns = accesses[k].first_access_ns;
        }
        tile->min_copies = tile->tile->min_copies ? tile->tile->min_copies : 1;
        for (uint32_t k = 0; k < tile->current.count; k++) {
            if (work->nodes[tile->current.node[k]].up)
                tile->movable = true;
        }
        work->access_count += count;
    }
out:
    free(keyed);
    return rc;
}

int plan_work_build(const struct plan_cluster *cluster, const struct plan_profile *profile,
                    const struct plan_tilemap *map, const struct plan_options *options,
                    struct plan_work *work)
{
    const struct plan_tile **sorted = NULL;
    struct keyed_node *by_id = NULL;
    size_t sorted_count = 0;
    uint32_t max_copies = options ? options->max_copies : 0;
    int rc;

    if (!work)
        return -EINVAL;
    memset(work, 0, sizeof(*work));
    if (!cluster || !profile || !map || (cluster->node_count && !cluster->nodes) ||
        (profile->count && !profile->accesses) || (map->count && !map->tiles))
        return -EINVAL;

    work->network_bytes_per_sec = cluster->network_bytes_per_sec
                                      ? (double)cluster->network_bytes_per_sec
                                      : (double)PLAN_DEFAULT_NETWORK_BYTES_PER_SEC;
    if (max_copies == 0)
        max_copies = PLAN_DEFAULT_MAX_COPIES;
    work->max_copies = max_copies > PLAN_MAX_COPIES ? PLAN_MAX_COPIES : max_copies;
    work->coarse_only = options && options->coarse_only;
    work->greedy_only = options && options->greedy_only;
    work->predictor = options && options->predictor && options->predictor->seconds
                          ? options->predictor
                          : NULL;

    rc = build_machines(cluster, profile, work);
    if (rc < 0)
        goto fail;
    rc = build_nodes(cluster, work, &by_id);
    if (rc < 0)
        goto fail;

    sorted = calloc(map->count ? map->count : 1, sizeof(*sorted));
    if (!sorted) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < map->count; i++) {
        struct plan_placement check;
        if (map->tiles[i].node_count == 0)
            continue; /* a hole */
        /* Every entry is checked, profiled or not: a bad map is a caller bug. */
        rc = resolve_holders(&map->tiles[i], by_id, work->node_count, &check);
        if (rc < 0)
            goto fail;
        sorted[sorted_count++] = &map->tiles[i];
    }
    qsort(sorted, sorted_count, sizeof(*sorted), compare_tile_pointers);
    for (size_t i = 1; i < sorted_count; i++) {
        if (compare_tile_pointers(&sorted[i - 1], &sorted[i]) == 0) {
            rc = -EINVAL;
            goto fail;
        }
    }
    rc = build_tiles(profile, sorted, sorted_count, by_id, work);
    if (rc < 0)
        goto fail;
    free(sorted);
    free(by_id);
    return 0;

fail:
    free(sorted);
    free(by_id);
    plan_work_release(work);
    return rc;
}

void plan_work_release(struct plan_work *work)
{
    if (!work)
        return;
    free(work->nodes);
    free(work->machines);
    free(work->tiles);
    free(work->accesses);
    memset(work, 0, sizeof(*work));
}

bool plan_placement_has(const struct plan_placement *placement, uint32_t node)
{
    for (uint32_t k = 0; k < placement->count; k++) {
        if (placement->node[k] == node)
            return true;
    }
    return false;
}

static bool same_set(const struct plan_placement *a, const struct plan_placement *b)
{
    if (a->count != b->count)
        return false;
    for (uint32_t k = 0; k < a->count; k++) {
        if (!plan_placement_has(b, a->node[k]))
            return false;
    }
    return true;
}

/* Same nodes in the same order. */
static bool placement_equal(const struct plan_placement *a, const struct plan_placement *b)
{
    if (a->count != b->count)
        return false;
    for (uint32_t k = 0; k < a->count; k++) {
        if (a->node[k] != b->node[k])
            return false;
    }
    return true;
}

void plan_work_finalize(const struct plan_work *work, size_t tile_index,
                        const struct plan_placement *target, struct plan_placement *final)
{
    const struct plan_work_tile *tile = &work->tiles[tile_index];
    const struct plan_placement *current = &tile->current;

    if (same_set(target, current)) {
        *final = *current;
        return;
    }
    *final = *target;
    /* Keep current holders for the file's copies= setting: up ones first. */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t k = 0; k < current->count; k++) {
            uint32_t node = current->node[k];
            bool wanted_pass = work->nodes[node].up == (pass == 0);
            if (final->count >= tile->min_copies || final->count >= PLAN_MAX_COPIES)
                return;
            if (wanted_pass && !plan_placement_has(final, node))
                final->node[final->count++] = node;
        }
    }
}

/* Growable list of actions. */
struct action_list {
    struct plan_action *items;
    size_t count;
    size_t capacity;
};

static int action_push(struct action_list *list, const struct plan_action *action)
{
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? 2 * list->capacity : 64;
        struct plan_action *items = realloc(list->items, capacity * sizeof(*items));
        if (!items)
            return -ENOMEM;
        list->items = items;
        list->capacity = capacity;
    }
    list->items[list->count++] = *action;
    return 0;
}

/* The fastest-reading node of `from` that is up and in (or not in) `keep`. */
static int pick_source(const struct plan_work *work, const struct plan_placement *from,
                       const struct plan_placement *keep, bool in_keep, uint32_t *out)
{
    bool found = false;
    for (uint32_t k = 0; k < from->count; k++) {
        uint32_t node = from->node[k];
        if (!work->nodes[node].up || plan_placement_has(keep, node) != in_keep)
            continue;
        if (!found || work->nodes[node].read_bytes_per_sec > work->nodes[*out].read_bytes_per_sec) {
            *out = node;
            found = true;
        }
    }
    return found ? 0 : -ENOENT;
}

/*
 * The steps taking one tile from `current` to `final`: a lost holder that
 * is up hands its copy to a gained one (move), further gained holders
 * pull from a holder that stays (copy; from a leaving one if none stays),
 * leftover lost holders drop theirs.
 */
static int emit_tile(const struct plan_work *work, size_t tile_index,
                     const struct plan_placement *final, struct action_list *list,
                     uint64_t *transfer_bytes)
{
    const struct plan_work_tile *tile = &work->tiles[tile_index];
    const struct plan_placement *current = &tile->current;
    struct plan_placement gained = {0};
    struct plan_placement lost_up = {0};
    struct plan_placement lost_down = {0};
    struct plan_action action = {
        .ino = tile->tile->ino,
        .tile = tile->tile->tile,
        .version = tile->tile->version,
        .tile_bytes = tile->tile->tile_bytes,
        .cost_before = plan_cost_tile(work, tile_index, current, NULL, NULL),
        .cost_after = plan_cost_tile(work, tile_index, final, NULL, NULL),
    };
    uint32_t moves;
    uint32_t source = 0;
    int rc;

    for (uint32_t k = 0; k < final->count; k++) {
        if (!plan_placement_has(current, final->node[k]))
            gained.node[gained.count++] = final->node[k];
    }
    for (uint32_t k = 0; k < current->count; k++) {
        uint32_t node = current->node[k];
        if (plan_placement_has(final, node))
            continue;
        if (work->nodes[node].up)
            lost_up.node[lost_up.count++] = node;
        else
            lost_down.node[lost_down.count++] = node;
    }
    moves = gained.count < lost_up.count ? gained.count : lost_up.count;

    if (gained.count > moves && pick_source(work, current, final, true, &source) < 0 &&
        pick_source(work, current, final, false, &source) < 0)
        return -EINVAL; /* not movable: the planners never ask for this */

    action.kind = PLAN_COPY;
    for (uint32_t k = moves; k < gained.count; k++) {
        action.from_node = work->nodes[source].id;
        action.to_node = work->nodes[gained.node[k]].id;
        rc = action_push(list, &action);
        if (rc < 0)
            return rc;
        *transfer_bytes += action.tile_bytes;
    }
    action.kind = PLAN_MOVE;
    for (uint32_t k = 0; k < moves; k++) {
        action.from_node = work->nodes[lost_up.node[k]].id;
        action.to_node = work->nodes[gained.node[k]].id;
        rc = action_push(list, &action);
        if (rc < 0)
            return rc;
        *transfer_bytes += action.tile_bytes;
    }
    action.kind = PLAN_DROP;
    action.to_node = 0;
    for (uint32_t k = moves; k < lost_up.count; k++) {
        action.from_node = work->nodes[lost_up.node[k]].id;
        rc = action_push(list, &action);
        if (rc < 0)
            return rc;
    }
    for (uint32_t k = 0; k < lost_down.count; k++) {
        action.from_node = work->nodes[lost_down.node[k]].id;
        rc = action_push(list, &action);
        if (rc < 0)
            return rc;
    }
    return 0;
}

double plan_work_model_seconds(const struct plan_work *work,
                               const struct plan_placement *placements)
{
    if (!work->predictor)
        return 0;
    return work->predictor->seconds(work->predictor->arg, work, placements);
}

int plan_work_emit(const struct plan_work *work, const struct plan_placement *targets,
                   enum plan_basis basis, struct plan *out)
{
    struct plan_placement *finals;
    struct plan_placement *currents;
    struct action_list list = {0};
    size_t changed = 0;
    int rc = -ENOMEM;

    memset(out, 0, sizeof(*out));
    finals = calloc(work->tile_count ? work->tile_count : 1, sizeof(*finals));
    currents = calloc(work->tile_count ? work->tile_count : 1, sizeof(*currents));
    out->node_seconds_before = calloc(work->node_count ? work->node_count : 1, sizeof(double));
    out->node_seconds_after = calloc(work->node_count ? work->node_count : 1, sizeof(double));
    if (!finals || !currents || !out->node_seconds_before || !out->node_seconds_after)
        goto fail;
    out->node_count = work->node_count;
    out->basis = basis;

    for (size_t i = 0; i < work->tile_count; i++) {
        currents[i] = work->tiles[i].current;
        if (work->tiles[i].movable)
            plan_work_finalize(work, i, &targets[i], &finals[i]);
        else
            finals[i] = currents[i];
        if (!placement_equal(&finals[i], &currents[i]))
            changed++;
    }
    out->makespan_before = plan_cost_work(work, currents, out->node_seconds_before, NULL);
    out->makespan_after = plan_cost_work(work, finals, out->node_seconds_after, NULL);
    out->model_seconds_before = plan_work_model_seconds(work, currents);
    out->model_seconds_after = plan_work_model_seconds(work, finals);

    out->changed = calloc(changed ? changed : 1, sizeof(*out->changed));
    if (!out->changed)
        goto fail;
    for (size_t i = 0; i < work->tile_count; i++) {
        struct plan_tile *entry;
        if (placement_equal(&finals[i], &currents[i]))
            continue;
        rc = emit_tile(work, i, &finals[i], &list, &out->transfer_bytes);
        if (rc < 0)
            goto fail;
        entry = &out->changed[out->changed_count++];
        *entry = *work->tiles[i].tile;
        memset(entry->nodes, 0, sizeof(entry->nodes));
        entry->node_count = finals[i].count;
        for (uint32_t k = 0; k < finals[i].count; k++)
            entry->nodes[k] = work->nodes[finals[i].node[k]].id;
    }
    out->actions = list.items;
    out->action_count = list.count;
    free(finals);
    free(currents);
    return 0;

fail:
    free(list.items);
    free(finals);
    free(currents);
    plan_release(out);
    return rc;
}

int plan_work_plan(const struct plan_cluster *cluster, const struct plan_profile *profile,
                   const struct plan_tilemap *map, const struct plan_options *options,
                   plan_work_targets_fn targets, enum plan_basis basis, struct plan *out)
{
    struct plan_work work;
    struct plan_placement *wanted;
    int rc;

    if (!out)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    rc = plan_work_build(cluster, profile, map, options, &work);
    if (rc < 0)
        return rc;
    wanted = calloc(work.tile_count ? work.tile_count : 1, sizeof(*wanted));
    if (!wanted) {
        rc = -ENOMEM;
        goto out;
    }
    rc = targets(&work, options, wanted);
    if (rc == 0)
        rc = plan_work_emit(&work, wanted, basis, out);
out:
    free(wanted);
    plan_work_release(&work);
    return rc;
}
