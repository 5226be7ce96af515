/*
 * @file sessions.c
 * See sessions.h. The sessions sit in an array sorted by mount id (a few
 * per mount machine; looked up by binary search on every open and
 * release). Each counts its opens per inode (inocount.h) and keeps the
 * sum of its counts and their fingerprint (proto.h) up to date, so a
 * renewal compares two numbers instead of the sets. The totals over all
 * sessions are one more inocount.
 */
#include "sessions.h"

#include "inocount.h"
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct session {
    uint64_t mount; /* 0: the anonymous holder */
    int64_t expires_ms;
    struct inocount *held;
    uint64_t holds;       /* sum of the counts in held */
    uint64_t fingerprint; /* sum of count * ts_hold_mix(ino), mod 2^64 */
};

struct sessions {
    struct session **by_mount; /* sorted by mount */
    size_t count;
    size_t cap;
    struct inocount *total;
    int64_t lease_ms;
};

void sessions_freed_clear(struct sessions_freed *freed)
{
    free(freed->inos);
    memset(freed, 0, sizeof(*freed));
}

static int freed_push(struct sessions_freed *freed, uint64_t ino)
{
    if (freed->count == freed->cap) {
        size_t cap = freed->cap ? freed->cap * 2 : 64;
        uint64_t *grown = realloc(freed->inos, cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        freed->inos = grown;
        freed->cap = cap;
    }
    freed->inos[freed->count++] = ino;
    return 0;
}

struct sessions *sessions_new(int64_t lease_ms)
{
    struct sessions *sessions = calloc(1, sizeof(*sessions));
    if (!sessions)
        return NULL;
    sessions->total = inocount_new();
    if (!sessions->total) {
        free(sessions);
        return NULL;
    }
    sessions->lease_ms = lease_ms > 0 ? lease_ms : SESSIONS_DEFAULT_LEASE_MS;
    return sessions;
}

static void session_free(struct session *session)
{
    if (!session)
        return;
    inocount_destroy(&session->held);
    free(session);
}

void sessions_destroy(struct sessions **sessionsp)
{
    if (!sessionsp || !*sessionsp)
        return;
    struct sessions *sessions = *sessionsp;
    for (size_t i = 0; i < sessions->count; i++)
        session_free(sessions->by_mount[i]);
    free(sessions->by_mount);
    inocount_destroy(&sessions->total);
    free(sessions);
    *sessionsp = NULL;
}

int64_t sessions_lease_ms(const struct sessions *sessions)
{
    return sessions->lease_ms;
}

void sessions_set_lease_ms(struct sessions *sessions, int64_t lease_ms)
{
    if (lease_ms > 0)
        sessions->lease_ms = lease_ms;
}

uint32_t sessions_open_count(const struct sessions *sessions, uint64_t ino)
{
    return inocount_get(sessions->total, ino);
}

size_t sessions_count(const struct sessions *sessions)
{
    return sessions->count;
}

/* The index of mount's session, or where it would go (*found false). */
static size_t session_find(const struct sessions *sessions, uint64_t mount, bool *found)
{
    size_t low = 0;
    size_t high = sessions->count;
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        if (sessions->by_mount[mid]->mount < mount)
            low = mid + 1;
        else
            high = mid;
    }
    *found = low < sessions->count && sessions->by_mount[low]->mount == mount;
    return low;
}

static struct session *session_of(const struct sessions *sessions, uint64_t mount)
{
    bool found;
    size_t at = session_find(sessions, mount, &found);
    return found ? sessions->by_mount[at] : NULL;
}

/* mount's session, made (with no opens) if needed; NULL when out of memory. */
static struct session *session_get(struct sessions *sessions, uint64_t mount, int64_t now_ms)
{
    bool found;
    size_t at = session_find(sessions, mount, &found);
    struct session *session;
    if (found)
        return sessions->by_mount[at];
    if (sessions->count == sessions->cap) {
        size_t cap = sessions->cap ? sessions->cap * 2 : 16;
        struct session **grown = realloc(sessions->by_mount, cap * sizeof(*grown));
        if (!grown)
            return NULL;
        sessions->by_mount = grown;
        sessions->cap = cap;
    }
    session = calloc(1, sizeof(*session));
    if (session)
        session->held = inocount_new();
    if (!session || !session->held) {
        session_free(session);
        return NULL;
    }
    session->mount = mount;
    session->expires_ms = now_ms + sessions->lease_ms;
    memmove(&sessions->by_mount[at + 1], &sessions->by_mount[at],
            (sessions->count - at) * sizeof(*sessions->by_mount));
    sessions->by_mount[at] = session;
    sessions->count++;
    return session;
}

static void session_renewed(const struct sessions *sessions, struct session *session,
                            int64_t now_ms)
{
    session->expires_ms = now_ms + sessions->lease_ms;
}

/* Adds n opens of ino to session and to the totals. */
static int session_add(struct sessions *sessions, struct session *session, uint64_t ino, uint32_t n)
{
    int err = inocount_add(session->held, ino, n);
    if (err == 0)
        err = inocount_add(sessions->total, ino, n);
    if (err < 0) {
        /* Undo the session's part, so session and totals agree. */
        inocount_sub(session->held, ino, n);
        return err;
    }
    session->holds += n;
    session->fingerprint += (uint64_t)n * ts_hold_mix(ino);
    return 0;
}

/* Takes n of session's opens of ino (it holds at least n) from it and the totals. */
static void session_take(struct sessions *sessions, struct session *session, uint64_t ino,
                         uint32_t n)
{
    inocount_sub(session->held, ino, n);
    inocount_sub(sessions->total, ino, n);
    session->holds -= n;
    session->fingerprint -= (uint64_t)n * ts_hold_mix(ino);
}

/* Drops every open of session; inos left with none go to *freed. */
static int session_drop_all(struct sessions *sessions, struct session *session,
                            struct sessions_freed *freed, uint64_t *dropped)
{
    size_t at = 0;
    uint64_t ino;
    uint32_t n;
    int err = 0;
    while (inocount_next(session->held, &at, &ino, &n)) {
        if (inocount_sub(sessions->total, ino, n) == 0 && err == 0)
            err = freed_push(freed, ino);
        if (dropped)
            *dropped += n;
    }
    inocount_clear(session->held);
    session->holds = 0;
    session->fingerprint = 0;
    return err;
}

/* Removes the session at index at from the array and frees it. */
static void session_remove(struct sessions *sessions, size_t at)
{
    session_free(sessions->by_mount[at]);
    memmove(&sessions->by_mount[at], &sessions->by_mount[at + 1],
            (sessions->count - at - 1) * sizeof(*sessions->by_mount));
    sessions->count--;
}

int sessions_open(struct sessions *sessions, uint64_t mount, uint64_t ino, int64_t now_ms)
{
    if (ino == 0)
        return -EINVAL;
    struct session *session = session_get(sessions, mount, now_ms);
    if (!session)
        return -ENOMEM;
    session_renewed(sessions, session, now_ms);
    return session_add(sessions, session, ino, 1);
}

uint32_t sessions_holds(const struct sessions *sessions, uint64_t mount, uint64_t ino)
{
    const struct session *session = session_of(sessions, mount);
    return session ? inocount_get(session->held, ino) : 0;
}

bool sessions_release(struct sessions *sessions, uint64_t mount, uint64_t ino)
{
    struct session *session = session_of(sessions, mount);
    if (!session || inocount_get(session->held, ino) == 0)
        return false;
    session_take(sessions, session, ino, 1);
    return true;
}

uint32_t sessions_renew(struct sessions *sessions, uint64_t mount, uint64_t holds,
                        uint64_t fingerprint, int64_t now_ms)
{
    struct session *session = session_of(sessions, mount);
    if (!session)
        return TS_SESSION_ANNOUNCE;
    session_renewed(sessions, session, now_ms);
    if (session->holds != holds || session->fingerprint != fingerprint)
        return TS_SESSION_ANNOUNCE;
    return TS_SESSION_OK;
}

int sessions_hold(struct sessions *sessions, uint64_t mount, bool first, const uint64_t *inos,
                  const uint32_t *counts, size_t count, int64_t now_ms,
                  struct sessions_freed *freed)
{
    struct session *session = session_get(sessions, mount, now_ms);
    int err = 0;
    if (!session)
        return -ENOMEM;
    session_renewed(sessions, session, now_ms);
    if (first)
        err = session_drop_all(sessions, session, freed, NULL);
    for (size_t i = 0; i < count; i++) {
        if (inos[i] == 0 || counts[i] == 0)
            continue;
        int added = session_add(sessions, session, inos[i], counts[i]);
        if (added < 0 && err == 0)
            err = added;
    }
    return err;
}

int sessions_end(struct sessions *sessions, uint64_t mount, struct sessions_freed *freed)
{
    bool found;
    size_t at = session_find(sessions, mount, &found);
    if (!found)
        return 0;
    int err = session_drop_all(sessions, sessions->by_mount[at], freed, NULL);
    session_remove(sessions, at);
    return err;
}

int sessions_expire(struct sessions *sessions, int64_t now_ms, struct sessions_freed *freed,
                    size_t *ended, uint64_t *dropped)
{
    int err = 0;
    *ended = 0;
    *dropped = 0;
    for (size_t at = 0; at < sessions->count;) {
        struct session *session = sessions->by_mount[at];
        if (session->mount == 0 || session->expires_ms > now_ms) {
            at++;
            continue;
        }
        int dropped_err = session_drop_all(sessions, session, freed, dropped);
        if (dropped_err < 0 && err == 0)
            err = dropped_err;
        session_remove(sessions, at);
        (*ended)++;
    }
    return err;
}
