/*
 * @file opens.h
 * How many times each inode is open, in memory only. An inode whose last
 * link goes away while it is open stays in the store (an orphan, nlink 0)
 * until its count drops to zero, so an unlinked but open file stays
 * readable. Counts are not persisted: after a restart no inode is open, and
 * the orphans left from before are deleted at start.
 */
#ifndef TESSERA_META_OPENS_H
#define TESSERA_META_OPENS_H

#include <stdint.h>

struct opens;

/* NULL when out of memory. */
struct opens *opens_new(void);
void opens_destroy(struct opens **opensp);
/* Counts one more open of ino. 0 or -ENOMEM. */
int opens_add(struct opens *opens, uint64_t ino);
/* Counts one release (never below zero); returns how many opens remain. */
uint32_t opens_remove(struct opens *opens, uint64_t ino);
/* How many times ino is open. */
uint32_t opens_count(const struct opens *opens, uint64_t ino);

#endif
