/*
 * @file attrguard.h
 * Keeps the attributes this mount hands the kernel from ever going back in
 * time for a regular file.
 *
 * The kernel replaces a file's size with every attribute reply it takes
 * (getattr, lookup, readdirplus). Attributes reach a reply along several
 * paths of different ages: a fresh GETATTR, a statahead window fetched up to
 * the attribute timeout ago (dentcache.h), a readdirplus batch, replies
 * that meta sent in another order than they were asked for, and the mount's
 * own commits of the sizes it wrote (write-behind: a commit can land while
 * a reply is being put together from meta's older answer). A reply older
 * than one the kernel already took shrinks the file: an O_APPEND writer then
 * writes over the lines appended since, and a reader whose pages were cut
 * to the old size reads zeros where the lines are.
 *
 * Meta stamps every set of attributes with the inode's change counter
 * (ts_attr.change, NFSv4's change attribute), which grows with each change
 * of the inode. This module remembers, per regular file, the largest
 * counter this mount has handed out or committed, and refuses attributes
 * with a smaller one: the caller fetches them again from meta (fresh ones
 * cannot be older) or leaves them out. A record can go once no attributes
 * older than it can still arrive: those were fetched before the change it
 * records was made, so from no cache older than the attribute timeout and
 * no meta reply older than the meta timeout (`retention_s` covers both).
 *
 * Reads. A read the kernel sends for its page cache that comes back short
 * (the file ends there, as this mount sees it) has the kernel fill the
 * rest of the page with zeros. If a reply that grows the file reached the
 * kernel after the read was sent and before its reply, the kernel keeps
 * those zeros as the file's bytes (another mount appended meanwhile: the
 * reader sees zeros where the new lines are). So attributes with a larger
 * size than the last handed out wait for the reads of the file already on
 * their way (attrguard_read_begin/_end) to be answered; a read that starts
 * later asks meta for the size anyway when it reaches past the end it
 * knows, and finds the larger one.
 *
 * Thread-safe (one mutex, held for a hash lookup).
 */
#ifndef TESSERA_ATTRGUARD_H
#define TESSERA_ATTRGUARD_H

#include "proto.h"

#include <stdbool.h>

struct attrguard;

/* Seconds on a monotonic clock; tests pass their own. */
typedef double (*attrguard_clock_fn)(void);

/* clock NULL: CLOCK_MONOTONIC. NULL when out of memory. */
struct attrguard *attrguard_new(double retention_s, attrguard_clock_fn clock);
/* Frees the guard and clears *guardp; accepts NULL. */
void attrguard_destroy(struct attrguard **guardp);

/*
 * Whether attr may be handed to the kernel: false if attributes of the same
 * regular file with a larger change counter were handed out or committed
 * before. True records attr's counter as the latest and its size as the
 * last handed out, after waiting for the file's reads on their way if the
 * size is larger (at most retention_s). Attributes of other types, and a
 * new incarnation of an inode number (another generation), always pass.
 */
bool attrguard_admit(struct attrguard *guard, const struct ts_attr *attr);

/*
 * Records attr's counter if it is the largest seen, without a verdict:
 * meta's reply to this mount's own change of the inode.
 */
void attrguard_record(struct attrguard *guard, const struct ts_attr *attr);

/*
 * Whether attributes handed out of this regular file (within the
 * retention) are older than attr, fresh from meta: the kernel may still
 * hold them, and should be told to ask again (an open after another mount
 * changed the file: close-to-open).
 */
bool attrguard_outdated(struct attrguard *guard, const struct ts_attr *attr);

/*
 * A read of ino on its way: from before the data path decides how many
 * bytes it has (where the file ends) until its reply is written. Returns
 * false (nothing to end) when there was no memory to note it.
 */
bool attrguard_read_begin(struct attrguard *guard, uint64_t ino);
void attrguard_read_end(struct attrguard *guard, uint64_t ino);

/* Records kept now (tests). */
size_t attrguard_records(struct attrguard *guard);

#endif
