/*
 * @file replymem.c
 * See replymem.h. Each buffer carries a header naming its replymem and
 * size, so the free callback (run by ZeroMQ's I/O thread, which knows
 * nothing of the datanode) can give the bytes back.
 *
 * The wake-up: replymem_room() marks the loop as waiting before it looks
 * at the count a second time, and a free that brings the count under the
 * cap while the loop is marked writes the eventfd. A free between the two
 * looks is seen by the second one; a free after it finds the mark.
 */
#include "replymem.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct replymem {
    uint64_t cap;
    atomic_uint_fast64_t used;
    atomic_uint_fast64_t peak;
    atomic_uint_fast64_t full_count;
    atomic_bool waiting; /* the loop is waiting for the count to drop */
    int event_fd;
};

/* What comes before each buffer's bytes; 16 bytes keep them aligned. */
struct replymem_header {
    struct replymem *mem;
    uint64_t bytes;
};

int replymem_new(uint64_t cap, struct replymem **memp)
{
    struct replymem *mem = calloc(1, sizeof(*mem));
    *memp = NULL;
    if (!mem)
        return -ENOMEM;
    mem->cap = cap;
    mem->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (mem->event_fd < 0) {
        int rc = -errno;
        free(mem);
        return rc;
    }
    *memp = mem;
    return 0;
}

void replymem_destroy(struct replymem **memp)
{
    if (!memp || !*memp)
        return;
    close((*memp)->event_fd);
    free(*memp);
    *memp = NULL;
}

void *replymem_alloc(struct replymem *mem, size_t bytes)
{
    struct replymem_header *header = malloc(sizeof(*header) + bytes);
    if (!header)
        return NULL;
    header->mem = mem;
    header->bytes = bytes;
    uint64_t used = atomic_fetch_add(&mem->used, bytes) + bytes;
    uint64_t peak = atomic_load(&mem->peak);
    while (used > peak && !atomic_compare_exchange_weak(&mem->peak, &peak, used)) {
    }
    return header + 1;
}

void replymem_free(void *data, void *hint)
{
    (void)hint;
    if (!data)
        return;
    struct replymem_header *header = (struct replymem_header *)data - 1;
    struct replymem *mem = header->mem;
    uint64_t bytes = header->bytes;
    free(header);
    uint64_t left = atomic_fetch_sub(&mem->used, bytes) - bytes;
    if (left < mem->cap && atomic_exchange(&mem->waiting, false)) {
        uint64_t one = 1;
        ssize_t written = write(mem->event_fd, &one, sizeof(one));
        (void)written; /* a full counter is already readable: nothing lost */
    }
}

bool replymem_room(struct replymem *mem)
{
    if (atomic_load(&mem->used) < mem->cap)
        return true;
    atomic_store(&mem->waiting, true);
    if (atomic_load(&mem->used) < mem->cap) {
        atomic_store(&mem->waiting, false);
        return true;
    }
    atomic_fetch_add(&mem->full_count, 1);
    return false;
}

int replymem_event_fd(const struct replymem *mem)
{
    return mem->event_fd;
}

void replymem_collect(struct replymem *mem)
{
    uint64_t count;
    ssize_t got = read(mem->event_fd, &count, sizeof(count));
    (void)got; /* EAGAIN: nothing to empty */
}

uint64_t replymem_used(const struct replymem *mem)
{
    return atomic_load(&mem->used);
}

uint64_t replymem_peak(const struct replymem *mem)
{
    return atomic_load(&mem->peak);
}

uint64_t replymem_full_count(const struct replymem *mem)
{
    return atomic_load(&mem->full_count);
}
