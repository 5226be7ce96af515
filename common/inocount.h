/*
 * @file inocount.h
 * A counter per inode number, in memory: how many times something holds
 * each ino (never 0). meta counts the opens of each inode with it, in total
 * and per mount session (meta/sessions.h); the mount counts the opens it
 * holds in meta (fuse/metaclient.c). Not thread-safe: the owner locks.
 */
#ifndef TESSERA_INOCOUNT_H
#define TESSERA_INOCOUNT_H

#include <stddef.h>
#include <stdint.h>

struct inocount;

/* NULL when out of memory. */
struct inocount *inocount_new(void);
/* Accepts NULL, clears *mapp. */
void inocount_destroy(struct inocount **mapp);
/* Adds n (>= 1) to ino's count (saturating). 0, -EINVAL (ino 0) or -ENOMEM. */
int inocount_add(struct inocount *map, uint64_t ino, uint32_t n);
/* Takes up to n from ino's count (never below zero); returns what remains. */
uint32_t inocount_sub(struct inocount *map, uint64_t ino, uint32_t n);
/* ino's count (0 when absent). */
uint32_t inocount_get(const struct inocount *map, uint64_t ino);
/* Inodes with a non-zero count. */
size_t inocount_size(const struct inocount *map);
/*
 * Iteration: start with *at = 0; each call gives the next ino and its
 * count and returns 1, or returns 0 at the end. The map must not change
 * during an iteration.
 */
int inocount_next(const struct inocount *map, size_t *at, uint64_t *ino, uint32_t *count);
/* Drops every count. */
void inocount_clear(struct inocount *map);

#endif
