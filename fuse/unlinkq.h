/*
 * @file unlinkq.h
 * Unlinks answered at once and sent to meta in the background (CephFS's
 * asynchronous directory operations, for unlink only).
 *
 * The kernel has already checked an UNLINK against its own view (the name
 * exists, it is not a directory, the caller may delete it), so meta's answer
 * is known in advance in all but racy cases: another mount removed the name
 * first (the name is gone either way) or meta cannot be reached (the
 * background thread retries). Waiting for it cost one meta round trip per
 * `rm` of a file. Here the unlink is queued, the kernel answered, and a
 * thread sends the queue to meta in batches, in queue order.
 *
 * What keeps this invisible to the mount's users: a later request about a
 * name with an unlink pending waits for it (unlinkq_wait_name: lookups,
 * creates, renames), one about a whole directory waits for all of the
 * directory's (unlinkq_wait_for: listings, getattr of the directory or of
 * the unlinked inode), and what cannot name its directory waits for all of them
 * (unlinkq_wait_all: rmdir, whose directory may be the one emptied, and
 * unmount). At most max_pending unlinks are outstanding, so the rate an
 * `rm -r` shows is meta's rate, not the queue's. Other mounts see an unlink
 * once meta has done it, a few milliseconds later; a mount killed with
 * unlinks queued loses them (the files stay), as an unlink not followed by
 * fsync of its directory may be lost on any filesystem.
 * Thread-safe.
 */
#ifndef TESSERA_UNLINKQ_H
#define TESSERA_UNLINKQ_H

#include "proto.h"

#include <stdint.h>

struct unlinkq_item {
    uint64_t parent;
    uint64_t ino; /* the inode the name is removed from */
    char name[TS_MAX_NAME + 1];
};

/*
 * Sends count (>= 1) unlinks, in order, and returns once meta has done them
 * or given up on them; called from the queue's thread only, never with its
 * lock held. What fails is the send function's to report.
 */
typedef void (*unlinkq_send_fn)(void *ctx, const struct unlinkq_item *items, uint32_t count);

struct unlinkq;

/*
 * A queue whose thread hands send() batches of up to max_batch unlinks;
 * pushes wait while max_pending are outstanding. NULL on failure.
 */
struct unlinkq *unlinkq_new(unlinkq_send_fn send, void *ctx, uint32_t max_batch,
                            uint32_t max_pending);
/* Sends everything outstanding, stops the thread, frees; accepts NULL, clears *queuep. */
void unlinkq_destroy(struct unlinkq **queuep);

/*
 * Queues the unlink of name (inode ino) in parent. Returns 0, or
 * -ENAMETOOLONG (nothing queued; the caller unlinks synchronously).
 */
int unlinkq_push(struct unlinkq *queue, uint64_t parent, const char *name, uint64_t ino);

/*
 * Returns once no outstanding unlink touches inode ino: none in directory
 * ino, none of a name of inode ino (at once when none is outstanding).
 */
void unlinkq_wait_for(struct unlinkq *queue, uint64_t ino);
/* Returns once no outstanding unlink removes name from parent. */
void unlinkq_wait_name(struct unlinkq *queue, uint64_t parent, const char *name);
/* Returns once every unlink pushed before the call has been sent. */
void unlinkq_wait_all(struct unlinkq *queue);

#endif
