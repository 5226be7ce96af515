/*
 * @file dirents.c
 * See dirents.h. Every put, overwrite and delete of an entry also updates
 * the parents table (parents.h) in the same transaction, so the two never
 * disagree whichever handler changed the namespace (a rename over an
 * existing name included: the overwritten child loses that parent).
 */
#include "dirents.h"

#include "log.h"
#include "parents.h"

#include <errno.h>
#include <string.h>

#define DIRENTS_PREFIX_BYTES 8
#define DIRENTS_KEY_MAX (DIRENTS_PREFIX_BYTES + TS_MAX_NAME)
#define DIRENTS_VALUE_BYTES 12

static int dirents_key(uint8_t key[DIRENTS_KEY_MAX], uint64_t parent, struct ts_str name,
                       size_t *key_len)
{
    if (name.len > TS_MAX_NAME)
        return -ENAMETOOLONG;
    store_be64_put(key, parent);
    if (name.len > 0)
        memcpy(key + DIRENTS_PREFIX_BYTES, name.ptr, name.len);
    *key_len = DIRENTS_PREFIX_BYTES + name.len;
    return 0;
}

static int dirents_decode(const MDB_val *value, struct dirents_entry *entry)
{
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, value->mv_data, value->mv_size);
    entry->ino = ts_cursor_u64(&cursor);
    entry->mode = ts_cursor_u32(&cursor);
    if (cursor.failed || cursor.left != 0) {
        log_error("corrupt directory entry");
        return -EIO;
    }
    return 0;
}

int dirents_get(struct store_txn *txn, uint64_t parent, struct ts_str name,
                struct dirents_entry *entry)
{
    uint8_t key[DIRENTS_KEY_MAX];
    size_t key_len;
    MDB_val value;
    int err = dirents_key(key, parent, name, &key_len);
    if (err == 0)
        err = store_get(txn, STORE_DIRENTS, key, key_len, &value);
    if (err == 0)
        err = dirents_decode(&value, entry);
    return err;
}

int dirents_put(struct store_txn *txn, uint64_t parent, struct ts_str name,
                const struct dirents_entry *entry)
{
    uint8_t key[DIRENTS_KEY_MAX];
    uint8_t value[DIRENTS_VALUE_BYTES];
    size_t key_len;
    struct ts_writer writer;
    int err = dirents_key(key, parent, name, &key_len);
    if (err < 0)
        return err;
    struct dirents_entry before = {.ino = 0};
    MDB_val old;
    err = store_get(txn, STORE_DIRENTS, key, key_len, &old);
    if (err == 0)
        err = dirents_decode(&old, &before);
    if (err == -ENOENT)
        before.ino = 0;
    else if (err < 0)
        return err;
    if (before.ino != entry->ino) {
        err = before.ino ? parents_remove(txn, before.ino, parent) : 0;
        if (err == 0)
            err = parents_add(txn, entry->ino, parent);
        if (err < 0)
            return err;
    }
    ts_writer_init(&writer, value, sizeof(value));
    ts_writer_u64(&writer, entry->ino);
    ts_writer_u32(&writer, entry->mode);
    return store_put(txn, STORE_DIRENTS, key, key_len, value, sizeof(value));
}

int dirents_delete(struct store_txn *txn, uint64_t parent, struct ts_str name)
{
    uint8_t key[DIRENTS_KEY_MAX];
    size_t key_len;
    struct dirents_entry before;
    MDB_val old;
    int err = dirents_key(key, parent, name, &key_len);
    if (err == 0)
        err = store_get(txn, STORE_DIRENTS, key, key_len, &old);
    if (err == 0)
        err = dirents_decode(&old, &before);
    if (err == 0)
        err = store_del(txn, STORE_DIRENTS, key, key_len);
    if (err == 0)
        err = parents_remove(txn, before.ino, parent);
    return err;
}

/* Refuses a first entry so that the scan only learns whether one exists. */
static int dirents_stop_at_first(void *arg, struct ts_str name, const struct dirents_entry *entry)
{
    (void)arg;
    (void)name;
    (void)entry;
    return 1;
}

int dirents_is_empty(struct store_txn *txn, uint64_t dir, bool *empty)
{
    struct ts_str from_start = {"", 0};
    int result = dirents_scan(txn, dir, from_start, dirents_stop_at_first, NULL);
    if (result < 0)
        return result;
    *empty = result == 0;
    return 0;
}

int dirents_scan(struct store_txn *txn, uint64_t dir, struct ts_str after, dirents_visit_fn visit,
                 void *arg)
{
    return dirents_scan_from(txn, dir, after, false, visit, arg);
}

int dirents_scan_from(struct store_txn *txn, uint64_t dir, struct ts_str after, bool inclusive,
                      dirents_visit_fn visit, void *arg)
{
    uint8_t start[DIRENTS_KEY_MAX];
    size_t start_len;
    MDB_cursor *cursor;
    MDB_val key;
    MDB_val value;
    int visited = 0;
    int err = dirents_key(start, dir, after, &start_len);
    if (err < 0)
        return err;
    err = store_cursor(txn, STORE_DIRENTS, &cursor);
    if (err < 0)
        return err;
    key.mv_data = start;
    key.mv_size = start_len;
    err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE));
    /* SET_RANGE lands on `after` itself when it exists: it is not "after"
     * unless the scan includes it. */
    if (err == 0 && !inclusive && after.len > 0 && key.mv_size == start_len &&
        memcmp(key.mv_data, start, start_len) == 0)
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_NEXT));
    while (err == 0) {
        const uint8_t *bytes = key.mv_data;
        struct dirents_entry entry;
        struct ts_str name;
        if (key.mv_size < DIRENTS_PREFIX_BYTES || store_be64_get(bytes) != dir) {
            err = -ENOENT; /* past the directory: exhausted */
            break;
        }
        err = dirents_decode(&value, &entry);
        if (err < 0)
            break;
        name.ptr = (const char *)bytes + DIRENTS_PREFIX_BYTES;
        name.len = (uint32_t)(key.mv_size - DIRENTS_PREFIX_BYTES);
        visited = visit(arg, name, &entry);
        if (visited != 0)
            break;
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_NEXT));
    }
    mdb_cursor_close(cursor);
    if (visited != 0)
        return visited;
    return err == -ENOENT ? 0 : err;
}
