/*
 * @file relqueue.h
 * Releases of open files, sent to meta in the background and in batches.
 *
 * The kernel does not wait for a RELEASE, but answering it with a meta
 * round trip kept a FUSE thread and meta busy once per close. Instead each
 * release is queued here and a background thread hands the queue to a send
 * function in batches: a batch leaves once it is max_batch long or its
 * oldest release has waited delay_ms, so a burst of closes costs one request.
 *
 * A delayed release only keeps an unlinked-but-open inode in meta's store a
 * little longer (meta reaps it at the last release); relqueue_destroy()
 * sends everything still queued, so an unmount loses no release.
 * Thread-safe: any thread may push.
 */
#ifndef TESSERA_RELQUEUE_H
#define TESSERA_RELQUEUE_H

#include <stdint.h>

/*
 * Sends count releases (count >= 1). Called from the queue's thread only,
 * never with the queue's lock held. Its result is not retried: a release
 * meta did not get is found by the next renewal of the mount's session,
 * which then tells meta again what is open (metaclient.h).
 */
typedef void (*relqueue_send_fn)(void *ctx, const uint64_t *inos, uint32_t count);

struct relqueue;

/*
 * A queue whose thread calls send(ctx, ...) with batches of at most
 * max_batch releases, each sent at most delay_ms after its first release
 * was queued. NULL on failure (no memory, no thread).
 */
struct relqueue *relqueue_new(relqueue_send_fn send, void *ctx, int delay_ms, uint32_t max_batch);
/* Sends what is queued, stops the thread, frees; accepts NULL, clears *queuep. */
void relqueue_destroy(struct relqueue **queuep);

/*
 * Queues one release of ino. Returns 0, or -ENOMEM (nothing queued: the
 * caller sends it itself). Waits while RELQUEUE_MAX_QUEUED releases are
 * queued or being sent (meta not answering), so memory stays bounded.
 */
int relqueue_push(struct relqueue *queue, uint64_t ino);
#define RELQUEUE_MAX_QUEUED 65536

/* Returns once every release queued before the call has been sent. */
void relqueue_flush(struct relqueue *queue);

#endif
