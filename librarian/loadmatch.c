/*
 * @file loadmatch.c
 * Load Balance Matching (loadmatch.h). The graph is complete with
 * role_count <= machine_count, so a matching covering every role always
 * exists at the largest bound; the search keeps the invariant that the
 * bound at index `high` of the sorted distinct weights admits one, and
 * narrows until `low == high`. Ties between equally good matchings are
 * broken by Hopcroft-Karp's deterministic order (edges listed by machine
 * index), so the same matrix always gives the same assignment.
 */
#include "loadmatch.h"

#include "hopcroftkarp.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int loadmatch_workload(const uint64_t *io_matrix, size_t role_count, size_t machine_count,
                       uint64_t *workload)
{
    if ((role_count && machine_count) && (!io_matrix || !workload))
        return -EINVAL;
    for (size_t i = 0; i < role_count; i++) {
        const uint64_t *row = io_matrix + i * machine_count;
        uint64_t sum = 0;
        for (size_t j = 0; j < machine_count; j++) {
            if (row[j] > UINT64_MAX - sum)
                return -EOVERFLOW;
            sum += row[j];
        }
        for (size_t j = 0; j < machine_count; j++)
            workload[i * machine_count + j] = sum - row[j];
    }
    return 0;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Matches with the edges whose workload is <= bound. Returns 0 with
 * *covers true when every role is matched (machine_of_role then filled),
 * or -ENOMEM.
 */
static int match_under(const uint64_t *workload, size_t role_count, size_t machine_count,
                       uint64_t bound, size_t *edge_start, size_t *edge_right,
                       size_t *machine_of_role, bool *covers)
{
    struct hopcroftkarp_graph graph = {
        .left_count = role_count,
        .right_count = machine_count,
        .edge_start = edge_start,
        .edge_right = edge_right,
    };
    size_t edges = 0;
    size_t matched;
    int rc;

    for (size_t i = 0; i < role_count; i++) {
        edge_start[i] = edges;
        for (size_t j = 0; j < machine_count; j++) {
            if (workload[i * machine_count + j] <= bound)
                edge_right[edges++] = j;
        }
    }
    edge_start[role_count] = edges;
    rc = hopcroftkarp_match(&graph, machine_of_role, &matched);
    if (rc < 0)
        return rc;
    *covers = matched == role_count;
    return 0;
}

int loadmatch_assign(const uint64_t *io_matrix, size_t role_count, size_t machine_count,
                     size_t *machine_of_role, uint64_t *bottleneck)
{
    uint64_t *workload;
    int rc;

    if (!bottleneck || (role_count && (!io_matrix || !machine_of_role)))
        return -EINVAL;
    if (role_count > machine_count)
        return -EINVAL;
    *bottleneck = 0;
    if (role_count == 0)
        return 0;
    if ((role_count * machine_count) / role_count != machine_count)
        return -EOVERFLOW;
    workload = malloc(role_count * machine_count * sizeof(*workload));
    if (!workload)
        return -ENOMEM;
    rc = loadmatch_workload(io_matrix, role_count, machine_count, workload);
    if (rc == 0)
        rc = loadmatch_assign_workload(workload, role_count, machine_count, machine_of_role,
                                       bottleneck);
    free(workload);
    return rc;
}

int loadmatch_assign_workload(const uint64_t *workload, size_t role_count, size_t machine_count,
                              size_t *machine_of_role, uint64_t *bottleneck)
{
    size_t cells = role_count * machine_count;
    uint64_t *sorted = NULL;
    size_t *edge_start = NULL, *edge_right = NULL;
    size_t distinct = 0, low, high;
    bool covers = false;
    int rc;

    if (!bottleneck || (role_count && (!workload || !machine_of_role)))
        return -EINVAL;
    if (role_count > machine_count)
        return -EINVAL;
    *bottleneck = 0;
    if (role_count == 0)
        return 0;
    if (cells / role_count != machine_count)
        return -EOVERFLOW;

    rc = -ENOMEM;
    sorted = malloc(cells * sizeof(*sorted));
    edge_start = malloc((role_count + 1) * sizeof(*edge_start));
    edge_right = malloc(cells * sizeof(*edge_right));
    if (!sorted || !edge_start || !edge_right)
        goto out;
    /* Step 1: L = the distinct weights of Y in non-decreasing order. */
    memcpy(sorted, workload, cells * sizeof(*sorted));
    qsort(sorted, cells, sizeof(*sorted), compare_u64);
    for (size_t k = 0; k < cells; k++) {
        if (distinct == 0 || sorted[distinct - 1] != sorted[k])
            sorted[distinct++] = sorted[k];
    }

    /* Step 2: the smallest bound L(k) that still admits a covering matching. */
    low = 0;
    high = distinct - 1;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        rc = match_under(workload, role_count, machine_count, sorted[middle], edge_start,
                         edge_right, machine_of_role, &covers);
        if (rc < 0)
            goto out;
        if (covers)
            high = middle;
        else
            low = middle + 1;
    }
    rc = match_under(workload, role_count, machine_count, sorted[high], edge_start, edge_right,
                     machine_of_role, &covers);
    if (rc < 0)
        goto out;
    if (!covers) {
        rc = -EINVAL; /* cannot happen with role_count <= machine_count */
        goto out;
    }
    *bottleneck = sorted[high];
    rc = 0;
out:
    free(sorted);
    free(edge_start);
    free(edge_right);
    return rc;
}
