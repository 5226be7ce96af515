/*
 * @file test_progress.c
 * The progress line of `tessera rebalance apply` (tools/progress.c):
 * durations, the ETA by bytes and by tiles, and the whole line.
 */
#include "progress.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

static void test_durations(void **state)
{
    char text[16];
    (void)state;
    progress_format_duration(0, text, sizeof(text));
    assert_string_equal(text, "0:00");
    progress_format_duration(7.4, text, sizeof(text));
    assert_string_equal(text, "0:07");
    progress_format_duration(754, text, sizeof(text));
    assert_string_equal(text, "12:34");
    progress_format_duration(3723, text, sizeof(text));
    assert_string_equal(text, "1:02:03");
    progress_format_duration(-1, text, sizeof(text));
    assert_string_equal(text, "--:--");
    progress_format_duration(INFINITY, text, sizeof(text));
    assert_string_equal(text, "--:--");
    progress_format_duration(100.0 * 3600, text, sizeof(text));
    assert_string_equal(text, "--:--");
    /* A short buffer is cut, never overrun. */
    progress_format_duration(3723, text, 4);
    assert_string_equal(text, "1:0");
}

static void test_eta_by_bytes(void **state)
{
    (void)state;
    struct progress_view view = {
        .tiles_done = 1,
        .tiles_total = 10,
        .bytes_done = 10000000,
        .bytes_total = 40000000,
        .elapsed_sec = 2.0,
    };
    /* 5 MB/s, 30 MB left. */
    assert_float_equal(progress_eta(&view), 6.0, 1e-9);
    view.bytes_done = 40000000;
    assert_float_equal(progress_eta(&view), 0.0, 1e-9);
}

static void test_eta_by_tiles_when_bytes_unknown(void **state)
{
    (void)state;
    struct progress_view view = {.tiles_done = 2, .tiles_total = 8, .elapsed_sec = 4.0};
    assert_float_equal(progress_eta(&view), 12.0, 1e-9);
    view.tiles_done = 0;
    assert_true(progress_eta(&view) < 0);
    view.elapsed_sec = 0;
    assert_true(progress_eta(&view) < 0);
}

static void test_line(void **state)
{
    char line[128];
    (void)state;
    struct progress_view view = {
        .tiles_done = 12,
        .tiles_total = 40,
        .bytes_done = 12u << 20,
        .bytes_total = 40u << 20,
        .elapsed_sec = 1.5,
    };
    progress_format(&view, line, sizeof(line));
    assert_string_equal(line, "tiles 12/40, 12M/40M, 8.4 MB/s, ETA 0:04");
    view.failed = 1;
    view.stale = 2;
    progress_format(&view, line, sizeof(line));
    assert_string_equal(line, "tiles 12/40, 12M/40M, 8.4 MB/s, ETA 0:04, 1 failed, 2 stale");
    struct progress_view start = {.tiles_total = 3};
    progress_format(&start, line, sizeof(line));
    assert_string_equal(line, "tiles 0/3, 0B/0B, 0.0 MB/s, ETA --:--");
    progress_format(&view, line, 10);
    assert_int_equal(strlen(line), 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_eta_by_bytes),
        cmocka_unit_test(test_eta_by_tiles_when_bytes_unknown),
        cmocka_unit_test(test_line),
    };
    return cmocka_run_group_tests_name("progress", tests, NULL, NULL);
}
