/*
 * @file keepcache.c
 * See keepcache.h. A direct-mapped table under one lock: an open looks up
 * one slot, so the lock is held for a few comparisons.
 */
#include "keepcache.h"

#include <pthread.h>
#include <stdlib.h>

struct keepcache_slot {
    uint64_t ino; /* 0: empty */
    uint64_t generation;
    uint64_t size;
    int64_t mtime_sec;
    int64_t ctime_sec;
    uint32_t mtime_nsec;
    uint32_t ctime_nsec;
};

struct keepcache {
    pthread_mutex_t lock;
    size_t mask;
    struct keepcache_slot slots[];
};

struct keepcache *keepcache_new(size_t slots)
{
    size_t count = 1;
    while (count < slots)
        count <<= 1;
    struct keepcache *cache = calloc(1, sizeof(*cache) + count * sizeof(cache->slots[0]));
    if (!cache)
        return NULL;
    pthread_mutex_init(&cache->lock, NULL);
    cache->mask = count - 1;
    return cache;
}

void keepcache_destroy(struct keepcache **cachep)
{
    if (!*cachep)
        return;
    pthread_mutex_destroy(&(*cachep)->lock);
    free(*cachep);
    *cachep = NULL;
}

static struct keepcache_slot *slot_of(struct keepcache *cache, uint64_t ino)
{
    /* Inode numbers come in runs: multiply to spread them over the table. */
    return &cache->slots[(ino * 0x9e3779b97f4a7c15ull >> 32) & cache->mask];
}

bool keepcache_open(struct keepcache *cache, const struct ts_attr *attr)
{
    struct keepcache_slot now = {.ino = attr->ino,
                                 .generation = attr->generation,
                                 .size = attr->size,
                                 .mtime_sec = attr->mtime_sec,
                                 .ctime_sec = attr->ctime_sec,
                                 .mtime_nsec = attr->mtime_nsec,
                                 .ctime_nsec = attr->ctime_nsec};
    pthread_mutex_lock(&cache->lock);
    struct keepcache_slot *slot = slot_of(cache, attr->ino);
    bool unchanged = slot->ino == now.ino && slot->generation == now.generation &&
                     slot->size == now.size && slot->mtime_sec == now.mtime_sec &&
                     slot->mtime_nsec == now.mtime_nsec && slot->ctime_sec == now.ctime_sec &&
                     slot->ctime_nsec == now.ctime_nsec;
    *slot = now;
    pthread_mutex_unlock(&cache->lock);
    return unchanged;
}

void keepcache_forget(struct keepcache *cache, uint64_t ino)
{
    pthread_mutex_lock(&cache->lock);
    struct keepcache_slot *slot = slot_of(cache, ino);
    if (slot->ino == ino)
        slot->ino = 0;
    pthread_mutex_unlock(&cache->lock);
}
