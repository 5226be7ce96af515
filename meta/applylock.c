/*
 * @file applylock.c
 * See applylock.h.
 */
#include "applylock.h"

#include <stdio.h>
#include <string.h>

void applylock_expire(struct applylock *lock, int64_t now_ms)
{
    if (lock->held && now_ms >= lock->expires_ms)
        memset(lock, 0, sizeof(*lock));
}

bool applylock_take(struct applylock *lock, uint64_t token, const char *holder,
                    uint32_t lease_ms, uint64_t steps_total, uint64_t steps_done,
                    int64_t now_ms, int64_t now_sec)
{
    applylock_expire(lock, now_ms);
    if (token == 0 || (lock->held && lock->token != token))
        return false;
    if (lease_ms < APPLYLOCK_MIN_LEASE_MS)
        lease_ms = APPLYLOCK_MIN_LEASE_MS;
    if (lease_ms > APPLYLOCK_MAX_LEASE_MS)
        lease_ms = APPLYLOCK_MAX_LEASE_MS;
    if (!lock->held) {
        lock->held = true;
        lock->token = token;
        lock->since_sec = now_sec;
    }
    lock->lease_ms = lease_ms;
    lock->expires_ms = now_ms + lease_ms;
    lock->steps_total = steps_total;
    lock->steps_done = steps_done;
    snprintf(lock->holder, sizeof(lock->holder), "%s", holder ? holder : "");
    return true;
}

bool applylock_release(struct applylock *lock, uint64_t token, int64_t now_ms)
{
    applylock_expire(lock, now_ms);
    if (!lock->held || token == 0 || lock->token != token)
        return false;
    memset(lock, 0, sizeof(*lock));
    return true;
}

uint32_t applylock_left_ms(const struct applylock *lock, int64_t now_ms)
{
    if (!lock->held || now_ms >= lock->expires_ms)
        return 0;
    return (uint32_t)(lock->expires_ms - now_ms);
}
