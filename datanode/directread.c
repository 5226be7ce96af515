/*
 * @file directread.c
 * See directread.h.
 */
#include "directread.h"

#include "tilecrc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

/* cachestat(2): Debian 12's headers predate it; the number is the same on every architecture. */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct directread_cachestat_range {
    uint64_t off;
    uint64_t len;
};

struct directread_cachestat {
    uint64_t nr_cache;
    uint64_t nr_dirty;
    uint64_t nr_writeback;
    uint64_t nr_evicted;
    uint64_t nr_recently_evicted;
};

/* Cleared at the first ENOSYS: an older kernel is not asked again. */
static atomic_bool directread_kernel_has_cachestat = true;

void directread_span(uint64_t size, uint64_t offset, uint64_t length, uint64_t *start, size_t *len)
{
    uint64_t end = offset + length < size ? offset + length : size;
    uint64_t block_end = (uint64_t)tilecrc_blocks_for(end) * TILECRC_BLOCK_BYTES;
    if (block_end > size)
        block_end = (size + DIRECTREAD_ALIGN - 1) / DIRECTREAD_ALIGN * DIRECTREAD_ALIGN;
    *start = offset / TILECRC_BLOCK_BYTES * TILECRC_BLOCK_BYTES;
    *len = block_end > *start ? (size_t)(block_end - *start) : 0;
}

bool directread_cold(int fd, uint64_t start, size_t len)
{
    struct directread_cachestat_range range = {.off = start, .len = len};
    struct directread_cachestat stat = {0};
    if (len == 0 || !atomic_load_explicit(&directread_kernel_has_cachestat, memory_order_relaxed))
        return false;
    if (syscall(__NR_cachestat, fd, &range, &stat, 0) != 0) {
        if (errno == ENOSYS)
            atomic_store(&directread_kernel_has_cachestat, false);
        return false;
    }
    return stat.nr_cache == 0;
}

int directread_read(int fd, uint64_t start, size_t len, void *buf, size_t *got)
{
    *got = 0;
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_DIRECT) != 0)
        return -errno;
    int rc = 0;
    while (*got < len) {
        ssize_t n = pread(fd, (char *)buf + *got, len - *got, (off_t)(start + *got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0)
            break; /* the end of the file */
        *got += (size_t)n;
        /* Past the end O_DIRECT reads stop short of an aligned length. */
        if (*got % DIRECTREAD_ALIGN != 0)
            break;
    }
    if (fcntl(fd, F_SETFL, flags) != 0 && rc == 0)
        rc = -errno;
    return rc;
}
