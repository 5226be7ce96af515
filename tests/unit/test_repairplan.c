/*
 * Unit tests of librarian/repairplan.c: which replicas count, what a tile
 * needs, where its new replicas go, and when the replaced ones are dropped.
 */
#include "repairplan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define MB (1000ull * 1000)
#define REPLACE_AFTER_MS 60000

enum { HEALTHY = 0, DEGRADED = 1, UNAVAILABLE = 2 };
enum { ACTIVE = 0, DRAINING = 1, REMOVED = 2 };

/* Four nodes on four machines, all up and empty, node 4 the fastest writer. */
static void four_nodes(struct repairplan_node nodes[4])
{
    static const char *const machines[] = {"m1", "m2", "m3", "m4"};
    for (int i = 0; i < 4; i++) {
        nodes[i] = (struct repairplan_node){.id = (uint32_t)i + 1,
                                            .up = true,
                                            .admin = ACTIVE,
                                            .free_bytes = 1000 * MB,
                                            .read_bytes_per_sec = 100 * MB,
                                            .write_bytes_per_sec = 100 * MB,
                                            .machine = machines[i]};
    }
    nodes[3].write_bytes_per_sec = 400 * MB;
}

static void plan(struct repairplan_node *nodes, size_t count, const struct repairplan_holder *holders,
                 size_t holder_count, uint32_t copies, struct repairplan_step *steps,
                 struct repairplan_verdict *verdict)
{
    struct repairplan_tile tile = {holders, holder_count, copies, MB};
    repairplan_tile(nodes, count, &tile, REPLACE_AFTER_MS, steps, verdict);
}

static void test_full_set_is_healthy_and_needs_nothing(void **state)
{
    (void)state;
    struct repairplan_node nodes[4];
    struct repairplan_holder holders[] = {{1, 10}, {2, 11}};
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    four_nodes(nodes);
    plan(nodes, 4, holders, 2, 2, steps, &verdict);
    assert_int_equal(verdict.health, HEALTHY);
    assert_int_equal(verdict.good, 2);
    assert_int_equal(verdict.steps, 0);
}

static void test_short_outage_is_waited_for(void **state)
{
    (void)state;
    struct repairplan_node nodes[4];
    struct repairplan_holder holders[] = {{1, 10}, {2, 11}};
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    four_nodes(nodes);
    nodes[1].up = false;
    nodes[1].down_ms = REPLACE_AFTER_MS - 1;
    plan(nodes, 4, holders, 2, 2, steps, &verdict);
    assert_int_equal(verdict.health, DEGRADED);
    assert_int_equal(verdict.good, 1);
    assert_int_equal(verdict.waited, 1);
    assert_int_equal(verdict.steps, 0);
}

static void test_long_outage_copies_then_drops(void **state)
{
    (void)state;
    struct repairplan_node nodes[4];
    struct repairplan_holder holders[] = {{1, 10}, {2, 11}};
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    four_nodes(nodes);
    nodes[1].up = false;
    nodes[1].down_ms = REPLACE_AFTER_MS;
    plan(nodes, 4, holders, 2, 2, steps, &verdict);
    assert_int_equal(verdict.health, DEGRADED);
    assert_int_equal(verdict.steps, 2);
    /* From the survivor to the fastest free node, then the lost one dropped. */
    assert_int_equal(steps[0].kind, REPAIRPLAN_COPY);
    assert_int_equal(steps[0].from_node, 1);
    assert_int_equal(steps[0].version, 10);
    assert_int_equal(steps[0].to_node, 4);
    assert_int_equal(steps[1].kind, REPAIRPLAN_DROP);
    assert_int_equal(steps[1].from_node, 2);
    assert_int_equal(steps[1].version, 11);
    assert_true(steps[1].node_down);
    assert_int_equal(nodes[3].planned_bytes, MB);
}

static void test_targets_spread_by_planned_bytes(void **state)
{
    (void)state;
    struct repairplan_node nodes[4];
    struct repairplan_holder holders[] = {{1, 10}};
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    four_nodes(nodes);
    nodes[3].write_bytes_per_sec = 100 * MB; /* all equal now */
    uint32_t used[5] = {0};
    for (int i = 0; i < 6; i++) {
        plan(nodes, 4, holders, 1, 2, steps, &verdict);
        assert_int_equal(verdict.steps, 1);
        used[steps[0].to_node]++;
    }
    /* Six copies over nodes 2..4 (1 holds the tile): two each. */
    assert_int_equal(used[1], 0);
    assert_int_equal(used[2], 2);
    assert_int_equal(used[3], 2);
    assert_int_equal(used[4], 2);
}

static void test_distinct_machines_before_speed(void **state)
{
    (void)state;
    struct repairplan_node nodes[4];
    struct repairplan_holder holders[] = {{1, 10}};
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    four_nodes(nodes);
    nodes[3].machine = "m1"; /* the fastest shares the holder's machine */
    plan(nodes, 4, holders, 1, 2, steps, &verdict);
    assert_int_equal(verdict.steps, 1);
    assert_int_not_equal(steps[0].to_node, 4);
    assert_int_not_equal(steps[0].to_node, 1);
}

static void test_same_machine_when_nothing_else(void **state)
{
    (void)state;
    struct repairplan_node nodes[2];
    struct repairplan_holder holders[] = {{1, 10}};
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    nodes[0] = (struct repairplan_node){.id = 1, .up = true, .free_bytes = 10 * MB, .machine = "m"};
    nodes[1] = (struct repairplan_node){.id = 2, .up = true, .free_bytes = 10 * MB, .machine = "m"};
    plan(nodes, 2, holders, 1, 2, steps, &verdict);
    assert_int_equal(verdict.steps, 1);
    assert_int_equal(steps[0].to_node, 2);
}

static void test_draining_holder_is_source_then_dropped(void **state)
{
    (void)state;
    struct repairplan_node nodes[4];
    struct repairplan_holder holders[] = {{3, 30}};
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    four_nodes(nodes);
    nodes[2].admin = DRAINING;
    plan(nodes, 4, holders, 1, 1, steps, &verdict);
    assert_int_equal(verdict.health, DEGRADED); /* its only replica no longer counts */
    assert_int_equal(verdict.steps, 2);
    assert_int_equal(steps[0].kind, REPAIRPLAN_COPY);
    assert_int_equal(steps[0].from_node, 3);
    assert_int_not_equal(steps[0].to_node, 3);
    assert_int_equal(steps[1].kind, REPAIRPLAN_DROP);
    assert_int_equal(steps[1].from_node, 3);
    assert_false(steps[1].node_down); /* up: frozen and retired by the executor */
}

static void test_no_target_no_drop(void **state)
{
    (void)state;
    struct repairplan_node nodes[2];
    struct repairplan_holder holders[] = {{1, 10}, {2, 20}};
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    nodes[0] = (struct repairplan_node){.id = 1, .up = true, .free_bytes = 10 * MB, .machine = "a"};
    nodes[1] = (struct repairplan_node){
        .id = 2, .up = true, .admin = REMOVED, .free_bytes = 10 * MB, .machine = "b"};
    plan(nodes, 2, holders, 2, 2, steps, &verdict);
    /* Nowhere to copy to: the removed node's replica is the tile's second; kept. */
    assert_int_equal(verdict.health, DEGRADED);
    assert_int_equal(verdict.steps, 0);
}

static void test_excess_replaced_replica_dropped(void **state)
{
    (void)state;
    struct repairplan_node nodes[4];
    struct repairplan_holder holders[] = {{1, 10}, {2, 11}, {3, 12}};
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    four_nodes(nodes);
    nodes[2].admin = REMOVED;
    plan(nodes, 4, holders, 3, 2, steps, &verdict);
    assert_int_equal(verdict.health, HEALTHY);
    assert_int_equal(verdict.steps, 1);
    assert_int_equal(steps[0].kind, REPAIRPLAN_DROP);
    assert_int_equal(steps[0].from_node, 3);
}

static void test_no_up_replica_is_unavailable(void **state)
{
    (void)state;
    struct repairplan_node nodes[4];
    struct repairplan_holder holders[] = {{1, 10}, {5, 11}}; /* 5: unknown node */
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    four_nodes(nodes);
    nodes[0].up = false;
    nodes[0].down_ms = 1;
    plan(nodes, 4, holders, 2, 2, steps, &verdict);
    assert_int_equal(verdict.health, UNAVAILABLE);
    assert_int_equal(verdict.steps, 0); /* nothing to copy from */
}

static void test_full_node_is_no_target(void **state)
{
    (void)state;
    struct repairplan_node nodes[4];
    struct repairplan_holder holders[] = {{1, 10}};
    struct repairplan_step steps[REPAIRPLAN_MAX_STEPS];
    struct repairplan_verdict verdict;
    four_nodes(nodes);
    nodes[3].free_bytes = MB - 1;
    nodes[2].up = false;
    nodes[1].admin = DRAINING;
    plan(nodes, 4, holders, 1, 2, steps, &verdict);
    assert_int_equal(verdict.steps, 0);
    assert_int_equal(verdict.health, DEGRADED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_set_is_healthy_and_needs_nothing),
        cmocka_unit_test(test_short_outage_is_waited_for),
        cmocka_unit_test(test_long_outage_copies_then_drops),
        cmocka_unit_test(test_targets_spread_by_planned_bytes),
        cmocka_unit_test(test_distinct_machines_before_speed),
        cmocka_unit_test(test_same_machine_when_nothing_else),
        cmocka_unit_test(test_draining_holder_is_source_then_dropped),
        cmocka_unit_test(test_no_target_no_drop),
        cmocka_unit_test(test_excess_replaced_replica_dropped),
        cmocka_unit_test(test_no_up_replica_is_unavailable),
        cmocka_unit_test(test_full_node_is_no_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
