/*
 * @file dentcache.h
 * Statahead: the mount's cache of directory windows, so that the LOOKUPs
 * of a directory walk (stat of every file, ls -l, rm of every file) and
 * the negative LOOKUP that the kernel sends before each create are answered
 * locally instead of one meta round trip each (Lustre's statahead; NFS's
 * READDIRPLUS).
 *
 * A window of directory D is one READDIRPLUS reply: the entries of D with
 * their attributes from the name `low` on, up to `high` (or to the end of
 * D when the reply said done). It proves, as of the moment it was asked
 * for, which names in [low, high] exist and which do not, so it answers
 * both positive and negative lookups. A window is fresh for the attribute
 * timeout (--attr-timeout) from the moment it was asked for: the same
 * staleness the kernel's own entry and attribute caches already allow for
 * other mounts' changes; the timeouts handed to the kernel are what is left
 * of that, so the two caches together never exceed it.
 *
 * This mount's own changes never leave it stale: every change the mount
 * makes is reported here once meta has done it (dentcache_added, _removed,
 * _renamed, _changed), which updates the window (a
 * created name is inserted, an unlinked one removed) and records the inodes
 * whose attributes changed. Each window entry remembers the sequence number
 * of the moment its attributes were asked for; an entry whose inode changed
 * after that is not trusted (a LOOKUP goes to meta), and a window fetched
 * across a change of its directory is not installed.
 *
 * When to fetch: a directory gets a window when a readdir of it was seen
 * (dentcache_walk_hint) or when lookups in it that miss come in increasing
 * name order (DENTCACHE_STREAK of them; a name asked again, as an rm's
 * LOOKUP and then its unlink do, neither counts nor breaks the streak);
 * the size of the next window
 * doubles while windows are used and falls back when they are not.
 * Other lookups go to meta as before. A handful of directories
 * (DENTCACHE_DIRS) have windows at a time, the least recently used giving
 * way. All functions are thread-safe (one mutex, never held across a
 * request to meta).
 */
#ifndef TESSERA_DENTCACHE_H
#define TESSERA_DENTCACHE_H

#include "metaclient.h"
#include "proto.h"

#include <stdbool.h>
#include <stdint.h>

#define DENTCACHE_DIRS 64      /* directories with a window at a time */
#define DENTCACHE_STREAK 3     /* increasing misses that start a statahead */
#define DENTCACHE_MIN_FETCH 32 /* entries in the first window of a walk */

enum dentcache_answer {
    DENTCACHE_MISS = 0, /* not known: ask meta (see the fetch advice) */
    DENTCACHE_FOUND,    /* the name exists: *attr */
    DENTCACHE_ABSENT,   /* the name does not exist */
};

/*
 * What a miss should do. max_entries > 0: fetch a window of that many
 * entries of `parent` from the looked-up name on (READDIRPLUS, inclusive)
 * and hand it to dentcache_install(); 0: a plain LOOKUP.
 */
struct dentcache_fetch {
    uint64_t parent;
    uint64_t ticket; /* sequence number when the fetch was decided */
    double started;  /* the clock then */
    uint32_t max_entries;
};

/* Counters, for tests and the log. */
struct dentcache_stats {
    uint64_t found;     /* positive lookups answered */
    uint64_t absent;    /* negative lookups answered */
    uint64_t misses;    /* lookups left to meta */
    uint64_t fetches;   /* windows advised */
    uint64_t installed; /* windows installed */
    uint64_t discarded; /* windows fetched across a change, not installed */
    uint64_t dir_attrs; /* getattrs answered from kept directory attributes */
    uint64_t file_attrs; /* getattrs answered from kept setattr replies */
};

/* Seconds on a monotonic clock; tests pass their own. */
typedef double (*dentcache_clock_fn)(void);

struct dentcache;

/*
 * A cache whose windows stay fresh timeout_s seconds; a walk fetches
 * windows of up to max_window entries (the caller's READDIRPLUS batch; 0
 * turns statahead off). clock NULL: CLOCK_MONOTONIC. Returns NULL without
 * memory. With timeout_s <= 0 or max_window 0 every lookup is a miss
 * without advice: the cache is off.
 */
struct dentcache *dentcache_new(double timeout_s, uint32_t max_window, dentcache_clock_fn clock);
void dentcache_destroy(struct dentcache **cachep);

/*
 * Answers the lookup of name in parent from a fresh window. FOUND fills
 * *attr; FOUND and ABSENT set *timeout_s to the seconds the answer may be
 * cached by the kernel. MISS fills *fetch (always; see its comment).
 */
enum dentcache_answer dentcache_lookup(struct dentcache *cache, uint64_t parent, const char *name,
                                       struct ts_attr *attr, double *timeout_s,
                                       struct dentcache_fetch *fetch);

/*
 * What a fresh window says of name in parent, without counting it as a
 * lookup or starting a walk: true with *attr if the name is there.
 */
bool dentcache_peek(struct dentcache *cache, uint64_t parent, const char *name,
                    struct ts_attr *attr);
/*
 * Whether a fresh window says that name does not exist in parent, without
 * counting it as a lookup.
 */
bool dentcache_absent(struct dentcache *cache, uint64_t parent, const char *name);
/*
 * Forgets dir's window, and any being fetched, keeping its attributes:
 * what this mount knows of dir's names from before a lease on it was
 * granted (dirlease.h) may be stale, what it learns after may not.
 */
void dentcache_dir_reset(struct dentcache *cache, uint64_t dir);
/*
 * Installs the window fetched as `fetch` advised: entries (count, in name
 * order, none before `from`) of READDIRPLUS(parent, from, inclusive), done
 * as the reply said. Returns the seconds the window stays fresh, or 0 when
 * it was not installed (the directory changed here meanwhile, or the
 * answer is already too old); the caller may answer its own lookup from
 * the entries either way.
 */
double dentcache_install(struct dentcache *cache, const struct dentcache_fetch *fetch,
                         const char *from, const struct meta_direntplus *entries, uint32_t count,
                         bool done);

/* A readdir of dir was seen: its next missed lookup fetches a window. */
void dentcache_walk_hint(struct dentcache *cache, uint64_t dir);

/* Taken just before a namespace change is sent to meta. */
struct dentcache_ticket {
    uint64_t seq;
    double started;
};
struct dentcache_ticket dentcache_ticket(struct dentcache *cache);

/*
 * Directory dir was made by this mount with a mkdir asked after `ticket`:
 * it is known empty, as a window fetched then would say, so the lookups
 * of the names about to be created in it (`tar x`, `cp -r`, `git
 * checkout`) need no round trip. Another mount adding names meanwhile is
 * seen as with any window: once it expires.
 */
void dentcache_dir_made(struct dentcache *cache, uint64_t dir, struct dentcache_ticket ticket);

/*
 * This mount's changes, reported after meta has done them and before the
 * kernel is answered.
 * added: name in parent now names attr->ino (create, mknod, mkdir,
 * symlink, link); removed: name is gone from parent (unlink, rmdir);
 * renamed: rename(2) of any kind. dirs (may be NULL): the changed
 * directories' attributes as meta gave them right after the change (asked
 * for with it, after `ticket` was taken); they are kept for
 * dentcache_getattr() unless another change of the same directory was
 * reported in the meantime (then they may not be the latest).
 * changed: the attributes of ino may have changed (setattr, xattrs,
 * truncation; flush, fsync and release, which commit written data).
 */
void dentcache_added(struct dentcache *cache, uint64_t parent, const char *name,
                     const struct ts_attr *attr, const struct metaclient_dirs *dirs,
                     struct dentcache_ticket ticket);
void dentcache_removed(struct dentcache *cache, uint64_t parent, const char *name,
                       const struct metaclient_dirs *dirs, struct dentcache_ticket ticket);
void dentcache_renamed(struct dentcache *cache, uint64_t parent, const char *name,
                       uint64_t new_parent, const char *new_name,
                       const struct metaclient_dirs *dirs, struct dentcache_ticket ticket);
void dentcache_changed(struct dentcache *cache, uint64_t ino);
/*
 * An unlink of a file answered before meta has done it (nsqueue.h): noted
 * as removed, and the parent's kept attributes, if any, stay kept with
 * mtime and ctime set to now, so that the getattr the kernel sends next
 * (to check permissions for the next unlink) needs no round trip.
 */
void dentcache_unlinked_early(struct dentcache *cache, uint64_t parent, const char *name,
                              struct dentcache_ticket ticket);

/*
 * A setattr of attr->ino that meta has just answered with attr, before the
 * kernel is answered: noted as a change (dentcache_changed), and attr kept
 * for dentcache_getattr(). The kernel asks for a file's attributes again
 * right after a chown (to clear set-id bits): `tar` paid a round trip per
 * file for it. No ticket is needed: the kernel holds the inode's lock for
 * the whole setattr, and the file's writes and commits here wait on its
 * lock (datapath_setattr), so nothing of this mount changed it since.
 */
void dentcache_attr_set(struct dentcache *cache, const struct ts_attr *attr);

/*
 * The attributes of directory ino kept from this mount's last change to
 * it, or of a file from its last setattr here, if still fresh and trusted:
 * true with *attr and *timeout_s (what is left of the timeout). The kernel
 * asks for them right after each change (it invalidates a changed
 * directory's attributes), so a create or an unlink then costs one round
 * trip, not two.
 */
bool dentcache_getattr(struct dentcache *cache, uint64_t ino, struct ts_attr *attr,
                       double *timeout_s);
/*
 * Whether dir's attributes are kept and current. If so, an entry added to
 * it needs no fetch of them: dentcache_added() with no dirs derives them
 * from the new entry's ctime (meta stamps both with one time).
 */
bool dentcache_dir_attr_known(struct dentcache *cache, uint64_t dir);

void dentcache_stats(struct dentcache *cache, struct dentcache_stats *stats);

#endif
