/*
 * @file journal.h
 * The `journal` table: relocations in progress (proto.h "Relocation
 * journal"; DESIGN.md "Profiles and the librarian"). MOVE_BEGIN writes an
 * entry (TS_MOVE_BEGUN); the first MOVE_COMMIT switches the map and marks
 * it TS_MOVE_COMMITTED; the second one (after the old holder's file was
 * retired) or MOVE_ABORT removes it. An entry outlives a restart of meta
 * (LMDB) and of the tool that started it, which finds it again with
 * MOVE_LIST and resumes, finishes or aborts it.
 *
 * Key: u64 BE ino + u64 BE tile: at most one entry per tile, and MOVE_LIST
 * pages in (ino, tile) order. Value, little-endian: u32 kind, u32
 * from_node, u32 to_node, u64 version, u64 new_version, i64 started_sec,
 * u32 state.
 *
 * A BEGUN entry owns its target file (to_node, new_version): whoever
 * removes it without committing it queues that file in the garbage table
 * (journal_abort()), since the target may hold a pulled copy; a copy's
 * BEGUN entry owns the source's new_version name too (a relink may have
 * made it: proto.h, "Relocation journal"). A COMMITTED
 * entry owns nothing: the target file is in the tile map, and the old
 * holder's file was queued for deletion by the commit.
 */
#ifndef TESSERA_META_JOURNAL_H
#define TESSERA_META_JOURNAL_H

#include "proto.h"
#include "store.h"

#include <stdint.h>

struct journal_entry {
    uint64_t ino;
    uint64_t tile;
    uint32_t kind;        /* enum ts_move_kind */
    uint32_t from_node;   /* the holder that gives the tile (or loses it) */
    uint32_t to_node;     /* the target; 0 for a drop */
    uint64_t version;     /* from_node's file of the tile */
    uint64_t new_version; /* to_node's new file; 0 for a drop */
    int64_t started_sec;  /* wall clock at MOVE_BEGIN */
    uint32_t state;       /* enum ts_move_state */
};

/* The entry of (ino, tile): 0, -ENOENT if none, or a negative errno. */
int journal_get(struct store_txn *txn, uint64_t ino, uint64_t tile, struct journal_entry *entry);
/* Writes entry under (entry->ino, entry->tile). 0 or a negative errno. */
int journal_put(struct store_txn *txn, const struct journal_entry *entry);
/* Removes the entry (a COMMITTED one, finished). 0, -ENOENT, or a negative errno. */
int journal_delete(struct store_txn *txn, uint64_t ino, uint64_t tile);
/*
 * Removes the entry without committing it, and queues its target file
 * (to_node, new_version), if it names one, for deletion, and for a copy
 * the source's (from_node, new_version) too; a COMMITTED entry is only
 * removed. 0 or a negative errno.
 */
int journal_abort(struct store_txn *txn, const struct journal_entry *entry);

/*
 * Calls visit for each entry whose key comes after (after_ino, after_tile),
 * in key order. visit returns 0 to go on, > 0 to stop, < 0 to fail.
 * Returns 0 at the end of the table, visit's positive value when it
 * stopped, or a negative errno. visit must not change the table.
 */
typedef int (*journal_visit_fn)(void *arg, const struct journal_entry *entry);
int journal_scan_after(struct store_txn *txn, uint64_t after_ino, uint64_t after_tile,
                       journal_visit_fn visit, void *arg);

/* Removes (journal_abort()) every entry of ino: the inode is being deleted. */
int journal_drop_inode(struct store_txn *txn, uint64_t ino);

/* Appends entry as a MOVE_LIST record (TS_REC_MOVE). */
void journal_write_record(struct ts_writer *writer, const struct journal_entry *entry);

#endif
