/*
 * @file nsqueue.h
 * Namespace changes answered at once and sent to meta in the background
 * (CephFS's asynchronous directory operations): unlinks, and creates under
 * a directory lease.
 *
 * Unlinks: the kernel has already checked an UNLINK against its own view
 * (the name exists, it is not a directory, the caller may delete it), so
 * meta's answer is known in advance in all but racy cases: another mount
 * removed the name first (the name is gone either way) or meta cannot be
 * reached (the background thread retries). Waiting for it cost one meta
 * round trip per `rm` of a file.
 * Creates: made while the mount holds the directory's lease (metaclient.h),
 * under which no other process can change or read the directory, with an
 * inode number meta granted the mount; meta's answer is known as well.
 *
 * Both are queued, the kernel answered, and a thread sends the queue to
 * meta in batches, in queue order.
 *
 * What keeps this invisible to the mount's users: a later request about a
 * name with a change pending waits for it (nsqueue_wait_name: lookups,
 * creates, renames), one about a whole directory or an inode waits for all
 * of the directory's or the inode's (nsqueue_wait_for: listings, getattr
 * of the directory or of the unlinked or created inode), and what cannot
 * name its directory waits for all of them (nsqueue_wait_all: rmdir,
 * whose directory may be the one emptied, and unmount). Every other
 * request of the mount waits for the creates queued before it
 * (nsqueue_wait_creates): it may name a new inode meta does not have yet.
 * At most max_pending changes are outstanding, so the rate an `rm -r`
 * shows is meta's rate, not the queue's. Other mounts see a change once
 * meta has done it, a few milliseconds later; a mount killed with changes
 * queued loses them (unlinked files stay, created ones vanish), as a
 * change not followed by fsync of its directory may be lost on any
 * filesystem.
 * Thread-safe.
 */
#ifndef TESSERA_NSQUEUE_H
#define TESSERA_NSQUEUE_H

#include "proto.h"

#include <stdint.h>

#include <time.h>

enum nsqueue_kind { NSQUEUE_UNLINK = 0, NSQUEUE_CREATE };

struct nsqueue_item {
    enum nsqueue_kind kind;
    uint64_t parent;
    uint64_t ino; /* unlink: the inode the name is removed from; create: the new one */
    /* Creates only: what CREATE_MANY sends (proto.h). */
    uint32_t mode;
    uint32_t uid;
    uint32_t gid;
    uint32_t open;
    struct timespec time;
    char name[TS_MAX_NAME + 1];
};

/*
 * Sends count (>= 1) changes, in order, and returns once meta has done them
 * or given up on them; called from the queue's thread only, never with its
 * lock held. What fails is the send function's to report.
 */
typedef void (*nsqueue_send_fn)(void *ctx, const struct nsqueue_item *items, uint32_t count);

struct nsqueue;

/*
 * A queue whose thread hands send() batches of up to max_batch changes;
 * pushes wait while max_pending are outstanding. NULL on failure.
 */
struct nsqueue *nsqueue_new(nsqueue_send_fn send, void *ctx, uint32_t max_batch,
                            uint32_t max_pending);
/*
 * From now on a batch short of max_batch waits for more changes until
 * its oldest change has waited linger_ms, unless a thread waits for the
 * queue (0, the default: sent at once). batchqueue.h has the rule.
 */
void nsqueue_set_linger(struct nsqueue *queue, int linger_ms);
/* Sends everything outstanding, stops the thread, frees; accepts NULL, clears *queuep. */
void nsqueue_destroy(struct nsqueue **queuep);

/*
 * Queues the unlink of name (inode ino) in parent. Returns 0, or
 * -ENAMETOOLONG (nothing queued; the caller unlinks synchronously).
 */
int nsqueue_push_unlink(struct nsqueue *queue, uint64_t parent, const char *name, uint64_t ino);

/*
 * Queues a create (item->kind NSQUEUE_CREATE, every field set). Returns 0,
 * or -ENAMETOOLONG (nothing queued).
 */
int nsqueue_push_create(struct nsqueue *queue, const struct nsqueue_item *item);

/*
 * Returns once no outstanding change touches inode ino: none in directory
 * ino, none of a name of inode ino (at once when none is outstanding).
 */
void nsqueue_wait_for(struct nsqueue *queue, uint64_t ino);
/* Returns once no outstanding change is of name in parent. */
void nsqueue_wait_name(struct nsqueue *queue, uint64_t parent, const char *name);
/* Returns once every change pushed before the call has been sent. */
void nsqueue_wait_all(struct nsqueue *queue);
/* Returns once every create pushed before the call has been sent. */
void nsqueue_wait_creates(struct nsqueue *queue);

#endif
