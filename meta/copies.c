/*
 * @file copies.c
 * See copies.h. The value is the copy's version, little-endian like the
 * wire (u64).
 */
#include "copies.h"

#include "garbage.h"
#include "log.h"
#include "proto.h"

#include <errno.h>

#define COPIES_KEY_BYTES 20
#define COPIES_VALUE_BYTES 8

static void copies_key(uint8_t key[COPIES_KEY_BYTES], uint64_t ino, uint64_t tile, uint32_t node)
{
    store_be64_put(key, ino);
    store_be64_put(key + 8, tile);
    store_be32_put(key + 16, node);
}

static int copies_decode(const MDB_val *key, const MDB_val *value, struct copies_entry *entry)
{
    struct ts_cursor cursor;
    if (key->mv_size != COPIES_KEY_BYTES || value->mv_size != COPIES_VALUE_BYTES) {
        log_error("corrupt copy record");
        return -EIO;
    }
    entry->tile = store_be64_get((const uint8_t *)key->mv_data + 8);
    entry->node = store_be32_get((const uint8_t *)key->mv_data + 16);
    ts_cursor_init(&cursor, value->mv_data, value->mv_size);
    entry->version = ts_cursor_u64(&cursor);
    return 0;
}

int copies_get(struct store_txn *txn, uint64_t ino, uint64_t tile, uint32_t node, uint64_t *version)
{
    uint8_t key[COPIES_KEY_BYTES];
    MDB_val value;
    struct ts_cursor cursor;
    int err;

    copies_key(key, ino, tile, node);
    err = store_get(txn, STORE_COPIES, key, sizeof(key), &value);
    if (err < 0)
        return err;
    if (value.mv_size != COPIES_VALUE_BYTES) {
        log_error("corrupt copy record of inode %llu tile %llu", (unsigned long long)ino,
                  (unsigned long long)tile);
        return -EIO;
    }
    ts_cursor_init(&cursor, value.mv_data, value.mv_size);
    *version = ts_cursor_u64(&cursor);
    return 0;
}

int copies_put(struct store_txn *txn, uint64_t ino, const struct copies_entry *entry)
{
    uint8_t key[COPIES_KEY_BYTES];
    uint8_t value[COPIES_VALUE_BYTES];
    struct ts_writer writer;

    copies_key(key, ino, entry->tile, entry->node);
    ts_writer_init(&writer, value, sizeof(value));
    ts_writer_u64(&writer, entry->version);
    return store_put(txn, STORE_COPIES, key, sizeof(key), value, sizeof(value));
}

int copies_delete(struct store_txn *txn, uint64_t ino, uint64_t tile, uint32_t node)
{
    uint8_t key[COPIES_KEY_BYTES];
    copies_key(key, ino, tile, node);
    return store_del(txn, STORE_COPIES, key, sizeof(key));
}

/* Whether a key of the table lies in ino's tiles first..last. */
static bool copies_in_range(const MDB_val *key, uint64_t ino, uint64_t last_tile)
{
    const uint8_t *bytes = key->mv_data;
    return key->mv_size == COPIES_KEY_BYTES && store_be64_get(bytes) == ino &&
           store_be64_get(bytes + 8) <= last_tile;
}

/* copies_scan() over store_scan(): the range, and the caller's visitor. */
struct copies_scan_op {
    uint64_t ino;
    uint64_t last_tile;
    copies_visit_fn visit;
    void *arg;
    bool past_range;
};

static int copies_scan_record(void *arg, const MDB_val *key, const MDB_val *value)
{
    struct copies_scan_op *op = arg;
    struct copies_entry entry;
    if (!copies_in_range(key, op->ino, op->last_tile)) {
        op->past_range = true;
        return 1;
    }
    int err = copies_decode(key, value, &entry);
    return err < 0 ? err : op->visit(op->arg, &entry);
}

int copies_scan(struct store_txn *txn, uint64_t ino, uint64_t first_tile, uint64_t last_tile,
                copies_visit_fn visit, void *arg)
{
    uint8_t start[COPIES_KEY_BYTES];
    struct copies_scan_op op = {ino, last_tile, visit, arg, false};
    copies_key(start, ino, first_tile, 0);
    int result = store_scan(txn, STORE_COPIES, start, sizeof(start), copies_scan_record, &op);
    return op.past_range ? 0 : result;
}

int copies_drop(struct store_txn *txn, uint64_t ino, uint64_t first_tile, uint64_t last_tile,
                uint64_t *dropped)
{
    uint8_t start[COPIES_KEY_BYTES];
    MDB_cursor *cursor;
    MDB_val key;
    MDB_val value;
    uint64_t count = 0;
    int err;

    err = store_cursor(txn, STORE_COPIES, &cursor);
    if (err < 0)
        return err;
    copies_key(start, ino, first_tile, 0);
    /* Re-seek after every delete, as tiles_drop_from() does. */
    for (;;) {
        struct copies_entry entry;
        struct garbage_record garbage;
        key.mv_data = start;
        key.mv_size = sizeof(start);
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE));
        if (err < 0)
            break;
        if (!copies_in_range(&key, ino, last_tile))
            break;
        err = copies_decode(&key, &value, &entry);
        if (err < 0)
            break;
        garbage.node = entry.node;
        garbage.ino = ino;
        garbage.tile = entry.tile;
        garbage.version = entry.version;
        err = store_error(txn->store, mdb_cursor_del(cursor, 0));
        if (err == 0)
            err = garbage_add(txn, &garbage);
        if (err < 0)
            break;
        count++;
    }
    mdb_cursor_close(cursor);
    if (dropped)
        *dropped = count;
    return err == -ENOENT ? 0 : err;
}
