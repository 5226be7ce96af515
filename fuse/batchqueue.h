/*
 * @file batchqueue.h
 * A queue of fixed-size items that a thread of its own hands to a send
 * function in batches, in the order pushed: what the mount's background
 * requests to meta share (relqueue.h: releases; nsqueue.h: unlinks and
 * creates). Each of those keeps its own rules (what an item is, who waits
 * for what); this module knows only items, batches and waiting.
 *
 * A batch leaves once it is max_batch long, once its oldest item has
 * waited delay_ms (counted from the item's push, or, for an item queued
 * behind a batch, from when that batch was taken), when a thread waits for
 * the queue, or when the queue is destroyed. An item is outstanding from
 * its push until send() has returned for its batch: waits see the items in
 * flight as well as the queued ones. At most max_queued items are
 * outstanding; a push waits for room. Thread-safe: any thread may push
 * and wait.
 */
#ifndef TESSERA_BATCHQUEUE_H
#define TESSERA_BATCHQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Sends count (>= 1) items, an array of item_size each, in push order.
 * Called from the queue's thread only, never with the queue's lock held;
 * the items are the queue's copy, valid until it returns. What fails is
 * the send function's to handle: the items count as sent once it returns.
 */
typedef void (*batchqueue_send_fn)(void *ctx, const void *items, uint32_t count);

struct batchqueue_config {
    size_t item_size;    /* bytes of one item (> 0) */
    uint32_t max_batch;  /* items per send() at most; clamped to 1..max_queued */
    uint32_t max_queued; /* outstanding items at most (0 is taken as 1) */
    /* Item slots allocated at first, doubled as needed up to max_queued
     * (0 or more than max_queued: all of them at once, and pushes never
     * fail for memory). */
    uint32_t first_slots;
    int delay_ms; /* how long a batch short of max_batch waits for more (<= 0: not) */
    batchqueue_send_fn send;
    void *ctx;
};

struct batchqueue;

/* A queue and its thread; NULL on failure (no memory, no thread). */
struct batchqueue *batchqueue_new(const struct batchqueue_config *config);
/* Sends everything outstanding, stops the thread, frees; accepts NULL, clears *queuep. */
void batchqueue_destroy(struct batchqueue **queuep);
/* Changes the delay of the batches to come (batchqueue_config.delay_ms). */
void batchqueue_set_delay(struct batchqueue *queue, int delay_ms);

/*
 * Appends a copy of item, waiting while max_queued items are outstanding.
 * Returns 0 and, if serial is not NULL, the item's place among all pushes
 * (1, 2, ...; for batchqueue_wait_sent); or -ENOMEM (nothing queued) when
 * more slots were needed and none could be had.
 */
int batchqueue_push(struct batchqueue *queue, const void *item, uint64_t *serial);

/* How many items have been sent so far: the serials up to it. Lock-free. */
uint64_t batchqueue_sent(const struct batchqueue *queue);
/* Returns once the items up to serial have been sent, hurrying the batch. */
void batchqueue_wait_sent(struct batchqueue *queue, uint64_t serial);
/* Returns once every item pushed before the call has been sent. */
void batchqueue_flush(struct batchqueue *queue);

/* Whether an outstanding item is one a waiter waits for (key: the waiter's). */
typedef bool (*batchqueue_match_fn)(const void *item, const void *key);
/*
 * Returns once no outstanding item matches, hurrying the batches; at once
 * when nothing is outstanding. match is called with the queue's lock held.
 */
void batchqueue_wait_unmatched(struct batchqueue *queue, batchqueue_match_fn match,
                               const void *key);

#endif
