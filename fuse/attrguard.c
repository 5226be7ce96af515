/*
 * @file attrguard.c
 * See attrguard.h. Layout: an open-addressing hash of ino -> the largest
 * change counter handed out (with the inode's generation, and when that
 * counter was first seen), rebuilt without the records older than the
 * retention when it gets half full.
 *
 * Invariants (under `lock`): at most one record per ino; `used` counts the
 * slots in use; a record's `seen` is when its counter was recorded, so a
 * record older than the retention cannot be beaten by attributes still
 * on their way.
 */
#include "attrguard.h"

#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#define ATTRGUARD_MIN_SLOTS 1024

struct attrguard_slot {
    uint64_t ino; /* 0: free */
    uint64_t generation;
    uint64_t change;
    double seen;
    uint64_t served_size; /* the size last handed out */
    uint32_t reads;       /* reads between attrguard_read_begin and _end */
};

struct attrguard {
    pthread_mutex_t lock;
    pthread_cond_t reads_done; /* a slot's reads fell to 0 */
    struct attrguard_slot *slots;
    size_t cap; /* a power of two */
    size_t used;
    double retention_s;
    attrguard_clock_fn clock;
};

static double monotonic_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

struct attrguard *attrguard_new(double retention_s, attrguard_clock_fn clock)
{
    struct attrguard *guard = calloc(1, sizeof(*guard));
    if (!guard)
        return NULL;
    guard->slots = calloc(ATTRGUARD_MIN_SLOTS, sizeof(*guard->slots));
    if (!guard->slots) {
        free(guard);
        return NULL;
    }
    guard->cap = ATTRGUARD_MIN_SLOTS;
    guard->retention_s = retention_s;
    guard->clock = clock ? clock : monotonic_now;
    pthread_mutex_init(&guard->lock, NULL);
    util_cond_init_monotonic(&guard->reads_done);
    return guard;
}

void attrguard_destroy(struct attrguard **guardp)
{
    if (!guardp || !*guardp)
        return;
    pthread_mutex_destroy(&(*guardp)->lock);
    pthread_cond_destroy(&(*guardp)->reads_done);
    free((*guardp)->slots);
    free(*guardp);
    *guardp = NULL;
}

static size_t home_of(uint64_t ino, size_t cap)
{
    /* Fibonacci hashing: inode numbers are mostly consecutive. */
    return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

/* The slot of ino, or the free slot where it would go. */
static struct attrguard_slot *slot_find(struct attrguard_slot *slots, size_t cap, uint64_t ino)
{
    size_t i = home_of(ino, cap);
    while (slots[i].ino != 0 && slots[i].ino != ino)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

/* Whether a record still matters at `now`. */
static bool slot_live(const struct attrguard *guard, const struct attrguard_slot *slot, double now)
{
    return slot->ino != 0 && (slot->reads > 0 || now - slot->seen <= guard->retention_s);
}

/*
 * Rebuilds the table without the records that no longer matter, twice as
 * big if it stays over a quarter full. Returns 0 or -1 (no memory: the old
 * table stays).
 */
static int table_rebuild(struct attrguard *guard, double now)
{
    size_t live = 0;
    for (size_t i = 0; i < guard->cap; i++)
        if (slot_live(guard, &guard->slots[i], now))
            live++;
    size_t cap = guard->cap;
    if (live * 4 > cap)
        cap *= 2;
    struct attrguard_slot *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 0; i < guard->cap; i++) {
        const struct attrguard_slot *old = &guard->slots[i];
        if (slot_live(guard, old, now))
            *slot_find(slots, cap, old->ino) = *old;
    }
    free(guard->slots);
    guard->slots = slots;
    guard->cap = cap;
    guard->used = live;
    return 0;
}

/*
 * The slot of ino, taken for it if it had none. Called with the lock held.
 * NULL when the table is full and cannot grow (no memory).
 */
static struct attrguard_slot *slot_take(struct attrguard *guard, uint64_t ino, double now)
{
    struct attrguard_slot *slot = slot_find(guard->slots, guard->cap, ino);
    if (slot->ino != 0)
        return slot;
    if ((guard->used + 1) * 2 > guard->cap) {
        if (table_rebuild(guard, now) != 0 && (guard->used + 1) * 4 > guard->cap * 3)
            return NULL;
        slot = slot_find(guard->slots, guard->cap, ino);
    }
    guard->used++;
    *slot = (struct attrguard_slot){.ino = ino, .seen = now};
    return slot;
}

/* Sets slot's counter to attr's if that is newer. Called with the lock held. */
static void counter_raise(const struct attrguard *guard, struct attrguard_slot *slot,
                          const struct ts_attr *attr, double now)
{
    bool expired = now - slot->seen > guard->retention_s;
    if (slot->generation == attr->generation && slot->change >= attr->change && !expired)
        return; /* not newer: keep the record and the time it was first seen */
    slot->generation = attr->generation;
    slot->change = attr->change;
    slot->seen = now;
}

bool attrguard_admit(struct attrguard *guard, const struct ts_attr *attr)
{
    if (!S_ISREG(attr->mode) || attr->ino == 0)
        return true;
    pthread_mutex_lock(&guard->lock);
    double now = guard->clock();
    struct attrguard_slot *slot = slot_find(guard->slots, guard->cap, attr->ino);
    if (slot->ino != 0 && slot->generation == attr->generation && slot->change > attr->change &&
        now - slot->seen <= guard->retention_s) {
        pthread_mutex_unlock(&guard->lock);
        return false;
    }
    /* Without memory for a record nothing is recorded: the guard then
     * protects less, it never refuses what it should pass. */
    slot = slot_take(guard, attr->ino, now);
    if (slot) {
        counter_raise(guard, slot, attr, now);
        /* A larger size waits for the reads on their way (attrguard.h). */
        struct timespec deadline = util_monotonic_deadline((int64_t)(guard->retention_s * 1000));
        while (slot && slot->reads > 0 && attr->size > slot->served_size) {
            if (pthread_cond_timedwait(&guard->reads_done, &guard->lock, &deadline) != 0)
                break; /* a read stuck that long: its reply no longer matters */
            slot = slot_find(guard->slots, guard->cap, attr->ino); /* may have moved */
            if (slot->ino == 0)
                slot = NULL;
        }
        if (slot)
            slot->served_size = attr->size;
    }
    pthread_mutex_unlock(&guard->lock);
    return true;
}

void attrguard_record(struct attrguard *guard, const struct ts_attr *attr)
{
    if (!S_ISREG(attr->mode) || attr->ino == 0)
        return;
    pthread_mutex_lock(&guard->lock);
    double now = guard->clock();
    struct attrguard_slot *slot = slot_take(guard, attr->ino, now);
    if (slot)
        counter_raise(guard, slot, attr, now);
    pthread_mutex_unlock(&guard->lock);
}

bool attrguard_outdated(struct attrguard *guard, const struct ts_attr *attr)
{
    if (!S_ISREG(attr->mode) || attr->ino == 0)
        return false;
    pthread_mutex_lock(&guard->lock);
    const struct attrguard_slot *slot = slot_find(guard->slots, guard->cap, attr->ino);
    bool outdated = slot->ino != 0 && slot->generation == attr->generation &&
                    slot->change < attr->change &&
                    guard->clock() - slot->seen <= guard->retention_s;
    pthread_mutex_unlock(&guard->lock);
    return outdated;
}

bool attrguard_read_begin(struct attrguard *guard, uint64_t ino)
{
    pthread_mutex_lock(&guard->lock);
    struct attrguard_slot *slot = slot_take(guard, ino, guard->clock());
    if (slot)
        slot->reads++;
    pthread_mutex_unlock(&guard->lock);
    return slot != NULL;
}

void attrguard_read_end(struct attrguard *guard, uint64_t ino)
{
    pthread_mutex_lock(&guard->lock);
    struct attrguard_slot *slot = slot_find(guard->slots, guard->cap, ino);
    if (slot->ino != 0 && slot->reads > 0 && --slot->reads == 0)
        pthread_cond_broadcast(&guard->reads_done);
    pthread_mutex_unlock(&guard->lock);
}

size_t attrguard_records(struct attrguard *guard)
{
    pthread_mutex_lock(&guard->lock);
    size_t used = guard->used;
    pthread_mutex_unlock(&guard->lock);
    return used;
}
