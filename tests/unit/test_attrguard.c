/*
 * @file test_attrguard.c
 * Unit tests of fuse/attrguard.c: attributes with a smaller change counter
 * than some handed out or committed before are refused, equal or larger
 * ones pass and raise the record; a new generation of the inode number,
 * other file types and records past the retention always pass; many files
 * at once keep their records (the table grows); a fresh open finds the
 * kernel's attributes outdated; a larger size waits for the file's reads on
 * their way.
 */
#include "attrguard.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

static double fake_now;
static double fake_clock(void)
{
    return fake_now;
}

static struct ts_attr file_attr(uint64_t ino, uint64_t change, uint64_t size)
{
    return (struct ts_attr){
        .ino = ino, .mode = S_IFREG | 0644, .generation = 1, .change = change, .size = size};
}

static int setup(void **state)
{
    fake_now = 100;
    *state = attrguard_new(10, fake_clock);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    struct attrguard *guard = *state;
    attrguard_destroy(&guard);
    assert_null(guard);
    attrguard_destroy(&guard); /* NULL is fine */
    return 0;
}

static void test_older_attributes_are_refused(void **state)
{
    struct attrguard *guard = *state;
    struct ts_attr newer = file_attr(7, 5, 300);
    struct ts_attr older = file_attr(7, 4, 200);
    assert_true(attrguard_admit(guard, &newer));
    assert_false(attrguard_admit(guard, &older)); /* would shrink the file */
    assert_true(attrguard_admit(guard, &newer));  /* the same again is fine */
    struct ts_attr newest = file_attr(7, 9, 100); /* a truncation: newer, smaller */
    assert_true(attrguard_admit(guard, &newest));
    assert_false(attrguard_admit(guard, &newer));
    struct ts_attr other = file_attr(8, 1, 0); /* another file knows nothing of 7 */
    assert_true(attrguard_admit(guard, &other));
}

static void test_commits_refuse_what_came_before_them(void **state)
{
    struct attrguard *guard = *state;
    struct ts_attr fetched = file_attr(3, 10, 4096);
    struct ts_attr committed = file_attr(3, 11, 8192);
    attrguard_record(guard, &committed); /* this mount's own commit */
    assert_false(attrguard_admit(guard, &fetched));
    struct ts_attr earlier_commit = file_attr(3, 6, 10);
    attrguard_record(guard, &earlier_commit); /* never lowers the record */
    assert_false(attrguard_admit(guard, &fetched));
    assert_true(attrguard_admit(guard, &committed));
}

static void test_new_generation_and_other_types_pass(void **state)
{
    struct attrguard *guard = *state;
    struct ts_attr old_file = file_attr(5, 50, 1);
    assert_true(attrguard_admit(guard, &old_file));
    struct ts_attr reused = file_attr(5, 1, 0);
    reused.generation = 2; /* the number now names another file */
    assert_true(attrguard_admit(guard, &reused));
    struct ts_attr dir = file_attr(6, 9, 4096);
    dir.mode = S_IFDIR | 0755;
    assert_true(attrguard_admit(guard, &dir));
    dir.change = 1; /* directories are not tracked */
    assert_true(attrguard_admit(guard, &dir));
}

static void test_records_expire_after_the_retention(void **state)
{
    struct attrguard *guard = *state;
    struct ts_attr newer = file_attr(9, 5, 300);
    struct ts_attr older = file_attr(9, 4, 200);
    assert_true(attrguard_admit(guard, &newer));
    fake_now += 9;
    assert_false(attrguard_admit(guard, &older));
    fake_now += 2; /* 11 s after the record: nothing that old is on its way */
    assert_true(attrguard_admit(guard, &older));
}

static void test_many_files_keep_their_records(void **state)
{
    struct attrguard *guard = *state;
    for (uint64_t ino = 1; ino <= 20000; ino++) {
        struct ts_attr attr = file_attr(ino, 2, ino);
        assert_true(attrguard_admit(guard, &attr));
    }
    assert_int_equal(attrguard_records(guard), 20000);
    for (uint64_t ino = 1; ino <= 20000; ino += 997) {
        struct ts_attr older = file_attr(ino, 1, 0);
        assert_false(attrguard_admit(guard, &older));
    }
    fake_now += 60; /* all expired: the next growth drops them */
    for (uint64_t ino = 30001; ino <= 50000; ino++) {
        struct ts_attr attr = file_attr(ino, 2, ino);
        assert_true(attrguard_admit(guard, &attr));
    }
    assert_true(attrguard_records(guard) <= 20000);
}

static void test_open_finds_kernel_attributes_outdated(void **state)
{
    struct attrguard *guard = *state;
    struct ts_attr handed_out = file_attr(4, 3, 100);
    struct ts_attr at_open = file_attr(4, 5, 120);     /* another mount appended */
    assert_false(attrguard_outdated(guard, &at_open)); /* nothing handed out yet */
    assert_true(attrguard_admit(guard, &handed_out));
    assert_false(attrguard_outdated(guard, &handed_out));
    assert_true(attrguard_outdated(guard, &at_open));
}

struct grower {
    struct attrguard *guard;
    struct ts_attr attr;
    volatile int done;
};

static void *grow(void *arg)
{
    struct grower *grower = arg;
    attrguard_admit(grower->guard, &grower->attr);
    grower->done = 1;
    return NULL;
}

static void pause_ms(long ms)
{
    struct timespec delay = {.tv_sec = 0, .tv_nsec = ms * 1000000};
    nanosleep(&delay, NULL);
}

static void test_larger_size_waits_for_reads_on_their_way(void **state)
{
    (void)state;
    /* A real clock here: the wait is bounded by the retention. */
    struct attrguard *guard = attrguard_new(10, NULL);
    assert_non_null(guard);
    struct ts_attr served = file_attr(2, 1, 100);
    assert_true(attrguard_admit(guard, &served));
    assert_true(attrguard_read_begin(guard, 2));
    struct ts_attr same = file_attr(2, 2, 100); /* no larger: no wait */
    assert_true(attrguard_admit(guard, &same));
    struct grower grower = {.guard = guard, .attr = file_attr(2, 3, 200)};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, grow, &grower), 0);
    pause_ms(100);
    assert_int_equal(grower.done, 0); /* waits for the read's reply */
    attrguard_read_end(guard, 2);
    pthread_join(thread, NULL);
    assert_int_equal(grower.done, 1);
    attrguard_destroy(&guard);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_older_attributes_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commits_refuse_what_came_before_them, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_generation_and_other_types_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records_expire_after_the_retention, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_files_keep_their_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_finds_kernel_attributes_outdated, setup,
                                        teardown),
        cmocka_unit_test(test_larger_size_waits_for_reads_on_their_way),
    };
    return cmocka_run_group_tests_name("attrguard", tests, NULL, NULL);
}
