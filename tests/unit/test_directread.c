/*
 * @file test_directread.c
 * Unit tests of datanode/directread.c: the span of whole CRC blocks a
 * range needs, whether a real file's range is in the page cache
 * (cachestat(2)), and reads past the page cache (O_DIRECT) of a real file
 * with a short last block, which leave the file's flags and the page
 * cache as they were. A kernel without cachestat, or a TMPDIR on a
 * filesystem without O_DIRECT, skips the parts that need them.
 */
#include "directread.h"
#include "tilecrc.h"

#include <errno.h>
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

static void test_span(void **state)
{
    uint64_t start = 0;
    size_t len = 0;
    (void)state;
    /* A whole tile. */
    directread_span(1u << 20, 0, 1u << 20, &start, &len);
    assert_int_equal(start, 0);
    assert_int_equal(len, 1u << 20);
    /* 100 bytes inside block 1: that block whole. */
    directread_span(1u << 20, TILECRC_BLOCK_BYTES + 100, 100, &start, &len);
    assert_int_equal(start, TILECRC_BLOCK_BYTES);
    assert_int_equal(len, TILECRC_BLOCK_BYTES);
    /* Across a block boundary: both blocks. */
    directread_span(1u << 20, TILECRC_BLOCK_BYTES - 500, 1000, &start, &len);
    assert_int_equal(start, 0);
    assert_int_equal(len, 2 * TILECRC_BLOCK_BYTES);
    /* The short last block of a 1,000,000-byte file: up to the end, rounded up to 4 KiB. */
    directread_span(1000000, 999000, 5000, &start, &len);
    assert_int_equal(start, 999000 / TILECRC_BLOCK_BYTES * TILECRC_BLOCK_BYTES);
    assert_int_equal(len, 1003520 - 999000 / TILECRC_BLOCK_BYTES * TILECRC_BLOCK_BYTES);
    /* A range past the end needs nothing. */
    directread_span(1000, 65536, 100, &start, &len);
    assert_int_equal(len, 0);
}

/* A file of `size` bytes of a pattern in TMPDIR, flushed and out of the page cache. */
static int cold_file(char *path, size_t size, uint8_t **bytes)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, PATH_MAX, "%s/test_directread.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    *bytes = malloc(size);
    assert_non_null(*bytes);
    for (size_t i = 0; i < size; i++)
        (*bytes)[i] = (uint8_t)(i * 7 + (i >> 12));
    assert_int_equal(pwrite(fd, *bytes, size, 0), (ssize_t)size);
    assert_int_equal(fdatasync(fd), 0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    return fd;
}

static void test_cold_read(void **state)
{
    char path[PATH_MAX];
    uint8_t *bytes = NULL;
    const size_t size = 200000; /* four blocks, the last 3,392 bytes */
    (void)state;
    int fd = cold_file(path, size, &bytes);
    unlink(path);
    if (!directread_cold(fd, 0, size)) {
        close(fd);
        free(bytes);
        skip(); /* no cachestat here: the stream reads through the page cache */
    }
    uint64_t start = 0;
    size_t len = 0;
    directread_span(size, 150000, 50000, &start, &len);
    void *buf = NULL;
    assert_int_equal(posix_memalign(&buf, DIRECTREAD_ALIGN, len), 0);
    size_t got = 0;
    int flags = fcntl(fd, F_GETFL);
    int rc = directread_read(fd, start, len, buf, &got);
    if (rc == -EINVAL) {
        close(fd);
        free(bytes);
        free(buf);
        skip(); /* TMPDIR's filesystem takes no O_DIRECT */
    }
    assert_int_equal(rc, 0);
    /* Up to the end of the file, not the rounded length. */
    assert_int_equal(got, size - start);
    assert_memory_equal(buf, bytes + start, got);
    assert_int_equal(fcntl(fd, F_GETFL), flags);
    /* Past the page cache: the range is still cold. */
    assert_true(directread_cold(fd, start, len));

    /* A read through the page cache warms the range. */
    uint8_t one[4096];
    assert_int_equal(pread(fd, one, sizeof(one), (off_t)start), (ssize_t)sizeof(one));
    assert_false(directread_cold(fd, start, len));
    assert_false(directread_cold(fd, 0, 0));
    close(fd);
    free(bytes);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_span),
        cmocka_unit_test(test_cold_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
