/*
 * @file batchqueue.c
 * See batchqueue.h. The outstanding items are a ring under one mutex: the
 * first `inflight` of them are the batch being sent, the rest wait their
 * turn. The thread copies a batch out of the ring under the lock and calls
 * send() without it, so pushes never wait for the receiver (but at the
 * max_queued bound), and the ring may grow, or waiters scan it, while a
 * batch is out. Items leave the ring only once send() has returned: a
 * waiter for an item in flight waits for its send. `outstanding` and
 * `sent_total` are atomic copies, so the common waits (nothing pending)
 * skip the lock.
 */
#include "batchqueue.h"

#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct batchqueue {
    batchqueue_send_fn send;
    void *ctx;
    size_t item_size;
    uint32_t max_batch;
    uint32_t max_queued;
    pthread_t thread;
    unsigned char *batch; /* the thread's copy of the batch being sent */

    pthread_mutex_t lock; /* protects the fields below */
    pthread_cond_t wake;  /* to the thread: something queued, a waiter, stop */
    pthread_cond_t sent;  /* from the thread: a batch was sent */
    unsigned char *ring;
    uint32_t slots;         /* the ring's size, in items */
    uint32_t head;          /* slot of the oldest outstanding item */
    uint32_t count;         /* outstanding items, in flight first */
    uint32_t inflight;      /* of them, being sent now */
    struct timespec oldest; /* since when the first queued (not in flight) item waits */
    uint64_t pushed_total;
    int delay_ms;
    uint32_t waiting; /* threads waiting for a send: batches are not delayed */
    bool stopping;
    atomic_uint outstanding;          /* == count, readable without the lock */
    atomic_uint_least64_t sent_total; /* items sent since the start, written under the lock */
};

static unsigned char *batchqueue_slot(const struct batchqueue *queue, uint32_t index)
{
    return queue->ring + (size_t)(index % queue->slots) * queue->item_size;
}

/*
 * Lets a batch short of max_batch grow until its oldest item has waited
 * the delay, unless someone waits for it or the queue stops: one request
 * for many items costs the receiver about what one for a single item does.
 * Called by the thread with the lock held and nothing in flight.
 */
static void batchqueue_wait_due(struct batchqueue *queue)
{
    if (queue->delay_ms <= 0)
        return;
    struct timespec due = queue->oldest;
    util_timespec_add_ms(&due, queue->delay_ms);
    while (queue->count < queue->max_batch && queue->waiting == 0 && !queue->stopping)
        if (pthread_cond_timedwait(&queue->wake, &queue->lock, &due) == ETIMEDOUT)
            break;
}

/* Copies the first n outstanding items, which may wrap, into the batch. */
static void batchqueue_copy_batch(struct batchqueue *queue, uint32_t n)
{
    uint32_t first = queue->slots - queue->head < n ? queue->slots - queue->head : n;
    memcpy(queue->batch, batchqueue_slot(queue, queue->head), first * queue->item_size);
    memcpy(queue->batch + first * queue->item_size, queue->ring, (n - first) * queue->item_size);
}

static void *batchqueue_run(void *arg)
{
    struct batchqueue *queue = arg;
    pthread_mutex_lock(&queue->lock);
    for (;;) {
        while (queue->count == 0 && !queue->stopping)
            pthread_cond_wait(&queue->wake, &queue->lock);
        if (queue->count == 0)
            break; /* stopping with nothing left */
        batchqueue_wait_due(queue);
        uint32_t n = queue->count < queue->max_batch ? queue->count : queue->max_batch;
        batchqueue_copy_batch(queue, n);
        queue->inflight = n;
        if (queue->count > n) /* the rest waits from now */
            clock_gettime(CLOCK_MONOTONIC, &queue->oldest);
        pthread_mutex_unlock(&queue->lock);
        queue->send(queue->ctx, queue->batch, n);
        pthread_mutex_lock(&queue->lock);
        queue->head = (queue->head + n) % queue->slots;
        queue->count -= n;
        queue->inflight = 0;
        atomic_store(&queue->sent_total, atomic_load(&queue->sent_total) + n);
        atomic_store(&queue->outstanding, queue->count);
        pthread_cond_broadcast(&queue->sent);
    }
    pthread_mutex_unlock(&queue->lock);
    return NULL;
}

struct batchqueue *batchqueue_new(const struct batchqueue_config *config)
{
    struct batchqueue *queue = calloc(1, sizeof(*queue));
    if (!queue)
        return NULL;
    queue->send = config->send;
    queue->ctx = config->ctx;
    queue->item_size = config->item_size;
    queue->delay_ms = config->delay_ms;
    queue->max_queued = config->max_queued > 0 ? config->max_queued : 1;
    queue->max_batch = config->max_batch == 0                  ? 1
                       : config->max_batch > queue->max_queued ? queue->max_queued
                                                               : config->max_batch;
    queue->slots = config->first_slots == 0 || config->first_slots > queue->max_queued
                       ? queue->max_queued
                       : config->first_slots;
    queue->ring = malloc((size_t)queue->slots * queue->item_size);
    queue->batch = malloc((size_t)queue->max_batch * queue->item_size);
    if (!queue->ring || !queue->batch)
        goto fail_free;
    pthread_mutex_init(&queue->lock, NULL);
    util_cond_init_monotonic(&queue->wake);
    pthread_cond_init(&queue->sent, NULL);
    atomic_init(&queue->outstanding, 0);
    atomic_init(&queue->sent_total, 0);
    if (pthread_create(&queue->thread, NULL, batchqueue_run, queue) != 0)
        goto fail_sync;
    return queue;

fail_sync:
    pthread_cond_destroy(&queue->sent);
    pthread_cond_destroy(&queue->wake);
    pthread_mutex_destroy(&queue->lock);
fail_free:
    free(queue->batch);
    free(queue->ring);
    free(queue);
    return NULL;
}

void batchqueue_destroy(struct batchqueue **queuep)
{
    if (!queuep || !*queuep)
        return;
    struct batchqueue *queue = *queuep;
    pthread_mutex_lock(&queue->lock);
    queue->stopping = true;
    pthread_cond_signal(&queue->wake);
    pthread_mutex_unlock(&queue->lock);
    pthread_join(queue->thread, NULL); /* it sends what is left first */
    pthread_cond_destroy(&queue->sent);
    pthread_cond_destroy(&queue->wake);
    pthread_mutex_destroy(&queue->lock);
    free(queue->batch);
    free(queue->ring);
    free(queue);
    *queuep = NULL;
}

void batchqueue_set_delay(struct batchqueue *queue, int delay_ms)
{
    pthread_mutex_lock(&queue->lock);
    queue->delay_ms = delay_ms;
    pthread_mutex_unlock(&queue->lock);
}

/* Waits for the next send, hurrying the thread past the delay. Lock held. */
static void batchqueue_wait_send(struct batchqueue *queue)
{
    queue->waiting++;
    pthread_cond_signal(&queue->wake);
    pthread_cond_wait(&queue->sent, &queue->lock);
    queue->waiting--;
}

/*
 * Doubles the ring (up to max_queued), its items moved in order to the
 * front. The batch in flight is the thread's copy, so it may move. 0 or
 * -ENOMEM. Lock held.
 */
static int batchqueue_grow(struct batchqueue *queue)
{
    uint32_t slots = queue->slots > queue->max_queued / 2 ? queue->max_queued : queue->slots * 2;
    unsigned char *ring = malloc((size_t)slots * queue->item_size);
    if (!ring)
        return -ENOMEM;
    uint32_t first =
        queue->slots - queue->head < queue->count ? queue->slots - queue->head : queue->count;
    memcpy(ring, batchqueue_slot(queue, queue->head), first * queue->item_size);
    memcpy(ring + first * queue->item_size, queue->ring, (queue->count - first) * queue->item_size);
    free(queue->ring);
    queue->ring = ring;
    queue->slots = slots;
    queue->head = 0;
    return 0;
}

int batchqueue_push(struct batchqueue *queue, const void *item, uint64_t *serial)
{
    pthread_mutex_lock(&queue->lock);
    while (queue->count >= queue->max_queued)
        batchqueue_wait_send(queue);
    if (queue->count == queue->slots && batchqueue_grow(queue) != 0) {
        pthread_mutex_unlock(&queue->lock);
        return -ENOMEM;
    }
    uint32_t queued = queue->count - queue->inflight;
    if (queued == 0)
        clock_gettime(CLOCK_MONOTONIC, &queue->oldest);
    memcpy(batchqueue_slot(queue, queue->head + queue->count), item, queue->item_size);
    queue->count++;
    queue->pushed_total++;
    if (serial)
        *serial = queue->pushed_total;
    atomic_store(&queue->outstanding, queue->count);
    queued++;
    if (queued == 1 || queued == queue->max_batch)
        pthread_cond_signal(&queue->wake);
    pthread_mutex_unlock(&queue->lock);
    return 0;
}

uint64_t batchqueue_sent(const struct batchqueue *queue)
{
    return atomic_load(&queue->sent_total);
}

void batchqueue_wait_sent(struct batchqueue *queue, uint64_t serial)
{
    if (atomic_load(&queue->sent_total) >= serial)
        return;
    pthread_mutex_lock(&queue->lock);
    while (atomic_load(&queue->sent_total) < serial)
        batchqueue_wait_send(queue);
    pthread_mutex_unlock(&queue->lock);
}

void batchqueue_flush(struct batchqueue *queue)
{
    if (atomic_load(&queue->outstanding) == 0)
        return;
    pthread_mutex_lock(&queue->lock);
    uint64_t target = queue->pushed_total;
    while (atomic_load(&queue->sent_total) < target)
        batchqueue_wait_send(queue);
    pthread_mutex_unlock(&queue->lock);
}

/* Whether an outstanding item matches key. Lock held. */
static bool batchqueue_any_match(const struct batchqueue *queue, batchqueue_match_fn match,
                                 const void *key)
{
    for (uint32_t i = 0; i < queue->count; i++)
        if (match(batchqueue_slot(queue, queue->head + i), key))
            return true;
    return false;
}

void batchqueue_wait_unmatched(struct batchqueue *queue, batchqueue_match_fn match, const void *key)
{
    if (atomic_load(&queue->outstanding) == 0)
        return;
    pthread_mutex_lock(&queue->lock);
    while (batchqueue_any_match(queue, match, key))
        batchqueue_wait_send(queue);
    pthread_mutex_unlock(&queue->lock);
}
