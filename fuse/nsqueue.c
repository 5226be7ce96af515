/*
 * @file nsqueue.c
 * See nsqueue.h. The outstanding changes are a ring of max_pending items
 * under one mutex: the first `inflight` of them are being sent by the
 * thread (which reads them without the lock: pushes only write past the
 * end, and nothing else moves them), the rest wait their turn. Waiters scan
 * the ring for their directory; `outstanding` lets the common case, nothing
 * pending, skip the lock.
 */
#include "nsqueue.h"

#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct nsqueue {
    nsqueue_send_fn send;
    void *ctx;
    uint32_t max_batch;
    pthread_t thread;
    struct nsqueue_item *batch; /* the thread's contiguous copy of a wrapped batch */

    pthread_mutex_t lock; /* protects the fields below */
    pthread_cond_t wake;  /* to the thread: something queued, or stop */
    pthread_cond_t sent;  /* from the thread: a batch was sent */
    struct nsqueue_item *ring;
    uint32_t cap;
    uint32_t head;     /* index of the oldest outstanding item */
    uint32_t count;    /* outstanding items, in flight first */
    uint32_t inflight; /* of them, being sent now */
    uint64_t pushed_total;
    uint64_t sent_total;
    uint64_t last_create; /* pushed_total right after the last create was pushed */
    bool stopping;
    uint32_t waiting; /* threads waiting for sends (waits, pushes into a full ring) */
    int linger_ms;    /* how long a batch short of max_batch waits for more */
    atomic_uint outstanding;     /* == count, readable without the lock */
    atomic_bool creates_pending; /* last_create > sent_total, readable without the lock */
};

/*
 * Lets a short batch grow for up to linger_ms, unless someone waits for
 * it: one request for many changes costs meta about what one for a single
 * change does. Called with the lock held.
 */
static void linger(struct nsqueue *queue)
{
    if (queue->linger_ms <= 0)
        return;
    struct timespec until = util_monotonic_deadline(queue->linger_ms);
    while (queue->count < queue->max_batch && queue->waiting == 0 && !queue->stopping)
        if (pthread_cond_timedwait(&queue->wake, &queue->lock, &until) != 0)
            break;
}

static void *nsqueue_run(void *arg)
{
    struct nsqueue *queue = arg;
    pthread_mutex_lock(&queue->lock);
    for (;;) {
        while (queue->count == 0 && !queue->stopping)
            pthread_cond_wait(&queue->wake, &queue->lock);
        if (queue->count == 0)
            break; /* stopping with nothing left */
        linger(queue);
        uint32_t n = queue->count < queue->max_batch ? queue->count : queue->max_batch;
        const struct nsqueue_item *items = &queue->ring[queue->head];
        queue->inflight = n;
        if (queue->head + n > queue->cap) { /* wrapped: hand send() one array */
            uint32_t first = queue->cap - queue->head;
            memcpy(queue->batch, &queue->ring[queue->head], first * sizeof(*items));
            memcpy(queue->batch + first, queue->ring, (n - first) * sizeof(*items));
            items = queue->batch;
        }
        pthread_mutex_unlock(&queue->lock);
        queue->send(queue->ctx, items, n);
        pthread_mutex_lock(&queue->lock);
        queue->head = (queue->head + n) % queue->cap;
        queue->count -= n;
        queue->inflight = 0;
        queue->sent_total += n;
        atomic_store(&queue->outstanding, queue->count);
        atomic_store(&queue->creates_pending, queue->last_create > queue->sent_total);
        pthread_cond_broadcast(&queue->sent);
    }
    pthread_mutex_unlock(&queue->lock);
    return NULL;
}

struct nsqueue *nsqueue_new(nsqueue_send_fn send, void *ctx, uint32_t max_batch,
                            uint32_t max_pending)
{
    struct nsqueue *queue = calloc(1, sizeof(*queue));
    if (!queue)
        return NULL;
    queue->send = send;
    queue->ctx = ctx;
    queue->cap = max_pending > 0 ? max_pending : 1;
    queue->max_batch = max_batch == 0 ? 1 : max_batch > queue->cap ? queue->cap : max_batch;
    queue->ring = calloc(queue->cap, sizeof(*queue->ring));
    queue->batch = calloc(queue->max_batch, sizeof(*queue->batch));
    if (!queue->ring || !queue->batch)
        goto fail_free;
    pthread_mutex_init(&queue->lock, NULL);
    util_cond_init_monotonic(&queue->wake);
    pthread_cond_init(&queue->sent, NULL);
    atomic_init(&queue->outstanding, 0);
    atomic_init(&queue->creates_pending, false);
    if (pthread_create(&queue->thread, NULL, nsqueue_run, queue) != 0)
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

void nsqueue_destroy(struct nsqueue **queuep)
{
    if (!queuep || !*queuep)
        return;
    struct nsqueue *queue = *queuep;
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

/* Waits for the next send, hurrying the thread past its linger. Lock held. */
static void wait_sent(struct nsqueue *queue)
{
    queue->waiting++;
    pthread_cond_signal(&queue->wake);
    pthread_cond_wait(&queue->sent, &queue->lock);
    queue->waiting--;
}

/* Appends *item (its name already checked), waiting while the ring is full. */
static void nsqueue_push(struct nsqueue *queue, const struct nsqueue_item *item)
{
    pthread_mutex_lock(&queue->lock);
    while (queue->count == queue->cap)
        wait_sent(queue);
    queue->ring[(queue->head + queue->count) % queue->cap] = *item;
    queue->count++;
    queue->pushed_total++;
    if (item->kind == NSQUEUE_CREATE) {
        queue->last_create = queue->pushed_total;
        atomic_store(&queue->creates_pending, true);
    }
    atomic_store(&queue->outstanding, queue->count);
    if (queue->count == 1 || queue->count == queue->max_batch)
        pthread_cond_signal(&queue->wake);
    pthread_mutex_unlock(&queue->lock);
}

int nsqueue_push_unlink(struct nsqueue *queue, uint64_t parent, const char *name, uint64_t ino)
{
    struct nsqueue_item item = {.kind = NSQUEUE_UNLINK, .parent = parent, .ino = ino};
    size_t len = strlen(name);
    if (len > TS_MAX_NAME)
        return -ENAMETOOLONG;
    memcpy(item.name, name, len + 1);
    nsqueue_push(queue, &item);
    return 0;
}

int nsqueue_push_create(struct nsqueue *queue, const struct nsqueue_item *item)
{
    if (item->kind != NSQUEUE_CREATE || strnlen(item->name, sizeof(item->name)) > TS_MAX_NAME)
        return -ENAMETOOLONG;
    nsqueue_push(queue, item);
    return 0;
}

/*
 * Whether an outstanding change matches: with name, one of name in ino;
 * without, one in directory ino or of inode ino. Called with the lock held.
 */
static bool nsqueue_outstanding(const struct nsqueue *queue, uint64_t ino, const char *name)
{
    for (uint32_t i = 0; i < queue->count; i++) {
        const struct nsqueue_item *item = &queue->ring[(queue->head + i) % queue->cap];
        if (name ? item->parent == ino && strcmp(item->name, name) == 0
                 : item->parent == ino || item->ino == ino)
            return true;
    }
    return false;
}

/* Waits until no outstanding change matches (see nsqueue_outstanding). */
static void nsqueue_wait_match(struct nsqueue *queue, uint64_t ino, const char *name)
{
    if (atomic_load(&queue->outstanding) == 0)
        return;
    pthread_mutex_lock(&queue->lock);
    while (nsqueue_outstanding(queue, ino, name))
        wait_sent(queue);
    pthread_mutex_unlock(&queue->lock);
}

void nsqueue_wait_for(struct nsqueue *queue, uint64_t ino)
{
    nsqueue_wait_match(queue, ino, NULL);
}

void nsqueue_wait_name(struct nsqueue *queue, uint64_t parent, const char *name)
{
    nsqueue_wait_match(queue, parent, name);
}

void nsqueue_wait_all(struct nsqueue *queue)
{
    if (atomic_load(&queue->outstanding) == 0)
        return;
    pthread_mutex_lock(&queue->lock);
    uint64_t target = queue->pushed_total;
    while (queue->sent_total < target)
        wait_sent(queue);
    pthread_mutex_unlock(&queue->lock);
}

void nsqueue_wait_creates(struct nsqueue *queue)
{
    if (!atomic_load(&queue->creates_pending))
        return;
    pthread_mutex_lock(&queue->lock);
    uint64_t target = queue->last_create;
    while (queue->sent_total < target)
        wait_sent(queue);
    pthread_mutex_unlock(&queue->lock);
}

void nsqueue_set_linger(struct nsqueue *queue, int linger_ms)
{
    pthread_mutex_lock(&queue->lock);
    queue->linger_ms = linger_ms;
    pthread_mutex_unlock(&queue->lock);
}
