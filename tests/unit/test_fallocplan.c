/*
 * @file test_fallocplan.c
 * Unit tests of fuse/fallocplan.c: which whole tiles a punch or a zeroed
 * range drops, which partial ends get zeros, the size after, the space a
 * plain fallocate checks, and the modes refused.
 */
#include "fallocplan.h"

#include <errno.h>
#include <linux/falloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define T (1u << 20)

static void test_plain_fallocate_grows_or_keeps_the_size(void **state)
{
    (void)state;
    struct fallocplan plan;
    assert_int_equal(fallocplan_make(0, 5 * T, T, 3 * T, T, false, &plan), 0);
    assert_int_equal(plan.new_size, 6 * T);
    assert_int_equal(plan.space_bytes, T);
    assert_false(plan.drop);
    assert_int_equal(plan.zero_count, 0);
    assert_int_equal(fallocplan_make(FALLOC_FL_KEEP_SIZE, 5 * T, T, 3 * T, T, false, &plan), 0);
    assert_int_equal(plan.new_size, 3 * T);
    assert_int_equal(fallocplan_make(0, 0, T, 3 * T, T, false, &plan), 0); /* inside: no growth */
    assert_int_equal(plan.new_size, 3 * T);
}

static void test_punch_drops_whole_tiles_and_zeros_the_ends(void **state)
{
    (void)state;
    struct fallocplan plan;
    int punch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
    /* [0.5 T, 3.5 T) of an 8 T file: tiles 1, 2 whole, halves of 0 and 3. */
    assert_int_equal(fallocplan_make(punch, T / 2, 3 * T, 8 * T, T, false, &plan), 0);
    assert_true(plan.drop);
    assert_int_equal(plan.first_tile, 1);
    assert_int_equal(plan.last_tile, 2);
    assert_int_equal(plan.zero_count, 2);
    assert_int_equal(plan.zero[0].offset, T / 2);
    assert_int_equal(plan.zero[0].length, T / 2);
    assert_int_equal(plan.zero[1].offset, 3 * T);
    assert_int_equal(plan.zero[1].length, T / 2);
    assert_int_equal(plan.new_size, 8 * T);
    assert_int_equal(plan.space_bytes, 0);
    /* Inside one tile: zeros only. */
    assert_int_equal(fallocplan_make(punch, 100, 200, 8 * T, T, false, &plan), 0);
    assert_false(plan.drop);
    assert_int_equal(plan.zero_count, 1);
    assert_int_equal(plan.zero[0].offset, 100);
    assert_int_equal(plan.zero[0].length, 200);
    /* Past the end: nothing to do, the size stays. */
    assert_int_equal(fallocplan_make(punch, 9 * T, T, 8 * T, T, false, &plan), 0);
    assert_false(plan.drop);
    assert_int_equal(plan.zero_count, 0);
    assert_int_equal(plan.new_size, 8 * T);
}

static void test_range_to_the_end_takes_the_last_tile_whole(void **state)
{
    (void)state;
    struct fallocplan plan;
    int punch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
    /* A 2.5 T file punched from 1.5 T to far past the end: tile 2 holds
     * the end, its bytes past it are no one's: dropped whole. */
    assert_int_equal(fallocplan_make(punch, 3 * T / 2, 10 * T, 5 * T / 2, T, false, &plan), 0);
    assert_true(plan.drop);
    assert_int_equal(plan.first_tile, 2);
    assert_int_equal(plan.last_tile, 2);
    assert_int_equal(plan.zero_count, 1);
    assert_int_equal(plan.zero[0].offset, 3 * T / 2);
    assert_int_equal(plan.zero[0].length, T / 2);
}

static void test_zero_range_grows_without_keep_size(void **state)
{
    (void)state;
    struct fallocplan plan;
    /* Across the end of a 2 T file up to 3.5 T: tile 2 and 3 (the new
     * end's) dropped, the file now 3.5 T. */
    assert_int_equal(
        fallocplan_make(FALLOC_FL_ZERO_RANGE, 2 * T, 3 * T / 2, 2 * T, T, false, &plan), 0);
    assert_int_equal(plan.new_size, 7 * T / 2);
    assert_true(plan.drop);
    assert_int_equal(plan.first_tile, 2);
    assert_int_equal(plan.last_tile, 3);
    assert_int_equal(plan.zero_count, 0);
    /* With KEEP_SIZE nothing past the end. */
    assert_int_equal(fallocplan_make(FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 2 * T, 3 * T / 2,
                                     2 * T, T, false, &plan),
                     0);
    assert_int_equal(plan.new_size, 2 * T);
    assert_false(plan.drop);
    assert_int_equal(plan.zero_count, 0);
}

static void test_array_files_get_zeros_only(void **state)
{
    (void)state;
    struct fallocplan plan;
    assert_int_equal(fallocplan_make(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, T / 2, 3 * T,
                                     8 * T, T, true, &plan),
                     0);
    assert_false(plan.drop);
    assert_int_equal(plan.zero_count, 1);
    assert_int_equal(plan.zero[0].offset, T / 2);
    assert_int_equal(plan.zero[0].length, 3 * T);
}

static void test_refused_modes(void **state)
{
    (void)state;
    struct fallocplan plan;
    assert_int_equal(fallocplan_make(FALLOC_FL_COLLAPSE_RANGE, 0, T, 8 * T, T, false, &plan),
                     -EOPNOTSUPP);
    assert_int_equal(fallocplan_make(FALLOC_FL_INSERT_RANGE, 0, T, 8 * T, T, false, &plan),
                     -EOPNOTSUPP);
    assert_int_equal(fallocplan_make(FALLOC_FL_PUNCH_HOLE, 0, T, 8 * T, T, false, &plan),
                     -EOPNOTSUPP);
    assert_int_equal(
        fallocplan_make(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, T,
                        8 * T, T, false, &plan),
        -EINVAL);
    assert_int_equal(fallocplan_make(0, 0, 0, 8 * T, T, false, &plan), -EINVAL);
    assert_int_equal(fallocplan_make(0, INT64_MAX, 2, 8 * T, T, false, &plan), -EFBIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_fallocate_grows_or_keeps_the_size),
        cmocka_unit_test(test_punch_drops_whole_tiles_and_zeros_the_ends),
        cmocka_unit_test(test_range_to_the_end_takes_the_last_tile_whole),
        cmocka_unit_test(test_zero_range_grows_without_keep_size),
        cmocka_unit_test(test_array_files_get_zeros_only),
        cmocka_unit_test(test_refused_modes),
    };
    return cmocka_run_group_tests_name("fallocplan", tests, NULL, NULL);
}
