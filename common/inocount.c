/*
 * @file inocount.c
 * See inocount.h. An open-addressing hash table with linear probing, keyed
 * by ino (never 0, which marks a free slot). Removal shifts the following
 * entries back instead of leaving tombstones, so a probe always stops at
 * the first free slot. The table keeps at most half its slots used.
 */
#include "inocount.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define INOCOUNT_MIN_SLOTS 64

struct inocount_slot {
    uint64_t ino; /* 0 = free */
    uint32_t count;
};

struct inocount {
    struct inocount_slot *slots;
    size_t cap; /* a power of two */
    size_t used;
};

static size_t inocount_hash(uint64_t ino, size_t cap)
{
    /* Fibonacci hashing: consecutive inos spread over the table. */
    return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

struct inocount *inocount_new(void)
{
    struct inocount *map = calloc(1, sizeof(*map));
    if (!map)
        return NULL;
    map->cap = INOCOUNT_MIN_SLOTS;
    map->slots = calloc(map->cap, sizeof(*map->slots));
    if (!map->slots) {
        free(map);
        return NULL;
    }
    return map;
}

void inocount_destroy(struct inocount **mapp)
{
    if (!mapp || !*mapp)
        return;
    free((*mapp)->slots);
    free(*mapp);
    *mapp = NULL;
}

/* The slot of ino, or the free slot where it would go. */
static size_t inocount_probe(const struct inocount *map, uint64_t ino)
{
    size_t at = inocount_hash(ino, map->cap);
    while (map->slots[at].ino != 0 && map->slots[at].ino != ino)
        at = (at + 1) & (map->cap - 1);
    return at;
}

static int inocount_grow(struct inocount *map)
{
    struct inocount_slot *old = map->slots;
    size_t old_cap = map->cap;
    struct inocount_slot *slots = calloc(old_cap * 2, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    map->slots = slots;
    map->cap = old_cap * 2;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].ino != 0)
            map->slots[inocount_probe(map, old[i].ino)] = old[i];
    }
    free(old);
    return 0;
}

int inocount_add(struct inocount *map, uint64_t ino, uint32_t n)
{
    size_t at;
    if (ino == 0 || n == 0)
        return -EINVAL;
    if ((map->used + 1) * 2 > map->cap && inocount_grow(map) < 0)
        return -ENOMEM;
    at = inocount_probe(map, ino);
    if (map->slots[at].ino == 0) {
        map->slots[at].ino = ino;
        map->slots[at].count = 0;
        map->used++;
    }
    map->slots[at].count =
        map->slots[at].count > UINT32_MAX - n ? UINT32_MAX : map->slots[at].count + n;
    return 0;
}

uint32_t inocount_get(const struct inocount *map, uint64_t ino)
{
    if (ino == 0)
        return 0;
    return map->slots[inocount_probe(map, ino)].count;
}

size_t inocount_size(const struct inocount *map)
{
    return map->used;
}

uint32_t inocount_sub(struct inocount *map, uint64_t ino, uint32_t n)
{
    size_t mask = map->cap - 1;
    size_t hole;
    size_t next;

    if (ino == 0)
        return 0;
    hole = inocount_probe(map, ino);
    if (map->slots[hole].ino == 0)
        return 0;
    if (map->slots[hole].count > n) {
        map->slots[hole].count -= n;
        return map->slots[hole].count;
    }
    /* Free the slot, then pull back every entry of the run that may not be
     * reachable any more (its home lies cyclically outside (hole, next]). */
    map->slots[hole] = (struct inocount_slot){0};
    map->used--;
    next = (hole + 1) & mask;
    while (map->slots[next].ino != 0) {
        size_t home = inocount_hash(map->slots[next].ino, map->cap);
        bool stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next);
        if (!stays) {
            map->slots[hole] = map->slots[next];
            map->slots[next] = (struct inocount_slot){0};
            hole = next;
        }
        next = (next + 1) & mask;
    }
    return 0;
}

int inocount_next(const struct inocount *map, size_t *at, uint64_t *ino, uint32_t *count)
{
    while (*at < map->cap) {
        const struct inocount_slot *slot = &map->slots[(*at)++];
        if (slot->ino != 0) {
            *ino = slot->ino;
            *count = slot->count;
            return 1;
        }
    }
    return 0;
}

void inocount_clear(struct inocount *map)
{
    memset(map->slots, 0, map->cap * sizeof(*map->slots));
    map->used = 0;
}
