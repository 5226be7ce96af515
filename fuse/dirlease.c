/*
 * @file dirlease.c
 * See dirlease.h. A few lease slots and the pool of granted inode numbers
 * under one mutex, which dirlease_create() holds from its check of the
 * lease to the queueing of the create: a lease stops taking creates under
 * that mutex, so once the thread has seen it stop, every create made under
 * it is in the queue, and waiting for the directory's queued changes
 * (metaclient_sync_dir) before returning it sends them all.
 */
#include "dirlease.h"

#include "log.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct lease_slot {
    uint64_t dir;       /* 0: free */
    bool usable;        /* takes creates */
    int64_t until_ms;   /* usable until then (see DIRLEASE_MARGIN_MS) */
    int64_t used_ms;    /* the last create under it */
    struct ts_attr template;
};

struct dirlease {
    struct metaclient *meta;
    struct dentcache *dentries;
    pthread_t thread;

    pthread_mutex_t lock; /* protects everything below */
    pthread_cond_t wake;  /* to the thread: stop */
    bool stopping;
    struct lease_slot slots[DIRLEASE_MAX];
    uint64_t pool_ino; /* the next granted inode number, pool_left of them */
    uint64_t pool_generation;
    uint32_t pool_left;
    uint64_t streak_dir; /* creates in a row that went to meta, in streak_dir */
    uint32_t streak;
    uint64_t refused_dir; /* asked for in vain; not again before refused_until_ms */
    int64_t refused_until_ms;
};

static struct lease_slot *slot_of(struct dirlease *leases, uint64_t dir)
{
    for (size_t i = 0; i < DIRLEASE_MAX; i++)
        if (leases->slots[i].dir == dir)
            return &leases->slots[i];
    return NULL;
}

/* Stops slot taking creates, sends what it took, returns it to meta. */
static void give_back(struct dirlease *leases, struct lease_slot *slot)
{
    struct ts_dir_lease_rep reply;
    pthread_mutex_lock(&leases->lock);
    uint64_t dir = slot->dir;
    slot->usable = false;
    pthread_mutex_unlock(&leases->lock);
    metaclient_sync_dir(leases->meta, dir);
    int status = metaclient_dir_lease(leases->meta, dir, TS_LEASE_RETURN, 0, &reply);
    if (status != TS_OK)
        log_debug("lease on directory %llu not returned (%s): it lapses in tessera-meta",
                  (unsigned long long)dir, status_text(status));
    pthread_mutex_lock(&leases->lock);
    slot->dir = 0;
    pthread_mutex_unlock(&leases->lock);
}

/* Renews slot's lease, or gives it back when meta wants it or it is idle. */
static void tend(struct dirlease *leases, struct lease_slot *slot, bool stopping)
{
    struct ts_dir_lease_rep reply;
    pthread_mutex_lock(&leases->lock);
    uint64_t dir = slot->dir;
    bool idle = util_monotonic_ms() - slot->used_ms > DIRLEASE_IDLE_MS;
    pthread_mutex_unlock(&leases->lock);
    if (dir == 0)
        return;
    if (stopping || idle) {
        give_back(leases, slot);
        return;
    }
    int64_t sent_ms = util_monotonic_ms();
    int status = metaclient_dir_lease(leases->meta, dir, TS_LEASE_RENEW, 0, &reply);
    if (status == TS_ERR_BUSY) { /* meta wants it back, or lost it */
        give_back(leases, slot);
        return;
    }
    if (status != TS_OK)
        return; /* meta unreachable: the lease runs out here before it does there */
    pthread_mutex_lock(&leases->lock);
    slot->until_ms = sent_ms + reply.lease_ms - DIRLEASE_MARGIN_MS;
    pthread_mutex_unlock(&leases->lock);
}

static void *dirlease_run(void *arg)
{
    struct dirlease *leases = arg;
    bool stopping = false;
    while (!stopping) {
        struct timespec until = util_monotonic_deadline(DIRLEASE_RENEW_MS);
        pthread_mutex_lock(&leases->lock);
        if (!leases->stopping)
            pthread_cond_timedwait(&leases->wake, &leases->lock, &until);
        stopping = leases->stopping;
        pthread_mutex_unlock(&leases->lock);
        for (size_t i = 0; i < DIRLEASE_MAX; i++)
            tend(leases, &leases->slots[i], stopping);
    }
    return NULL;
}

struct dirlease *dirlease_new(struct metaclient *meta, struct dentcache *dentries)
{
    if (!metaclient_queues_changes(meta))
        return NULL;
    struct dirlease *leases = calloc(1, sizeof(*leases));
    if (!leases)
        return NULL;
    leases->meta = meta;
    leases->dentries = dentries;
    pthread_mutex_init(&leases->lock, NULL);
    util_cond_init_monotonic(&leases->wake);
    if (pthread_create(&leases->thread, NULL, dirlease_run, leases) != 0) {
        pthread_cond_destroy(&leases->wake);
        pthread_mutex_destroy(&leases->lock);
        free(leases);
        return NULL;
    }
    return leases;
}

void dirlease_destroy(struct dirlease **leasesp)
{
    if (!leasesp || !*leasesp)
        return;
    struct dirlease *leases = *leasesp;
    pthread_mutex_lock(&leases->lock);
    leases->stopping = true;
    pthread_cond_signal(&leases->wake);
    pthread_mutex_unlock(&leases->lock);
    pthread_join(leases->thread, NULL); /* gives every lease back first */
    pthread_cond_destroy(&leases->wake);
    pthread_mutex_destroy(&leases->lock);
    free(leases);
    *leasesp = NULL;
}

/* Asks meta for dir's lease; called without the lock. */
static void ask_for(struct dirlease *leases, uint64_t dir)
{
    struct ts_dir_lease_rep reply;
    int64_t sent_ms = util_monotonic_ms();
    int status = metaclient_dir_lease(leases->meta, dir, TS_LEASE_GET, 0, &reply);
    pthread_mutex_lock(&leases->lock);
    struct lease_slot *slot = status == TS_OK ? slot_of(leases, 0) : NULL;
    bool unused = status == TS_OK && !slot; /* every slot taken */
    if (status != TS_OK || unused) {
        leases->refused_dir = dir;
        leases->refused_until_ms = sent_ms + DIRLEASE_IDLE_MS;
        pthread_mutex_unlock(&leases->lock);
        if (unused) /* so that it does not hold others up until it lapses */
            metaclient_dir_lease(leases->meta, dir, TS_LEASE_RETURN, 0, &reply);
        log_debug("no lease on directory %llu: %s", (unsigned long long)dir,
                  unused ? "all lease slots in use" : status_text(status));
        return;
    }
    /* Names learned before the grant may be stale: forget them before the
     * lease takes creates (the lock keeps dirlease_create() out). */
    dentcache_dir_reset(leases->dentries, dir);
    *slot = (struct lease_slot){.dir = dir,
                                .usable = true,
                                .until_ms = sent_ms + reply.lease_ms - DIRLEASE_MARGIN_MS,
                                .used_ms = sent_ms,
                                .template = reply.template};
    pthread_mutex_unlock(&leases->lock);
}

void dirlease_note_create(struct dirlease *leases, uint64_t parent)
{
    if (!leases)
        return;
    pthread_mutex_lock(&leases->lock);
    bool ask = false;
    if (leases->streak_dir != parent) {
        leases->streak_dir = parent;
        leases->streak = 0;
    }
    leases->streak++;
    if (leases->streak >= DIRLEASE_STREAK && !slot_of(leases, parent) && !leases->stopping &&
        (leases->refused_dir != parent || util_monotonic_ms() >= leases->refused_until_ms)) {
        leases->streak = 0;
        ask = true;
    }
    pthread_mutex_unlock(&leases->lock);
    if (ask)
        ask_for(leases, parent);
}

/* Takes one granted inode number, asking meta for more when none is left. */
static int take_inode(struct dirlease *leases, uint64_t *ino, uint64_t *generation)
{
    if (leases->pool_left == 0) {
        struct ts_dir_lease_rep reply;
        int status =
            metaclient_dir_lease(leases->meta, 0, TS_LEASE_INODES, DIRLEASE_INODES, &reply);
        if (status != TS_OK)
            return status;
        if (reply.inode_count == 0 || reply.first_ino == 0)
            return TS_ERR_BADMSG;
        leases->pool_ino = reply.first_ino;
        leases->pool_generation = reply.first_generation;
        leases->pool_left = reply.inode_count;
    }
    *ino = leases->pool_ino++;
    *generation = leases->pool_generation++;
    leases->pool_left--;
    return TS_OK;
}

int dirlease_create(struct dirlease *leases, uint64_t parent, const char *name, uint32_t mode,
                    uint32_t uid, uint32_t gid, struct ts_attr *attr)
{
    struct nsqueue_item item = {.kind = NSQUEUE_CREATE,
                                .parent = parent,
                                .mode = S_IFREG | (mode & 07777),
                                .uid = uid,
                                .gid = gid,
                                .open = 1};
    uint64_t generation;
    size_t len = strlen(name);
    if (!leases || len > TS_MAX_NAME)
        return TS_ERR_INVAL;
    memcpy(item.name, name, len + 1);
    clock_gettime(CLOCK_REALTIME, &item.time);

    pthread_mutex_lock(&leases->lock);
    int64_t now_ms = util_monotonic_ms();
    struct lease_slot *slot = slot_of(leases, parent);
    int status = slot && slot->usable && now_ms < slot->until_ms ? TS_OK : TS_ERR_BUSY;
    /* Under the lock: a window from before the grant was dropped by then. */
    if (status == TS_OK && !dentcache_absent(leases->dentries, parent, name))
        status = TS_ERR_EXIST;
    if (status == TS_OK)
        status = take_inode(leases, &item.ino, &generation);
    if (status == TS_OK)
        status = metaclient_create_later(leases->meta, &item);
    if (status == TS_OK) {
        slot->used_ms = now_ms;
        *attr = slot->template;
        attr->ino = item.ino;
        attr->generation = generation;
        attr->change = 0; /* meta's counter for it starts when meta creates it */
        attr->mode = item.mode;
        attr->nlink = 1;
        attr->uid = uid;
        attr->gid = gid;
        attr->rdev = 0;
        attr->size = 0;
        attr->blocks = 0;
        attr->atime_sec = attr->mtime_sec = attr->ctime_sec = item.time.tv_sec;
        attr->atime_nsec = attr->mtime_nsec = attr->ctime_nsec = (uint32_t)item.time.tv_nsec;
    }
    pthread_mutex_unlock(&leases->lock);
    return status;
}
