/*
 * @file test_tilecrc.c
 * Unit tests of the block checksums beside tile files (tilecrc.h) as the
 * tile store keeps and checks them (tilestore.h, "Checksums"), and of the
 * handlers' refusals: real files in a fresh temporary directory per case,
 * bytes flipped in them behind the store's back as a bad disk would.
 */
#include "crc32c.h"
#include "nodehandlers.h"
#include "proto.h"
#include "status.h"
#include "tilecrc.h"
#include "tilestore.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define BLOCK TILECRC_BLOCK_BYTES

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

static int open_store(struct fixture *fixture)
{
    if (tilestore_open(fixture->dir, 0, &fixture->store) != 0)
        return -1;
    if (diskio_new(fixture->store, 0, &fixture->disk) != 0)
        return -1;
    fixture->context.store = fixture->store;
    fixture->context.disk = fixture->disk;
    return 0;
}

static void close_store(struct fixture *fixture)
{
    diskio_destroy(&fixture->disk);
    tilestore_close(&fixture->store);
}

static int setup(void **state)
{
    struct fixture *fixture = calloc(1, sizeof(*fixture));
    const char *tmp = getenv("TMPDIR");
    if (!fixture)
        return -1;
    snprintf(fixture->dir, sizeof(fixture->dir), "%s/test_tilecrc.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fixture->dir) || open_store(fixture) != 0) {
        free(fixture);
        return -1;
    }
    *state = fixture;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fixture = *state;
    nodehandlers_stats_fini(&fixture->context.stats);
    close_store(fixture);
    nftw(fixture->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fixture);
    return 0;
}

static void fill_pattern(uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seed + i * 7 + (i >> 9));
}

/* The path of a tile's file, or with suffix ".crc" of its sidecar. */
static void tile_path(const struct fixture *fixture, uint64_t ino, uint64_t tile, uint64_t version,
                      const char *suffix, char *out, size_t cap)
{
    char relative[TILESTORE_PATH_MAX];
    assert_int_equal(tilestore_path(ino, tile, version, relative, sizeof(relative)), 0);
    int len = snprintf(out, cap, "%s/%s%s", fixture->dir, relative, suffix);
    assert_true(len > 0 && (size_t)len < cap);
}

/* Flips one bit of byte `at` of a tile file behind the store's back. */
static void flip_byte(const struct fixture *fixture, uint64_t ino, uint64_t tile, uint64_t version,
                      off_t at)
{
    char path[PATH_MAX + TILESTORE_PATH_MAX + 8];
    uint8_t byte = 0;
    tile_path(fixture, ino, tile, version, "", path, sizeof(path));
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &byte, 1, at), 1);
    byte ^= 0x04;
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    close(fd);
}

/* Reads a whole file (at most cap bytes); returns its length. */
static size_t read_file(const char *path, uint8_t *buf, size_t cap)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t got = pread(fd, buf, cap, 0);
    close(fd);
    assert_true(got >= 0);
    return (size_t)got;
}

/* A tile's file into data and its sidecar into sidecar (whose path goes to
 * sidecar_path); returns the file's size, *sidecar_len the sidecar's. */
static size_t read_tile_files(const struct fixture *fixture, uint64_t ino, uint64_t tile,
                              uint64_t version, uint8_t *data, uint8_t *sidecar,
                              size_t *sidecar_len, char *sidecar_path, size_t path_cap)
{
    tile_path(fixture, ino, tile, version, "", sidecar_path, path_cap);
    size_t size = read_file(sidecar_path, data, TS_MAX_DATA_BYTES);
    tile_path(fixture, ino, tile, version, ".crc", sidecar_path, path_cap);
    *sidecar_len = read_file(sidecar_path, sidecar, TILECRC_HEADER_BYTES + 4 * TILECRC_MAX_BLOCKS);
    return size;
}

/*
 * The sidecar holds, per 4 KiB block of the tile file as it is on the
 * disk, the CRC-32C of that block (the last one as short as the file).
 */
static void assert_sidecar_matches(const struct fixture *fixture, uint64_t ino, uint64_t tile,
                                   uint64_t version)
{
    static uint8_t data[TS_MAX_DATA_BYTES];
    uint8_t sidecar[TILECRC_HEADER_BYTES + 4 * TILECRC_MAX_BLOCKS];
    char path[PATH_MAX + TILESTORE_PATH_MAX + 8];
    size_t sidecar_len = 0;
    size_t size = read_tile_files(fixture, ino, tile, version, data, sidecar, &sidecar_len, path,
                                  sizeof(path));
    uint32_t blocks = (uint32_t)((size + BLOCK - 1) / BLOCK);
    assert_int_equal(sidecar_len, TILECRC_HEADER_BYTES + 4 * (size_t)blocks);
    assert_int_equal(sidecar[12] | sidecar[13] << 8 | sidecar[14] << 16 | (uint32_t)sidecar[15] << 24,
                     blocks);
    for (uint32_t b = 0; b < blocks; b++) {
        const uint8_t *at = sidecar + TILECRC_HEADER_BYTES + 4 * b;
        uint32_t stored = at[0] | at[1] << 8 | at[2] << 16 | (uint32_t)at[3] << 24;
        size_t len = size - (size_t)b * BLOCK < BLOCK ? size - (size_t)b * BLOCK : BLOCK;
        assert_int_equal(stored, crc32c(0, data + (size_t)b * BLOCK, len));
    }
}

/* Full and partial writes, growing, and writes past the end leave each block's CRC right. */
static void test_block_crcs_follow_writes(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[5 * BLOCK];
    static uint8_t back[5 * BLOCK];
    size_t got = 0;

    fill_pattern(data, sizeof(data), 3);
    assert_int_equal(tilestore_write(fixture->store, 7, 0, 1, 0, data, 3 * BLOCK), 0);
    assert_sidecar_matches(fixture, 7, 0, 1);
    /* Inside one block, across a block boundary, and growing a short last block. */
    assert_int_equal(tilestore_write(fixture->store, 7, 0, 1, 100, data + 7, 50), 0);
    assert_sidecar_matches(fixture, 7, 0, 1);
    assert_int_equal(tilestore_write(fixture->store, 7, 0, 1, BLOCK - 10, data + 99, 30), 0);
    assert_sidecar_matches(fixture, 7, 0, 1);
    assert_int_equal(tilestore_write(fixture->store, 7, 0, 1, 3 * BLOCK, data, 1000), 0);
    assert_sidecar_matches(fixture, 7, 0, 1);
    assert_int_equal(tilestore_write(fixture->store, 7, 0, 1, 3 * BLOCK + 500, data, 700), 0);
    assert_sidecar_matches(fixture, 7, 0, 1);
    /* Past the end: the gap reads as zeros and is summed as zeros. */
    assert_int_equal(tilestore_write(fixture->store, 7, 0, 1, 4 * BLOCK + 3000, data, 10), 0);
    assert_sidecar_matches(fixture, 7, 0, 1);
    assert_int_equal(tilestore_read(fixture->store, 7, 0, 1, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 4 * BLOCK + 3010);
    /* A new tile written at an offset: its leading hole too. */
    assert_int_equal(tilestore_write(fixture->store, 8, 0, 1, BLOCK + 5, data, 2 * BLOCK), 0);
    assert_sidecar_matches(fixture, 8, 0, 1);
    assert_int_equal(tilestore_read(fixture->store, 8, 0, 1, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 3 * BLOCK + 5);
}

static void test_block_crcs_follow_truncation(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[4 * BLOCK];
    static uint8_t back[4 * BLOCK];
    size_t got = 0;

    fill_pattern(data, sizeof(data), 11);
    assert_int_equal(tilestore_write(fixture->store, 9, 1, 1, 0, data, sizeof(data)), 0);
    assert_int_equal(tilestore_truncate(fixture->store, 9, 1, 1, 2 * BLOCK + 77), 0);
    assert_sidecar_matches(fixture, 9, 1, 1);
    assert_int_equal(tilestore_truncate(fixture->store, 9, 1, 1, 3 * BLOCK + 1), 0);
    assert_sidecar_matches(fixture, 9, 1, 1);
    assert_int_equal(tilestore_truncate(fixture->store, 9, 1, 1, BLOCK), 0);
    assert_sidecar_matches(fixture, 9, 1, 1);
    assert_int_equal(tilestore_truncate(fixture->store, 9, 1, 1, 0), 0);
    assert_sidecar_matches(fixture, 9, 1, 1);
    assert_int_equal(tilestore_truncate(fixture->store, 9, 1, 1, 100), 0);
    assert_int_equal(tilestore_read(fixture->store, 9, 1, 1, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, 100);
    for (size_t i = 0; i < got; i++)
        assert_int_equal(back[i], 0);
}

/*
 * A flipped byte: a read of any range in its block serves nothing
 * (-EBADMSG; over TILE_READ TS_ERR_CORRUPT without frame 1), other blocks
 * still read, and the file is reported once for the heartbeat.
 */
static void test_flipped_byte_is_never_served(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[3 * BLOCK];
    static uint8_t back[3 * BLOCK];
    uint8_t records[4 * ts_tile_file_rec_bytes];
    size_t got = 99;

    fill_pattern(data, sizeof(data), 17);
    assert_int_equal(tilestore_write(fixture->store, 21, 3, 5, 0, data, sizeof(data)), 0);
    flip_byte(fixture, 21, 3, 5, BLOCK + 1234);
    assert_int_equal(tilestore_read(fixture->store, 21, 3, 5, 0, sizeof(back), back, &got),
                     -EBADMSG);
    assert_int_equal(got, 0);
    assert_int_equal(tilestore_read(fixture->store, 21, 3, 5, BLOCK + 2000, 10, back, &got),
                     -EBADMSG);
    assert_int_equal(tilestore_read(fixture->store, 21, 3, 5, 2 * BLOCK, BLOCK, back, &got), 0);
    assert_int_equal(got, BLOCK);
    assert_memory_equal(back, data + 2 * BLOCK, BLOCK);
    uint64_t bytes = 0;
    assert_int_equal(tilestore_verify(fixture->store, 21, 3, 5, 0, UINT64_MAX, &bytes), -EBADMSG);

    /* Over the wire: the status, no bytes. */
    struct ts_tile_read_req read_req = {.ino = 21, .tile = 3, .version = 5, .length = BLOCK};
    int len = ts_tile_read_req_encode(&read_req, fixture->payload, sizeof(fixture->payload));
    struct rpc_request request = {.header = {.type = TS_OP_TILE_READ},
                                  .payload = fixture->payload,
                                  .payload_len = (size_t)len};
    struct rpc_response response = {.payload = fixture->reply,
                                    .payload_cap = sizeof(fixture->reply)};
    read_req.offset = BLOCK;
    len = ts_tile_read_req_encode(&read_req, fixture->payload, sizeof(fixture->payload));
    assert_int_equal(nodehandlers_table[TS_OP_TILE_READ](&fixture->context, &request, &response),
                     TS_ERR_CORRUPT);
    assert_null(response.data);
    assert_int_equal(status_to_errno(TS_ERR_CORRUPT), EIO);

    /* Reported once, however often it is found. */
    assert_int_equal(tilestore_take_corrupt(fixture->store, records, 4), 1);
    struct ts_cursor cursor;
    struct ts_tile_file_rec record;
    ts_cursor_init(&cursor, records, ts_tile_file_rec_bytes);
    assert_int_equal(ts_tile_file_rec_read(&cursor, &record), 0);
    assert_int_equal(record.ino, 21);
    assert_int_equal(record.tile, 3);
    assert_int_equal(record.version, 5);
    assert_int_equal(tilestore_take_corrupt(fixture->store, records, 4), 0);
    assert_true(tilestore_corrupt_found(fixture->store) >= 4);

    /* A write keeping part of the bad block is refused, the file left as it was. */
    assert_int_equal(tilestore_write(fixture->store, 21, 3, 5, BLOCK + 10, data, 10), -EBADMSG);
    /* One replacing the whole bad block is not: those bytes are new. */
    assert_int_equal(tilestore_write(fixture->store, 21, 3, 5, BLOCK, data + BLOCK, BLOCK), 0);
    assert_int_equal(tilestore_read(fixture->store, 21, 3, 5, 0, sizeof(back), back, &got), 0);
    assert_memory_equal(back, data, sizeof(data));
    /* Deleting it takes its sidecar along. */
    char path[PATH_MAX + TILESTORE_PATH_MAX + 8];
    struct stat st;
    assert_int_equal(tilestore_delete(fixture->store, 21, 3, 5), 0);
    tile_path(fixture, 21, 3, 5, ".crc", path, sizeof(path));
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(errno, ENOENT);
}

/*
 * The stream's check without the lock: any range, block-aligned or not,
 * checks out clean against the bytes written; a range touching a flipped
 * block gives -EAGAIN (the lock's read then says -EBADMSG); one beside it
 * still checks out. A file that shrank behind the check is -EAGAIN too.
 */
static void test_check_open_checks_each_block(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[3 * BLOCK + 100];
    const struct {
        uint64_t offset;
        size_t length;
    } ranges[] = {{0, sizeof(data)}, {0, BLOCK}, {BLOCK - 7, BLOCK + 20}, {5, 10},
                  {3 * BLOCK, 100},  {2 * BLOCK + 50, BLOCK + 50}};
    struct tilecrc_trust trust;
    uint64_t size = 0;
    int fd = -1;

    fill_pattern(data, sizeof(data), 29);
    assert_int_equal(tilestore_write(fixture->store, 23, 1, 4, 0, data, sizeof(data)), 0);
    tilestore_trust(fixture->store, &trust);
    assert_int_equal(tilestore_open_tile(fixture->store, 23, 1, 4, &fd, &size), 0);
    assert_int_equal(size, sizeof(data));
    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
        assert_int_equal(tilestore_check_open_unlocked(fixture->store, &trust, 23, 1, 4, fd,
                                                       size, ranges[i].offset,
                                                       ranges[i].length),
                         0);
    flip_byte(fixture, 23, 1, 4, BLOCK + 3);
    assert_int_equal(tilestore_check_open_unlocked(fixture->store, &trust, 23, 1, 4, fd, size,
                                                   BLOCK - 7, 10),
                     -EAGAIN);
    assert_int_equal(tilestore_check_open_unlocked(fixture->store, &trust, 23, 1, 4, fd, size,
                                                   2 * BLOCK - 1, 1),
                     -EAGAIN);
    assert_int_equal(tilestore_check_open_unlocked(fixture->store, &trust, 23, 1, 4, fd, size,
                                                   2 * BLOCK, BLOCK + 100),
                     0);
    uint8_t back[10];
    size_t got = 0;
    assert_int_equal(tilestore_read(fixture->store, 23, 1, 4, BLOCK - 7, 10, back, &got),
                     -EBADMSG);

    /* Cut by hand to one block under the open descriptor: the last blocks are gone. */
    char path[PATH_MAX + TILESTORE_PATH_MAX + 8];
    tile_path(fixture, 23, 1, 4, "", path, sizeof(path));
    assert_int_equal(truncate(path, BLOCK), 0);
    assert_int_equal(tilestore_check_open_unlocked(fixture->store, &trust, 23, 1, 4, fd, size,
                                                   2 * BLOCK, BLOCK + 100),
                     -EAGAIN);
    close(fd);
}

/* A TILE_WRITE whose bytes do not match the writer's CRC is refused and changes nothing. */
static void test_write_with_wrong_crc_is_refused(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[5000];
    uint8_t back[5000];
    size_t got = 0;
    uint64_t size = 0;

    fill_pattern(data, sizeof(data), 23);
    struct ts_tile_write_req write_req = {
        .ino = 31, .tile = 0, .version = 1, .offset = 0, .crc = crc32c(0, data, sizeof(data)) ^ 1};
    int len = ts_tile_write_req_encode(&write_req, fixture->payload, sizeof(fixture->payload));
    struct rpc_request request = {.header = {.type = TS_OP_TILE_WRITE},
                                  .payload = fixture->payload,
                                  .payload_len = (size_t)len,
                                  .data = data,
                                  .data_len = sizeof(data)};
    struct rpc_response response = {.payload = fixture->reply,
                                    .payload_cap = sizeof(fixture->reply)};
    assert_int_equal(nodehandlers_table[TS_OP_TILE_WRITE](&fixture->context, &request, &response),
                     TS_ERR_CORRUPT);
    assert_non_null(strstr(response.error_text, "CRC"));
    assert_int_equal(tilestore_size(fixture->store, 31, 0, 1, &size), -ENOENT);
    assert_int_equal(fixture->context.stats.writes_refused_crc, 1);

    /* Over an existing tile: its bytes stay. */
    assert_int_equal(tilestore_write(fixture->store, 31, 0, 1, 0, data, sizeof(data)), 0);
    uint8_t other[5000];
    fill_pattern(other, sizeof(other), 99);
    request.data = other;
    assert_int_equal(nodehandlers_table[TS_OP_TILE_WRITE](&fixture->context, &request, &response),
                     TS_ERR_CORRUPT);
    assert_int_equal(tilestore_read(fixture->store, 31, 0, 1, 0, sizeof(back), back, &got), 0);
    assert_memory_equal(back, data, sizeof(data));
    assert_sidecar_matches(fixture, 31, 0, 1);

    /* The right CRC goes through. */
    write_req.crc = crc32c(0, other, sizeof(other));
    len = ts_tile_write_req_encode(&write_req, fixture->payload, sizeof(fixture->payload));
    request.payload_len = (size_t)len;
    assert_int_equal(nodehandlers_table[TS_OP_TILE_WRITE](&fixture->context, &request, &response),
                     TS_OK);
    assert_int_equal(tilestore_read(fixture->store, 31, 0, 1, 0, sizeof(back), back, &got), 0);
    assert_memory_equal(back, other, sizeof(other));

    /* Summed once for the check and the blocks: at an odd offset, across blocks. */
    static uint8_t big[3 * BLOCK];
    fill_pattern(big, sizeof(big), 7);
    write_req.offset = BLOCK - 1000;
    write_req.crc = crc32c(0, big, sizeof(big));
    len = ts_tile_write_req_encode(&write_req, fixture->payload, sizeof(fixture->payload));
    request.payload_len = (size_t)len;
    request.data = big;
    request.data_len = sizeof(big);
    assert_int_equal(nodehandlers_table[TS_OP_TILE_WRITE](&fixture->context, &request, &response),
                     TS_OK);
    assert_sidecar_matches(fixture, 31, 0, 1);
}

/*
 * A tile file from before checksums (no sidecar) reads: its CRCs are
 * computed from its bytes at first use and kept from then on.
 */
static void test_tile_without_sidecar_reads(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[2 * BLOCK + 9];
    static uint8_t back[2 * BLOCK + 9];
    char path[PATH_MAX + TILESTORE_PATH_MAX + 8];
    struct stat st;
    size_t got = 0;

    fill_pattern(data, sizeof(data), 41);
    assert_int_equal(tilestore_write(fixture->store, 51, 2, 1, 0, data, sizeof(data)), 0);
    close_store(fixture);
    tile_path(fixture, 51, 2, 1, ".crc", path, sizeof(path));
    assert_int_equal(unlink(path), 0);
    assert_int_equal(open_store(fixture), 0);
    assert_int_equal(tilestore_read(fixture->store, 51, 2, 1, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, sizeof(data));
    assert_memory_equal(back, data, sizeof(data));
    assert_int_equal(stat(path, &st), 0);
    assert_sidecar_matches(fixture, 51, 2, 1);
    /* From then on it guards the bytes. */
    flip_byte(fixture, 51, 2, 1, 5);
    assert_int_equal(tilestore_read(fixture->store, 51, 2, 1, 0, 10, back, &got), -EBADMSG);
}

/*
 * The trust rule: a sidecar of a run that ended cleanly is trusted after a
 * restart (a byte flipped while the datanode was down is found); one of a
 * run that crashed is rebuilt from the tile's bytes (they were what a sync
 * made durable), whatever it says.
 */
static void test_sidecars_of_crashed_runs_are_rebuilt(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[3000];
    uint8_t back[3000];
    size_t got = 0;

    fill_pattern(data, sizeof(data), 61);
    assert_int_equal(tilestore_write(fixture->store, 71, 0, 1, 0, data, sizeof(data)), 0);
    close_store(fixture); /* a clean end */
    flip_byte(fixture, 71, 0, 1, 100);
    assert_int_equal(open_store(fixture), 0);
    assert_int_equal(tilestore_read(fixture->store, 71, 0, 1, 0, sizeof(back), back, &got),
                     -EBADMSG);
    close_store(fixture);

    /* A run that dies without closing the store: a child process. */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct tilestore *store = NULL;
        if (tilestore_open(fixture->dir, 0, &store) != 0 ||
            tilestore_write(store, 72, 0, 1, 0, data, sizeof(data)) != 0)
            _exit(1);
        _exit(0); /* no tilestore_close(): the run never ends cleanly */
    }
    int wstatus = 0;
    assert_int_equal(waitpid(child, &wstatus, 0), child);
    assert_true(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    /* A torn write the crash left: bytes the sidecar does not know. */
    flip_byte(fixture, 72, 0, 1, 100);
    assert_int_equal(open_store(fixture), 0);
    assert_int_equal(tilestore_read(fixture->store, 72, 0, 1, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, sizeof(data));
    assert_sidecar_matches(fixture, 72, 0, 1);
    /* The clean run's sidecar is still trusted. */
    assert_int_equal(tilestore_read(fixture->store, 71, 0, 1, 0, sizeof(back), back, &got),
                     -EBADMSG);
    /* A checkpoint ends this run cleanly: what it wrote is trusted after a crash. */
    assert_int_equal(tilestore_write(fixture->store, 73, 0, 1, 0, data, sizeof(data)), 0);
    assert_int_equal(tilestore_checkpoint(fixture->store, NULL), 0);
    flip_byte(fixture, 73, 0, 1, 7);
    assert_int_equal(tilestore_read(fixture->store, 73, 0, 1, 0, sizeof(back), back, &got),
                     -EBADMSG);
}

/* Little-endian u32 and u64 into a sidecar being made by hand. */
static void put_le(uint8_t *at, uint64_t value, int bytes)
{
    for (int i = 0; i < bytes; i++)
        at[i] = (uint8_t)(value >> (8 * i));
}

/*
 * Replaces a tile's sidecar by one of the first format's 64 KiB blocks,
 * as a datanode before 4 KiB blocks wrote it, keeping the run (so it is
 * trusted as the store's own): CRCs of the file's bytes as they are now.
 */
static void write_old_sidecar(const struct fixture *fixture, uint64_t ino, uint64_t tile,
                              uint64_t version)
{
    enum { OLD_BLOCK = 64 << 10 };
    static uint8_t data[TS_MAX_DATA_BYTES];
    uint8_t sidecar[TILECRC_HEADER_BYTES + 4 * TILECRC_MAX_BLOCKS];
    char path[PATH_MAX + TILESTORE_PATH_MAX + 8];
    size_t sidecar_len = 0;
    size_t size = read_tile_files(fixture, ino, tile, version, data, sidecar, &sidecar_len, path,
                                  sizeof(path));
    assert_true(sidecar_len >= TILECRC_HEADER_BYTES);
    uint32_t blocks = (uint32_t)((size + OLD_BLOCK - 1) / OLD_BLOCK);
    put_le(sidecar + 8, OLD_BLOCK, 4);
    put_le(sidecar + 12, blocks, 4);
    put_le(sidecar + 28, crc32c(0, sidecar, TILECRC_HEADER_BYTES - 4), 4);
    for (uint32_t b = 0; b < blocks; b++) {
        size_t start = (size_t)b * OLD_BLOCK;
        put_le(sidecar + TILECRC_HEADER_BYTES + 4 * b,
               crc32c(0, data + start, size - start < OLD_BLOCK ? size - start : OLD_BLOCK), 4);
    }
    FILE *file = fopen(path, "wb");
    assert_non_null(file);
    assert_int_equal(fwrite(sidecar, 1, TILECRC_HEADER_BYTES + 4 * (size_t)blocks, file),
                     TILECRC_HEADER_BYTES + 4 * (size_t)blocks);
    assert_int_equal(fclose(file), 0);
}

/*
 * A tile whose sidecar has the first format's 64 KiB blocks is still
 * checked by it: its bytes read right and its sidecar is rewritten in 4
 * KiB blocks of the same bytes; a byte flipped under such a sidecar is
 * refused, not given fresh CRCs that would vouch for it.
 */
static void test_old_sidecars_are_converted_checked(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[(64 << 10) * 2 + 5000];
    static uint8_t back[sizeof(data)];
    size_t got = 0;

    fill_pattern(data, sizeof(data), 29);
    assert_int_equal(tilestore_write(fixture->store, 31, 0, 1, 0, data, sizeof(data)), 0);
    assert_int_equal(tilestore_write(fixture->store, 32, 0, 1, 0, data, sizeof(data)), 0);
    close_store(fixture); /* a clean end: its sidecars are trusted */
    write_old_sidecar(fixture, 31, 0, 1);
    write_old_sidecar(fixture, 32, 0, 1);
    flip_byte(fixture, 32, 0, 1, (64 << 10) + 77);
    assert_int_equal(open_store(fixture), 0);

    assert_int_equal(tilestore_read(fixture->store, 31, 0, 1, 100, 50, back, &got), 0);
    assert_int_equal(got, 50);
    assert_memory_equal(back, data + 100, 50);
    assert_sidecar_matches(fixture, 31, 0, 1);
    assert_int_equal(tilestore_read(fixture->store, 31, 0, 1, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, sizeof(data));
    assert_memory_equal(back, data, sizeof(data));

    /* The flipped byte is in the old second block: a read anywhere loads
     * (converts) the sidecar, which finds it; nothing is served. */
    assert_int_equal(tilestore_read(fixture->store, 32, 0, 1, 0, 10, back, &got), -EBADMSG);
    assert_int_equal(got, 0);
    uint64_t bytes = 0;
    assert_int_equal(tilestore_verify(fixture->store, 32, 0, 1, 0, UINT64_MAX, &bytes), -EBADMSG);
}

/* A pulled tile is installed with its sidecar. */
static void test_install_writes_sidecar(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[BLOCK + 1];
    fill_pattern(data, sizeof(data), 81);
    assert_int_equal(tilestore_install(fixture->store, 91, 1, 2, data, sizeof(data)), 0);
    tilestore_count_installed(fixture->store, 91, 1, 2, sizeof(data));
    assert_sidecar_matches(fixture, 91, 1, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_block_crcs_follow_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_block_crcs_follow_truncation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_byte_is_never_served, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_with_wrong_crc_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_without_sidecar_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sidecars_of_crashed_runs_are_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_install_writes_sidecar, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_sidecars_are_converted_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_open_checks_each_block, setup, teardown),
    };
    return cmocka_run_group_tests_name("tilecrc", tests, NULL, NULL);
}
