/*
 * @file test_plan_lbm.c
 * Unit tests of the `lbm` rebalancing policy (librarian/plan_lbm.c): the
 * paper's example (seed 003, W = [[7,11,0,0],[3,7,4,4]]) as one file of
 * two tile groups on four machines, clients without a datanode, tile
 * groups, a two-subcluster topology with its link loads, and the errors;
 * an array file's roles are its mesh's disk chunks.
 */
#include "arrayhome.h"
#include "arraylayout.h"
#include "arrayspec.h"
#include "plan.h"
#include "plan_lbm.h"
#include "plan_work.h"
#include "topology.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define GIB (1ull << 30)

static const char *const machines[] = {"p1", "p2", "p3", "p4"};

static struct plan_node node_of(uint32_t id, const char *machine)
{
    return (struct plan_node){.id = id,
                              .machine = machine,
                              .up = 1,
                              .read_bytes_per_sec = 100000000,
                              .write_bytes_per_sec = 100000000,
                              .free_bytes = 64 * GIB};
}

static struct plan_tile tile_on(uint64_t tile, uint32_t node)
{
    return (struct plan_tile){
        .ino = 7, .tile = tile, .version = 1, .tile_bytes = 4096, .node_count = 1, .nodes = {node}};
}

static struct plan_access read_of(uint64_t tile, const char *machine, uint64_t bytes)
{
    return (struct plan_access){
        .ino = 7, .tile = tile, .machine = machine, .reads = 1, .bytes_read = bytes};
}

/*
 * The paper's W as file 7: tiles 0-1 the first role (I1), tile 2 the
 * second (I2), groups = 2 over a span of 3 tiles. Every tile starts on
 * p4's datanode (id 4).
 */
struct example {
    struct plan_node nodes[4];
    struct plan_access accesses[6];
    struct plan_tile tiles[3];
    struct plan_cluster cluster;
    struct plan_profile profile;
    struct plan_tilemap map;
};

static void example_build(struct example *e)
{
    for (uint32_t n = 0; n < 4; n++)
        e->nodes[n] = node_of(n + 1, machines[n]);
    e->accesses[0] = read_of(0, "p1", 7);
    e->accesses[1] = read_of(1, "p2", 11);
    e->accesses[2] = read_of(2, "p1", 3);
    e->accesses[3] = read_of(2, "p2", 7);
    e->accesses[4] = read_of(2, "p3", 4);
    e->accesses[5] = read_of(2, "p4", 4);
    for (uint64_t t = 0; t < 3; t++)
        e->tiles[t] = tile_on(t, 4);
    e->cluster = (struct plan_cluster){e->nodes, 4, 0};
    e->profile = (struct plan_profile){e->accesses, 6};
    e->map = (struct plan_tilemap){e->tiles, 3};
}

/* The primary each tile ends on (its map entry if unchanged). */
static uint32_t primary_after(const struct plan *plan, const struct example *e, uint64_t tile)
{
    for (size_t k = 0; k < plan->changed_count; k++) {
        if (plan->changed[k].tile == tile)
            return plan->changed[k].nodes[0];
    }
    return e->tiles[tile].nodes[0];
}

static void test_paper_example_roles(void **state)
{
    (void)state;
    struct example e;
    struct plan_options options = {.groups = 2};
    struct plan_work work;
    struct plan_lbm_assignment assignment;

    example_build(&e);
    assert_int_equal(plan_work_build(&e.cluster, &e.profile, &e.map, &options, &work), 0);
    assert_int_equal(plan_lbm_assign(&work, &options, &assignment), 0);
    assert_int_equal(assignment.role_count, 2);
    assert_null(assignment.link_down_bytes);
    /* I1 <- P1 and I2 <- P2: 11 remote bytes each, not 7 and 14. */
    assert_string_equal(assignment.roles[0].machine, "p1");
    assert_int_equal(assignment.roles[0].first_tile, 0);
    assert_int_equal(assignment.roles[0].last_tile, 1);
    assert_int_equal(assignment.roles[0].bytes, 18);
    assert_int_equal(assignment.roles[0].remote_bytes, 11);
    assert_string_equal(assignment.roles[1].machine, "p2");
    assert_int_equal(assignment.roles[1].first_tile, 2);
    assert_int_equal(assignment.roles[1].last_tile, 2);
    assert_int_equal(assignment.roles[1].remote_bytes, 11);
    plan_lbm_assignment_release(&assignment);
    plan_work_release(&work);
}

/* Through plan_make(): the tiles of each role move to its machine's datanode. */
static void test_paper_example_plan(void **state)
{
    (void)state;
    struct example e;
    struct plan_options options = {.groups = 2};
    struct plan plan;
    enum plan_policy policy;

    example_build(&e);
    assert_int_equal(plan_policy_parse("lbm", &policy), 0);
    assert_int_equal(policy, PLAN_LBM);
    assert_string_equal(plan_policy_name(PLAN_LBM), "lbm");
    assert_int_equal(plan_make(policy, &e.cluster, &e.profile, &e.map, &options, &plan), 0);
    assert_int_equal(plan.basis, PLAN_BASIS_LBM);
    assert_int_equal(primary_after(&plan, &e, 0), 1);
    assert_int_equal(primary_after(&plan, &e, 1), 1);
    assert_int_equal(primary_after(&plan, &e, 2), 2);
    assert_int_equal(plan.changed_count, 3);
    for (size_t k = 0; k < plan.action_count; k++)
        assert_int_equal(plan.actions[k].kind, PLAN_MOVE);
    plan_release(&plan);
}

/* groups = 0: one role per serving machine; a file of 8 tiles in 4 groups of 2. */
static void test_default_groups_one_per_machine(void **state)
{
    (void)state;
    struct plan_node nodes[4];
    struct plan_access accesses[8];
    struct plan_tile tiles[8];
    struct plan_work work;
    struct plan_lbm_assignment assignment;
    bool used[4] = {false};

    for (uint32_t n = 0; n < 4; n++)
        nodes[n] = node_of(n + 1, machines[n]);
    /* Machine t/2 reads tiles 2(t/2) and 2(t/2)+1: each group has one reader. */
    for (uint64_t t = 0; t < 8; t++) {
        accesses[t] = read_of(t, machines[t / 2], 100);
        tiles[t] = tile_on(t, 1);
    }
    struct plan_cluster cluster = {nodes, 4, 0};
    struct plan_profile profile = {accesses, 8};
    struct plan_tilemap map = {tiles, 8};
    assert_int_equal(plan_work_build(&cluster, &profile, &map, NULL, &work), 0);
    assert_int_equal(plan_lbm_assign(&work, NULL, &assignment), 0);
    assert_int_equal(assignment.role_count, 4);
    for (size_t r = 0; r < 4; r++) {
        assert_int_equal(assignment.roles[r].first_tile, 2 * r);
        assert_int_equal(assignment.roles[r].last_tile, 2 * r + 1);
        assert_string_equal(assignment.roles[r].machine, machines[r]);
        assert_int_equal(assignment.roles[r].remote_bytes, 0);
        assert_false(used[r]);
        used[r] = true;
    }
    plan_lbm_assignment_release(&assignment);
    plan_work_release(&work);
}

/*
 * A client without a datanode reads most: it never serves, and its bytes
 * stay remote. Two groups asked for, one datanode machine: one role.
 */
static void test_client_never_serves(void **state)
{
    (void)state;
    struct plan_node nodes[1] = {node_of(1, "server")};
    struct plan_access accesses[3] = {
        {.ino = 7, .tile = 0, .machine = "client", .reads = 9, .bytes_read = 900},
        {.ino = 7, .tile = 1, .machine = "server", .reads = 1, .bytes_read = 100},
        {.ino = 7, .tile = 1, .machine = "client", .reads = 1, .bytes_read = 50},
    };
    struct plan_tile tiles[2] = {tile_on(0, 1), tile_on(1, 1)};
    struct plan_cluster cluster = {nodes, 1, 0};
    struct plan_profile profile = {accesses, 3};
    struct plan_tilemap map = {tiles, 2};
    struct plan_options options = {.groups = 2};
    struct plan_work work;
    struct plan_lbm_assignment assignment;

    assert_int_equal(plan_work_build(&cluster, &profile, &map, &options, &work), 0);
    assert_int_equal(plan_lbm_assign(&work, &options, &assignment), 0);
    assert_int_equal(assignment.role_count, 1);
    assert_string_equal(assignment.roles[0].machine, "server");
    assert_int_equal(assignment.roles[0].remote_bytes, 950);
    plan_lbm_assignment_release(&assignment);
    plan_work_release(&work);
}

/*
 * Two subclusters: root "left" (p1, p2) and "right" (p3, p4) below it.
 * The role read mostly from the right goes to the right; the link's loads
 * are equations 1 and 2 over the final assignment.
 */
static void test_topology_links(void **state)
{
    (void)state;
    struct example e;
    struct topology topology;
    char error[128];
    struct plan_options options = {.groups = 2};
    struct plan_work work;
    struct plan_lbm_assignment assignment;
    size_t right;

    example_build(&e);
    /* Role 1 (tile 2) is now read 1, 1 from the left and 40, 40 from the right. */
    e.accesses[2].bytes_read = 1;
    e.accesses[3].bytes_read = 1;
    e.accesses[4].bytes_read = 40;
    e.accesses[5].bytes_read = 40;
    assert_int_equal(topology_parse("subcluster left\nsubcluster right parent left link 1G\n"
                                    "machine p1 left\nmachine p2 left\n"
                                    "machine p3 right\nmachine p4 right\n",
                                    &topology, error, sizeof(error)),
                     0);
    assert_int_equal(topology_subcluster_index(&topology, "right", &right), 0);
    options.topology = &topology;
    assert_int_equal(plan_work_build(&e.cluster, &e.profile, &e.map, &options, &work), 0);
    assert_int_equal(plan_lbm_assign(&work, &options, &assignment), 0);
    assert_int_equal(assignment.role_count, 2);
    assert_int_equal(assignment.subcluster_count, 2);
    /* Role 0 (read 7 and 11 on the left) stays left, role 1 goes right. */
    assert_int_equal(assignment.roles[0].subcluster, 0);
    assert_int_equal(assignment.roles[1].subcluster, right);
    /* Down the link: the right reads nothing of role 0; up: the left reads 2 of role 1. */
    assert_int_equal(assignment.link_down_bytes[right], 0);
    assert_int_equal(assignment.link_up_bytes[right], 2);
    assert_int_equal(assignment.link_down_bytes[0], 0);
    plan_lbm_assignment_release(&assignment);
    plan_work_release(&work);
    /* plan_lbm_place() builds the work itself: the same roles. */
    assert_int_equal(plan_lbm_place(&e.cluster, &e.profile, &e.map, &options, &assignment), 0);
    assert_int_equal(assignment.role_count, 2);
    assert_string_equal(assignment.roles[1].machine, "p3");
    assert_int_equal(assignment.link_up_bytes[right], 2);
    plan_lbm_assignment_release(&assignment);

    /* A machine the topology does not list is refused. */
    e.nodes[3].machine = "p5";
    e.accesses[5].machine = "p5";
    assert_int_equal(plan_work_build(&e.cluster, &e.profile, &e.map, &options, &work), 0);
    assert_int_equal(plan_lbm_assign(&work, &options, &assignment), -EINVAL);
    assert_int_equal(assignment.role_count, 0);
    plan_work_release(&work);
    topology_release(&topology);
}

/*
 * 33x1024 f32 rows over mesh=4 with 8 KiB tiles: chunks of 5, 5, 5 and 6
 * tiles (tiles 0-4, 5-9, 10-14, 15-20), so --groups 4 (runs of 6) would
 * cut across them. Each tile starts on p1's node.
 */
struct array_example {
    struct arraylayout layout;
    struct plan_node nodes[4];
    struct plan_access accesses[42];
    struct plan_tile tiles[21];
    struct plan_cluster cluster;
    struct plan_profile profile;
    struct plan_tilemap map;
    struct plan_array_file array;
};

/* Machine reader(chunk) reads 100 bytes of every tile of the chunk; machine chunk % n reads 10. */
static void array_example_build(struct array_example *e, size_t node_count,
                                size_t (*reader)(uint64_t chunk))
{
    const char *text = "f32 33x1024 BLOCK,* mesh=4 threshold=8K";
    struct arrayspec spec;
    char message[ARRAYSPEC_MESSAGE_MAX];
    size_t count = 0;

    assert_int_equal(arrayspec_parse(text, strlen(text), &spec, message, sizeof(message)), 0);
    assert_int_equal(arraylayout_init(&e->layout, &spec, message, sizeof(message)), 0);
    assert_int_equal(arraylayout_tile_count(&e->layout), 21);
    for (uint32_t n = 0; n < node_count; n++)
        e->nodes[n] = node_of(n + 1, machines[n]);
    for (uint64_t t = 0; t < 21; t++) {
        uint64_t chunk;
        assert_int_equal(arrayhome_chunk_of(&e->layout, t, &chunk), 0);
        e->accesses[count++] = read_of(t, machines[reader(chunk)], 100);
        e->accesses[count++] = read_of(t, machines[chunk % node_count], 10);
        e->tiles[t] = tile_on(t, 1);
    }
    e->cluster = (struct plan_cluster){e->nodes, node_count, 0};
    e->profile = (struct plan_profile){e->accesses, count};
    e->map = (struct plan_tilemap){e->tiles, 21};
    e->array = (struct plan_array_file){.ino = 7, .layout = &e->layout};
}

static size_t next_machine_reads(uint64_t chunk)
{
    return (size_t)(chunk + 1) % 4;
}

/*
 * Chunk c is read mostly by machine c + 1 (mod 4): the roles are the four
 * chunks, with their own tile bounds (not --groups' runs of 6), each on
 * its reader's machine, 10 bytes a tile remote; the plan moves every
 * tile of chunk c to machine c + 1's node.
 */
static void test_array_roles_are_chunks(void **state)
{
    (void)state;
    static const uint64_t first[4] = {0, 5, 10, 15}, last[4] = {4, 9, 14, 20};
    struct array_example e;
    struct plan_options options = {.groups = 4, .array_count = 1};
    struct plan_work work;
    struct plan_lbm_assignment assignment;
    struct plan plan;

    array_example_build(&e, 4, next_machine_reads);
    options.arrays = &e.array;
    assert_int_equal(plan_work_build(&e.cluster, &e.profile, &e.map, &options, &work), 0);
    assert_int_equal(plan_lbm_assign(&work, &options, &assignment), 0);
    assert_int_equal(assignment.role_count, 4);
    for (size_t r = 0; r < 4; r++) {
        assert_int_equal(assignment.roles[r].first_tile, first[r]);
        assert_int_equal(assignment.roles[r].last_tile, last[r]);
        assert_string_equal(assignment.roles[r].machine, machines[(r + 1) % 4]);
        assert_int_equal(assignment.roles[r].remote_bytes, 10 * (last[r] - first[r] + 1));
    }
    plan_lbm_assignment_release(&assignment);
    plan_work_release(&work);

    /* The same file named linear: --groups 4 cuts runs of 6 tiles instead. */
    options.array_count = 0;
    assert_int_equal(plan_lbm_place(&e.cluster, &e.profile, &e.map, &options, &assignment), 0);
    assert_int_equal(assignment.role_count, 4);
    assert_int_equal(assignment.roles[0].last_tile, 5);
    plan_lbm_assignment_release(&assignment);

    options.array_count = 1;
    assert_int_equal(plan_make(PLAN_LBM, &e.cluster, &e.profile, &e.map, &options, &plan), 0);
    for (uint64_t t = 0; t < 21; t++) {
        uint64_t chunk;
        uint32_t primary = e.tiles[t].nodes[0];
        assert_int_equal(arrayhome_chunk_of(&e.layout, t, &chunk), 0);
        for (size_t k = 0; k < plan.changed_count; k++) {
            if (plan.changed[k].tile == t)
                primary = plan.changed[k].nodes[0];
        }
        assert_int_equal(primary, (chunk + 1) % 4 + 1);
    }
    plan_release(&plan);
}

static size_t halves_read_crosswise(uint64_t chunk)
{
    return chunk < 2 ? 1 : 0;
}

/*
 * Four chunks, two machines that can serve: each role is two whole
 * chunks (tiles 0-9 and 10-20), chunks 0-1 read by p2 and 2-3 by p1.
 */
static void test_array_more_chunks_than_machines(void **state)
{
    (void)state;
    struct array_example e;
    struct plan_options options = {.array_count = 1};
    struct plan_lbm_assignment assignment;

    array_example_build(&e, 2, halves_read_crosswise);
    options.arrays = &e.array;
    assert_int_equal(plan_lbm_place(&e.cluster, &e.profile, &e.map, &options, &assignment), 0);
    assert_int_equal(assignment.role_count, 2);
    assert_int_equal(assignment.roles[0].first_tile, 0);
    assert_int_equal(assignment.roles[0].last_tile, 9);
    assert_string_equal(assignment.roles[0].machine, "p2");
    assert_int_equal(assignment.roles[1].first_tile, 10);
    assert_int_equal(assignment.roles[1].last_tile, 20);
    assert_string_equal(assignment.roles[1].machine, "p1");
    plan_lbm_assignment_release(&assignment);
}

/* A profiled tile the array does not have is refused, not placed by guess. */
static void test_array_tile_outside_layout(void **state)
{
    (void)state;
    struct array_example e;
    struct plan_options options = {.array_count = 1};
    struct plan_lbm_assignment assignment;

    array_example_build(&e, 4, next_machine_reads);
    options.arrays = &e.array;
    e.tiles[20].tile = 21;
    e.accesses[40].tile = 21;
    e.accesses[41].tile = 21;
    assert_int_equal(plan_lbm_place(&e.cluster, &e.profile, &e.map, &options, &assignment),
                     -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paper_example_roles),
        cmocka_unit_test(test_paper_example_plan),
        cmocka_unit_test(test_default_groups_one_per_machine),
        cmocka_unit_test(test_client_never_serves),
        cmocka_unit_test(test_topology_links),
        cmocka_unit_test(test_array_roles_are_chunks),
        cmocka_unit_test(test_array_more_chunks_than_machines),
        cmocka_unit_test(test_array_tile_outside_layout),
    };
    return cmocka_run_group_tests_name("plan_lbm", tests, NULL, NULL);
}
