/*
 * @file opens.c
 * See opens.h. An open-addressing hash table with linear probing, keyed by
 * ino (never 0, which marks a free slot). Removal shifts the following
 * entries back instead of leaving tombstones, so a probe always stops at the
 * first free slot. The table keeps at most half its slots used.
 */
#include "opens.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

struct opens_slot {
    uint64_t ino; /* 0 = free */
    uint32_t count;
};

struct opens {
    struct opens_slot *slots;
    size_t cap; /* a power of two */
    size_t used;
};

static size_t opens_hash(uint64_t ino, size_t cap)
{
    /* Fibonacci hashing: consecutive inos spread over the table. */
    return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

struct opens *opens_new(void)
{
    struct opens *opens = calloc(1, sizeof(*opens));
    if (!opens)
        return NULL;
    opens->cap = 64;
    opens->slots = calloc(opens->cap, sizeof(*opens->slots));
    if (!opens->slots) {
        free(opens);
        return NULL;
    }
    return opens;
}

void opens_destroy(struct opens **opensp)
{
    if (!opensp || !*opensp)
        return;
    free((*opensp)->slots);
    free(*opensp);
    *opensp = NULL;
}

/* The slot of ino, or the free slot where it would go. */
static size_t opens_probe(const struct opens *opens, uint64_t ino)
{
    size_t at = opens_hash(ino, opens->cap);
    while (opens->slots[at].ino != 0 && opens->slots[at].ino != ino)
        at = (at + 1) & (opens->cap - 1);
    return at;
}

static int opens_grow(struct opens *opens)
{
    struct opens_slot *old = opens->slots;
    size_t old_cap = opens->cap;
    struct opens_slot *slots = calloc(old_cap * 2, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    opens->slots = slots;
    opens->cap = old_cap * 2;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].ino != 0)
            opens->slots[opens_probe(opens, old[i].ino)] = old[i];
    }
    free(old);
    return 0;
}

int opens_add(struct opens *opens, uint64_t ino)
{
    size_t at;
    if (ino == 0)
        return -EINVAL;
    if ((opens->used + 1) * 2 > opens->cap && opens_grow(opens) < 0)
        return -ENOMEM;
    at = opens_probe(opens, ino);
    if (opens->slots[at].ino == 0) {
        opens->slots[at].ino = ino;
        opens->slots[at].count = 0;
        opens->used++;
    }
    if (opens->slots[at].count < UINT32_MAX)
        opens->slots[at].count++;
    return 0;
}

uint32_t opens_count(const struct opens *opens, uint64_t ino)
{
    if (ino == 0)
        return 0;
    return opens->slots[opens_probe(opens, ino)].count;
}

uint32_t opens_remove(struct opens *opens, uint64_t ino)
{
    size_t mask = opens->cap - 1;
    size_t hole;
    size_t next;

    if (ino == 0)
        return 0;
    hole = opens_probe(opens, ino);
    if (opens->slots[hole].ino == 0)
        return 0;
    if (--opens->slots[hole].count > 0)
        return opens->slots[hole].count;
    /* Free the slot, then pull back every entry of the run that may not be
     * reachable any more (its home lies cyclically outside (hole, next]). */
    opens->slots[hole].ino = 0;
    opens->used--;
    next = (hole + 1) & mask;
    while (opens->slots[next].ino != 0) {
        size_t home = opens_hash(opens->slots[next].ino, opens->cap);
        bool stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next);
        if (!stays) {
            opens->slots[hole] = opens->slots[next];
            opens->slots[next].ino = 0;
            hole = next;
        }
        next = (next + 1) & mask;
    }
    return 0;
}
