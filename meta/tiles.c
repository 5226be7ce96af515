/*
 * @file tiles.c
 * See tiles.h. Values are little-endian like the wire: u32 node, u64 version,
 * u32 flags (absent in records older than the flags).
 */
#include "tiles.h"

#include "copies.h"
#include "garbage.h"
#include "log.h"
#include "proto.h"

#include <errno.h>

#define TILES_KEY_BYTES 16
#define TILES_VALUE_BYTES 16
#define TILES_OLD_VALUE_BYTES 12

static void tiles_key(uint8_t key[TILES_KEY_BYTES], uint64_t ino, uint64_t tile)
{
    store_be64_put(key, ino);
    store_be64_put(key + 8, tile);
}

static int tiles_decode(const MDB_val *value, struct tiles_entry *entry)
{
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, value->mv_data, value->mv_size);
    entry->node = ts_cursor_u32(&cursor);
    entry->version = ts_cursor_u64(&cursor);
    entry->flags = value->mv_size == TILES_OLD_VALUE_BYTES ? 0 : ts_cursor_u32(&cursor);
    if (cursor.failed || cursor.left != 0 || entry->node == 0) {
        log_error("corrupt tile record");
        return -EIO;
    }
    return 0;
}

int tiles_get(struct store_txn *txn, uint64_t ino, uint64_t tile, struct tiles_entry *entry)
{
    uint8_t key[TILES_KEY_BYTES];
    MDB_val value;
    int err;

    tiles_key(key, ino, tile);
    err = store_get(txn, STORE_TILES, key, sizeof(key), &value);
    if (err < 0)
        return err;
    return tiles_decode(&value, entry);
}

int tiles_put(struct store_txn *txn, uint64_t ino, uint64_t tile, const struct tiles_entry *entry)
{
    uint8_t key[TILES_KEY_BYTES];
    uint8_t value[TILES_VALUE_BYTES];
    struct ts_writer writer;

    tiles_key(key, ino, tile);
    ts_writer_init(&writer, value, sizeof(value));
    ts_writer_u32(&writer, entry->node);
    ts_writer_u64(&writer, entry->version);
    ts_writer_u32(&writer, entry->flags);
    return store_put(txn, STORE_TILES, key, sizeof(key), value, sizeof(value));
}

int tiles_drop_from(struct store_txn *txn, uint64_t ino, uint64_t first_tile, uint64_t *dropped)
{
    return tiles_drop_range(txn, ino, first_tile, UINT64_MAX, dropped);
}

int tiles_drop_range(struct store_txn *txn, uint64_t ino, uint64_t first_tile, uint64_t last_tile,
                     uint64_t *dropped)
{
    uint8_t start[TILES_KEY_BYTES];
    MDB_cursor *cursor;
    MDB_val key;
    MDB_val value;
    uint64_t count = 0;
    int err;

    err = store_cursor(txn, STORE_TILES, &cursor);
    if (err < 0)
        return err;
    tiles_key(start, ino, first_tile);
    /*
     * Re-seek after every delete instead of stepping: simple, and immune to
     * where LMDB leaves a cursor after mdb_cursor_del.
     */
    for (;;) {
        struct tiles_entry entry;
        struct garbage_record garbage;
        key.mv_data = start;
        key.mv_size = sizeof(start);
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE));
        if (err < 0)
            break;
        if (key.mv_size != TILES_KEY_BYTES || store_be64_get(key.mv_data) != ino ||
            store_be64_get((const uint8_t *)key.mv_data + 8) > last_tile)
            break;
        err = tiles_decode(&value, &entry);
        if (err < 0)
            break;
        garbage.node = entry.node;
        garbage.ino = ino;
        garbage.tile = store_be64_get((const uint8_t *)key.mv_data + 8);
        garbage.version = entry.version;
        err = store_error(txn->store, mdb_cursor_del(cursor, 0));
        if (err == 0)
            err = garbage_add(txn, &garbage);
        if (err < 0)
            break;
        count++;
    }
    mdb_cursor_close(cursor);
    if (err == -ENOENT)
        err = 0;
    /* A copy never outlives its primary. */
    if (err == 0)
        err = copies_drop(txn, ino, first_tile, last_tile, NULL);
    if (dropped)
        *dropped = count;
    return err;
}
