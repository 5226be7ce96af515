/*
 * @file flusher.h
 * Starts the disk writes of freshly written tile bytes, off the data path.
 *
 * A write stream leaves its bytes dirty in the page cache. Left alone, the
 * kernel writes them out late and all at once, and the client's fsync then
 * waits for gigabytes; so every tile write asks for its range to be
 * written out now (sync_file_range with SYNC_FILE_RANGE_WRITE). That call
 * is not free: it allocates the blocks (ext4's delayed allocation), which
 * can read block bitmaps from the disk, and it waits for room in the
 * device's queue. Inline, under the handlers' lock, it stalled a datanode
 * for 200-600 ms at a time while four writers filled the disk. Here a
 * thread of its own makes those calls, so a write is answered as soon as
 * its bytes are in the page cache.
 *
 * The bytes then sit in the disk's volatile cache until something flushes
 * it, and a flush costs about the time to write what came since the last
 * one. So once sync_every bytes were started, the thread also fdatasyncs
 * a directory of the disk (sync_fd): the disk cache flush that brings
 * makes everything written so far durable, while the stream goes on.
 *
 * The queue is bounded: a range that finds it full is not queued (the
 * kernel's own writeback takes it up later). Thread-safe.
 */
#ifndef TESSERA_DATANODE_FLUSHER_H
#define TESSERA_DATANODE_FLUSHER_H

#include <stddef.h>
#include <stdint.h>

struct flusher;

/* What a flusher did, for the exit log and the tests. */
struct flusher_stats {
    uint64_t flushed; /* ranges handed to sync_file_range */
    uint64_t skipped; /* ranges not queued: the queue was full, or dup failed */
    uint64_t synced;  /* flushes ahead of the clients' fsyncs */
};

/*
 * Starts the thread with every signal blocked; it fdatasyncs sync_fd (a
 * directory on the files' disk, which must stay open until flusher_stop)
 * every sync_every bytes (sync_fd -1 or sync_every 0: never). 0 or a
 * negative errno.
 */
int flusher_start(size_t queue_cap, int sync_fd, uint64_t sync_every, struct flusher **flusherp);
/*
 * Queues [offset, offset + len) of the open file fd to be written out. The
 * flusher keeps a duplicate of fd, so the caller may close its own at once.
 * Never waits for the disk.
 */
void flusher_add(struct flusher *flusher, int fd, uint64_t offset, uint64_t len);
/* Writes out what is queued, stops the thread and frees it (NULL-safe). */
void flusher_stop(struct flusher **flusherp, struct flusher_stats *stats);

#endif
