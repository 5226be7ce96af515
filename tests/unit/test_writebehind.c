/*
 * @file test_writebehind.c
 * Unit tests of the mount's write path (fuse/writebehind.c, filecommit.c,
 * tileplace.c, tilelocation.c) against an in-memory meta and datanodes
 * (fakecluster.h): bytes land in the right tiles on the right datanodes,
 * writes of one tile keep their order while jobs overlap, flush reports a
 * write's error once, a write to a tile that moved follows it, and dynamic
 * placement spreads a stream over the datanodes.
 */
#include "fakecluster.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define TILE (64u * 1024u)
#define INO 10

static int setup(void **state)
{
    struct fakecluster_mount *mount = calloc(1, sizeof(*mount));
    if (!mount || fakecluster_mount(mount, TILE, 4) != 0) {
        free(mount);
        return -1;
    }
    *state = mount;
    return 0;
}

static int teardown(void **state)
{
    fakecluster_unmount(*state);
    free(*state);
    return 0;
}

/* Byte i of the test pattern of `seed`. */
static uint8_t pattern(uint64_t i, unsigned seed)
{
    return (uint8_t)((i * 31 + seed) ^ (i >> 11));
}

static void fill(uint8_t *buf, uint64_t offset, size_t length, unsigned seed)
{
    for (size_t i = 0; i < length; i++)
        buf[i] = pattern(offset + i, seed);
}

/* Asserts that the datanode meta names for `tile` holds expected[0..TILE) (zeros past its file). */
static void assert_tile_holds(uint64_t ino, uint64_t tile, const uint8_t *expected)
{
    struct tile_location location;
    static uint8_t got[TILE];
    assert_true(fakecluster_location(ino, tile, &location));
    memset(got, 0, sizeof(got));
    assert_true(fakecluster_tile_bytes(location.node, ino, tile, got, TILE) >= 0);
    assert_memory_equal(got, expected, TILE);
}

static struct open_file *open_writing(struct fakecluster_mount *mount, uint64_t ino,
                                      uint32_t placement)
{
    struct ts_attr attr = fakecluster_file(ino, 0, placement);
    struct open_file *file = NULL;
    assert_int_equal(datapath_open(mount->datapath, &attr, NULL, true, &file), 0);
    return file;
}

/* 3.5 tiles in 16 KiB writes: each tile on its datanode, size committed at flush. */
static void test_write_lands_in_tiles(void **state)
{
    struct fakecluster_mount *mount = *state;
    const size_t size = 3 * TILE + TILE / 2;
    uint8_t *bytes = malloc(4 * TILE);
    assert_non_null(bytes);
    memset(bytes, 0, 4 * TILE);
    fill(bytes, 0, size, 1);

    struct open_file *file = open_writing(mount, INO, TS_PLACEMENT_STATIC);
    for (size_t at = 0; at < size; at += 16 * 1024)
        assert_int_equal(
            datapath_write(mount->datapath, file, (const char *)bytes + at, 16 * 1024, at, NULL),
            16 * 1024);
    assert_int_equal(datapath_file_size(mount->datapath, file), size);
    assert_int_equal(datapath_flush(mount->datapath, file), 0);
    assert_int_equal(fakecluster_meta_of(INO).size, size);
    for (uint64_t tile = 0; tile < 4; tile++)
        assert_tile_holds(INO, tile, bytes + tile * TILE);
    /* Meta placed them round the nodes: (ino + tile) mod 3 + 1. */
    struct tile_location location;
    assert_true(fakecluster_location(INO, 0, &location));
    assert_int_equal(location.node, INO % FAKECLUSTER_NODES + 1);
    /* A sequential writer has meta place tiles ahead in batches; no bytes went past the end. */
    for (uint32_t node = 1; node <= FAKECLUSTER_NODES; node++)
        assert_int_equal(fakecluster_tile_bytes(node, INO, 4, bytes, TILE), -1);

    assert_int_equal(fakecluster_meta_of(INO).releases, 0);
    datapath_release(mount->datapath, file, true);
    assert_int_equal(fakecluster_meta_of(INO).releases, 1); /* after the last handle, not before */
    free(bytes);
}

/*
 * Truncating a file with writes not committed yet is one request: SETATTR
 * carries the writer's COMMIT, and a later flush has nothing left to
 * commit; open(O_TRUNC) sends none at all (its size would be replaced).
 */
static void test_truncation_carries_the_commit(void **state)
{
    struct fakecluster_mount *mount = *state;
    static uint8_t bytes[5000];
    fill(bytes, 0, sizeof(bytes), 3);

    struct open_file *file = open_writing(mount, INO, TS_PLACEMENT_STATIC);
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes, sizeof(bytes), 0,
                                    NULL),
                     (ssize_t)sizeof(bytes));
    struct ts_setattr_req truncate = {.ino = INO, .valid = TS_SET_SIZE, .size = 3000};
    struct ts_attr attr;
    assert_int_equal(datapath_setattr(mount->datapath, &truncate, &attr), 0);
    assert_int_equal(attr.size, 3000);
    assert_int_equal(fakecluster_meta_of(INO).commits, 1); /* carried by the SETATTR */
    assert_int_equal(datapath_file_size(mount->datapath, file), 3000);
    assert_int_equal(datapath_flush(mount->datapath, file), 0);
    assert_int_equal(fakecluster_meta_of(INO).commits, 1);

    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes, sizeof(bytes), 0,
                                    NULL),
                     (ssize_t)sizeof(bytes));
    char *array_spec = NULL;
    assert_int_equal(datapath_open_truncating(mount->datapath, INO, O_WRONLY | O_TRUNC,
                                              TS_SET_SIZE | TS_SET_MTIME_NOW, &attr, &array_spec),
                     0);
    assert_null(array_spec);
    assert_int_equal(attr.size, 0);
    assert_int_equal(datapath_file_size(mount->datapath, file), 0);
    assert_int_equal(datapath_flush(mount->datapath, file), 0);
    assert_int_equal(fakecluster_meta_of(INO).size, 0); /* the close grows nothing back */
    assert_int_equal(fakecluster_meta_of(INO).commits, 1);
    datapath_release(mount->datapath, file, true);
}

struct flusher {
    struct fakecluster_mount *mount;
    struct open_file *file;
    int result;
};

static void *flusher_main(void *arg)
{
    struct flusher *flusher = arg;
    flusher->result = datapath_flush(flusher->mount->datapath, flusher->file);
    return NULL;
}

/*
 * A COMMIT on its way stalls no writer of the file: while meta takes its
 * time to answer a flush, a write into a tile already placed goes on; the
 * write made meanwhile stays to commit, and the next flush commits it.
 */
static void test_slow_commit_stalls_no_writer(void **state)
{
    struct fakecluster_mount *mount = *state;
    static uint8_t bytes[3000];
    fill(bytes, 0, sizeof(bytes), 5);

    struct open_file *file = open_writing(mount, INO, TS_PLACEMENT_STATIC);
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes, 1000, 0, NULL),
                     1000);
    assert_int_equal(datapath_flush(mount->datapath, file), 0); /* tile 0 placed, committed */
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes + 1000, 1000, 1000,
                                    NULL),
                     1000);

    fakecluster_meta_hold(true);
    struct flusher flusher = {.mount = mount, .file = file};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, flusher_main, &flusher), 0);
    assert_true(fakecluster_meta_wait_for_caller()); /* its COMMIT */
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes + 2000, 1000, 2000,
                                    NULL),
                     1000);
    fakecluster_meta_hold(false);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(flusher.result, 0);
    assert_int_equal(fakecluster_meta_of(INO).commits, 2);
    assert_int_equal(fakecluster_meta_of(INO).size, 2000);
    /* The write made during the COMMIT was not taken for committed. */
    assert_int_equal(datapath_flush(mount->datapath, file), 0);
    assert_int_equal(fakecluster_meta_of(INO).commits, 3);
    assert_int_equal(fakecluster_meta_of(INO).size, 3000);
    datapath_release(mount->datapath, file, true);
}

/*
 * Overlapping writes that keep breaking the buffer's run, so that one tile
 * has many write jobs queued while each takes up to 2 ms at the datanode:
 * the tile must end as the writes left it, in the order they were made.
 */
static void test_write_keeps_tile_order(void **state)
{
    struct fakecluster_mount *mount = *state;
    uint8_t *model = calloc(2, TILE);
    uint8_t chunk[4096];
    assert_non_null(model);
    fakecluster_write_delay_us(2000);
    srand(28);

    struct open_file *file = open_writing(mount, INO, TS_PLACEMENT_STATIC);
    for (unsigned i = 0; i < 300; i++) {
        size_t length = 1 + (size_t)rand() % sizeof(chunk);
        uint64_t offset = (uint64_t)rand() % (2 * TILE - length);
        if (offset / TILE != (offset + length - 1) / TILE) /* one tile at a time */
            offset = (offset / TILE + 1) * TILE - length;
        memset(chunk, (int)(i % 255) + 1, length);
        memcpy(model + offset, chunk, length);
        assert_int_equal(
            datapath_write(mount->datapath, file, (const char *)chunk, length, offset, NULL),
            (ssize_t)length);
    }
    assert_int_equal(datapath_fsync(mount->datapath, file), 0);
    assert_tile_holds(INO, 0, model);
    assert_tile_holds(INO, 1, model + TILE);
    datapath_release(mount->datapath, file, true);
    free(model);
}

/* A datanode refuses a tile's write: the next flush says so, once. */
static void test_flush_reports_the_error_once(void **state)
{
    struct fakecluster_mount *mount = *state;
    static uint8_t bytes[TILE];
    fill(bytes, 0, TILE, 2);

    struct open_file *file = open_writing(mount, INO, TS_PLACEMENT_STATIC);
    fakecluster_fail_writes(INO % FAKECLUSTER_NODES + 1, TS_ERR_NOSPC); /* tile 0's node */
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes, TILE, 0, NULL),
                     TILE);
    assert_int_equal(datapath_flush(mount->datapath, file), -ENOSPC);
    assert_int_equal(fakecluster_meta_of(INO).commits, 0); /* a failed flush commits nothing */
    assert_int_equal(datapath_flush(mount->datapath, file), 0);

    fakecluster_fail_writes(INO % FAKECLUSTER_NODES + 1, TS_OK);
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes, TILE, 0, NULL),
                     TILE);
    assert_int_equal(datapath_flush(mount->datapath, file), 0);
    assert_tile_holds(INO, 0, bytes);
    datapath_release(mount->datapath, file, true);
}

/*
 * A tile moves to another datanode after this mount cached its location:
 * the old datanode answers STALE, and the write follows the tile to where
 * meta says it is now.
 */
static void test_write_follows_a_moved_tile(void **state)
{
    struct fakecluster_mount *mount = *state;
    static uint8_t first[TILE], second[TILE];
    struct tile_location before, after;
    fill(first, 0, TILE, 3);
    fill(second, 0, TILE, 4);

    struct open_file *file = open_writing(mount, INO, TS_PLACEMENT_STATIC);
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)first, TILE, 0, NULL),
                     TILE);
    assert_int_equal(datapath_flush(mount->datapath, file), 0);
    assert_true(fakecluster_location(INO, 0, &before));

    after = before;
    after.node = before.node % FAKECLUSTER_NODES + 1;
    after.version = before.version + 100;
    after.holders[0] =
        (struct tile_holder){.node = after.node, .state = TS_REPLICA_UP, .version = after.version};
    after.read_node = after.node;
    after.read_version = after.version;
    fakecluster_store(after.node, INO, 0, after.version, first, TILE);
    fakecluster_map(INO, 0, &after);
    fakecluster_moved_away(before.node, INO, 0);

    assert_int_equal(datapath_write(mount->datapath, file, (const char *)second, TILE, 0, NULL),
                     TILE);
    assert_int_equal(datapath_flush(mount->datapath, file), 0);
    assert_tile_holds(INO, 0, second);
    assert_int_equal(fakecluster_requests(before.node, TS_OP_TILE_WRITE, INO, 0), 2);
    assert_int_equal(fakecluster_requests(after.node, TS_OP_TILE_WRITE, INO, 0), 1);
    datapath_release(mount->datapath, file, true);
}

/* Dynamic placement: the writer names a node per batch, and a stream reaches every node. */
static void test_dynamic_placement_spreads_a_stream(void **state)
{
    struct fakecluster_mount *mount = *state;
    uint8_t *bytes = malloc(12 * TILE);
    int per_node[FAKECLUSTER_NODES + 1] = {0};
    assert_non_null(bytes);
    fill(bytes, 0, 12 * TILE, 5);

    struct open_file *file = open_writing(mount, INO, TS_PLACEMENT_DYNAMIC);
    for (uint64_t tile = 0; tile < 12; tile++)
        assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes + tile * TILE,
                                        TILE, tile * TILE, NULL),
                         TILE);
    assert_int_equal(datapath_flush(mount->datapath, file), 0);
    for (uint64_t tile = 0; tile < 12; tile++) {
        struct tile_location location;
        assert_true(fakecluster_location(INO, tile, &location));
        per_node[location.node]++;
        assert_tile_holds(INO, tile, bytes + tile * TILE);
    }
    for (uint32_t node = 1; node <= FAKECLUSTER_NODES; node++)
        assert_true(per_node[node] > 0);
    datapath_release(mount->datapath, file, true);
    free(bytes);
}

/* Asserts that every holder meta names for `tile` holds expected[0..TILE); returns their count. */
static uint32_t assert_holders_hold(uint64_t ino, uint64_t tile, const uint8_t *expected)
{
    struct tile_location location;
    static uint8_t got[TILE];
    assert_true(fakecluster_location(ino, tile, &location));
    for (uint32_t h = 0; h < location.holder_count; h++) {
        memset(got, 0, sizeof(got));
        assert_true(fakecluster_tile_bytes(location.holders[h].node, ino, tile, got, TILE) >= 0);
        assert_memory_equal(got, expected, TILE);
    }
    return location.holder_count;
}

/* copies=2: every tile's bytes land on both its holders, and fsync succeeds. */
static void test_write_reaches_every_holder(void **state)
{
    struct fakecluster_mount *mount = *state;
    static uint8_t bytes[4 * TILE];
    fill(bytes, 0, sizeof(bytes), 6);
    fakecluster_set_copies(2);

    struct open_file *file = open_writing(mount, INO, TS_PLACEMENT_STATIC);
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes, sizeof(bytes), 0,
                                    NULL),
                     (ssize_t)sizeof(bytes));
    assert_int_equal(datapath_fsync(mount->datapath, file), 0);
    for (uint64_t tile = 0; tile < 4; tile++) {
        struct tile_location location;
        assert_int_equal(assert_holders_hold(INO, tile, bytes + tile * TILE), 2);
        assert_true(fakecluster_location(INO, tile, &location));
        assert_int_not_equal(location.holders[0].node, location.holders[1].node);
        for (uint32_t h = 0; h < 2; h++)
            assert_int_equal(fakecluster_requests(location.holders[h].node, TS_OP_TILE_WRITE, INO,
                                                  tile),
                             1);
    }
    assert_int_equal(fakecluster_replica_drops(), 0);
    datapath_release(mount->datapath, file, true);
}

/* copies=3: a second write of a tile, placed from the mount's location cache
 * (which keeps CACHED_HOLDERS holders compactly), reaches all three holders. */
static void test_cached_location_keeps_every_holder(void **state)
{
    struct fakecluster_mount *mount = *state;
    static uint8_t first[2 * TILE];
    static uint8_t second[2 * TILE];
    fill(first, 0, sizeof(first), 8);
    fill(second, 0, sizeof(second), 9);
    fakecluster_set_copies(3);

    struct open_file *file = open_writing(mount, INO, TS_PLACEMENT_STATIC);
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)first, sizeof(first), 0,
                                    NULL),
                     (ssize_t)sizeof(first));
    assert_int_equal(datapath_fsync(mount->datapath, file), 0);
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)second, sizeof(second),
                                    0, NULL),
                     (ssize_t)sizeof(second));
    assert_int_equal(datapath_fsync(mount->datapath, file), 0);
    for (uint64_t tile = 0; tile < 2; tile++) {
        struct tile_location location;
        assert_int_equal(assert_holders_hold(INO, tile, second + tile * TILE), 3);
        assert_true(fakecluster_location(INO, tile, &location));
        for (uint32_t h = 0; h < 3; h++)
            assert_int_equal(fakecluster_requests(location.holders[h].node, TS_OP_TILE_WRITE, INO,
                                                  tile),
                             2);
    }
    datapath_release(mount->datapath, file, true);
}

/* One writer of test_many_writers_share_the_budget: its own file, whole tiles. */
struct budget_writer {
    struct fakecluster_mount *mount;
    uint64_t ino;
    int result; /* 0, or the first failure */
};

#define BUDGET_WRITERS 24
#define BUDGET_WRITER_TILES 6

static void *budget_writer_main(void *arg)
{
    struct budget_writer *writer = arg;
    static uint8_t bytes[TILE];
    struct ts_attr attr = fakecluster_file(writer->ino, 0, TS_PLACEMENT_STATIC);
    struct open_file *file = NULL;
    writer->result = datapath_open(writer->mount->datapath, &attr, NULL, true, &file);
    for (uint64_t tile = 0; writer->result == 0 && tile < BUDGET_WRITER_TILES; tile++) {
        ssize_t wrote = datapath_write(writer->mount->datapath, file, (const char *)bytes, TILE,
                                       tile * TILE, NULL);
        writer->result = wrote == TILE ? 0 : -EIO;
    }
    if (file) {
        if (writer->result == 0)
            writer->result = datapath_fsync(writer->mount->datapath, file);
        datapath_release(writer->mount->datapath, file, true);
    }
    return NULL;
}

/*
 * More writers than the write budget has tiles (16) and than there are
 * workers (8), each tile written to two holders, slowly: every writer
 * finishes. A writer used to wait for budget holding its file's lock,
 * which the workers ending its jobs need: they all stopped, and with them
 * the queued jobs that hold the budget (test_memory_cap hung so). A
 * writer still stuck after 20 s fails the test (abort: its threads cannot
 * be unwound).
 */
static void test_many_writers_share_the_budget(void **state)
{
    struct fakecluster_mount *mount = *state;
    struct budget_writer writers[BUDGET_WRITERS];
    pthread_t threads[BUDGET_WRITERS];
    fakecluster_set_copies(2);
    fakecluster_write_delay_us(3000);

    for (int i = 0; i < BUDGET_WRITERS; i++) {
        writers[i] = (struct budget_writer){.mount = mount, .ino = 100 + (uint64_t)i};
        assert_int_equal(pthread_create(&threads[i], NULL, budget_writer_main, &writers[i]), 0);
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 20;
    for (int i = 0; i < BUDGET_WRITERS; i++) {
        if (pthread_timedjoin_np(threads[i], NULL, &deadline) != 0) {
            fprintf(stderr, "writer %d of %d still stuck after 20 s: write budget deadlock\n", i,
                    BUDGET_WRITERS);
            abort();
        }
        assert_int_equal(writers[i].result, 0);
    }
    fakecluster_write_delay_us(0);
    for (int i = 0; i < BUDGET_WRITERS; i++) {
        struct tile_location location;
        assert_true(fakecluster_location(100 + (uint64_t)i, BUDGET_WRITER_TILES - 1, &location));
        assert_int_equal(location.holder_count, 2);
    }
}

/* One holder failing: the write succeeds with the other, which meta keeps
 * alone (the failed one dropped); all failing: the error reaches flush. */
static void test_failed_holder_is_dropped(void **state)
{
    struct fakecluster_mount *mount = *state;
    static uint8_t bytes[3 * TILE];
    fill(bytes, 0, sizeof(bytes), 7);
    fakecluster_set_copies(2);
    fakecluster_fail_writes(2, TS_ERR_IO);

    struct open_file *file = open_writing(mount, INO, TS_PLACEMENT_STATIC);
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes, sizeof(bytes), 0,
                                    NULL),
                     (ssize_t)sizeof(bytes));
    assert_int_equal(datapath_fsync(mount->datapath, file), 0);
    int dropped = 0;
    for (uint64_t tile = 0; tile < 3; tile++) {
        struct tile_location location;
        assert_true(fakecluster_location(INO, tile, &location));
        for (uint32_t h = 0; h < location.holder_count; h++)
            assert_int_not_equal(location.holders[h].node, 2);
        dropped += location.holder_count == 1;
        assert_holders_hold(INO, tile, bytes + tile * TILE);
    }
    /* Nodes n, n+1 hold each tile: node 2 is one of the two for two tiles of three. */
    assert_int_equal(dropped, 2);
    assert_int_equal(fakecluster_replica_drops(), 2);

    /* Every holder failing is the write's error, reported by flush. */
    fakecluster_fail_writes(1, TS_ERR_IO);
    fakecluster_fail_writes(3, TS_ERR_IO);
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes, TILE, 0, NULL),
                     TILE);
    assert_int_equal(datapath_flush(mount->datapath, file), -EIO);
    fakecluster_fail_writes(1, TS_OK);
    fakecluster_fail_writes(2, TS_OK);
    fakecluster_fail_writes(3, TS_OK);
    datapath_release(mount->datapath, file, true);
}

/* A holder failing its TILE_SYNC where the other synced: dropped, fsync
 * succeeds; the only holder written failing it: fsync fails. */
static void test_failed_sync_drops_holder(void **state)
{
    struct fakecluster_mount *mount = *state;
    static uint8_t bytes[3 * TILE];
    fill(bytes, 0, sizeof(bytes), 8);
    fakecluster_set_copies(2);
    fakecluster_fail_syncs(2, TS_ERR_IO);

    struct open_file *file = open_writing(mount, INO, TS_PLACEMENT_STATIC);
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes, sizeof(bytes), 0,
                                    NULL),
                     (ssize_t)sizeof(bytes));
    assert_int_equal(datapath_fsync(mount->datapath, file), 0);
    for (uint64_t tile = 0; tile < 3; tile++) {
        struct tile_location location;
        assert_true(fakecluster_location(INO, tile, &location));
        for (uint32_t h = 0; h < location.holder_count; h++)
            assert_int_not_equal(location.holders[h].node, 2);
    }
    assert_int_equal(fakecluster_replica_drops(), 2);

    /* Now the tiles node 2 lost live on one holder each: that one failing
     * its sync leaves no durable copy, and fsync says so. */
    struct tile_location location;
    assert_true(fakecluster_location(INO, 0, &location));
    uint32_t only = location.holder_count == 1 ? location.holders[0].node : 0;
    if (only == 0) {
        assert_true(fakecluster_location(INO, 1, &location));
        only = location.holders[0].node;
    }
    fakecluster_fail_syncs(2, TS_OK);
    fakecluster_fail_syncs(only, TS_ERR_IO);
    assert_int_equal(datapath_write(mount->datapath, file, (const char *)bytes, sizeof(bytes), 0,
                                    NULL),
                     (ssize_t)sizeof(bytes));
    assert_int_equal(datapath_fsync(mount->datapath, file), -EIO);
    fakecluster_fail_syncs(only, TS_OK);
    datapath_release(mount->datapath, file, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_lands_in_tiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_sync_drops_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_keeps_tile_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncation_carries_the_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_commit_stalls_no_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_reports_the_error_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_follows_a_moved_tile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dynamic_placement_spreads_a_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_reaches_every_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cached_location_keeps_every_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_writers_share_the_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_holder_is_dropped, setup, teardown),
    };
    return cmocka_run_group_tests_name("writebehind", tests, NULL, NULL);
}
