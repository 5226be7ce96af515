/*
 * @file test_sieve.c
 * Unit tests of the data sieving policy (fuse/sieve.c): a tile is read whole
 * on the second touch within the window and never on the first; a buffered
 * reader always gets it, a direct one only while sieving pays (credit), with
 * a rare probe after it stopped paying; touches of tiles that share a slot,
 * and a table that grows with the file, only forget touches.
 */
#include "sieve.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#define TILES 1024

static int setup(void **state)
{
    struct sieve *sieve = malloc(sizeof(*sieve));
    if (!sieve)
        return -1;
    sieve_init(sieve);
    *state = sieve;
    return 0;
}

static int teardown(void **state)
{
    struct sieve *sieve = *state;
    sieve_fini(sieve);
    free(sieve);
    return 0;
}

static void test_second_touch_within_window(void **state)
{
    struct sieve *sieve = *state;
    assert_false(sieve_touch(sieve, 7, TILES, 1000, true));
    assert_true(sieve_touch(sieve, 7, TILES, 1000 + SIEVE_WINDOW_MS - 1, true));
    /* Read whole now: the touch is spent, two more are needed. */
    assert_false(sieve_touch(sieve, 7, TILES, 2500, true));
    assert_true(sieve_touch(sieve, 7, TILES, 2501, true));
}

static void test_touches_too_far_apart(void **state)
{
    struct sieve *sieve = *state;
    int64_t now = 1000;
    for (int i = 0; i < 10; i++) {
        assert_false(sieve_touch(sieve, 3, TILES, now, true));
        now += SIEVE_WINDOW_MS;
    }
}

static void test_one_shot_reader_never_sieves(void **state)
{
    struct sieve *sieve = *state;
    for (uint64_t tile = 0; tile < TILES; tile++)
        assert_false(sieve_touch(sieve, tile, TILES, 1000 + (int64_t)tile, true));
}

static void test_shared_slot_forgets(void **state)
{
    struct sieve *sieve = *state;
    /* A table of 64 for a 64-tile file: tiles 1 and 65 share a slot. */
    assert_false(sieve_touch(sieve, 1, 64, 1000, true));
    assert_false(sieve_touch(sieve, 65, 64, 1001, true)); /* same slot: 1 forgotten */
    assert_false(sieve_touch(sieve, 1, 64, 1002, true));
    assert_true(sieve_touch(sieve, 1, 64, 1003, true));
}

static void test_growing_file(void **state)
{
    struct sieve *sieve = *state;
    assert_false(sieve_touch(sieve, 1, 10, 1000, true));
    /* The file grew past the table: the table grows, touches are dropped. */
    assert_false(sieve_touch(sieve, 100, 200, 1001, true));
    assert_int_equal(sieve->touch_slots, 256);
    assert_false(sieve_touch(sieve, 1, 200, 1002, true));
    assert_true(sieve_touch(sieve, 1, 200, 1003, true));
    /* Capped however big the file. */
    assert_false(sieve_touch(sieve, 5, 1u << 30, 1004, true));
    assert_int_equal(sieve->touch_slots, SIEVE_TOUCHES_MAX);
}

/* Two touches of `tile` in a row, for a direct reader; the second's answer. */
static bool direct_pair(struct sieve *sieve, uint64_t tile, int64_t *now)
{
    sieve_touch(sieve, tile, TILES, (*now)++, false);
    return sieve_touch(sieve, tile, TILES, (*now)++, false);
}

static void test_direct_reader_needs_hits(void **state)
{
    struct sieve *sieve = *state;
    int64_t now = 1000;
    /* The initial credit pays for two whole-tile reads... */
    assert_true(direct_pair(sieve, 1, &now));
    assert_true(direct_pair(sieve, 2, &now));
    /* ...and without hits no more, */
    assert_false(direct_pair(sieve, 3, &now));
    /* but hits worth more than a load buy the next one. */
    for (int i = 0; i <= SIEVE_LOAD_COST; i++)
        sieve_hit(sieve);
    assert_true(direct_pair(sieve, 4, &now));
}

static void test_direct_reader_probes(void **state)
{
    struct sieve *sieve = *state;
    int64_t now = 1000;
    int loads = 0;
    /* No hits ever: after the initial credit, one probe per
     * SIEVE_PROBE_EVERY refused second touches. */
    for (int i = 0; i < 2 + 4 * SIEVE_PROBE_EVERY; i++)
        loads += direct_pair(sieve, (uint64_t)i % TILES, &now);
    assert_int_equal(loads, 2 + 4);
}

static void test_buffered_reader_ignores_credit(void **state)
{
    struct sieve *sieve = *state;
    int64_t now = 1000;
    for (int i = 0; i < 3; i++)
        direct_pair(sieve, (uint64_t)i, &now); /* credit spent */
    for (uint64_t tile = 10; tile < 20; tile++) {
        assert_false(sieve_touch(sieve, tile, TILES, now++, true));
        assert_true(sieve_touch(sieve, tile, TILES, now++, true));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_second_touch_within_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_touches_too_far_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_shot_reader_never_sieves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_slot_forgets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_growing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct_reader_needs_hits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_direct_reader_probes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_buffered_reader_ignores_credit, setup, teardown),
    };
    return cmocka_run_group_tests_name("sieve", tests, NULL, NULL);
}
