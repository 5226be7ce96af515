/*
 * tools/statsfigures.c: the figures `tessera stats` shows, from two
 * scrapes: rates per second, mean latency per request, gauges of the
 * later scrape, unknown figures NAN, a counter that went down (a restart)
 * NAN rather than a negative rate, the kind told by the figures' names.
 */
#include "promtext.h"
#include "statsfigures.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void parse(const char *text, struct promtext *parsed)
{
    assert_int_equal(promtext_parse(text, strlen(text), parsed, NULL, 0), 0);
}

static void test_datanode(void **state)
{
    (void)state;
    struct promtext before, after;
    struct statsfigures figures;
    parse("tessera_datanode_requests_total{op=\"TILE_READ\"} 10\n"
          "tessera_datanode_requests_total{op=\"TILE_WRITE\"} 20\n"
          "tessera_datanode_request_seconds_total{op=\"TILE_READ\"} 1\n"
          "tessera_datanode_request_seconds_total{op=\"TILE_WRITE\"} 2\n"
          "tessera_datanode_request_failures_total 5\n"
          "tessera_datanode_read_bytes_total 1000000\n"
          "tessera_datanode_written_bytes_total 0\n"
          "tessera_datanode_scrub_pass_checked_bytes 0\n"
          "tessera_datanode_scrub_pass_total_bytes 400\n",
          &before);
    parse("tessera_datanode_requests_total{op=\"TILE_READ\"} 30\n"
          "tessera_datanode_requests_total{op=\"TILE_WRITE\"} 60\n"
          "tessera_datanode_request_seconds_total{op=\"TILE_READ\"} 1.2\n"
          "tessera_datanode_request_seconds_total{op=\"TILE_WRITE\"} 4\n"
          "tessera_datanode_request_failures_total 3\n"
          "tessera_datanode_read_bytes_total 5000000\n"
          "tessera_datanode_written_bytes_total 8000000\n"
          "tessera_datanode_disk_busy 1\n"
          "tessera_datanode_tiles 7\n"
          "tessera_datanode_scrub_running 1\n"
          "tessera_datanode_scrub_pass_checked_bytes 100\n"
          "tessera_datanode_scrub_pass_total_bytes 400\n",
          &after);
    assert_int_equal(statsfigures_kind_of(&after), STATSFIGURES_DATANODE);
    statsfigures_compute(STATSFIGURES_DATANODE, &before, &after, 2.0, &figures);
    assert_float_equal(figures.ops_per_second, 30, 1e-9);
    assert_float_equal(figures.read_ops_per_second, 10, 1e-9);
    assert_float_equal(figures.write_ops_per_second, 20, 1e-9);
    assert_float_equal(figures.read_bytes_per_second, 2e6, 1e-6);
    assert_float_equal(figures.write_bytes_per_second, 4e6, 1e-6);
    assert_float_equal(figures.latency_ms, 2.2 / 60 * 1000, 1e-9);
    assert_float_equal(figures.read_latency_ms, 0.2 / 20 * 1000, 1e-9);
    assert_float_equal(figures.write_latency_ms, 2.0 / 40 * 1000, 1e-9);
    assert_true(isnan(figures.errors_per_second)); /* went down: restarted */
    assert_true(isnan(figures.free_bytes));        /* not exported here */
    assert_float_equal(figures.disk_busy, 1, 0);
    assert_float_equal(figures.tiles, 7, 0);
    assert_float_equal(figures.scrub_percent, 25, 1e-9);
    assert_true(isnan(figures.repair_bytes_per_second)); /* meta's */
    promtext_clear(&before);
    promtext_clear(&after);
}

static void test_meta_mount_unknown(void **state)
{
    (void)state;
    struct promtext before, after;
    struct statsfigures figures;
    parse("tessera_meta_requests_total{op=\"LOOKUP\"} 4\n"
          "tessera_meta_request_seconds_total{op=\"LOOKUP\"} 0\n"
          "tessera_meta_repair_bytes_done_total 0\n",
          &before);
    parse("tessera_meta_requests_total{op=\"LOOKUP\"} 4\n"
          "tessera_meta_request_seconds_total{op=\"LOOKUP\"} 0\n"
          "tessera_meta_repair_bytes_done_total 3000000\n"
          "tessera_meta_datanodes{state=\"up\"} 3\n"
          "tessera_meta_datanodes{state=\"down\"} 1\n"
          "tessera_meta_repair_steps_waiting 9\n",
          &after);
    assert_int_equal(statsfigures_kind_of(&after), STATSFIGURES_META);
    statsfigures_compute(STATSFIGURES_META, &before, &after, 0.5, &figures);
    assert_float_equal(figures.ops_per_second, 0, 0);
    assert_true(isnan(figures.latency_ms)); /* no requests in the interval */
    assert_true(isnan(figures.read_bytes_per_second));
    assert_true(isnan(figures.errors_per_second)); /* not in either scrape */
    assert_float_equal(figures.repair_bytes_per_second, 6e6, 1e-6);
    assert_float_equal(figures.datanodes_up, 3, 0);
    assert_float_equal(figures.repair_steps_waiting, 9, 0);
    promtext_clear(&before);
    promtext_clear(&after);

    parse("tessera_mount_written_bytes_total 0\n", &before);
    parse("tessera_mount_written_bytes_total 1048576\n", &after);
    assert_int_equal(statsfigures_kind_of(&after), STATSFIGURES_MOUNT);
    statsfigures_compute(STATSFIGURES_MOUNT, &before, &after, 1.0, &figures);
    assert_float_equal(figures.write_bytes_per_second, 1048576, 0);
    assert_true(isnan(figures.errors_per_second)); /* mounts count none */
    promtext_clear(&before);
    promtext_clear(&after);

    parse("node_cpu_seconds_total 5\n", &after);
    assert_int_equal(statsfigures_kind_of(&after), STATSFIGURES_UNKNOWN);
    statsfigures_compute(STATSFIGURES_UNKNOWN, &after, &after, 1.0, &figures);
    assert_true(isnan(figures.ops_per_second));
    assert_string_equal(statsfigures_kind_name(STATSFIGURES_UNKNOWN), "unknown");
    promtext_clear(&after);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_datanode),
        cmocka_unit_test(test_meta_mount_unknown),
    };
    return cmocka_run_group_tests_name("statsfigures", tests, NULL, NULL);
}
