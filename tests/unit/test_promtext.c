/*
 * tools/promtext.c: the Prometheus text format as our endpoints write it
 * (a real scrape rendered by common/metrics.c), what else the format
 * allows (timestamps, escapes, NaN and infinities, blank lines), and
 * malformed input refused with its line number, never half-parsed.
 */
#include "metrics.h"
#include "promtext.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void render_sample(void *context, struct metrics_text *text)
{
    (void)context;
    metrics_text_family(text, "tessera_mount_requests_total", "counter", "FUSE requests.");
    metrics_text_sample(text, "tessera_mount_requests_total", "op=\"read\"", 12);
    metrics_text_sample(text, "tessera_mount_requests_total", "op=\"write\"", 30);
    metrics_text_one(text, "tessera_mount_read_bytes_total", "counter", "Bytes read.", 1048576);
}

static void test_our_endpoints(void **state)
{
    (void)state;
    char *text;
    size_t len;
    struct promtext parsed;
    bool found;
    assert_int_equal(metrics_render(render_sample, NULL, &text, &len), 0);
    assert_int_equal(promtext_parse(text, len, &parsed, NULL, 0), 0);
    free(text);
    assert_int_equal(parsed.count, 3);
    assert_string_equal(parsed.samples[1].labels, "op=\"write\"");
    assert_true(promtext_sum(&parsed, "tessera_mount_requests_total", NULL, &found) == 42 && found);
    assert_true(promtext_sum(&parsed, "tessera_mount_requests_total", "op=\"read\"", &found) == 12);
    assert_true(promtext_sum(&parsed, "tessera_mount_read_bytes_total", NULL, &found) == 1048576);
    assert_true(promtext_sum(&parsed, "tessera_none", NULL, &found) == 0 && !found);
    promtext_clear(&parsed);
    assert_int_equal(parsed.count, 0);
}

static void test_what_the_format_allows(void **state)
{
    (void)state;
    static const char text[] = "# HELP x any text { \" here\n"
                               "\n"
                               "   \n"
                               "a 1\n"
                               "b{l=\"q\\\"uote\\\\ \\n}\",m=\"2\",} -2.5e3 1700000000000\n"
                               "c {x=\"1\"} NaN\n"
                               "d +Inf\n"
                               "e\t-Inf\n"
                               "f{} 0"; /* no final newline */
    struct promtext parsed;
    assert_int_equal(promtext_parse(text, strlen(text), &parsed, NULL, 0), 0);
    assert_int_equal(parsed.count, 6);
    assert_true(parsed.samples[0].value == 1);
    assert_string_equal(parsed.samples[1].labels, "l=\"q\\\"uote\\\\ \\n}\",m=\"2\",");
    assert_true(parsed.samples[1].value == -2500);
    assert_true(isnan(parsed.samples[2].value));
    assert_true(isinf(parsed.samples[3].value) && parsed.samples[3].value > 0);
    assert_true(isinf(parsed.samples[4].value) && parsed.samples[4].value < 0);
    assert_string_equal(parsed.samples[5].labels, "");
    promtext_clear(&parsed);
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *error;
    } cases[] = {
        {"a 1\nb\n", "line 2: a value expected"},
        {"9a 1\n", "line 1: a metric name or '#' expected"},
        {"a-b 1\n", "line 1: a metric name has a character it may not have"},
        {"a{l=\"x} 1\n", "line 1: a label value is not closed"},
        {"a{l=x} 1\n", "line 1: a quoted label value expected"},
        {"a{l=\"\\t\"} 1\n", "line 1: a label value has a bad escape (only \\\\, \\\" and \\n)"},
        {"a{l=\"1\" m=\"2\"} 1\n", "line 1: ',' or '}' expected after a label"},
        {"a{l=\"1\"\n", "line 1: the labels are not closed with '}'"},
        {"a{:l=\"1\"} 1\n", "line 1: a label name expected"},
        {"a{l} 1\n", "line 1: '=' expected after a label name"},
        {"a{l=\"1\"}1\n", "line 1: a blank expected before the value"},
        {"a 1x\n", "line 1: the value is not a number"},
        {"a inf\n", "line 1: the value is not a number"},
        {"a 0x10\n", "line 1: the value is not a number"},
        {"a 1e999\n", "line 1: the value is not a number"},
        {"a 1 2 3\n", "line 1: unexpected text after the timestamp"},
        {"a 1 t\n", "line 1: only a timestamp may follow the value"},
        {"# ok\n\na 1\n{l=\"1\"} 2\n", "line 4: a metric name or '#' expected"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct promtext parsed;
        char error[128];
        assert_int_equal(
            promtext_parse(cases[i].text, strlen(cases[i].text), &parsed, error, sizeof(error)),
            -EINVAL);
        assert_string_equal(error, cases[i].error);
        assert_int_equal(parsed.count, 0);
        assert_null(parsed.samples);
    }
    /* A NUL inside the text (len says where it ends). */
    static const char with_nul[] = "a 1\nb\0 2\n";
    struct promtext parsed;
    char error[128];
    assert_int_equal(promtext_parse(with_nul, sizeof(with_nul) - 1, &parsed, error, sizeof(error)),
                     -EINVAL);
    assert_string_equal(error, "line 2: a NUL byte");
    /* A tiny error buffer is cut, never overrun. */
    char tiny[6];
    assert_int_equal(promtext_parse("x\n", 2, &parsed, tiny, sizeof(tiny)), -EINVAL);
    assert_string_equal(tiny, "line ");
}

static void test_too_many_samples(void **state)
{
    (void)state;
    size_t count = PROMTEXT_MAX_SAMPLES + 1;
    char *text = malloc(count * 4);
    assert_non_null(text);
    for (size_t i = 0; i < count; i++)
        memcpy(text + i * 4, "a 1\n", 4);
    struct promtext parsed;
    char error[64];
    assert_int_equal(promtext_parse(text, count * 4, &parsed, error, sizeof(error)), -E2BIG);
    assert_int_equal(parsed.count, 0);
    assert_int_equal(promtext_parse(text, (count - 1) * 4, &parsed, error, sizeof(error)), 0);
    assert_int_equal(parsed.count, PROMTEXT_MAX_SAMPLES);
    promtext_clear(&parsed);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_our_endpoints),
        cmocka_unit_test(test_what_the_format_allows),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_too_many_samples),
    };
    return cmocka_run_group_tests_name("promtext", tests, NULL, NULL);
}
