/*
 * @file test_loadmatch.c
 * Unit tests of Load Balance Matching (librarian/loadmatch.c) and its
 * matcher (librarian/hopcroftkarp.c): the paper's example (seed 003,
 * section 2.1), LBM against brute force over every assignment on random
 * small matrices, Hopcroft-Karp against a plain one-path-at-a-time
 * augmenting matcher on random graphs. Random inputs come from a fixed
 * seed, so a failure reproduces.
 */
#include "hopcroftkarp.h"
#include "loadmatch.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define MAX_ROLES 5
#define MAX_MACHINES 6

/* A small deterministic generator (xorshift64*), not rand(): same numbers everywhere. */
static uint64_t next_random(uint64_t *seed)
{
    *seed ^= *seed >> 12;
    *seed ^= *seed << 25;
    *seed ^= *seed >> 27;
    return *seed * 2685821657736338717ull;
}

static uint64_t assignment_bottleneck(const uint64_t *w, size_t roles, size_t machines,
                                      const size_t *machine_of_role)
{
    uint64_t worst = 0;
    for (size_t i = 0; i < roles; i++) {
        uint64_t sum = 0;
        for (size_t j = 0; j < machines; j++)
            sum += w[i * machines + j];
        uint64_t remote = sum - w[i * machines + machine_of_role[i]];
        if (remote > worst)
            worst = remote;
    }
    return worst;
}

static void assert_distinct_machines(const size_t *machine_of_role, size_t roles, size_t machines)
{
    bool used[MAX_MACHINES] = {false};
    for (size_t i = 0; i < roles; i++) {
        assert_true(machine_of_role[i] < machines);
        assert_false(used[machine_of_role[i]]);
        used[machine_of_role[i]] = true;
    }
}

/* Every injective assignment of roles role..roles-1, depth first; the best bottleneck. */
static uint64_t brute_force(const uint64_t *w, size_t roles, size_t machines, size_t role,
                            size_t *chosen, bool *used)
{
    uint64_t best = UINT64_MAX;
    if (role == roles)
        return assignment_bottleneck(w, roles, machines, chosen);
    for (size_t j = 0; j < machines; j++) {
        if (used[j])
            continue;
        used[j] = true;
        chosen[role] = j;
        uint64_t value = brute_force(w, roles, machines, role + 1, chosen, used);
        if (value < best)
            best = value;
        used[j] = false;
    }
    return best;
}

/*
 * The paper's irregular example: W = [[7,11,0,0],[3,7,4,4]]. The least
 * total transfer (I1<-P2, I2<-P3) gives 7 and 14; LBM balances to 11 and
 * 11 with (I1<-P1, I2<-P2).
 */
static void test_paper_example(void **state)
{
    (void)state;
    const uint64_t w[] = {7, 11, 0, 0, 3, 7, 4, 4};
    uint64_t y[8];
    size_t machine_of_role[2];
    uint64_t bottleneck = 0;

    assert_int_equal(loadmatch_workload(w, 2, 4, y), 0);
    const uint64_t expected_y[] = {11, 7, 18, 18, 15, 11, 14, 14};
    assert_memory_equal(y, expected_y, sizeof(y));

    assert_int_equal(loadmatch_assign(w, 2, 4, machine_of_role, &bottleneck), 0);
    assert_int_equal(machine_of_role[0], 0); /* I1 <- P1 */
    assert_int_equal(machine_of_role[1], 1); /* I2 <- P2 */
    assert_int_equal(bottleneck, 11);
    assert_int_equal(y[0 * 4 + machine_of_role[0]], 11);
    assert_int_equal(y[1 * 4 + machine_of_role[1]], 11);
}

/* The paper's regular example (Figure 1): each I/O node keeps one of its two readers local. */
static void test_paper_regular_example(void **state)
{
    (void)state;
    const uint64_t w[] = {9, 9, 0, 0, 0, 0, 9, 9};
    size_t machine_of_role[2];
    uint64_t bottleneck = 0;

    assert_int_equal(loadmatch_assign(w, 2, 4, machine_of_role, &bottleneck), 0);
    assert_int_equal(bottleneck, 9);
    assert_true(machine_of_role[0] <= 1);
    assert_true(machine_of_role[1] >= 2);
}

/* LBM's bottleneck equals the best over all assignments, on 2000 random matrices. */
static void test_equals_brute_force(void **state)
{
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15ull;

    for (int round = 0; round < 2000; round++) {
        size_t roles = 1 + next_random(&seed) % MAX_ROLES;
        size_t machines = roles + next_random(&seed) % (MAX_MACHINES - roles + 1);
        /* Small values half the time, so ties between weights are common. */
        uint64_t range = (round % 2) ? 8 : 1000000;
        uint64_t w[MAX_ROLES * MAX_MACHINES];
        size_t machine_of_role[MAX_ROLES];
        size_t chosen[MAX_ROLES];
        bool used[MAX_MACHINES] = {false};
        uint64_t bottleneck = 0;

        for (size_t k = 0; k < roles * machines; k++)
            w[k] = (next_random(&seed) % 3 == 0) ? 0 : next_random(&seed) % range;
        assert_int_equal(loadmatch_assign(w, roles, machines, machine_of_role, &bottleneck), 0);
        assert_distinct_machines(machine_of_role, roles, machines);
        assert_int_equal(assignment_bottleneck(w, roles, machines, machine_of_role), bottleneck);
        assert_int_equal(bottleneck, brute_force(w, roles, machines, 0, chosen, used));
    }
}

static void test_rejects_bad_input(void **state)
{
    (void)state;
    const uint64_t w[] = {1, 2, 3, 4, 5, 6};
    const uint64_t huge[] = {UINT64_MAX, 1};
    size_t machine_of_role[3];
    uint64_t bottleneck = 7;

    /* Three roles, two machines: a role would have no machine of its own. */
    assert_int_equal(loadmatch_assign(w, 3, 2, machine_of_role, &bottleneck), -EINVAL);
    assert_int_equal(loadmatch_assign(NULL, 1, 2, machine_of_role, &bottleneck), -EINVAL);
    assert_int_equal(loadmatch_assign(w, 1, 2, NULL, &bottleneck), -EINVAL);
    assert_int_equal(loadmatch_assign(huge, 1, 2, machine_of_role, &bottleneck), -EOVERFLOW);
    assert_int_equal(loadmatch_assign(NULL, 0, 0, NULL, &bottleneck), 0);
    assert_int_equal(bottleneck, 0);
}

/* Kuhn's algorithm: one augmenting path per free left vertex, the reference matcher. */
static bool simple_augment(const struct hopcroftkarp_graph *g, size_t u, size_t *match_of_right,
                           bool *visited)
{
    for (size_t e = g->edge_start[u]; e < g->edge_start[u + 1]; e++) {
        size_t v = g->edge_right[e];
        if (visited[v])
            continue;
        visited[v] = true;
        if (match_of_right[v] == HOPCROFTKARP_UNMATCHED ||
            simple_augment(g, match_of_right[v], match_of_right, visited)) {
            match_of_right[v] = u;
            return true;
        }
    }
    return false;
}

static size_t simple_matching_size(const struct hopcroftkarp_graph *g)
{
    size_t match_of_right[64];
    size_t size = 0;
    for (size_t v = 0; v < g->right_count; v++)
        match_of_right[v] = HOPCROFTKARP_UNMATCHED;
    for (size_t u = 0; u < g->left_count; u++) {
        bool visited[64] = {false};
        if (simple_augment(g, u, match_of_right, visited))
            size++;
    }
    return size;
}

/* Hopcroft-Karp finds as many pairs as the reference, and a valid matching, on 2000 graphs. */
static void test_hopcroftkarp_equals_simple(void **state)
{
    (void)state;
    uint64_t seed = 12345;

    for (int round = 0; round < 2000; round++) {
        size_t edge_start[65];
        size_t edge_right[64 * 64];
        size_t match_of_left[64];
        bool right_used[64] = {false};
        size_t edges = 0, matched = 0, counted = 0;
        struct hopcroftkarp_graph g = {
            .left_count = 1 + next_random(&seed) % 40,
            .right_count = 1 + next_random(&seed) % 40,
            .edge_start = edge_start,
            .edge_right = edge_right,
        };
        uint64_t density = 1 + next_random(&seed) % 30; /* percent */

        for (size_t u = 0; u < g.left_count; u++) {
            edge_start[u] = edges;
            for (size_t v = 0; v < g.right_count; v++) {
                if (next_random(&seed) % 100 < density)
                    edge_right[edges++] = v;
            }
        }
        edge_start[g.left_count] = edges;
        assert_int_equal(hopcroftkarp_match(&g, match_of_left, &matched), 0);
        for (size_t u = 0; u < g.left_count; u++) {
            size_t v = match_of_left[u];
            if (v == HOPCROFTKARP_UNMATCHED)
                continue;
            bool is_edge = false;
            for (size_t e = edge_start[u]; e < edge_start[u + 1]; e++)
                is_edge = is_edge || edge_right[e] == v;
            assert_true(is_edge);
            assert_false(right_used[v]);
            right_used[v] = true;
            counted++;
        }
        assert_int_equal(counted, matched);
        assert_int_equal(matched, simple_matching_size(&g));
    }
}

/* A long alternating chain: augmenting paths of every length, no recursion blow-up. */
static void test_hopcroftkarp_chain(void **state)
{
    (void)state;
    enum { n = 5000 };
    static size_t edge_start[n + 1], edge_right[2 * n], match_of_left[n];
    size_t edges = 0, matched = 0;
    /* Left u connects to right u and u+1; the greedy first edge leaves the last one free. */
    for (size_t u = 0; u < n; u++) {
        edge_start[u] = edges;
        if (u + 1 < n)
            edge_right[edges++] = u + 1;
        edge_right[edges++] = u;
    }
    edge_start[n] = edges;
    struct hopcroftkarp_graph g = {n, n, edge_start, edge_right};
    assert_int_equal(hopcroftkarp_match(&g, match_of_left, &matched), 0);
    assert_int_equal(matched, n);

    edge_right[0] = n; /* out of range */
    assert_int_equal(hopcroftkarp_match(&g, match_of_left, &matched), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paper_example),
        cmocka_unit_test(test_paper_regular_example),
        cmocka_unit_test(test_equals_brute_force),
        cmocka_unit_test(test_rejects_bad_input),
        cmocka_unit_test(test_hopcroftkarp_equals_simple),
        cmocka_unit_test(test_hopcroftkarp_chain),
    };
    return cmocka_run_group_tests_name("loadmatch", tests, NULL, NULL);
}
