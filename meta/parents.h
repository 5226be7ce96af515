/*
 * @file parents.h
 * The `parents` table: for every inode, the directories that hold an
 * entry naming it, so meta can tell whether an inode lies under a subtree
 * (subtree.h) as MooseFS's master does with its parent lists. Key: u64 BE
 * child + u64 BE parent; value: u32 LE count of the entries of that parent
 * naming the child (a file with two names in one directory counts 2).
 * A directory has exactly one row, a file one per directory it is linked
 * from; the root has none, and neither has an orphan (an unlinked inode
 * kept while open).
 *
 * dirents.c keeps the table in step with every entry it puts, overwrites
 * or deletes, so no handler maintains it by hand. A store made before the
 * table existed gets it on open (parents_ensure()), built from the
 * dirents table in one transaction.
 */
#ifndef TESSERA_META_PARENTS_H
#define TESSERA_META_PARENTS_H

#include "store.h"

#include <stdint.h>

/* One more entry of parent naming child. 0 or a negative errno. */
int parents_add(struct store_txn *txn, uint64_t child, uint64_t parent);
/* One entry fewer (the row goes at 0; a missing row is no error). 0 or a negative errno. */
int parents_remove(struct store_txn *txn, uint64_t child, uint64_t parent);
/* Deletes every row of child (the inode is deleted). 0 or a negative errno. */
int parents_delete_all(struct store_txn *txn, uint64_t child);

/*
 * Calls visit(arg, parent, count) for each parent of child in parent
 * order; visit returns 0 to go on, a positive value to stop (returned), or
 * a negative errno (returned). 0 at the end, or a negative errno.
 */
typedef int (*parents_visit_fn)(void *arg, uint64_t parent, uint32_t count);
int parents_scan(struct store_txn *txn, uint64_t child, parents_visit_fn visit, void *arg);

/*
 * Builds the table from the dirents table when the store does not say it
 * has one yet (a store from before it), then records that it has: a
 * one-time walk. *built tells whether it ran. 0 or a negative errno.
 */
int parents_ensure(struct store_txn *txn, bool *built);

#endif
