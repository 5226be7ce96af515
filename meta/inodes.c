/*
 * @file inodes.c
 * See inodes.h. Record value, little-endian like the wire:
 *   u32 format (2), u32 mode, u32 nlink, u32 uid, u32 gid, u64 rdev,
 *   u64 size, i64+u32 atime, i64+u32 mtime, i64+u32 ctime, u64 generation,
 *   u32 tile_bytes, u64 parent, u64 tiles_allocated, [format >= 2: u32
 *   placement, u32 copies,] [format >= 3: u32 flags (TS_ATTR_*),]
 *   [format 4: u64 change,] then the symlink target (the rest of the value).
 * Records are written in format 4; format 1 records (before layouts could
 * be set) read as placement "default" and copies 0 (the cluster's default), format 1 and 2
 * records (before array files) as flags 0, records before format 4 (before
 * the change counter) as change 0. Every put adds one to the change counter
 * (ts_attr.change), so it grows with each change of the inode.
 *
 * Layout fields as stored: a regular file's tile_bytes is never 0; a
 * directory's tile_bytes is 0 until a layout is set on it; copies 0 and
 * placement 0 (TS_PLACEMENT_DEFAULT) means "the cluster's default", looked
 * up when the value is used, so changing tessera-meta --placement or --copies changes
 * every file that never chose.
 */
#include "inodes.h"

#include "journal.h"
#include "log.h"
#include "parents.h"
#include "profiles.h"
#include "tile.h"
#include "tiles.h"
#include "xattrs.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define INODES_FORMAT_V1 1
#define INODES_FORMAT_V2 2
#define INODES_FORMAT_V3 3
#define INODES_FORMAT 4
#define INODES_FIXED_BYTES 120
#define INODES_VALUE_MAX (INODES_FIXED_BYTES + TS_MAX_SYMLINK)
#define INODES_DIR_SIZE 4096

int inodes_get(struct store_txn *txn, uint64_t ino, struct inodes_record *record)
{
    uint8_t key[8];
    MDB_val value;
    struct ts_cursor cursor;
    struct ts_attr *attr = &record->attr;
    uint32_t format;
    int err;

    store_be64_put(key, ino);
    err = store_get(txn, STORE_INODES, key, sizeof(key), &value);
    if (err < 0)
        return err;
    memset(attr, 0, sizeof(*attr));
    attr->ino = ino;
    ts_cursor_init(&cursor, value.mv_data, value.mv_size);
    format = ts_cursor_u32(&cursor);
    attr->mode = ts_cursor_u32(&cursor);
    attr->nlink = ts_cursor_u32(&cursor);
    attr->uid = ts_cursor_u32(&cursor);
    attr->gid = ts_cursor_u32(&cursor);
    attr->rdev = ts_cursor_u64(&cursor);
    attr->size = ts_cursor_u64(&cursor);
    attr->atime_sec = ts_cursor_i64(&cursor);
    attr->atime_nsec = ts_cursor_u32(&cursor);
    attr->mtime_sec = ts_cursor_i64(&cursor);
    attr->mtime_nsec = ts_cursor_u32(&cursor);
    attr->ctime_sec = ts_cursor_i64(&cursor);
    attr->ctime_nsec = ts_cursor_u32(&cursor);
    attr->generation = ts_cursor_u64(&cursor);
    attr->tile_bytes = ts_cursor_u32(&cursor);
    record->parent = ts_cursor_u64(&cursor);
    record->tiles_allocated = ts_cursor_u64(&cursor);
    if (format >= INODES_FORMAT_V2) {
        attr->placement = ts_cursor_u32(&cursor);
        attr->copies = ts_cursor_u32(&cursor);
    }
    if (format >= INODES_FORMAT_V3)
        attr->flags = ts_cursor_u32(&cursor);
    if (format >= INODES_FORMAT)
        attr->change = ts_cursor_u64(&cursor);
    if (cursor.failed || format < INODES_FORMAT_V1 || format > INODES_FORMAT ||
        cursor.left > TS_MAX_SYMLINK) {
        log_error("corrupt record of inode %llu", (unsigned long long)ino);
        return -EIO;
    }
    record->target_len = (uint32_t)cursor.left;
    if (cursor.left > 0)
        memcpy(record->target, cursor.pos, cursor.left);
    record->target[record->target_len] = '\0';
    return 0;
}

int inodes_put(struct store_txn *txn, struct inodes_record *record)
{
    uint8_t key[8];
    uint8_t value[INODES_VALUE_MAX];
    struct ts_writer writer;
    struct ts_attr *attr = &record->attr;

    if (record->target_len > TS_MAX_SYMLINK)
        return -ENAMETOOLONG;
    attr->change++;
    store_be64_put(key, attr->ino);
    ts_writer_init(&writer, value, sizeof(value));
    ts_writer_u32(&writer, INODES_FORMAT);
    ts_writer_u32(&writer, attr->mode);
    ts_writer_u32(&writer, attr->nlink);
    ts_writer_u32(&writer, attr->uid);
    ts_writer_u32(&writer, attr->gid);
    ts_writer_u64(&writer, attr->rdev);
    ts_writer_u64(&writer, attr->size);
    ts_writer_i64(&writer, attr->atime_sec);
    ts_writer_u32(&writer, attr->atime_nsec);
    ts_writer_i64(&writer, attr->mtime_sec);
    ts_writer_u32(&writer, attr->mtime_nsec);
    ts_writer_i64(&writer, attr->ctime_sec);
    ts_writer_u32(&writer, attr->ctime_nsec);
    ts_writer_u64(&writer, attr->generation);
    ts_writer_u32(&writer, attr->tile_bytes);
    ts_writer_u64(&writer, record->parent);
    ts_writer_u64(&writer, record->tiles_allocated);
    ts_writer_u32(&writer, attr->placement);
    ts_writer_u32(&writer, attr->copies);
    ts_writer_u32(&writer, attr->flags);
    ts_writer_u64(&writer, attr->change);
    ts_writer_bytes(&writer, record->target, record->target_len);
    if (writer.failed)
        return -EINVAL;
    return store_put(txn, STORE_INODES, key, sizeof(key), value, writer.len);
}

void inodes_init(struct inodes_record *record, uint64_t ino, uint64_t generation, uint32_t mode,
                 uint32_t uid, uint32_t gid, struct timespec now)
{
    struct ts_attr *attr = &record->attr;
    memset(record, 0, offsetof(struct inodes_record, target));
    record->target[0] = '\0';
    attr->ino = ino;
    attr->mode = mode;
    attr->nlink = S_ISDIR(mode) ? 2 : 1;
    attr->uid = uid;
    attr->gid = gid;
    attr->size = S_ISDIR(mode) ? INODES_DIR_SIZE : 0;
    attr->atime_sec = attr->mtime_sec = attr->ctime_sec = now.tv_sec;
    attr->atime_nsec = attr->mtime_nsec = attr->ctime_nsec = (uint32_t)now.tv_nsec;
    attr->generation = generation;
    attr->tile_bytes = S_ISREG(mode) ? TILE_DEFAULT_BYTES : 0;
    attr->placement = TS_PLACEMENT_DEFAULT;
    attr->copies = 0; /* the cluster's default, looked up when used */
}

int inodes_new(struct store_txn *txn, uint32_t mode, uint32_t uid, uint32_t gid,
               struct timespec now, struct inodes_record *record)
{
    uint64_t ino;
    uint64_t generation;
    int err = store_counter_take(txn, STORE_NEXT_INO, &ino);
    if (err == 0)
        err = store_counter_take(txn, STORE_NEXT_GENERATION, &generation);
    if (err < 0)
        return err;
    inodes_init(record, ino, generation, mode, uid, gid, now);
    return 0;
}

int inodes_create_root(struct store_txn *txn, struct timespec now)
{
    struct inodes_record root;
    uint64_t generation;
    int err = inodes_get(txn, TS_ROOT_INO, &root);
    if (err != -ENOENT)
        return err;
    err = store_counter_take(txn, STORE_NEXT_GENERATION, &generation);
    if (err < 0)
        return err;
    inodes_init(&root, TS_ROOT_INO, generation, S_IFDIR | 0755, 0, 0, now);
    root.parent = TS_ROOT_INO;
    return inodes_put(txn, &root);
}

int inodes_delete(struct store_txn *txn, uint64_t ino)
{
    uint8_t key[8];
    int err = tiles_drop_from(txn, ino, 0, NULL);
    if (err == 0)
        err = journal_drop_inode(txn, ino);
    if (err == 0)
        err = profiles_delete_all(txn, ino, NULL);
    if (err == 0)
        err = xattrs_delete_all(txn, ino);
    if (err == 0) /* none are left but after a damaged store's repair: make sure */
        err = parents_delete_all(txn, ino);
    if (err < 0)
        return err;
    store_be64_put(key, ino);
    err = store_del(txn, STORE_INODES, key, sizeof(key));
    return err == -ENOENT ? 0 : err;
}

int inodes_reap_orphans(struct store_txn *txn, inodes_keep_fn keep, void *ctx, uint64_t *reaped)
{
    uint64_t *orphans = NULL;
    size_t count = 0;
    size_t cap = 0;
    MDB_cursor *cursor;
    MDB_val key;
    MDB_val value;
    int err;

    *reaped = 0;
    err = store_cursor(txn, STORE_INODES, &cursor);
    if (err < 0)
        return err;
    /* Collect first, delete after: deleting touches other tables. */
    err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_FIRST));
    while (err == 0) {
        struct ts_cursor fields;
        uint32_t nlink;
        ts_cursor_init(&fields, value.mv_data, value.mv_size);
        ts_cursor_u32(&fields); /* format */
        ts_cursor_u32(&fields); /* mode */
        nlink = ts_cursor_u32(&fields);
        if (key.mv_size == 8 && !fields.failed && nlink == 0 &&
            !(keep && keep(ctx, store_be64_get(key.mv_data)))) {
            if (count == cap) {
                size_t new_cap = cap ? cap * 2 : 64;
                uint64_t *grown = realloc(orphans, new_cap * sizeof(*grown));
                if (!grown) {
                    err = -ENOMEM;
                    break;
                }
                orphans = grown;
                cap = new_cap;
            }
            orphans[count++] = store_be64_get(key.mv_data);
        }
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_NEXT));
    }
    mdb_cursor_close(cursor);
    if (err == -ENOENT)
        err = 0;
    for (size_t i = 0; err == 0 && i < count; i++)
        err = inodes_delete(txn, orphans[i]);
    if (err == 0)
        *reaped = count;
    free(orphans);
    return err;
}

int inodes_count(struct store_txn *txn, uint64_t *count)
{
    return store_entries(txn, STORE_INODES, count);
}

void inodes_inherit_layout(struct inodes_record *record, const struct inodes_record *parent)
{
    struct ts_attr *attr = &record->attr;
    const struct ts_attr *from = &parent->attr;

    if (!S_ISDIR(from->mode))
        return;
    if (S_ISREG(attr->mode)) {
        attr->tile_bytes = from->tile_bytes ? from->tile_bytes : TILE_DEFAULT_BYTES;
        attr->copies = from->copies; /* 0: the cluster's default */
        attr->placement = from->placement;
    } else if (S_ISDIR(attr->mode)) {
        attr->tile_bytes = from->tile_bytes;
        attr->copies = from->copies;
        attr->placement = from->placement;
    }
}

void inodes_layout(const struct inodes_record *record, const struct layout_defaults *defaults,
                   struct layout *layout)
{
    const struct ts_attr *attr = &record->attr;
    memset(layout, 0, sizeof(*layout));
    layout->tile_bytes = attr->tile_bytes ? attr->tile_bytes : TILE_DEFAULT_BYTES;
    layout->copies = attr->copies ? attr->copies : defaults->copies;
    layout->placement = attr->placement ? attr->placement : defaults->placement;
}

void inodes_attr(const struct inodes_record *record, const struct layout_defaults *defaults,
                 struct ts_attr *attr)
{
    uint64_t held = record->attr.size;
    struct layout layout;
    *attr = record->attr;
    if (record->attr.tile_bytes > 0 &&
        record->tiles_allocated < UINT64_MAX / record->attr.tile_bytes &&
        record->tiles_allocated * record->attr.tile_bytes < held)
        held = record->tiles_allocated * record->attr.tile_bytes;
    if (record->attr.tile_bytes == 0)
        held = 0;
    attr->blocks = held / 512 + (held % 512 != 0);
    /* The effective layout: what new tiles (or new files, for a directory) get. */
    inodes_layout(record, defaults, &layout);
    attr->placement = layout.placement;
    attr->copies = layout.copies;
    if (S_ISREG(attr->mode) || S_ISDIR(attr->mode))
        attr->tile_bytes = layout.tile_bytes;
}
