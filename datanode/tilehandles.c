/*
 * @file tilehandles.c
 * See tilehandles.h. The handles live in one array. A slot is free (fd
 * -1, on the free stack), kept (in the index; on the unheld list when no
 * one holds it) or forgotten and still held (in neither: its last release
 * closes it and frees the slot). The index is a chained hash on (ino,
 * tile), so every version of a tile is on one chain for
 * tilehandles_forget(). The unheld list runs from the most recently
 * released to the least, which is the one a full set puts out.
 */
#include "tilehandles.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

struct tilehandles {
    struct tilehandle *slots;
    size_t capacity;
    size_t kept;         /* slots in the index */
    int32_t *chains;     /* the index: first slot of each chain, -1: none */
    size_t chain_mask;   /* chains - 1, a power of two at least twice capacity */
    int32_t *free_slots; /* a stack of free slots */
    size_t free_count;
    int32_t newest, oldest; /* the unheld list, -1: empty */
};

static size_t handles_chain_of(const struct tilehandles *handles, uint64_t ino, uint64_t tile)
{
    uint64_t mixed = (ino * 0x9E3779B97F4A7C15ull) ^ (tile + 0x632BE59BD9B4E019ull);
    mixed ^= mixed >> 29;
    return (size_t)(mixed & handles->chain_mask);
}

int tilehandles_new(size_t capacity, struct tilehandles **handlesp)
{
    *handlesp = NULL;
    if (capacity < TILEHANDLES_MIN)
        capacity = TILEHANDLES_MIN;
    if (capacity > TILEHANDLES_MAX)
        capacity = TILEHANDLES_MAX;
    size_t chains = 1;
    while (chains < 2 * capacity)
        chains *= 2;
    struct tilehandles *handles = calloc(1, sizeof(*handles));
    if (!handles)
        return -ENOMEM;
    handles->slots = calloc(capacity, sizeof(*handles->slots));
    handles->chains = malloc(chains * sizeof(*handles->chains));
    handles->free_slots = malloc(capacity * sizeof(*handles->free_slots));
    if (!handles->slots || !handles->chains || !handles->free_slots) {
        tilehandles_destroy(&handles);
        return -ENOMEM;
    }
    handles->capacity = capacity;
    handles->chain_mask = chains - 1;
    for (size_t i = 0; i < chains; i++)
        handles->chains[i] = -1;
    /* Popped from the end: slot 0 is used first. */
    for (size_t i = 0; i < capacity; i++) {
        handles->slots[i].fd = -1;
        handles->free_slots[i] = (int32_t)(capacity - 1 - i);
    }
    handles->free_count = capacity;
    handles->newest = handles->oldest = -1;
    *handlesp = handles;
    return 0;
}

/* Closes slot's file and lets its CRCs go. */
static void handles_close_slot(struct tilehandles *handles, int32_t slot)
{
    struct tilehandle *handle = &handles->slots[slot];
    close(handle->fd);
    handle->fd = -1;
    free(handle->sums);
    handle->sums = NULL;
}

void tilehandles_destroy(struct tilehandles **handlesp)
{
    struct tilehandles *handles = *handlesp;
    if (!handles)
        return;
    for (size_t i = 0; handles->slots && i < handles->capacity; i++)
        if (handles->slots[i].fd >= 0)
            handles_close_slot(handles, (int32_t)i);
    free(handles->slots);
    free(handles->chains);
    free(handles->free_slots);
    free(handles);
    *handlesp = NULL;
}

size_t tilehandles_capacity(const struct tilehandles *handles)
{
    return handles->capacity;
}

size_t tilehandles_count(const struct tilehandles *handles)
{
    return handles->kept;
}

static void handles_unlist(struct tilehandles *handles, int32_t slot)
{
    struct tilehandle *handle = &handles->slots[slot];
    if (handle->newer >= 0)
        handles->slots[handle->newer].older = handle->older;
    else
        handles->newest = handle->older;
    if (handle->older >= 0)
        handles->slots[handle->older].newer = handle->newer;
    else
        handles->oldest = handle->newer;
    handle->newer = handle->older = -1;
}

static void handles_list_newest(struct tilehandles *handles, int32_t slot)
{
    struct tilehandle *handle = &handles->slots[slot];
    handle->newer = -1;
    handle->older = handles->newest;
    if (handles->newest >= 0)
        handles->slots[handles->newest].newer = slot;
    else
        handles->oldest = slot;
    handles->newest = slot;
}

/* Takes slot out of the index. */
static void handles_unindex(struct tilehandles *handles, int32_t slot)
{
    struct tilehandle *handle = &handles->slots[slot];
    int32_t *link = &handles->chains[handles_chain_of(handles, handle->ino, handle->tile)];
    while (*link != slot)
        link = &handles->slots[*link].next_in_chain;
    *link = handle->next_in_chain;
    handle->next_in_chain = -1;
    handles->kept--;
}

static void handles_free_slot(struct tilehandles *handles, int32_t slot)
{
    handles_close_slot(handles, slot);
    handles->free_slots[handles->free_count++] = slot;
}

struct tilehandle *tilehandles_find(struct tilehandles *handles, uint64_t ino, uint64_t tile,
                                    uint64_t version)
{
    int32_t slot = handles->chains[handles_chain_of(handles, ino, tile)];
    while (slot >= 0) {
        struct tilehandle *handle = &handles->slots[slot];
        if (handle->ino == ino && handle->tile == tile && handle->version == version) {
            if (handle->users++ == 0)
                handles_unlist(handles, slot);
            return handle;
        }
        slot = handle->next_in_chain;
    }
    return NULL;
}

struct tilehandle *tilehandles_add(struct tilehandles *handles, uint64_t ino, uint64_t tile,
                                   uint64_t version, int fd, uint64_t size)
{
    int32_t slot;
    if (handles->free_count > 0) {
        slot = handles->free_slots[--handles->free_count];
    } else if (handles->oldest >= 0) {
        slot = handles->oldest;
        handles_unlist(handles, slot);
        handles_unindex(handles, slot);
        handles_close_slot(handles, slot);
    } else {
        return NULL; /* every one held */
    }
    struct tilehandle *handle = &handles->slots[slot];
    size_t chain = handles_chain_of(handles, ino, tile);
    handle->ino = ino;
    handle->tile = tile;
    handle->version = version;
    handle->fd = fd;
    handle->size = size;
    handle->users = 1;
    handle->forgotten = false;
    handle->newer = handle->older = -1;
    handle->next_in_chain = handles->chains[chain];
    handles->chains[chain] = slot;
    handles->kept++;
    return handle;
}

void tilehandles_release(struct tilehandles *handles, struct tilehandle *handle,
                         const struct tilecrc *loaded)
{
    int32_t slot = (int32_t)(handle - handles->slots);
    if (loaded && !handle->forgotten && !handle->sums)
        handle->sums = tilecrc_dup(loaded); /* out of memory: loaded again next time */
    if (--handle->users > 0)
        return;
    if (handle->forgotten)
        handles_free_slot(handles, slot);
    else
        handles_list_newest(handles, slot);
}

void tilehandles_forget(struct tilehandles *handles, uint64_t ino, uint64_t tile)
{
    int32_t slot = handles->chains[handles_chain_of(handles, ino, tile)];
    while (slot >= 0) {
        struct tilehandle *handle = &handles->slots[slot];
        int32_t next = handle->next_in_chain;
        if (handle->ino == ino && handle->tile == tile) {
            handles_unindex(handles, slot);
            if (handle->users > 0) {
                handle->forgotten = true;
            } else {
                handles_unlist(handles, slot);
                handles_free_slot(handles, slot);
            }
        }
        slot = next;
    }
}
