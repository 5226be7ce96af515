/*
 * @file nsqueue.c
 * See nsqueue.h. A batchqueue of changes (batchqueue.c: the ring, its
 * thread, the batching and the waits) whose ring holds max_pending changes
 * from the start; this file is the rules of namespace changes: which names
 * are accepted, which outstanding change a request waits for, and which
 * were creates.
 */
#include "nsqueue.h"

#include "batchqueue.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct nsqueue {
    struct batchqueue *batches;
    nsqueue_send_fn send;
    void *ctx;
    /* The serial (batchqueue_push) of the last create pushed, 0 if none:
     * creates are pending while it is above batchqueue_sent(). */
    atomic_uint_least64_t last_create;
};

static void nsqueue_send_batch(void *ctx, const void *items, uint32_t count)
{
    struct nsqueue *queue = ctx;
    queue->send(queue->ctx, items, count);
}

struct nsqueue *nsqueue_new(nsqueue_send_fn send, void *ctx, uint32_t max_batch,
                            uint32_t max_pending)
{
    struct nsqueue *queue = calloc(1, sizeof(*queue));
    if (!queue)
        return NULL;
    queue->send = send;
    queue->ctx = ctx;
    atomic_init(&queue->last_create, 0);
    struct batchqueue_config config = {
        .item_size = sizeof(struct nsqueue_item),
        .max_batch = max_batch,
        .max_queued = max_pending,
        .first_slots = 0, /* all at once: a push never fails for memory */
        .delay_ms = 0,
        .send = nsqueue_send_batch,
        .ctx = queue,
    };
    queue->batches = batchqueue_new(&config);
    if (!queue->batches) {
        free(queue);
        return NULL;
    }
    return queue;
}

void nsqueue_set_linger(struct nsqueue *queue, int linger_ms)
{
    batchqueue_set_delay(queue->batches, linger_ms);
}

void nsqueue_destroy(struct nsqueue **queuep)
{
    if (!queuep || !*queuep)
        return;
    batchqueue_destroy(&(*queuep)->batches); /* sends what is outstanding */
    free(*queuep);
    *queuep = NULL;
}

/* Appends *item (its name already checked), waiting while max_pending are outstanding. */
static int nsqueue_push(struct nsqueue *queue, const struct nsqueue_item *item)
{
    uint64_t serial;
    int rc = batchqueue_push(queue->batches, item, &serial);
    if (rc != 0 || item->kind != NSQUEUE_CREATE)
        return rc;
    /* Pushes race: last_create only grows. */
    uint64_t last = atomic_load(&queue->last_create);
    while (last < serial && !atomic_compare_exchange_weak(&queue->last_create, &last, serial))
        ;
    return 0;
}

int nsqueue_push_unlink(struct nsqueue *queue, uint64_t parent, const char *name, uint64_t ino)
{
    struct nsqueue_item item = {.kind = NSQUEUE_UNLINK, .parent = parent, .ino = ino};
    size_t len = strlen(name);
    if (len > TS_MAX_NAME)
        return -ENAMETOOLONG;
    memcpy(item.name, name, len + 1);
    return nsqueue_push(queue, &item);
}

int nsqueue_push_create(struct nsqueue *queue, const struct nsqueue_item *item)
{
    if (item->kind != NSQUEUE_CREATE || strnlen(item->name, sizeof(item->name)) > TS_MAX_NAME)
        return -ENAMETOOLONG;
    return nsqueue_push(queue, item);
}

/* What a waiter waits for: with name, a change of name in ino; without, one
 * in directory ino or of inode ino. */
struct nsqueue_match {
    uint64_t ino;
    const char *name;
};

static bool nsqueue_matches(const void *queued, const void *key)
{
    const struct nsqueue_item *item = queued;
    const struct nsqueue_match *match = key;
    if (match->name)
        return item->parent == match->ino && strcmp(item->name, match->name) == 0;
    return item->parent == match->ino || item->ino == match->ino;
}

void nsqueue_wait_for(struct nsqueue *queue, uint64_t ino)
{
    struct nsqueue_match match = {.ino = ino, .name = NULL};
    batchqueue_wait_unmatched(queue->batches, nsqueue_matches, &match);
}

void nsqueue_wait_name(struct nsqueue *queue, uint64_t parent, const char *name)
{
    struct nsqueue_match match = {.ino = parent, .name = name};
    batchqueue_wait_unmatched(queue->batches, nsqueue_matches, &match);
}

void nsqueue_wait_all(struct nsqueue *queue)
{
    batchqueue_flush(queue->batches);
}

void nsqueue_wait_creates(struct nsqueue *queue)
{
    batchqueue_wait_sent(queue->batches, atomic_load(&queue->last_create));
}
