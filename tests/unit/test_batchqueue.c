/*
 * @file test_batchqueue.c
 * Unit tests of the mount's batching queue (fuse/batchqueue.c) with a send
 * function that records its batches and can be held shut: items leave in
 * push order, each once, in batches of at most max_batch; the ring grows
 * up to max_queued and pushes wait there; a short batch waits for the
 * delay unless someone waits for it; waits see items in flight; destroy
 * sends what is left.
 */
#include "batchqueue.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define MAX_SENT 4096

/* An item wider than a word, so copies of the wrong size would show. */
struct item {
    uint64_t number;
    uint64_t key;
    char pad[40];
};

struct recorder {
    pthread_mutex_t lock;
    pthread_cond_t opened;
    bool shut; /* send() waits while shut */
    atomic_int sending;
    struct item sent[MAX_SENT];
    uint32_t count;
    uint32_t batches;
    uint32_t largest;
};

static void record(void *ctx, const void *items, uint32_t count)
{
    struct recorder *recorder = ctx;
    const struct item *batch = items;
    atomic_fetch_add(&recorder->sending, 1);
    pthread_mutex_lock(&recorder->lock);
    while (recorder->shut)
        pthread_cond_wait(&recorder->opened, &recorder->lock);
    for (uint32_t i = 0; i < count && recorder->count < MAX_SENT; i++)
        recorder->sent[recorder->count++] = batch[i];
    recorder->batches++;
    if (count > recorder->largest)
        recorder->largest = count;
    pthread_mutex_unlock(&recorder->lock);
    atomic_fetch_sub(&recorder->sending, 1);
}

static void set_shut(struct recorder *recorder, bool shut)
{
    pthread_mutex_lock(&recorder->lock);
    recorder->shut = shut;
    pthread_cond_broadcast(&recorder->opened);
    pthread_mutex_unlock(&recorder->lock);
}

static uint32_t sent_count(struct recorder *recorder)
{
    pthread_mutex_lock(&recorder->lock);
    uint32_t count = recorder->count;
    pthread_mutex_unlock(&recorder->lock);
    return count;
}

static void pause_ms(int ms)
{
    struct timespec pause = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

static double now_s(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static struct batchqueue *queue_new(struct recorder *recorder, uint32_t max_batch,
                                    uint32_t max_queued, uint32_t first_slots, int delay_ms)
{
    struct batchqueue_config config = {
        .item_size = sizeof(struct item),
        .max_batch = max_batch,
        .max_queued = max_queued,
        .first_slots = first_slots,
        .delay_ms = delay_ms,
        .send = record,
        .ctx = recorder,
    };
    struct batchqueue *queue = batchqueue_new(&config);
    assert_non_null(queue);
    return queue;
}

static void push(struct batchqueue *queue, uint64_t number, uint64_t key)
{
    struct item item = {.number = number, .key = key};
    assert_int_equal(batchqueue_push(queue, &item, NULL), 0);
}

static int setup(void **state)
{
    struct recorder *recorder = calloc(1, sizeof(*recorder));
    if (!recorder)
        return -1;
    pthread_mutex_init(&recorder->lock, NULL);
    pthread_cond_init(&recorder->opened, NULL);
    *state = recorder;
    return 0;
}

static int teardown(void **state)
{
    struct recorder *recorder = *state;
    pthread_cond_destroy(&recorder->opened);
    pthread_mutex_destroy(&recorder->lock);
    free(recorder);
    return 0;
}

/* Many items through a ring that starts small and wraps: in order, each once, batches bounded. */
static void test_order_and_batches(void **state)
{
    struct recorder *recorder = *state;
    struct batchqueue *queue = queue_new(recorder, 16, 40, 3, 0);
    for (uint64_t i = 1; i <= 1000; i++) {
        struct item item = {.number = i};
        uint64_t serial = 0;
        assert_int_equal(batchqueue_push(queue, &item, &serial), 0);
        assert_int_equal(serial, i);
    }
    batchqueue_flush(queue);
    assert_int_equal(sent_count(recorder), 1000);
    assert_int_equal(batchqueue_sent(queue), 1000);
    for (uint32_t i = 0; i < 1000; i++)
        assert_int_equal(recorder->sent[i].number, i + 1);
    assert_true(recorder->largest <= 16);
    batchqueue_destroy(&queue);
    assert_null(queue);
    batchqueue_destroy(NULL);
}

struct pusher {
    struct batchqueue *queue;
    uint64_t total;
    atomic_uint_least64_t pushed;
};

static void *push_thread(void *arg)
{
    struct pusher *pusher = arg;
    for (uint64_t i = 1; i <= pusher->total; i++) {
        struct item item = {.number = i};
        if (batchqueue_push(pusher->queue, &item, NULL) == 0)
            atomic_fetch_add(&pusher->pushed, 1);
    }
    return NULL;
}

/* At most max_queued outstanding, items in flight included: the next push waits. */
static void test_bounded(void **state)
{
    struct recorder *recorder = *state;
    struct batchqueue *queue = queue_new(recorder, 2, 5, 2, 0);
    struct pusher pusher = {.queue = queue, .total = 12};
    pthread_t thread;
    set_shut(recorder, true);
    assert_int_equal(pthread_create(&thread, NULL, push_thread, &pusher), 0);
    pause_ms(100);
    assert_int_equal(atomic_load(&pusher.pushed), 5);
    set_shut(recorder, false);
    pthread_join(thread, NULL);
    batchqueue_flush(queue);
    assert_int_equal(sent_count(recorder), 12);
    for (uint32_t i = 0; i < 12; i++)
        assert_int_equal(recorder->sent[i].number, i + 1);
    batchqueue_destroy(&queue);
}

/* A short batch waits the delay for company; a waiter cuts the delay short. */
static void test_delay(void **state)
{
    struct recorder *recorder = *state;
    struct batchqueue *queue = queue_new(recorder, 64, 64, 0, 200);
    double start = now_s();
    for (uint64_t i = 1; i <= 5; i++)
        push(queue, i, 0);
    while (sent_count(recorder) < 5)
        pause_ms(1);
    assert_true(now_s() - start >= 0.15);
    assert_int_equal(recorder->batches, 1);

    batchqueue_set_delay(queue, 10 * 1000);
    uint64_t serial = 0;
    struct item item = {.number = 6};
    start = now_s();
    assert_int_equal(batchqueue_push(queue, &item, &serial), 0);
    batchqueue_wait_sent(queue, serial);
    assert_true(now_s() - start < 5.0);
    assert_int_equal(sent_count(recorder), 6);
    batchqueue_wait_sent(queue, 0); /* nothing to wait for */
    push(queue, 7, 0);
    batchqueue_destroy(&queue); /* does not wait the delay either */
    assert_true(now_s() - start < 5.0);
    assert_int_equal(sent_count(recorder), 7);
}

static bool key_matches(const void *queued, const void *key)
{
    return ((const struct item *)queued)->key == *(const uint64_t *)key;
}

struct waiter {
    struct batchqueue *queue;
    uint64_t key;
    atomic_bool done;
};

static void *wait_thread(void *arg)
{
    struct waiter *waiter = arg;
    batchqueue_wait_unmatched(waiter->queue, key_matches, &waiter->key);
    atomic_store(&waiter->done, true);
    return NULL;
}

/* A wait for matching items sees those in flight and queued, and no others. */
static void test_wait_unmatched(void **state)
{
    struct recorder *recorder = *state;
    struct batchqueue *queue = queue_new(recorder, 1, 16, 0, 0);
    uint64_t absent = 99;
    batchqueue_wait_unmatched(queue, key_matches, &absent); /* nothing outstanding */
    set_shut(recorder, true);
    push(queue, 1, 7); /* in flight once the thread has it */
    while (atomic_load(&recorder->sending) == 0)
        pause_ms(1);
    push(queue, 2, 8);                                      /* queued behind it */
    batchqueue_wait_unmatched(queue, key_matches, &absent); /* neither matches */

    struct waiter in_flight = {.queue = queue, .key = 7};
    struct waiter queued = {.queue = queue, .key = 8};
    pthread_t threads[2];
    assert_int_equal(pthread_create(&threads[0], NULL, wait_thread, &in_flight), 0);
    assert_int_equal(pthread_create(&threads[1], NULL, wait_thread, &queued), 0);
    pause_ms(50);
    assert_false(atomic_load(&in_flight.done));
    assert_false(atomic_load(&queued.done));
    set_shut(recorder, false);
    pthread_join(threads[0], NULL);
    pthread_join(threads[1], NULL);
    assert_int_equal(sent_count(recorder), 2);
    batchqueue_destroy(&queue);
}

/* Destroy sends what is still queued, however long its delay. */
static void test_destroy_sends_rest(void **state)
{
    struct recorder *recorder = *state;
    struct batchqueue *queue = queue_new(recorder, 4096, 4096, 8, 60000);
    for (uint64_t i = 1; i <= 10; i++)
        push(queue, i, 0);
    batchqueue_destroy(&queue);
    assert_int_equal(sent_count(recorder), 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_order_and_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_unmatched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_sends_rest, setup, teardown),
    };
    return cmocka_run_group_tests_name("batchqueue", tests, NULL, NULL);
}
