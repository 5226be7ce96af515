/*
 * @file test_arrayhome.c
 * Unit tests of array disk chunks' homes (librarian/arrayhome.c): a
 * tile's chunk index on a 2x2 mesh, homes on distinct machines first and
 * distinct nodes after, down nodes skipped, different files starting on
 * different machines; a slow home's chunk spread by static allocation,
 * the healthy homes' chunks kept.
 */
#include "arrayhome.h"
#include "arraylayout.h"
#include "arrayspec.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void layout_from_text(struct arraylayout *layout, const char *text)
{
    struct arrayspec spec;
    char message[ARRAYSPEC_MESSAGE_MAX];
    if (arrayspec_parse(text, strlen(text), &spec, message, sizeof(message)) != 0)
        fail_msg("\"%s\": %s", text, message);
    assert_int_equal(arraylayout_init(layout, &spec, message, sizeof(message)), 0);
}

/*
 * 1024x1024 f32 (4 MiB) on a 2x2 mesh with 1 MiB tiles: one tile per
 * chunk, and the tiles of a chunk are consecutive; with 256 KiB tiles
 * each chunk has four.
 */
static void test_chunk_of_tile(void **state)
{
    (void)state;
    struct arraylayout layout;
    uint64_t chunk;

    layout_from_text(&layout, "f32 1024x1024 BLOCK,BLOCK mesh=2x2 threshold=1M");
    assert_int_equal(arrayhome_chunk_count(&layout), 4);
    assert_int_equal(arraylayout_tile_count(&layout), 4);
    for (uint64_t tile = 0; tile < 4; tile++) {
        assert_int_equal(arrayhome_chunk_of(&layout, tile, &chunk), 0);
        assert_int_equal(chunk, tile);
    }
    assert_int_equal(arrayhome_chunk_of(&layout, 4, &chunk), -EINVAL);

    layout_from_text(&layout, "f32 1024x1024 BLOCK,BLOCK mesh=2x2 threshold=256K");
    assert_int_equal(arraylayout_tile_count(&layout), 16);
    for (uint64_t tile = 0; tile < 16; tile++) {
        assert_int_equal(arrayhome_chunk_of(&layout, tile, &chunk), 0);
        assert_int_equal(chunk, tile / 4);
    }
}

static struct placement_node node_on(uint32_t id, uint32_t machine, int up)
{
    return (struct placement_node){.id = id, .up = up, .free_bytes = 1u << 30, .machine = machine};
}

/*
 * Machines 1 (nodes 1-4, the writer's), 2 (node 5) and 3 (node 6): four
 * chunks of file 0 go to nodes 1, 5, 6, then 2 (machines 1, 2, 3, 1).
 */
static void test_distinct_machines_then_nodes(void **state)
{
    (void)state;
    struct placement_node nodes[6] = {node_on(1, 1, 1), node_on(2, 1, 1), node_on(3, 1, 1),
                                      node_on(4, 1, 1), node_on(5, 2, 1), node_on(6, 3, 1)};
    const uint32_t expected[6] = {1, 5, 6, 2, 3, 4};
    uint32_t home;

    for (uint64_t chunk = 0; chunk < 6; chunk++) {
        assert_int_equal(arrayhome_pick(nodes, 6, 0, chunk, &home), 0);
        assert_int_equal(home, expected[chunk]);
    }
    /* Chunk 6 starts over. */
    assert_int_equal(arrayhome_pick(nodes, 6, 0, 6, &home), 0);
    assert_int_equal(home, 1);
    /* File 1 starts one machine later: on machine 2. */
    assert_int_equal(arrayhome_pick(nodes, 6, 1, 0, &home), 0);
    assert_int_equal(home, 5);
    /* Whatever the file, its first three chunks are on the three machines. */
    for (uint64_t ino = 0; ino < 12; ino++) {
        bool machine_used[4] = {false};
        for (uint64_t chunk = 0; chunk < 3; chunk++) {
            assert_int_equal(arrayhome_pick(nodes, 6, ino, chunk, &home), 0);
            uint32_t machine = nodes[home - 1].machine;
            assert_false(machine_used[machine]);
            machine_used[machine] = true;
        }
    }
}

static void test_down_nodes_skipped(void **state)
{
    (void)state;
    struct placement_node nodes[4] = {node_on(1, 1, 1), node_on(2, 1, 1), node_on(3, 2, 0),
                                      node_on(4, 3, 1)};
    uint32_t home;

    assert_int_equal(arrayhome_pick(nodes, 4, 0, 0, &home), 0);
    assert_int_equal(home, 1);
    assert_int_equal(arrayhome_pick(nodes, 4, 0, 1, &home), 0);
    assert_int_equal(home, 4); /* machine 2's only node is down */
    assert_int_equal(arrayhome_pick(nodes, 4, 0, 2, &home), 0);
    assert_int_equal(home, 2);
    for (size_t i = 0; i < 4; i++)
        nodes[i].up = 0;
    assert_int_equal(arrayhome_pick(nodes, 4, 0, 0, &home), -ENODEV);
}

static struct placement_node node_at_speed(uint32_t id, uint64_t mb_per_sec)
{
    struct placement_node node = node_on(id, id, 1);
    node.write_bytes_per_sec = mb_per_sec * 1000000;
    return node;
}

/* Slow: below a tenth of the median of the other up, measured nodes; nothing else is. */
static void test_slow_threshold(void **state)
{
    (void)state;
    struct placement_node nodes[5] = {node_at_speed(1, 9), node_at_speed(2, 100),
                                      node_at_speed(3, 98), node_at_speed(4, 102),
                                      node_at_speed(5, 1)};

    /* Peers of node 1: 1, 98, 100, 102: median 99, a tenth of it 9.9. */
    assert_true(arrayhome_slow(nodes, 5, 1));
    nodes[0].write_bytes_per_sec = 10 * 1000000;
    assert_false(arrayhome_slow(nodes, 5, 1));
    assert_true(arrayhome_slow(nodes, 5, 5));
    assert_false(arrayhome_slow(nodes, 5, 3));
    /* A down peer does not count: peers 98, 102 (median 100), and 9 is slow again. */
    nodes[0].write_bytes_per_sec = 9 * 1000000;
    nodes[1].up = 0;
    nodes[4].up = 0;
    assert_true(arrayhome_slow(nodes, 5, 1));
    /* Not measured: not slow; no measured peer: not slow. */
    nodes[0].write_bytes_per_sec = 0;
    assert_false(arrayhome_slow(nodes, 5, 1));
    nodes[0].write_bytes_per_sec = 1;
    nodes[2].write_bytes_per_sec = 0;
    nodes[3].write_bytes_per_sec = 0;
    assert_false(arrayhome_slow(nodes, 5, 1));
    assert_false(arrayhome_slow(nodes, 5, 99)); /* no such node */
}

/*
 * Meta's steady measure, when it has one, is what counts: a home whose
 * two-second measure dipped to a twentieth keeps its chunk while its
 * steady measure is at its peers'; a steady measure that fell is slow
 * whatever the last two seconds said; a node measured only by its
 * start-up probe is compared with no one.
 */
static void test_slow_judged_on_steady_measure(void **state)
{
    (void)state;
    struct placement_node nodes[4] = {node_at_speed(1, 5), node_at_speed(2, 100),
                                      node_at_speed(3, 98), node_at_speed(4, 102)};

    assert_true(arrayhome_slow(nodes, 4, 1)); /* no steady measure: the dip counts */
    for (int i = 0; i < 4; i++)
        nodes[i].steady_write_bytes_per_sec = 100 * 1000000ull;
    assert_false(arrayhome_slow(nodes, 4, 1));
    nodes[0].write_bytes_per_sec = 100 * 1000000ull;
    nodes[0].steady_write_bytes_per_sec = 9 * 1000000ull;
    assert_true(arrayhome_slow(nodes, 4, 1));
    /* A peer's dip does not make the home look fast or slow either. */
    nodes[0].steady_write_bytes_per_sec = 50 * 1000000ull;
    nodes[1].write_bytes_per_sec = 1;
    assert_false(arrayhome_slow(nodes, 4, 1));
    /* Measured by its start-up probe only: neither slow nor a peer. */
    nodes[0].steady_write_bytes_per_sec = PLACEMENT_SPEED_UNPROVEN;
    nodes[0].write_bytes_per_sec = 1;
    assert_false(arrayhome_slow(nodes, 4, 1));
    nodes[0].steady_write_bytes_per_sec = 100 * 1000000ull;
    nodes[1].steady_write_bytes_per_sec = 5 * 1000000ull;
    for (int i = 2; i < 4; i++)
        nodes[i].steady_write_bytes_per_sec = PLACEMENT_SPEED_UNPROVEN;
    assert_true(arrayhome_slow(nodes, 4, 2)); /* its one proven peer: node 1 */
    nodes[0].steady_write_bytes_per_sec = PLACEMENT_SPEED_UNPROVEN;
    assert_false(arrayhome_slow(nodes, 4, 2)); /* no proven peer */
}

/*
 * A 2x2 mesh of 16 tiles a chunk written whole, four machines, chunk c's
 * home node c + 1. Node 1 at `home_speed` MB/s, the others at 100. Counts
 * each node's tiles in holders[node][chunk].
 */
static void place_mesh(uint64_t home_speed, unsigned holders[5][4])
{
    struct arraylayout layout;
    struct placement_node nodes[4] = {node_at_speed(1, home_speed), node_at_speed(2, 100),
                                      node_at_speed(3, 100), node_at_speed(4, 100)};

    layout_from_text(&layout, "f32 1024x1024 BLOCK,BLOCK mesh=2x2 threshold=64K");
    assert_int_equal(arraylayout_tile_count(&layout), 64);
    memset(holders, 0, 5 * sizeof(*holders));
    for (uint64_t tile = 0; tile < 64; tile++) {
        uint32_t node;
        assert_int_equal(arrayhome_place(nodes, 4, &layout, 0, tile,
                                         arraylayout_tile_bytes(&layout, tile), &node),
                         0);
        assert_in_range(node, 1, 4);
        holders[node][tile / 16]++;
    }
    assert_int_equal(arrayhome_place(nodes, 4, &layout, 0, 64, 65536, &(uint32_t){0}), -EINVAL);
}

static void test_slow_home_spread(void **state)
{
    (void)state;
    unsigned holders[5][4];

    /* At 12 % of its peers node 1 keeps its chunk: every chunk on its home. */
    place_mesh(12, holders);
    for (uint32_t chunk = 0; chunk < 4; chunk++)
        assert_int_equal(holders[chunk + 1][chunk], 16);

    /*
     * At 5 %: chunk 0 goes by earliest finish, node 1 taking its share by
     * speed (5 of 305 MB/s: at most one tile), the rest spread over the
     * three others; their own chunks stay on them, and no node holds more
     * than its chunk and a third of chunk 0.
     */
    place_mesh(5, holders);
    assert_in_range(holders[1][0], 0, 1);
    for (uint32_t n = 2; n <= 4; n++) {
        unsigned total = 0;
        assert_in_range(holders[n][0], 4, 6);
        assert_int_equal(holders[n][n - 1], 16);
        for (uint32_t chunk = 0; chunk < 4; chunk++)
            total += holders[n][chunk];
        assert_true(total <= 16 + 6);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunk_of_tile),
        cmocka_unit_test(test_distinct_machines_then_nodes),
        cmocka_unit_test(test_down_nodes_skipped),
        cmocka_unit_test(test_slow_threshold),
        cmocka_unit_test(test_slow_judged_on_steady_measure),
        cmocka_unit_test(test_slow_home_spread),
    };
    return cmocka_run_group_tests_name("arrayhome", tests, NULL, NULL);
}
