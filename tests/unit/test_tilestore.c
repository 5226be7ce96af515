/*
 * @file test_tilestore.c
 * Unit tests of the datanode's tile store and request handlers, against
 * real files in a fresh temporary directory per case. The handler cases
 * build struct rpc_request by hand, exactly as rpc_server_dispatch() would
 * after checking the header, and call through nodehandlers_table.
 */
#include "crc32c.h"
#include "nodehandlers.h"
#include "proto.h"
#include "status.h"
#include "tilestore.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

struct fixture {
    char dir[PATH_MAX];
    struct tilestore *store;
    struct diskio *disk;
    struct nodehandlers_context context;
    uint8_t payload[1024];
    uint8_t reply[4096];
};

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static int setup_with_capacity(void **state, uint64_t capacity)
{
    struct fixture *fixture = calloc(1, sizeof(*fixture));
    const char *tmp = getenv("TMPDIR");
    if (!fixture)
        return -1;
    snprintf(fixture->dir, sizeof(fixture->dir), "%s/test_tilestore.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fixture->dir) || tilestore_open(fixture->dir, capacity, &fixture->store) != 0) {
        free(fixture);
        return -1;
    }
    if (diskio_new(fixture->store, 0, &fixture->disk) != 0) {
        tilestore_close(&fixture->store);
        free(fixture);
        return -1;
    }
    fixture->context.store = fixture->store;
    fixture->context.disk = fixture->disk;
    *state = fixture;
    return 0;
}

static int setup(void **state)
{
    return setup_with_capacity(state, 0);
}
static int setup_small(void **state)
{
    return setup_with_capacity(state, 4096);
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

static void fill_pattern(uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

static void assert_zeros(const uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        assert_int_equal(buf[i], 0);
}

/* ---- tile store ------------------------------------------------------- */

static void test_round_trip_odd_offsets(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[3001], back[4096];
    size_t got = 0;

    fill_pattern(data, sizeof(data), 3);
    assert_int_equal(tilestore_write(fixture->store, 42, 3, 7, 37, data, sizeof(data)), 0);
    /* A second odd write overlapping the first. */
    assert_int_equal(tilestore_write(fixture->store, 42, 3, 7, 1001, data, 13), 0);

    assert_int_equal(tilestore_read(fixture->store, 42, 3, 7, 37, sizeof(data), back, &got), 0);
    assert_int_equal(got, sizeof(data));
    assert_memory_equal(back, data, 1001 - 37);
    assert_memory_equal(back + (1001 - 37), data, 13);
    assert_memory_equal(back + (1001 - 37) + 13, data + (1001 - 37) + 13,
                        sizeof(data) - (1001 - 37) - 13);

    /* The bytes before the first write are a hole inside the file: zeros. */
    memset(back, 0xff, sizeof(back));
    assert_int_equal(tilestore_read(fixture->store, 42, 3, 7, 0, 37, back, &got), 0);
    assert_int_equal(got, 37);
    assert_zeros(back, 37);

    /* An odd read in the middle. */
    assert_int_equal(tilestore_read(fixture->store, 42, 3, 7, 2001, 99, back, &got), 0);
    assert_int_equal(got, 99);
    assert_memory_equal(back, data + 2001 - 37, 99);
}

static void test_missing_tile_reads_nothing(void **state)
{
    struct fixture *fixture = *state;
    uint8_t back[64];
    size_t got = 99;

    assert_int_equal(tilestore_read(fixture->store, 5, 0, 1, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 0);
    /* Another version of an existing tile is just as missing. */
    assert_int_equal(tilestore_write(fixture->store, 5, 0, 1, 0, "abc", 3), 0);
    assert_int_equal(tilestore_read(fixture->store, 5, 0, 2, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 0);
    assert_int_equal(tilestore_sync(fixture->store, 5, 0, 2), 0);
    assert_int_equal(tilestore_wait_file(fixture->store, 5, 0, 2), 0);
}

static void test_read_past_end_is_short(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[100], back[200];
    size_t got = 0;

    fill_pattern(data, sizeof(data), 9);
    assert_int_equal(tilestore_write(fixture->store, 77, 1, 1, 0, data, sizeof(data)), 0);
    assert_int_equal(tilestore_read(fixture->store, 77, 1, 1, 50, 100, back, &got), 0);
    assert_int_equal(got, 50);
    assert_memory_equal(back, data + 50, 50);
    assert_int_equal(tilestore_read(fixture->store, 77, 1, 1, 100, 100, back, &got), 0);
    assert_int_equal(got, 0);
    assert_int_equal(tilestore_read(fixture->store, 77, 1, 1, 150, 10, back, &got), 0);
    assert_int_equal(got, 0);
}

static void test_truncate_shrink_and_grow(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[100], back[100];
    uint64_t tiles, used;
    size_t got = 0;

    fill_pattern(data, sizeof(data), 1);
    assert_int_equal(tilestore_write(fixture->store, 9, 4, 2, 0, data, sizeof(data)), 0);
    assert_int_equal(tilestore_truncate(fixture->store, 9, 4, 2, 40), 0);
    assert_int_equal(tilestore_read(fixture->store, 9, 4, 2, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 40);
    assert_memory_equal(back, data, 40);

    /* Growing brings back zeros, not the old bytes. */
    assert_int_equal(tilestore_truncate(fixture->store, 9, 4, 2, 80), 0);
    memset(back, 0xff, sizeof(back));
    assert_int_equal(tilestore_read(fixture->store, 9, 4, 2, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 80);
    assert_memory_equal(back, data, 40);
    assert_zeros(back + 40, 40);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 1);
    assert_int_equal(used, 80);

    /* A missing tile stays missing. */
    assert_int_equal(tilestore_truncate(fixture->store, 9, 5, 2, 80), 0);
    assert_int_equal(tilestore_read(fixture->store, 9, 5, 2, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 0);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 1);
}

static void test_delete(void **state)
{
    struct fixture *fixture = *state;
    uint8_t back[16];
    uint64_t tiles, used;
    size_t got = 0;

    assert_int_equal(tilestore_write(fixture->store, 300, 0, 1, 0, "0123456789", 10), 0);
    assert_int_equal(tilestore_sync(fixture->store, 300, 0, 1), 0);
    assert_int_equal(tilestore_delete(fixture->store, 300, 0, 1), 0);
    assert_int_equal(tilestore_read(fixture->store, 300, 0, 1, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 0);
    /* Deleting again, or a tile that never was, is fine. */
    assert_int_equal(tilestore_delete(fixture->store, 300, 0, 1), 0);
    assert_int_equal(tilestore_delete(fixture->store, 301, 0, 1), 0);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 0);
    assert_int_equal(used, 0);
}

/* Files in DATA/spares. */
static int spare_files(struct fixture *fixture)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/spares", fixture->dir);
    DIR *dir = opendir(path);
    int count = 0;
    assert_non_null(dir);
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;)
        count += entry->d_name[0] != '.';
    closedir(dir);
    return count;
}

/* The inode number of tile (ino, tile, version)'s file, 0 if there is none. */
static ino_t tile_inode(struct fixture *fixture, uint64_t ino, uint64_t tile, uint64_t version)
{
    char name[256], path[PATH_MAX + 300];
    struct stat st;
    assert_int_equal(tilestore_path(ino, tile, version, name, sizeof(name)), 0);
    snprintf(path, sizeof(path), "%s/%s", fixture->dir, name);
    return stat(path, &st) == 0 ? st.st_ino : 0;
}

/*
 * A deleted tile's file is emptied and reused by the next new tile (no new
 * inode): the new tile reads exactly what was written to it, zeros before;
 * spares left by a crash half-way (full ones) are emptied at open.
 */
static void test_deleted_files_are_reused(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[3000], back[4000];
    uint64_t tiles, used;
    size_t got = 0;

    fill_pattern(data, sizeof(data), 7);
    assert_int_equal(tilestore_write(fixture->store, 400, 0, 1, 0, data, 3000), 0);
    ino_t first = tile_inode(fixture, 400, 0, 1);
    assert_true(first != 0);
    assert_int_equal(spare_files(fixture), 0);
    assert_int_equal(tilestore_delete(fixture->store, 400, 0, 1), 0);
    assert_int_equal(tile_inode(fixture, 400, 0, 1), 0);
    /* The tile and its checksums' sidecar: both inodes are kept. */
    assert_int_equal(spare_files(fixture), 2);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 0);
    assert_int_equal(used, 0);

    /* Another tile, in another bucket, written at an offset. */
    assert_int_equal(tilestore_write(fixture->store, 401, 5, 2, 1000, "abc", 3), 0);
    assert_int_equal(tile_inode(fixture, 401, 5, 2), first);
    assert_int_equal(spare_files(fixture), 0); /* the new sidecar took the other */
    assert_int_equal(tilestore_read(fixture->store, 401, 5, 2, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 1003);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(back[i], 0);
    assert_memory_equal(back + 1000, "abc", 3);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 1);
    assert_int_equal(used, 1003);

    /* A full file left in spares/ (a crash between rename and truncation). */
    char spare[PATH_MAX + 32];
    snprintf(spare, sizeof(spare), "%s/spares/77", fixture->dir);
    FILE *leftover = fopen(spare, "w");
    assert_non_null(leftover);
    assert_int_equal(fwrite(data, 1, sizeof(data), leftover), sizeof(data));
    fclose(leftover);
    tilestore_close(&fixture->store);
    assert_int_equal(tilestore_open(fixture->dir, 0, &fixture->store), 0);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 1); /* spares are not tiles */
    assert_int_equal(used, 1003);
    assert_int_equal(tilestore_write(fixture->store, 402, 0, 1, 10, "z", 1), 0);
    assert_int_equal(tilestore_read(fixture->store, 402, 0, 1, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 11);
    for (int i = 0; i < 10; i++)
        assert_int_equal(back[i], 0);
    assert_int_equal(back[10], 'z');
}

/* Reads a held tile's bytes [offset, offset + len) checked, as the stream does. */
static int held_read(struct fixture *fixture, uint64_t ino, const struct tilestore_held *held,
                     uint64_t offset, uint8_t *into, size_t len, struct tilecrc *loaded,
                     bool *did_load)
{
    struct tilecrc_trust trust;
    tilestore_trust(fixture->store, &trust);
    int rc = tilestore_check_held_unlocked(fixture->store, &trust, ino, 0, 1, held, offset, len,
                                           NULL, 0, loaded, did_load);
    if (rc == 0 && pread(held->fd, into, len, (off_t)offset) != (ssize_t)len)
        rc = -EIO;
    return rc;
}

/* A held tile file is kept between reads with its CRCs, and every change
 * to the tile through the store lets go of it: the next hold sees the new
 * bytes, never a kept descriptor of the old file. */
static void test_held_files_follow_changes(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[200000], back[200000];
    struct tilestore_held held;
    struct tilecrc loaded;
    bool did_load = false;

    fill_pattern(data, sizeof(data), 3);
    assert_int_equal(tilestore_write(fixture->store, 600, 0, 1, 0, data, sizeof(data)), 0);
    assert_int_equal(tilestore_hold(fixture->store, 600, 0, 1, &held), 0);
    assert_non_null(held.handle);
    assert_null(held.sums); /* not loaded yet */
    assert_int_equal(held.size, sizeof(data));
    assert_int_equal(held_read(fixture, 600, &held, 70000, back, 5000, &loaded, &did_load), 0);
    assert_true(did_load);
    assert_memory_equal(back, data + 70000, 5000);
    int kept_fd = held.fd;
    tilestore_unhold(fixture->store, &held, &loaded);

    /* Kept: the same descriptor, its CRCs with it, nothing loaded again. */
    assert_int_equal(tilestore_hold(fixture->store, 600, 0, 1, &held), 0);
    assert_int_equal(held.fd, kept_fd);
    assert_non_null(held.sums);
    assert_int_equal(held_read(fixture, 600, &held, 0, back, 1000, &loaded, &did_load), 0);
    assert_false(did_load);
    assert_memory_equal(back, data, 1000);
    tilestore_unhold(fixture->store, &held, NULL);

    /* A write: a reader that held the file before it may see a mismatch,
     * never a wrong byte passed as checked; the next hold sees the write. */
    assert_int_equal(tilestore_hold(fixture->store, 600, 0, 1, &held), 0);
    uint8_t changed[100];
    memset(changed, 0x5a, sizeof(changed));
    assert_int_equal(tilestore_write(fixture->store, 600, 0, 1, 100, changed, sizeof(changed)), 0);
    assert_int_equal(held_read(fixture, 600, &held, 0, back, 1000, &loaded, &did_load), -EAGAIN);
    tilestore_unhold(fixture->store, &held, NULL);
    assert_int_equal(tilestore_hold(fixture->store, 600, 0, 1, &held), 0);
    assert_null(held.sums);
    assert_int_equal(held_read(fixture, 600, &held, 0, back, 1000, &loaded, &did_load), 0);
    assert_memory_equal(back + 100, changed, sizeof(changed));
    tilestore_unhold(fixture->store, &held, &loaded);

    /* A truncation: the next hold has the new size. */
    assert_int_equal(tilestore_truncate(fixture->store, 600, 0, 1, 3000), 0);
    assert_int_equal(tilestore_hold(fixture->store, 600, 0, 1, &held), 0);
    assert_int_equal(held.size, 3000);
    assert_int_equal(held_read(fixture, 600, &held, 2000, back, 1000, &loaded, &did_load), 0);
    assert_memory_equal(back, data + 2000, 1000);
    tilestore_unhold(fixture->store, &held, &loaded);

    /* A delete: the inode becomes a spare, then another tile's file; the
     * deleted tile is gone, and the new one reads its own bytes. */
    assert_int_equal(tilestore_hold(fixture->store, 600, 0, 1, &held), 0);
    tilestore_unhold(fixture->store, &held, NULL);
    assert_int_equal(tilestore_delete(fixture->store, 600, 0, 1), 0);
    assert_int_equal(tilestore_hold(fixture->store, 600, 0, 1, &held), -ENOENT);
    assert_int_equal(held.fd, -1);
    assert_int_equal(tilestore_write(fixture->store, 600, 0, 1, 0, "new", 3), 0);
    assert_int_equal(tilestore_hold(fixture->store, 600, 0, 1, &held), 0);
    assert_int_equal(held.size, 3);
    assert_int_equal(held_read(fixture, 600, &held, 0, back, 3, &loaded, &did_load), 0);
    assert_memory_equal(back, "new", 3);
    tilestore_unhold(fixture->store, &held, &loaded);
}

/* A byte flipped on the disk under a held file with kept CRCs is refused. */
static void test_held_file_refuses_a_flipped_byte(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[70000], back[4096];
    struct tilestore_held held;
    struct tilecrc loaded;
    bool did_load = false;
    char path[PATH_MAX + TILESTORE_PATH_MAX + 2], name[TILESTORE_PATH_MAX];

    fill_pattern(data, sizeof(data), 9);
    assert_int_equal(tilestore_write(fixture->store, 601, 0, 1, 0, data, sizeof(data)), 0);
    assert_int_equal(tilestore_hold(fixture->store, 601, 0, 1, &held), 0);
    assert_int_equal(held_read(fixture, 601, &held, 0, back, sizeof(back), &loaded, &did_load), 0);
    tilestore_unhold(fixture->store, &held, &loaded);

    assert_int_equal(tilestore_path(601, 0, 1, name, sizeof(name)), 0);
    snprintf(path, sizeof(path), "%s/%s", fixture->dir, name);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "\xff", 1, 66000), 1);
    close(fd);

    assert_int_equal(tilestore_hold(fixture->store, 601, 0, 1, &held), 0);
    assert_non_null(held.sums);
    assert_int_equal(held_read(fixture, 601, &held, 65536, back, 100, &loaded, &did_load), -EAGAIN);
    /* The other block is still served. */
    assert_int_equal(held_read(fixture, 601, &held, 100, back, 100, &loaded, &did_load), 0);
    tilestore_unhold(fixture->store, &held, NULL);
    size_t got = 0;
    assert_int_equal(tilestore_read(fixture->store, 601, 0, 1, 65536, 100, back, &got), -EBADMSG);
}

/* A relinked tile: durable under both names, each with its own sidecar, and one name's
 * deletion never empties the other (no spare is taken from a shared inode). */
static void test_relink_shares_the_bytes_not_the_spares(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[70000], back[80000];
    uint64_t tiles, used;
    size_t got = 0;

    fill_pattern(data, sizeof(data), 9);
    assert_int_equal(tilestore_write(fixture->store, 450, 2, 1, 0, data, sizeof(data)), 0);
    assert_int_equal(tilestore_relink(fixture->store, 450, 2, 1, 7), 0);
    assert_int_equal(tile_inode(fixture, 450, 2, 7), tile_inode(fixture, 450, 2, 1));
    /* Again: a no-op. Onto another file, or onto itself: refused. */
    assert_int_equal(tilestore_relink(fixture->store, 450, 2, 1, 7), 0);
    assert_int_equal(tilestore_write(fixture->store, 450, 2, 8, 0, "x", 1), 0);
    assert_int_equal(tilestore_relink(fixture->store, 450, 2, 1, 8), -EEXIST);
    assert_int_equal(tilestore_relink(fixture->store, 450, 2, 1, 1), -EINVAL);
    /* A tile that was never written has nothing to link: a hole under either name. */
    assert_int_equal(tilestore_relink(fixture->store, 451, 0, 1, 2), 0);
    assert_int_equal(tile_inode(fixture, 451, 0, 2), 0);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 3);
    assert_int_equal(used, 2 * sizeof(data) + 1);

    /* The old name goes (meta's garbage after the copy): the new one keeps every byte. */
    assert_int_equal(tilestore_delete(fixture->store, 450, 2, 1), 0);
    assert_int_equal(tile_inode(fixture, 450, 2, 1), 0);
    assert_int_equal(spare_files(fixture), 1); /* the old sidecar only */
    assert_int_equal(tilestore_read(fixture->store, 450, 2, 7, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, sizeof(data));
    assert_memory_equal(back, data, sizeof(data));
    /* Its own sidecar checks a change of it, across a reopen. */
    assert_int_equal(tilestore_write(fixture->store, 450, 2, 7, 100, "hello", 5), 0);
    tilestore_close(&fixture->store);
    assert_int_equal(tilestore_open(fixture->dir, 0, &fixture->store), 0);
    assert_int_equal(tilestore_read(fixture->store, 450, 2, 7, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, sizeof(data));
    assert_memory_equal(back + 100, "hello", 5);
    assert_memory_equal(back + 105, data + 105, sizeof(data) - 105);
    /* The last name of the inode goes the usual way: into the spares. */
    assert_int_equal(tilestore_delete(fixture->store, 450, 2, 7), 0);
    assert_int_equal(spare_files(fixture), 3);
}

static void test_usage_counters(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[1000];
    uint64_t tiles, used;

    fill_pattern(data, sizeof(data), 0);
    assert_int_equal(tilestore_write(fixture->store, 1, 0, 1, 0, data, 1000), 0);
    assert_int_equal(tilestore_write(fixture->store, 2, 0, 1, 500, data, 100), 0);
    assert_int_equal(tilestore_write(fixture->store, 257, 0, 1, 0, data, 10), 0);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 3);
    assert_int_equal(used, 1000 + 600 + 10);

    /* Overwriting inside a tile does not grow it; extending grows it by the excess. */
    assert_int_equal(tilestore_write(fixture->store, 1, 0, 1, 100, data, 100), 0);
    assert_int_equal(tilestore_write(fixture->store, 257, 0, 1, 5, data, 20), 0);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 3);
    assert_int_equal(used, 1000 + 600 + 25);

    assert_int_equal(tilestore_delete(fixture->store, 2, 0, 1), 0);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 2);
    assert_int_equal(used, 1025);

    /* A reopened store counts the same from the disk. */
    tilestore_close(&fixture->store);
    assert_null(fixture->store);
    assert_int_equal(tilestore_open(fixture->dir, 0, &fixture->store), 0);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 2);
    assert_int_equal(used, 1025);

    uint64_t capacity = 0, free_bytes = 0;
    assert_int_equal(tilestore_space(fixture->store, &capacity, &free_bytes), 0);
    assert_true(capacity > 0);
    assert_true(free_bytes <= capacity);
}

/* Takes every queued created record; returns how many, decoded into out. */
static uint32_t take_all_created(struct tilestore *store, uint64_t out[][3], uint32_t cap)
{
    static uint8_t records[64 * ts_tile_file_rec_bytes];
    uint32_t total = 0;
    uint32_t taken;
    /* Two at a time: the queue is drained in pieces, oldest first. */
    while ((taken = tilestore_take_created(store, records, 2)) > 0) {
        struct ts_cursor cursor;
        ts_cursor_init(&cursor, records, (size_t)taken * ts_tile_file_rec_bytes);
        for (uint32_t i = 0; i < taken; i++, total++) {
            struct ts_tile_file_rec file;
            assert_true(total < cap);
            assert_int_equal(ts_tile_file_rec_read(&cursor, &file), 0);
            out[total][0] = file.ino;
            out[total][1] = file.tile;
            out[total][2] = file.version;
        }
    }
    return total;
}

static bool created_has(uint64_t records[][3], uint32_t count, uint64_t ino, uint64_t tile,
                        uint64_t version)
{
    for (uint32_t i = 0; i < count; i++)
        if (records[i][0] == ino && records[i][1] == tile && records[i][2] == version)
            return true;
    return false;
}

/*
 * Every tile file the store makes, and every one it finds when it opens,
 * is queued once for meta (created records); writes into an existing file
 * and truncations queue nothing.
 */
static void test_created_records(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[100];
    uint64_t records[16][3];

    fill_pattern(data, sizeof(data), 3);
    assert_int_equal(take_all_created(fixture->store, records, 16), 0);
    assert_int_equal(tilestore_write(fixture->store, 5, 0, 9, 0, data, sizeof(data)), 0);
    assert_int_equal(tilestore_write(fixture->store, 5, 0, 9, 50, data, 10), 0);
    assert_int_equal(tilestore_write(fixture->store, 5, 1, 9, 0, data, 10), 0);
    assert_int_equal(tilestore_write(fixture->store, 261, 3, 4, 0, data, 10), 0);
    assert_int_equal(tilestore_truncate(fixture->store, 5, 0, 9, 10), 0);
    assert_int_equal(tilestore_truncate(fixture->store, 5, 7, 9, 10), 0); /* no file */
    assert_int_equal(take_all_created(fixture->store, records, 16), 3);
    assert_true(created_has(records, 3, 5, 0, 9));
    assert_true(created_has(records, 3, 5, 1, 9));
    assert_true(created_has(records, 3, 261, 3, 4));
    assert_int_equal(take_all_created(fixture->store, records, 16), 0);

    /* A pulled file is queued when it is counted in. */
    assert_int_equal(tilestore_install(fixture->store, 6, 2, 8, data, sizeof(data)), 0);
    assert_int_equal(take_all_created(fixture->store, records, 16), 0);
    tilestore_count_installed(fixture->store, 6, 2, 8, sizeof(data));
    assert_int_equal(take_all_created(fixture->store, records, 16), 1);
    assert_true(created_has(records, 1, 6, 2, 8));

    /* A reopened store reports everything it holds again. */
    assert_int_equal(tilestore_delete(fixture->store, 5, 1, 9), 0);
    tilestore_close(&fixture->store);
    assert_int_equal(tilestore_open(fixture->dir, 0, &fixture->store), 0);
    fixture->context.store = fixture->store;
    assert_int_equal(take_all_created(fixture->store, records, 16), 3);
    assert_true(created_has(records, 3, 5, 0, 9));
    assert_true(created_has(records, 3, 261, 3, 4));
    assert_true(created_has(records, 3, 6, 2, 8));
}

static void test_second_open_is_refused(void **state)
{
    struct fixture *fixture = *state;
    struct tilestore *second = NULL;
    assert_int_equal(tilestore_open(fixture->dir, 0, &second), -EBUSY);
    assert_null(second);
}

static void test_capacity_limit(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[4096], back[4096];
    uint64_t tiles, used, capacity, free_bytes;
    size_t got = 0;

    fill_pattern(data, sizeof(data), 5);
    assert_int_equal(tilestore_write(fixture->store, 11, 0, 1, 0, data, 4000), 0);
    assert_int_equal(tilestore_space(fixture->store, &capacity, &free_bytes), 0);
    assert_int_equal(capacity, 4096);
    assert_int_equal(free_bytes, 96);

    /* A new tile past the limit: refused, and no file is left behind. */
    assert_int_equal(tilestore_write(fixture->store, 12, 0, 1, 0, data, 200), -ENOSPC);
    assert_int_equal(tilestore_read(fixture->store, 12, 0, 1, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 0);
    /* Growing an existing tile past the limit: refused, the tile unchanged. */
    assert_int_equal(tilestore_write(fixture->store, 11, 0, 1, 3999, data, 200), -ENOSPC);
    assert_int_equal(tilestore_read(fixture->store, 11, 0, 1, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 4000);
    assert_memory_equal(back, data, 4000);
    assert_int_equal(tilestore_truncate(fixture->store, 11, 0, 1, 5000), -ENOSPC);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 1);
    assert_int_equal(used, 4000);

    /* Overwriting in place and filling up to the limit exactly are fine. */
    assert_int_equal(tilestore_write(fixture->store, 11, 0, 1, 10, data, 100), 0);
    assert_int_equal(tilestore_write(fixture->store, 13, 0, 1, 0, data, 96), 0);
    assert_int_equal(tilestore_space(fixture->store, &capacity, &free_bytes), 0);
    assert_int_equal(free_bytes, 0);
    /* Deleting makes room again. */
    assert_int_equal(tilestore_delete(fixture->store, 11, 0, 1), 0);
    assert_int_equal(tilestore_write(fixture->store, 12, 0, 1, 0, data, 200), 0);
}

static void test_invalid_arguments(void **state)
{
    struct fixture *fixture = *state;
    uint8_t byte = 1;
    size_t got = 0;

    assert_int_equal(tilestore_write(fixture->store, 0, 0, 1, 0, &byte, 1), -EINVAL);
    assert_int_equal(tilestore_write(fixture->store, 1, 0, 1, TS_MAX_DATA_BYTES, &byte, 1),
                     -EINVAL);
    assert_int_equal(tilestore_write(fixture->store, 1, 0, 1, UINT64_MAX, &byte, 1), -EINVAL);
    assert_int_equal(tilestore_read(fixture->store, 0, 0, 1, 0, 1, &byte, &got), -EINVAL);
    assert_int_equal(tilestore_read(fixture->store, 1, 0, 1, TS_MAX_DATA_BYTES, 1, &byte, &got),
                     -EINVAL);
    assert_int_equal(tilestore_truncate(fixture->store, 1, 0, 1, TS_MAX_DATA_BYTES + 1ull),
                     -EINVAL);
    assert_int_equal(tilestore_truncate(fixture->store, 0, 0, 1, 0), -EINVAL);
    assert_int_equal(tilestore_sync(fixture->store, 0, 0, 1), -EINVAL);
    assert_int_equal(tilestore_wait_file(fixture->store, 0, 0, 1), -EINVAL);
    assert_int_equal(tilestore_delete(fixture->store, 0, 0, 1), -EINVAL);
    /* The last byte of the largest tile is still inside. */
    assert_int_equal(tilestore_write(fixture->store, 1, 0, 1, TS_MAX_DATA_BYTES - 1, &byte, 1), 0);
}

/*
 * nftw callback state: every path below DATA/tiles must be digits, '/' and
 * '.', but for the fixed ".crc" of a tile's checksums (sidecar).
 */
static size_t tiles_prefix_len;
static int tile_files_seen;
static int sidecars_seen;

static int check_tile_path(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    size_t len = strlen(path);
    bool sidecar = len > 4 && strcmp(path + len - 4, ".crc") == 0;
    for (const char *at = path + tiles_prefix_len; at < path + len - (sidecar ? 4 : 0); at++) {
        if (!((*at >= '0' && *at <= '9') || *at == '/' || *at == '.')) {
            fail_msg("unexpected character in tile path %s", path);
        }
    }
    if (type == FTW_F && S_ISREG(st->st_mode)) {
        if (sidecar)
            sidecars_seen++;
        else
            tile_files_seen++;
    }
    return 0;
}

static void test_tile_paths_are_integers(void **state)
{
    struct fixture *fixture = *state;
    char relative[TILESTORE_PATH_MAX];
    char path[PATH_MAX + TILESTORE_PATH_MAX];
    char tiles_dir[PATH_MAX + 8];
    struct stat st;

    assert_int_equal(tilestore_write(fixture->store, 1234567, 89, 4242, 0, "x", 1), 0);
    assert_int_equal(tilestore_write(fixture->store, UINT64_MAX, UINT64_MAX, UINT64_MAX, 0, "y", 1),
                     0);
    assert_int_equal(tilestore_path(1234567, 89, 4242, relative, sizeof(relative)), 0);
    assert_string_equal(relative, "tiles/135/1234567.89.4242"); /* 1234567 % 256 = 135 */
    snprintf(path, sizeof(path), "%s/%s", fixture->dir, relative);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 1);
    assert_int_equal(tilestore_path(UINT64_MAX, UINT64_MAX, UINT64_MAX, relative, sizeof(relative)),
                     0);
    snprintf(path, sizeof(path), "%s/%s", fixture->dir, relative);
    assert_int_equal(stat(path, &st), 0);

    snprintf(tiles_dir, sizeof(tiles_dir), "%s/tiles", fixture->dir);
    tiles_prefix_len = strlen(tiles_dir);
    tile_files_seen = 0;
    sidecars_seen = 0;
    assert_int_equal(nftw(tiles_dir, check_tile_path, 16, FTW_PHYS), 0);
    assert_int_equal(tile_files_seen, 2);
    assert_int_equal(sidecars_seen, 2);
}

/* Sets FS_TOPDIR_FL on directory path; false if the filesystem refuses it. */
static bool set_topdir_flag(const char *path)
{
    int flags = 0;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    bool set = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 &&
               ioctl(fd, FS_IOC_SETFLAGS, &(int){flags | FS_TOPDIR_FL}) == 0;
    close(fd);
    return set;
}

static void test_buckets_are_spread_like_top_directories(void **state)
{
    struct fixture *fixture = *state;
    char path[PATH_MAX + 8];
    int flags = 0;

    snprintf(path, sizeof(path), "%s/probe", fixture->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    bool supported = set_topdir_flag(path);
    assert_int_equal(rmdir(path), 0);
    if (!supported)
        skip(); /* not ext4: the store leaves placement to the filesystem */

    snprintf(path, sizeof(path), "%s/tiles", fixture->dir);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(ioctl(fd, FS_IOC_GETFLAGS, &flags), 0);
    close(fd);
    assert_true(flags & FS_TOPDIR_FL);
}

/* ---- handlers --------------------------------------------------------- */

static struct rpc_request make_request(uint16_t op, const uint8_t *payload, size_t payload_len,
                                       const void *data, size_t data_len)
{
    struct rpc_request request = {
        .header = {.magic = TS_PROTO_MAGIC,
                   .version = TS_PROTO_VERSION,
                   .type = op,
                   .request_id = 1,
                   .payload_bytes = (uint32_t)payload_len,
                   .data_bytes = (uint32_t)data_len},
        .payload = payload,
        .payload_len = payload_len,
        .data = data,
        .data_len = data_len,
    };
    return request;
}

static struct rpc_response make_response(struct fixture *fixture)
{
    struct rpc_response response;
    memset(&response, 0, sizeof(response));
    response.payload = fixture->reply;
    response.payload_cap = sizeof(fixture->reply);
    return response;
}

static int call(struct fixture *fixture, const struct rpc_request *request,
                struct rpc_response *response)
{
    rpc_handler_fn handler = nodehandlers_table[request->header.type];
    assert_non_null(handler);
    /* As the datanode's loop runs them: with the handlers' lock held. */
    pthread_mutex_lock(&fixture->context.lock);
    int status = handler(&fixture->context, request, response);
    pthread_mutex_unlock(&fixture->context.lock);
    return status;
}

static void release_data(struct rpc_response *response)
{
    if (response->data && response->data_free)
        response->data_free(response->data, NULL);
    response->data = NULL;
    response->data_free = NULL;
}

static void test_handler_ping(void **state)
{
    struct fixture *fixture = *state;
    struct ts_ping_rep reply;
    struct rpc_request request = make_request(TS_OP_PING, NULL, 0, NULL, 0);
    struct rpc_response response = make_response(fixture);

    assert_int_equal(call(fixture, &request, &response), TS_OK);
    assert_int_equal(ts_ping_rep_decode(&reply, response.payload, response.payload_len), 0);
    assert_int_equal(reply.role.len, strlen("datanode"));
    assert_memory_equal(reply.role.ptr, "datanode", reply.role.len);
    /* How long this process has run: more than nothing, at most until now. */
    int64_t age_ms = util_process_age_ms();
    assert_true(reply.uptime_ms <= (uint64_t)age_ms);
    assert_true(age_ms < 3600 * 1000);
    assert_int_equal(fixture->context.stats.requests[TS_OP_PING], 1);
}

static void test_handler_write_then_read(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[5000];
    struct ts_tile_write_req write_req = {.ino = 99, .tile = 2, .version = 3, .offset = 17};
    struct ts_tile_read_req read_req = {
        .ino = 99, .tile = 2, .version = 3, .offset = 0, .length = 6000};

    fill_pattern(data, sizeof(data), 77);
    write_req.crc = crc32c(0, data, sizeof(data));
    int len = ts_tile_write_req_encode(&write_req, fixture->payload, sizeof(fixture->payload));
    assert_true(len > 0);
    struct rpc_request request =
        make_request(TS_OP_TILE_WRITE, fixture->payload, (size_t)len, data, sizeof(data));
    struct rpc_response response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_OK);
    assert_int_equal(response.payload_len, 0);
    assert_null(response.data);

    /* A read asking for more than is there gets a shorter frame 1. */
    len = ts_tile_read_req_encode(&read_req, fixture->payload, sizeof(fixture->payload));
    assert_true(len > 0);
    request = make_request(TS_OP_TILE_READ, fixture->payload, (size_t)len, NULL, 0);
    response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_OK);
    assert_non_null(response.data);
    assert_non_null(response.data_free);
    assert_int_equal(response.data_len, 17 + sizeof(data));
    /* The reply vouches for its bytes with their CRC (a pull checks it). */
    struct ts_tile_read_rep read_rep;
    assert_int_equal(ts_tile_read_rep_decode(&read_rep, response.payload, response.payload_len), 0);
    assert_int_equal(read_rep.crc, crc32c(0, response.data, response.data_len));
    assert_zeros(response.data, 17);
    assert_memory_equal((uint8_t *)response.data + 17, data, sizeof(data));
    release_data(&response);

    /* A read past the end of a tile's file is a hole: no frame 1. */
    read_req.offset = 17 + sizeof(data) + 100;
    read_req.length = 100;
    len = ts_tile_read_req_encode(&read_req, fixture->payload, sizeof(fixture->payload));
    request = make_request(TS_OP_TILE_READ, fixture->payload, (size_t)len, NULL, 0);
    response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_OK);
    assert_null(response.data);

    /* A tile with no file is NOENT (the client asks meta again), with a text. */
    read_req.version = 4;
    len = ts_tile_read_req_encode(&read_req, fixture->payload, sizeof(fixture->payload));
    request = make_request(TS_OP_TILE_READ, fixture->payload, (size_t)len, NULL, 0);
    response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_ERR_NOENT);
    assert_null(response.data);
    assert_non_null(strstr(response.error_text, "ask meta"));

    /* Sync and truncate through the table too. */
    uint8_t records[ts_tile_file_rec_bytes];
    struct ts_writer writer;
    ts_writer_init(&writer, records, sizeof(records));
    struct ts_tile_file_rec file = {.ino = 99, .tile = 2, .version = 3};
    ts_tile_file_rec_write(&writer, &file);
    struct ts_tile_sync_req sync_req = {.count = 1,
                                        .tiles = {(const char *)records, sizeof(records)}};
    len = ts_tile_sync_req_encode(&sync_req, fixture->payload, sizeof(fixture->payload));
    request = make_request(TS_OP_TILE_SYNC, fixture->payload, (size_t)len, NULL, 0);
    response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_OK);

    struct ts_tile_truncate_req truncate_req = {.ino = 99, .tile = 2, .version = 3, .length = 10};
    len = ts_tile_truncate_req_encode(&truncate_req, fixture->payload, sizeof(fixture->payload));
    request = make_request(TS_OP_TILE_TRUNCATE, fixture->payload, (size_t)len, NULL, 0);
    response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_OK);
    uint64_t tiles, used;
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(used, 10);

    assert_int_equal(fixture->context.stats.requests[TS_OP_TILE_WRITE], 1);
    assert_int_equal(fixture->context.stats.requests[TS_OP_TILE_READ], 3);
    assert_int_equal(fixture->context.stats.bytes_written, sizeof(data));
    assert_int_equal(fixture->context.stats.bytes_read, 17 + sizeof(data));
    assert_int_equal(fixture->context.stats.failures, 1);
}

static void test_handler_write_without_data(void **state)
{
    struct fixture *fixture = *state;
    struct ts_tile_write_req write_req = {.ino = 8, .tile = 0, .version = 1, .offset = 0};
    int len = ts_tile_write_req_encode(&write_req, fixture->payload, sizeof(fixture->payload));
    struct rpc_request request =
        make_request(TS_OP_TILE_WRITE, fixture->payload, (size_t)len, NULL, 0);
    struct rpc_response response = make_response(fixture);
    uint64_t tiles, used;

    assert_int_equal(call(fixture, &request, &response), TS_OK);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 0);
}

/* Encodes a TILE_SYNC of count tiles of ino (tiles 0.., version 1) and calls it. */
static int call_sync(struct fixture *fixture, uint64_t ino, uint32_t count)
{
    uint8_t records[32 * ts_tile_file_rec_bytes];
    struct ts_writer writer;
    assert_true(count <= 32);
    ts_writer_init(&writer, records, sizeof(records));
    for (uint32_t i = 0; i < count; i++) {
        struct ts_tile_file_rec file = {.ino = ino, .tile = i, .version = 1};
        ts_tile_file_rec_write(&writer, &file);
    }
    struct ts_tile_sync_req sync_req = {
        .count = count, .tiles = {(const char *)records, count * ts_tile_file_rec_bytes}};
    int len = ts_tile_sync_req_encode(&sync_req, fixture->payload, sizeof(fixture->payload));
    assert_true(len > 0);
    struct rpc_request request =
        make_request(TS_OP_TILE_SYNC, fixture->payload, (size_t)len, NULL, 0);
    struct rpc_response response = make_response(fixture);
    return call(fixture, &request, &response);
}

/*
 * A sync of many tiles takes the batched way (each file's bytes, then one
 * syncfs); a few tiles are fsynced one by one. Both answer OK for written
 * and missing tiles alike, and both name a bad tile's failure.
 */
static void test_handler_sync_many(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[3000];

    fill_pattern(data, sizeof(data), 4);
    for (uint64_t tile = 0; tile < 24; tile++)
        assert_int_equal(tilestore_write(fixture->store, 12, tile, 1, 0, data, sizeof(data)), 0);
    assert_int_equal(call_sync(fixture, 12, 30), TS_OK); /* tiles 24..29 are holes */
    assert_int_equal(call_sync(fixture, 12, 3), TS_OK);
    assert_int_equal(tilestore_wait_file(fixture->store, 12, 5, 1), 0);
    assert_int_equal(tilestore_sync_filesystem(fixture->store), 0);
    /* ino 0 is no file's: every record of it is refused, either way. */
    assert_int_not_equal(call_sync(fixture, 0, 30), TS_OK);
    assert_int_not_equal(call_sync(fixture, 0, 3), TS_OK);
}

/* Every datanode request, truncated by one byte and with one trailing byte. */
static void test_handler_malformed(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[4] = {1, 2, 3, 4};
    uint8_t encoded[4][128];
    const uint16_t ops[4] = {TS_OP_TILE_WRITE, TS_OP_TILE_READ, TS_OP_TILE_SYNC,
                             TS_OP_TILE_TRUNCATE};
    int lens[4];
    struct ts_tile_write_req write_req = {.ino = 1, .tile = 1, .version = 1, .offset = 0};
    struct ts_tile_read_req read_req = {.ino = 1, .tile = 1, .version = 1, .length = 4};
    struct ts_tile_sync_req sync_req = {.count = 0, .tiles = {"", 0}};
    struct ts_tile_truncate_req truncate_req = {.ino = 1, .tile = 1, .version = 1, .length = 0};

    lens[0] = ts_tile_write_req_encode(&write_req, encoded[0], sizeof(encoded[0]));
    lens[1] = ts_tile_read_req_encode(&read_req, encoded[1], sizeof(encoded[1]));
    lens[2] = ts_tile_sync_req_encode(&sync_req, encoded[2], sizeof(encoded[2]));
    lens[3] = ts_tile_truncate_req_encode(&truncate_req, encoded[3], sizeof(encoded[3]));
    for (int i = 0; i < 4; i++) {
        assert_true(lens[i] > 0);
        const void *frame1 = ops[i] == TS_OP_TILE_WRITE ? data : NULL;
        size_t frame1_len = frame1 ? sizeof(data) : 0;

        struct rpc_request request =
            make_request(ops[i], encoded[i], (size_t)lens[i] - 1, frame1, frame1_len);
        struct rpc_response response = make_response(fixture);
        assert_int_equal(call(fixture, &request, &response), TS_ERR_BADMSG);
        assert_null(response.data);
        assert_true(response.error_text[0] != '\0');

        encoded[i][lens[i]] = 0;
        request = make_request(ops[i], encoded[i], (size_t)lens[i] + 1, frame1, frame1_len);
        response = make_response(fixture);
        assert_int_equal(call(fixture, &request, &response), TS_ERR_BADMSG);
        assert_null(response.data);

        request = make_request(ops[i], NULL, 0, frame1, frame1_len);
        response = make_response(fixture);
        assert_int_equal(call(fixture, &request, &response), TS_ERR_BADMSG);
    }

    /* PING with bytes after it. */
    struct rpc_request request = make_request(TS_OP_PING, encoded[0], 1, NULL, 0);
    struct rpc_response response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_ERR_BADMSG);

    /* TILE_SYNC whose count does not match its records. */
    uint8_t records[2 * ts_tile_file_rec_bytes] = {0};
    struct ts_tile_sync_req bad_sync = {.count = 3,
                                        .tiles = {(const char *)records, sizeof(records)}};
    int len = ts_tile_sync_req_encode(&bad_sync, fixture->payload, sizeof(fixture->payload));
    request = make_request(TS_OP_TILE_SYNC, fixture->payload, (size_t)len, NULL, 0);
    response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_ERR_BADMSG);
    bad_sync.count = UINT32_MAX; /* count * record size must not wrap */
    len = ts_tile_sync_req_encode(&bad_sync, fixture->payload, sizeof(fixture->payload));
    request = make_request(TS_OP_TILE_SYNC, fixture->payload, (size_t)len, NULL, 0);
    response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_ERR_BADMSG);

    uint64_t tiles, used;
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 0);
    assert_int_equal(fixture->context.stats.failures, 4 * 3 + 3);
}

static void test_handler_errors(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[8] = {0};
    int len;

    /* A read longer than any tile. */
    struct ts_tile_read_req read_req = {
        .ino = 1, .tile = 0, .version = 1, .length = TS_MAX_DATA_BYTES + 1};
    len = ts_tile_read_req_encode(&read_req, fixture->payload, sizeof(fixture->payload));
    struct rpc_request request =
        make_request(TS_OP_TILE_READ, fixture->payload, (size_t)len, NULL, 0);
    struct rpc_response response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_ERR_INVAL);
    assert_null(response.data);

    /* ino 0. */
    struct ts_tile_write_req write_req = {
        .ino = 0, .tile = 0, .version = 1, .crc = crc32c(0, data, sizeof(data))};
    len = ts_tile_write_req_encode(&write_req, fixture->payload, sizeof(fixture->payload));
    request = make_request(TS_OP_TILE_WRITE, fixture->payload, (size_t)len, data, sizeof(data));
    response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_ERR_INVAL);

    /* A write ending past the largest tile. */
    write_req.ino = 1;
    write_req.offset = TS_MAX_DATA_BYTES - 4;
    len = ts_tile_write_req_encode(&write_req, fixture->payload, sizeof(fixture->payload));
    request = make_request(TS_OP_TILE_WRITE, fixture->payload, (size_t)len, data, sizeof(data));
    response = make_response(fixture);
    assert_int_equal(call(fixture, &request, &response), TS_ERR_INVAL);
}

/* With --capacity 4096, the client sees "no space". */
static void test_handler_nospc(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[5000] = {0};
    struct ts_tile_write_req write_req = {
        .ino = 3, .tile = 0, .version = 1, .crc = crc32c(0, data, sizeof(data))};
    int len = ts_tile_write_req_encode(&write_req, fixture->payload, sizeof(fixture->payload));
    struct rpc_request request =
        make_request(TS_OP_TILE_WRITE, fixture->payload, (size_t)len, data, sizeof(data));
    struct rpc_response response = make_response(fixture);

    assert_int_equal(call(fixture, &request, &response), TS_ERR_NOSPC);
    assert_int_equal(status_to_errno(TS_ERR_NOSPC), ENOSPC);
    assert_int_equal(fixture->context.stats.bytes_written, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_odd_offsets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_tile_reads_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_past_end_is_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_shrink_and_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_files_are_reused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relink_shares_the_bytes_not_the_spares, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_held_files_follow_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_held_file_refuses_a_flipped_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_counters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_created_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_open_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity_limit, setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_paths_are_integers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_buckets_are_spread_like_top_directories, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_handler_ping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_write_then_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_write_without_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_sync_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_nospc, setup_small, teardown),
    };
    return cmocka_run_group_tests_name("tilestore", tests, NULL, NULL);
}
