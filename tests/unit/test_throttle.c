/*
 * @file test_throttle.c
 * Unit tests of the datanode's disk throttle (throttle.c: a token bucket
 * in virtual-time form) and throughput measurement (measure.c: windows
 * folded into an EWMA), with a fake clock: every time is a number the test
 * chooses, so the arithmetic is checked to the nanosecond.
 */
#include "measure.h"
#include "throttle.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define MS 1000000ll /* nanoseconds */
#define SEC 1000000000ll
#define MB 1000000u

static void test_no_throttle_never_waits(void **state)
{
    (void)state;
    struct throttle throttle;
    throttle_init(&throttle, 0, 0);
    assert_int_equal(throttle_book(&throttle, 16 * MB, 5 * SEC), 5 * SEC);
    assert_int_equal(throttle_book(&throttle, 16 * MB, 5 * SEC), 5 * SEC);
}

/* An emulated 10 MB/s disk: 1 MB takes 100 ms, queued work adds up. */
static void test_rate_and_queueing(void **state)
{
    (void)state;
    struct throttle throttle;
    throttle_init(&throttle, 10 * MB, 0);
    /* Idle disk: the work is done 100 ms after it starts. */
    assert_int_equal(throttle_book(&throttle, MB, 1 * SEC), 1 * SEC + 100 * MS);
    /* Work arriving while the disk is busy waits its turn. */
    assert_int_equal(throttle_book(&throttle, MB, 1 * SEC + 10 * MS), 1 * SEC + 200 * MS);
    assert_int_equal(throttle_book(&throttle, MB / 2, 1 * SEC + 20 * MS), 1 * SEC + 250 * MS);
    /* After an idle gap the disk starts fresh: no credit without a burst. */
    assert_int_equal(throttle_book(&throttle, MB, 3 * SEC), 3 * SEC + 100 * MS);
}

/* Back-to-back work runs at exactly the rate, whatever the op sizes. */
static void test_sustained_rate(void **state)
{
    (void)state;
    struct throttle throttle;
    int64_t now = 0;
    throttle_init(&throttle, 40 * MB, 64 * 1024);
    for (int i = 0; i < 400; i++)
        now = throttle_book(&throttle, i % 2 ? 750000u : 250000u, now); /* 0.5 MB on average */
    /* 400 ops averaging 0.5 MB = 200 MB at 40 MB/s = 5 s, less the first op's burst credit. */
    int64_t credit = 64 * 1024 * SEC / (40 * MB);
    assert_int_equal(now, 5 * SEC - credit);
}

/* The bucket's depth: an idle disk has burst bytes of credit, no more. */
static void test_burst_credit(void **state)
{
    (void)state;
    struct throttle throttle;
    throttle_init(&throttle, MB, 100000); /* 1 MB/s, 100 kB deep = 100 ms of credit */
    /* Long idle: only 100 ms of credit, so 100 kB is free and 300 kB takes 200 ms. */
    assert_int_equal(throttle_book(&throttle, 100000, 10 * SEC), 10 * SEC);
    assert_int_equal(throttle_book(&throttle, 300000, 10 * SEC), 10 * SEC + 300 * MS);
    /* 50 ms idle after that earns 50 ms of credit back. */
    assert_int_equal(throttle_book(&throttle, 100000, 10 * SEC + 350 * MS), 10 * SEC + 400 * MS);
}

/* A rate change applies to new work; booked work keeps its time. */
static void test_rate_change(void **state)
{
    (void)state;
    struct throttle throttle;
    throttle_init(&throttle, 40 * MB, 0);
    assert_int_equal(throttle_book(&throttle, 4 * MB, 0), 100 * MS);
    throttle_set_rate(&throttle, 20 * MB); /* half speed */
    assert_int_equal(throttle_book(&throttle, 4 * MB, 0), 300 * MS);
    throttle_set_rate(&throttle, 0); /* off */
    assert_int_equal(throttle_book(&throttle, 4 * MB, 400 * MS), 400 * MS);
    throttle_set_rate(&throttle, 40 * MB); /* back on: the old queue is long gone */
    assert_int_equal(throttle_book(&throttle, 4 * MB, 1 * SEC), 1 * SEC + 100 * MS);
}

/* Huge sizes and tiny rates saturate instead of overflowing. */
static void test_extremes(void **state)
{
    (void)state;
    struct throttle throttle;
    throttle_init(&throttle, 1, 0);
    assert_true(throttle_book(&throttle, UINT64_MAX, 0) == INT64_MAX);
    assert_true(throttle_book(&throttle, UINT64_MAX, SEC) == INT64_MAX);
    /* A bucket deeper than the clock reaches back: all credit, no wait. */
    throttle_init(&throttle, 1, UINT64_MAX);
    assert_true(throttle_book(&throttle, 1, -SEC) <= -SEC);
    assert_true(throttle_book(&throttle, 1, INT64_MIN) <= 0);
}

/* ---- measure ------------------------------------------------------------- */

static void test_measure_windows(void **state)
{
    (void)state;
    struct measure_rate rate = {0};
    /* Too little in the window: no sample yet, it keeps collecting. */
    measure_add(&rate, 1 * MB, 50 * MS);
    assert_false(measure_fold(&rate));
    assert_int_equal(measure_bytes_per_sec(&rate), 0);
    /* A sync: time without bytes, still the write's cost. */
    measure_add(&rate, 0, 50 * MS);
    measure_add(&rate, 3 * MB, 100 * MS);
    assert_true(measure_fold(&rate));
    /* 4 MB in 200 ms of busy time (idle time between does not count). */
    assert_int_equal(measure_bytes_per_sec(&rate), 20 * MB);
    /* The next sample is averaged in with weight 1/2. */
    measure_add(&rate, 4 * MB, 100 * MS); /* 40 MB/s */
    assert_true(measure_fold(&rate));
    assert_int_equal(measure_bytes_per_sec(&rate), 30 * MB);
    /* An empty window changes nothing. */
    assert_false(measure_fold(&rate));
    assert_int_equal(measure_bytes_per_sec(&rate), 30 * MB);
}

static void test_measure_seed_and_disk_change(void **state)
{
    (void)state;
    struct measure_rate rate = {0};
    /* The empirical test: three 1 MiB tiles in 150 ms. */
    measure_seed(&rate, 3u << 20, 150 * MS);
    assert_int_equal(measure_bytes_per_sec(&rate), (3u << 20) * 1000u / 150u);
    measure_seed(&rate, 0, 150 * MS); /* nothing measured: ignored */
    assert_int_equal(measure_bytes_per_sec(&rate), (3u << 20) * 1000u / 150u);

    /* Throttled to 10 MB/s: the average drops to the cap at once ... */
    measure_add(&rate, 10 * MB, 10 * MS); /* work of the old disk: dropped */
    measure_disk_changed(&rate, 10 * MB);
    assert_int_equal(measure_bytes_per_sec(&rate), 10 * MB);
    /* ... and the next sample replaces it rather than being mixed in. */
    measure_add(&rate, 4 * MB, 500 * MS); /* 8 MB/s */
    assert_true(measure_fold(&rate));
    assert_int_equal(measure_bytes_per_sec(&rate), 8 * MB);
    /* Throttle off: nothing to clamp, but the next sample again replaces. */
    measure_disk_changed(&rate, 0);
    assert_int_equal(measure_bytes_per_sec(&rate), 8 * MB);
    measure_add(&rate, 100 * MB, 1 * SEC);
    assert_true(measure_fold(&rate));
    assert_int_equal(measure_bytes_per_sec(&rate), 100 * MB);
    /* Bytes in no measurable time count as 1 ns rather than dividing by 0. */
    measure_add(&rate, 4 * MB, 0);
    assert_true(measure_fold(&rate));
    assert_true(measure_bytes_per_sec(&rate) > 100 * MB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_throttle_never_waits),
        cmocka_unit_test(test_rate_and_queueing),
        cmocka_unit_test(test_sustained_rate),
        cmocka_unit_test(test_burst_credit),
        cmocka_unit_test(test_rate_change),
        cmocka_unit_test(test_extremes),
        cmocka_unit_test(test_measure_windows),
        cmocka_unit_test(test_measure_seed_and_disk_change),
    };
    return cmocka_run_group_tests_name("throttle", tests, NULL, NULL);
}
