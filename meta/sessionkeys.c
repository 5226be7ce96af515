/*
 * @file sessionkeys.c
 * See sessionkeys.h. An open-addressing table keyed by session id (linear
 * probing, deletion by backward shift), twice the size of the ids it may
 * hold. A full table first forgets ids idle for SESSIONKEYS_IDLE_MS (one
 * sweep, at most once per claim that finds it full).
 */
#include "sessionkeys.h"

#include "keys.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SESSIONKEYS_SLOTS (2 * SESSIONKEYS_MAX)
/* "ROLE:NAME" at most. */
#define SESSIONKEYS_USER_MAX (KEYS_ROLE_MAX + 1 + KEYS_NAME_MAX)

struct sessionkeys_slot {
    uint64_t mount; /* 0: free */
    int64_t last_ms;
    char user[SESSIONKEYS_USER_MAX + 1];
};

struct sessionkeys {
    struct sessionkeys_slot *slots;
    size_t count;
};

struct sessionkeys *sessionkeys_new(void)
{
    struct sessionkeys *keys = calloc(1, sizeof(*keys));
    if (!keys)
        return NULL;
    keys->slots = calloc(SESSIONKEYS_SLOTS, sizeof(*keys->slots));
    if (!keys->slots) {
        free(keys);
        return NULL;
    }
    return keys;
}

void sessionkeys_destroy(struct sessionkeys **keysp)
{
    if (!keysp || !*keysp)
        return;
    free((*keysp)->slots);
    free(*keysp);
    *keysp = NULL;
}

size_t sessionkeys_count(const struct sessionkeys *keys) { return keys->count; }

static size_t sessionkeys_home(uint64_t mount)
{
    /* Mount ids are random, but a mount may choose its own: mix anyway. */
    mount ^= mount >> 33;
    mount *= 0xff51afd7ed558ccdull;
    mount ^= mount >> 33;
    return (size_t)(mount % SESSIONKEYS_SLOTS);
}

/* Frees slot `at`, moving later entries of its probe run back into the hole. */
static void sessionkeys_remove_at(struct sessionkeys *keys, size_t at)
{
    size_t hole = at;
    keys->slots[hole].mount = 0;
    keys->count--;
    for (size_t next = (hole + 1) % SESSIONKEYS_SLOTS; keys->slots[next].mount != 0;
         next = (next + 1) % SESSIONKEYS_SLOTS) {
        size_t home = sessionkeys_home(keys->slots[next].mount);
        /* Whether home lies cyclically in (hole, next]: then it stays. */
        bool stays = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
        if (stays)
            continue;
        keys->slots[hole] = keys->slots[next];
        keys->slots[next].mount = 0;
        hole = next;
    }
}

/* Forgets the ids idle since before now_ms - SESSIONKEYS_IDLE_MS. */
static void sessionkeys_sweep(struct sessionkeys *keys, int64_t now_ms)
{
    for (size_t i = 0; i < SESSIONKEYS_SLOTS;) {
        if (keys->slots[i].mount != 0 && now_ms - keys->slots[i].last_ms > SESSIONKEYS_IDLE_MS)
            sessionkeys_remove_at(keys, i); /* slot i may hold a moved entry now: look again */
        else
            i++;
    }
}

int sessionkeys_claim(struct sessionkeys *keys, uint64_t mount, const char *key_user,
                      int64_t now_ms, char *owner, size_t owner_cap)
{
    size_t at = sessionkeys_home(mount);
    while (keys->slots[at].mount != 0 && keys->slots[at].mount != mount)
        at = (at + 1) % SESSIONKEYS_SLOTS;
    struct sessionkeys_slot *slot = &keys->slots[at];
    if (slot->mount == mount) {
        if (strncmp(slot->user, key_user, sizeof(slot->user)) != 0) {
            if (owner_cap > 0)
                snprintf(owner, owner_cap, "%s", slot->user);
            return -EPERM;
        }
        slot->last_ms = now_ms;
        return 0;
    }
    if (keys->count >= SESSIONKEYS_MAX) {
        sessionkeys_sweep(keys, now_ms);
        if (keys->count >= SESSIONKEYS_MAX)
            return -ENOSPC;
        return sessionkeys_claim(keys, mount, key_user, now_ms, owner, owner_cap);
    }
    slot->mount = mount;
    slot->last_ms = now_ms;
    snprintf(slot->user, sizeof(slot->user), "%s", key_user);
    keys->count++;
    return 0;
}
