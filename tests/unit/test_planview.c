/*
 * @file test_planview.c
 * What `tessera rebalance plan` prints (tools/planview.c) for a plan made
 * by the real planner from fixed records: steps grouped by file, the
 * per-datanode busy times and makespans, as text and as JSON.
 */
#include "plan.h"
#include "planview.h"
#include "rebalanceinput.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MIB (1u << 20)

struct state {
    struct rebalanceinput input;
    struct plan plan;
};

/* File /m/"x" (inode 60), 2 tiles on alpha's node 1, read only by beta. */
static int setup(void **statep)
{
    struct state *state = calloc(1, sizeof(*state));
    struct toolmeta_node nodes[2] = {
        {.id = 1,
         .state = TS_NODE_UP,
         .free_bytes = 1ull << 40,
         .read_bytes_per_sec = 100000000,
         .write_bytes_per_sec = 100000000,
         .machine = "alpha"},
        {.id = 2,
         .state = TS_NODE_UP,
         .free_bytes = 1ull << 40,
         .read_bytes_per_sec = 100000000,
         .write_bytes_per_sec = 100000000,
         .machine = "beta"},
    };
    struct toolmeta_access records[2] = {
        {.tile = 0, .machine = "beta", .reads = 3, .bytes_read = 3 * MIB},
        {.tile = 1, .machine = "beta", .reads = 1, .bytes_read = MIB / 2},
    };
    struct ts_tile_map_rec tiles[2] = {
        {.node = 1, .version = 5, .read_node = 1, .read_version = 5},
        {.node = 1, .version = 6, .read_node = 1, .read_version = 6},
    };
    struct ts_attr attr = {
        .ino = 60, .mode = 0100644, .size = MIB + MIB / 2, .tile_bytes = MIB, .copies = 1};
    struct plan_cluster cluster;
    struct plan_profile profile;
    struct plan_tilemap map;
    size_t index;
    bool has_copies = false;

    assert_non_null(state);
    rebalanceinput_init(&state->input);
    assert_int_equal(rebalanceinput_set_nodes(&state->input, nodes, 2), 0);
    assert_int_equal(rebalanceinput_add_file(&state->input, "/m/\"x\"", &attr, records, 2, &index),
                     0);
    assert_int_equal(rebalanceinput_add_tiles(&state->input, index, 0, tiles, 2, &has_copies), 0);
    rebalanceinput_views(&state->input, &cluster, &profile, &map);
    assert_int_equal(plan_make(PLAN_FREQUENT, &cluster, &profile, &map, NULL, &state->plan), 0);
    assert_int_equal(state->plan.action_count, 2);
    *statep = state;
    return 0;
}

static int teardown(void **statep)
{
    struct state *state = *statep;
    plan_release(&state->plan);
    rebalanceinput_release(&state->input);
    free(state);
    return 0;
}

/* Not inlined: GCC 12 at -O3 takes the buffer open_memstream() hands back
 * through `text` for a pointer to the local variable itself (dangling). */
__attribute__((noinline)) static char *capture(const struct state *state, bool json)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    if (json)
        planview_json(out, "/m", PLAN_FREQUENT, &state->input, &state->plan);
    else
        planview_text(out, "/m", PLAN_FREQUENT, &state->input, &state->plan);
    fclose(out);
    return text;
}

static void test_counts(void **statep)
{
    struct state *state = *statep;
    struct planview_counts counts = planview_count(&state->plan);
    assert_int_equal(counts.moves, 2);
    assert_int_equal(counts.copies, 0);
    assert_int_equal(counts.drops, 0);
}

static void test_text(void **statep)
{
    struct state *state = *statep;
    char *text = capture(state, false);
    assert_non_null(strstr(text, "plan for /m, policy frequent, from the most-frequent-accessor "
                                 "placement\n"));
    assert_non_null(strstr(text, "1 file, 2 profiled tiles; 2 steps: 0 copies, 2 moves, 0 drops; "
                                 "1.5M to transfer\n"));
    assert_non_null(strstr(text, "\n/m/\"x\" (inode 60):\n"));
    assert_non_null(strstr(text, "  1     move  0        1 (alpha)          -> 2 (beta)"));
    /* The last tile holds half a MiB. */
    const char *second = strstr(text, "  2     move  1        1 (alpha)          -> 2 (beta)");
    assert_non_null(second);
    assert_non_null(strstr(second, " 512K "));
    assert_non_null(strstr(text, "1        alpha                up    "));
    assert_non_null(strstr(text, "makespan: "));
    assert_non_null(strstr(text, "x faster)\n"));
    free(text);
}

static void test_json(void **statep)
{
    struct state *state = *statep;
    char *text = capture(state, true);
    const char *head = "{\"path\": \"/m\", \"policy\": \"frequent\", \"basis\": \"frequent\", "
                       "\"files\": 1, \"tiles\": 2, \"transfer_bytes\": 1572864, ";
    assert_true(strncmp(text, head, strlen(head)) == 0);
    assert_non_null(strstr(text, "{\"kind\": \"move\", \"path\": \"/m/\\\"x\\\"\", \"ino\": 60, "
                                 "\"tile\": 1, \"from\": 1, \"to\": 2, \"bytes\": 524288, "
                                 "\"version\": 6, "));
    assert_non_null(strstr(text, "{\"id\": 2, \"machine\": \"beta\", \"up\": true, "));
    assert_string_equal(text + strlen(text) - 3, "]}\n");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json, setup, teardown),
    };
    return cmocka_run_group_tests_name("planview", tests, NULL, NULL);
}
