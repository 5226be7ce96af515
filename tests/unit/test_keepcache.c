/*
 * @file test_keepcache.c
 * Unit tests of fuse/keepcache.c: an open keeps the kernel's cached pages
 * only when meta's attributes are those of the last open, any change of
 * mtime, ctime, size or generation drops them, a forgotten file drops
 * them once, and files that share a slot only cost each other a re-read.
 */
#include "keepcache.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static struct ts_attr file_attr(uint64_t ino)
{
    return (struct ts_attr){.ino = ino,
                            .size = 3 << 20,
                            .mtime_sec = 1700000000,
                            .mtime_nsec = 5,
                            .ctime_sec = 1700000000,
                            .ctime_nsec = 5,
                            .generation = 1};
}

static void test_unchanged_file_keeps_its_pages(void **state)
{
    (void)state;
    struct keepcache *cache = keepcache_new(64);
    assert_non_null(cache);
    struct ts_attr attr = file_attr(42);
    assert_false(keepcache_open(cache, &attr)); /* first open here: nothing known */
    assert_true(keepcache_open(cache, &attr));
    assert_true(keepcache_open(cache, &attr));
    keepcache_destroy(&cache);
    assert_null(cache);
    keepcache_destroy(&cache); /* NULL is fine */
}

static void test_any_change_drops_the_pages_once(void **state)
{
    (void)state;
    struct keepcache *cache = keepcache_new(64);
    assert_non_null(cache);
    struct ts_attr attr = file_attr(7);
    assert_false(keepcache_open(cache, &attr));

    attr.mtime_nsec++; /* a write elsewhere */
    assert_false(keepcache_open(cache, &attr));
    assert_true(keepcache_open(cache, &attr)); /* the new state is remembered */
    attr.ctime_sec++;                          /* utimes back to the old mtime still moves ctime */
    assert_false(keepcache_open(cache, &attr));
    attr.size = 0; /* truncated */
    assert_false(keepcache_open(cache, &attr));
    attr.generation = 2; /* the inode number used again */
    assert_false(keepcache_open(cache, &attr));
    attr.mtime_sec++;
    assert_false(keepcache_open(cache, &attr));
    attr.ctime_nsec++;
    assert_false(keepcache_open(cache, &attr));
    assert_true(keepcache_open(cache, &attr));
    keepcache_destroy(&cache);
}

static void test_forgotten_file_drops_its_pages(void **state)
{
    (void)state;
    struct keepcache *cache = keepcache_new(64);
    assert_non_null(cache);
    struct ts_attr attr = file_attr(9);
    struct ts_attr other = file_attr(10);
    assert_false(keepcache_open(cache, &attr));
    assert_false(keepcache_open(cache, &other));
    keepcache_forget(cache, 9); /* a handle that wrote was released */
    assert_false(keepcache_open(cache, &attr));
    assert_true(keepcache_open(cache, &attr));
    assert_true(keepcache_open(cache, &other)); /* only that file */
    keepcache_forget(cache, 12345);             /* never opened: nothing happens */
    assert_true(keepcache_open(cache, &other));
    keepcache_destroy(&cache);
}

/* A one-slot table: every file takes the slot from the one before. */
static void test_files_sharing_a_slot_only_cost_a_reread(void **state)
{
    (void)state;
    struct keepcache *cache = keepcache_new(1);
    assert_non_null(cache);
    struct ts_attr one = file_attr(1);
    struct ts_attr two = file_attr(2);
    assert_false(keepcache_open(cache, &one));
    assert_true(keepcache_open(cache, &one));
    assert_false(keepcache_open(cache, &two));
    assert_false(keepcache_open(cache, &one)); /* two took the slot */
    assert_true(keepcache_open(cache, &one));
    keepcache_forget(cache, 2); /* not in the slot: one stays */
    assert_true(keepcache_open(cache, &one));
    keepcache_destroy(&cache);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unchanged_file_keeps_its_pages),
        cmocka_unit_test(test_any_change_drops_the_pages_once),
        cmocka_unit_test(test_forgotten_file_drops_its_pages),
        cmocka_unit_test(test_files_sharing_a_slot_only_cost_a_reread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
