/*
 * @file test_loadtraverse.c
 * Unit tests of Load Balance Traversing (librarian/loadtraverse.c) on the
 * paper's seven-subcluster example (seed 003, Figure 5(b), Tables 1 and
 * 2, section 3.3.2), plus its capacity rule and input checks.
 *
 * The example's tree: v0 the root, children v1 and v2; v1's children v3,
 * v4, v5; v2's child v6. The tables give bytes per subcluster (in units
 * of 100 MB; here 1 byte = 1 unit), so each subcluster's requests are put
 * on its first machine.
 */
#include "loadtraverse.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define SUBCLUSTERS 7
#define SERVERS 4
#define MAX_MACHINES (SUBCLUSTERS * 4)

static const size_t paper_parent[SUBCLUSTERS] = {LOADTRAVERSE_ROOT, 0, 0, 1, 1, 1, 2};

/* Table 1: read requests, I/O node (row) by cluster (column). */
static const uint64_t paper_reads[SERVERS][SUBCLUSTERS] = {
    {1, 3, 1, 2, 1, 2, 2},
    {1, 2, 2, 1, 2, 1, 1},
    {3, 1, 1, 2, 4, 3, 1},
    {1, 1, 3, 1, 1, 2, 1},
};
/* Table 2: write requests. */
static const uint64_t paper_writes[SERVERS][SUBCLUSTERS] = {
    {1, 1, 1, 1, 0, 2, 2},
    {2, 2, 1, 0, 2, 1, 1},
    {0, 1, 0, 1, 0, 0, 3},
    {1, 0, 1, 1, 1, 1, 2},
};

struct example {
    size_t subcluster_of_machine[MAX_MACHINES];
    uint64_t reads[SERVERS * MAX_MACHINES];
    uint64_t writes[SERVERS * MAX_MACHINES];
    struct loadtraverse_input input;
};

/* The paper's example, machines_each machines per subcluster (v's first is v * machines_each). */
static void example_build(struct example *e, size_t machines_each)
{
    size_t machines = SUBCLUSTERS * machines_each;
    memset(e, 0, sizeof(*e));
    for (size_t m = 0; m < machines; m++)
        e->subcluster_of_machine[m] = m / machines_each;
    for (size_t k = 0; k < SERVERS; k++) {
        for (size_t v = 0; v < SUBCLUSTERS; v++) {
            e->reads[k * machines + v * machines_each] = paper_reads[k][v];
            e->writes[k * machines + v * machines_each] = paper_writes[k][v];
        }
    }
    e->input = (struct loadtraverse_input){
        .subcluster_count = SUBCLUSTERS,
        .parent = paper_parent,
        .machine_count = machines,
        .subcluster_of_machine = e->subcluster_of_machine,
        .server_count = SERVERS,
        .read_bytes = e->reads,
        .write_bytes = e->writes,
    };
}

static uint64_t link_load_max(const struct loadtraverse_input *input, size_t child,
                              const unsigned char *in_subtree, uint64_t *down, uint64_t *up)
{
    assert_int_equal(loadtraverse_link_load(input, child, in_subtree, down, up), 0);
    return *down > *up ? *down : *up;
}

/*
 * The worked loads before i0 is placed, and with i0 in each subtree
 * (section 3.3.2). The paper's L_d figures and its L_L = 29, 12 and 25
 * all follow from Tables 1 and 2. Its upward sums do not: they take
 * R_w(v1,i2) = 3 and R_w(v2,i2) = 0 where Table 2's i2 row gives 2 and 3
 * (1+1+0+0 over v1,v3,v4,v5; 0+3 over v2,v6). We follow the table, so
 * L_u(v0,1) is 14 (paper 15), L_u(v0,2) 11 (paper 8) and, with i0 in
 * T(v2), L_u = 9+2+3+3 = 17 (paper 14): L_L(v0,2,{i0}) is 17, not 14,
 * and M_L(v0,2,i0) = max(17, 29) = 29 either way, so i0 still goes to v1.
 */
static void test_paper_link_loads(void **state)
{
    (void)state;
    struct example e;
    unsigned char none[SERVERS] = {0}, only_i0[SERVERS] = {1, 0, 0, 0};
    uint64_t down, up;

    example_build(&e, 1);
    assert_int_equal(link_load_max(&e.input, 1, none, &down, &up), 29); /* L_L(v0,1,{}) */
    assert_int_equal(down, 8 + 6 + 10 + 5);
    assert_int_equal(up, 4 + 5 + 2 + 3);
    assert_int_equal(link_load_max(&e.input, 2, none, &down, &up), 12); /* L_L(v0,2,{}) */
    assert_int_equal(down, 3 + 3 + 2 + 4);
    assert_int_equal(up, 3 + 2 + 3 + 3);
    assert_int_equal(link_load_max(&e.input, 1, only_i0, &down, &up), 25); /* L_L(v0,1,{i0}) */
    assert_int_equal(down, 4 + 6 + 10 + 5);
    assert_int_equal(up, 4 + 5 + 2 + 3);
    assert_int_equal(link_load_max(&e.input, 2, only_i0, &down, &up), 17); /* L_L(v0,2,{i0}) */
    assert_int_equal(down, 5 + 3 + 2 + 4);
    assert_int_equal(up, 9 + 2 + 3 + 3);
}

#define MAX_DECISIONS 16

struct decisions {
    size_t count;
    size_t at[MAX_DECISIONS], server[MAX_DECISIONS], to[MAX_DECISIONS];
    double max_link[MAX_DECISIONS];
};

static void record_decision(void *context, size_t at, size_t server, size_t to, double max_link)
{
    struct decisions *d = context;
    assert_true(d->count < MAX_DECISIONS);
    d->at[d->count] = at;
    d->server[d->count] = server;
    d->to[d->count] = to;
    d->max_link[d->count] = max_link;
    d->count++;
}

static void assert_decision(const struct decisions *d, size_t n, size_t at, size_t server,
                            size_t to, double max_link)
{
    assert_true(n < d->count);
    assert_int_equal(d->at[n], at);
    assert_int_equal(d->server[n], server);
    assert_int_equal(d->to[n], to);
    assert_true(d->max_link[n] == max_link);
}

/*
 * The whole traversal with room for every server anywhere (four machines
 * per subcluster): i0 first (R(root,i0) = 20 ties i2's 20; the lower
 * index goes first), to v1's subtree with M_L = 25, as the paper says;
 * then, by equations 1-5, i2 and i1 to v1's subtree (M_L 18, 16) and i3
 * stays at v0 (16); at v1 the three stay at v1 itself (8). Figure 8, the
 * paper's drawing of the final assignment, is not in the text we have;
 * these figures were also checked by an independent re-computation.
 */
static void test_paper_traversal(void **state)
{
    (void)state;
    struct example e;
    struct decisions d = {0};
    struct loadtraverse_trace trace = {record_decision, &d};
    size_t machine_of_server[SERVERS], subcluster_of_server[SERVERS];

    example_build(&e, 4);
    assert_int_equal(loadtraverse_assign(&e.input, &trace, machine_of_server, subcluster_of_server),
                     0);
    assert_int_equal(d.count, 7);
    assert_decision(&d, 0, 0, 0, 1, 25.0);
    assert_decision(&d, 1, 0, 2, 1, 18.0);
    assert_decision(&d, 2, 0, 1, 1, 16.0);
    assert_decision(&d, 3, 0, 3, 0, 16.0);
    assert_decision(&d, 4, 1, 0, 1, 8.0);
    assert_decision(&d, 5, 1, 2, 1, 8.0);
    assert_decision(&d, 6, 1, 1, 1, 8.0);

    const size_t expected_subcluster[SERVERS] = {1, 1, 1, 0};
    bool used[MAX_MACHINES] = {false};
    for (size_t k = 0; k < SERVERS; k++) {
        assert_int_equal(subcluster_of_server[k], expected_subcluster[k]);
        assert_int_equal(e.subcluster_of_machine[machine_of_server[k]], expected_subcluster[k]);
        assert_false(used[machine_of_server[k]]);
        used[machine_of_server[k]] = true;
    }
    /* i3 alone at v0: LBM puts it on v0's machine that made its requests. */
    assert_int_equal(machine_of_server[3], 0);
}

/*
 * One machine per subcluster: a subcluster serves at most one server, so
 * at v1 only the first (i0) stays and i2, i1 go down to v4 and v3.
 */
static void test_capacity_one_machine_each(void **state)
{
    (void)state;
    struct example e;
    struct decisions d = {0};
    struct loadtraverse_trace trace = {record_decision, &d};
    size_t machine_of_server[SERVERS], subcluster_of_server[SERVERS];

    example_build(&e, 1);
    assert_int_equal(loadtraverse_assign(&e.input, &trace, machine_of_server, subcluster_of_server),
                     0);
    assert_decision(&d, 0, 0, 0, 1, 25.0);
    const size_t expected_subcluster[SERVERS] = {1, 3, 4, 0};
    for (size_t k = 0; k < SERVERS; k++) {
        assert_int_equal(subcluster_of_server[k], expected_subcluster[k]);
        assert_int_equal(machine_of_server[k], expected_subcluster[k]);
    }
}

/* One subcluster: LBT is LBM, the paper's 11/11 example. */
static void test_single_subcluster_is_loadmatch(void **state)
{
    (void)state;
    const size_t parent[1] = {LOADTRAVERSE_ROOT};
    const size_t subcluster_of_machine[4] = {0, 0, 0, 0};
    const uint64_t reads[8] = {7, 11, 0, 0, 3, 7, 4, 4};
    const uint64_t writes[8] = {0};
    struct loadtraverse_input input = {1,    parent, NULL,  4,     subcluster_of_machine,
                                       NULL, 2,      reads, writes};
    size_t machine_of_server[2], subcluster_of_server[2];

    assert_int_equal(loadtraverse_assign(&input, NULL, machine_of_server, subcluster_of_server), 0);
    assert_int_equal(machine_of_server[0], 0);
    assert_int_equal(machine_of_server[1], 1);
}

/*
 * A slow link counts its bytes as more seconds. Root r (no machines) with
 * children a, b, c of one machine each, each reading 10 bytes from the
 * one server: wherever it goes, the other 20 bytes cross its subtree's
 * link and 10 cross each other link. With equal links every choice costs
 * 20 and the first child wins; with a and b at 1 B/s and c at 10 B/s the
 * 20 bytes belong on c's link (2 s; then a's and b's 10 s are the max).
 */
static void test_link_speed_weighs_load(void **state)
{
    (void)state;
    const size_t parent[4] = {LOADTRAVERSE_ROOT, 0, 0, 0};
    const size_t subcluster_of_machine[3] = {1, 2, 3};
    const uint64_t reads[3] = {10, 10, 10};
    const uint64_t writes[3] = {0, 0, 0};
    const double equal[4] = {1, 1, 1, 1}, c_fast[4] = {1, 1, 1, 10};
    struct loadtraverse_input input = {4,    parent, equal, 3,     subcluster_of_machine,
                                       NULL, 1,      reads, writes};
    struct decisions d = {0};
    struct loadtraverse_trace trace = {record_decision, &d};
    size_t machine, subcluster;

    assert_int_equal(loadtraverse_assign(&input, &trace, &machine, &subcluster), 0);
    assert_int_equal(subcluster, 1);
    assert_decision(&d, 0, 0, 0, 1, 20.0);
    input.link_bytes_per_sec = c_fast;
    d.count = 0;
    assert_int_equal(loadtraverse_assign(&input, &trace, &machine, &subcluster), 0);
    assert_int_equal(subcluster, 3);
    assert_int_equal(machine, 2);
    assert_decision(&d, 0, 0, 0, 3, 10.0);
}

/*
 * The tie rule: core (machine 0) with racks a (machine 1) and b (machine
 * 2); server 0 is read 10 bytes by a, server 1 10 bytes by b. For server
 * 0, M_L is 10 both at the core (both racks read across their links) and
 * in rack a (server 1, not placed yet, still counts as outside b): the
 * total of the child links (20 against 10) sends it to a, and server 1
 * then to b. Nothing crosses a link in the end.
 */
static void test_tie_goes_to_least_total(void **state)
{
    (void)state;
    const size_t parent[3] = {LOADTRAVERSE_ROOT, 0, 0};
    const size_t subcluster_of_machine[3] = {0, 1, 2};
    const uint64_t reads[6] = {0, 10, 0, 0, 0, 10};
    const uint64_t writes[6] = {0};
    struct loadtraverse_input input = {3,    parent, NULL,  3,     subcluster_of_machine,
                                       NULL, 2,      reads, writes};
    struct decisions d = {0};
    struct loadtraverse_trace trace = {record_decision, &d};
    size_t machine[2], subcluster[2];

    assert_int_equal(loadtraverse_assign(&input, &trace, machine, subcluster), 0);
    assert_decision(&d, 0, 0, 0, 1, 10.0);
    assert_decision(&d, 1, 0, 1, 2, 0.0);
    assert_int_equal(machine[0], 1);
    assert_int_equal(machine[1], 2);
}

/*
 * A machine that cannot serve (a client without a datanode) is never
 * chosen, but its requests count: W row (5, 3, 10) with the third machine
 * a client gives Y = (13, 15) over the first two, so the first serves.
 * Two servers need two serving machines.
 */
static void test_clients_count_but_never_serve(void **state)
{
    (void)state;
    const size_t parent[1] = {LOADTRAVERSE_ROOT};
    const size_t subcluster_of_machine[3] = {0, 0, 0};
    const unsigned char can_serve[3] = {1, 1, 0};
    const uint64_t reads[6] = {5, 3, 10, 0, 0, 0};
    const uint64_t writes[6] = {0};
    struct loadtraverse_input input = {1,         parent, NULL,  3,     subcluster_of_machine,
                                       can_serve, 1,      reads, writes};
    size_t machine[3], subcluster[3];

    assert_int_equal(loadtraverse_assign(&input, NULL, machine, subcluster), 0);
    assert_int_equal(machine[0], 0);
    input.server_count = 2;
    assert_int_equal(loadtraverse_assign(&input, NULL, machine, subcluster), 0);
    assert_true(machine[0] != 2 && machine[1] != 2 && machine[0] != machine[1]);
    input.server_count = 3;
    assert_int_equal(loadtraverse_assign(&input, NULL, machine, subcluster), -EINVAL);
}

static void test_rejects_bad_trees(void **state)
{
    (void)state;
    const size_t two_roots[2] = {LOADTRAVERSE_ROOT, LOADTRAVERSE_ROOT};
    const size_t cycle[3] = {LOADTRAVERSE_ROOT, 2, 1};
    const size_t out_of_range[2] = {LOADTRAVERSE_ROOT, 5};
    const size_t good[2] = {LOADTRAVERSE_ROOT, 0};
    const size_t subcluster_of_machine[2] = {0, 1};
    const uint64_t bytes[6] = {0};
    const double zero_speed[2] = {1, 0};
    size_t machine[3], subcluster[3];
    struct loadtraverse_input input = {2,    two_roots, NULL,  2,    subcluster_of_machine,
                                       NULL, 1,         bytes, bytes};

    assert_int_equal(loadtraverse_assign(&input, NULL, machine, subcluster), -EINVAL);
    input.subcluster_count = 3;
    input.parent = cycle;
    assert_int_equal(loadtraverse_assign(&input, NULL, machine, subcluster), -EINVAL);
    input.subcluster_count = 2;
    input.parent = out_of_range;
    assert_int_equal(loadtraverse_assign(&input, NULL, machine, subcluster), -EINVAL);
    input.parent = good;
    input.link_bytes_per_sec = zero_speed;
    assert_int_equal(loadtraverse_assign(&input, NULL, machine, subcluster), -EINVAL);
    input.link_bytes_per_sec = NULL;
    input.server_count = 3; /* three servers, two machines */
    assert_int_equal(loadtraverse_assign(&input, NULL, machine, subcluster), -EINVAL);
    input.server_count = 1;
    unsigned char in_subtree[1] = {0};
    uint64_t down, up;
    assert_int_equal(loadtraverse_link_load(&input, 0, in_subtree, &down, &up),
                     -EINVAL); /* the root has no link */
    assert_int_equal(loadtraverse_assign(&input, NULL, machine, subcluster), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paper_link_loads),
        cmocka_unit_test(test_paper_traversal),
        cmocka_unit_test(test_capacity_one_machine_each),
        cmocka_unit_test(test_single_subcluster_is_loadmatch),
        cmocka_unit_test(test_link_speed_weighs_load),
        cmocka_unit_test(test_tie_goes_to_least_total),
        cmocka_unit_test(test_clients_count_but_never_serve),
        cmocka_unit_test(test_rejects_bad_trees),
    };
    return cmocka_run_group_tests_name("loadtraverse", tests, NULL, NULL);
}
