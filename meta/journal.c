/*
 * @file journal.c
 * See journal.h.
 */
#include "journal.h"

#include "garbage.h"
#include "log.h"

#include <errno.h>
#include <string.h>

#define JOURNAL_KEY_BYTES 16
#define JOURNAL_VALUE_BYTES 40

static void journal_key(uint8_t key[JOURNAL_KEY_BYTES], uint64_t ino, uint64_t tile)
{
    store_be64_put(key, ino);
    store_be64_put(key + 8, tile);
}

static int journal_decode(const MDB_val *key, const MDB_val *value, struct journal_entry *entry)
{
    struct ts_cursor cursor;
    if (key->mv_size != JOURNAL_KEY_BYTES || value->mv_size != JOURNAL_VALUE_BYTES) {
        log_error("corrupt relocation journal record");
        return -EIO;
    }
    entry->ino = store_be64_get(key->mv_data);
    entry->tile = store_be64_get((const uint8_t *)key->mv_data + 8);
    ts_cursor_init(&cursor, value->mv_data, value->mv_size);
    entry->kind = ts_cursor_u32(&cursor);
    entry->from_node = ts_cursor_u32(&cursor);
    entry->to_node = ts_cursor_u32(&cursor);
    entry->version = ts_cursor_u64(&cursor);
    entry->new_version = ts_cursor_u64(&cursor);
    entry->started_sec = ts_cursor_i64(&cursor);
    entry->state = ts_cursor_u32(&cursor);
    return 0;
}

int journal_get(struct store_txn *txn, uint64_t ino, uint64_t tile, struct journal_entry *entry)
{
    uint8_t key[JOURNAL_KEY_BYTES];
    MDB_val k = {sizeof(key), key};
    MDB_val value;
    int err;

    journal_key(key, ino, tile);
    err = store_get(txn, STORE_JOURNAL, key, sizeof(key), &value);
    if (err < 0)
        return err;
    return journal_decode(&k, &value, entry);
}

int journal_put(struct store_txn *txn, const struct journal_entry *entry)
{
    uint8_t key[JOURNAL_KEY_BYTES];
    uint8_t value[JOURNAL_VALUE_BYTES];
    struct ts_writer writer;

    journal_key(key, entry->ino, entry->tile);
    ts_writer_init(&writer, value, sizeof(value));
    ts_writer_u32(&writer, entry->kind);
    ts_writer_u32(&writer, entry->from_node);
    ts_writer_u32(&writer, entry->to_node);
    ts_writer_u64(&writer, entry->version);
    ts_writer_u64(&writer, entry->new_version);
    ts_writer_i64(&writer, entry->started_sec);
    ts_writer_u32(&writer, entry->state);
    return store_put(txn, STORE_JOURNAL, key, sizeof(key), value, sizeof(value));
}

int journal_delete(struct store_txn *txn, uint64_t ino, uint64_t tile)
{
    uint8_t key[JOURNAL_KEY_BYTES];
    journal_key(key, ino, tile);
    return store_del(txn, STORE_JOURNAL, key, sizeof(key));
}

int journal_abort(struct store_txn *txn, const struct journal_entry *entry)
{
    int err = journal_delete(txn, entry->ino, entry->tile);
    if (err < 0)
        return err;
    /* Once committed the target file is the tile map's: it is no longer the entry's to free. */
    if (entry->state == TS_MOVE_COMMITTED || entry->to_node == 0 || entry->new_version == 0)
        return 0;
    struct garbage_record target = {
        .node = entry->to_node,
        .ino = entry->ino,
        .tile = entry->tile,
        .version = entry->new_version,
    };
    err = garbage_add(txn, &target);
    if (err < 0 || entry->kind != TS_MOVE_COPY)
        return err;
    /* A copy's source may have taken new_version too (TILE_FENCE relink): that name goes. */
    struct garbage_record relinked = target;
    relinked.node = entry->from_node;
    return garbage_add(txn, &relinked);
}

/* journal_scan_after() over store_scan(): the key to skip, and the caller's visitor. */
struct journal_scan_op {
    const uint8_t *after;
    journal_visit_fn visit;
    void *arg;
};

static int journal_scan_record(void *arg, const MDB_val *key, const MDB_val *value)
{
    struct journal_scan_op *op = arg;
    struct journal_entry entry;
    if (key->mv_size == JOURNAL_KEY_BYTES && memcmp(key->mv_data, op->after, JOURNAL_KEY_BYTES) == 0)
        return 0; /* strictly after */
    int err = journal_decode(key, value, &entry);
    return err < 0 ? err : op->visit(op->arg, &entry);
}

int journal_scan_after(struct store_txn *txn, uint64_t after_ino, uint64_t after_tile,
                       journal_visit_fn visit, void *arg)
{
    uint8_t start[JOURNAL_KEY_BYTES];
    struct journal_scan_op op = {start, visit, arg};
    journal_key(start, after_ino, after_tile);
    return store_scan(txn, STORE_JOURNAL, start, sizeof(start), journal_scan_record, &op);
}

int journal_drop_inode(struct store_txn *txn, uint64_t ino)
{
    uint8_t start[JOURNAL_KEY_BYTES];
    MDB_cursor *cursor;
    MDB_val key;
    MDB_val value;
    int err;

    err = store_cursor(txn, STORE_JOURNAL, &cursor);
    if (err < 0)
        return err;
    journal_key(start, ino, 0);
    /* Re-seek after every removal, as tiles_drop_from() does. */
    for (;;) {
        struct journal_entry entry;
        key.mv_data = start;
        key.mv_size = sizeof(start);
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE));
        if (err < 0)
            break;
        if (key.mv_size != JOURNAL_KEY_BYTES || store_be64_get(key.mv_data) != ino)
            break;
        err = journal_decode(&key, &value, &entry);
        if (err == 0)
            err = journal_abort(txn, &entry);
        if (err < 0)
            break;
    }
    mdb_cursor_close(cursor);
    return err == -ENOENT ? 0 : err;
}

void journal_write_record(struct ts_writer *writer, const struct journal_entry *entry)
{
    struct ts_move_rec record = {.ino = entry->ino,
                                 .tile = entry->tile,
                                 .kind = entry->kind,
                                 .from_node = entry->from_node,
                                 .to_node = entry->to_node,
                                 .version = entry->version,
                                 .new_version = entry->new_version,
                                 .started_sec = entry->started_sec,
                                 .state = entry->state};
    ts_move_rec_write(writer, &record);
}
