/*
 * @file relqueue.c
 * See relqueue.h. One mutex guards the queue; the thread copies a batch
 * out under it and calls send() without it, so pushes never wait for meta
 * (except at the RELQUEUE_MAX_QUEUED bound). Counters of releases pushed
 * and sent since the start let relqueue_flush() wait for exactly what was
 * queued before it.
 */
#include "relqueue.h"

#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct relqueue {
    relqueue_send_fn send;
    void *ctx;
    int delay_ms;
    uint32_t max_batch;
    pthread_t thread;
    uint64_t *batch; /* the thread's copy of the batch being sent */

    pthread_mutex_t lock; /* protects the fields below */
    pthread_cond_t wake;  /* to the thread: something queued, a flush, stop */
    pthread_cond_t sent;  /* from the thread: a batch went out */
    uint64_t *items;
    uint32_t count;
    uint32_t cap;
    struct timespec oldest; /* when items[0] was queued (CLOCK_MONOTONIC) */
    uint64_t pushed_total;
    uint64_t sent_total;
    int flushers; /* relqueue_flush() calls waiting: send without delay */
    bool stopping;
};

/* Waits for a batch to be due: full, old enough, flushed or stopping. */
static void relqueue_wait_due(struct relqueue *queue)
{
    struct timespec due = queue->oldest;
    util_timespec_add_ms(&due, queue->delay_ms);
    while (queue->count > 0 && queue->count < queue->max_batch && !queue->stopping &&
           queue->flushers == 0) {
        if (pthread_cond_timedwait(&queue->wake, &queue->lock, &due) == ETIMEDOUT)
            break;
    }
}

static void *relqueue_run(void *arg)
{
    struct relqueue *queue = arg;
    pthread_mutex_lock(&queue->lock);
    for (;;) {
        while (queue->count == 0 && !queue->stopping)
            pthread_cond_wait(&queue->wake, &queue->lock);
        if (queue->count == 0)
            break; /* stopping with nothing left */
        relqueue_wait_due(queue);
        uint32_t n = queue->count < queue->max_batch ? queue->count : queue->max_batch;
        memcpy(queue->batch, queue->items, n * sizeof(*queue->items));
        queue->count -= n;
        memmove(queue->items, queue->items + n, queue->count * sizeof(*queue->items));
        if (queue->count > 0)
            clock_gettime(CLOCK_MONOTONIC, &queue->oldest);
        pthread_mutex_unlock(&queue->lock);
        queue->send(queue->ctx, queue->batch, n);
        pthread_mutex_lock(&queue->lock);
        queue->sent_total += n;
        pthread_cond_broadcast(&queue->sent);
    }
    pthread_mutex_unlock(&queue->lock);
    return NULL;
}

struct relqueue *relqueue_new(relqueue_send_fn send, void *ctx, int delay_ms, uint32_t max_batch)
{
    struct relqueue *queue = calloc(1, sizeof(*queue));
    if (!queue)
        return NULL;
    queue->send = send;
    queue->ctx = ctx;
    queue->delay_ms = delay_ms > 0 ? delay_ms : 0;
    queue->max_batch = max_batch > 0 ? max_batch : 1;
    queue->batch = malloc(queue->max_batch * sizeof(*queue->batch));
    if (!queue->batch)
        goto fail_queue;
    pthread_mutex_init(&queue->lock, NULL);
    util_cond_init_monotonic(&queue->wake);
    pthread_cond_init(&queue->sent, NULL);
    if (pthread_create(&queue->thread, NULL, relqueue_run, queue) != 0)
        goto fail_sync;
    return queue;

fail_sync:
    pthread_cond_destroy(&queue->sent);
    pthread_cond_destroy(&queue->wake);
    pthread_mutex_destroy(&queue->lock);
    free(queue->batch);
fail_queue:
    free(queue);
    return NULL;
}

void relqueue_destroy(struct relqueue **queuep)
{
    if (!queuep || !*queuep)
        return;
    struct relqueue *queue = *queuep;
    pthread_mutex_lock(&queue->lock);
    queue->stopping = true;
    pthread_cond_signal(&queue->wake);
    pthread_cond_broadcast(&queue->sent); /* pushers waiting for room */
    pthread_mutex_unlock(&queue->lock);
    pthread_join(queue->thread, NULL);
    pthread_cond_destroy(&queue->sent);
    pthread_cond_destroy(&queue->wake);
    pthread_mutex_destroy(&queue->lock);
    free(queue->items);
    free(queue->batch);
    free(queue);
    *queuep = NULL;
}

int relqueue_push(struct relqueue *queue, uint64_t ino)
{
    pthread_mutex_lock(&queue->lock);
    while (queue->count >= RELQUEUE_MAX_QUEUED && !queue->stopping)
        pthread_cond_wait(&queue->sent, &queue->lock);
    if (queue->count == queue->cap) {
        uint32_t new_cap = queue->cap ? queue->cap * 2 : 256;
        uint64_t *grown = realloc(queue->items, new_cap * sizeof(*grown));
        if (!grown) {
            pthread_mutex_unlock(&queue->lock);
            return -ENOMEM;
        }
        queue->items = grown;
        queue->cap = new_cap;
    }
    if (queue->count == 0)
        clock_gettime(CLOCK_MONOTONIC, &queue->oldest);
    queue->items[queue->count++] = ino;
    queue->pushed_total++;
    if (queue->count == 1 || queue->count == queue->max_batch)
        pthread_cond_signal(&queue->wake);
    pthread_mutex_unlock(&queue->lock);
    return 0;
}

void relqueue_flush(struct relqueue *queue)
{
    pthread_mutex_lock(&queue->lock);
    uint64_t target = queue->pushed_total;
    queue->flushers++;
    pthread_cond_signal(&queue->wake);
    while (queue->sent_total < target)
        pthread_cond_wait(&queue->sent, &queue->lock);
    queue->flushers--;
    pthread_mutex_unlock(&queue->lock);
}
