/*
 * @file flusher.c
 * See flusher.h. A ring of (fd, offset, len) under one mutex; the thread
 * takes one range at a time and calls sync_file_range without the mutex,
 * and fdatasync of sync_fd once sync_every bytes were started since the
 * last one.
 */
#include "flusher.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

struct flush_range {
    int fd; /* the flusher's own duplicate */
    uint64_t offset;
    uint64_t len;
};

struct flusher {
    pthread_t thread;
    pthread_mutex_t lock; /* protects everything below */
    pthread_cond_t wake;
    bool stopping;
    struct flush_range *ring;
    size_t cap;
    size_t head;
    size_t count;
    int sync_fd;         /* the caller's directory, fdatasync'd to sync ahead */
    uint64_t sync_every; /* 0: never sync ahead */
    uint64_t unsynced;   /* bytes started since the last sync; the thread's own */
    struct flusher_stats stats;
};

/*
 * Writes out one range and lets go of its descriptor; returns whether it
 * synced ahead. Failures here are no one's error: the client's fsync finds
 * them.
 */
static bool flush_one(struct flusher *flusher, const struct flush_range *range)
{
    bool synced = false;
    (void)sync_file_range(range->fd, (off64_t)range->offset, (off64_t)range->len,
                          SYNC_FILE_RANGE_WRITE);
    flusher->unsynced += range->len;
    if (flusher->sync_every > 0 && flusher->unsynced >= flusher->sync_every) {
        /* The disk's cache flush costs about its time to write whatever
         * came since the last flush (0.55 s per GiB on a virtual disk whose
         * host caches). One flush every few dozen MiB, while the stream
         * goes on, leaves the client's fsync only the last few; one at the
         * end waited for gigabytes. The flush comes from fdatasync of the
         * directory (ext4 flushes the disk even when the inode is clean),
         * not of the tile: an fsync that sees a file's failed writeback
         * marks the failure seen, and the client's TILE_SYNC, which opens
         * the tile afresh, would then not hear of it. Not syncfs either:
         * it waits for every datanode's writes on the disk, and four
         * datanodes doing so every 32 MiB wrote half as fast. */
        (void)fdatasync(flusher->sync_fd);
        flusher->unsynced = 0;
        synced = true;
    }
    close(range->fd);
    return synced;
}

static void *flusher_main(void *arg)
{
    struct flusher *flusher = arg;
    pthread_mutex_lock(&flusher->lock);
    for (;;) {
        while (flusher->count == 0 && !flusher->stopping)
            pthread_cond_wait(&flusher->wake, &flusher->lock);
        if (flusher->count == 0)
            break; /* stopping, and everything queued was written out */
        struct flush_range range = flusher->ring[flusher->head];
        flusher->head = (flusher->head + 1) % flusher->cap;
        flusher->count--;
        flusher->stats.flushed++;
        pthread_mutex_unlock(&flusher->lock);
        bool synced = flush_one(flusher, &range);
        pthread_mutex_lock(&flusher->lock);
        flusher->stats.synced += synced;
    }
    pthread_mutex_unlock(&flusher->lock);
    return NULL;
}

int flusher_start(size_t queue_cap, int sync_fd, uint64_t sync_every, struct flusher **flusherp)
{
    sigset_t all, old;
    *flusherp = NULL;
    struct flusher *flusher = calloc(1, sizeof(*flusher));
    if (!flusher)
        return -ENOMEM;
    flusher->cap = queue_cap > 0 ? queue_cap : 1;
    flusher->sync_fd = sync_fd;
    flusher->sync_every = sync_fd >= 0 ? sync_every : 0;
    flusher->ring = calloc(flusher->cap, sizeof(*flusher->ring));
    if (!flusher->ring) {
        free(flusher);
        return -ENOMEM;
    }
    pthread_mutex_init(&flusher->lock, NULL);
    pthread_cond_init(&flusher->wake, NULL);
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&flusher->thread, NULL, flusher_main, flusher);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&flusher->wake);
        pthread_mutex_destroy(&flusher->lock);
        free(flusher->ring);
        free(flusher);
        return -rc;
    }
    *flusherp = flusher;
    return 0;
}

void flusher_add(struct flusher *flusher, int fd, uint64_t offset, uint64_t len)
{
    pthread_mutex_lock(&flusher->lock);
    int copy = flusher->count < flusher->cap ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (copy < 0) {
        flusher->stats.skipped++;
    } else {
        flusher->ring[(flusher->head + flusher->count) % flusher->cap] =
            (struct flush_range){copy, offset, len};
        if (flusher->count++ == 0)
            pthread_cond_signal(&flusher->wake);
    }
    pthread_mutex_unlock(&flusher->lock);
}

void flusher_stop(struct flusher **flusherp, struct flusher_stats *stats)
{
    if (!flusherp || !*flusherp)
        return;
    struct flusher *flusher = *flusherp;
    pthread_mutex_lock(&flusher->lock);
    flusher->stopping = true;
    pthread_cond_signal(&flusher->wake);
    pthread_mutex_unlock(&flusher->lock);
    pthread_join(flusher->thread, NULL);
    if (stats)
        *stats = flusher->stats;
    pthread_cond_destroy(&flusher->wake);
    pthread_mutex_destroy(&flusher->lock);
    free(flusher->ring);
    free(flusher);
    *flusherp = NULL;
}
