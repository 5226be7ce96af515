/*
 * @file relqueue.c
 * See relqueue.h. A batchqueue of inode numbers: the queue, its thread,
 * the batching and the waits are batchqueue.c's; this file is the rules
 * of releases (how many may wait, how the memory grows).
 */
#include "relqueue.h"

#include "batchqueue.h"

#include <stdlib.h>

/* A ring of 256 releases at first (2 KiB), grown up to RELQUEUE_MAX_QUEUED. */
#define RELQUEUE_FIRST_SLOTS 256

struct relqueue {
    struct batchqueue *batches;
    relqueue_send_fn send;
    void *ctx;
};

static void relqueue_send_batch(void *ctx, const void *items, uint32_t count)
{
    struct relqueue *queue = ctx;
    queue->send(queue->ctx, items, count);
}

struct relqueue *relqueue_new(relqueue_send_fn send, void *ctx, int delay_ms, uint32_t max_batch)
{
    struct relqueue *queue = calloc(1, sizeof(*queue));
    if (!queue)
        return NULL;
    queue->send = send;
    queue->ctx = ctx;
    struct batchqueue_config config = {
        .item_size = sizeof(uint64_t),
        .max_batch = max_batch,
        .max_queued = RELQUEUE_MAX_QUEUED,
        .first_slots = RELQUEUE_FIRST_SLOTS,
        .delay_ms = delay_ms,
        .send = relqueue_send_batch,
        .ctx = queue,
    };
    queue->batches = batchqueue_new(&config);
    if (!queue->batches) {
        free(queue);
        return NULL;
    }
    return queue;
}

void relqueue_destroy(struct relqueue **queuep)
{
    if (!queuep || !*queuep)
        return;
    batchqueue_destroy(&(*queuep)->batches); /* sends what is queued */
    free(*queuep);
    *queuep = NULL;
}

int relqueue_push(struct relqueue *queue, uint64_t ino)
{
    return batchqueue_push(queue->batches, &ino, NULL);
}

void relqueue_flush(struct relqueue *queue)
{
    batchqueue_flush(queue->batches);
}
