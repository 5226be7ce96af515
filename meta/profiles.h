/*
 * @file profiles.h
 * The `profiles` table: how each machine accessed each tile of a profiled
 * file (DESIGN.md "Profiles and the librarian"). Clients count and flush
 * every second (PROFILE_RECORD); meta adds their counts here, and the
 * librarian reads them back (PROFILE_GET) to plan moves and copies.
 *
 * Key: u64 BE ino + u64 BE tile + the machine name's bytes (1 to
 * PROFILES_MAX_MACHINE), so a file's counts are one cursor range in
 * (tile, machine) order. Value: six u64 little-endian, struct
 * profiles_counts in order. Counts saturate at UINT64_MAX rather than wrap.
 */
#ifndef TESSERA_META_PROFILES_H
#define TESSERA_META_PROFILES_H

#include "proto.h"
#include "store.h"

#include <stdint.h>

#define PROFILES_MAX_MACHINE 255 /* bytes of a machine name */

struct profiles_counts {
    uint64_t reads;
    uint64_t writes;
    uint64_t bytes_read;
    uint64_t bytes_written;
    uint64_t local_bytes;     /* bytes served by a datanode on that machine */
    uint64_t first_access_ns; /* wall clock; 0 = not known */
};

/*
 * Adds counts to (ino, tile, machine): sums, and the earliest non-zero
 * first access. machine is 1..PROFILES_MAX_MACHINE bytes (else -EINVAL).
 * 0 or a negative errno.
 */
int profiles_add(struct store_txn *txn, uint64_t ino, uint64_t tile, struct ts_str machine,
                 const struct profiles_counts *counts);

/*
 * Calls visit for each record of ino with tile >= first_tile, in (tile,
 * machine) order; machine points into the map (valid for the
 * transaction). visit returns 0 to go on, > 0 to stop, < 0 to fail.
 * Returns 0 at the end of ino's records, visit's positive value when it
 * stopped, or a negative errno. visit must not change the table.
 */
typedef int (*profiles_visit_fn)(void *arg, uint64_t tile, struct ts_str machine,
                                 const struct profiles_counts *counts);
int profiles_scan(struct store_txn *txn, uint64_t ino, uint64_t first_tile, profiles_visit_fn visit,
                  void *arg);

/* Deletes every count of ino; *deleted (may be NULL) counts the records. 0 or a negative errno. */
int profiles_delete_all(struct store_txn *txn, uint64_t ino, uint64_t *deleted);

#endif
