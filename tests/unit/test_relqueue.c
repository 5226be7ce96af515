/*
 * @file test_relqueue.c
 * Unit tests of the background release queue (fuse/relqueue.c) with a
 * send function that records its batches: releases are batched, none is
 * lost or sent twice, flush and destroy send what is queued.
 */
#include "relqueue.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define MAX_SENT 200000

struct recorder {
    pthread_mutex_t lock;
    uint64_t sent[MAX_SENT];
    uint32_t count;
    uint32_t batches;
    uint32_t largest;
};

static void record(void *ctx, const uint64_t *inos, uint32_t count)
{
    struct recorder *recorder = ctx;
    pthread_mutex_lock(&recorder->lock);
    for (uint32_t i = 0; i < count && recorder->count < MAX_SENT; i++)
        recorder->sent[recorder->count++] = inos[i];
    recorder->batches++;
    if (count > recorder->largest)
        recorder->largest = count;
    pthread_mutex_unlock(&recorder->lock);
}

static int setup(void **state)
{
    struct recorder *recorder = calloc(1, sizeof(*recorder));
    if (!recorder)
        return -1;
    pthread_mutex_init(&recorder->lock, NULL);
    *state = recorder;
    return 0;
}

static int teardown(void **state)
{
    struct recorder *recorder = *state;
    pthread_mutex_destroy(&recorder->lock);
    free(recorder);
    return 0;
}

static uint32_t sent_count(struct recorder *recorder)
{
    pthread_mutex_lock(&recorder->lock);
    uint32_t count = recorder->count;
    pthread_mutex_unlock(&recorder->lock);
    return count;
}

/* A burst of releases leaves in few batches, each at most max_batch long. */
static void test_batches(void **state)
{
    struct recorder *recorder = *state;
    struct relqueue *queue = relqueue_new(record, recorder, 50, 64);
    assert_non_null(queue);
    for (uint64_t ino = 1; ino <= 1000; ino++)
        assert_int_equal(relqueue_push(queue, ino), 0);
    relqueue_flush(queue);
    assert_int_equal(sent_count(recorder), 1000);
    for (uint32_t i = 0; i < 1000; i++)
        assert_int_equal(recorder->sent[i], i + 1); /* in order, each once */
    assert_true(recorder->largest <= 64);
    assert_true(recorder->batches < 100);
    relqueue_destroy(&queue);
    assert_null(queue);
    relqueue_destroy(NULL);
}

/* A lone release waits for company at most the delay. */
static void test_delay(void **state)
{
    struct recorder *recorder = *state;
    struct relqueue *queue = relqueue_new(record, recorder, 20, 64);
    struct timespec start;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    assert_int_equal(relqueue_push(queue, 42), 0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
        if (sent_count(recorder) == 1)
            break;
        assert_true(waited < 5.0);
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    double waited = (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
    assert_true(waited >= 0.015);
    assert_int_equal(recorder->sent[0], 42);
    relqueue_destroy(&queue);
}

/* Destroy sends what is still queued (an unmount loses no release). */
static void test_destroy_sends_rest(void **state)
{
    struct recorder *recorder = *state;
    struct relqueue *queue = relqueue_new(record, recorder, 60000, 4096);
    for (uint64_t ino = 1; ino <= 10; ino++)
        assert_int_equal(relqueue_push(queue, ino), 0);
    relqueue_destroy(&queue);
    assert_int_equal(sent_count(recorder), 10);
}

struct pusher {
    struct relqueue *queue;
    uint64_t first;
    int failures; /* cmocka's asserts belong to the main thread */
};

static void *push_many(void *arg)
{
    struct pusher *pusher = arg;
    for (uint64_t i = 0; i < 20000; i++)
        if (relqueue_push(pusher->queue, pusher->first + i) != 0)
            pusher->failures++;
    return NULL;
}

/* Several threads at once: every release arrives exactly once. */
static void test_threads(void **state)
{
    struct recorder *recorder = *state;
    struct relqueue *queue = relqueue_new(record, recorder, 1, 512);
    pthread_t threads[4];
    struct pusher pushers[4];
    for (int i = 0; i < 4; i++) {
        pushers[i].queue = queue;
        pushers[i].first = (uint64_t)i * 100000 + 1;
        pushers[i].failures = 0;
        assert_int_equal(pthread_create(&threads[i], NULL, push_many, &pushers[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(pushers[i].failures, 0);
    }
    relqueue_flush(queue);
    assert_int_equal(sent_count(recorder), 80000);
    static uint8_t seen[400000];
    memset(seen, 0, sizeof(seen));
    for (uint32_t i = 0; i < 80000; i++) {
        uint64_t ino = recorder->sent[i];
        assert_true(ino > 0 && ino < sizeof(seen));
        assert_int_equal(seen[ino], 0);
        seen[ino] = 1;
    }
    assert_true(recorder->largest <= 512);
    relqueue_destroy(&queue);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_sends_rest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
    };
    return cmocka_run_group_tests_name("relqueue", tests, NULL, NULL);
}
