/*
 * @file sieve.c
 * See sieve.h. The touch table is direct-mapped by tile: two tiles that
 * share a slot forget each other's touches, which only delays sieving
 * (a later pair of touches still finds the tile), never reads wrong bytes:
 * this module decides only how to read, the data path decides what.
 */
#include "sieve.h"

#include <stdlib.h>

/* Credit is capped, so a reader whose pattern turns sparse stops soon. */
#define SIEVE_CREDIT_MAX (4 * SIEVE_LOAD_COST)
#define SIEVE_CREDIT_MIN (-SIEVE_LOAD_COST)

void sieve_init(struct sieve *sieve)
{
    sieve->touches = NULL;
    sieve->touch_slots = 0;
    sieve->credit = 2 * SIEVE_LOAD_COST;
    sieve->since_probe = 0;
}

void sieve_fini(struct sieve *sieve)
{
    free(sieve->touches);
    sieve->touches = NULL;
    sieve->touch_slots = 0;
}

/* Makes the table fit a file of `tiles` tiles; false if out of memory. */
static bool touches_fit(struct sieve *sieve, uint64_t tiles)
{
    size_t wanted = SIEVE_TOUCHES_MIN;
    while (wanted < tiles && wanted < SIEVE_TOUCHES_MAX)
        wanted *= 2;
    if (sieve->touches && wanted <= sieve->touch_slots)
        return true;
    /* The file grew: the touches so far are dropped with the old table. */
    struct sieve_touch *grown = calloc(wanted, sizeof(*grown));
    if (!grown)
        return sieve->touches != NULL;
    free(sieve->touches);
    sieve->touches = grown;
    sieve->touch_slots = wanted;
    return true;
}

/* Whether a direct reader may pay for one whole-tile read now. */
static bool credit_spend(struct sieve *sieve)
{
    if (sieve->credit <= 0 && ++sieve->since_probe < SIEVE_PROBE_EVERY)
        return false;
    sieve->since_probe = 0;
    sieve->credit -= SIEVE_LOAD_COST;
    if (sieve->credit < SIEVE_CREDIT_MIN)
        sieve->credit = SIEVE_CREDIT_MIN;
    return true;
}

bool sieve_touch(struct sieve *sieve, uint64_t tile, uint64_t tiles, int64_t now_ms,
                 bool kernel_keeps)
{
    if (!touches_fit(sieve, tiles))
        return false;
    struct sieve_touch *touch = &sieve->touches[tile & (sieve->touch_slots - 1)];
    bool again =
        touch->at_ms != 0 && touch->tile == tile && now_ms - touch->at_ms < SIEVE_WINDOW_MS;
    if (!again || !(kernel_keeps || credit_spend(sieve))) {
        touch->tile = tile;
        touch->at_ms = now_ms;
        return false;
    }
    /* Read whole: should it be dropped from the cache, it takes two more
     * touches to be read whole again. */
    touch->at_ms = 0;
    return true;
}

void sieve_hit(struct sieve *sieve)
{
    if (sieve->credit < SIEVE_CREDIT_MAX)
        sieve->credit++;
}
