/*
 * Unit tests of tile arithmetic (common/tile.c) and round-robin placement
 * (librarian/placement.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "placement.h"
#include "tile.h"

#define MIB (1u << 20)

static void test_walk_within_one_tile(void **state)
{
    (void)state;
    struct tile_walk walk;
    struct tile_segment segment;
    tile_walk_init(&walk, 100, 50, MIB);
    assert_true(tile_walk_next(&walk, &segment));
    assert_int_equal(segment.tile, 0);
    assert_int_equal(segment.tile_offset, 100);
    assert_int_equal(segment.length, 50);
    assert_int_equal(segment.file_offset, 100);
    assert_false(tile_walk_next(&walk, &segment));
}

static void test_walk_across_tiles(void **state)
{
    (void)state;
    struct tile_walk walk;
    struct tile_segment segment;
    /* from 1 byte before tile 1 to 3 bytes into tile 3 */
    tile_walk_init(&walk, MIB - 1, 2 * MIB + 4, MIB);
    assert_true(tile_walk_next(&walk, &segment));
    assert_int_equal(segment.tile, 0);
    assert_int_equal(segment.tile_offset, MIB - 1);
    assert_int_equal(segment.length, 1);
    assert_true(tile_walk_next(&walk, &segment));
    assert_int_equal(segment.tile, 1);
    assert_int_equal(segment.tile_offset, 0);
    assert_int_equal(segment.length, MIB);
    assert_true(tile_walk_next(&walk, &segment));
    assert_int_equal(segment.tile, 2);
    assert_int_equal(segment.length, MIB);
    assert_true(tile_walk_next(&walk, &segment));
    assert_int_equal(segment.tile, 3);
    assert_int_equal(segment.length, 3);
    assert_int_equal(segment.file_offset, 3ull * MIB);
    assert_false(tile_walk_next(&walk, &segment));
}

static void test_walk_beyond_4gib_and_empty(void **state)
{
    (void)state;
    struct tile_walk walk;
    struct tile_segment segment;
    uint64_t offset = (5ull << 30) + 3;
    tile_walk_init(&walk, offset, 10, MIB);
    assert_true(tile_walk_next(&walk, &segment));
    assert_int_equal(segment.tile, 5120);
    assert_int_equal(segment.tile_offset, 3);
    assert_false(tile_walk_next(&walk, &segment));

    tile_walk_init(&walk, 7, 0, MIB);
    assert_false(tile_walk_next(&walk, &segment));
    /* a range reaching past 2^64 saturates instead of wrapping */
    tile_walk_init(&walk, UINT64_MAX - 1, 100, MIB);
    assert_true(tile_walk_next(&walk, &segment));
    assert_int_equal(segment.length, 1);
}

static void test_counts(void **state)
{
    (void)state;
    assert_int_equal(tile_count_for(0, MIB), 0);
    assert_int_equal(tile_count_for(1, MIB), 1);
    assert_int_equal(tile_count_for(MIB, MIB), 1);
    assert_int_equal(tile_count_for(MIB + 1, MIB), 2);
    assert_int_equal(tile_index_of(MIB, MIB), 1);
    assert_int_equal(tile_bytes_below(0, 100, MIB), 100);
    assert_int_equal(tile_bytes_below(1, 100, MIB), 0);
    assert_int_equal(tile_bytes_below(0, 3 * MIB, MIB), MIB);
    assert_int_equal(tile_bytes_below(2, 2 * MIB + 5, MIB), 5);
}

static void test_roundrobin_spreads_evenly(void **state)
{
    (void)state;
    struct placement_node nodes[4] = {{1, 1, 1ull << 30, 0, 0, 1, 0},
                                      {2, 1, 1ull << 30, 0, 0, 2, 0},
                                      {3, 1, 1ull << 30, 0, 0, 3, 0},
                                      {4, 1, 1ull << 30, 0, 0, 4, 0}};
    uint32_t out[200];
    int per_node[5] = {0};
    assert_int_equal(placement_choose(PLACEMENT_ROUNDROBIN, nodes, 4, 7, 0, MIB, 200, out), 0);
    for (int i = 0; i < 200; i++)
        per_node[out[i]]++;
    for (int id = 1; id <= 4; id++)
        assert_int_equal(per_node[id], 50);
    /* consecutive tiles go to different nodes */
    for (int i = 1; i < 200; i++)
        assert_int_not_equal(out[i], out[i - 1]);
}

static void test_roundrobin_skips_down_and_full(void **state)
{
    (void)state;
    struct placement_node nodes[3] = {
        {1, 0, 1ull << 30, 0, 0, 1, 0}, {2, 1, 100, 0, 0, 2, 0}, {3, 1, 1ull << 30, 0, 0, 3, 0}};
    uint32_t out[10];
    assert_int_equal(placement_choose(PLACEMENT_ROUNDROBIN, nodes, 3, 1, 0, MIB, 10, out), 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(out[i], 3);

    nodes[2].free_bytes = 0;
    assert_int_equal(placement_choose(PLACEMENT_ROUNDROBIN, nodes, 3, 1, 0, MIB, 1, out),
                     -ENOSPC);
    nodes[1].up = 0;
    nodes[2].up = 0;
    assert_int_equal(placement_choose(PLACEMENT_ROUNDROBIN, nodes, 3, 1, 0, MIB, 1, out),
                     -ENODEV);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_within_one_tile),
        cmocka_unit_test(test_walk_across_tiles),
        cmocka_unit_test(test_walk_beyond_4gib_and_empty),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_roundrobin_spreads_evenly),
        cmocka_unit_test(test_roundrobin_skips_down_and_full),
    };
    return cmocka_run_group_tests_name("tile", tests, NULL, NULL);
}
