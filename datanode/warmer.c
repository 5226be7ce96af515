/*
 * @file warmer.c
 * See warmer.h. Each slot holds the last tile hashed to it: when its
 * latest small read came, and when it was last warmed (0: never).
 */
#include "warmer.h"

#include <stdlib.h>

struct warmer_slot {
    uint64_t ino;
    uint64_t tile;
    int64_t read_ns;   /* its latest small read; 0: the slot is empty */
    int64_t warmed_ns; /* when it was last warmed; 0: not yet */
};

struct warmer {
    struct warmer_slot slots[WARMER_SLOTS];
};

struct warmer *warmer_new(void) { return calloc(1, sizeof(struct warmer)); }

void warmer_destroy(struct warmer **warmerp)
{
    if (!warmerp)
        return;
    free(*warmerp);
    *warmerp = NULL;
}

/* Tiles of one file are numbered in a row: spread them over the slots. */
static size_t warmer_slot_of(uint64_t ino, uint64_t tile)
{
    uint64_t key = ino * 0x9e3779b97f4a7c15ull ^ tile * 0xc2b2ae3d27d4eb4full;
    return (size_t)((key ^ (key >> 29)) % WARMER_SLOTS);
}

bool warmer_note(struct warmer *warmer, uint64_t ino, uint64_t tile, uint32_t length,
                 int64_t now_ns)
{
    if (length >= WARMER_SMALL_BYTES)
        return false;
    struct warmer_slot *slot = &warmer->slots[warmer_slot_of(ino, tile)];
    if (slot->read_ns == 0 || slot->ino != ino || slot->tile != tile) {
        *slot = (struct warmer_slot){.ino = ino, .tile = tile, .read_ns = now_ns};
        return false;
    }
    bool recent = now_ns - slot->read_ns <= WARMER_WINDOW_NS;
    bool due = slot->warmed_ns == 0 || now_ns - slot->warmed_ns >= WARMER_AGAIN_NS;
    slot->read_ns = now_ns;
    if (!recent || !due)
        return false;
    slot->warmed_ns = now_ns;
    return true;
}
