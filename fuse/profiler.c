/*
 * @file profiler.c
 * See profiler.h.
 *
 * Two tables of the same size: requests add to `active`; a flush swaps it
 * with the empty `spare` under the lock and then encodes and sends the
 * spare without the lock, so requests never wait for meta. Each table is
 * open addressing with linear probing, keyed by (ino, tile); ino 0 (never a
 * file) marks an empty slot. Keys are never removed one by one: a table is
 * emptied whole after a flush, so probe chains need no tombstones. A table
 * takes keys up to 3/4 of its slots, which keeps probes short.
 *
 * Locks: flush_lock serializes flushes (the thread's and profiler_flush's)
 * and is taken before lock; lock protects active, spare's identity,
 * the counters and the thread's flags. The spare's contents belong to the
 * flush that holds flush_lock.
 */
#include "profiler.h"

#include "log.h"
#include "proto.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct profile_entry {
    uint64_t ino; /* 0 = empty slot */
    uint64_t tile;
    struct profiler_counts counts;
};

struct profile_table {
    struct profile_entry *entries;
    uint32_t mask;  /* slots - 1 */
    uint32_t used;  /* keys held */
    uint32_t limit; /* keys it takes at most */
};

struct profiler {
    uint32_t max_records;
    int interval_ms;
    profile_send_fn send;
    void *send_context;
    uint8_t *message; /* max_records wire records; used under flush_lock */

    pthread_mutex_t flush_lock;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* stop, or the table is filling up */
    struct profile_table tables[2];
    struct profile_table *active;
    struct profile_table *spare;
    uint64_t dropped;
    uint64_t dropped_reported; /* dropped as of the last warning */
    uint64_t sent_records;
    uint64_t failed_flushes;
    bool failing; /* the last flush failed: warn once per streak */
    bool flush_wanted;
    bool stopping;
    bool thread_started;
    pthread_t thread;
};

/* ---- the table -------------------------------------------------------- */

static int table_init(struct profile_table *table, uint32_t slots)
{
    table->entries = calloc(slots, sizeof(*table->entries));
    if (!table->entries)
        return -ENOMEM;
    table->mask = slots - 1;
    table->used = 0;
    table->limit = slots / 4 * 3;
    return 0;
}

static void table_clear(struct profile_table *table)
{
    if (table->used == 0)
        return;
    memset(table->entries, 0, ((size_t)table->mask + 1) * sizeof(*table->entries));
    table->used = 0;
}

static uint32_t key_hash(uint64_t ino, uint64_t tile)
{
    /* splitmix64's finalizer over both halves of the key */
    uint64_t x = ino * 0x9e3779b97f4a7c15ull ^ tile;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (uint32_t)x;
}

/* The entry of (ino, tile), made if new; NULL when new and the table is full. */
static struct profile_entry *table_entry(struct profile_table *table, uint64_t ino, uint64_t tile)
{
    uint32_t index = key_hash(ino, tile) & table->mask;
    for (;;) {
        struct profile_entry *entry = &table->entries[index];
        if (entry->ino == ino && entry->tile == tile)
            return entry;
        if (entry->ino == 0) {
            if (table->used >= table->limit)
                return NULL;
            entry->ino = ino;
            entry->tile = tile;
            table->used++;
            return entry;
        }
        index = (index + 1) & table->mask; /* the limit keeps an empty slot ahead */
    }
}

static void counts_merge(struct profiler_counts *into, const struct profiler_counts *delta)
{
    into->reads += delta->reads;
    into->writes += delta->writes;
    into->bytes_read += delta->bytes_read;
    into->bytes_written += delta->bytes_written;
    into->local_bytes += delta->local_bytes;
    if (into->first_access_ns == 0 ||
        (delta->first_access_ns != 0 && delta->first_access_ns < into->first_access_ns))
        into->first_access_ns = delta->first_access_ns;
}

/* Adds under profile->lock; wakes the flusher once the table fills up. */
static int add_locked(struct profiler *profile, uint64_t ino, uint64_t tile,
                      const struct profiler_counts *delta)
{
    struct profile_table *table = profile->active;
    struct profile_entry *entry = table_entry(table, ino, tile);
    if (table->used >= table->limit && !profile->flush_wanted) {
        profile->flush_wanted = true;
        pthread_cond_signal(&profile->wake);
    }
    if (!entry) {
        profile->dropped++;
        return -ENOSPC;
    }
    counts_merge(&entry->counts, delta);
    return 0;
}

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

int profiler_add(struct profiler *profile, uint64_t ino, uint64_t tile,
                const struct profiler_counts *delta)
{
    struct profiler_counts counts = *delta;
    /* Meta keeps the smallest first access: 0 must never reach it. */
    if (counts.first_access_ns == 0)
        counts.first_access_ns = now_ns();
    pthread_mutex_lock(&profile->lock);
    int result = add_locked(profile, ino, tile, &counts);
    pthread_mutex_unlock(&profile->lock);
    return result;
}

/* ---- request batches -------------------------------------------------- */

void profiler_batch_init(struct profiler_batch *batch, uint64_t ino, bool write)
{
    batch->ino = ino;
    batch->write = write;
    batch->count = 0;
}

void profiler_batch_add(struct profiler *profile, struct profiler_batch *batch, uint64_t tile,
                       uint64_t bytes, bool local)
{
    uint32_t i = 0;
    while (i < batch->count && batch->tiles[i].tile != tile)
        i++;
    if (i == PROFILE_BATCH_TILES) {
        profiler_batch_commit(profile, batch);
        i = 0;
    }
    if (i == batch->count) {
        batch->tiles[i].tile = tile;
        batch->tiles[i].bytes = 0;
        batch->tiles[i].local_bytes = 0;
        batch->count++;
    }
    batch->tiles[i].bytes += bytes;
    if (local)
        batch->tiles[i].local_bytes += bytes;
}

void profiler_batch_commit(struct profiler *profile, struct profiler_batch *batch)
{
    if (batch->count == 0)
        return;
    uint64_t now = now_ns();
    pthread_mutex_lock(&profile->lock);
    for (uint32_t i = 0; i < batch->count; i++) {
        struct profiler_counts delta = {.local_bytes = batch->tiles[i].local_bytes,
                                       .first_access_ns = now};
        if (batch->write) {
            delta.writes = 1;
            delta.bytes_written = batch->tiles[i].bytes;
        } else {
            delta.reads = 1;
            delta.bytes_read = batch->tiles[i].bytes;
        }
        add_locked(profile, batch->ino, batch->tiles[i].tile, &delta);
    }
    pthread_mutex_unlock(&profile->lock);
    batch->count = 0;
}

/* ---- flushing --------------------------------------------------------- */

static void encode_entry(struct ts_writer *writer, const struct profile_entry *entry)
{
    struct ts_profile_count_rec record = {.ino = entry->ino,
                                          .tile = entry->tile,
                                          .reads = entry->counts.reads,
                                          .writes = entry->counts.writes,
                                          .bytes_read = entry->counts.bytes_read,
                                          .bytes_written = entry->counts.bytes_written,
                                          .local_bytes = entry->counts.local_bytes,
                                          .first_access_ns = entry->counts.first_access_ns};
    ts_profile_count_rec_write(writer, &record);
}

/* Puts the spare's keys from slot `from` on back into the active table. */
static void restore_unsent(struct profiler *profile, uint32_t from)
{
    struct profile_table *spare = profile->spare;
    pthread_mutex_lock(&profile->lock);
    for (uint64_t index = from; index <= spare->mask; index++) {
        const struct profile_entry *entry = &spare->entries[index];
        if (entry->ino != 0)
            add_locked(profile, entry->ino, entry->tile, &entry->counts);
    }
    pthread_mutex_unlock(&profile->lock);
}

/* Sends the spare table's keys; on a failure, returns the rest to active. */
static int send_spare(struct profiler *profile)
{
    struct profile_table *spare = profile->spare;
    struct ts_writer writer;
    uint32_t count = 0;
    uint32_t message_start = 0; /* slot of the message's first key */
    int status = TS_OK;

    ts_writer_init(&writer, profile->message,
                   (size_t)profile->max_records * ts_profile_count_rec_bytes);
    for (uint64_t index = 0; index <= spare->mask; index++) {
        const struct profile_entry *entry = &spare->entries[index];
        if (entry->ino == 0)
            continue;
        if (count == 0)
            message_start = (uint32_t)index;
        encode_entry(&writer, entry);
        count++;
        if (count < profile->max_records && index < spare->mask)
            continue;
        status = profile->send(profile->send_context, profile->message, count);
        if (status != TS_OK)
            break;
        pthread_mutex_lock(&profile->lock);
        profile->sent_records += count;
        pthread_mutex_unlock(&profile->lock);
        count = 0;
        ts_writer_init(&writer, profile->message,
                       (size_t)profile->max_records * ts_profile_count_rec_bytes);
    }
    if (status == TS_OK && count > 0) {
        status = profile->send(profile->send_context, profile->message, count);
        if (status == TS_OK) {
            pthread_mutex_lock(&profile->lock);
            profile->sent_records += count;
            pthread_mutex_unlock(&profile->lock);
        }
    }
    if (status != TS_OK)
        restore_unsent(profile, message_start);
    table_clear(spare);
    return status;
}

int profiler_flush(struct profiler *profile)
{
    int status = TS_OK;
    pthread_mutex_lock(&profile->flush_lock);
    pthread_mutex_lock(&profile->lock);
    struct profile_table *full = profile->active;
    profile->active = profile->spare;
    profile->spare = full;
    profile->flush_wanted = false;
    uint64_t dropped = profile->dropped - profile->dropped_reported;
    profile->dropped_reported = profile->dropped;
    pthread_mutex_unlock(&profile->lock);

    if (dropped > 0)
        log_warn("profile: %llu request counts dropped: the table of %u keys was full (meta "
                 "not taking PROFILE_RECORD, or more tiles touched per second than that)",
                 (unsigned long long)dropped, full->limit);
    if (full->used > 0)
        status = send_spare(profile);

    pthread_mutex_lock(&profile->lock);
    if (status != TS_OK) {
        profile->failed_flushes++;
        if (!profile->failing)
            log_warn("profile: sending counts to meta failed: %s (kept for the next try)",
                     status_text(status));
        profile->failing = true;
    } else if (profile->failing) {
        log_info("profile: sending counts to meta works again");
        profile->failing = false;
    }
    pthread_mutex_unlock(&profile->lock);
    pthread_mutex_unlock(&profile->flush_lock);
    return status;
}

static void *flusher_main(void *arg)
{
    struct profiler *profile = arg;
    struct timespec deadline;
    bool last_failed = false;

    pthread_mutex_lock(&profile->lock);
    while (!profile->stopping) {
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        util_timespec_add_ms(&deadline, profile->interval_ms);
        /* A full table asks for an early flush, but not right after a failed
         * one: the counts put back would fill it again at once. */
        int waited = 0;
        while (!profile->stopping && !(profile->flush_wanted && !last_failed) && waited == 0)
            waited = pthread_cond_timedwait(&profile->wake, &profile->lock, &deadline);
        if (profile->stopping)
            break;
        pthread_mutex_unlock(&profile->lock);
        last_failed = profiler_flush(profile) != TS_OK;
        pthread_mutex_lock(&profile->lock);
    }
    pthread_mutex_unlock(&profile->lock);
    return NULL;
}

/* ---- life cycle ------------------------------------------------------- */

struct profiler *profiler_new(const struct profiler_config *config)
{
    uint32_t slots = 16;

    if (!config->send || config->max_records == 0 || config->max_records > TS_MAX_PROFILE_RECORDS ||
        config->interval_ms < 0 || config->slots > (1u << 30))
        return NULL;
    while (slots < config->slots)
        slots *= 2;
    struct profiler *profile = calloc(1, sizeof(*profile));
    if (!profile)
        return NULL;
    profile->max_records = config->max_records;
    profile->interval_ms = config->interval_ms;
    profile->send = config->send;
    profile->send_context = config->send_context;
    profile->message = malloc((size_t)config->max_records * ts_profile_count_rec_bytes);
    if (!profile->message || table_init(&profile->tables[0], slots) != 0 ||
        table_init(&profile->tables[1], slots) != 0)
        goto fail;
    profile->active = &profile->tables[0];
    profile->spare = &profile->tables[1];
    pthread_mutex_init(&profile->flush_lock, NULL);
    pthread_mutex_init(&profile->lock, NULL);
    util_cond_init_monotonic(&profile->wake);
    if (config->interval_ms > 0) {
        if (pthread_create(&profile->thread, NULL, flusher_main, profile) != 0) {
            log_error("profile: cannot start the flusher thread");
            profiler_destroy(&profile);
            return NULL;
        }
        profile->thread_started = true;
    }
    return profile;
fail:
    free(profile->tables[0].entries);
    free(profile->tables[1].entries);
    free(profile->message);
    free(profile);
    return NULL;
}

void profiler_destroy(struct profiler **profilep)
{
    if (!profilep || !*profilep)
        return;
    struct profiler *profile = *profilep;
    if (profile->thread_started) {
        pthread_mutex_lock(&profile->lock);
        profile->stopping = true;
        pthread_cond_signal(&profile->wake);
        pthread_mutex_unlock(&profile->lock);
        pthread_join(profile->thread, NULL);
    }
    /* What the last requests counted (one try: the mount is going away). */
    if (profiler_flush(profile) != TS_OK)
        log_warn("profile: the last counts could not be sent to meta and are lost");
    pthread_cond_destroy(&profile->wake);
    pthread_mutex_destroy(&profile->lock);
    pthread_mutex_destroy(&profile->flush_lock);
    free(profile->tables[0].entries);
    free(profile->tables[1].entries);
    free(profile->message);
    free(profile);
    *profilep = NULL;
}

void profiler_get_stats(struct profiler *profile, struct profiler_stats *stats)
{
    pthread_mutex_lock(&profile->lock);
    stats->keys = profile->active->used;
    stats->dropped = profile->dropped;
    stats->sent_records = profile->sent_records;
    stats->failed_flushes = profile->failed_flushes;
    pthread_mutex_unlock(&profile->lock);
}
