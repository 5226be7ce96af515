/*
 * @file dentcache.c
 * See dentcache.h. Layout: a fixed table of directory slots, each with at
 * most one window (a sorted array of entries, each its own allocation),
 * and a change log: an open-addressing hash of ino -> the sequence number
 * and time of the last change this mount made to that inode.
 *
 * Invariants (under `lock`):
 *  - every event takes a distinct sequence number (++seq): fetch tickets,
 *    changes, inserted entries;
 *  - an entry is trusted iff no change of its inode has a sequence number
 *    above the entry's `known`, and, for a non-directory with more than one
 *    link, no unlink or rename of an inode this cache could not name came
 *    after it (links_changed): such an unlink may have been of one of its
 *    other names;
 *  - a change record older than the timeout can go: every window asked for
 *    before it has expired by then;
 *  - a window whose directory changed after its fetch was decided is never
 *    installed, and the current window is updated by every local change,
 *    so it always equals meta's listing as of its fetch plus this mount's
 *    changes since.
 */
#include "dentcache.h"

#include "status.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* A window holding more than this many times max_window is dropped
 * (creates inserted faster than it expires). */
#define DENTCACHE_GROWTH 8
#define DENTCACHE_CHANGES_MIN 1024

struct dc_entry {
    struct ts_attr attr;
    uint64_t known; /* sequence number the attributes are as of */
    char name[];    /* NUL-terminated */
};

struct dc_dir {
    uint64_t ino; /* 0: a free slot */
    double last_used;
    /* The window: every name in [low, high] (high NULL: no upper end) is
     * one of entries[] or does not exist. */
    bool has_window;
    char *low;
    char *high;
    struct dc_entry **entries;
    uint32_t count;
    uint32_t cap;
    double expires;
    uint64_t known; /* the fetch's ticket */
    uint32_t asked; /* entries the window's fetch asked for */
    uint32_t hits;  /* lookups it answered */
    /* The directory's own attributes, kept from this mount's last change. */
    bool attr_kept;
    struct ts_attr attr;
    uint64_t attr_known;
    double attr_expires;
    /* Walk detection. */
    char last_miss[TS_MAX_NAME + 1];
    uint32_t streak; /* consecutive misses in increasing name order */
    bool walk_hint;
};

struct dc_change {
    uint64_t ino; /* 0: an empty slot */
    uint64_t seq;
    double at;
};

/* A file's attributes from this mount's last setattr of it. */
struct dc_file_attr {
    struct ts_attr attr; /* attr.ino 0: a free slot */
    uint64_t known;
    double expires;
};

/* Files whose setattr replies are kept: the kernel's getattr comes right
 * after (chown's check of the set-id bits), so a few are enough. */
#define DENTCACHE_FILE_ATTRS 8

struct dentcache {
    double timeout;
    uint32_t max_window;
    dentcache_clock_fn clock;

    pthread_mutex_t lock; /* protects everything below */
    uint64_t seq;
    uint64_t links_changed;
    uint64_t all_changed; /* a change could not be recorded: nothing before it counts */
    struct dc_dir dirs[DENTCACHE_DIRS];
    struct dc_file_attr files[DENTCACHE_FILE_ATTRS];
    uint32_t files_next; /* the slot the next kept file takes */
    struct dc_change *changes;
    size_t changes_cap; /* a power of two */
    size_t changes_used;
    struct dentcache_stats stats;
};

static double monotonic_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* ---- change log --------------------------------------------------------- */

static size_t change_slot(const struct dentcache *cache, uint64_t ino)
{
    /* Fibonacci hashing: inode numbers are mostly consecutive. */
    return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 20) & (cache->changes_cap - 1);
}

/* The sequence number of ino's last change, 0 if none is recorded. */
static uint64_t change_seq(const struct dentcache *cache, uint64_t ino)
{
    for (size_t i = change_slot(cache, ino);; i = (i + 1) & (cache->changes_cap - 1)) {
        if (cache->changes[i].ino == ino)
            return cache->changes[i].seq;
        if (cache->changes[i].ino == 0)
            return 0;
    }
}

static void change_put(struct dc_change *table, size_t cap, const struct dc_change *change)
{
    size_t i = (size_t)((change->ino * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
    while (table[i].ino != 0 && table[i].ino != change->ino)
        i = (i + 1) & (cap - 1);
    table[i] = *change;
}

/*
 * Rebuilds the log without the records that can no longer matter, in a
 * table twice as big if it stays over a quarter full. Returns 0 or -1 (no
 * memory: the old table stays).
 */
static int changes_rebuild(struct dentcache *cache, double now)
{
    size_t live = 0;
    for (size_t i = 0; i < cache->changes_cap; i++)
        if (cache->changes[i].ino != 0 && now - cache->changes[i].at <= cache->timeout)
            live++;
    size_t cap = cache->changes_cap;
    if (live * 4 > cap)
        cap *= 2;
    struct dc_change *table = calloc(cap, sizeof(*table));
    if (!table)
        return -1;
    for (size_t i = 0; i < cache->changes_cap; i++)
        if (cache->changes[i].ino != 0 && now - cache->changes[i].at <= cache->timeout)
            change_put(table, cap, &cache->changes[i]);
    free(cache->changes);
    cache->changes = table;
    cache->changes_cap = cap;
    cache->changes_used = live;
    return 0;
}

/* Records a change of ino now; returns its sequence number. */
static uint64_t change_note(struct dentcache *cache, uint64_t ino, double now)
{
    struct dc_change change = {.ino = ino, .seq = ++cache->seq, .at = now};
    if (ino == 0)
        return change.seq;
    if (change_seq(cache, ino) == 0) {
        if ((cache->changes_used + 1) * 2 > cache->changes_cap &&
            changes_rebuild(cache, now) != 0 &&
            (cache->changes_used + 1) * 4 > cache->changes_cap * 3) {
            /* No memory and nearly full: distrust everything known so far. */
            cache->all_changed = change.seq;
            return change.seq;
        }
        cache->changes_used++;
    }
    change_put(cache->changes, cache->changes_cap, &change);
    return change.seq;
}

/* ---- windows ------------------------------------------------------------ */

static void window_drop(struct dc_dir *dir)
{
    for (uint32_t i = 0; i < dir->count; i++)
        free(dir->entries[i]);
    free(dir->entries);
    free(dir->low);
    free(dir->high);
    dir->entries = NULL;
    dir->low = NULL;
    dir->high = NULL;
    dir->count = 0;
    dir->cap = 0;
    dir->has_window = false;
}

static bool window_fresh(const struct dentcache *cache, const struct dc_dir *dir, double now)
{
    return dir->has_window && now < dir->expires && cache->all_changed < dir->known;
}

static bool window_covers(const struct dc_dir *dir, const char *name)
{
    return strcmp(name, dir->low) >= 0 && (!dir->high || strcmp(name, dir->high) <= 0);
}

/* Index of name in the window, or where it would go (*found false). */
static uint32_t window_search(const struct dc_dir *dir, const char *name, bool *found)
{
    uint32_t low = 0;
    uint32_t high = dir->count;
    while (low < high) {
        uint32_t middle = low + (high - low) / 2;
        int order = strcmp(dir->entries[middle]->name, name);
        if (order == 0) {
            *found = true;
            return middle;
        }
        if (order < 0)
            low = middle + 1;
        else
            high = middle;
    }
    *found = false;
    return low;
}

static struct dc_entry *entry_new(const char *name, const struct ts_attr *attr, uint64_t known)
{
    size_t len = strlen(name);
    struct dc_entry *entry = malloc(sizeof(*entry) + len + 1);
    if (!entry)
        return NULL;
    entry->attr = *attr;
    entry->known = known;
    memcpy(entry->name, name, len + 1);
    return entry;
}

static bool entry_trusted(const struct dentcache *cache, const struct dc_entry *entry)
{
    if (cache->all_changed > entry->known || change_seq(cache, entry->attr.ino) > entry->known)
        return false;
    if (!S_ISDIR(entry->attr.mode) && entry->attr.nlink > 1 && cache->links_changed > entry->known)
        return false;
    return true;
}

static struct dc_dir *dir_find(struct dentcache *cache, uint64_t ino)
{
    for (int i = 0; i < DENTCACHE_DIRS; i++)
        if (cache->dirs[i].ino == ino)
            return &cache->dirs[i];
    return NULL;
}

/* The slot of ino, taking the least recently used one if it has none. */
static struct dc_dir *dir_take(struct dentcache *cache, uint64_t ino, double now)
{
    struct dc_dir *dir = dir_find(cache, ino);
    if (!dir) {
        dir = &cache->dirs[0];
        for (int i = 1; i < DENTCACHE_DIRS && dir->ino != 0; i++)
            if (cache->dirs[i].ino == 0 || cache->dirs[i].last_used < dir->last_used)
                dir = &cache->dirs[i];
        window_drop(dir);
        memset(dir, 0, sizeof(*dir));
        dir->ino = ino;
    }
    dir->last_used = now;
    return dir;
}

/* ---- public ------------------------------------------------------------- */

struct dentcache *dentcache_new(double timeout_s, uint32_t max_window, dentcache_clock_fn clock)
{
    struct dentcache *cache = calloc(1, sizeof(*cache));
    if (!cache)
        return NULL;
    cache->changes_cap = DENTCACHE_CHANGES_MIN;
    cache->changes = calloc(cache->changes_cap, sizeof(*cache->changes));
    if (!cache->changes) {
        free(cache);
        return NULL;
    }
    cache->timeout = timeout_s;
    cache->max_window = max_window;
    cache->clock = clock ? clock : monotonic_seconds;
    pthread_mutex_init(&cache->lock, NULL);
    return cache;
}

void dentcache_destroy(struct dentcache **cachep)
{
    if (!cachep || !*cachep)
        return;
    struct dentcache *cache = *cachep;
    for (int i = 0; i < DENTCACHE_DIRS; i++)
        window_drop(&cache->dirs[i]);
    free(cache->changes);
    pthread_mutex_destroy(&cache->lock);
    free(cache);
    *cachep = NULL;
}

static bool cache_off(const struct dentcache *cache)
{
    return cache->timeout <= 0 || cache->max_window == 0;
}

/* Decides what a miss in dir does: fills fetch. */
static void miss_advice(struct dentcache *cache, struct dc_dir *dir, const char *name, double now,
                        struct dentcache_fetch *fetch)
{
    /* The same name again continues the walk: an rm asks twice for each
     * name its kernel had no entry for (LOOKUP, then UNLINK). */
    int order = dir->last_miss[0] != '\0' ? strcmp(name, dir->last_miss) : -1;
    if (order > 0)
        dir->streak++;
    else if (order < 0)
        dir->streak = 1;
    snprintf(dir->last_miss, sizeof(dir->last_miss), "%s", name);
    if (!dir->walk_hint && dir->streak < DENTCACHE_STREAK)
        return;
    dir->walk_hint = false;
    /* Like read-ahead: grow while windows are used, start small again when not. */
    uint32_t size = DENTCACHE_MIN_FETCH;
    if (dir->has_window && dir->hits * 2 >= dir->asked && dir->asked > 0)
        size = dir->asked * 2;
    if (size > cache->max_window)
        size = cache->max_window;
    fetch->max_entries = size;
    fetch->ticket = ++cache->seq;
    fetch->started = now;
    cache->stats.fetches++;
}

enum dentcache_answer dentcache_lookup(struct dentcache *cache, uint64_t parent, const char *name,
                                       struct ts_attr *attr, double *timeout_s,
                                       struct dentcache_fetch *fetch)
{
    enum dentcache_answer answer = DENTCACHE_MISS;
    memset(fetch, 0, sizeof(*fetch));
    fetch->parent = parent;
    if (cache_off(cache) || name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return DENTCACHE_MISS;

    pthread_mutex_lock(&cache->lock);
    double now = cache->clock();
    struct dc_dir *dir = dir_take(cache, parent, now);
    if (window_fresh(cache, dir, now) && window_covers(dir, name)) {
        bool found;
        uint32_t at = window_search(dir, name, &found);
        if (!found) {
            answer = DENTCACHE_ABSENT;
            cache->stats.absent++;
        } else if (entry_trusted(cache, dir->entries[at])) {
            *attr = dir->entries[at]->attr;
            answer = DENTCACHE_FOUND;
            cache->stats.found++;
        }
        if (answer != DENTCACHE_MISS) {
            dir->hits++;
            *timeout_s = dir->expires - now;
        }
    }
    if (answer == DENTCACHE_MISS) {
        /* Not covered, or covered by an entry changed since: either way a
         * walk goes on with a newer window. */
        cache->stats.misses++;
        miss_advice(cache, dir, name, now, fetch);
    }
    pthread_mutex_unlock(&cache->lock);
    return answer;
}

/*
 * The fresh window of parent that covers name, NULL if none; *found and
 * *at say where name is in it. Called with the lock held; counts nothing.
 */
static struct dc_dir *window_covering(struct dentcache *cache, uint64_t parent,
                                      const char *name, bool *found, uint32_t *at)
{
    struct dc_dir *dir = dir_find(cache, parent);
    if (!dir || !window_fresh(cache, dir, cache->clock()) || !window_covers(dir, name))
        return NULL;
    *at = window_search(dir, name, found);
    return dir;
}

bool dentcache_peek(struct dentcache *cache, uint64_t parent, const char *name,
                    struct ts_attr *attr)
{
    bool known = false;
    bool found;
    uint32_t at;
    if (cache_off(cache))
        return false;
    pthread_mutex_lock(&cache->lock);
    struct dc_dir *dir = window_covering(cache, parent, name, &found, &at);
    if (dir && found && entry_trusted(cache, dir->entries[at])) {
        *attr = dir->entries[at]->attr;
        known = true;
    }
    pthread_mutex_unlock(&cache->lock);
    return known;
}

bool dentcache_absent(struct dentcache *cache, uint64_t parent, const char *name)
{
    bool found = true;
    uint32_t at;
    if (cache_off(cache))
        return false;
    pthread_mutex_lock(&cache->lock);
    bool covered = window_covering(cache, parent, name, &found, &at) != NULL;
    pthread_mutex_unlock(&cache->lock);
    return covered && !found;
}

void dentcache_dir_reset(struct dentcache *cache, uint64_t ino)
{
    if (cache_off(cache))
        return;
    pthread_mutex_lock(&cache->lock);
    double now = cache->clock();
    struct dc_dir *dir = dir_find(cache, ino);
    bool attr_trusted = dir && dir->attr_kept && change_seq(cache, ino) < dir->attr_known &&
                        cache->all_changed < dir->attr_known;
    change_note(cache, ino, now); /* windows of it being fetched are not installed */
    if (dir) {
        window_drop(dir);
        if (attr_trusted) /* the directory itself did not change */
            dir->attr_known = ++cache->seq;
    }
    pthread_mutex_unlock(&cache->lock);
}

double dentcache_install(struct dentcache *cache, const struct dentcache_fetch *fetch,
                         const char *from, const struct meta_direntplus *entries, uint32_t count,
                         bool done)
{
    struct dc_entry **window = NULL;
    char *low = NULL;
    char *high = NULL;
    uint32_t cap = count > 0 ? count : 1;
    uint32_t made = 0;
    double fresh = 0;

    if (cache_off(cache) || fetch->max_entries == 0 || (count == 0 && !done))
        return 0;
    /* Build outside the lock; most of the work is allocation. */
    window = malloc(cap * sizeof(*window));
    low = strdup(from);
    high = done ? NULL : strdup(entries[count - 1].name);
    if (!window || !low || (!done && !high))
        goto out;
    for (; made < count; made++) {
        if (strcmp(entries[made].name, from) < 0 ||
            (made > 0 && strcmp(entries[made].name, entries[made - 1].name) <= 0))
            goto out; /* not a sorted listing from `from` on: not trusted */
        window[made] = entry_new(entries[made].name, &entries[made].attr, fetch->ticket);
        if (!window[made])
            goto out;
    }

    pthread_mutex_lock(&cache->lock);
    double now = cache->clock();
    if (change_seq(cache, fetch->parent) > fetch->ticket || cache->all_changed > fetch->ticket ||
        now >= fetch->started + cache->timeout) {
        cache->stats.discarded++;
    } else {
        struct dc_dir *dir = dir_take(cache, fetch->parent, now);
        window_drop(dir);
        dir->has_window = true;
        dir->entries = window;
        dir->count = count;
        dir->cap = cap;
        dir->low = low;
        dir->high = high;
        dir->expires = fetch->started + cache->timeout;
        dir->known = fetch->ticket;
        dir->asked = fetch->max_entries;
        dir->hits = 0;
        window = NULL;
        low = NULL;
        high = NULL;
        made = 0;
        fresh = dir->expires - now;
        cache->stats.installed++;
    }
    pthread_mutex_unlock(&cache->lock);
out:
    for (uint32_t i = 0; i < made; i++)
        free(window[i]);
    free(window);
    free(low);
    free(high);
    return fresh;
}

void dentcache_dir_made(struct dentcache *cache, uint64_t dir, struct dentcache_ticket ticket)
{
    if (cache_off(cache))
        return;
    /* As a fetch decided now (after the mkdir's own changes were noted)
     * whose listing meta gave at the mkdir: fresh until then + timeout. */
    struct dentcache_fetch fetch = {.parent = dir, .max_entries = 1, .started = ticket.started};
    pthread_mutex_lock(&cache->lock);
    fetch.ticket = ++cache->seq;
    pthread_mutex_unlock(&cache->lock);
    dentcache_install(cache, &fetch, "", NULL, 0, true);
}

void dentcache_walk_hint(struct dentcache *cache, uint64_t dir)
{
    if (cache_off(cache))
        return;
    pthread_mutex_lock(&cache->lock);
    dir_take(cache, dir, cache->clock())->walk_hint = true;
    pthread_mutex_unlock(&cache->lock);
}

/* Inserts or replaces name in dir's window if the window covers it. */
static void window_put(struct dentcache *cache, struct dc_dir *dir, const char *name,
                       const struct ts_attr *attr)
{
    bool found;
    if (!dir->has_window || !window_covers(dir, name))
        return;
    uint32_t at = window_search(dir, name, &found);
    struct dc_entry *entry = entry_new(name, attr, ++cache->seq);
    if (!entry) {
        window_drop(dir);
        return;
    }
    if (found) {
        free(dir->entries[at]);
        dir->entries[at] = entry;
        return;
    }
    if (dir->count == dir->cap) {
        uint32_t new_cap = dir->cap * 2;
        struct dc_entry **grown = NULL;
        if (new_cap <= DENTCACHE_GROWTH * cache->max_window)
            grown = realloc(dir->entries, new_cap * sizeof(*grown));
        if (!grown) {
            free(entry);
            window_drop(dir); /* too big or no memory: forget it */
            return;
        }
        dir->entries = grown;
        dir->cap = new_cap;
    }
    memmove(dir->entries + at + 1, dir->entries + at, (dir->count - at) * sizeof(*dir->entries));
    dir->entries[at] = entry;
    dir->count++;
}

/*
 * Removes name from dir's window; returns the inode it named, 0 when the
 * window does not know it (no window, not covered, or not there).
 */
static uint64_t window_remove(struct dc_dir *dir, const char *name)
{
    bool found;
    if (!dir || !dir->has_window || !window_covers(dir, name))
        return 0;
    uint32_t at = window_search(dir, name, &found);
    if (!found)
        return 0;
    uint64_t ino = dir->entries[at]->attr.ino;
    free(dir->entries[at]);
    dir->count--;
    memmove(dir->entries + at, dir->entries + at + 1, (dir->count - at) * sizeof(*dir->entries));
    return ino;
}

struct dentcache_ticket dentcache_ticket(struct dentcache *cache)
{
    struct dentcache_ticket ticket = {0, 0};
    if (cache_off(cache))
        return ticket;
    pthread_mutex_lock(&cache->lock);
    ticket.seq = ++cache->seq;
    ticket.started = cache->clock();
    pthread_mutex_unlock(&cache->lock);
    return ticket;
}

/* The last change of each of dirs' directories, before this change is noted. */
static void dirs_before(const struct dentcache *cache, const struct metaclient_dirs *dirs,
                        uint64_t before[METACLIENT_MAX_DIRS])
{
    for (uint32_t i = 0; dirs && i < dirs->count && i < METACLIENT_MAX_DIRS; i++)
        before[i] = change_seq(cache, dirs->ino[i]);
}

/*
 * Keeps the directory attributes of a change whose own changes were just
 * noted, if nothing else changed those directories after the ticket.
 */
static void dirs_keep(struct dentcache *cache, const struct metaclient_dirs *dirs,
                      struct dentcache_ticket ticket, const uint64_t before[METACLIENT_MAX_DIRS],
                      double now)
{
    for (uint32_t i = 0; dirs && i < dirs->count && i < METACLIENT_MAX_DIRS; i++) {
        if (dirs->status[i] != TS_OK || dirs->attr[i].ino != dirs->ino[i] ||
            before[i] > ticket.seq || cache->all_changed > ticket.seq ||
            now >= ticket.started + cache->timeout)
            continue;
        struct dc_dir *dir = dir_take(cache, dirs->ino[i], now);
        dir->attr_kept = true;
        dir->attr = dirs->attr[i];
        dir->attr_known = ++cache->seq;
        dir->attr_expires = ticket.started + cache->timeout;
    }
}

/* Kept attributes of dir that no change has made stale, or NULL. */
static struct dc_dir *dir_attr_trusted(struct dentcache *cache, uint64_t ino, double now)
{
    struct dc_dir *dir = dir_find(cache, ino);
    if (dir && dir->attr_kept && now < dir->attr_expires &&
        change_seq(cache, ino) < dir->attr_known && cache->all_changed < dir->attr_known)
        return dir;
    return NULL;
}

bool dentcache_dir_attr_known(struct dentcache *cache, uint64_t dir)
{
    bool known;
    if (cache_off(cache))
        return false;
    pthread_mutex_lock(&cache->lock);
    known = dir_attr_trusted(cache, dir, cache->clock()) != NULL;
    pthread_mutex_unlock(&cache->lock);
    return known;
}

/*
 * A change of a directory at sec.nsec: its mtime and ctime move there,
 * unless already later (concurrent changes may report out of order).
 */
static void dir_times_advance(struct ts_attr *dir, int64_t sec, uint32_t nsec)
{
    if (sec > dir->mtime_sec || (sec == dir->mtime_sec && nsec > dir->mtime_nsec)) {
        dir->mtime_sec = sec;
        dir->mtime_nsec = nsec;
    }
    if (sec > dir->ctime_sec || (sec == dir->ctime_sec && nsec > dir->ctime_nsec)) {
        dir->ctime_sec = sec;
        dir->ctime_nsec = nsec;
    }
}

void dentcache_added(struct dentcache *cache, uint64_t parent, const char *name,
                     const struct ts_attr *attr, const struct metaclient_dirs *dirs,
                     struct dentcache_ticket ticket)
{
    uint64_t before[METACLIENT_MAX_DIRS];
    if (cache_off(cache))
        return;
    pthread_mutex_lock(&cache->lock);
    double now = cache->clock();
    dirs_before(cache, dirs, before);
    /* Without fetched attributes, the parent's kept ones follow from the
     * new entry: meta stamps the parent's mtime and ctime with the same
     * time as the new inode's ctime (or the linked one's), and a new
     * subdirectory adds a link. */
    struct dc_dir *derived = NULL;
    if (!dirs || dirs->count == 0)
        derived = dir_attr_trusted(cache, parent, now);
    change_note(cache, parent, now);
    if (derived) {
        dir_times_advance(&derived->attr, attr->ctime_sec, attr->ctime_nsec);
        if (S_ISDIR(attr->mode))
            derived->attr.nlink++;
        derived->attr_known = ++cache->seq;
    }
    change_note(cache, attr->ino, now); /* a new link changes nlink and ctime */
    struct dc_dir *dir = dir_find(cache, parent);
    if (dir)
        window_put(cache, dir, name, attr);
    dirs_keep(cache, dirs, ticket, before, now);
    pthread_mutex_unlock(&cache->lock);
}

/* Both ways of noting a removal; early: see dentcache_unlinked_early(). */
static void note_removed(struct dentcache *cache, uint64_t parent, const char *name,
                         const struct metaclient_dirs *dirs, struct dentcache_ticket ticket,
                         bool early)
{
    uint64_t before[METACLIENT_MAX_DIRS];
    if (cache_off(cache))
        return;
    pthread_mutex_lock(&cache->lock);
    double now = cache->clock();
    dirs_before(cache, dirs, before);
    struct dc_dir *derived = early ? dir_attr_trusted(cache, parent, now) : NULL;
    change_note(cache, parent, now);
    if (derived) {
        /* Meta will stamp the directory with its own clock; this one is close. */
        struct timespec wall = util_now();
        dir_times_advance(&derived->attr, wall.tv_sec, (uint32_t)wall.tv_nsec);
        derived->attr_known = ++cache->seq;
    }
    uint64_t ino = window_remove(dir_find(cache, parent), name);
    if (ino != 0)
        change_note(cache, ino, now);
    else
        cache->links_changed = change_note(cache, 0, now);
    dirs_keep(cache, dirs, ticket, before, now);
    pthread_mutex_unlock(&cache->lock);
}

void dentcache_removed(struct dentcache *cache, uint64_t parent, const char *name,
                       const struct metaclient_dirs *dirs, struct dentcache_ticket ticket)
{
    note_removed(cache, parent, name, dirs, ticket, false);
}

void dentcache_unlinked_early(struct dentcache *cache, uint64_t parent, const char *name,
                              struct dentcache_ticket ticket)
{
    note_removed(cache, parent, name, NULL, ticket, true);
}

void dentcache_renamed(struct dentcache *cache, uint64_t parent, const char *name,
                       uint64_t new_parent, const char *new_name,
                       const struct metaclient_dirs *dirs, struct dentcache_ticket ticket)
{
    uint64_t before[METACLIENT_MAX_DIRS];
    if (cache_off(cache))
        return;
    pthread_mutex_lock(&cache->lock);
    double now = cache->clock();
    dirs_before(cache, dirs, before);
    /* Both names may have changed inodes (a replaced target, an exchange):
     * simplest to forget both windows and every multiply-linked entry. */
    struct dc_dir *windows[2] = {dir_find(cache, parent), dir_find(cache, new_parent)};
    const char *names[2] = {name, new_name};
    for (int i = 0; i < 2; i++) {
        uint64_t ino = window_remove(windows[i], names[i]);
        if (ino != 0)
            change_note(cache, ino, now);
    }
    change_note(cache, parent, now);
    change_note(cache, new_parent, now);
    cache->links_changed = change_note(cache, 0, now);
    for (int i = 0; i < 2; i++)
        if (windows[i])
            window_drop(windows[i]);
    /* The moved inode's ctime changed, and this cache may not know which
     * inode it was: no kept directory attributes survive a rename. */
    for (int i = 0; i < DENTCACHE_DIRS; i++)
        cache->dirs[i].attr_kept = false;
    dirs_keep(cache, dirs, ticket, before, now);
    pthread_mutex_unlock(&cache->lock);
}

void dentcache_changed(struct dentcache *cache, uint64_t ino)
{
    if (cache_off(cache))
        return;
    pthread_mutex_lock(&cache->lock);
    change_note(cache, ino, cache->clock());
    pthread_mutex_unlock(&cache->lock);
}

void dentcache_attr_set(struct dentcache *cache, const struct ts_attr *attr)
{
    if (cache_off(cache))
        return;
    pthread_mutex_lock(&cache->lock);
    double now = cache->clock();
    change_note(cache, attr->ino, now);
    struct dc_file_attr *slot = NULL;
    for (uint32_t i = 0; i < DENTCACHE_FILE_ATTRS && !slot; i++)
        if (cache->files[i].attr.ino == attr->ino)
            slot = &cache->files[i];
    if (!slot)
        slot = &cache->files[cache->files_next++ % DENTCACHE_FILE_ATTRS];
    *slot = (struct dc_file_attr){.attr = *attr, .known = ++cache->seq, .expires = now + cache->timeout};
    pthread_mutex_unlock(&cache->lock);
}

bool dentcache_getattr(struct dentcache *cache, uint64_t ino, struct ts_attr *attr,
                       double *timeout_s)
{
    bool kept = false;
    if (cache_off(cache))
        return false;
    pthread_mutex_lock(&cache->lock);
    double now = cache->clock();
    struct dc_dir *dir = dir_find(cache, ino);
    if (dir && dir->attr_kept && now < dir->attr_expires &&
        change_seq(cache, ino) < dir->attr_known && cache->all_changed < dir->attr_known) {
        *attr = dir->attr;
        *timeout_s = dir->attr_expires - now;
        dir->last_used = now;
        cache->stats.dir_attrs++;
        kept = true;
    }
    for (uint32_t i = 0; i < DENTCACHE_FILE_ATTRS && !kept; i++) {
        struct dc_file_attr *file = &cache->files[i];
        if (file->attr.ino != ino || ino == 0)
            continue;
        /* A name removed here that this cache could not place may have been
         * one of its links (as entry_trusted()). */
        bool links_moved = file->attr.nlink > 1 && cache->links_changed > file->known;
        if (now < file->expires && change_seq(cache, ino) < file->known &&
            cache->all_changed < file->known && !links_moved) {
            *attr = file->attr;
            *timeout_s = file->expires - now;
            cache->stats.file_attrs++;
            kept = true;
        } else {
            file->attr.ino = 0;
        }
    }
    pthread_mutex_unlock(&cache->lock);
    return kept;
}

void dentcache_stats(struct dentcache *cache, struct dentcache_stats *stats)
{
    pthread_mutex_lock(&cache->lock);
    *stats = cache->stats;
    pthread_mutex_unlock(&cache->lock);
}
