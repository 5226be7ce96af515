/*
 * @file test_diskio.c
 * Unit tests of the datanode's measured, throttled disk work (diskio.c)
 * on a real tile store in a fresh temporary directory, and of the
 * NODE_THROTTLE request that changes the throttle at run time, and of the
 * NODE_STATS counters (through nodehandlers_table, as rpc_server_dispatch()
 * would call them).
 *
 * The wait hook is replaced by one that records the deadline and returns at
 * once, so the throttle's deadlines are checked without sleeping; only the
 * empirical test runs with real waits (a few hundred ms).
 */
#include "crc32c.h"
#include "diskio.h"
#include "nodehandlers.h"
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
    struct nodehandlers_context context;
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
    nodehandlers_stats_fini(&fixture->context.stats);
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
    assert_int_equal(diskio_write(fixture->disk, 9, 0, 1, 0, tile, sizeof(tile), NULL), 0);
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
    assert_int_equal(diskio_write(fixture->disk, 9, 0, 1, 0, tile, sizeof(tile), NULL), 0);
    int64_t after = diskio_now_ns();
    /* 1 MiB at 10 MB/s is 104.9 ms, less the bucket's idle credit (4 KiB: 0.4 ms). */
    int64_t expected = (int64_t)(MIB - DISKIO_THROTTLE_BURST_BYTES) * 1000 / 10;
    assert_true(fixture->last_until >= before + expected);
    assert_true(fixture->last_until <= after + expected);
    /* A second one queues behind the first: a full 104.9 ms later. */
    int64_t first_until = fixture->last_until;
    assert_int_equal(diskio_write(fixture->disk, 9, 1, 1, 0, tile, sizeof(tile), NULL), 0);
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
    assert_int_equal(diskio_write(fixture->disk, 9, 2, 1, 0, tile, sizeof(tile), NULL), 0);
    assert_true(fixture->last_until <= diskio_now_ns());
    assert_true(fixture->last_until >= before);
    /* A failed write is still waited out, but measures no bytes. */
    assert_int_equal(diskio_write(fixture->disk, 0, 0, 1, 0, tile, 1, NULL), -EINVAL);
}

/* However far ahead the emulated disk is booked, one operation waits at most DISKIO_MAX_WAIT_NS. */
static void test_one_wait_is_bounded(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t tile[4u << 20];

    diskio_set_throttle(fixture->disk, HANDLERS_MIN_THROTTLE_BYTES_PER_SEC);
    for (int i = 0; i < 3; i++) {
        int64_t before = diskio_now_ns();
        assert_int_equal(
            diskio_write(fixture->disk, 7, (uint64_t)i, 1, 0, tile, sizeof(tile), NULL), 0);
        /* 4 MiB at 1 MB/s (and the ones before) would be 4 s and more. */
        assert_true(fixture->last_until - before <= DISKIO_MAX_WAIT_NS + 500 * 1000 * 1000ll);
        assert_true(fixture->last_until - before >= DISKIO_MAX_WAIT_NS - 500 * 1000 * 1000ll);
    }
    diskio_set_throttle(fixture->disk, 0);
}

/*
 * Deferring (the datanode's loop): a throttled operation does not wait in
 * the hook at all; its reply is due when the emulated disk is done, the
 * next one's one step later, each at most DISKIO_MAX_WAIT_NS after the one
 * before (as when they waited in turn), and the measurement still sees
 * the throttled speed.
 */
static void test_deferred_waits(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t tile[MIB];
    struct diskio_report report;

    diskio_set_defer(fixture->disk, true);
    diskio_set_throttle(fixture->disk, 10 * MB);
    int64_t before = diskio_now_ns();
    assert_int_equal(diskio_write(fixture->disk, 9, 0, 1, 0, tile, sizeof(tile), NULL), 0);
    int64_t after = diskio_now_ns();
    int64_t expected = (int64_t)(MIB - DISKIO_THROTTLE_BURST_BYTES) * 1000 / 10;
    assert_true(fixture->last_until <= after); /* the hook was not asked to wait */
    int64_t first = diskio_take_reply_at(fixture->disk);
    assert_true(first >= before + expected);
    assert_true(first <= after + expected);
    assert_int_equal(diskio_take_reply_at(fixture->disk), 0); /* taken */
    assert_int_equal(diskio_write(fixture->disk, 9, 1, 1, 0, tile, sizeof(tile), NULL), 0);
    assert_int_equal(diskio_take_reply_at(fixture->disk) - first, (int64_t)MIB * 1000 / 10);
    diskio_report(fixture->disk, &report);
    assert_true(report.write_bytes_per_sec <= 11 * MB);
    assert_true(report.write_bytes_per_sec >= 9 * MB);

    /* Many at the lowest rate: each reply at most DISKIO_MAX_WAIT_NS after the previous. */
    static uint8_t big[4u << 20];
    diskio_set_throttle(fixture->disk, HANDLERS_MIN_THROTTLE_BYTES_PER_SEC);
    int64_t previous = diskio_now_ns();
    for (int i = 0; i < 3; i++) {
        assert_int_equal(
            diskio_write(fixture->disk, 8, (uint64_t)i, 1, 0, big, sizeof(big), NULL), 0);
        int64_t due = diskio_take_reply_at(fixture->disk);
        assert_true(due - previous <= DISKIO_MAX_WAIT_NS + 500 * 1000 * 1000ll);
        assert_true(due - previous >= DISKIO_MAX_WAIT_NS - 500 * 1000 * 1000ll);
        previous = due;
    }
    diskio_set_throttle(fixture->disk, 0);
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
    int status = nodehandlers_table[TS_OP_NODE_THROTTLE](&fixture->context, &request, &response);
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

    assert_non_null(nodehandlers_table[TS_OP_NODE_THROTTLE]);
    assert_int_equal(set_throttle(fixture, 40 * MB, &in_effect), TS_OK);
    assert_int_equal(in_effect, 40 * MB);
    assert_int_equal(diskio_throttle(fixture->disk), 40 * MB);
    assert_int_equal(set_throttle(fixture, 0, &in_effect), TS_OK); /* off */
    assert_int_equal(in_effect, 0);
    assert_int_equal(diskio_throttle(fixture->disk), 0);
    /* Absurd rates and malformed payloads are refused; the throttle stays. */
    assert_int_equal(set_throttle(fixture, UINT64_MAX, &in_effect), TS_ERR_INVAL);
    /* 1 B/s would have the loop wait ~18 h for one tile: refused too. */
    assert_int_equal(set_throttle(fixture, 1, &in_effect), TS_ERR_INVAL);
    assert_int_equal(set_throttle(fixture, HANDLERS_MIN_THROTTLE_BYTES_PER_SEC - 1, &in_effect),
                     TS_ERR_INVAL);
    assert_int_equal(call_throttle(fixture, fixture->payload, 7, &in_effect), TS_ERR_BADMSG);
    assert_int_equal(call_throttle(fixture, fixture->payload, 9, &in_effect), TS_ERR_BADMSG);
    assert_int_equal(diskio_throttle(fixture->disk), 0);
    assert_int_equal(fixture->context.stats.requests[TS_OP_NODE_THROTTLE], 7);
    assert_int_equal(set_throttle(fixture, HANDLERS_MIN_THROTTLE_BYTES_PER_SEC, &in_effect), TS_OK);
    assert_int_equal(in_effect, HANDLERS_MIN_THROTTLE_BYTES_PER_SEC);
}

/* ---- NODE_STATS ----------------------------------------------------------- */

/* Calls op with payload (and frame 1 data); the reply goes to reply[cap]. */
static int call_op(struct fixture *fixture, uint16_t op, const uint8_t *payload, size_t len,
                   const void *data, size_t data_len, uint8_t *reply, size_t cap, size_t *reply_len)
{
    struct rpc_request request;
    struct rpc_response response;

    memset(&request, 0, sizeof(request));
    request.header.type = op;
    request.payload = payload;
    request.payload_len = len;
    request.data = data;
    request.data_len = data_len;
    memset(&response, 0, sizeof(response));
    response.payload = reply;
    response.payload_cap = cap;
    int status = nodehandlers_table[op](&fixture->context, &request, &response);
    if (response.data_free)
        response.data_free(response.data, NULL);
    *reply_len = response.payload_len;
    return status;
}

static void tile_io(struct fixture *fixture, uint16_t op, uint64_t ino, uint64_t tile,
                    uint32_t length)
{
    static uint8_t bytes[4096];
    uint8_t reply[64];
    size_t reply_len;
    int len;
    if (op == TS_OP_TILE_WRITE) {
        struct ts_tile_write_req m = {
            .ino = ino, .tile = tile, .version = 1, .crc = crc32c(0, bytes, length)};
        len = ts_tile_write_req_encode(&m, fixture->payload, sizeof(fixture->payload));
    } else {
        struct ts_tile_read_req m = {.ino = ino, .tile = tile, .version = 1, .length = length};
        len = ts_tile_read_req_encode(&m, fixture->payload, sizeof(fixture->payload));
    }
    assert_true(len > 0);
    assert_int_equal(call_op(fixture, op, fixture->payload, (size_t)len,
                             op == TS_OP_TILE_WRITE ? bytes : NULL,
                             op == TS_OP_TILE_WRITE ? length : 0, reply, sizeof(reply), &reply_len),
                     TS_OK);
}

static void node_stats(struct fixture *fixture, uint32_t reset, struct ts_node_stats_rep *stats,
                       uint8_t *reply, size_t cap)
{
    struct ts_node_stats_req m = {.reset = reset};
    size_t reply_len;
    int len = ts_node_stats_req_encode(&m, fixture->payload, sizeof(fixture->payload));
    assert_true(len > 0);
    assert_int_equal(call_op(fixture, TS_OP_NODE_STATS, fixture->payload, (size_t)len, NULL, 0,
                             reply, cap, &reply_len),
                     TS_OK);
    assert_int_equal(ts_node_stats_rep_decode(stats, reply, reply_len), 0);
    assert_int_equal(stats->ops.len, (size_t)stats->op_count * ts_stats_op_rec_bytes);
    assert_int_equal(stats->tiles.len, (size_t)stats->tile_count * ts_stats_tile_rec_bytes);
}

static void test_node_stats(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t reply[1 << 16];
    struct ts_node_stats_rep stats;
    struct ts_cursor cursor;
    size_t reply_len;

    tile_io(fixture, TS_OP_TILE_WRITE, 7, 3, 4096);
    tile_io(fixture, TS_OP_TILE_WRITE, 7, 1, 100);
    tile_io(fixture, TS_OP_TILE_READ, 7, 3, 4096);
    tile_io(fixture, TS_OP_TILE_READ, 7, 1, 50);
    tile_io(fixture, TS_OP_TILE_READ, 7, 3, 10);
    node_stats(fixture, 1, &stats, reply, sizeof(reply));
    assert_int_equal(stats.requests, 6);
    assert_int_equal(stats.failures, 0);
    assert_int_equal(stats.bytes_written, 4196);
    assert_int_equal(stats.bytes_read, 4156);
    assert_int_equal(stats.op_count, 3);
    ts_cursor_init(&cursor, stats.ops.ptr, stats.ops.len);
    uint32_t expected_ops[3][2] = {
        {TS_OP_TILE_WRITE, 2}, {TS_OP_TILE_READ, 3}, {TS_OP_NODE_STATS, 1}};
    for (int i = 0; i < 3; i++) {
        struct ts_stats_op_rec op;
        assert_int_equal(ts_stats_op_rec_read(&cursor, &op), 0);
        assert_int_equal(op.opcode, expected_ops[i][0]);
        assert_int_equal(op.count, expected_ops[i][1]);
    }
    /* Distinct tiles, in first-read order, with their reads and bytes. */
    assert_int_equal(stats.tile_count, 2);
    assert_int_equal(stats.tiles_dropped, 0);
    ts_cursor_init(&cursor, stats.tiles.ptr, stats.tiles.len);
    uint64_t expected_tiles[2][4] = {{7, 3, 2, 4106}, {7, 1, 1, 50}};
    for (int i = 0; i < 2; i++) {
        struct ts_stats_tile_rec tile;
        assert_int_equal(ts_stats_tile_rec_read(&cursor, &tile), 0);
        uint64_t fields[4] = {tile.ino, tile.tile, tile.reads, tile.bytes};
        for (int j = 0; j < 4; j++)
            assert_int_equal(fields[j], expected_tiles[i][j]);
    }

    /* After the reset only what came since counts. */
    tile_io(fixture, TS_OP_TILE_READ, 7, 1, 100);
    node_stats(fixture, 0, &stats, reply, sizeof(reply));
    assert_int_equal(stats.requests, 2);
    assert_int_equal(stats.bytes_read, 100);
    assert_int_equal(stats.bytes_written, 0);
    assert_int_equal(stats.tile_count, 1);
    ts_cursor_init(&cursor, stats.tiles.ptr, stats.tiles.len);
    struct ts_stats_tile_rec tile;
    assert_int_equal(ts_stats_tile_rec_read(&cursor, &tile), 0);
    assert_int_equal(tile.ino, 7);
    assert_int_equal(tile.tile, 1);
    assert_int_equal(tile.reads, 1);

    /* Malformed requests are refused (and counted as failures). */
    assert_int_equal(call_op(fixture, TS_OP_NODE_STATS, fixture->payload, 3, NULL, 0, reply,
                             sizeof(reply), &reply_len),
                     TS_ERR_BADMSG);
    fixture->payload[0] = 2;
    assert_int_equal(call_op(fixture, TS_OP_NODE_STATS, fixture->payload, 4, NULL, 0, reply,
                             sizeof(reply), &reply_len),
                     TS_ERR_BADMSG);
    assert_int_equal(fixture->context.stats.failures, 2);
}

static void test_readset_bound(void **state)
{
    struct readset *set;
    const struct readset_entry *entries;
    size_t count;
    (void)state;

    assert_int_equal(readset_new(0, &set), -EINVAL);
    assert_int_equal(readset_new(3, &set), 0);
    for (uint64_t tile = 0; tile < 5; tile++)
        readset_add(set, 1, tile, 10);
    readset_add(set, 1, 2, 5);
    readset_add(set, 1, 4, 5); /* still not in: the set was full when it came */
    entries = readset_entries(set, &count);
    assert_int_equal(count, 3);
    assert_int_equal(entries[2].tile, 2);
    assert_int_equal(entries[2].reads, 2);
    assert_int_equal(entries[2].bytes, 15);
    assert_int_equal(readset_dropped(set), 3);
    readset_clear(set);
    readset_entries(set, &count);
    assert_int_equal(count, 0);
    readset_add(set, 2, 9, 1);
    entries = readset_entries(set, &count);
    assert_int_equal(count, 1);
    assert_int_equal(entries[0].ino, 2);
    readset_destroy(&set);
    assert_null(set);
    readset_destroy(&set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unthrottled_io_is_measured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_throttled_deadlines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_wait_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deferred_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_measures_the_throttle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_throttle_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_stats, setup, teardown),
        cmocka_unit_test(test_readset_bound),
    };
    return cmocka_run_group_tests_name("diskio", tests, NULL, NULL);
}
