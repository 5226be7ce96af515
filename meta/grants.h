/*
 * @file grants.h
 * Inode numbers granted to a mount, which it gives the files it creates
 * before meta has them (DIR_LEASE INODES, CREATE_MANY in proto.h). A grant
 * is a range of numbers and of generations taken from the store's counters
 * in one transaction, kept in the store so that creates a mount sends after
 * a restart of meta are still accepted. CREATE_MANY refuses a number whose
 * inode exists (a create sent twice). Ranges are not deleted: a mount that
 * goes away leaves at most one range of unused numbers, 28 bytes.
 */
#ifndef TESSERA_META_GRANTS_H
#define TESSERA_META_GRANTS_H

#include "store.h"

#include <stdint.h>

/*
 * Grants count (>= 1) inode numbers to mount: *first_ino.. with
 * generations *first_generation... 0 or a negative errno.
 */
int grants_take(struct store_txn *txn, uint64_t mount, uint32_t count, uint64_t *first_ino,
                uint64_t *first_generation);
/*
 * Whether ino was granted to mount: 0 with its generation, -EPERM if it
 * was not (or to another mount), or another negative errno.
 */
int grants_check(struct store_txn *txn, uint64_t mount, uint64_t ino, uint64_t *generation);

#endif
