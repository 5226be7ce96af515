/*
 * @file test_placement.c
 * Unit tests of Panda's allocation in librarian/: static allocation
 * (staticalloc.c) and dynamic allocation (dynamicalloc.c: the writer's
 * pick of a node with room, a round split by speed) against the worked
 * examples of seed 000 section 3.2, and placement_choose()'s
 * policies on snapshots with fast, slow, unmeasured, full and down nodes.
 * Speeds are in the paper's units: 1 MB = 10^6 bytes, tiles of 1 MB.
 */
#include "dynamicalloc.h"
#include "placement.h"
#include "staticalloc.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define MB 1000000u

/* The paper's static example: 5 and 2 MB/s -> tiles 0, 1 to node 0, tile 2 to node 1. */
static void test_static_paper_example(void **state)
{
    (void)state;
    struct staticalloc_node nodes[2] = {{5 * MB, 0}, {2 * MB, 0}};
    size_t out[3];
    assert_int_equal(staticalloc_assign(nodes, 2, MB, 3, 0, out), 0);
    assert_int_equal(out[0], 0); /* 0 + 0.2 s < 0 + 0.5 s */
    assert_int_equal(out[1], 0); /* 0.2 + 0.2 < 0.5 */
    assert_int_equal(out[2], 1); /* 0.4 + 0.2 > 0.5 */
    assert_int_equal(nodes[0].backlog_bytes, 2 * MB);
    assert_int_equal(nodes[1].backlog_bytes, 1 * MB);
}

/* "Continuing in this manner": all 128 tiles of the example split about 5:2. */
static void test_static_paper_example_all_tiles(void **state)
{
    (void)state;
    struct staticalloc_node nodes[2] = {{5 * MB, 0}, {2 * MB, 0}};
    size_t out[128];
    size_t per_node[2] = {0, 0};
    assert_int_equal(staticalloc_assign(nodes, 2, MB, 128, 0, out), 0);
    for (int i = 0; i < 128; i++)
        per_node[out[i]]++;
    /* The 128 earliest finish times are k/5 s for k <= 92 and k/2 s for k <= 36. */
    assert_int_equal(per_node[0], 92);
    assert_int_equal(per_node[1], 36);
    /* Both finish within one tile's time of each other: 18.4 s and 18.0 s. */
    assert_int_equal(nodes[0].backlog_bytes, 92ull * MB);
    assert_int_equal(nodes[1].backlog_bytes, 36ull * MB);
}

/* A backlog counts like tiles already assigned. */
static void test_static_backlog(void **state)
{
    (void)state;
    /* Node 0 is 2.5x as fast but has 2 s of work queued. */
    struct staticalloc_node nodes[2] = {{5 * MB, 10 * MB}, {2 * MB, 0}};
    size_t out[4];
    assert_int_equal(staticalloc_assign(nodes, 2, MB, 4, 0, out), 0);
    assert_int_equal(out[0], 1);                            /* 0.5 s < 2.2 s */
    assert_int_equal(out[1], 1);                            /* 1.0 s < 2.2 s */
    assert_int_equal(out[2], 1);                            /* 1.5 s < 2.2 s */
    assert_int_equal(out[3], 1);                            /* 2.0 s < 2.2 s */
    assert_int_equal(staticalloc_pick(nodes, 2, MB, 0), 0); /* 2.2 s < 2.5 s */
}

/* Ties rotate with `first`; a speed of 0 is refused. */
static void test_static_ties_and_errors(void **state)
{
    (void)state;
    struct staticalloc_node nodes[3] = {{MB, 0}, {MB, 0}, {MB, 0}};
    size_t out[6];
    assert_int_equal(staticalloc_assign(nodes, 3, MB, 6, 1, out), 0);
    size_t expected[6] = {1, 2, 0, 1, 2, 0};
    for (int i = 0; i < 6; i++)
        assert_int_equal(out[i], expected[i]);
    nodes[2].bytes_per_sec = 0;
    assert_int_equal(staticalloc_assign(nodes, 3, MB, 1, 0, out), -EINVAL);
    assert_int_equal(staticalloc_assign(nodes, 0, MB, 1, 0, out), -EINVAL);
}

/*
 * The paper's dynamic example: 128 tiles, speeds 5 and 3 MB/s, N = 20.
 * Rounds 1 and 2 hand out 40 tiles each, 25 + 15; round 3 (48 left, about
 * a third) hands out 20 = 10 x 2 nodes, split by finish time.
 */
static void test_dynamic_round_paper_example(void **state)
{
    (void)state;
    const uint64_t speeds[2] = {5 * MB, 3 * MB};
    uint32_t counts[2];

    assert_int_equal(dynamicalloc_round(speeds, 2, MB, 40, counts), 0);
    assert_int_equal(counts[0], 25);
    assert_int_equal(counts[1], 15);
    assert_int_equal(dynamicalloc_round(speeds, 2, MB, 20, counts), 0);
    assert_int_equal(counts[0] + counts[1], 20);
    assert_int_equal(counts[0], 13); /* 12.5 : 7.5 by finish time */
    assert_int_equal(counts[1], 7);

    const uint64_t zero[1] = {0};
    assert_int_equal(dynamicalloc_round(zero, 1, MB, 3, counts), -EINVAL);
    assert_int_equal(dynamicalloc_round(zero, 0, MB, 3, counts), -EINVAL);
}

/* The writer's pick: the least loaded node with room for the whole batch. */
static void test_dynamic_pick_least_loaded_with_room(void **state)
{
    (void)state;
    struct dynamicalloc_node nodes[3] = {{11, 3}, {12, 1}, {13, 2}};
    assert_int_equal(dynamicalloc_pick(nodes, 3, 0, 2, 4), 12);
    /* A batch of 3 fits only node 12 (1 + 3 <= 4); of 4, none. */
    assert_int_equal(dynamicalloc_pick(nodes, 3, 0, 3, 4), 12);
    assert_int_equal(dynamicalloc_pick(nodes, 3, 0, 4, 4), 0);
    /* Node 12 fills up: 13 is next, then 11 for a single tile, then none. */
    nodes[1].in_flight = 4;
    assert_int_equal(dynamicalloc_pick(nodes, 3, 0, 2, 4), 13);
    nodes[2].in_flight = 4;
    assert_int_equal(dynamicalloc_pick(nodes, 3, 0, 2, 4), 0);
    assert_int_equal(dynamicalloc_pick(nodes, 3, 0, 1, 4), 11);
    assert_int_equal(dynamicalloc_pick(nodes, 0, 0, 1, 4), 0);
}

/* Equally loaded nodes take turns as the caller advances `start`. */
static void test_dynamic_pick_ties_rotate(void **state)
{
    (void)state;
    struct dynamicalloc_node nodes[3] = {{1, 0}, {2, 0}, {3, 0}};
    assert_int_equal(dynamicalloc_pick(nodes, 3, 0, 2, 4), 1);
    assert_int_equal(dynamicalloc_pick(nodes, 3, 1, 2, 4), 2);
    assert_int_equal(dynamicalloc_pick(nodes, 3, 2, 2, 4), 3);
    assert_int_equal(dynamicalloc_pick(nodes, 3, 3, 2, 4), 1);
    assert_int_equal(dynamicalloc_pick(nodes, 3, UINT32_MAX, 2, 4), 1); /* 2^32 - 1 = 0 mod 3 */
    /* A less loaded node wins wherever the rotation starts. */
    nodes[2].in_flight = 0;
    nodes[0].in_flight = nodes[1].in_flight = 1;
    assert_int_equal(dynamicalloc_pick(nodes, 3, 0, 2, 4), 3);
}

/*
 * DESIGN.md's dynamic placement: the writer keeps at most 4 tiles in
 * flight per node and hands a batch of 2 to a node with room, so nodes
 * pull work at their own pace. Simulated with the paper's speeds, 5 and
 * 3 MB/s (a tile takes 3 and 5 time units): the 128 tiles split about
 * 5:3 (80 and 48) and both nodes finish within a batch of the slow node's
 * time of each other, with no size known ahead and no speed measured.
 */
static void test_dynamic_pick_nodes_pull_at_their_pace(void **state)
{
    (void)state;
    const uint64_t tile_time[2] = {3, 5};
    struct dynamicalloc_node nodes[2] = {{1, 0}, {2, 0}};
    uint64_t finish[2][4]; /* the finish times of each node's tiles in flight, in order */
    uint64_t busy_until[2] = {0, 0};
    uint32_t tiles_written[2] = {0, 0};
    uint64_t now = 0;
    uint32_t start = 0;
    uint32_t left = 128;

    while (left > 0) {
        uint32_t id = dynamicalloc_pick(nodes, 2, start, 2, 4);
        if (id != 0) {
            size_t i = id - 1;
            for (int t = 0; t < 2; t++) {
                busy_until[i] = (busy_until[i] > now ? busy_until[i] : now) + tile_time[i];
                finish[i][nodes[i].in_flight++] = busy_until[i];
            }
            tiles_written[i] += 2;
            left -= 2;
            start++;
            continue;
        }
        /* Every node is full: time moves to the next tile that finishes. */
        size_t first = finish[0][0] <= finish[1][0] ? 0 : 1;
        now = finish[first][0];
        memmove(&finish[first][0], &finish[first][1], 3 * sizeof(finish[first][0]));
        nodes[first].in_flight--;
    }
    assert_int_equal(tiles_written[0] + tiles_written[1], 128);
    assert_in_range(tiles_written[0], 76, 84);
    uint64_t spread = busy_until[0] > busy_until[1] ? busy_until[0] - busy_until[1]
                                                    : busy_until[1] - busy_until[0];
    assert_true(spread <= 2 * tile_time[1]);
}

/* ---- placement_choose ---------------------------------------------------- */

static void count_ids(const uint32_t *out, size_t count, size_t *per_id, size_t ids)
{
    memset(per_id, 0, ids * sizeof(*per_id));
    for (size_t i = 0; i < count; i++) {
        assert_true(out[i] < ids);
        per_id[out[i]]++;
    }
}

/* Static placement gives a 40 MB/s node twice the tiles of a 20 MB/s node. */
static void test_choose_static_by_speed(void **state)
{
    (void)state;
    struct placement_node nodes[3] = {{1, 1, 1ull << 40, 40 * MB, 0, 1, 0},
                                      {2, 1, 1ull << 40, 20 * MB, 0, 2, 0},
                                      {3, 1, 1ull << 40, 40 * MB, 0, 3, 0}};
    uint32_t out[100];
    size_t per_id[4];
    assert_int_equal(placement_choose(PLACEMENT_STATIC, nodes, 3, 9, 0, MB, 100, out), 0);
    count_ids(out, 100, per_id, 4);
    assert_int_equal(per_id[1], 40);
    assert_int_equal(per_id[2], 20);
    assert_int_equal(per_id[3], 40);
    /* The snapshot carries the placement: backlog up, free space down. */
    assert_int_equal(nodes[1].backlog_bytes, 20ull * MB);
    assert_int_equal(nodes[1].free_bytes, (1ull << 40) - 20ull * MB);
    /* A second call continues from those backlogs: still 2:1:2. */
    assert_int_equal(placement_choose(PLACEMENT_STATIC, nodes, 3, 9, 100, MB, 50, out), 0);
    count_ids(out, 50, per_id, 4);
    assert_int_equal(per_id[1], 20);
    assert_int_equal(per_id[2], 10);
    assert_int_equal(per_id[3], 20);
}

/* An unmeasured node is taken to be as fast as the measured average. */
static void test_choose_static_unmeasured(void **state)
{
    (void)state;
    struct placement_node nodes[3] = {
        {1, 1, 1ull << 40, 40 * MB, 0, 1, 0}, {2, 1, 1ull << 40, 20 * MB, 0, 2, 0}, {3, 1, 1ull << 40, 0, 0, 3, 0}};
    uint32_t out[90];
    size_t per_id[4];
    assert_int_equal(placement_choose(PLACEMENT_STATIC, nodes, 3, 0, 0, MB, 90, out), 0);
    count_ids(out, 90, per_id, 4);
    assert_int_equal(per_id[1], 40);
    assert_int_equal(per_id[2], 20);
    assert_int_equal(per_id[3], 30);

    /* Nothing measured: equal idle nodes take turns, starting by the file. */
    struct placement_node fresh[3] = {
        {1, 1, 1ull << 40, 0, 0, 1, 0}, {2, 1, 1ull << 40, 0, 0, 2, 0}, {3, 1, 1ull << 40, 0, 0, 3, 0}};
    assert_int_equal(placement_choose(PLACEMENT_STATIC, fresh, 3, 1, 0, MB, 6, out), 0);
    uint32_t expected[6] = {2, 3, 1, 2, 3, 1};
    for (int i = 0; i < 6; i++)
        assert_int_equal(out[i], expected[i]);
}

/* Down and full nodes get nothing; a node that fills mid-way stops. */
static void test_choose_skips_down_and_full(void **state)
{
    (void)state;
    struct placement_node nodes[3] = {
        {1, 0, 1ull << 40, 90 * MB, 0, 1, 0}, {2, 1, 3ull * MB, 90 * MB, 0, 2, 0}, {3, 1, 1ull << 40, MB, 0, 3, 0}};
    uint32_t out[20];
    size_t per_id[4];
    assert_int_equal(placement_choose(PLACEMENT_STATIC, nodes, 3, 0, 0, MB, 20, out), 0);
    count_ids(out, 20, per_id, 4);
    assert_int_equal(per_id[1], 0);  /* down */
    assert_int_equal(per_id[2], 3);  /* fast, but room for 3 tiles only */
    assert_int_equal(per_id[3], 17); /* slow, but the only one left */
    assert_int_equal(nodes[1].free_bytes, 0);

    nodes[2].free_bytes = MB - 1;
    assert_int_equal(placement_choose(PLACEMENT_STATIC, nodes, 3, 0, 0, MB, 1, out), -ENOSPC);
    assert_int_equal(placement_choose(PLACEMENT_ROUNDROBIN, nodes, 3, 0, 0, MB, 1, out), -ENOSPC);
    nodes[1].up = 0;
    nodes[2].up = 0;
    assert_int_equal(placement_choose(PLACEMENT_STATIC, nodes, 3, 0, 0, MB, 1, out), -ENODEV);
}

/* Round-robin ignores speed: the baseline of every benchmark. */
static void test_choose_roundrobin_ignores_speed(void **state)
{
    (void)state;
    struct placement_node nodes[2] = {{1, 1, 1ull << 40, 40 * MB, 0, 1, 0}, {2, 1, 1ull << 40, MB, 0, 2, 0}};
    uint32_t out[10];
    size_t per_id[3];
    assert_int_equal(placement_choose(PLACEMENT_ROUNDROBIN, nodes, 2, 0, 0, MB, 10, out), 0);
    count_ids(out, 10, per_id, 3);
    assert_int_equal(per_id[1], 5);
    assert_int_equal(per_id[2], 5);
    assert_int_equal(nodes[1].backlog_bytes, 5ull * MB);
}

/* The writer's choice: on the named node while it can; the rest by finish time. */
static void test_choose_named(void **state)
{
    (void)state;
    struct placement_node nodes[3] = {{1, 1, 1ull << 40, 40 * MB, 0, 1, 0},
                                      {2, 1, 2ull * MB, 20 * MB, 0, 2, 0},
                                      {3, 1, 1ull << 40, 40 * MB, 0, 3, 0}};
    uint32_t out[6];
    assert_int_equal(placement_choose_named(2, nodes, 3, 0, 0, MB, 2, out), 0);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 2);
    /* Node 2 is full now: its next batch goes to the earliest finishers. */
    assert_int_equal(placement_choose_named(2, nodes, 3, 0, 2, MB, 4, out), 0);
    for (int i = 0; i < 4; i++)
        assert_true(out[i] == 1 || out[i] == 3);
    /* A down node is passed over too. */
    nodes[0].up = 0;
    assert_int_equal(placement_choose_named(1, nodes, 3, 0, 6, MB, 2, out), 0);
    assert_int_equal(out[0], 3);
    assert_int_equal(out[1], 3);
    assert_int_equal(placement_choose_named(99, nodes, 3, 0, 0, MB, 1, out), -ENOENT);
    nodes[2].up = 0; /* only node 2 is up, and it is full */
    assert_int_equal(placement_choose_named(1, nodes, 3, 0, 0, MB, 1, out), -ENOSPC);
    nodes[1].up = 0;
    assert_int_equal(placement_choose_named(1, nodes, 3, 0, 0, MB, 1, out), -ENODEV);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_paper_example),
        cmocka_unit_test(test_static_paper_example_all_tiles),
        cmocka_unit_test(test_static_backlog),
        cmocka_unit_test(test_static_ties_and_errors),
        cmocka_unit_test(test_dynamic_round_paper_example),
        cmocka_unit_test(test_dynamic_pick_least_loaded_with_room),
        cmocka_unit_test(test_dynamic_pick_ties_rotate),
        cmocka_unit_test(test_dynamic_pick_nodes_pull_at_their_pace),
        cmocka_unit_test(test_choose_static_by_speed),
        cmocka_unit_test(test_choose_static_unmeasured),
        cmocka_unit_test(test_choose_skips_down_and_full),
        cmocka_unit_test(test_choose_roundrobin_ignores_speed),
        cmocka_unit_test(test_choose_named),
    };
    return cmocka_run_group_tests_name("placement", tests, NULL, NULL);
}
