/*
 * @file readset.c
 * See readset.h. Entries sit in an array in insertion order; an
 * open-addressing table (linear probing, at least twice the capacity, so it
 * is never more than half full) maps (ino, tile) to an entry. Clearing
 * zeroes the table: O(capacity), fine for a counter a test resets.
 */
#include "readset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct readset {
    struct readset_entry *entries;
    size_t count;
    size_t cap;
    uint32_t *slots; /* 0 = empty, else entry index + 1 */
    size_t slot_mask;
    uint64_t dropped;
};

int readset_new(size_t cap, struct readset **setp)
{
    struct readset *set;
    size_t slots = 2;

    *setp = NULL;
    if (cap == 0 || cap > UINT32_MAX / 4)
        return -EINVAL;
    while (slots < 2 * cap)
        slots *= 2;
    set = calloc(1, sizeof(*set));
    if (!set)
        return -ENOMEM;
    set->entries = calloc(cap, sizeof(*set->entries));
    set->slots = calloc(slots, sizeof(*set->slots));
    if (!set->entries || !set->slots) {
        readset_destroy(&set);
        return -ENOMEM;
    }
    set->cap = cap;
    set->slot_mask = slots - 1;
    *setp = set;
    return 0;
}

void readset_destroy(struct readset **setp)
{
    if (!setp || !*setp)
        return;
    free((*setp)->entries);
    free((*setp)->slots);
    free(*setp);
    *setp = NULL;
}

static size_t readset_hash(const struct readset *set, uint64_t ino, uint64_t tile)
{
    uint64_t h =
        ino * 0x9E3779B97F4A7C15ull ^ (tile + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 29)) & set->slot_mask;
}

void readset_add(struct readset *set, uint64_t ino, uint64_t tile, uint64_t bytes)
{
    size_t at = readset_hash(set, ino, tile);

    for (;;) {
        uint32_t slot = set->slots[at];
        if (slot == 0)
            break;
        struct readset_entry *entry = &set->entries[slot - 1];
        if (entry->ino == ino && entry->tile == tile) {
            entry->reads++;
            entry->bytes += bytes;
            return;
        }
        at = (at + 1) & set->slot_mask;
    }
    if (set->count == set->cap) {
        set->dropped++;
        return;
    }
    set->entries[set->count] = (struct readset_entry){ino, tile, 1, bytes};
    set->count++;
    set->slots[at] = (uint32_t)set->count;
}

const struct readset_entry *readset_entries(const struct readset *set, size_t *count)
{
    *count = set->count;
    return set->entries;
}

uint64_t readset_dropped(const struct readset *set)
{
    return set->dropped;
}

void readset_clear(struct readset *set)
{
    memset(set->slots, 0, (set->slot_mask + 1) * sizeof(*set->slots));
    set->count = 0;
    set->dropped = 0;
}
