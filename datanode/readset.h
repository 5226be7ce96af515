/*
 * @file readset.h
 * The distinct tiles a datanode has read, with how often and how many
 * bytes: what NODE_STATS reports, so that a test or a benchmark can tell
 * which tiles a workload touched. Bounded: past its capacity, new tiles
 * are only counted as dropped. Not thread-safe: callers hold the handlers'
 * lock (nodehandlers.h).
 */
#ifndef TESSERA_DATANODE_READSET_H
#define TESSERA_DATANODE_READSET_H

#include <stddef.h>
#include <stdint.h>

struct readset_entry {
    uint64_t ino;
    uint64_t tile;
    uint64_t reads;
    uint64_t bytes;
};

struct readset;

/* A set for up to cap (>= 1) distinct tiles. 0, -EINVAL or -ENOMEM. */
int readset_new(size_t cap, struct readset **setp);
/* Accepts NULL; clears *setp. */
void readset_destroy(struct readset **setp);

/* Counts one read of `bytes` bytes of tile (ino, tile). */
void readset_add(struct readset *set, uint64_t ino, uint64_t tile, uint64_t bytes);

/* The tiles, in first-read order; *count gets their number. Valid until the next add or clear. */
const struct readset_entry *readset_entries(const struct readset *set, size_t *count);
/* Reads of tiles that found the set full (not in the entries; a tile read
 * twice then counts twice). */
uint64_t readset_dropped(const struct readset *set);

/* Forgets everything. */
void readset_clear(struct readset *set);

#endif
