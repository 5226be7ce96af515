/*
 * @file dirents.h
 * The `dirents` table: directory entries. Key: u64 BE parent ino + the name
 * bytes, so one directory's entries are one cursor range sorted by name in
 * byte order (shorter first when one name is a prefix of another), and
 * readdir is a range scan that restarts after the last name it returned.
 * Value: u64 child ino, u32 the child's type bits (S_IFMT part of its mode).
 * Names are checked by the caller (1..TS_MAX_NAME bytes).
 */
#ifndef TESSERA_META_DIRENTS_H
#define TESSERA_META_DIRENTS_H

#include "proto.h"
#include "store.h"

#include <stdint.h>

struct dirents_entry {
    uint64_t ino;
    uint32_t mode; /* type bits only */
};

/* 0, -ENOENT if the name is not in the directory, or a negative errno. */
int dirents_get(struct store_txn *txn, uint64_t parent, struct ts_str name,
                struct dirents_entry *entry);
/* Adds or overwrites an entry. 0 or a negative errno. */
int dirents_put(struct store_txn *txn, uint64_t parent, struct ts_str name,
                const struct dirents_entry *entry);
/* 0, -ENOENT if missing, or a negative errno. */
int dirents_delete(struct store_txn *txn, uint64_t parent, struct ts_str name);
/* Sets *empty to whether directory `dir` has no entries. 0 or a negative errno. */
int dirents_is_empty(struct store_txn *txn, uint64_t dir, bool *empty);

/*
 * Called for each entry of a scan; returns 0 to go on, 1 to stop before
 * this entry (it is not consumed), or a negative errno to fail the scan.
 */
typedef int (*dirents_visit_fn)(void *arg, struct ts_str name, const struct dirents_entry *entry);
/*
 * Visits the entries of `dir` whose names sort strictly after `after`
 * (empty = from the first), in order. Returns 0 when the directory was
 * exhausted, 1 when the visitor stopped, or a negative errno.
 */
int dirents_scan(struct store_txn *txn, uint64_t dir, struct ts_str after, dirents_visit_fn visit,
                 void *arg);
/* As dirents_scan(), from `from` itself when it exists (with inclusive). */
int dirents_scan_from(struct store_txn *txn, uint64_t dir, struct ts_str from, bool inclusive,
                      dirents_visit_fn visit, void *arg);

#endif
