/*
 * @file test_diskio.c
 * Unit tests of the datanode's measured, throttled disk work (diskio.c)
 * on a real tile store in a fresh temporary directory, and of the
 * NODE_THROTTLE request that changes the throttle at run time (through
 * handlers_table, as rpc_server_dispatch() would call it).
 *
 * The wait hook is replaced by one that records the deadline and returns at
 * once, so the throttle's deadlines are checked without sleeping; only the
 * empirical test runs with real waits (a few hundred ms).
 */
#include "diskio.h"
#include "handlers.h"
#include "proto.h"
#include "status.h"
#include "tilestore.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define MB 1000000u
#define MIB (1u << 20)

struct fixture {
    char dir[PATH_MAX];
    struct tilestore *store;
    struct diskio *disk;
    struct handlers_context context;
    int64_t last_until; /* the deadline the wait hook saw last */
    int waits;
    uint8_t payload[256];
    uint8_t reply[256];
};

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

/* The fake wait: remember the deadline, do not sleep. */
static void record_wait(void *arg, int64_t until_ns)
{
    struct fixture *fixture = arg;
    fixture->last_until = until_ns;
    fixture->waits++;
}

static int setup(void **state)
{
    struct fixture *fixture = calloc(1, sizeof(*fixture));
    const char *tmp = getenv("TMPDIR");
    if (!fixture)
        return -1;
    snprintf(fixture->dir, sizeof(fixture->dir), "%s/test_diskio.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fixture->dir) || tilestore_open(fixture->dir, 0, &fixture->store) != 0 ||
        diskio_new(fixture->store, 0, &fixture->disk) != 0) {
        tilestore_close(&fixture->store);
        free(fixture);
        return -1;
    }
    diskio_set_wait(fixture->disk, record_wait, fixture);
    fixture->context.store = fixture->store;
    fixture->context.disk = fixture->disk;
    *state = fixture;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fixture = *state;
    diskio_destroy(&fixture->disk);
    tilestore_close(&fixture->store);
    nftw(fixture->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fixture);
    return 0;
}

/* Every operation ends in the wait hook; without a throttle nothing waits. */
static void test_unthrottled_io_is_measured(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t tile[4 * MIB];
    uint8_t back[16];
    struct diskio_report report;
    size_t got = 0;

    memset(tile, 0x5a, sizeof(tile));
    int64_t before = diskio_now_ns();
    assert_int_equal(diskio_write(fixture->disk, 9, 0, 1, 0, tile, sizeof(tile)), 0);
    assert_int_equal(fixture->waits, 1);
    assert_true(fixture->last_until <= diskio_now_ns()); /* no throttle: due at once */
    assert_true(fixture->last_until >= before);
    assert_int_equal(diskio_sync(fixture->disk, 9, 0, 1), 0);
    assert_int_equal(diskio_read(fixture->disk, 9, 0, 1, 10, sizeof(back), back, &got), 0);
    assert_int_equal(got, sizeof(back));
    assert_int_equal(fixture->waits, 3);

    diskio_report(fixture->disk, &report);
    assert_true(report.write_bytes_per_sec > 0);    /* 4 MiB: a full window */
    assert_int_equal(report.read_bytes_per_sec, 0); /* 16 bytes: not yet a sample */
    assert_int_equal(report.throttle_bytes_per_sec, 0);
    assert_int_equal(report.in_service, 0);
}

/* A throttled write is due when the emulated disk would have finished it. */
static void test_throttled_deadlines(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t tile[MIB];
    struct diskio_report report;

    diskio_set_throttle(fixture->disk, 10 * MB);
    int64_t before = diskio_now_ns();
    assert_int_equal(diskio_write(fixture->disk, 9, 0, 1, 0, tile, sizeof(tile)), 0);
    int64_t after = diskio_now_ns();
    /* 1 MiB at 10 MB/s is 104.9 ms, less the bucket's idle credit (4 KiB: 0.4 ms). */
    int64_t expected = (int64_t)(MIB - DISKIO_THROTTLE_BURST_BYTES) * 1000 / 10;
    assert_true(fixture->last_until >= before + expected);
    assert_true(fixture->last_until <= after + expected);
    /* A second one queues behind the first: a full 104.9 ms later. */
    int64_t first_until = fixture->last_until;
    assert_int_equal(diskio_write(fixture->disk, 9, 1, 1, 0, tile, sizeof(tile)), 0);
    assert_int_equal(fixture->last_until - first_until, (int64_t)MIB * 1000 / 10);
    /* Reads share the same disk. */
    size_t got = 0;
    assert_int_equal(diskio_read(fixture->disk, 9, 0, 1, 0, MIB, tile, &got), 0);
    assert_int_equal(got, MIB);
    assert_int_equal(fixture->last_until - first_until, 2 * (int64_t)MIB * 1000 / 10);
    /* The throttle is reported; off again, nothing waits. */
    diskio_report(fixture->disk, &report);
    assert_int_equal(report.throttle_bytes_per_sec, 10 * MB);
    diskio_set_throttle(fixture->disk, 0);
    before = diskio_now_ns();
    assert_int_equal(diskio_write(fixture->disk, 9, 2, 1, 0, tile, sizeof(tile)), 0);
    assert_true(fixture->last_until <= diskio_now_ns());
    assert_true(fixture->last_until >= before);
    /* A failed write is still waited out, but measures no bytes. */
    assert_int_equal(diskio_write(fixture->disk, 0, 0, 1, 0, tile, 1), -EINVAL);
}

/* The empirical test, with real waits: a throttled disk measures at its cap. */
static void test_probe_measures_the_throttle(void **state)
{
    struct fixture *fixture = *state;
    struct diskio_report report;
    struct stat st;
    char path[PATH_MAX + 16];

    diskio_set_wait(fixture->disk, NULL, NULL); /* sleep for real */
    diskio_set_throttle(fixture->disk, 20 * MB);
    assert_int_equal(diskio_probe(fixture->disk, fixture->dir), 0);
    diskio_report(fixture->disk, &report);
    /* 3 MiB at 20 MB/s: 157 ms each way; the real disk only adds time. */
    assert_true(report.write_bytes_per_sec <= 21 * MB);
    assert_true(report.write_bytes_per_sec >= 10 * MB);
    assert_true(report.read_bytes_per_sec <= 21 * MB);
    assert_true(report.read_bytes_per_sec >= 10 * MB);
    /* It leaves nothing behind, and no tile was counted. */
    for (int i = 0; i < DISKIO_PROBE_FILES; i++) {
        snprintf(path, sizeof(path), "%s/probe.%d", fixture->dir, i);
        assert_int_equal(stat(path, &st), -1);
    }
    uint64_t tiles = 1, used = 1;
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 0);
    assert_int_equal(used, 0);
    /* A data directory that does not exist: an error, the averages untouched. */
    assert_int_equal(diskio_probe(fixture->disk, "/nonexistent/tessera-test"), -ENOENT);
}

/* ---- NODE_THROTTLE -------------------------------------------------------- */

static int call_throttle(struct fixture *fixture, const uint8_t *payload, size_t len,
                         uint64_t *in_effect)
{
    struct rpc_request request;
    struct rpc_response response;
    struct ts_node_throttle reply;

    memset(&request, 0, sizeof(request));
    request.header.type = TS_OP_NODE_THROTTLE;
    request.payload = payload;
    request.payload_len = len;
    memset(&response, 0, sizeof(response));
    response.payload = fixture->reply;
    response.payload_cap = sizeof(fixture->reply);
    int status = handlers_table[TS_OP_NODE_THROTTLE](&fixture->context, &request, &response);
    if (status == TS_OK) {
        assert_int_equal(ts_node_throttle_decode(&reply, response.payload, response.payload_len),
                         0);
        *in_effect = reply.bytes_per_sec;
    }
    return status;
}

static int set_throttle(struct fixture *fixture, uint64_t bytes_per_sec, uint64_t *in_effect)
{
    struct ts_node_throttle request = {.bytes_per_sec = bytes_per_sec};
    int len = ts_node_throttle_encode(&request, fixture->payload, sizeof(fixture->payload));
    assert_true(len > 0);
    return call_throttle(fixture, fixture->payload, (size_t)len, in_effect);
}

static void test_node_throttle_request(void **state)
{
    struct fixture *fixture = *state;
    uint64_t in_effect = 1;

    assert_non_null(handlers_table[TS_OP_NODE_THROTTLE]);
    assert_int_equal(set_throttle(fixture, 40 * MB, &in_effect), TS_OK);
    assert_int_equal(in_effect, 40 * MB);
    assert_int_equal(diskio_throttle(fixture->disk), 40 * MB);
    assert_int_equal(set_throttle(fixture, 0, &in_effect), TS_OK); /* off */
    assert_int_equal(in_effect, 0);
    assert_int_equal(diskio_throttle(fixture->disk), 0);
    /* Absurd rates and malformed payloads are refused; the throttle stays. */
    assert_int_equal(set_throttle(fixture, UINT64_MAX, &in_effect), TS_ERR_INVAL);
    assert_int_equal(call_throttle(fixture, fixture->payload, 7, &in_effect), TS_ERR_BADMSG);
    assert_int_equal(call_throttle(fixture, fixture->payload, 9, &in_effect), TS_ERR_BADMSG);
    assert_int_equal(diskio_throttle(fixture->disk), 0);
    assert_int_equal(fixture->context.stats.requests[TS_OP_NODE_THROTTLE], 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unthrottled_io_is_measured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_throttled_deadlines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_measures_the_throttle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_throttle_request, setup, teardown),
    };
    return cmocka_run_group_tests_name("diskio", tests, NULL, NULL);
}
