/*
 * @file xattrs.c
 * See xattrs.h.
 */
#include "xattrs.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define XATTRS_PREFIX_BYTES 8
#define XATTRS_KEY_MAX (XATTRS_PREFIX_BYTES + TS_MAX_XATTR_NAME)
#define XATTRS_USER_PREFIX "user."
#define XATTRS_USER_PREFIX_BYTES (sizeof(XATTRS_USER_PREFIX) - 1)

static int xattrs_key(uint8_t key[XATTRS_KEY_MAX], uint64_t ino, struct ts_str name,
                      size_t *key_len)
{
    if (name.len > TS_MAX_XATTR_NAME)
        return -ERANGE;
    store_be64_put(key, ino);
    if (name.len > 0)
        memcpy(key + XATTRS_PREFIX_BYTES, name.ptr, name.len);
    *key_len = XATTRS_PREFIX_BYTES + name.len;
    return 0;
}

int xattrs_get(struct store_txn *txn, uint64_t ino, struct ts_str name, struct ts_str *value)
{
    uint8_t key[XATTRS_KEY_MAX];
    size_t key_len;
    MDB_val found;
    int err = xattrs_key(key, ino, name, &key_len);
    if (err == 0)
        err = store_get(txn, STORE_XATTRS, key, key_len, &found);
    if (err == 0) {
        value->ptr = found.mv_data;
        value->len = (uint32_t)found.mv_size;
    }
    return err;
}

int xattrs_put(struct store_txn *txn, uint64_t ino, struct ts_str name, struct ts_str value)
{
    uint8_t key[XATTRS_KEY_MAX];
    size_t key_len;
    int err = xattrs_key(key, ino, name, &key_len);
    if (err == 0)
        err = store_put(txn, STORE_XATTRS, key, key_len, value.ptr, value.len);
    return err;
}

int xattrs_delete(struct store_txn *txn, uint64_t ino, struct ts_str name)
{
    uint8_t key[XATTRS_KEY_MAX];
    size_t key_len;
    int err = xattrs_key(key, ino, name, &key_len);
    if (err == 0)
        err = store_del(txn, STORE_XATTRS, key, key_len);
    return err;
}

int xattrs_delete_all(struct store_txn *txn, uint64_t ino)
{
    uint8_t start[XATTRS_PREFIX_BYTES];
    MDB_cursor *cursor;
    MDB_val key;
    MDB_val value;
    int err = store_cursor(txn, STORE_XATTRS, &cursor);
    if (err < 0)
        return err;
    store_be64_put(start, ino);
    for (;;) {
        key.mv_data = start;
        key.mv_size = sizeof(start);
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE));
        if (err < 0)
            break;
        if (key.mv_size < XATTRS_PREFIX_BYTES || store_be64_get(key.mv_data) != ino)
            break;
        err = store_error(txn->store, mdb_cursor_del(cursor, 0));
        if (err < 0)
            break;
    }
    mdb_cursor_close(cursor);
    return err == -ENOENT ? 0 : err;
}

/* Only "user." names are the user's; the others are meta's own records. */
static bool xattrs_listed(const uint8_t *name, size_t len)
{
    return len > XATTRS_USER_PREFIX_BYTES &&
           memcmp(name, XATTRS_USER_PREFIX, XATTRS_USER_PREFIX_BYTES) == 0;
}

int xattrs_list(struct store_txn *txn, uint64_t ino, struct ts_writer *out)
{
    uint8_t start[XATTRS_PREFIX_BYTES];
    MDB_cursor *cursor;
    MDB_val key;
    MDB_val value;
    int err = store_cursor(txn, STORE_XATTRS, &cursor);
    if (err < 0)
        return err;
    store_be64_put(start, ino);
    key.mv_data = start;
    key.mv_size = sizeof(start);
    err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE));
    while (err == 0) {
        const uint8_t *bytes = key.mv_data;
        if (key.mv_size < XATTRS_PREFIX_BYTES || store_be64_get(bytes) != ino)
            break;
        if (xattrs_listed(bytes + XATTRS_PREFIX_BYTES, key.mv_size - XATTRS_PREFIX_BYTES)) {
            ts_writer_bytes(out, bytes + XATTRS_PREFIX_BYTES, key.mv_size - XATTRS_PREFIX_BYTES);
            ts_writer_bytes(out, "", 1);
        }
        if (out->failed) {
            err = -ERANGE;
            break;
        }
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_NEXT));
    }
    mdb_cursor_close(cursor);
    return err == -ENOENT ? 0 : err;
}
