/*
 * @file test_profiler.c
 * Unit tests of the FUSE client's access-profile table (fuse/profiler.h):
 * adding and merging counts, one request per tile of a batch, the wire
 * records a flush sends, messages split at max_records, a failed flush
 * keeping its counts (and only the unsent ones), the bound on keys with
 * drops counted, and the flusher thread (periodic, early when full, last
 * flush at destroy). Meta is replaced by a recording send function.
 */
#include "profiler.h"

#include "proto.h"
#include "status.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define MAX_CAPTURED 4096

struct record {
    uint64_t ino;
    uint64_t tile;
    struct profiler_counts counts;
};

/* What the fake meta received; shared with the flusher thread. */
struct sink {
    pthread_mutex_t lock;
    struct record records[MAX_CAPTURED];
    size_t count;
    int messages;       /* messages accepted */
    int calls;          /* every call, accepted or not */
    int fail_from_call; /* calls numbered from this one on fail (0 = none) */
    int fail_calls;     /* how many calls fail from there */
    uint32_t largest;   /* most records in one message */
};

struct profile_test {
    struct sink sink;
    struct profiler *profile;
};

static int sink_send(void *context, const uint8_t *records, uint32_t count)
{
    struct sink *sink = context;
    struct ts_cursor cursor;
    int status = TS_OK;

    pthread_mutex_lock(&sink->lock);
    sink->calls++;
    if (sink->fail_from_call != 0 && sink->calls >= sink->fail_from_call &&
        sink->calls < sink->fail_from_call + sink->fail_calls) {
        status = TS_ERR_TIMEDOUT;
        goto out;
    }
    sink->messages++;
    if (count > sink->largest)
        sink->largest = count;
    ts_cursor_init(&cursor, records, (size_t)count * ts_profile_count_rec_bytes);
    for (uint32_t i = 0; i < count && sink->count < MAX_CAPTURED; i++) {
        struct record *record = &sink->records[sink->count++];
        struct ts_profile_count_rec wire;
        (void)ts_profile_count_rec_read(&cursor, &wire);
        record->ino = wire.ino;
        record->tile = wire.tile;
        record->counts = (struct profiler_counts){.reads = wire.reads,
                                                  .writes = wire.writes,
                                                  .bytes_read = wire.bytes_read,
                                                  .bytes_written = wire.bytes_written,
                                                  .local_bytes = wire.local_bytes,
                                                  .first_access_ns = wire.first_access_ns};
    }
    if (cursor.failed || cursor.left != 0)
        status = TS_ERR_BADMSG;
out:
    pthread_mutex_unlock(&sink->lock);
    return status;
}

/* The sum of every record received for (ino, tile); false if none. */
static bool sink_total(struct sink *sink, uint64_t ino, uint64_t tile, struct profiler_counts *total)
{
    bool found = false;
    memset(total, 0, sizeof(*total));
    pthread_mutex_lock(&sink->lock);
    for (size_t i = 0; i < sink->count; i++) {
        const struct record *record = &sink->records[i];
        if (record->ino != ino || record->tile != tile)
            continue;
        found = true;
        total->reads += record->counts.reads;
        total->writes += record->counts.writes;
        total->bytes_read += record->counts.bytes_read;
        total->bytes_written += record->counts.bytes_written;
        total->local_bytes += record->counts.local_bytes;
        if (total->first_access_ns == 0 || record->counts.first_access_ns < total->first_access_ns)
            total->first_access_ns = record->counts.first_access_ns;
    }
    pthread_mutex_unlock(&sink->lock);
    return found;
}

static size_t sink_count(struct sink *sink)
{
    pthread_mutex_lock(&sink->lock);
    size_t count = sink->count;
    pthread_mutex_unlock(&sink->lock);
    return count;
}

static struct profiler *make_profile(struct profile_test *test, uint32_t slots, uint32_t max_records,
                                    int interval_ms)
{
    struct profiler_config config = {.slots = slots,
                                    .max_records = max_records,
                                    .interval_ms = interval_ms,
                                    .send = sink_send,
                                    .send_context = &test->sink};
    test->profile = profiler_new(&config);
    assert_non_null(test->profile);
    return test->profile;
}

static int setup(void **state)
{
    struct profile_test *test = calloc(1, sizeof(*test));
    if (!test)
        return -1;
    pthread_mutex_init(&test->sink.lock, NULL);
    *state = test;
    return 0;
}

static int teardown(void **state)
{
    struct profile_test *test = *state;
    profiler_destroy(&test->profile);
    pthread_mutex_destroy(&test->sink.lock);
    free(test);
    return 0;
}

static uint64_t wall_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

/* Polls until the sink holds at least `records` records; false after 5 s. */
static bool wait_for_records(struct sink *sink, size_t records)
{
    for (int i = 0; i < 500; i++) {
        if (sink_count(sink) >= records)
            return true;
        struct timespec pause = {0, 10 * 1000000L};
        nanosleep(&pause, NULL);
    }
    return false;
}

/* ---- cases ------------------------------------------------------------ */

static void test_add_merges_same_key(void **state)
{
    struct profile_test *test = *state;
    struct profiler *profile = make_profile(test, 64, 100, 0);
    struct profiler_counts first = {.reads = 1, .bytes_read = 100, .first_access_ns = 500};
    struct profiler_counts second = {
        .writes = 2, .bytes_written = 7, .local_bytes = 3, .first_access_ns = 200};
    struct profiler_counts other = {.reads = 4, .first_access_ns = 900};
    struct profiler_counts total;

    assert_int_equal(profiler_add(profile, 10, 3, &first), 0);
    assert_int_equal(profiler_add(profile, 10, 3, &second), 0);
    assert_int_equal(profiler_add(profile, 10, 4, &other), 0);
    assert_int_equal(profiler_add(profile, 11, 3, &other), 0);
    struct profiler_stats stats;
    profiler_get_stats(profile, &stats);
    assert_int_equal(stats.keys, 3);

    assert_int_equal(profiler_flush(profile), TS_OK);
    assert_int_equal(test->sink.count, 3);
    assert_int_equal(test->sink.messages, 1);
    assert_true(sink_total(&test->sink, 10, 3, &total));
    assert_int_equal(total.reads, 1);
    assert_int_equal(total.writes, 2);
    assert_int_equal(total.bytes_read, 100);
    assert_int_equal(total.bytes_written, 7);
    assert_int_equal(total.local_bytes, 3);
    assert_int_equal(total.first_access_ns, 200); /* the earliest */
    assert_true(sink_total(&test->sink, 10, 4, &total));
    assert_int_equal(total.reads, 4);
    assert_true(sink_total(&test->sink, 11, 3, &total));

    /* A flush empties the table: the next one sends nothing. */
    profiler_get_stats(profile, &stats);
    assert_int_equal(stats.keys, 0);
    assert_int_equal(stats.sent_records, 3);
    assert_int_equal(profiler_flush(profile), TS_OK);
    assert_int_equal(test->sink.calls, 1);
}

static void test_first_access_defaults_to_now(void **state)
{
    struct profile_test *test = *state;
    struct profiler *profile = make_profile(test, 64, 100, 0);
    struct profiler_counts delta = {.local_bytes = 4096};
    struct profiler_counts total;
    uint64_t before = wall_ns();

    assert_int_equal(profiler_add(profile, 5, 0, &delta), 0);
    assert_int_equal(profiler_flush(profile), TS_OK);
    assert_true(sink_total(&test->sink, 5, 0, &total));
    assert_true(total.first_access_ns >= before);
    assert_true(total.first_access_ns <= wall_ns());
    assert_int_equal(total.local_bytes, 4096);
}

static void test_batch_counts_one_request_per_tile(void **state)
{
    struct profile_test *test = *state;
    struct profiler *profile = make_profile(test, 64, 100, 0);
    struct profiler_batch batch;
    struct profiler_counts total;
    uint64_t before = wall_ns();

    /* One read request: two pieces of tile 7 (one served here), one of 8. */
    profiler_batch_init(&batch, 42, false);
    profiler_batch_add(profile, &batch, 7, 1000, true);
    profiler_batch_add(profile, &batch, 8, 500, false);
    profiler_batch_add(profile, &batch, 7, 24, false);
    profiler_batch_commit(profile, &batch);
    assert_int_equal(batch.count, 0);
    /* A second read request of tile 7, and a write request of tile 8. */
    profiler_batch_init(&batch, 42, false);
    profiler_batch_add(profile, &batch, 7, 10, true);
    profiler_batch_commit(profile, &batch);
    profiler_batch_init(&batch, 42, true);
    profiler_batch_add(profile, &batch, 8, 300, false);
    profiler_batch_commit(profile, &batch);
    /* An empty batch counts nothing. */
    profiler_batch_init(&batch, 43, false);
    profiler_batch_commit(profile, &batch);

    assert_int_equal(profiler_flush(profile), TS_OK);
    assert_int_equal(test->sink.count, 2);
    assert_true(sink_total(&test->sink, 42, 7, &total));
    assert_int_equal(total.reads, 2);
    assert_int_equal(total.writes, 0);
    assert_int_equal(total.bytes_read, 1034);
    assert_int_equal(total.local_bytes, 1010);
    assert_true(total.first_access_ns >= before);
    assert_true(sink_total(&test->sink, 42, 8, &total));
    assert_int_equal(total.reads, 1);
    assert_int_equal(total.writes, 1);
    assert_int_equal(total.bytes_read, 500);
    assert_int_equal(total.bytes_written, 300);
    assert_int_equal(total.local_bytes, 0);
    assert_false(sink_total(&test->sink, 43, 0, &total));
}

static void test_batch_of_many_tiles_commits_in_parts(void **state)
{
    struct profile_test *test = *state;
    struct profiler *profile = make_profile(test, 1024, 1000, 0);
    struct profiler_batch batch;
    struct profiler_counts total;

    profiler_batch_init(&batch, 9, false);
    for (uint64_t tile = 0; tile < PROFILE_BATCH_TILES + 6; tile++)
        profiler_batch_add(profile, &batch, tile, 10, false);
    profiler_batch_commit(profile, &batch);
    assert_int_equal(profiler_flush(profile), TS_OK);
    assert_int_equal(test->sink.count, PROFILE_BATCH_TILES + 6);
    for (uint64_t tile = 0; tile < PROFILE_BATCH_TILES + 6; tile++) {
        assert_true(sink_total(&test->sink, 9, tile, &total));
        assert_int_equal(total.reads, 1);
        assert_int_equal(total.bytes_read, 10);
    }
}

static void test_flush_splits_messages(void **state)
{
    struct profile_test *test = *state;
    struct profiler *profile = make_profile(test, 64, 5, 0);
    struct profiler_counts delta = {.reads = 1, .bytes_read = 1};

    for (uint64_t tile = 0; tile < 12; tile++)
        assert_int_equal(profiler_add(profile, 3, tile, &delta), 0);
    assert_int_equal(profiler_flush(profile), TS_OK);
    assert_int_equal(test->sink.messages, 3);
    assert_int_equal(test->sink.largest, 5);
    assert_int_equal(test->sink.count, 12);
}

static void test_failed_flush_keeps_unsent_counts(void **state)
{
    struct profile_test *test = *state;
    struct profiler *profile = make_profile(test, 64, 5, 0);
    struct profiler_counts delta = {.reads = 1, .bytes_read = 100, .first_access_ns = 77};
    struct profiler_counts total;
    struct profiler_stats stats;

    for (uint64_t tile = 0; tile < 12; tile++)
        assert_int_equal(profiler_add(profile, 3, tile, &delta), 0);
    /* The first message goes, the second fails: 7 keys stay. */
    test->sink.fail_from_call = 2;
    test->sink.fail_calls = 1;
    assert_int_equal(profiler_flush(profile), TS_ERR_TIMEDOUT);
    assert_int_equal(test->sink.count, 5);
    profiler_get_stats(profile, &stats);
    assert_int_equal(stats.keys, 7);
    assert_int_equal(stats.failed_flushes, 1);
    assert_int_equal(stats.sent_records, 5);

    /* Counts added meanwhile merge with the kept ones. */
    for (uint64_t tile = 0; tile < 12; tile++)
        assert_int_equal(profiler_add(profile, 3, tile, &delta), 0);
    assert_int_equal(profiler_flush(profile), TS_OK);
    for (uint64_t tile = 0; tile < 12; tile++) {
        assert_true(sink_total(&test->sink, 3, tile, &total));
        assert_int_equal(total.reads, 2); /* nothing lost, nothing twice */
        assert_int_equal(total.bytes_read, 200);
        assert_int_equal(total.first_access_ns, 77);
    }
    profiler_get_stats(profile, &stats);
    assert_int_equal(stats.keys, 0);
    assert_int_equal(stats.sent_records, 5 + 12);
}

static void test_full_table_drops_and_counts(void **state)
{
    struct profile_test *test = *state;
    /* 16 slots take 12 keys. */
    struct profiler *profile = make_profile(test, 16, 100, 0);
    struct profiler_counts delta = {.writes = 1, .bytes_written = 8};
    struct profiler_stats stats;
    int dropped = 0;

    for (uint64_t tile = 0; tile < 20; tile++) {
        int result = profiler_add(profile, 1, tile, &delta);
        if (result != 0) {
            assert_int_equal(result, -ENOSPC);
            dropped++;
        }
    }
    assert_int_equal(dropped, 8);
    /* Keys already in the table still count when it is full. */
    assert_int_equal(profiler_add(profile, 1, 0, &delta), 0);
    profiler_get_stats(profile, &stats);
    assert_int_equal(stats.keys, 12);
    assert_int_equal(stats.dropped, 8);

    assert_int_equal(profiler_flush(profile), TS_OK);
    assert_int_equal(test->sink.count, 12);
    /* Room again after the flush. */
    assert_int_equal(profiler_add(profile, 1, 19, &delta), 0);
    profiler_get_stats(profile, &stats);
    assert_int_equal(stats.keys, 1);
}

static void test_failing_meta_stays_bounded(void **state)
{
    struct profile_test *test = *state;
    struct profiler *profile = make_profile(test, 16, 100, 0);
    struct profiler_counts delta = {.reads = 1};
    struct profiler_stats stats;

    test->sink.fail_from_call = 1;
    test->sink.fail_calls = 1000;
    for (int round = 0; round < 5; round++) {
        for (uint64_t tile = 0; tile < 10; tile++)
            profiler_add(profile, (uint64_t)round + 1, tile, &delta);
        assert_int_equal(profiler_flush(profile), TS_ERR_TIMEDOUT);
    }
    profiler_get_stats(profile, &stats);
    assert_int_equal(stats.keys, 12); /* never more than the table takes */
    assert_int_equal(stats.dropped, 50 - 12);
    assert_int_equal(stats.failed_flushes, 5);
}

static void test_flusher_thread_sends_periodically(void **state)
{
    struct profile_test *test = *state;
    struct profiler *profile = make_profile(test, 64, 100, 20);
    struct profiler_counts delta = {.reads = 1, .bytes_read = 5};
    struct profiler_counts total;

    profiler_add(profile, 8, 1, &delta);
    assert_true(wait_for_records(&test->sink, 1));
    profiler_add(profile, 8, 2, &delta);
    assert_true(wait_for_records(&test->sink, 2));
    assert_true(sink_total(&test->sink, 8, 2, &total));
    assert_int_equal(total.bytes_read, 5);
}

static void test_flusher_wakes_early_when_full(void **state)
{
    struct profile_test *test = *state;
    /* An hour's period: only a full table can make it flush. */
    struct profiler *profile = make_profile(test, 16, 100, 3600 * 1000);
    struct profiler_counts delta = {.reads = 1};

    for (uint64_t tile = 0; tile < 12; tile++)
        profiler_add(profile, 2, tile, &delta);
    assert_true(wait_for_records(&test->sink, 12));
}

static void test_destroy_sends_the_rest(void **state)
{
    struct profile_test *test = *state;
    struct profiler *profile = make_profile(test, 64, 100, 3600 * 1000);
    struct profiler_counts delta = {.writes = 1, .bytes_written = 3};
    struct profiler_counts total;

    profiler_add(profile, 4, 6, &delta);
    profiler_destroy(&test->profile);
    assert_null(test->profile);
    assert_true(sink_total(&test->sink, 4, 6, &total));
    assert_int_equal(total.bytes_written, 3);
}

static void test_bad_config_is_refused(void **state)
{
    struct profile_test *test = *state;
    struct profiler_config config = {
        .slots = 64, .max_records = 0, .send = sink_send, .send_context = &test->sink};
    assert_null(profiler_new(&config));
    config.max_records = TS_MAX_PROFILE_RECORDS + 1;
    assert_null(profiler_new(&config));
    config.max_records = 10;
    config.send = NULL;
    assert_null(profiler_new(&config));
    profiler_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_add_merges_same_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_access_defaults_to_now, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_counts_one_request_per_tile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_of_many_tiles_commits_in_parts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_splits_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_flush_keeps_unsent_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_table_drops_and_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failing_meta_stays_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flusher_thread_sends_periodically, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flusher_wakes_early_when_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_sends_the_rest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_config_is_refused, setup, teardown),
    };
    return cmocka_run_group_tests_name("profile", tests, NULL, NULL);
}
