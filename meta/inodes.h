/*
 * @file inodes.h
 * The `inodes` table: ino (u64 BE) -> the inode record, and the inode's
 * lifecycle: creating one with a fresh ino and generation, deleting one with
 * everything that hangs off it (tiles and copies into garbage, relocation
 * journal entries, access profile, xattrs), and the sweep of orphans
 * (nlink 0) that outlived their last open, run once after a start.
 */
#ifndef TESSERA_META_INODES_H
#define TESSERA_META_INODES_H

#include "layout.h"
#include "proto.h"
#include "store.h"

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct inodes_record {
    struct ts_attr attr;      /* attr.blocks is derived (inodes_attr), not stored */
    uint64_t parent;          /* directories: the directory that holds it (root: itself) */
    uint64_t tiles_allocated; /* tile records of this inode in the tiles table */
    uint32_t target_len;      /* symlinks: bytes of target */
    char target[TS_MAX_SYMLINK + 1];
};

/* 0, -ENOENT if no such inode, or a negative errno (-EIO for a corrupt record). */
int inodes_get(struct store_txn *txn, uint64_t ino, struct inodes_record *record);
/*
 * Stores the record under record->attr.ino, its change counter one more
 * than it was (also in *record, for the reply). 0 or a negative errno.
 */
int inodes_put(struct store_txn *txn, struct inodes_record *record);
/* Fills a new inode as inodes_new() does, with the ino and generation given. */
void inodes_init(struct inodes_record *record, uint64_t ino, uint64_t generation, uint32_t mode,
                 uint32_t uid, uint32_t gid, struct timespec now);
/*
 * Fills a new inode: a fresh ino and generation, the given mode and owner,
 * all times `now`, nlink 1 (2 for a directory), size 4096 for a directory,
 * tile_bytes TILE_DEFAULT_BYTES for a regular file. Does not store it.
 * 0 or a negative errno.
 */
int inodes_new(struct store_txn *txn, uint32_t mode, uint32_t uid, uint32_t gid,
               struct timespec now, struct inodes_record *record);
/* Writes the root directory (ino TS_ROOT_INO) if it does not exist yet. */
int inodes_create_root(struct store_txn *txn, struct timespec now);
/*
 * Deletes inode ino for good: its tiles and all their replicas go to the
 * garbage table, its relocations in progress are aborted (their target
 * files go to garbage too), its access profile, xattrs and record are
 * removed. 0 or a negative errno.
 */
int inodes_delete(struct store_txn *txn, uint64_t ino);
/*
 * Deletes every inode with nlink 0 for which keep(ctx, ino) is false (keep
 * NULL: every one); *reaped counts them. 0 or a negative errno.
 */
typedef bool (*inodes_keep_fn)(void *ctx, uint64_t ino);
int inodes_reap_orphans(struct store_txn *txn, inodes_keep_fn keep, void *ctx, uint64_t *reaped);
/* Number of inodes. */
int inodes_count(struct store_txn *txn, uint64_t *count);
/*
 * A new inode takes the layout of the directory it is created in: a
 * regular file gets the directory's tile size, copies and placement (the
 * defaults where the directory has none), a subdirectory gets the
 * directory's values as they are (so "not set" stays "not set"). Other
 * types, and a parent that is not a directory, leave the record alone.
 */
void inodes_inherit_layout(struct inodes_record *record, const struct inodes_record *parent);
/*
 * The effective layout of an inode: its own values, with the defaults
 * filled in (tile TILE_DEFAULT_BYTES, the cluster's copies and placement, `defaults`). `given`
 * is 0.
 */
void inodes_layout(const struct inodes_record *record, const struct layout_defaults *defaults,
                   struct layout *layout);
/*
 * The attributes as they travel: the record's attr with blocks = bytes held
 * by allocated tiles, capped at the size, in 512-byte units, and the
 * effective layout (inodes_layout(); tile_bytes stays 0 for inodes that
 * hold no data: symlinks and special files).
 */
void inodes_attr(const struct inodes_record *record, const struct layout_defaults *defaults,
                 struct ts_attr *attr);

#endif
