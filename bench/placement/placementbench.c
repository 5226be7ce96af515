/*
 * @file placementbench.c
 * bench/placement: the simulations of seed 003 (Wu et al.) rerun on
 * Tessera's own Load Balance Matching (librarian/loadmatch.c) and Load
 * Balance Traversing (librarian/loadtraverse.c), against the baselines
 * the paper compares them with. Deterministic: every random draw comes
 * from one xorshift generator seeded by --seed (default 31). README.md
 * beside this file says how the workload is built, what is modelled and
 * how the figures compare with the paper's.
 *
 * Part 1, same-cost cluster (the paper's Figures 10 and 11): 64 machines,
 * m I/O roles; the I/O matrix W from --requests requests of 4 MB. Each
 * request picks a role by a geometric sequence of ratio r over the roles
 * and a client by a geometric sequence of ratio r over the machines in an
 * order of its own per role. A role served on machine k moves its row's
 * bytes but w[i][k] over the network; the operation ends when the most
 * loaded server has (Fast Ethernet, 40.36 MB/s). Compared: Baseline (role
 * i on machine i), Random (a random injective choice, mean of --trials),
 * MWM (the least total remote transfer, by the Hungarian method) and LBM.
 * Printed: each one's improvement in throughput over Baseline.
 *
 * Part 2, general networked cluster (Figures 14-19): 37 subclusters of
 * 14-32 machines joined along an up-down routing tree (the BFS tree of a
 * random connected graph), --requests requests of 4 MB, two thirds reads.
 * A request picks its server by a geometric sequence of ratio DRS over
 * the NIS servers, its client subcluster by ratio DRC over the
 * subclusters (in a random order) and a machine of it uniformly.
 * Compared: Even, Random (mean of --trials), Shortest-Path, Request-Volume
 * and LBT; printed: the most loaded link's bytes (equations 1-2 of the
 * paper through loadtraverse_link_load()) and the throughput gain over
 * Even when that link dominates (equal links).
 */
#include "loadmatch.h"
#include "loadtraverse.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_REQUEST_BYTES (4ull * 1000 * 1000) /* the paper's 4 MB */
#define BENCH_MACHINES 64                        /* Part 1's cluster */
#define BENCH_SUBCLUSTERS 37
#define BENCH_MIN_SUBCLUSTER 14
#define BENCH_MAX_SUBCLUSTER 32
#define BENCH_MAX_SERVERS 64
#define BENCH_EXTRA_EDGES 18 /* cross edges of the random graph before its BFS tree */

static uint64_t bench_rng_state;

/* xorshift64*: fixed sequence per seed on every platform. */
static uint64_t bench_next(void)
{
    bench_rng_state ^= bench_rng_state >> 12;
    bench_rng_state ^= bench_rng_state << 25;
    bench_rng_state ^= bench_rng_state >> 27;
    return bench_rng_state * 2685821657736338717ull;
}

/* Uniform in [0, n). */
static size_t bench_below(size_t n)
{
    return (size_t)(bench_next() % n);
}

/* Uniform in [0, 1). */
static double bench_unit(void)
{
    return (double)(bench_next() >> 11) / 9007199254740992.0;
}

static void *bench_alloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size);
    if (!p) {
        fprintf(stderr, "placementbench: out of memory\n");
        exit(1);
    }
    return p;
}

/* The paper's geometric sequence 1, r, r^2, ... over n items, as prefix sums of probabilities. */
static void geometric_prefix(double ratio, size_t n, double *prefix)
{
    double item = 1.0, sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        sum += item;
        prefix[i] = sum;
        item *= ratio;
    }
    for (size_t i = 0; i < n; i++)
        prefix[i] /= sum;
    prefix[n - 1] = 1.0;
}

/* The item a uniform draw falls on (binary search of the prefix sums). */
static size_t geometric_pick(const double *prefix, size_t n)
{
    double x = bench_unit();
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (x < prefix[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void shuffle(size_t *items, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = bench_below(i);
        size_t t = items[i - 1];
        items[i - 1] = items[j];
        items[j] = t;
    }
}

/* 0..n-1 in a random order. */
static void random_order(size_t *items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        items[i] = i;
    shuffle(items, n);
}

/* ---- Part 1: same-cost cluster ------------------------------------------ */

/* The most loaded server's remote bytes when role i is on machine_of[i]. */
static uint64_t bottleneck_of(const uint64_t *w, size_t roles, size_t machines,
                              const size_t *machine_of)
{
    uint64_t worst = 0;
    for (size_t i = 0; i < roles; i++) {
        uint64_t sum = 0;
        for (size_t j = 0; j < machines; j++)
            sum += w[i * machines + j];
        sum -= w[i * machines + machine_of[i]];
        if (sum > worst)
            worst = sum;
    }
    return worst;
}

/*
 * Maximum weight matching the paper's way round: the injective choice
 * with the least total remote transfer (sum of y[i][k_i]), by the
 * Hungarian method on the roles x machines cost matrix (roles <= machines;
 * O(roles^2 machines)).
 */
static void least_total_matching(const uint64_t *w, size_t roles, size_t machines,
                                 size_t *machine_of)
{
    double *u = bench_alloc(roles + 1, sizeof(double));
    double *v = bench_alloc(machines + 1, sizeof(double));
    size_t *p = bench_alloc(machines + 1, sizeof(size_t)); /* p[j]: role (1-based) on machine j */
    size_t *way = bench_alloc(machines + 1, sizeof(size_t));
    double *minv = bench_alloc(machines + 1, sizeof(double));
    bool *used = bench_alloc(machines + 1, sizeof(bool));
    double *cost = bench_alloc(roles * machines, sizeof(double));

    for (size_t i = 0; i < roles; i++) {
        uint64_t sum = 0;
        for (size_t j = 0; j < machines; j++)
            sum += w[i * machines + j];
        for (size_t j = 0; j < machines; j++)
            cost[i * machines + j] = (double)(sum - w[i * machines + j]);
    }
    for (size_t i = 1; i <= roles; i++) {
        size_t j0 = 0;
        p[0] = i;
        for (size_t j = 0; j <= machines; j++) {
            minv[j] = INFINITY;
            used[j] = false;
        }
        do {
            size_t i0 = p[j0], j1 = 0;
            double delta = INFINITY;
            used[j0] = true;
            for (size_t j = 1; j <= machines; j++) {
                if (used[j])
                    continue;
                double cur = cost[(i0 - 1) * machines + (j - 1)] - u[i0] - v[j];
                if (cur < minv[j]) {
                    minv[j] = cur;
                    way[j] = j0;
                }
                if (minv[j] < delta) {
                    delta = minv[j];
                    j1 = j;
                }
            }
            for (size_t j = 0; j <= machines; j++) {
                if (used[j]) {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
        } while (p[j0] != 0);
        do {
            size_t j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
        } while (j0 != 0);
    }
    for (size_t j = 1; j <= machines; j++) {
        if (p[j] != 0)
            machine_of[p[j] - 1] = j - 1;
    }
    free(u);
    free(v);
    free(p);
    free(way);
    free(minv);
    free(used);
    free(cost);
}

/*
 * W from `requests` requests: roles by ratio r; clients by ratio r over
 * one shared order of the machines, rotated by 0-2 places per role, so
 * that roles compete for the same hot clients as I1 and I2 both want P2
 * in the paper's Figure 2 (independent orders would give every role a
 * hot client of its own, and MWM and LBM the same answer).
 */
static void same_cost_workload(double role_ratio, double client_ratio, size_t roles,
                               size_t machines, uint64_t requests, uint64_t *w)
{
    double *role_prefix = bench_alloc(roles, sizeof(double));
    double *client_prefix = bench_alloc(machines, sizeof(double));
    size_t *order = bench_alloc(roles * machines, sizeof(size_t));

    geometric_prefix(role_ratio, roles, role_prefix);
    geometric_prefix(client_ratio, machines, client_prefix);
    random_order(order, machines);
    for (size_t i = 1; i < roles; i++) {
        size_t rotate = bench_below(3);
        for (size_t j = 0; j < machines; j++)
            order[i * machines + j] = order[(j + rotate) % machines];
    }
    memset(w, 0, roles * machines * sizeof(*w));
    for (uint64_t r = 0; r < requests; r++) {
        size_t role = geometric_pick(role_prefix, roles);
        size_t client = order[role * machines + geometric_pick(client_prefix, machines)];
        w[role * machines + client] += BENCH_REQUEST_BYTES;
    }
    free(role_prefix);
    free(client_prefix);
    free(order);
}

/* Improvement in throughput of a bottleneck over the baseline's, in percent. */
static double gain_percent(double baseline, double other)
{
    return other > 0 ? (baseline / other - 1.0) * 100.0 : 0.0;
}

static void same_cost_point(double role_ratio, double ratio, size_t roles, uint64_t requests,
                            unsigned trials)
{
    size_t machines = BENCH_MACHINES;
    uint64_t *w = bench_alloc(roles * machines, sizeof(uint64_t));
    size_t *machine_of = bench_alloc(roles, sizeof(size_t));
    size_t *perm = bench_alloc(machines, sizeof(size_t));
    uint64_t baseline, lbm, mwm, bound;
    double random_sum = 0;

    same_cost_workload(role_ratio, ratio, roles, machines, requests, w);
    for (size_t i = 0; i < roles; i++)
        machine_of[i] = i;
    baseline = bottleneck_of(w, roles, machines, machine_of);
    for (unsigned t = 0; t < trials; t++) {
        random_order(perm, machines);
        random_sum += (double)bottleneck_of(w, roles, machines, perm);
    }
    least_total_matching(w, roles, machines, machine_of);
    mwm = bottleneck_of(w, roles, machines, machine_of);
    if (loadmatch_assign(w, roles, machines, machine_of, &bound) != 0) {
        fprintf(stderr, "placementbench: loadmatch_assign failed\n");
        exit(1);
    }
    lbm = bottleneck_of(w, roles, machines, machine_of);
    if (lbm != bound || lbm > mwm) {
        fprintf(stderr,
                "placementbench: LBM's bottleneck %" PRIu64 " (bound %" PRIu64
                ") is not the least (MWM %" PRIu64 ")\n",
                lbm, bound, mwm);
        exit(1);
    }
    /* Seconds on Fast Ethernet (40.36 MB/s), the paper's Figure 10-11 network. */
    printf("%7.1f %7.1f %7zu %10.1f %9.1f%% %9.1f%% %9.1f%%\n", ratio, role_ratio, roles,
           (double)baseline / 40.36e6, gain_percent((double)baseline, random_sum / trials),
           gain_percent((double)baseline, (double)mwm),
           gain_percent((double)baseline, (double)lbm));
    free(w);
    free(machine_of);
    free(perm);
}

static void same_cost_part(uint64_t requests, unsigned trials)
{
    static const size_t role_counts[] = {2, 4, 8, 16, 32};
    static const double ratios[] = {0.1, 0.3, 0.5, 0.7, 0.9};

    printf("== Part 1: same-cost cluster of %d machines (Figures 10-11), %" PRIu64
           " requests of 4 MB\n",
           BENCH_MACHINES, requests);
    printf("Throughput gain over Baseline (roles on the first m machines); Random is the mean "
           "of %u draws\n(the gain of their mean bottleneck).\n",
           trials);
    printf("Paper: LBM and MWM gain more as the cluster grows (Fig. 10, r = 0.5); LBM ahead "
           "of MWM at small r,\nthe two close as r -> 0.9 (Fig. 11, m = 8).\n\n");
    printf("%7s %7s %7s %10s %10s %10s %10s\n", "r", "r_role", "roles", "base(s)", "Random", "MWM",
           "LBM");
    printf("-- Figure 10: r = 0.5, roles varied\n");
    for (size_t k = 0; k < sizeof(role_counts) / sizeof(role_counts[0]); k++)
        same_cost_point(0.5, 0.5, role_counts[k], requests, trials);
    printf("-- Figure 11: 8 roles, r varied\n");
    for (size_t k = 0; k < sizeof(ratios) / sizeof(ratios[0]); k++)
        same_cost_point(ratios[k], ratios[k], 8, requests, trials);
    printf("-- not in the paper: 8 roles of equal load (r_role = 1), clients' r varied\n");
    for (size_t k = 0; k < sizeof(ratios) / sizeof(ratios[0]); k++)
        same_cost_point(1.0, ratios[k], 8, requests, trials);
    printf("\n");
}

/* ---- Part 2: general networked cluster ------------------------------------ */

struct bench_cluster {
    size_t parent[BENCH_SUBCLUSTERS];
    size_t hops[BENCH_SUBCLUSTERS][BENCH_SUBCLUSTERS]; /* along the tree */
    size_t size[BENCH_SUBCLUSTERS];
    size_t first_machine[BENCH_SUBCLUSTERS];
    size_t machine_count;
    size_t *subcluster_of_machine;
};

/* A random connected graph of the subclusters, its BFS tree from 0 as up-down routing's tree. */
static void cluster_build(struct bench_cluster *c)
{
    bool adjacent[BENCH_SUBCLUSTERS][BENCH_SUBCLUSTERS] = {{false}};
    size_t queue[BENCH_SUBCLUSTERS], head = 0, tail = 0;
    bool seen[BENCH_SUBCLUSTERS] = {false};

    for (size_t v = 1; v < BENCH_SUBCLUSTERS; v++) {
        size_t u = bench_below(v);
        adjacent[u][v] = adjacent[v][u] = true;
    }
    for (size_t e = 0; e < BENCH_EXTRA_EDGES; e++) {
        size_t u = bench_below(BENCH_SUBCLUSTERS), v = bench_below(BENCH_SUBCLUSTERS);
        if (u != v)
            adjacent[u][v] = adjacent[v][u] = true;
    }
    c->parent[0] = LOADTRAVERSE_ROOT;
    seen[0] = true;
    queue[tail++] = 0;
    while (head < tail) {
        size_t u = queue[head++];
        for (size_t v = 0; v < BENCH_SUBCLUSTERS; v++) {
            if (adjacent[u][v] && !seen[v]) {
                seen[v] = true;
                c->parent[v] = u;
                queue[tail++] = v;
            }
        }
    }
    /* Tree distances: depth of each, then climb to the common ancestor. */
    for (size_t a = 0; a < BENCH_SUBCLUSTERS; a++) {
        for (size_t b = 0; b < BENCH_SUBCLUSTERS; b++) {
            size_t x = a, y = b, steps = 0, depth_x = 0, depth_y = 0;
            for (size_t t = x; c->parent[t] != LOADTRAVERSE_ROOT; t = c->parent[t])
                depth_x++;
            for (size_t t = y; c->parent[t] != LOADTRAVERSE_ROOT; t = c->parent[t])
                depth_y++;
            for (; depth_x > depth_y; depth_x--, steps++)
                x = c->parent[x];
            for (; depth_y > depth_x; depth_y--, steps++)
                y = c->parent[y];
            for (; x != y; steps += 2) {
                x = c->parent[x];
                y = c->parent[y];
            }
            c->hops[a][b] = steps;
        }
    }
    c->machine_count = 0;
    for (size_t v = 0; v < BENCH_SUBCLUSTERS; v++) {
        c->size[v] =
            BENCH_MIN_SUBCLUSTER + bench_below(BENCH_MAX_SUBCLUSTER - BENCH_MIN_SUBCLUSTER + 1);
        c->first_machine[v] = c->machine_count;
        c->machine_count += c->size[v];
    }
    c->subcluster_of_machine = bench_alloc(c->machine_count, sizeof(size_t));
    for (size_t v = 0; v < BENCH_SUBCLUSTERS; v++) {
        for (size_t k = 0; k < c->size[v]; k++)
            c->subcluster_of_machine[c->first_machine[v] + k] = v;
    }
}

/* The most loaded link (either direction) when server k sits in subcluster at[k]. */
static uint64_t max_link_load(const struct bench_cluster *c, const struct loadtraverse_input *input,
                              const size_t *at)
{
    unsigned char in_subtree[BENCH_MAX_SERVERS];
    uint64_t worst = 0;

    for (size_t v = 0; v < BENCH_SUBCLUSTERS; v++) {
        uint64_t down, up;
        if (c->parent[v] == LOADTRAVERSE_ROOT)
            continue;
        for (size_t k = 0; k < input->server_count; k++) {
            size_t s = at[k];
            while (s != v && c->parent[s] != LOADTRAVERSE_ROOT)
                s = c->parent[s];
            in_subtree[k] = s == v;
        }
        if (loadtraverse_link_load(input, v, in_subtree, &down, &up) != 0) {
            fprintf(stderr, "placementbench: loadtraverse_link_load failed\n");
            exit(1);
        }
        if (down > worst)
            worst = down;
        if (up > worst)
            worst = up;
    }
    return worst;
}

/* Stable insertion sort of items[0..n) by key[item], ascending or descending. */
static void sort_by_key(size_t *items, size_t n, const uint64_t *key, bool descending)
{
    for (size_t a = 1; a < n; a++) {
        for (size_t b = a; b > 0; b--) {
            uint64_t x = key[items[b]], y = key[items[b - 1]];
            if (descending ? x <= y : x >= y)
                break;
            size_t t = items[b];
            items[b] = items[b - 1];
            items[b - 1] = t;
        }
    }
}

enum { ALG_EVEN, ALG_RANDOM, ALG_SHORTEST, ALG_VOLUME, ALG_LBT, ALG_COUNT };

static void networked_point(const struct bench_cluster *c, const char *label, size_t servers,
                            double drc, double drs, uint64_t requests, unsigned trials)
{
    size_t machines = c->machine_count;
    uint64_t *read = bench_alloc(servers * machines, sizeof(uint64_t));
    uint64_t *write = bench_alloc(servers * machines, sizeof(uint64_t));
    double server_prefix[BENCH_MAX_SERVERS], client_prefix[BENCH_SUBCLUSTERS];
    size_t order[BENCH_SUBCLUSTERS], at[BENCH_MAX_SERVERS], by_heat[BENCH_MAX_SERVERS];
    size_t *machine_of = bench_alloc(servers, sizeof(size_t));
    uint64_t load[ALG_COUNT];
    uint64_t heat[BENCH_MAX_SERVERS] = {0};
    double random_sum = 0;

    geometric_prefix(drs, servers, server_prefix);
    geometric_prefix(drc, BENCH_SUBCLUSTERS, client_prefix);
    random_order(order, BENCH_SUBCLUSTERS);
    for (uint64_t r = 0; r < requests; r++) {
        size_t k = geometric_pick(server_prefix, servers);
        size_t v = order[geometric_pick(client_prefix, BENCH_SUBCLUSTERS)];
        size_t m = c->first_machine[v] + bench_below(c->size[v]);
        /* Two thirds reads: both of LBT's link directions carry traffic. */
        (bench_below(3) < 2 ? read : write)[k * machines + m] += BENCH_REQUEST_BYTES;
        heat[k] += BENCH_REQUEST_BYTES;
    }
    struct loadtraverse_input input = {
        .subcluster_count = BENCH_SUBCLUSTERS,
        .parent = c->parent,
        .machine_count = machines,
        .subcluster_of_machine = c->subcluster_of_machine,
        .server_count = servers,
        .read_bytes = read,
        .write_bytes = write,
    };

    /* Even: the servers spread over the subclusters at equal index steps. */
    for (size_t k = 0; k < servers; k++)
        at[k] = k * BENCH_SUBCLUSTERS / servers;
    load[ALG_EVEN] = max_link_load(c, &input, at);

    /* Random: each server in a random subcluster (all have room for 14). */
    for (unsigned t = 0; t < trials; t++) {
        for (size_t k = 0; k < servers; k++)
            at[k] = bench_below(BENCH_SUBCLUSTERS);
        random_sum += (double)max_link_load(c, &input, at);
    }
    load[ALG_RANDOM] = (uint64_t)(random_sum / trials);

    /*
     * Shortest-Path: the subclusters by the mean hop count from every
     * machine, the nearest first; the hottest server to the nearest, one
     * server a subcluster.
     */
    size_t central[BENCH_SUBCLUSTERS];
    uint64_t distance[BENCH_SUBCLUSTERS];
    for (size_t v = 0; v < BENCH_SUBCLUSTERS; v++) {
        central[v] = v;
        distance[v] = 0;
        for (size_t u = 0; u < BENCH_SUBCLUSTERS; u++)
            distance[v] += c->size[u] * c->hops[u][v];
    }
    sort_by_key(central, BENCH_SUBCLUSTERS, distance, false);
    for (size_t k = 0; k < servers; k++)
        by_heat[k] = k;
    sort_by_key(by_heat, servers, heat, true);
    for (size_t k = 0; k < servers; k++)
        at[by_heat[k]] = central[k];
    load[ALG_SHORTEST] = max_link_load(c, &input, at);

    /* Request-Volume: each server to the subcluster that requests most of it. */
    for (size_t k = 0; k < servers; k++) {
        uint64_t best = 0;
        at[k] = 0;
        for (size_t v = 0; v < BENCH_SUBCLUSTERS; v++) {
            uint64_t sum = 0;
            for (size_t m = c->first_machine[v]; m < c->first_machine[v] + c->size[v]; m++)
                sum += read[k * machines + m] + write[k * machines + m];
            if (sum > best) {
                best = sum;
                at[k] = v;
            }
        }
    }
    load[ALG_VOLUME] = max_link_load(c, &input, at);

    if (loadtraverse_assign(&input, NULL, machine_of, at) != 0) {
        fprintf(stderr, "placementbench: loadtraverse_assign failed\n");
        exit(1);
    }
    load[ALG_LBT] = max_link_load(c, &input, at);

    printf("%-12s %4zu %4.1f %4.1f |", label, servers, drc, drs);
    for (int a = 0; a < ALG_COUNT; a++)
        printf(" %8.0f", (double)load[a] / 1e9);
    printf(" |");
    for (int a = 1; a < ALG_COUNT; a++)
        printf(" %7.1f%%", gain_percent((double)load[ALG_EVEN], (double)load[a]));
    printf("\n");
    free(read);
    free(write);
    free(machine_of);
}

static void networked_part(uint64_t requests, unsigned trials)
{
    struct bench_cluster c;
    static const size_t server_counts[] = {2, 4, 6, 8, 10, 12, 14};
    static const double ratios[] = {0.1, 0.3, 0.5, 0.7, 0.9};

    cluster_build(&c);
    printf("== Part 2: %d subclusters of %d-%d machines (%zu in all), %" PRIu64
           " requests of 4 MB, 2/3 reads (Figures 14-19)\n",
           BENCH_SUBCLUSTERS, BENCH_MIN_SUBCLUSTER, BENCH_MAX_SUBCLUSTER, c.machine_count,
           requests);
    printf("Left: the most loaded link in GB (either direction; Figs. 14, 16, 18). Right: "
           "throughput gain over Even\nwhen that link is the bottleneck (equal links; Figs. "
           "15, 17, 19). Random: mean of %u draws.\n",
           trials);
    printf("Paper: LBT least contention and highest throughput everywhere, 10-60 %% ahead; "
           "Request-Volume\nclosest at small DRC; all fall as NIS grows, rise as DRS or DRC "
           "falls.\n\n");
    printf("%-12s %4s %4s %4s | %8s %8s %8s %8s %8s | %8s %8s %8s %8s\n", "series", "NIS", "DRC",
           "DRS", "Even", "Random", "Shortest", "Volume", "LBT", "Random", "Shortest", "Volume",
           "LBT");
    for (size_t k = 0; k < sizeof(server_counts) / sizeof(server_counts[0]); k++)
        networked_point(&c, "Fig14-15", server_counts[k], 0.5, 0.5, requests, trials);
    for (size_t k = 0; k < sizeof(ratios) / sizeof(ratios[0]); k++)
        networked_point(&c, "Fig16-17", 8, 0.5, ratios[k], requests, trials);
    for (size_t k = 0; k < sizeof(ratios) / sizeof(ratios[0]); k++)
        networked_point(&c, "Fig18-19", 8, ratios[k], 0.5, requests, trials);
    free(c.subcluster_of_machine);
}

static void usage(FILE *out)
{
    fprintf(out, "Usage: placementbench [--requests N] [--trials T] [--seed S]\n"
                 "Seed 003's placement simulations on librarian's LBM and LBT (bench/placement/"
                 "README.md).\n"
                 "  --requests N  requests of 4 MB per workload (default 1000000, the paper's)\n"
                 "  --trials T    draws averaged for Random (default 20)\n"
                 "  --seed S      the generator's seed (default 31)\n");
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"requests", required_argument, NULL, 'n'},
        {"trials", required_argument, NULL, 't'},
        {"seed", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t requests = 1000000, seed = 31;
    unsigned trials = 20;
    int opt;

    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        char *end = NULL;
        unsigned long long value = 0;
        if (opt == 'h') {
            usage(stdout);
            return 0;
        }
        if (opt == 'n' || opt == 't' || opt == 's') {
            errno = 0;
            value = strtoull(optarg, &end, 10);
        }
        if (!end || *end != '\0' || errno != 0 || (opt != 's' && value == 0) ||
            (opt == 't' && value > 100000)) {
            usage(stderr);
            return 2;
        }
        if (opt == 'n')
            requests = value;
        else if (opt == 't')
            trials = (unsigned)value;
        else
            seed = value;
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    bench_rng_state = (seed * 0x9E3779B97F4A7C15ull) | 1; /* xorshift needs a nonzero state */
    same_cost_part(requests, trials);
    networked_part(requests, trials);
    return 0;
}
