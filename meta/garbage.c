/*
 * @file garbage.c
 * See garbage.h. The value of a record is the time (u64 BE seconds) it was
 * queued, kept only to help whoever inspects a store by hand.
 */
#include "garbage.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define GARBAGE_KEY_BYTES 28

static void garbage_key(uint8_t key[GARBAGE_KEY_BYTES], const struct garbage_record *record)
{
    store_be32_put(key, record->node);
    store_be64_put(key + 4, record->ino);
    store_be64_put(key + 12, record->tile);
    store_be64_put(key + 20, record->version);
}

int garbage_add(struct store_txn *txn, const struct garbage_record *record)
{
    uint8_t key[GARBAGE_KEY_BYTES];
    uint8_t queued[8];
    garbage_key(key, record);
    store_be64_put(queued, (uint64_t)time(NULL));
    return store_put(txn, STORE_GARBAGE, key, sizeof(key), queued, sizeof(queued));
}

int garbage_has(struct store_txn *txn, const struct garbage_record *record)
{
    uint8_t key[GARBAGE_KEY_BYTES];
    MDB_val value;
    garbage_key(key, record);
    int err = store_get(txn, STORE_GARBAGE, key, sizeof(key), &value);
    if (err == -ENOENT)
        return 0;
    return err < 0 ? err : 1;
}

int garbage_remove(struct store_txn *txn, const struct garbage_record *record)
{
    uint8_t key[GARBAGE_KEY_BYTES];
    garbage_key(key, record);
    return store_del(txn, STORE_GARBAGE, key, sizeof(key));
}

int garbage_list(struct store_txn *txn, uint32_t node, uint32_t max, struct ts_writer *out,
                 uint32_t *count)
{
    uint8_t start[4];
    MDB_cursor *cursor;
    MDB_val key;
    MDB_val value;
    int err;

    *count = 0;
    err = store_cursor(txn, STORE_GARBAGE, &cursor);
    if (err < 0)
        return err;
    store_be32_put(start, node);
    key.mv_data = start;
    key.mv_size = sizeof(start);
    err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE));
    while (err == 0 && *count < max) {
        const uint8_t *bytes = key.mv_data;
        if (key.mv_size != GARBAGE_KEY_BYTES || store_be32_get(bytes) != node)
            break;
        struct ts_tile_file_rec file = {.ino = store_be64_get(bytes + 4),
                                        .tile = store_be64_get(bytes + 12),
                                        .version = store_be64_get(bytes + 20)};
        ts_tile_file_rec_write(out, &file);
        if (out->failed) {
            err = -ENOBUFS;
            break;
        }
        (*count)++;
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_NEXT));
    }
    mdb_cursor_close(cursor);
    return err == -ENOENT ? 0 : err;
}
