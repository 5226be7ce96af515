/*
 * @file test_readpath.c
 * Unit tests of the mount's read path (fuse/readpath.c, tilecache.c,
 * tileread.c, tilelocation.c) against an in-memory meta and datanodes
 * (fakecluster.h): reads return the datanodes' bytes and this mount's own
 * unwritten ones, zeros for holes, EIO for a tile meta knows was stored
 * but its datanode lost; a read follows a tile that moved; a sequential
 * reader has the next tiles loaded ahead of it.
 */
#include "fakecluster.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define TILE (64u * 1024u)
#define INO 20
#define TILES 8

static uint8_t file_bytes[TILES * TILE];
static uint8_t got[TILES * TILE];

static int setup(void **state)
{
    struct fakecluster_mount *mount = calloc(1, sizeof(*mount));
    if (!mount || fakecluster_mount(mount, TILE, 4) != 0) {
        free(mount);
        return -1;
    }
    for (size_t i = 0; i < sizeof(file_bytes); i++)
        file_bytes[i] = (uint8_t)((i * 7) ^ (i >> 13));
    *state = mount;
    return 0;
}

static int teardown(void **state)
{
    fakecluster_unmount(*state);
    free(*state);
    return 0;
}

/* Puts tile `tile` of file_bytes on datanode `node`, mapped and stored in meta. */
static void tile_put(uint64_t tile, uint32_t node, uint64_t version)
{
    struct tile_location location = {.node = node, .version = version, .flags = TS_TILE_STORED};
    fakecluster_store(node, INO, tile, version, file_bytes + tile * TILE, TILE);
    fakecluster_map(INO, tile, &location);
}

/* Opens INO for reading as meta describes a file of `size` bytes. */
static struct open_file *open_reading(struct fakecluster_mount *mount, uint64_t size)
{
    struct ts_attr attr = fakecluster_file(INO, size, TS_PLACEMENT_STATIC);
    struct open_file *file = NULL;
    assert_int_equal(datapath_open(mount->datapath, &attr, NULL, false, &file), 0);
    return file;
}

/* Waits up to two seconds for a datanode to have been asked for a tile. */
static bool read_requested(uint32_t node, uint64_t tile)
{
    for (int i = 0; i < 2000; i++) {
        if (fakecluster_requests(node, TS_OP_TILE_READ, INO, tile) > 0)
            return true;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return false;
}

/* Tiles on every datanode, read back whole and in odd pieces. */
static void test_read_returns_the_datanodes_bytes(void **state)
{
    struct fakecluster_mount *mount = *state;
    for (uint64_t tile = 0; tile < TILES; tile++)
        tile_put(tile, (uint32_t)(tile % FAKECLUSTER_NODES) + 1, 1);
    struct open_file *file = open_reading(mount, TILES * TILE);

    assert_int_equal(fakecluster_read(mount, file, got, TILES * TILE, 0), TILES * TILE);
    assert_memory_equal(got, file_bytes, TILES * TILE);
    /* A short read across a tile boundary, and one past the end. */
    assert_int_equal(fakecluster_read(mount, file, got, 5000, 3 * TILE - 1000), 5000);
    assert_memory_equal(got, file_bytes + 3 * TILE - 1000, 5000);
    assert_int_equal(fakecluster_read(mount, file, got, 2 * TILE, (TILES - 1) * TILE), TILE);
    assert_int_equal(fakecluster_read(mount, file, got, 10, TILES * TILE), 0);
    datapath_release(mount->datapath, file, false);
}

struct reader {
    struct fakecluster_mount *mount;
    struct open_file *file;
    uint64_t offset;
    ssize_t result;
    uint8_t bytes[64];
};

static void *reader_main(void *arg)
{
    struct reader *reader = arg;
    reader->result = fakecluster_read(reader->mount, reader->file, reader->bytes,
                                      sizeof(reader->bytes), reader->offset);
    return NULL;
}

/*
 * A slow meta stalls no other reader of the file: while a read past the
 * end waits for meta's answer (the file may have grown elsewhere), a read
 * of a tile whose location is known is served. With the file's lock held
 * across the meta call it would wait for meta too (and this test hang).
 */
static void test_slow_meta_stalls_no_other_reader(void **state)
{
    struct fakecluster_mount *mount = *state;
    tile_put(0, 1, 1);
    tile_put(1, 2, 1);
    struct open_file *file = open_reading(mount, 2 * TILE);
    assert_int_equal(fakecluster_read(mount, file, got, 100, 0), 100); /* locations known */

    fakecluster_meta_hold(true);
    struct reader past_end = {.mount = mount, .file = file, .offset = 2 * TILE};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, reader_main, &past_end), 0);
    assert_true(fakecluster_meta_wait_for_caller());
    assert_int_equal(fakecluster_read(mount, file, got, 100, TILE + 10), 100);
    assert_memory_equal(got, file_bytes + TILE + 10, 100);
    fakecluster_meta_hold(false);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(past_end.result, 0); /* meta says the file did not grow */
    datapath_release(mount->datapath, file, false);
}

/* The size a read past the end learns comes with the TILE_MAP: the tiles
 * of the new end are then read without asking meta again. */
static void test_read_past_the_end_learns_the_size(void **state)
{
    struct fakecluster_mount *mount = *state;
    tile_put(0, 1, 1);
    tile_put(1, 2, 1);
    struct open_file *file = open_reading(mount, TILE);
    fakecluster_file(INO, 2 * TILE, TS_PLACEMENT_STATIC); /* grown elsewhere since */
    assert_int_equal(fakecluster_read(mount, file, got, 100, TILE + 10), 100);
    assert_memory_equal(got, file_bytes + TILE + 10, 100);
    assert_int_equal(datapath_file_size(mount->datapath, file), 2 * TILE);
    datapath_release(mount->datapath, file, false);
}

/* A read sees this mount's writes before any flush. */
static void test_read_sees_unflushed_writes(void **state)
{
    struct fakecluster_mount *mount = *state;
    tile_put(0, 1, 1);
    struct ts_attr attr = fakecluster_file(INO, TILE, TS_PLACEMENT_STATIC);
    struct open_file *file = NULL;
    assert_int_equal(datapath_open(mount->datapath, &attr, NULL, true, &file), 0);

    assert_int_equal(datapath_write(mount->datapath, file, "written here", 12, 100, NULL), 12);
    assert_int_equal(fakecluster_read(mount, file, got, 200, 0), 200);
    assert_memory_equal(got, file_bytes, 100);
    assert_memory_equal(got + 100, "written here", 12);
    assert_memory_equal(got + 112, file_bytes + 112, 88);
    datapath_release(mount->datapath, file, true);
}

/* A file meta knows the size of but no tile of: zeros, and no datanode asked. */
static void test_read_of_a_hole_gives_zeros(void **state)
{
    struct fakecluster_mount *mount = *state;
    static uint8_t zeros[3 * TILE];
    struct open_file *file = open_reading(mount, 3 * TILE);

    memset(got, 0xff, sizeof(got));
    assert_int_equal(fakecluster_read(mount, file, got, 3 * TILE, 0), 3 * TILE);
    assert_memory_equal(got, zeros, 3 * TILE);
    for (uint32_t node = 1; node <= FAKECLUSTER_NODES; node++)
        assert_int_equal(fakecluster_requests(node, TS_OP_TILE_READ, INO, 0), 0);
    datapath_release(mount->datapath, file, false);
}

/* A tile meta says was stored, whose datanode has no file for it: EIO, never zeros. */
static void test_read_of_a_lost_tile_fails(void **state)
{
    struct fakecluster_mount *mount = *state;
    struct tile_location lost = {.node = 2, .version = 7, .flags = TS_TILE_STORED};
    tile_put(0, 1, 1);
    fakecluster_map(INO, 1, &lost);
    struct open_file *file = open_reading(mount, 2 * TILE);

    assert_int_equal(fakecluster_read(mount, file, got, TILE, 0), TILE);
    assert_int_equal(fakecluster_read(mount, file, got, TILE, TILE), -EIO);
    /* Placed but never written (not stored): a hole. */
    lost.flags = 0;
    fakecluster_map(INO, 1, &lost);
    datapath_release(mount->datapath, file, false);
    file = open_reading(mount, 2 * TILE);
    assert_int_equal(fakecluster_read(mount, file, got, TILE, TILE), TILE);
    for (size_t i = 0; i < TILE; i++)
        assert_int_equal(got[i], 0);
    datapath_release(mount->datapath, file, false);
}

/*
 * A tile moves after the reader cached its location (the first read asked
 * meta for the locations of the tiles after it too): the old datanode
 * answers STALE and the read follows the tile to its new one.
 */
static void test_read_follows_a_moved_tile(void **state)
{
    struct fakecluster_mount *mount = *state;
    for (uint64_t tile = 0; tile < 4; tile++)
        tile_put(tile, 1, 1);
    struct open_file *file = open_reading(mount, 4 * TILE);
    assert_int_equal(fakecluster_read(mount, file, got, 1, 0), 1);

    tile_put(3, 3, 2); /* the new copy, now meta's */
    fakecluster_moved_away(1, INO, 3);
    assert_int_equal(fakecluster_read(mount, file, got, TILE, 3 * TILE), TILE);
    assert_memory_equal(got, file_bytes + 3 * TILE, TILE);
    assert_true(fakecluster_requests(1, TS_OP_TILE_READ, INO, 3) >= 1);
    assert_true(fakecluster_requests(3, TS_OP_TILE_READ, INO, 3) >= 1);
    datapath_release(mount->datapath, file, false);
}

/*
 * A sequential reader gets one more tile loaded ahead for each tile it
 * enters in a row: after tiles 0, 1 and 2, tiles 3 to 5 are loaded (or on
 * their way), and reading them asks no datanode again.
 */
static void test_read_ahead_loads_the_next_tiles(void **state)
{
    struct fakecluster_mount *mount = *state;
    for (uint64_t tile = 0; tile < TILES; tile++)
        tile_put(tile, (uint32_t)(tile % FAKECLUSTER_NODES) + 1, 1);
    struct open_file *file = open_reading(mount, TILES * TILE);

    for (uint64_t tile = 0; tile < 3; tile++)
        assert_int_equal(fakecluster_read(mount, file, got, TILE, tile * TILE), TILE);
    for (uint64_t tile = 3; tile < 6; tile++)
        assert_true(read_requested((uint32_t)(tile % FAKECLUSTER_NODES) + 1, tile));
    for (uint64_t tile = 3; tile < 5; tile++) {
        assert_int_equal(fakecluster_read(mount, file, got, TILE, tile * TILE), TILE);
        assert_memory_equal(got, file_bytes + tile * TILE, TILE);
        assert_int_equal(fakecluster_requests((uint32_t)(tile % FAKECLUSTER_NODES) + 1,
                                              TS_OP_TILE_READ, INO, tile),
                         1);
    }
    datapath_release(mount->datapath, file, false);
}

/* A tile held by node 1 (version 5, read first) and node 3 (version 6). */
static struct tile_location two_holders(uint32_t flags)
{
    return (struct tile_location){.node = 1,
                                  .version = 5,
                                  .holder_count = 2,
                                  .holders = {{1, TS_REPLICA_UP, 5}, {3, TS_REPLICA_UP, 6}},
                                  .read_node = 1,
                                  .read_version = 5,
                                  .flags = flags};
}

/*
 * A tile on two holders: a read whose first holder fails (an I/O error, or
 * its file lost) gets the bytes from the second without an error; with
 * both failing it is EIO, never zeros.
 */
static void test_read_fails_over_to_another_holder(void **state)
{
    struct fakecluster_mount *mount = *state;
    struct tile_location location = two_holders(TS_TILE_STORED);
    fakecluster_store(3, INO, 0, 6, file_bytes, TILE); /* node 1 lost its file */
    fakecluster_map(INO, 0, &location);
    fakecluster_store(1, INO, 1, 7, file_bytes + TILE, TILE);
    fakecluster_store(3, INO, 1, 8, file_bytes + TILE, TILE);
    location.version = location.read_version = location.holders[0].version = 7;
    location.holders[1].version = 8;
    fakecluster_map(INO, 1, &location);
    fakecluster_file(INO, 2 * TILE, TS_PLACEMENT_STATIC);
    struct open_file *file = open_reading(mount, 2 * TILE);

    assert_int_equal(fakecluster_read(mount, file, got, TILE, 0), TILE);
    assert_memory_equal(got, file_bytes, TILE);
    assert_true(fakecluster_requests(1, TS_OP_TILE_READ, INO, 0) >= 1);
    datapath_release(mount->datapath, file, false); /* its read-ahead may hold tile 1 */
    fakecluster_fail_reads(1, TS_ERR_IO);
    file = open_reading(mount, 2 * TILE);
    assert_int_equal(fakecluster_read(mount, file, got, TILE, TILE), TILE);
    assert_memory_equal(got, file_bytes + TILE, TILE);
    assert_true(fakecluster_requests(3, TS_OP_TILE_READ, INO, 1) >= 1);
    datapath_release(mount->datapath, file, false);

    fakecluster_fail_reads(3, TS_ERR_IO);
    file = open_reading(mount, 2 * TILE);
    assert_int_equal(fakecluster_read(mount, file, got, TILE, TILE), -EIO);
    fakecluster_fail_reads(1, TS_OK);
    fakecluster_fail_reads(3, TS_OK);
    datapath_release(mount->datapath, file, false);
}

/*
 * A tile no holder has reported yet (no TS_TILE_STORED): the first holder
 * has no file (lost before its next heartbeat), the second has the bytes,
 * which the read returns, not a hole. It reads as a hole (zeros) only
 * when no holder has a file, and fails when the holder without a "no
 * file" answer failed otherwise.
 */
static void test_unreported_tile_fails_over_before_a_hole(void **state)
{
    struct fakecluster_mount *mount = *state;
    struct tile_location location = two_holders(0);
    fakecluster_store(3, INO, 0, 6, file_bytes, TILE); /* node 1 has no file */
    fakecluster_map(INO, 0, &location);
    struct tile_location hole = location;
    hole.version = hole.read_version = hole.holders[0].version = 9;
    hole.holders[1].version = 10;
    fakecluster_map(INO, 1, &hole); /* no holder has tile 1 */
    fakecluster_file(INO, 2 * TILE, TS_PLACEMENT_STATIC);

    struct open_file *file = open_reading(mount, 2 * TILE);
    assert_int_equal(fakecluster_read(mount, file, got, TILE, 0), TILE);
    assert_memory_equal(got, file_bytes, TILE);
    assert_true(fakecluster_requests(3, TS_OP_TILE_READ, INO, 0) >= 1);
    assert_int_equal(fakecluster_read(mount, file, got, TILE, TILE), TILE);
    static const uint8_t zero_tile[TILE];
    assert_memory_equal(got, zero_tile, TILE);
    assert_true(fakecluster_requests(1, TS_OP_TILE_READ, INO, 1) >= 1);
    assert_true(fakecluster_requests(3, TS_OP_TILE_READ, INO, 1) >= 1);
    datapath_release(mount->datapath, file, false);

    /* The one holder that might have had it failed: an error, not zeros. */
    hole.holders[0].node = 2;
    hole.node = hole.read_node = 2;
    fakecluster_map(INO, 1, &hole);
    fakecluster_fail_reads(2, TS_ERR_IO);
    file = open_reading(mount, 2 * TILE);
    assert_int_equal(fakecluster_read(mount, file, got, TILE, TILE), -EIO);
    fakecluster_fail_reads(2, TS_OK);
    datapath_release(mount->datapath, file, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_returns_the_datanodes_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_sees_unflushed_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_meta_stalls_no_other_reader, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_past_the_end_learns_the_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_of_a_hole_gives_zeros, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_of_a_lost_tile_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreported_tile_fails_over_before_a_hole, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_read_follows_a_moved_tile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_ahead_loads_the_next_tiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_fails_over_to_another_holder, setup, teardown),
    };
    return cmocka_run_group_tests_name("readpath", tests, NULL, NULL);
}
