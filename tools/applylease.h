/*
 * @file applylease.h
 * The tool's side of the cluster's apply lock (APPLY_LOCK in proto.h,
 * meta/applylock.h): `tessera rebalance apply` and `abort` take it before
 * touching the journal, renew it every APPLYLEASE_RENEW_MS with their
 * progress while they run, and release it at the end. Killed (-9), the
 * holder stops renewing and the lease lapses APPLYLEASE_LEASE_MS later.
 * A second run is refused at once with the holder's description.
 */
#ifndef TESSERA_TOOLS_APPLYLEASE_H
#define TESSERA_TOOLS_APPLYLEASE_H

#include "rpc.h"
#include "toolmeta.h"

#include <stdbool.h>
#include <stdint.h>

#define APPLYLEASE_LEASE_MS 15000
#define APPLYLEASE_RENEW_MS 3000

struct applylease {
    struct rpc_client *meta;
    const char *endpoint; /* for messages */
    int timeout_ms;
    uint64_t token;       /* random, this run's */
    char holder[200];     /* "user@host pid N: what" */
    bool held;
    bool lost;            /* another run took it after ours lapsed */
    int64_t renewed_ms;   /* monotonic, last renewal that answered */
    uint64_t steps_total;
    uint64_t steps_done;
};

/*
 * Takes the lock for what ("apply" or "abort"). Returns 0, or exit code 1
 * after saying who holds it (or why meta did not answer). A meta too old
 * to know APPLY_LOCK: a warning, and 0 (no lock to take).
 */
int applylease_take(struct applylease *lease, struct rpc_client *meta, const char *endpoint,
                    int timeout_ms, const char *what, const char *who);

/* The progress the next renewal reports; a new steps_total makes the next tick renew. */
void applylease_progress(struct applylease *lease, uint64_t steps_total, uint64_t steps_done);

/*
 * Renews when APPLYLEASE_RENEW_MS passed since the last renewal. Returns
 * false once the lease was lost to another holder (the run must stop);
 * a renewal meta did not answer is tried again next time.
 */
bool applylease_tick(struct applylease *lease);

/* Releases the lock if held; safe to call twice. */
void applylease_release(struct applylease *lease);

/* "since 12:03:04 (2 min ago)" style text of a held lock into out. */
void applylease_describe(const struct toolmeta_apply_lock *lock, char *out, size_t cap);

#endif
