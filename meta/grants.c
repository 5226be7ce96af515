/*
 * @file grants.c
 * See grants.h. Record: key u64 first ino (big-endian, so ranges sort by
 * number); value u64 mount, u64 first generation, u32 count (little-endian).
 * The range holding a number is the one with the greatest first <= it.
 */
#include "grants.h"

#include "proto.h"

#include <errno.h>
#include <string.h>

#define GRANT_VALUE_BYTES 20

int grants_take(struct store_txn *txn, uint64_t mount, uint32_t count, uint64_t *first_ino,
                uint64_t *first_generation)
{
    uint8_t key[8];
    uint8_t value[GRANT_VALUE_BYTES];
    struct ts_writer writer;
    if (count == 0 || mount == 0)
        return -EINVAL;
    int err = store_counter_take(txn, STORE_NEXT_INO, first_ino);
    if (err == 0)
        err = store_counter_raise(txn, STORE_NEXT_INO, *first_ino + count);
    if (err == 0)
        err = store_counter_take(txn, STORE_NEXT_GENERATION, first_generation);
    if (err == 0)
        err = store_counter_raise(txn, STORE_NEXT_GENERATION, *first_generation + count);
    if (err < 0)
        return err;
    store_be64_put(key, *first_ino);
    ts_writer_init(&writer, value, sizeof(value));
    ts_writer_u64(&writer, mount);
    ts_writer_u64(&writer, *first_generation);
    ts_writer_u32(&writer, count);
    return store_put(txn, STORE_GRANTS, key, sizeof(key), value, sizeof(value));
}

int grants_check(struct store_txn *txn, uint64_t mount, uint64_t ino, uint64_t *generation)
{
    uint8_t key[8];
    MDB_cursor *cursor;
    MDB_val k, v;
    int err = store_cursor(txn, STORE_GRANTS, &cursor);
    if (err < 0)
        return err;
    store_be64_put(key, ino);
    k = (MDB_val){.mv_size = sizeof(key), .mv_data = key};
    int rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
    if (rc == 0 && (k.mv_size != 8 || store_be64_get(k.mv_data) != ino))
        rc = mdb_cursor_get(cursor, &k, &v, MDB_PREV); /* the range before */
    else if (rc == MDB_NOTFOUND)
        rc = mdb_cursor_get(cursor, &k, &v, MDB_LAST);
    err = -EPERM;
    if (rc == 0 && k.mv_size == 8 && v.mv_size == GRANT_VALUE_BYTES) {
        struct ts_cursor value;
        uint64_t first = store_be64_get(k.mv_data);
        ts_cursor_init(&value, v.mv_data, v.mv_size);
        uint64_t owner = ts_cursor_u64(&value);
        uint64_t first_generation = ts_cursor_u64(&value);
        uint32_t count = ts_cursor_u32(&value);
        if (owner == mount && ino >= first && ino - first < count) {
            *generation = first_generation + (ino - first);
            err = 0;
        }
    } else if (rc != 0 && rc != MDB_NOTFOUND) {
        err = -EIO;
    }
    mdb_cursor_close(cursor);
    return err;
}
