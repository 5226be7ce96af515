/*
 * @file test_scrub.c
 * Unit tests of the datanode's scrub (scrub.h) over a real tile store in a
 * temporary directory: a requested pass finds exactly the tile files whose
 * bytes were flipped behind the store's back, reports them for the
 * heartbeat, and keeps to the rate it was given.
 */
#include "crc32c.h"
#include "proto.h"
#include "scrub.h"
#include "tilestore.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define TILES 12
#define TILE_LEN 200000

struct fixture {
    char dir[PATH_MAX];
    struct tilestore *store;
    pthread_mutex_t lock;
    struct scrub *scrub;
    struct scrub_report report;
};

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    struct fixture *fixture = calloc(1, sizeof(*fixture));
    const char *tmp = getenv("TMPDIR");
    static uint8_t data[TILE_LEN];
    if (!fixture)
        return -1;
    snprintf(fixture->dir, sizeof(fixture->dir), "%s/test_scrub.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fixture->dir) || tilestore_open(fixture->dir, 0, &fixture->store) != 0) {
        free(fixture);
        return -1;
    }
    pthread_mutex_init(&fixture->lock, NULL);
    for (uint64_t i = 0; i < TILES; i++) {
        for (size_t j = 0; j < sizeof(data); j++)
            data[j] = (uint8_t)(i * 31 + j * 7);
        /* Inodes in different buckets, and two tiles in one. */
        if (tilestore_write(fixture->store, 1000 + i * 3, i % 2, 1, 0, data, sizeof(data)) != 0)
            return -1;
    }
    *state = fixture;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fixture = *state;
    scrub_stop(&fixture->scrub);
    tilestore_close(&fixture->store);
    pthread_mutex_destroy(&fixture->lock);
    nftw(fixture->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fixture);
    return 0;
}

static void flip_byte(const struct fixture *fixture, uint64_t ino, uint64_t tile, off_t at)
{
    char relative[TILESTORE_PATH_MAX];
    char path[PATH_MAX + TILESTORE_PATH_MAX];
    uint8_t byte = 0;
    assert_int_equal(tilestore_path(ino, tile, 1, relative, sizeof(relative)), 0);
    snprintf(path, sizeof(path), "%s/%s", fixture->dir, relative);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &byte, 1, at), 1);
    byte ^= 0x80;
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    close(fd);
}

/* Waits (at most 20 s) until pass `pass` has gone through every tile. */
static void wait_pass(struct fixture *fixture, uint64_t pass)
{
    for (int i = 0; i < 2000; i++) {
        scrub_report(fixture->scrub, &fixture->report, true);
        if (fixture->report.finished_pass >= pass)
            return;
        usleep(10 * 1000);
    }
    fail_msg("scrub pass %llu did not finish", (unsigned long long)pass);
}

static bool listed(const struct scrub_report *report, uint64_t ino, uint64_t tile)
{
    for (uint32_t i = 0; i < report->finished_corrupt_count; i++) {
        if (report->finished_corrupt[i].ino == ino && report->finished_corrupt[i].tile == tile &&
            report->finished_corrupt[i].version == 1)
            return true;
    }
    return false;
}

static void test_scrub_finds_exactly_the_corrupt_files(void **state)
{
    struct fixture *fixture = *state;
    uint8_t records[8 * ts_tile_file_rec_bytes];

    assert_int_equal(scrub_start(fixture->store, &fixture->lock, 0, &fixture->scrub), 0);
    /* A clean store first. */
    uint64_t pass = scrub_request(fixture->scrub, 0);
    wait_pass(fixture, pass);
    assert_int_equal(fixture->report.files, TILES);
    assert_int_equal(fixture->report.bytes, (uint64_t)TILES * TILE_LEN);
    assert_int_equal(fixture->report.corrupt, 0);
    assert_int_equal(fixture->report.finished_corrupt_count, 0);

    flip_byte(fixture, 1000 + 2 * 3, 0, 5);
    flip_byte(fixture, 1000 + 7 * 3, 1, TILE_LEN - 1);
    flip_byte(fixture, 1000 + 9 * 3, 1, 70000);
    pass = scrub_request(fixture->scrub, 0);
    wait_pass(fixture, pass);
    assert_int_equal(fixture->report.files, TILES);
    assert_int_equal(fixture->report.corrupt, 3);
    assert_int_equal(fixture->report.finished_corrupt_count, 3);
    assert_true(listed(&fixture->report, 1006, 0));
    assert_true(listed(&fixture->report, 1021, 1));
    assert_true(listed(&fixture->report, 1027, 1));
    assert_int_equal(fixture->report.passes, 2);
    /* The same three go to meta with the next heartbeat. */
    pthread_mutex_lock(&fixture->lock);
    assert_int_equal(tilestore_take_corrupt(fixture->store, records, 8), 3);
    pthread_mutex_unlock(&fixture->lock);
}

/* A pass at a rate takes as long as its bytes at that rate. */
static void test_scrub_keeps_to_its_rate(void **state)
{
    struct fixture *fixture = *state;
    const uint64_t rate = 8000000; /* 8 MB/s: 2.4 MB take 0.3 s */
    assert_int_equal(scrub_start(fixture->store, &fixture->lock, 0, &fixture->scrub), 0);
    int64_t start = util_monotonic_ms();
    uint64_t pass = scrub_request(fixture->scrub, rate);
    wait_pass(fixture, pass);
    int64_t took = util_monotonic_ms() - start;
    assert_true(took >= (int64_t)((uint64_t)TILES * TILE_LEN * 1000 / rate) - 30);
    assert_true(fixture->report.bytes_per_sec <= rate + rate / 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scrub_finds_exactly_the_corrupt_files, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_scrub_keeps_to_its_rate, setup, teardown),
    };
    return cmocka_run_group_tests_name("scrub", tests, NULL, NULL);
}
