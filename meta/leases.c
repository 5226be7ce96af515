/*
 * @file leases.c
 * See leases.h. A small array scanned linearly: a few directories are
 * leased at a time, and lapsed entries are reused as they are found.
 */
#include "leases.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct lease {
    uint64_t dir; /* 0: free */
    uint64_t mount;
    int64_t expires_ms;
    bool recalled;
};

struct leases {
    struct lease table[LEASES_MAX];
    size_t used; /* slots with dir != 0: with none, the common case, nothing is scanned */
};

struct leases *leases_new(void) { return calloc(1, sizeof(struct leases)); }

void leases_destroy(struct leases **leasesp)
{
    if (!leasesp)
        return;
    free(*leasesp);
    *leasesp = NULL;
}

uint64_t leases_mount_of(const uint8_t *peer, size_t peer_len)
{
    uint64_t mount;
    if (!peer || peer_len != 1 + sizeof(mount) + 4 || peer[0] != 'M')
        return 0;
    memcpy(&mount, peer + 1, sizeof(mount));
    return mount;
}

/* dir's live lease (lapsed ones are freed on the way), or NULL. */
static struct lease *lease_of(struct leases *leases, uint64_t dir, int64_t now_ms)
{
    for (size_t i = 0; i < LEASES_MAX; i++) {
        struct lease *lease = &leases->table[i];
        if (lease->dir != dir)
            continue;
        if (lease->expires_ms <= now_ms) {
            lease->dir = 0;
            leases->used--;
            return NULL;
        }
        return lease;
    }
    return NULL;
}

int leases_get(struct leases *leases, uint64_t dir, uint64_t mount, int64_t now_ms)
{
    if (dir == 0 || mount == 0)
        return -EINVAL;
    struct lease *lease = lease_of(leases, dir, now_ms);
    if (lease && lease->mount != mount)
        return -EBUSY;
    if (lease && lease->recalled)
        return -EBUSY; /* wanted back: the holder returns it first */
    for (size_t i = 0; !lease && i < LEASES_MAX; i++) {
        struct lease *slot = &leases->table[i];
        if (slot->dir == 0 || slot->expires_ms <= now_ms)
            lease = slot;
    }
    if (!lease)
        return -EBUSY;
    if (lease->dir == 0)
        leases->used++;
    *lease = (struct lease){
        .dir = dir, .mount = mount, .expires_ms = now_ms + LEASES_TTL_MS, .recalled = false};
    return 0;
}

int leases_renew(struct leases *leases, uint64_t dir, uint64_t mount, int64_t now_ms)
{
    struct lease *lease = lease_of(leases, dir, now_ms);
    if (!lease || lease->mount != mount || lease->recalled)
        return -EBUSY;
    lease->expires_ms = now_ms + LEASES_TTL_MS;
    return 0;
}

void leases_return(struct leases *leases, uint64_t dir, uint64_t mount)
{
    for (size_t i = 0; i < LEASES_MAX; i++)
        if (leases->table[i].dir == dir && leases->table[i].mount == mount) {
            leases->table[i].dir = 0;
            leases->used--;
        }
}

bool leases_refuse(struct leases *leases, uint64_t dir, uint64_t mount, int64_t now_ms)
{
    if (leases->used == 0) /* every meta request asks: most while nothing is leased */
        return false;
    struct lease *lease = lease_of(leases, dir, now_ms);
    if (!lease || lease->mount == mount)
        return false;
    lease->recalled = true;
    return true;
}
