/*
 * @file profiler.h
 * Access profiles of the FUSE client: per (inode, tile) counts of the read
 * and write requests the application makes on files that meta profiles
 * (TS_ATTR_PROFILED), kept in one table for the whole mount and sent to
 * meta (PROFILE_RECORD) by a background thread every interval.
 *
 * Counting happens where the kernel's read and write requests arrive, not
 * where tiles are fetched, so read-ahead is never counted. A request counts
 * once for each tile it touches. A file is profiled or not as of its open:
 * one that becomes profiled while open here is counted from its next open.
 *
 * Memory is bounded: the table has a fixed number of slots. When it is
 * three quarters full the flusher is woken at once; counts of new keys that
 * still find no room are dropped and counted (the flusher logs how many).
 * A flush that fails puts its counts back into the table for the next try
 * (within the same bound). A message whose reply was lost may be counted
 * twice by meta; the counts are statistics, not accounting.
 *
 * Cost per request: one mutex and a hash probe, no allocation.
 * All functions are thread-safe.
 */
#ifndef TESSERA_PROFILER_H
#define TESSERA_PROFILER_H

#include <stdbool.h>
#include <stdint.h>

/* Counts of one (inode, tile); the fields of a PROFILE_RECORD record. */
struct profiler_counts {
    uint64_t reads;
    uint64_t writes;
    uint64_t bytes_read;
    uint64_t bytes_written;
    uint64_t local_bytes;     /* bytes served by a datanode on this machine */
    uint64_t first_access_ns; /* CLOCK_REALTIME; 0 = now, when added */
};

/*
 * Sends `count` wire records (PROFILE_RECORD's, ts_profile_count_rec_bytes each) to meta.
 * Returns TS_OK or a status; on failure the records are kept for later.
 */
typedef int (*profile_send_fn)(void *context, const uint8_t *records, uint32_t count);

struct profiler_config {
    uint32_t slots;       /* table slots, rounded up to a power of two (>= 16) */
    uint32_t max_records; /* records per message, 1..TS_MAX_PROFILE_RECORDS */
    int interval_ms;      /* flush period; 0 = no thread (call profiler_flush) */
    profile_send_fn send;
    void *send_context;
};

#define PROFILE_DEFAULT_SLOTS 16384
#define PROFILE_INTERVAL_MS 1000

struct profiler;

/* NULL on a bad config or no memory (or if the thread cannot start). */
struct profiler *profiler_new(const struct profiler_config *config);
/* Stops the flusher, flushes what is left once, frees. Accepts NULL. */
void profiler_destroy(struct profiler **profilep);

/*
 * Adds delta to the counts of (ino, tile). Returns 0, or -ENOSPC when the
 * key is new and the table is full (the delta is dropped and counted).
 */
int profiler_add(struct profiler *profile, uint64_t ino, uint64_t tile,
                const struct profiler_counts *delta);

/*
 * The tiles one request touched, gathered on the caller's stack so the
 * table's lock is taken once per request.
 */
#define PROFILE_BATCH_TILES 64
struct profiler_batch {
    uint64_t ino;
    bool write;
    uint32_t count;
    struct {
        uint64_t tile;
        uint64_t bytes;
        uint64_t local_bytes;
    } tiles[PROFILE_BATCH_TILES];
};

void profiler_batch_init(struct profiler_batch *batch, uint64_t ino, bool write);
/*
 * Notes `bytes` of the request on `tile` (local: served by a datanode on
 * this machine). A request touching more tiles than the batch holds has
 * them committed in parts (each part counts as a request on its tiles).
 */
void profiler_batch_add(struct profiler *profile, struct profiler_batch *batch, uint64_t tile,
                       uint64_t bytes, bool local);
/* Adds the batch to the table (one request per tile, now) and empties it. */
void profiler_batch_commit(struct profiler *profile, struct profiler_batch *batch);

/*
 * Sends every count in the table now, in messages of at most max_records.
 * Returns TS_OK, or the status of the first message that failed (its counts
 * and those after it go back into the table).
 */
int profiler_flush(struct profiler *profile);

struct profiler_stats {
    uint64_t keys;           /* (inode, tile) keys in the table now */
    uint64_t dropped;        /* additions lost to a full table */
    uint64_t sent_records;   /* records meta accepted */
    uint64_t failed_flushes; /* messages that failed */
};
void profiler_get_stats(struct profiler *profile, struct profiler_stats *stats);

#endif
