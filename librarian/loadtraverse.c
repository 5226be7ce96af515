/*
 * @file loadtraverse.c
 * Load Balance Traversing (loadtraverse.h). The subtree sums R_r(v,k) and
 * R_w(v,k) are computed once for every subcluster and server (children
 * before parents, by depth); a link's load is then O(servers) to
 * evaluate, so dispatching at v costs O(|I'| * nch(v) * servers) and the
 * whole traversal is polynomial in the small sizes placement deals with
 * (tens of servers, tens of subclusters).
 */
#include "loadtraverse.h"

#include "loadmatch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A server's place in the dispatch at one subcluster: not yet, v itself, or child slot + 1. */
#define DISPATCH_NONE SIZE_MAX
#define DISPATCH_HERE 0

struct traversal {
    const struct loadtraverse_input *input;
    const struct loadtraverse_trace *trace;
    size_t *depth;            /* per subcluster, root 0 */
    uint64_t *subtree_read;   /* [subcluster][server]: R_r */
    uint64_t *subtree_write;  /* [subcluster][server]: R_w */
    size_t *own_machines;     /* per subcluster: machines in it that can serve */
    size_t *subtree_machines; /* per subcluster: the same in T(v) */
    size_t *machine_of_server;
    size_t *subcluster_of_server;
};

static int add_checked(uint64_t *sum, uint64_t value)
{
    if (value > UINT64_MAX - *sum)
        return -EOVERFLOW;
    *sum += value;
    return 0;
}

/* Depth of each subcluster; -EINVAL unless parent[] is exactly one tree. */
static int tree_depths(const struct loadtraverse_input *input, size_t *depth)
{
    size_t roots = 0;

    for (size_t v = 0; v < input->subcluster_count; v++) {
        size_t steps = 0;
        size_t at = v;
        if (input->parent[v] == LOADTRAVERSE_ROOT)
            roots++;
        else if (input->parent[v] >= input->subcluster_count)
            return -EINVAL;
        while (input->parent[at] != LOADTRAVERSE_ROOT) {
            at = input->parent[at];
            if (++steps > input->subcluster_count)
                return -EINVAL; /* a cycle */
        }
        depth[v] = steps;
    }
    return roots == 1 ? 0 : -EINVAL;
}

static bool machine_serves(const struct loadtraverse_input *input, size_t machine)
{
    return !input->can_serve || input->can_serve[machine];
}

static int check_input(const struct loadtraverse_input *input)
{
    if (!input || !input->parent || input->subcluster_count == 0)
        return -EINVAL;
    if (input->machine_count && !input->subcluster_of_machine)
        return -EINVAL;
    if (input->server_count && (!input->read_bytes || !input->write_bytes))
        return -EINVAL;
    size_t serving = 0;
    for (size_t m = 0; m < input->machine_count; m++) {
        if (input->subcluster_of_machine[m] >= input->subcluster_count)
            return -EINVAL;
        serving += machine_serves(input, m);
    }
    if (input->server_count > serving)
        return -EINVAL;
    for (size_t v = 0; input->link_bytes_per_sec && v < input->subcluster_count; v++) {
        if (!(input->link_bytes_per_sec[v] > 0))
            return -EINVAL;
    }
    return 0;
}

static void traversal_release(struct traversal *t)
{
    free(t->depth);
    free(t->subtree_read);
    free(t->subtree_write);
    free(t->own_machines);
    free(t->subtree_machines);
}

/* Orders subclusters deepest first, so each child is summed into its parent before it. */
static int compare_deeper_first(const void *a, const void *b, void *context)
{
    const size_t *depth = context;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (depth[x] != depth[y])
        return depth[x] > depth[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Checks the input and computes depths, R_r, R_w and machine counts. */
static int traversal_init(struct traversal *t, const struct loadtraverse_input *input)
{
    size_t subclusters, servers, *order = NULL;
    int rc;

    memset(t, 0, sizeof(*t));
    rc = check_input(input);
    if (rc < 0)
        return rc;
    t->input = input;
    subclusters = input->subcluster_count;
    servers = input->server_count ? input->server_count : 1;
    rc = -ENOMEM;
    t->depth = calloc(subclusters, sizeof(*t->depth));
    t->subtree_read = calloc(subclusters * servers, sizeof(*t->subtree_read));
    t->subtree_write = calloc(subclusters * servers, sizeof(*t->subtree_write));
    t->own_machines = calloc(subclusters, sizeof(*t->own_machines));
    t->subtree_machines = calloc(subclusters, sizeof(*t->subtree_machines));
    order = calloc(subclusters, sizeof(*order));
    if (!t->depth || !t->subtree_read || !t->subtree_write || !t->own_machines ||
        !t->subtree_machines || !order)
        goto fail;
    rc = tree_depths(input, t->depth);
    if (rc < 0)
        goto fail;

    /* r_r(v,k), r_w(v,k): each machine's bytes into its own subcluster. */
    for (size_t m = 0; m < input->machine_count; m++) {
        size_t v = input->subcluster_of_machine[m];
        t->own_machines[v] += machine_serves(input, m);
        for (size_t k = 0; k < input->server_count; k++) {
            size_t cell = k * input->machine_count + m;
            rc = add_checked(&t->subtree_read[v * servers + k], input->read_bytes[cell]);
            if (rc == 0)
                rc = add_checked(&t->subtree_write[v * servers + k], input->write_bytes[cell]);
            if (rc < 0)
                goto fail;
        }
    }
    /* R_r, R_w: children into parents, deepest first. */
    for (size_t v = 0; v < subclusters; v++) {
        order[v] = v;
        t->subtree_machines[v] = t->own_machines[v];
    }
    qsort_r(order, subclusters, sizeof(*order), compare_deeper_first, t->depth);
    for (size_t n = 0; n < subclusters; n++) {
        size_t v = order[n], up = input->parent[v];
        if (up == LOADTRAVERSE_ROOT)
            continue;
        t->subtree_machines[up] += t->subtree_machines[v];
        for (size_t k = 0; k < input->server_count; k++) {
            rc = add_checked(&t->subtree_read[up * servers + k], t->subtree_read[v * servers + k]);
            if (rc == 0)
                rc = add_checked(&t->subtree_write[up * servers + k],
                                 t->subtree_write[v * servers + k]);
            if (rc < 0)
                goto fail;
        }
    }
    free(order);
    return 0;
fail:
    free(order);
    traversal_release(t);
    return rc;
}

static size_t root_of(const struct loadtraverse_input *input)
{
    for (size_t v = 0; v < input->subcluster_count; v++) {
        if (input->parent[v] == LOADTRAVERSE_ROOT)
            return v;
    }
    return 0;
}

/*
 * Equations 1 and 2 for the link above `child`; in_subtree[k] says
 * whether server k is in I_c. Each term is at most R(root,k), which
 * traversal_init() checked fits; the sums over servers are checked here.
 */
static int link_load(const struct traversal *t, size_t child, const unsigned char *in_subtree,
                     uint64_t *down, uint64_t *up)
{
    size_t servers = t->input->server_count ? t->input->server_count : 1;
    size_t root = root_of(t->input);
    uint64_t down_sum = 0, up_sum = 0;

    for (size_t k = 0; k < t->input->server_count; k++) {
        uint64_t read_in = t->subtree_read[child * servers + k];
        uint64_t write_in = t->subtree_write[child * servers + k];
        uint64_t read_all = t->subtree_read[root * servers + k];
        uint64_t write_all = t->subtree_write[root * servers + k];
        int rc;
        if (in_subtree[k]) {
            rc = add_checked(&down_sum, write_all - write_in); /* R'_w(c,k): writes coming in */
            if (rc == 0)
                rc = add_checked(&up_sum, read_all - read_in); /* R'_r(c,k): reads going out */
        } else {
            rc = add_checked(&down_sum, read_in); /* R_r(c,k): T(c) reads from outside */
            if (rc == 0)
                rc = add_checked(&up_sum, write_in); /* R_w(c,k): T(c) writes to outside */
        }
        if (rc < 0)
            return rc;
    }
    *down = down_sum;
    *up = up_sum;
    return 0;
}

/* L_L of the link above `child` in seconds: max(L_d, L_u) / its speed. */
static int link_seconds(const struct traversal *t, size_t child, const unsigned char *in_subtree,
                        double *seconds)
{
    uint64_t down, up;
    int rc = link_load(t, child, in_subtree, &down, &up);
    if (rc < 0)
        return rc;
    double speed = t->input->link_bytes_per_sec ? t->input->link_bytes_per_sec[child] : 1.0;
    *seconds = (double)(down > up ? down : up) / speed;
    return 0;
}

static int compare_heat(const void *a, const void *b, void *context)
{
    const uint64_t *heat = context;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (heat[x] != heat[y])
        return heat[x] > heat[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/*
 * Step 5: LBM over the serving machines of v for the servers kept at v.
 * W is read + write bytes; a row's sum runs over every machine of v, so
 * requests of machines that cannot serve count as remote wherever the
 * server goes.
 */
static int match_in_subcluster(struct traversal *t, size_t v, const size_t *kept, size_t kept_count)
{
    const struct loadtraverse_input *input = t->input;
    size_t machines = t->own_machines[v];
    size_t *machine_index = NULL, *chosen = NULL;
    uint64_t *workload = NULL, bottleneck;
    size_t n = 0;
    int rc = -ENOMEM;

    if (kept_count == 0)
        return 0;
    machine_index = calloc(machines, sizeof(*machine_index));
    chosen = calloc(kept_count, sizeof(*chosen));
    workload = calloc(kept_count * machines, sizeof(*workload));
    if (!machine_index || !chosen || !workload)
        goto out;
    for (size_t m = 0; m < input->machine_count; m++) {
        if (input->subcluster_of_machine[m] == v && machine_serves(input, m))
            machine_index[n++] = m;
    }
    for (size_t a = 0; a < kept_count; a++) {
        const uint64_t *reads = input->read_bytes + kept[a] * input->machine_count;
        const uint64_t *writes = input->write_bytes + kept[a] * input->machine_count;
        uint64_t row_sum = 0;
        rc = 0;
        for (size_t m = 0; m < input->machine_count && rc == 0; m++) {
            if (input->subcluster_of_machine[m] != v)
                continue;
            rc = add_checked(&row_sum, reads[m]);
            if (rc == 0)
                rc = add_checked(&row_sum, writes[m]);
        }
        if (rc < 0)
            goto out;
        /* No underflow: each entry is part of the row's checked sum. */
        for (size_t g = 0; g < machines; g++)
            workload[a * machines + g] =
                row_sum - reads[machine_index[g]] - writes[machine_index[g]];
    }
    rc = loadmatch_assign_workload(workload, kept_count, machines, chosen, &bottleneck);
    if (rc < 0)
        goto out;
    for (size_t a = 0; a < kept_count; a++) {
        t->machine_of_server[kept[a]] = machine_index[chosen[a]];
        t->subcluster_of_server[kept[a]] = v;
    }
out:
    free(machine_index);
    free(chosen);
    free(workload);
    return rc;
}

/*
 * Figure 9 at subcluster v for the servers in pending[0..pending_count).
 * Ownership: pending is the caller's; this call may reorder it.
 */
static int traverse(struct traversal *t, size_t v, size_t *pending, size_t pending_count)
{
    const struct loadtraverse_input *input = t->input;
    size_t server_count = input->server_count;
    size_t servers = server_count ? server_count : 1;
    size_t root = root_of(input);
    size_t child_count = 0, kept_count = 0;
    size_t *children = NULL, *slot_of_server = NULL, *room = NULL, *kept = NULL, *next = NULL;
    unsigned char *in_subtree = NULL;
    double *load = NULL;
    uint64_t *heat = NULL;
    int rc = -ENOMEM;

    if (pending_count == 0)
        return 0;
    for (size_t c = 0; c < input->subcluster_count; c++)
        child_count += input->parent[c] == v;
    children = calloc(child_count + 1, sizeof(*children));
    room = calloc(child_count + 1, sizeof(*room));
    load = calloc(child_count + 1, sizeof(*load));
    slot_of_server = calloc(servers, sizeof(*slot_of_server));
    in_subtree = calloc(servers, sizeof(*in_subtree));
    kept = calloc(pending_count, sizeof(*kept));
    next = calloc(pending_count, sizeof(*next));
    heat = calloc(servers, sizeof(*heat));
    if (!children || !room || !load || !slot_of_server || !in_subtree || !kept || !next || !heat)
        goto out;
    child_count = 0;
    for (size_t c = 0; c < input->subcluster_count; c++) {
        if (input->parent[c] == v)
            children[child_count++] = c;
    }
    /* Slot 0 is v itself, slot i the subtree of its i-th child: free machines in each. */
    room[DISPATCH_HERE] = t->own_machines[v];
    for (size_t i = 0; i < child_count; i++)
        room[i + 1] = t->subtree_machines[children[i]];
    for (size_t k = 0; k < server_count; k++)
        slot_of_server[k] = DISPATCH_NONE;

    /* Step 2's order: highest R(root, x) first. */
    for (size_t k = 0; k < server_count; k++) {
        /* R_r and R_w each fit in 64 bits; their sum saturates rather than wraps. */
        uint64_t read = t->subtree_read[root * servers + k];
        uint64_t write = t->subtree_write[root * servers + k];
        heat[k] = read > UINT64_MAX - write ? UINT64_MAX : read + write;
    }
    qsort_r(pending, pending_count, sizeof(*pending), compare_heat, heat);

    /* L_L of every child link with nothing dispatched yet. */
    for (size_t i = 0; i < child_count; i++) {
        rc = link_seconds(t, children[i], in_subtree, &load[i + 1]);
        if (rc < 0)
            goto out;
    }
    for (size_t n = 0; n < pending_count; n++) {
        size_t x = pending[n];
        size_t best_slot = DISPATCH_NONE;
        double best = 0, best_total = 0, best_child_load = 0;

        for (size_t slot = 0; slot <= child_count; slot++) {
            double with_x = 0, worst = 0, total = 0;
            if (room[slot] == 0)
                continue;
            if (slot != DISPATCH_HERE) {
                /* L_L(v, i, I_i + {x}): x counted inside child i's subtree. */
                for (size_t k = 0; k < server_count; k++)
                    in_subtree[k] = slot_of_server[k] == slot;
                in_subtree[x] = 1;
                rc = link_seconds(t, children[slot - 1], in_subtree, &with_x);
                if (rc < 0)
                    goto out;
            }
            /* Equation 4 (or 5 for v itself): the largest link load. */
            for (size_t i = 1; i <= child_count; i++) {
                double value = i == slot ? with_x : load[i];
                if (value > worst)
                    worst = value;
                total += value;
            }
            if (best_slot == DISPATCH_NONE || worst < best ||
                (worst == best && total < best_total)) {
                best_slot = slot;
                best = worst;
                best_total = total;
                best_child_load = with_x;
            }
        }
        if (best_slot == DISPATCH_NONE) {
            rc = -EINVAL; /* more servers than machines under v: the caller broke the contract */
            goto out;
        }
        slot_of_server[x] = best_slot;
        room[best_slot]--;
        if (best_slot != DISPATCH_HERE)
            load[best_slot] = best_child_load;
        if (t->trace && t->trace->dispatched)
            t->trace->dispatched(t->trace->context, v, x,
                                 best_slot == DISPATCH_HERE ? v : children[best_slot - 1], best);
    }

    for (size_t n = 0; n < pending_count; n++) {
        if (slot_of_server[pending[n]] == DISPATCH_HERE)
            kept[kept_count++] = pending[n];
    }
    rc = match_in_subcluster(t, v, kept, kept_count);
    if (rc < 0)
        goto out;
    /* Step 6: recurse into each child with the servers dispatched to its subtree. */
    for (size_t i = 0; i < child_count; i++) {
        size_t next_count = 0;
        for (size_t n = 0; n < pending_count; n++) {
            if (slot_of_server[pending[n]] == i + 1)
                next[next_count++] = pending[n];
        }
        rc = traverse(t, children[i], next, next_count);
        if (rc < 0)
            goto out;
    }
    rc = 0;
out:
    free(children);
    free(room);
    free(load);
    free(slot_of_server);
    free(in_subtree);
    free(kept);
    free(next);
    free(heat);
    return rc;
}

int loadtraverse_assign(const struct loadtraverse_input *input,
                        const struct loadtraverse_trace *trace, size_t *machine_of_server,
                        size_t *subcluster_of_server)
{
    struct traversal t;
    size_t *pending;
    int rc;

    if (!input || (input->server_count && (!machine_of_server || !subcluster_of_server)))
        return -EINVAL;
    rc = traversal_init(&t, input);
    if (rc < 0)
        return rc;
    t.trace = trace;
    t.machine_of_server = machine_of_server;
    t.subcluster_of_server = subcluster_of_server;
    pending = calloc(input->server_count ? input->server_count : 1, sizeof(*pending));
    if (!pending) {
        traversal_release(&t);
        return -ENOMEM;
    }
    for (size_t k = 0; k < input->server_count; k++)
        pending[k] = k;
    rc = traverse(&t, root_of(input), pending, input->server_count);
    free(pending);
    traversal_release(&t);
    return rc;
}

int loadtraverse_link_load(const struct loadtraverse_input *input, size_t child,
                           const unsigned char *in_subtree, uint64_t *down_bytes,
                           uint64_t *up_bytes)
{
    struct traversal t;
    int rc;

    if (!input || !down_bytes || !up_bytes || (input->server_count && !in_subtree))
        return -EINVAL;
    rc = traversal_init(&t, input);
    if (rc < 0)
        return rc;
    if (child >= input->subcluster_count || input->parent[child] == LOADTRAVERSE_ROOT)
        rc = -EINVAL;
    else
        rc = link_load(&t, child, in_subtree, down_bytes, up_bytes);
    traversal_release(&t);
    return rc;
}
