/*
 * @file profiles.c
 * See profiles.h.
 */
#include "profiles.h"

#include "log.h"

#include <errno.h>
#include <string.h>

#define PROFILES_PREFIX_BYTES 16
#define PROFILES_KEY_MAX (PROFILES_PREFIX_BYTES + PROFILES_MAX_MACHINE)
#define PROFILES_VALUE_BYTES 48

static uint64_t profiles_sum(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static int profiles_decode(const MDB_val *value, struct profiles_counts *counts)
{
    struct ts_cursor cursor;
    if (value->mv_size != PROFILES_VALUE_BYTES) {
        log_error("corrupt profile record");
        return -EIO;
    }
    ts_cursor_init(&cursor, value->mv_data, value->mv_size);
    counts->reads = ts_cursor_u64(&cursor);
    counts->writes = ts_cursor_u64(&cursor);
    counts->bytes_read = ts_cursor_u64(&cursor);
    counts->bytes_written = ts_cursor_u64(&cursor);
    counts->local_bytes = ts_cursor_u64(&cursor);
    counts->first_access_ns = ts_cursor_u64(&cursor);
    return 0;
}

int profiles_add(struct store_txn *txn, uint64_t ino, uint64_t tile, struct ts_str machine,
                 const struct profiles_counts *counts)
{
    uint8_t key[PROFILES_KEY_MAX];
    uint8_t value[PROFILES_VALUE_BYTES];
    struct profiles_counts sum = {0};
    struct ts_writer writer;
    MDB_val stored;
    size_t key_len;
    int err;

    if (machine.len == 0 || machine.len > PROFILES_MAX_MACHINE)
        return -EINVAL;
    store_be64_put(key, ino);
    store_be64_put(key + 8, tile);
    memcpy(key + PROFILES_PREFIX_BYTES, machine.ptr, machine.len);
    key_len = PROFILES_PREFIX_BYTES + machine.len;
    err = store_get(txn, STORE_PROFILES, key, key_len, &stored);
    if (err == 0)
        err = profiles_decode(&stored, &sum);
    else if (err == -ENOENT)
        err = 0;
    if (err < 0)
        return err;
    sum.reads = profiles_sum(sum.reads, counts->reads);
    sum.writes = profiles_sum(sum.writes, counts->writes);
    sum.bytes_read = profiles_sum(sum.bytes_read, counts->bytes_read);
    sum.bytes_written = profiles_sum(sum.bytes_written, counts->bytes_written);
    sum.local_bytes = profiles_sum(sum.local_bytes, counts->local_bytes);
    if (counts->first_access_ns != 0 &&
        (sum.first_access_ns == 0 || counts->first_access_ns < sum.first_access_ns))
        sum.first_access_ns = counts->first_access_ns;
    ts_writer_init(&writer, value, sizeof(value));
    ts_writer_u64(&writer, sum.reads);
    ts_writer_u64(&writer, sum.writes);
    ts_writer_u64(&writer, sum.bytes_read);
    ts_writer_u64(&writer, sum.bytes_written);
    ts_writer_u64(&writer, sum.local_bytes);
    ts_writer_u64(&writer, sum.first_access_ns);
    return store_put(txn, STORE_PROFILES, key, key_len, value, sizeof(value));
}

/* Whether a key belongs to ino (and is well formed). */
static bool profiles_of(const MDB_val *key, uint64_t ino)
{
    return key->mv_size > PROFILES_PREFIX_BYTES && key->mv_size <= PROFILES_KEY_MAX &&
           store_be64_get(key->mv_data) == ino;
}

/* profiles_scan() over store_scan(): the inode, and the caller's visitor. */
struct profiles_scan_op {
    uint64_t ino;
    profiles_visit_fn visit;
    void *arg;
    bool past_inode;
};

static int profiles_scan_record(void *arg, const MDB_val *key, const MDB_val *value)
{
    struct profiles_scan_op *op = arg;
    const uint8_t *bytes = key->mv_data;
    struct profiles_counts counts;
    if (!profiles_of(key, op->ino)) {
        op->past_inode = true;
        return 1;
    }
    struct ts_str machine = {(const char *)bytes + PROFILES_PREFIX_BYTES,
                             (uint32_t)(key->mv_size - PROFILES_PREFIX_BYTES)};
    int err = profiles_decode(value, &counts);
    return err < 0 ? err : op->visit(op->arg, store_be64_get(bytes + 8), machine, &counts);
}

int profiles_scan(struct store_txn *txn, uint64_t ino, uint64_t first_tile, profiles_visit_fn visit,
                  void *arg)
{
    uint8_t start[PROFILES_PREFIX_BYTES];
    struct profiles_scan_op op = {ino, visit, arg, false};
    store_be64_put(start, ino);
    store_be64_put(start + 8, first_tile);
    int result = store_scan(txn, STORE_PROFILES, start, sizeof(start), profiles_scan_record, &op);
    return op.past_inode ? 0 : result;
}

int profiles_delete_all(struct store_txn *txn, uint64_t ino, uint64_t *deleted)
{
    uint8_t start[8];
    MDB_cursor *cursor;
    MDB_val key;
    MDB_val value;
    uint64_t count = 0;
    int err;

    err = store_cursor(txn, STORE_PROFILES, &cursor);
    if (err < 0)
        return err;
    store_be64_put(start, ino);
    for (;;) {
        key.mv_data = start;
        key.mv_size = sizeof(start);
        err = store_error(txn->store, mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE));
        if (err < 0)
            break;
        /* Any key of ino, even a malformed one, goes with it. */
        if (key.mv_size < sizeof(start) || store_be64_get(key.mv_data) != ino)
            break;
        err = store_error(txn->store, mdb_cursor_del(cursor, 0));
        if (err < 0)
            break;
        count++;
    }
    mdb_cursor_close(cursor);
    if (deleted)
        *deleted = count;
    return err == -ENOENT ? 0 : err;
}
