/*
 * @file test_flusher.c
 * Unit tests of the datanode's flusher (flusher.h) on real files: every
 * range handed to it is written out or counted as left to the kernel, it
 * syncs ahead once per sync_every bytes, its descriptors are all closed
 * again, and the caller may close its own at once.
 */
#include "flusher.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define FILE_BYTES (256u << 10)

/* Descriptors this process has open. */
static int open_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    int count = 0;
    assert_non_null(dir);
    while (readdir(dir))
        count++;
    closedir(dir);
    return count;
}

/* A temporary file holding FILE_BYTES dirty bytes; returns its descriptor. */
static int dirty_file(char *path, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, cap, "%s/test_flusher.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static char bytes[FILE_BYTES];
    memset(bytes, 0x5a, sizeof(bytes));
    assert_int_equal(write(fd, bytes, sizeof(bytes)), (ssize_t)sizeof(bytes));
    return fd;
}

/*
 * Queues both halves of 8 dirty files to a flusher that syncs sync_fd
 * every sync_every bytes, closing each file at once, and stops it; the
 * files are gone again and every descriptor but sync_fd is closed.
 */
static struct flusher_stats flush_eight_files(int sync_fd, uint64_t sync_every)
{
    char paths[8][PATH_MAX];
    struct flusher *flusher = NULL;
    struct flusher_stats stats;
    int fds_before = open_fds();

    assert_int_equal(flusher_start(16, sync_fd, sync_every, &flusher), 0);
    for (int i = 0; i < 8; i++) {
        int fd = dirty_file(paths[i], sizeof(paths[i]));
        flusher_add(flusher, fd, 0, FILE_BYTES / 2);
        flusher_add(flusher, fd, FILE_BYTES / 2, FILE_BYTES / 2);
        close(fd);
    }
    flusher_stop(&flusher, &stats);
    assert_null(flusher);
    assert_int_equal(open_fds(), fds_before);
    for (int i = 0; i < 8; i++)
        unlink(paths[i]);
    return stats;
}

/* Every range queued is written out by the time the flusher stops, and the
 * flusher's duplicates are closed: the caller closed its own at once. */
static void test_every_range_flushed(void **state)
{
    (void)state;
    struct flusher_stats stats = flush_eight_files(-1, 0);
    assert_int_equal(stats.flushed, 16);
    assert_int_equal(stats.skipped, 0);
    assert_int_equal(stats.synced, 0);
}

/* With sync_every set, the flusher syncs once per that many bytes started:
 * 16 half-file ranges, with one file's bytes as sync_every, make 8 syncs. */
static void test_syncs_ahead(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    int dir_fd = open(tmp && *tmp ? tmp : "/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dir_fd >= 0);
    struct flusher_stats stats = flush_eight_files(dir_fd, FILE_BYTES);
    assert_int_equal(stats.flushed, 16);
    assert_int_equal(stats.skipped, 0);
    assert_int_equal(stats.synced, 8);
    /* Without a directory it never syncs, whatever sync_every says. */
    stats = flush_eight_files(-1, FILE_BYTES);
    assert_int_equal(stats.synced, 0);
    close(dir_fd);
}

/* A full queue or a bad descriptor is counted and not queued; whatever was
 * queued is still flushed and closed, whatever the thread's pace. */
static void test_full_queue_skips(void **state)
{
    (void)state;
    char path[PATH_MAX];
    struct flusher *flusher = NULL;
    struct flusher_stats stats;
    int fds_before = open_fds();

    assert_int_equal(flusher_start(1, -1, 0, &flusher), 0);
    int fd = dirty_file(path, sizeof(path));
    for (int i = 0; i < 500; i++)
        flusher_add(flusher, fd, (uint64_t)(i % 64) * 4096, 4096);
    flusher_add(flusher, -1, 0, 4096); /* cannot be duplicated: skipped */
    close(fd);
    flusher_stop(&flusher, &stats);
    assert_int_equal(stats.flushed + stats.skipped, 501);
    assert_true(stats.skipped >= 1);
    assert_true(stats.flushed >= 1);
    assert_int_equal(open_fds(), fds_before);
    unlink(path);
}

/* Stopping a flusher that got nothing, and stopping NULL, are fine. */
static void test_stop_idle(void **state)
{
    (void)state;
    struct flusher *flusher = NULL;
    struct flusher_stats stats = {7, 7, 7};
    assert_int_equal(flusher_start(4, -1, 1, &flusher), 0);
    flusher_stop(&flusher, &stats);
    assert_int_equal(stats.flushed, 0);
    assert_int_equal(stats.skipped, 0);
    assert_int_equal(stats.synced, 0);
    flusher_stop(&flusher, NULL);
    flusher_stop(NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_range_flushed),
        cmocka_unit_test(test_syncs_ahead),
        cmocka_unit_test(test_full_queue_skips),
        cmocka_unit_test(test_stop_idle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
