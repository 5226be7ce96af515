/*
 * @file subtree.h
 * Whether an inode lies under a directory, found by walking the parents
 * table (parents.h) up to that directory or to the root, as MooseFS's
 * master does for a session whose export names a subtree. A file with
 * several links is under the directory when any of its links is (a hard
 * link from inside makes a file linked outside too reachable inside, as
 * in MooseFS). The walk is bounded (SUBTREE_STEPS_MAX parent steps in all)
 * so a damaged table that loops cannot stall meta's one thread.
 */
#ifndef TESSERA_META_SUBTREE_H
#define TESSERA_META_SUBTREE_H

#include "store.h"

#include <stdint.h>

#define SUBTREE_STEPS_MAX 4096u

enum subtree_place {
    SUBTREE_UNDER,    /* top itself, or an inode with a link below it */
    SUBTREE_OUTSIDE,  /* every link of the inode leads elsewhere (or it is the root) */
    SUBTREE_DETACHED, /* no link at all: an orphan kept while open, or no such inode */
};

/*
 * Where inode ino is with respect to directory top. 0, -ELOOP when the
 * walk took more than SUBTREE_STEPS_MAX steps, or a negative errno.
 */
int subtree_place(struct store_txn *txn, uint64_t top, uint64_t ino, enum subtree_place *place);

/*
 * The directory an absolute path names, resolved from the root through
 * the dirents table ("/" is the root). 0, -ENOENT, -ENOTDIR (a component
 * is not a directory), -EINVAL (not absolute, or a component too long),
 * or a negative errno.
 */
int subtree_resolve(struct store_txn *txn, const char *path, uint64_t *ino);

#endif
