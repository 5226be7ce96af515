/*
 * @file applylease.c
 * See applylease.h. The token is random so a second run on the same
 * machine (same user, another pid) or a restarted one never passes for
 * the holder; only the run that took the lock renews or releases it.
 */
#include "applylease.h"

#include "progress.h"
#include "status.h"
#include "util.h"

#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static uint64_t applylease_token(void)
{
    uint64_t token = 0;
    while (token == 0) {
        if (getrandom(&token, sizeof(token), 0) != (ssize_t)sizeof(token)) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            token = ((uint64_t)now.tv_nsec << 32) ^ (uint64_t)now.tv_sec ^ (uint64_t)getpid();
        }
    }
    return token;
}

/* The request of action with this lease's token, holder and progress. */
static int applylease_call(struct applylease *lease, uint32_t action,
                           struct toolmeta_apply_lock *out, char *why, size_t why_cap)
{
    struct ts_apply_lock_req request = {
        .action = action,
        .token = lease->token,
        .lease_ms = APPLYLEASE_LEASE_MS,
        .steps_total = lease->steps_total,
        .steps_done = lease->steps_done,
        .holder = ts_str_of(lease->holder),
    };
    return toolmeta_apply_lock(lease->meta, lease->timeout_ms, &request, out, why, why_cap);
}

void applylease_describe(const struct toolmeta_apply_lock *lock, char *out, size_t cap)
{
    char since[32], age[16];
    time_t when = (time_t)lock->since_sec;
    struct tm local;
    double seconds = difftime(time(NULL), when);

    if (localtime_r(&when, &local) == NULL ||
        strftime(since, sizeof(since), "%Y-%m-%d %H:%M:%S %z", &local) == 0)
        snprintf(since, sizeof(since), "%lld", (long long)lock->since_sec);
    progress_format_duration(seconds < 0 ? 0 : seconds, age, sizeof(age));
    snprintf(out, cap, "%s, since %s (%s ago), %llu of %llu steps done", lock->holder, since, age,
             (unsigned long long)lock->steps_done, (unsigned long long)lock->steps_total);
}

int applylease_take(struct applylease *lease, struct rpc_client *meta, const char *endpoint,
                    int timeout_ms, const char *what, const char *who)
{
    struct toolmeta_apply_lock lock;
    char why[256], host[128] = "?", description[512];
    struct passwd *user = getpwuid(getuid());
    int status;

    memset(lease, 0, sizeof(*lease));
    lease->meta = meta;
    lease->endpoint = endpoint;
    lease->timeout_ms = timeout_ms;
    lease->token = applylease_token();
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "?");
    host[sizeof(host) - 1] = '\0';
    snprintf(lease->holder, sizeof(lease->holder), "tessera rebalance %s by %.32s@%.64s pid %ld",
             what, user ? user->pw_name : "?", host, (long)getpid());
    status = applylease_call(lease, TS_APPLY_LOCK_TAKE, &lock, why, sizeof(why));
    if (status == TS_ERR_NOTSUP || status == TS_ERR_PROTO) {
        fprintf(stderr,
                "%s: warning: tessera-meta at %s has no apply lock (upgrade it): nothing keeps "
                "another apply from running at the same time\n",
                who, endpoint);
        return 0;
    }
    if (status != TS_OK) {
        fprintf(stderr, "%s: cannot take the cluster's apply lock: tessera-meta at %s answered: "
                        "%s%s%s\n",
                who, endpoint, status_text(status), why[0] ? ": " : "", why);
        return 1;
    }
    if (!lock.granted) {
        applylease_describe(&lock, description, sizeof(description));
        fprintf(stderr,
                "%s: another rebalance runs on this cluster: %s.\n"
                "  Wait for it to end (tessera rebalance status shows it), or stop it where it "
                "runs (Ctrl-C, or kill its pid: it finishes or undoes its running steps).\n"
                "  If it was killed or its machine died, its lock lapses %u s after its last "
                "renewal (%.1f s from now); run this again then.\n",
                who, description, APPLYLEASE_LEASE_MS / 1000, lock.left_ms / 1000.0);
        return 1;
    }
    lease->held = true;
    lease->renewed_ms = util_monotonic_ms();
    return 0;
}

void applylease_progress(struct applylease *lease, uint64_t steps_total, uint64_t steps_done)
{
    /* A new plan size is told at the next tick: status shows it from the start. */
    if (steps_total != lease->steps_total)
        lease->renewed_ms = INT64_MIN / 2;
    lease->steps_total = steps_total;
    lease->steps_done = steps_done;
}

bool applylease_tick(struct applylease *lease)
{
    struct toolmeta_apply_lock lock;
    char why[256];
    int64_t now = util_monotonic_ms();

    if (!lease->held || lease->lost)
        return !lease->lost;
    if (now - lease->renewed_ms < APPLYLEASE_RENEW_MS)
        return true;
    if (applylease_call(lease, TS_APPLY_LOCK_TAKE, &lock, why, sizeof(why)) != TS_OK) {
        /* Meta busy or restarting: the lease has a margin of several renewals. */
        lease->renewed_ms = now - APPLYLEASE_RENEW_MS + 1000;
        return true;
    }
    if (!lock.granted) {
        lease->lost = true;
        lease->held = false;
        return false;
    }
    lease->renewed_ms = now;
    return true;
}

void applylease_release(struct applylease *lease)
{
    struct toolmeta_apply_lock lock;
    char why[256];

    if (!lease->held)
        return;
    lease->held = false;
    /* Not answered: the lease lapses by itself. */
    (void)applylease_call(lease, TS_APPLY_LOCK_RELEASE, &lock, why, sizeof(why));
}
