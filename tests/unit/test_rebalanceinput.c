/*
 * @file test_rebalanceinput.c
 * The planner's input built from decoded meta records
 * (tools/rebalanceinput.c): nodes, profiles, tile maps with copies seen
 * from each machine, TILE_MAP ranges, and the steps of a real plan made
 * from it (librarian/plan.h), with each source's file version.
 */
#include "plan.h"
#include "arraylayout.h"
#include "rebalanceinput.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MIB (1u << 20)

struct state {
    struct rebalanceinput input;
};

static int setup(void **statep)
{
    struct state *state = calloc(1, sizeof(*state));
    assert_non_null(state);
    rebalanceinput_init(&state->input);
    /* Nodes 1, 2 on alpha and beta; node 3 on gamma is down. */
    struct toolmeta_node nodes[3] = {
        {.id = 1,
         .state = TS_NODE_UP,
         .free_bytes = 1ull << 40,
         .read_bytes_per_sec = 100000000,
         .write_bytes_per_sec = 100000000,
         .machine = "alpha",
         .address = "tcp://a:1"},
        {.id = 2,
         .state = TS_NODE_UP,
         .free_bytes = 1ull << 40,
         .read_bytes_per_sec = 100000000,
         .write_bytes_per_sec = 100000000,
         .machine = "beta",
         .address = "tcp://b:1"},
        {.id = 3,
         .state = TS_NODE_DOWN,
         .free_bytes = 1ull << 40,
         .machine = "gamma",
         .address = "tcp://c:1"},
    };
    assert_int_equal(rebalanceinput_set_nodes(&state->input, nodes, 3), 0);
    *statep = state;
    return 0;
}

static int teardown(void **statep)
{
    struct state *state = *statep;
    rebalanceinput_release(&state->input);
    free(state);
    return 0;
}

/* A throttle caps the disk speed the planner sees, measured or not. */
static void test_throttle_caps_disk_rates(void **statep)
{
    struct state *state = *statep;
    struct toolmeta_node nodes[3] = {
        {.id = 1, .state = TS_NODE_UP, .read_bytes_per_sec = 100000000,
         .write_bytes_per_sec = 80000000, .throttle_bytes_per_sec = 10000000},
        {.id = 2, .state = TS_NODE_UP, .throttle_bytes_per_sec = 20000000},
        {.id = 3, .state = TS_NODE_UP, .read_bytes_per_sec = 5000000,
         .write_bytes_per_sec = 6000000, .throttle_bytes_per_sec = 40000000},
    };
    struct plan_cluster cluster;
    struct plan_profile profile;
    struct plan_tilemap map;
    assert_int_equal(rebalanceinput_set_nodes(&state->input, nodes, 3), 0);
    rebalanceinput_views(&state->input, &cluster, &profile, &map);
    assert_int_equal(cluster.node_count, 3);
    assert_int_equal(cluster.nodes[0].read_bytes_per_sec, 10000000);
    assert_int_equal(cluster.nodes[0].write_bytes_per_sec, 10000000);
    assert_int_equal(cluster.nodes[1].read_bytes_per_sec, 20000000); /* not measured yet */
    assert_int_equal(cluster.nodes[2].read_bytes_per_sec, 5000000);  /* slower than its cap */
    assert_int_equal(cluster.nodes[2].write_bytes_per_sec, 6000000);
}

static struct ts_attr file_attr(uint64_t ino, uint64_t size)
{
    struct ts_attr attr = {
        .ino = ino, .mode = 0100644, .size = size, .tile_bytes = MIB, .copies = 1};
    return attr;
}

static struct toolmeta_access access_of(uint64_t tile, const char *machine, uint64_t reads)
{
    struct toolmeta_access access = {.tile = tile, .reads = reads, .bytes_read = reads * MIB};
    strcpy(access.machine, machine);
    return access;
}

static void test_nodes(void **statep)
{
    struct state *state = *statep;
    struct rebalanceinput *input = &state->input;
    assert_int_equal(input->node_count, 3);
    assert_int_equal(input->nodes[0].id, 1);
    assert_string_equal(input->nodes[1].machine, "beta");
    assert_true(input->nodes[1].up);
    assert_false(input->nodes[2].up);
    assert_string_equal(rebalanceinput_node_machine(input, 2), "beta");
    assert_string_equal(rebalanceinput_node_machine(input, 9), "?");
}

static void test_ranges_cover_profiled_tiles_only(void **statep)
{
    struct state *state = *statep;
    struct rebalanceinput *input = &state->input;
    /* A 20000-tile file profiled at tiles 5, 6, 7000 and 19999, and at 25000 (past its end). */
    struct toolmeta_access records[] = {
        access_of(7000, "alpha", 1), access_of(5, "alpha", 1),    access_of(6, "beta", 1),
        access_of(19999, "beta", 1), access_of(25000, "beta", 1), access_of(5, "beta", 1),
    };
    struct ts_attr attr = file_attr(40, 20000ull * MIB - 10);
    struct rebalanceinput_range *ranges = NULL;
    size_t index, count;

    assert_int_equal(rebalanceinput_add_file(input, "/m/f", &attr, records, 6, &index), 0);
    assert_int_equal(input->files[index].profiled_count, 5);
    assert_int_equal(rebalanceinput_ranges(input, index, &ranges, &count), 0);
    assert_int_equal(count, 3);
    assert_int_equal(ranges[0].first, 5);
    assert_int_equal(ranges[0].count, 2);
    assert_int_equal(ranges[1].first, 7000);
    assert_int_equal(ranges[1].count, 1);
    assert_int_equal(ranges[2].first, 19999);
    assert_int_equal(ranges[2].count, 1);
    free(ranges);
    /* Every record enters the profile; the planner ignores tiles not in the map. */
    assert_int_equal(input->access_count, 6);
    /* A second name of the same inode is not counted twice. */
    assert_int_equal(rebalanceinput_add_file(input, "/m/link", &attr, records, 6, &index), -EEXIST);
    assert_non_null(rebalanceinput_file_of(input, 40));
    assert_null(rebalanceinput_file_of(input, 41));
}

static void test_tiles_holes_sizes_and_copies(void **statep)
{
    struct state *state = *statep;
    struct rebalanceinput *input = &state->input;
    struct toolmeta_access records[] = {
        access_of(0, "alpha", 1),
        access_of(1, "beta", 2),
        access_of(2, "beta", 1),
        access_of(3, "beta", 1),
    };
    /* 3.5 tiles: tile 3 holds half a MiB; tile 2 is a hole. */
    struct ts_attr attr = file_attr(50, 3 * MIB + MIB / 2);
    struct ts_tile_map_rec primaries[4] = {
        {.node = 1, .version = 7, .read_node = 1, .read_version = 7},
        {.node = 1, .version = 8, .holders = 2, .read_node = 1, .read_version = 8},
        {.node = 0},
        {.node = 2, .version = 9, .read_node = 2, .read_version = 9},
    };
    /* TILE_HOLDERS of the range: tile 1 has a replica on node 2 (file version 12). */
    struct toolmeta_holder holders[] = {
        {.tile = 0, .node = 1, .version = 7, .kind = TS_HOLDER_PRIMARY},
        {.tile = 1, .node = 1, .version = 8, .kind = TS_HOLDER_PRIMARY},
        {.tile = 1, .node = 2, .version = 12, .kind = TS_HOLDER_COPY},
        {.tile = 3, .node = 2, .version = 9, .kind = TS_HOLDER_PRIMARY},
        /* Two more replicas of tile 3: every holder counts, whatever machine it is on. */
        {.tile = 3, .node = 3, .version = 30, .kind = TS_HOLDER_COPY},
        {.tile = 3, .node = 1, .version = 31, .kind = TS_HOLDER_COPY},
        /* Not in the map (a hole, a tile past the profile): ignored. */
        {.tile = 2, .node = 3, .version = 40, .kind = TS_HOLDER_PRIMARY},
        {.tile = 9, .node = 3, .version = 41, .kind = TS_HOLDER_PRIMARY},
    };
    size_t index;
    bool has_copies = false;

    assert_int_equal(rebalanceinput_add_file(input, "/m/g", &attr, records, 4, &index), 0);
    assert_int_equal(rebalanceinput_add_tiles(input, index, 0, primaries, 4, &has_copies), 0);
    assert_true(has_copies);
    size_t holder_count = sizeof(holders) / sizeof(holders[0]);
    assert_int_equal(rebalanceinput_add_holders(input, index, holders, holder_count), 0);
    assert_int_equal(rebalanceinput_add_holders(input, index, holders, holder_count),
                     0); /* again */
    assert_int_equal(input->tile_count, 3);
    const struct plan_tile *tiles = input->tiles;
    assert_int_equal(tiles[0].tile, 0);
    assert_int_equal(tiles[0].tile_bytes, MIB);
    assert_int_equal(tiles[0].node_count, 1);
    assert_int_equal(tiles[1].tile, 1);
    assert_int_equal(tiles[1].node_count, 2);
    assert_int_equal(tiles[1].nodes[0], 1);
    assert_int_equal(tiles[1].nodes[1], 2);
    assert_int_equal(tiles[1].version, 8);
    assert_int_equal(input->holder_versions[1][1], 12);
    assert_int_equal(tiles[2].tile, 3);
    assert_int_equal(tiles[2].tile_bytes, MIB / 2);
    assert_int_equal(tiles[2].min_copies, 1);
    assert_int_equal(tiles[2].node_count, 3);
    assert_int_equal(tiles[2].nodes[0], 2);
    assert_int_equal(tiles[2].nodes[1], 3);
    assert_int_equal(tiles[2].nodes[2], 1);
    assert_int_equal(input->holder_versions[2][0], 9);
    assert_int_equal(input->holder_versions[2][1], 30);
    assert_int_equal(input->holder_versions[2][2], 31);

    struct plan_cluster cluster;
    struct plan_profile profile;
    struct plan_tilemap map;
    rebalanceinput_views(input, &cluster, &profile, &map);
    assert_int_equal(cluster.node_count, 3);
    assert_int_equal(profile.count, 4);
    assert_int_equal(map.count, 3);
    /* Machine names are interned: equal names, one pointer. */
    assert_ptr_equal(profile.accesses[1].machine, cluster.nodes[1].machine);
}

static void test_plan_steps_name_the_source_version(void **statep)
{
    struct state *state = *statep;
    struct rebalanceinput *input = &state->input;
    /* Tile 0 is read by beta only, but lives on alpha's node 1. Tile 1 is
     * read by alpha only and held by node 1 with a copy on node 2. */
    struct toolmeta_access records[] = {access_of(0, "beta", 5), access_of(1, "alpha", 5)};
    struct ts_attr attr = file_attr(60, 2 * MIB);
    struct ts_tile_map_rec primaries[2] = {
        {.node = 1, .version = 3, .read_node = 1, .read_version = 3},
        {.node = 1, .version = 4, .holders = 2, .read_node = 1, .read_version = 4},
    };
    struct toolmeta_holder holders[] = {
        {.tile = 0, .node = 1, .version = 3, .kind = TS_HOLDER_PRIMARY},
        {.tile = 1, .node = 1, .version = 4, .kind = TS_HOLDER_PRIMARY},
        {.tile = 1, .node = 2, .version = 21, .kind = TS_HOLDER_COPY},
    };
    size_t index, count = 0;
    bool has_copies = false;
    struct plan plan = {0};
    struct relocate_step *steps = NULL;
    struct plan_cluster cluster;
    struct plan_profile profile;
    struct plan_tilemap map;

    assert_int_equal(rebalanceinput_add_file(input, "/m/h", &attr, records, 2, &index), 0);
    assert_int_equal(rebalanceinput_add_tiles(input, index, 0, primaries, 2, &has_copies), 0);
    assert_int_equal(rebalanceinput_add_holders(input, index, holders, 3), 0);
    rebalanceinput_views(input, &cluster, &profile, &map);
    assert_int_equal(plan_make(PLAN_FREQUENT, &cluster, &profile, &map, NULL, &plan), 0);
    assert_int_equal(rebalanceinput_steps(input, &plan, &steps, &count), 0);
    assert_int_equal(count, plan.action_count);
    assert_int_equal(count, 2);
    /* Tile 0 moves from node 1 to beta's node 2. */
    assert_int_equal(steps[0].kind, PLAN_MOVE);
    assert_int_equal(steps[0].tile, 0);
    assert_int_equal(steps[0].from_node, 1);
    assert_int_equal(steps[0].to_node, 2);
    assert_int_equal(steps[0].version, 3);
    assert_int_equal(steps[0].tile_bytes, MIB);
    /* Tile 1's copy on node 2 is of no use to anyone: dropped, naming its own file. */
    assert_int_equal(steps[1].kind, PLAN_DROP);
    assert_int_equal(steps[1].tile, 1);
    assert_int_equal(steps[1].from_node, 2);
    assert_int_equal(steps[1].version, 21);
    assert_int_equal(steps[1].to_node, 0);
    free(steps);
    plan_release(&plan);
}

static void test_empty_input_plans_nothing(void **statep)
{
    struct state *state = *statep;
    struct plan plan = {0};
    struct relocate_step *steps = NULL;
    size_t count = 1;
    struct plan_cluster cluster;
    struct plan_profile profile;
    struct plan_tilemap map;

    rebalanceinput_views(&state->input, &cluster, &profile, &map);
    assert_int_equal(plan_make(PLAN_BALANCED, &cluster, &profile, &map, NULL, &plan), 0);
    assert_int_equal(plan.action_count, 0);
    assert_int_equal(rebalanceinput_steps(&state->input, &plan, &steps, &count), 0);
    assert_int_equal(count, 0);
    assert_null(steps);
    plan_release(&plan);
}

static void test_many_files_are_found(void **statep)
{
    struct state *state = *statep;
    struct rebalanceinput *input = &state->input;
    for (uint64_t ino = 100; ino < 1100; ino++) {
        struct ts_attr attr = file_attr(ino, MIB);
        size_t index;
        assert_int_equal(rebalanceinput_add_file(input, "/m/x", &attr, NULL, 0, &index), 0);
        assert_int_equal(index, ino - 100);
    }
    for (uint64_t ino = 100; ino < 1100; ino++)
        assert_int_equal(rebalanceinput_file_of(input, ino)->ino, ino);
    assert_null(rebalanceinput_file_of(input, 99));
}

/* Array files' layouts reach the planner's options; a bad layout text is refused. */
static void test_array_layouts_reach_options(void **statep)
{
    struct state *state = *statep;
    struct rebalanceinput *input = &state->input;
    struct plan_options options = {0};
    size_t index;

    for (uint64_t ino = 40; ino < 43; ino++) {
        struct ts_attr attr = file_attr(ino, MIB);
        attr.flags = ino == 41 ? 0 : TS_ATTR_ARRAY;
        assert_int_equal(rebalanceinput_add_file(input, "/m/a", &attr, NULL, 0, &index), 0);
    }
    assert_int_equal(rebalanceinput_set_array(input, 0, "f32 1024x1024 BLOCK,BLOCK mesh=2x2"), 0);
    assert_int_equal(rebalanceinput_set_array(input, 2, "f32 1024x1024 BLOCK,BLOCK mesh=4x"),
                     -EINVAL);
    assert_int_equal(rebalanceinput_set_array(input, 2, "f64 64 BLOCK mesh=2"), 0);
    /* A second layout for one file is a caller's bug. */
    assert_int_equal(rebalanceinput_set_array(input, 2, "f64 64 BLOCK mesh=2"), -EINVAL);
    rebalanceinput_array_options(input, &options);
    assert_int_equal(options.array_count, 2);
    assert_int_equal(options.arrays[0].ino, 40);
    assert_ptr_equal(options.arrays[0].layout, rebalanceinput_file_of(input, 40)->layout);
    assert_int_equal(options.arrays[0].layout->spec.ndims, 2);
    assert_int_equal(options.arrays[1].ino, 42);
    assert_int_equal(options.arrays[1].layout->spec.ndims, 1);
    assert_null(rebalanceinput_file_of(input, 41)->layout);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_throttle_caps_disk_rates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ranges_cover_profiled_tiles_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tiles_holes_sizes_and_copies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plan_steps_name_the_source_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_input_plans_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_files_are_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_array_layouts_reach_options, setup, teardown),
    };
    return cmocka_run_group_tests_name("rebalanceinput", tests, NULL, NULL);
}
