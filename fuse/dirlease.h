/*
 * @file dirlease.h
 * Creates answered before meta has them, under directory leases (CephFS's
 * asynchronous creates): one meta round trip per create was most of what
 * a create cost (a `tar x`, `cp -r` of small files, a job writing one
 * output file per rank).
 *
 * After DIRLEASE_STREAK creates in a row in one directory went to meta,
 * the mount asks meta for a lease on it (DIR_LEASE in proto.h). While the
 * mount holds it no other mount or tool can read the directory or add
 * names to it (meta makes them wait and asks for the lease back), so a name
 * this mount learned is absent since the grant stays absent: a create of
 * a name that a window fetched since then says is absent (dentcache.h)
 * cannot fail. Such a create is answered at once with an inode number meta
 * granted the mount and the attributes meta said a new file there gets,
 * and queued (nsqueue.h): meta makes it with that number and those times.
 *
 * A thread renews every lease each DIRLEASE_RENEW_MS. A lease meta wants
 * back, or not used for DIRLEASE_IDLE_MS, stops taking creates; once the
 * queue has sent the creates made under it, it is returned. The mount
 * uses a lease only while it is surely still valid at meta: until the
 * last renewal's send time plus the lease time less DIRLEASE_MARGIN_MS.
 * Thread-safe.
 */
#ifndef TESSERA_DIRLEASE_H
#define TESSERA_DIRLEASE_H

#include "dentcache.h"
#include "metaclient.h"
#include "proto.h"

#include <stdint.h>

#define DIRLEASE_MAX 8           /* directories leased at a time */
#define DIRLEASE_STREAK 3        /* creates in a row in one directory before a lease */
#define DIRLEASE_RENEW_MS 50     /* how often leases are renewed (and recalls seen) */
#define DIRLEASE_IDLE_MS 1000    /* a lease unused this long is returned */
#define DIRLEASE_MARGIN_MS 1000  /* used only while this much of it surely remains */
#define DIRLEASE_INODES 256      /* inode numbers asked for at a time */

struct dirlease;

/*
 * Leases through meta (whose changes must be queued:
 * metaclient_defer_unlinks()), resetting dentries' knowledge of a
 * directory when its lease is granted. NULL on failure.
 */
struct dirlease *dirlease_new(struct metaclient *meta, struct dentcache *dentries);
/* Returns every lease (after its creates are sent) and frees; accepts NULL. */
void dirlease_destroy(struct dirlease **leasesp);

/*
 * A create in parent went to meta: counts the streak, and asks for the
 * lease when it is long enough (one round trip, on the caller's thread).
 */
void dirlease_note_create(struct dirlease *leases, uint64_t parent);

/*
 * Answers the create of regular file `name` in parent under its lease:
 * TS_OK with *attr (the new file, open once in meta when it gets there),
 * the create queued; otherwise a status, nothing done, and the caller
 * creates through meta. Only a name that a window fetched since the grant
 * says is absent (dentcache_absent) is created; the caller is the only one
 * creating it (the kernel holds the directory's lock).
 */
int dirlease_create(struct dirlease *leases, uint64_t parent, const char *name, uint32_t mode,
                    uint32_t uid, uint32_t gid, struct ts_attr *attr);

#endif
