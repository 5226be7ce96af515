/*
 * @file parents.c
 * See parents.h. Whether the table is complete is one row of the identity
 * table (PARENTS_BUILT_KEY), written in the transaction that builds it,
 * so a crash mid-build leaves no half table behind.
 */
#include "parents.h"

#include "proto.h"

#include <errno.h>
#include <string.h>

#define PARENTS_KEY_BYTES 16
#define PARENTS_BUILT_KEY "parents_built"

static void parents_key(uint8_t key[PARENTS_KEY_BYTES], uint64_t child, uint64_t parent)
{
    store_be64_put(key, child);
    store_be64_put(key + 8, parent);
}

static int parents_count_get(struct store_txn *txn, const uint8_t *key, uint32_t *count)
{
    MDB_val value;
    int err = store_get(txn, STORE_PARENTS, key, PARENTS_KEY_BYTES, &value);
    if (err < 0)
        return err;
    if (value.mv_size != 4)
        return -EIO;
    const uint8_t *bytes = value.mv_data;
    *count = (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
             (uint32_t)bytes[3] << 24;
    return 0;
}

static int parents_count_put(struct store_txn *txn, const uint8_t *key, uint32_t count)
{
    uint8_t value[4] = {(uint8_t)count, (uint8_t)(count >> 8), (uint8_t)(count >> 16),
                        (uint8_t)(count >> 24)};
    if (count == 0) {
        int err = store_del(txn, STORE_PARENTS, key, PARENTS_KEY_BYTES);
        return err == -ENOENT ? 0 : err;
    }
    return store_put(txn, STORE_PARENTS, key, PARENTS_KEY_BYTES, value, sizeof(value));
}

int parents_add(struct store_txn *txn, uint64_t child, uint64_t parent)
{
    uint8_t key[PARENTS_KEY_BYTES];
    uint32_t count = 0;
    parents_key(key, child, parent);
    int err = parents_count_get(txn, key, &count);
    if (err < 0 && err != -ENOENT)
        return err;
    if (count == UINT32_MAX)
        return -EMLINK;
    return parents_count_put(txn, key, count + 1);
}

int parents_remove(struct store_txn *txn, uint64_t child, uint64_t parent)
{
    uint8_t key[PARENTS_KEY_BYTES];
    uint32_t count = 0;
    parents_key(key, child, parent);
    int err = parents_count_get(txn, key, &count);
    if (err == -ENOENT)
        return 0;
    if (err < 0)
        return err;
    return parents_count_put(txn, key, count - 1);
}

int parents_scan(struct store_txn *txn, uint64_t child, parents_visit_fn visit, void *arg)
{
    uint8_t start[PARENTS_KEY_BYTES];
    MDB_cursor *cursor;
    MDB_val key;
    MDB_val value;
    int result = 0;
    parents_key(start, child, 0);
    int err = store_cursor(txn, STORE_PARENTS, &cursor);
    if (err < 0)
        return err;
    key.mv_data = start;
    key.mv_size = sizeof(start);
    err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE));
    while (err == 0) {
        const uint8_t *bytes = key.mv_data;
        if (key.mv_size != PARENTS_KEY_BYTES || store_be64_get(bytes) != child)
            break;
        if (value.mv_size != 4) {
            err = -EIO;
            break;
        }
        const uint8_t *count = value.mv_data;
        result = visit(arg, store_be64_get(bytes + 8),
                       (uint32_t)count[0] | (uint32_t)count[1] << 8 | (uint32_t)count[2] << 16 |
                           (uint32_t)count[3] << 24);
        if (result != 0)
            break;
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_NEXT));
    }
    mdb_cursor_close(cursor);
    if (result != 0)
        return result;
    return err == -ENOENT ? 0 : err;
}

/* Collects the parents of one child, so they can be deleted after the scan. */
struct parents_collect {
    uint64_t parents[64];
    size_t count;
};

static int parents_collect_one(void *arg, uint64_t parent, uint32_t count)
{
    struct parents_collect *collect = arg;
    (void)count;
    collect->parents[collect->count++] = parent;
    return collect->count == sizeof(collect->parents) / sizeof(collect->parents[0]) ? 1 : 0;
}

int parents_delete_all(struct store_txn *txn, uint64_t child)
{
    for (;;) {
        struct parents_collect collect = {.count = 0};
        int result = parents_scan(txn, child, parents_collect_one, &collect);
        if (result < 0)
            return result;
        for (size_t i = 0; i < collect.count; i++) {
            uint8_t key[PARENTS_KEY_BYTES];
            parents_key(key, child, collect.parents[i]);
            int err = store_del(txn, STORE_PARENTS, key, sizeof(key));
            if (err < 0)
                return err;
        }
        if (result == 0)
            return 0;
    }
}

/* One dirents record (u64 parent + name -> u64 child, u32 mode) into the table. */
static int parents_from_dirent(void *arg, const MDB_val *key, const MDB_val *value)
{
    struct store_txn *txn = arg;
    struct ts_cursor cursor;
    if (key->mv_size < 8 || value->mv_size < 8)
        return -EIO;
    ts_cursor_init(&cursor, value->mv_data, value->mv_size);
    uint64_t child = ts_cursor_u64(&cursor);
    return parents_add(txn, child, store_be64_get(key->mv_data));
}

int parents_ensure(struct store_txn *txn, bool *built)
{
    static const char built_key[] = PARENTS_BUILT_KEY;
    static const uint8_t first_key[8]; /* LMDB takes no empty key */
    MDB_val value;
    *built = false;
    int err = store_get(txn, STORE_IDENTITY, built_key, sizeof(built_key) - 1, &value);
    if (err != -ENOENT)
        return err;
    /* A table from an older build that wrote rows but never the mark: start over. */
    err = mdb_drop(txn->txn, store_dbi(txn->store, STORE_PARENTS), 0);
    if (err != 0)
        return store_error(txn->store, err);
    err = store_scan(txn, STORE_DIRENTS, first_key, sizeof(first_key), parents_from_dirent, txn);
    if (err < 0)
        return err;
    err = store_put(txn, STORE_IDENTITY, built_key, sizeof(built_key) - 1, "1", 1);
    if (err == 0)
        *built = true;
    return err;
}
