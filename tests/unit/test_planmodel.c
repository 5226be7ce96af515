/*
 * @file test_planmodel.c
 * Unit tests of librarian/planmodel.c, the performance model as a
 * planner's predictor (issue 32, step 4): its seconds for a hand-worked
 * placement (reads to the serving holder, writes to every holder, two
 * phases that add up), and `balanced` deciding by it. The second is the
 * issue's own case: four machines, one disk at a fraction of the others'
 * speed, reads bound by the mounts' CPU. plan_cost.h sees only the slow
 * disk and moves tiles off it; the model sees that every mount is the
 * bottleneck wherever the tiles are, predicts no gain and makes no plan.
 * With the disk slow enough to be the bottleneck, the model too moves
 * tiles, and predicts the plan faster.
 */
#include "perfmodel.h"
#include "plan.h"
#include "plan_balanced.h"
#include "planmodel.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define TILES_PER_MACHINE 32

static const char *const machine_names[4] = {"m0", "m1", "m2", "m3"};
static const uint32_t node_ids[4] = {1, 2, 3, 4};

static void assert_close(double actual, double expected)
{
    double difference = actual > expected ? actual - expected : expected - actual;
    if (difference > 1e-9 * (expected > 1 ? expected : 1))
        fail_msg("predicted %.12f s, expected %.12f s", actual, expected);
}

/* Four machines, datanode i on machine i; links and disks as given; no latency. */
static void model_cluster(struct perfmodel_cluster *c, double link_mbps, const double *disk_mbps,
                          double mount_byte_s)
{
    memset(c, 0, sizeof(*c));
    c->n_nodes = 4;
    c->n_machines = 4;
    for (int i = 0; i < 4; i++) {
        c->nodes[i].machine = i;
        c->nodes[i].disk_read_mbps = disk_mbps[i];
        c->nodes[i].disk_write_mbps = disk_mbps[i];
        c->links[i].mbps = link_mbps;
    }
    c->mount_cpu_per_byte_s = mount_byte_s;
}

static struct plan_node plan_node_of(int i, double disk_mbps)
{
    struct plan_node node = {.id = node_ids[i],
                             .machine = machine_names[i],
                             .up = 1,
                             .read_bytes_per_sec = (uint64_t)(disk_mbps * 1e6),
                             .write_bytes_per_sec = (uint64_t)(disk_mbps * 1e6),
                             .free_bytes = 64 * GIB};
    return node;
}

/*
 * By hand: machine m0 reads two 1 MiB tiles from datanode 2 (on m1), and
 * writes one 1 MiB tile held by datanodes 3 and 4. Links 10 MB/s, disks,
 * CPUs and latencies free. Reads: m1's link out and m0's link in each
 * carry 2 MiB: 2 MiB / 10 MB/s. Writes: m0's link out carries the tile
 * twice (one copy per holder): the same. Seconds: their sum.
 */
static void test_planmodel_seconds_by_hand(void **state)
{
    (void)state;
    double free_disks[4] = {0, 0, 0, 0};
    struct perfmodel_cluster cluster;
    model_cluster(&cluster, 10, free_disks, 0);
    struct plan_node nodes[4];
    for (int i = 0; i < 4; i++)
        nodes[i] = plan_node_of(i, 100);
    struct plan_tile tiles[3] = {
        {.ino = 5, .tile = 0, .version = 1, .tile_bytes = MIB, .node_count = 1, .nodes = {2}},
        {.ino = 5, .tile = 1, .version = 1, .tile_bytes = MIB, .node_count = 1, .nodes = {2}},
        {.ino = 5, .tile = 2, .version = 1, .tile_bytes = MIB, .node_count = 2, .nodes = {3, 4}},
    };
    struct plan_access accesses[3] = {
        {.ino = 5, .tile = 0, .machine = "m0", .reads = 1, .bytes_read = MIB},
        {.ino = 5, .tile = 1, .machine = "m0", .reads = 1, .bytes_read = MIB},
        {.ino = 5, .tile = 2, .machine = "m0", .writes = 1, .bytes_written = MIB},
    };
    struct plan_cluster plan_cluster = {.nodes = nodes, .node_count = 4};
    struct plan_profile profile = {.accesses = accesses, .count = 3};
    struct plan_tilemap map = {.tiles = tiles, .count = 3};
    struct planmodel model = {.cluster = &cluster, .node_ids = node_ids,
                              .machines = machine_names};
    struct plan_predictor predictor = {planmodel_seconds, &model};
    struct plan_options options = {.predictor = &predictor};
    struct plan plan = {0};

    assert_int_equal(plan_make(PLAN_FREQUENT, &plan_cluster, &profile, &map, &options, &plan), 0);
    double half = 2.0 * MIB / 10e6;
    assert_close(plan.model_seconds_before, 2 * half);
    assert_int_equal(model.skipped, 0);
    /* frequent brings the reads home to m0's datanode and the written tile too. */
    assert_true(plan.action_count > 0);
    assert_true(plan.model_seconds_after < plan.model_seconds_before);
    plan_release(&plan);
}

/*
 * The case. Every machine reads its own 32 tiles, which sit on
 * its own datanode; datanode 4's disk runs at disk3 MB/s, the others at
 * 400; links 25 MB/s; a mount spends 40 ns per byte (25 MB/s).
 */
struct slow_disk_case {
    struct perfmodel_cluster cluster;
    struct plan_node nodes[4];
    struct plan_tile tiles[4 * TILES_PER_MACHINE];
    struct plan_access accesses[4 * TILES_PER_MACHINE];
    struct plan_cluster plan_cluster;
    struct plan_profile profile;
    struct plan_tilemap map;
    struct planmodel model;
    struct plan_predictor predictor;
};

static void slow_disk_case(struct slow_disk_case *k, double disk3)
{
    double disks[4] = {400, 400, 400, disk3};
    memset(k, 0, sizeof(*k));
    model_cluster(&k->cluster, 25, disks, 40e-9);
    for (int i = 0; i < 4; i++)
        k->nodes[i] = plan_node_of(i, disks[i]);
    for (int i = 0; i < 4 * TILES_PER_MACHINE; i++) {
        int owner = i / TILES_PER_MACHINE;
        k->tiles[i] = (struct plan_tile){.ino = 9, .tile = (uint64_t)i, .version = 1,
                                         .tile_bytes = MIB, .node_count = 1,
                                         .nodes = {node_ids[owner]}};
        k->accesses[i] = (struct plan_access){.ino = 9, .tile = (uint64_t)i,
                                              .machine = machine_names[owner], .reads = 1,
                                              .bytes_read = MIB};
    }
    k->plan_cluster = (struct plan_cluster){.nodes = k->nodes, .node_count = 4};
    k->profile = (struct plan_profile){.accesses = k->accesses, .count = 4 * TILES_PER_MACHINE};
    k->map = (struct plan_tilemap){.tiles = k->tiles, .count = 4 * TILES_PER_MACHINE};
    k->model = (struct planmodel){.cluster = &k->cluster, .node_ids = node_ids,
                                  .machines = machine_names};
    k->predictor = (struct plan_predictor){planmodel_seconds, &k->model};
}

static void test_balanced_follows_the_model_when_mounts_bind(void **state)
{
    (void)state;
    struct slow_disk_case *k = calloc(1, sizeof(*k));
    struct plan plan = {0};
    assert_non_null(k);
    slow_disk_case(k, 30); /* 32 MiB at 30 MB/s: 1.1 s; each mount: 1.34 s */

    /* Without the model: the slow disk's column wins, tiles move off it. */
    struct plan_options options = {0};
    assert_int_equal(plan_make(PLAN_BALANCED, &k->plan_cluster, &k->profile, &k->map, &options,
                               &plan), 0);
    assert_true(plan.action_count > 0);
    assert_int_not_equal(plan.basis, PLAN_BASIS_CURRENT);
    plan_release(&plan);

    /* With it: every mount binds wherever the tiles are; no gain, no plan. */
    options.predictor = &k->predictor;
    assert_int_equal(plan_make(PLAN_BALANCED, &k->plan_cluster, &k->profile, &k->map, &options,
                               &plan), 0);
    assert_int_equal(plan.action_count, 0);
    assert_int_equal(plan.basis, PLAN_BASIS_CURRENT);
    assert_close(plan.model_seconds_after, plan.model_seconds_before);
    assert_close(plan.model_seconds_before, TILES_PER_MACHINE * MIB * 40e-9);
    char name[32];
    perfmodel_resource_name(&k->model.reads.resources[k->model.reads.bottleneck], name,
                            sizeof(name));
    assert_string_equal(name, "mount-cpu[0]");
    plan_release(&plan);
    free(k);
}

static void test_balanced_moves_when_the_model_predicts_a_gain(void **state)
{
    (void)state;
    struct slow_disk_case *k = calloc(1, sizeof(*k));
    struct plan plan = {0};
    assert_non_null(k);
    slow_disk_case(k, 5); /* 32 MiB at 5 MB/s: 6.7 s, the bottleneck */

    struct plan_options options = {.predictor = &k->predictor};
    assert_int_equal(plan_make(PLAN_BALANCED, &k->plan_cluster, &k->profile, &k->map, &options,
                               &plan), 0);
    assert_true(plan.action_count > 0);
    assert_true(plan.model_seconds_after < plan.model_seconds_before * (1 - PLAN_MODEL_MARGIN));
    /* And what it reports is what the predictor says of the plan's map. */
    double before = plan.model_seconds_before;
    assert_close(before, TILES_PER_MACHINE * MIB / 5e6);
    plan_release(&plan);
    free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planmodel_seconds_by_hand),
        cmocka_unit_test(test_balanced_follows_the_model_when_mounts_bind),
        cmocka_unit_test(test_balanced_moves_when_the_model_predicts_a_gain),
    };
    return cmocka_run_group_tests_name("planmodel", tests, NULL, NULL);
}
