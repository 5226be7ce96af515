/*
 * @file plan_frequent.c
 * The `frequent` policy (plan_frequent.h): most frequent accessor first,
 * copies for read-shared tiles. Space is claimed per node as targets are
 * chosen, so no node is sent more than its free space.
 */
#include "plan_frequent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* What one tile's choice needs to see. */
struct frequent_state {
    const struct plan_work *work;
    uint64_t *room; /* free bytes per node, less what this plan sends it */
};

static bool is_reader(const struct plan_work_access *access)
{
    return access->reads || access->bytes_read;
}

static bool is_writer(const struct plan_work_access *access)
{
    return access->writes || access->bytes_written;
}

/* True when an up node of `machine` holds the tile now. */
static bool machine_holds(const struct plan_work *work, const struct plan_work_tile *tile,
                          size_t machine)
{
    for (uint32_t k = 0; k < tile->current.count; k++) {
        const struct plan_work_node *node = &work->nodes[tile->current.node[k]];
        if (node->up && node->machine == machine)
            return true;
    }
    return false;
}

/* The tie rule of plan_frequent.h: < 0 when access a ranks before b. */
static int rank_compare(const struct plan_work *work, const struct plan_work_tile *tile,
                        const struct plan_work_access *a, const struct plan_work_access *b)
{
    uint64_t count_a = a->reads + a->writes;
    uint64_t count_b = b->reads + b->writes;
    uint64_t bytes_a = a->bytes_read + a->bytes_written;
    uint64_t bytes_b = b->bytes_read + b->bytes_written;
    bool holds_a = machine_holds(work, tile, a->machine);
    bool holds_b = machine_holds(work, tile, b->machine);

    if (count_a != count_b)
        return count_a > count_b ? -1 : 1;
    if (bytes_a != bytes_b)
        return bytes_a > bytes_b ? -1 : 1;
    if (holds_a != holds_b)
        return holds_a ? -1 : 1;
    if (a->first_access_ns != b->first_access_ns)
        return a->first_access_ns < b->first_access_ns ? -1 : 1;
    return strcmp(work->machines[a->machine], work->machines[b->machine]);
}

/* Sorts the tile's accesses by rank into order[] (a handful: insertion sort). */
static void rank_accesses(const struct plan_work *work, const struct plan_work_tile *tile,
                          const struct plan_work_access **order)
{
    for (size_t i = 0; i < tile->access_count; i++) {
        const struct plan_work_access *access = &tile->accesses[i];
        size_t at = i;
        while (at > 0 && rank_compare(work, tile, access, order[at - 1]) < 0) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = access;
    }
}

/*
 * The node of `machine` for the tile: an up holder on it (fastest read),
 * else its fastest-reading up node with room. Returns 0 with *out, or
 * -ENOENT when the machine has no usable node.
 */
static int machine_node(const struct frequent_state *state, const struct plan_work_tile *tile,
                        size_t machine, uint32_t *out)
{
    const struct plan_work *work = state->work;
    bool found = false;

    for (uint32_t k = 0; k < tile->current.count; k++) {
        uint32_t node = tile->current.node[k];
        if (!work->nodes[node].up || work->nodes[node].machine != machine)
            continue;
        if (!found || work->nodes[node].read_bytes_per_sec > work->nodes[*out].read_bytes_per_sec)
            *out = node;
        found = true;
    }
    if (found)
        return 0;
    for (uint32_t node = 0; node < work->node_count; node++) {
        if (!work->nodes[node].up || work->nodes[node].machine != machine ||
            state->room[node] < tile->tile->tile_bytes)
            continue;
        if (!found || work->nodes[node].read_bytes_per_sec > work->nodes[*out].read_bytes_per_sec)
            *out = node;
        found = true;
    }
    return found ? 0 : -ENOENT;
}

/* Adds `node` to the target, claiming space unless it holds the tile now. */
static void claim(struct frequent_state *state, const struct plan_work_tile *tile, uint32_t node,
                  struct plan_placement *target)
{
    if (plan_placement_has(target, node))
        return;
    if (!plan_placement_has(&tile->current, node))
        state->room[node] -= tile->tile->tile_bytes;
    target->node[target->count++] = node;
}

static bool target_covers(const struct plan_work *work, const struct plan_placement *target,
                          size_t machine)
{
    for (uint32_t k = 0; k < target->count; k++) {
        if (work->nodes[target->node[k]].machine == machine)
            return true;
    }
    return false;
}

static void choose_tile(struct frequent_state *state, const struct plan_work_tile *tile,
                        const struct plan_work_access **order, struct plan_placement *target)
{
    const struct plan_work *work = state->work;
    const struct plan_work_access *writer = NULL;
    size_t writers = 0;
    size_t other_readers = 0;
    bool copies;
    uint32_t node;

    target->count = 0;
    rank_accesses(work, tile, order);
    for (size_t i = 0; i < tile->access_count; i++) {
        if (is_writer(order[i])) {
            writers++;
            writer = order[i];
        }
    }
    for (size_t i = 0; i < tile->access_count; i++) {
        if (is_reader(order[i]) && (writers != 1 || order[i] != writer))
            other_readers++;
    }

    /* The primary: the single writer first if there is one, then by rank. */
    if (writers == 1 && machine_node(state, tile, writer->machine, &node) == 0)
        claim(state, tile, node, target);
    for (size_t i = 0; i < tile->access_count && target->count == 0; i++) {
        if (machine_node(state, tile, order[i]->machine, &node) == 0)
            claim(state, tile, node, target);
    }
    if (target->count == 0) {
        /* No accessor has a usable node: the tile stays where it is. */
        const struct plan_placement *current = &tile->current;
        node = current->node[0];
        for (uint32_t k = 0; k < current->count; k++) {
            if (work->nodes[current->node[k]].up) {
                node = current->node[k];
                break;
            }
        }
        claim(state, tile, node, target);
    }

    /* Copies at the readers: read-shared, or one writer and other readers. */
    copies = (writers == 0 && other_readers >= 2) || (writers == 1 && other_readers >= 1);
    for (size_t i = 0; copies && i < tile->access_count; i++) {
        if (target->count >= work->max_copies)
            break;
        if (!is_reader(order[i]) || target_covers(work, target, order[i]->machine))
            continue;
        if (machine_node(state, tile, order[i]->machine, &node) == 0)
            claim(state, tile, node, target);
    }
}

/* Hottest tile first; ties in (ino, tile) order, i.e. by index. */
static int compare_heat(const void *a, const void *b, void *context)
{
    const struct plan_work *work = context;
    size_t x = *(const size_t *)a;
    size_t y = *(const size_t *)b;
    uint64_t heat_x = work->tiles[x].bytes_accessed;
    uint64_t heat_y = work->tiles[y].bytes_accessed;

    if (heat_x != heat_y)
        return heat_x > heat_y ? -1 : 1;
    if (x != y)
        return x < y ? -1 : 1;
    return 0;
}

int plan_frequent_targets(const struct plan_work *work, struct plan_placement *targets)
{
    struct frequent_state state = {.work = work};
    const struct plan_work_access **order = NULL;
    size_t *by_heat = NULL;
    int rc = -ENOMEM;

    state.room = calloc(work->node_count ? work->node_count : 1, sizeof(*state.room));
    order = calloc(work->machine_count ? work->machine_count : 1, sizeof(*order));
    by_heat = calloc(work->tile_count ? work->tile_count : 1, sizeof(*by_heat));
    if (!state.room || !order || !by_heat)
        goto out;
    for (size_t n = 0; n < work->node_count; n++)
        state.room[n] = work->nodes[n].free_bytes;
    for (size_t i = 0; i < work->tile_count; i++)
        by_heat[i] = i;
    qsort_r(by_heat, work->tile_count, sizeof(*by_heat), compare_heat, (void *)work);

    for (size_t i = 0; i < work->tile_count; i++) {
        const struct plan_work_tile *tile = &work->tiles[by_heat[i]];
        if (tile->movable)
            choose_tile(&state, tile, order, &targets[by_heat[i]]);
        else
            targets[by_heat[i]] = tile->current;
    }
    rc = 0;
out:
    free(state.room);
    free(order);
    free(by_heat);
    return rc;
}

/* plan_frequent_targets() as a plan_work_targets_fn: `frequent` takes no lbm options. */
static int frequent_targets(const struct plan_work *work, const struct plan_options *options,
                            struct plan_placement *targets)
{
    (void)options;
    return plan_frequent_targets(work, targets);
}

int plan_frequent(const struct plan_cluster *cluster, const struct plan_profile *profile,
                  const struct plan_tilemap *map, const struct plan_options *options,
                  struct plan *out)
{
    return plan_work_plan(cluster, profile, map, options, frequent_targets, PLAN_BASIS_FREQUENT,
                          out);
}
