/*
 * @file sessions.h
 * Who holds which inode open, in memory: each open is counted under the
 * session of the mount that made it (SESSION_RENEW in proto.h), and in a
 * total per inode. An inode whose last link goes away while its total is
 * not zero stays in the store (an orphan, nlink 0) so an unlinked but open
 * file stays readable.
 *
 * A session is a lease the mount renews. One that runs out (the mount was
 * killed, or cut off) ends: its opens are dropped, and the caller deletes
 * the orphans nobody holds any more. A release counts down only what the
 * releasing session holds, so a release that arrives twice, from a session
 * that expired, or from before a restart of meta, never takes an open that
 * another holder counts on. Sessions are not persisted: after a restart
 * each mount announces its opens again (sessions_hold).
 *
 * Mount 0 is the anonymous holder (a sender that does not name itself, such
 * as a tool or a unit test): its opens never expire.
 * Single-threaded, as meta's request loop.
 */
#ifndef TESSERA_META_SESSIONS_H
#define TESSERA_META_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SESSIONS_DEFAULT_LEASE_MS 15000

struct sessions;

/* Inodes whose total count of opens dropped to zero: orphans to check. */
struct sessions_freed {
    uint64_t *inos;
    size_t count;
    size_t cap;
};
void sessions_freed_clear(struct sessions_freed *freed);

/* Sessions whose lease is lease_ms (> 0). NULL when out of memory. */
struct sessions *sessions_new(int64_t lease_ms);
/* Accepts NULL, clears *sessionsp. */
void sessions_destroy(struct sessions **sessionsp);
int64_t sessions_lease_ms(const struct sessions *sessions);
void sessions_set_lease_ms(struct sessions *sessions, int64_t lease_ms);

/* How many opens of ino all sessions hold together. */
uint32_t sessions_open_count(const struct sessions *sessions, uint64_t ino);
/* How many opens of ino mount's session holds (0 without a session). */
uint32_t sessions_holds(const struct sessions *sessions, uint64_t mount, uint64_t ino);
/* Sessions known now, the anonymous one included once it held anything. */
size_t sessions_count(const struct sessions *sessions);

/*
 * One more open of ino by mount, which renews mount's lease (a session is
 * made for a mount not known yet). 0, -EINVAL (ino 0) or -ENOMEM.
 */
int sessions_open(struct sessions *sessions, uint64_t mount, uint64_t ino, int64_t now_ms);
/*
 * One release of ino by mount: true when mount held it (one open fewer;
 * sessions_open_count() tells what remains), false when it held none
 * (nothing changes).
 */
bool sessions_release(struct sessions *sessions, uint64_t mount, uint64_t ino);

/*
 * SESSION_RENEW of mount (!= 0): TS_SESSION_OK when meta knows the session
 * and counts the same opens under it (holds, fingerprint as proto.h
 * defines them), which renews the lease; TS_SESSION_ANNOUNCE otherwise (a
 * known session is renewed all the same, and keeps its opens until the
 * mount's SESSION_HOLDS replaces them).
 */
uint32_t sessions_renew(struct sessions *sessions, uint64_t mount, uint64_t holds,
                        uint64_t fingerprint, int64_t now_ms);
/*
 * SESSION_HOLDS of mount (!= 0), one call per request: with first, what
 * the session held is dropped first (inos left with no open at all are
 * appended to *freed); then each of the count records (ino, n) is added.
 * Renews the lease, making the session if needed. 0 or -ENOMEM (part of
 * the records may be counted; the mount announces again at its next
 * renewal, which then fails).
 */
int sessions_hold(struct sessions *sessions, uint64_t mount, bool first, const uint64_t *inos,
                  const uint32_t *counts, size_t count, int64_t now_ms,
                  struct sessions_freed *freed);
/* Ends mount's session now (its mount unmounts); frees as sessions_hold. */
int sessions_end(struct sessions *sessions, uint64_t mount, struct sessions_freed *freed);
/*
 * Ends every session whose lease ran out at now_ms (the anonymous one
 * never does); *ended counts them and *dropped their opens. Inodes left
 * with no open go to *freed. 0 or -ENOMEM (*freed incomplete: the orphans
 * not listed are deleted at meta's next start).
 */
int sessions_expire(struct sessions *sessions, int64_t now_ms, struct sessions_freed *freed,
                    size_t *ended, uint64_t *dropped);

#endif
