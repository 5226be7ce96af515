/*
 * @file applylock.h
 * The cluster's one `tessera rebalance apply` at a time (APPLY_LOCK in
 * proto.h), in memory only: a lease a running apply (or abort) takes,
 * renews every few seconds with its progress, and releases at its end.
 * A holder that stops renewing (killed with -9, its machine gone) loses
 * it lease_ms after its last renewal, so a dead apply never blocks the
 * cluster for long. Lost on meta's restart: the holder's next renewal
 * finds it free and takes it again. Pure: the caller passes the time.
 */
#ifndef TESSERA_META_APPLYLOCK_H
#define TESSERA_META_APPLYLOCK_H

#include <stdbool.h>
#include <stdint.h>

#define APPLYLOCK_HOLDER_MAX 256   /* bytes of the holder's description, NUL included */
#define APPLYLOCK_MIN_LEASE_MS 1000
#define APPLYLOCK_MAX_LEASE_MS 600000

/* The lock as meta keeps it; all zeros is free. */
struct applylock {
    bool held;
    uint64_t token;       /* the holder's secret: renewals and the release present it */
    int64_t expires_ms;   /* monotonic */
    uint32_t lease_ms;
    int64_t since_sec;    /* wall clock of the take */
    uint64_t steps_total; /* the holder's plan size, as its last renewal said */
    uint64_t steps_done;
    char holder[APPLYLOCK_HOLDER_MAX]; /* e.g. "alice@node2 pid 4242" */
};

/* Drops a lease that lapsed by now_ms. */
void applylock_expire(struct applylock *lock, int64_t now_ms);

/*
 * Takes the lock for token (!= 0) or renews it when token already holds
 * it (progress and holder updated, lease_ms clamped to the bounds). A
 * free lock is taken whatever the request: a renewal after meta's
 * restart takes it again. Returns true when token holds the lock after
 * the call; false when another holder does (lock unchanged).
 */
bool applylock_take(struct applylock *lock, uint64_t token, const char *holder,
                    uint32_t lease_ms, uint64_t steps_total, uint64_t steps_done,
                    int64_t now_ms, int64_t now_sec);

/* Frees the lock when token holds it; true then, false otherwise. */
bool applylock_release(struct applylock *lock, uint64_t token, int64_t now_ms);

/* Milliseconds the current lease has left at now_ms (0 when free). */
uint32_t applylock_left_ms(const struct applylock *lock, int64_t now_ms);

#endif
