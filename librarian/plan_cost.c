/*
 * @file plan_cost.c
 * The cost model of plan_cost.h: each profiled access charged to the node
 * serving it, disk time plus network time when remote.
 */
#include "plan_cost.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Relative tolerance under which two predicted times are the same. */
#define COST_EPSILON 1e-9

static bool is_local(const struct plan_work *work, uint32_t node, size_t machine)
{
    return work->nodes[node].machine != PLAN_WORK_NO_MACHINE &&
           work->nodes[node].machine == machine;
}

uint32_t plan_cost_serving_reader(const struct plan_work *work,
                                  const struct plan_placement *placement, size_t machine)
{
    uint32_t best = placement->node[0];
    bool best_local = is_local(work, best, machine);

    for (uint32_t k = 1; k < placement->count; k++) {
        uint32_t node = placement->node[k];
        bool local = is_local(work, node, machine);
        if (local != best_local) {
            if (local) {
                best = node;
                best_local = true;
            }
            continue;
        }
        if (work->nodes[node].read_bytes_per_sec > work->nodes[best].read_bytes_per_sec)
            best = node;
    }
    return best;
}

static double charge(double seconds, uint32_t node, size_t machine, double *node_seconds,
                     double *machine_seconds)
{
    if (node_seconds)
        node_seconds[node] += seconds;
    if (machine_seconds)
        machine_seconds[machine] += seconds;
    return seconds;
}

double plan_cost_tile(const struct plan_work *work, size_t tile_index,
                      const struct plan_placement *placement, double *node_seconds,
                      double *machine_seconds)
{
    const struct plan_work_tile *tile = &work->tiles[tile_index];
    double network = work->network_bytes_per_sec;
    double total = 0;

    for (size_t a = 0; a < tile->access_count; a++) {
        const struct plan_work_access *access = &tile->accesses[a];
        if (access->bytes_read) {
            uint32_t node = plan_cost_serving_reader(work, placement, access->machine);
            double bytes = (double)access->bytes_read;
            double seconds = bytes / work->nodes[node].read_bytes_per_sec;
            if (!is_local(work, node, access->machine))
                seconds += bytes / network;
            total += charge(seconds, node, access->machine, node_seconds, machine_seconds);
        }
        if (access->bytes_written) {
            double bytes = (double)access->bytes_written;
            for (uint32_t k = 0; k < placement->count; k++) {
                uint32_t node = placement->node[k];
                double seconds = bytes / work->nodes[node].write_bytes_per_sec;
                if (!is_local(work, node, access->machine))
                    seconds += bytes / network;
                total += charge(seconds, node, access->machine, node_seconds, machine_seconds);
            }
        }
    }
    return total;
}

double plan_cost_work(const struct plan_work *work, const struct plan_placement *placements,
                      double *node_seconds, double *machine_seconds)
{
    double makespan = 0;

    memset(node_seconds, 0, work->node_count * sizeof(*node_seconds));
    if (machine_seconds)
        memset(machine_seconds, 0, work->machine_count * sizeof(*machine_seconds));
    for (size_t i = 0; i < work->tile_count; i++)
        plan_cost_tile(work, i, &placements[i], node_seconds, machine_seconds);
    for (size_t n = 0; n < work->node_count; n++) {
        if (node_seconds[n] > makespan)
            makespan = node_seconds[n];
    }
    return makespan;
}

int plan_cost_evaluate(const struct plan_cluster *cluster, const struct plan_profile *profile,
                       const struct plan_tilemap *map, struct plan_cost *out)
{
    struct plan_work work;
    struct plan_placement *placements = NULL;
    int rc;

    if (!out)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    rc = plan_work_build(cluster, profile, map, NULL, &work);
    if (rc < 0)
        return rc;
    rc = -ENOMEM;
    placements = calloc(work.tile_count ? work.tile_count : 1, sizeof(*placements));
    out->node_seconds = calloc(work.node_count ? work.node_count : 1, sizeof(double));
    out->machine_seconds = calloc(work.machine_count ? work.machine_count : 1, sizeof(double));
    out->machines = calloc(work.machine_count ? work.machine_count : 1, sizeof(*out->machines));
    if (!placements || !out->node_seconds || !out->machine_seconds || !out->machines)
        goto fail;
    for (size_t i = 0; i < work.tile_count; i++)
        placements[i] = work.tiles[i].current;
    out->node_count = work.node_count;
    out->machine_count = work.machine_count;
    memcpy(out->machines, work.machines, work.machine_count * sizeof(*out->machines));
    out->makespan = plan_cost_work(&work, placements, out->node_seconds, out->machine_seconds);
    free(placements);
    plan_work_release(&work);
    return 0;

fail:
    free(placements);
    plan_work_release(&work);
    plan_cost_release(out);
    return rc;
}

void plan_cost_release(struct plan_cost *cost)
{
    if (!cost)
        return;
    free(cost->node_seconds);
    free(cost->machine_seconds);
    free(cost->machines);
    memset(cost, 0, sizeof(*cost));
}

static int compare_descending(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    if (x != y)
        return x > y ? -1 : 1;
    return 0;
}

int plan_cost_compare(const double *a, const double *b, size_t count, double *scratch)
{
    double *sorted_a = scratch;
    double *sorted_b = scratch + count;

    memcpy(sorted_a, a, count * sizeof(*a));
    memcpy(sorted_b, b, count * sizeof(*b));
    qsort(sorted_a, count, sizeof(*sorted_a), compare_descending);
    qsort(sorted_b, count, sizeof(*sorted_b), compare_descending);
    for (size_t n = 0; n < count; n++) {
        double x = sorted_a[n];
        double y = sorted_b[n];
        double scale = x > y ? x : y;
        double difference = x > y ? x - y : y - x;
        if (difference > COST_EPSILON * scale)
            return x < y ? -1 : 1;
    }
    return 0;
}
