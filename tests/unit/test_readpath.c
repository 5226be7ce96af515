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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_returns_the_datanodes_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_sees_unflushed_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_of_a_hole_gives_zeros, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_of_a_lost_tile_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_follows_a_moved_tile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_ahead_loads_the_next_tiles, setup, teardown),
    };
    return cmocka_run_group_tests_name("readpath", tests, NULL, NULL);
}
