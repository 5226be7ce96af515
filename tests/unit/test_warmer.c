/*
 * @file test_warmer.c
 * Unit tests of the datanode's warmer (warmer.c): which small reads bring
 * their whole tile into the page cache. Times are numbers the test picks.
 */
#include "warmer.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define MS 1000000ll /* nanoseconds */
#define SEC 1000000000ll

static void test_second_small_read_warms(void **state)
{
    (void)state;
    struct warmer *warmer = warmer_new();
    assert_non_null(warmer);
    /* A first read says nothing; a second one soon after warms, once. */
    assert_false(warmer_note(warmer, 7, 3, 4096, 10 * SEC));
    assert_true(warmer_note(warmer, 7, 3, 4096, 10 * SEC + 5 * MS));
    assert_false(warmer_note(warmer, 7, 3, 4096, 10 * SEC + 10 * MS));
    /* Still read a second later: warmed again (the pages may have gone). */
    assert_true(warmer_note(warmer, 7, 3, 4096, 10 * SEC + 10 * MS + WARMER_AGAIN_NS));
    warmer_destroy(&warmer);
    assert_null(warmer);
    warmer_destroy(&warmer); /* NULL is fine */
}

static void test_seldom_or_large_reads_never_warm(void **state)
{
    (void)state;
    struct warmer *warmer = warmer_new();
    assert_non_null(warmer);
    /* Reads further apart than the window: each is a first read. */
    assert_false(warmer_note(warmer, 7, 3, 4096, 1 * SEC));
    assert_false(warmer_note(warmer, 7, 3, 4096, 1 * SEC + WARMER_WINDOW_NS + 1));
    assert_false(warmer_note(warmer, 7, 3, 4096, 1 * SEC + 2 * (WARMER_WINDOW_NS + 1)));
    /* Whole-tile and sequential pieces are read ahead elsewhere. */
    assert_false(warmer_note(warmer, 8, 0, WARMER_SMALL_BYTES, 1 * SEC));
    assert_false(warmer_note(warmer, 8, 0, WARMER_SMALL_BYTES, 1 * SEC + MS));
    assert_false(warmer_note(warmer, 8, 0, 1 << 20, 1 * SEC + 2 * MS));
    warmer_destroy(&warmer);
}

/* Other tiles, of the same file or others, do not count for a tile. */
static void test_tiles_counted_apart(void **state)
{
    (void)state;
    struct warmer *warmer = warmer_new();
    assert_non_null(warmer);
    for (uint64_t tile = 0; tile < 64; tile++)
        assert_false(warmer_note(warmer, 9, tile, 4096, SEC + (int64_t)tile * MS));
    assert_false(warmer_note(warmer, 10, 0, 4096, SEC + 100 * MS));
    /* Each tile's own second read warms it. */
    for (uint64_t tile = 0; tile < 64; tile++)
        assert_true(warmer_note(warmer, 9, tile, 512, SEC + 200 * MS + (int64_t)tile * MS));
    warmer_destroy(&warmer);
}

/* More tiles than slots: a tile pushed out starts again (never warms wrongly). */
static void test_many_tiles(void **state)
{
    (void)state;
    struct warmer *warmer = warmer_new();
    int warmed = 0;
    assert_non_null(warmer);
    for (uint64_t tile = 0; tile < 4 * WARMER_SLOTS; tile++)
        assert_false(warmer_note(warmer, 11, tile, 4096, SEC));
    for (uint64_t tile = 0; tile < 4 * WARMER_SLOTS; tile++)
        warmed += warmer_note(warmer, 11, tile, 4096, SEC + MS);
    /* At most one tile a slot kept its first read. */
    assert_true(warmed > 0);
    assert_true(warmed <= WARMER_SLOTS);
    warmer_destroy(&warmer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_small_read_warms),
        cmocka_unit_test(test_seldom_or_large_reads_never_warm),
        cmocka_unit_test(test_tiles_counted_apart),
        cmocka_unit_test(test_many_tiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
