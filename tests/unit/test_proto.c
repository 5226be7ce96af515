/*
 * Unit tests of the wire protocol (common/proto.c, common/status.c): every
 * message kind round-trips, and truncated, padded or garbage input is
 * refused without reading out of bounds (run under ASan to prove the last).
 * Every record of TS_RECORDS gets a generated test of its own (round trip,
 * size, every truncated prefix), and the record versions theirs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>

#include "proto.h"
#include "rpc.h"
#include "status.h"

static void test_header_round_trip(void **state)
{
    (void)state;
    uint8_t frame[TS_HEADER_BYTES + 5] = {0};
    struct ts_header header;
    size_t len = rpc_frame_build(frame, sizeof(frame), TS_OP_LOOKUP, 0x0102030405060708ull, 0,
                                 TS_ERR_NOENT, "hello", 5, 77);
    assert_int_equal(len, sizeof(frame));
    /* little-endian on the wire, whatever the host */
    assert_int_equal(frame[0], 0x54);
    assert_int_equal(frame[8], 0x08);
    assert_int_equal(ts_header_decode(&header, frame, len), TS_OK);
    assert_int_equal(header.type, TS_OP_LOOKUP);
    assert_true(header.request_id == 0x0102030405060708ull);
    assert_int_equal(header.status, TS_ERR_NOENT);
    assert_int_equal(header.payload_bytes, 5);
    assert_int_equal(header.data_bytes, 77);
    assert_memory_equal(frame + TS_HEADER_BYTES, "hello", 5);
}

static void test_header_rejects_bad_frames(void **state)
{
    (void)state;
    uint8_t frame[TS_HEADER_BYTES + 4] = {0};
    struct ts_header header;
    size_t len = rpc_frame_build(frame, sizeof(frame), TS_OP_PING, 1, 0, 0, "abcd", 4, 0);
    assert_int_equal(len, sizeof(frame));

    /* too short for a header */
    assert_int_equal(ts_header_decode(&header, frame, TS_HEADER_BYTES - 1), TS_ERR_BADMSG);
    /* payload length disagrees with the frame (truncated frame) */
    assert_int_equal(ts_header_decode(&header, frame, len - 1), TS_ERR_BADMSG);

    uint8_t copy[sizeof(frame)];
    memcpy(copy, frame, sizeof(frame));
    copy[0] ^= 0xff; /* magic */
    assert_int_equal(ts_header_decode(&header, copy, len), TS_ERR_BADMSG);

    memcpy(copy, frame, sizeof(frame));
    copy[4] = 99; /* version */
    assert_int_equal(ts_header_decode(&header, copy, len), TS_ERR_PROTO);

    memcpy(copy, frame, sizeof(frame));
    copy[28] = 0xff; /* data_bytes far over the cap */
    copy[29] = 0xff;
    copy[30] = 0xff;
    copy[31] = 0x01;
    assert_int_equal(ts_header_decode(&header, copy, len), TS_ERR_TOOBIG);
}

static void test_attr_round_trip(void **state)
{
    (void)state;
    uint8_t buf[256];
    struct ts_attr_rep in = {.attr = {.ino = 42,
                                      .mode = 0100644,
                                      .nlink = 3,
                                      .uid = 1000,
                                      .gid = 100,
                                      .rdev = 7,
                                      .size = 5ull << 32,
                                      .blocks = 9,
                                      .atime_sec = -5,
                                      .atime_nsec = 999999999,
                                      .mtime_sec = 1234567890,
                                      .mtime_nsec = 123456789,
                                      .ctime_sec = 3,
                                      .ctime_nsec = 4,
                                      .generation = 11,
                                      .tile_bytes = 1 << 20,
                                      .placement = TS_PLACEMENT_STATIC,
                                      .copies = 2,
                                      .flags = TS_ATTR_ARRAY}};
    struct ts_attr_rep out;
    int len = ts_attr_rep_encode(&in, buf, sizeof(buf));
    assert_int_equal(len, TS_ATTR_WIRE_BYTES);
    assert_int_equal(ts_attr_rep_decode(&out, buf, (size_t)len), 0);
    assert_memory_equal(&in.attr, &out.attr, sizeof(in.attr));
}

static void test_strings_and_blobs(void **state)
{
    (void)state;
    uint8_t buf[512];
    struct ts_setxattr_req in = {.ino = 5,
                                 .name = ts_str_of("user.color"),
                                 .value = {"\0bin\0ary", 8},
                                 .flags = TS_XATTR_CREATE};
    struct ts_setxattr_req out;
    int len = ts_setxattr_req_encode(&in, buf, sizeof(buf));
    assert_int_equal(len, 8 + 2 + 10 + 4 + 8 + 4);
    assert_int_equal(ts_setxattr_req_decode(&out, buf, (size_t)len), 0);
    assert_int_equal(out.ino, 5);
    assert_int_equal(out.name.len, 10);
    assert_memory_equal(out.name.ptr, "user.color", 10);
    assert_int_equal(out.value.len, 8);
    assert_memory_equal(out.value.ptr, "\0bin\0ary", 8);
    assert_int_equal(out.flags, TS_XATTR_CREATE);
    /* strings point into the frame: no copies */
    assert_true((const uint8_t *)out.name.ptr > buf &&
                (const uint8_t *)out.name.ptr < buf + len);
}

static void test_truncated_and_padded_refused(void **state)
{
    (void)state;
    uint8_t buf[512];
    struct ts_rename_req in = {.parent = 1,
                               .name = ts_str_of("a"),
                               .new_parent = 2,
                               .new_name = ts_str_of("bb"),
                               .flags = 0};
    struct ts_rename_req out;
    int len = ts_rename_req_encode(&in, buf, sizeof(buf));
    assert_true(len > 0);
    for (int cut = 0; cut < len; cut++) /* every truncation point */
        assert_int_equal(ts_rename_req_decode(&out, buf, (size_t)cut), -1);
    buf[len] = 0;
    assert_int_equal(ts_rename_req_decode(&out, buf, (size_t)len + 1), -1); /* trailing byte */
    assert_int_equal(ts_rename_req_decode(&out, buf, (size_t)len), 0);

    /* a string length pointing past the end */
    buf[8] = 0xff;
    buf[9] = 0xff;
    assert_int_equal(ts_rename_req_decode(&out, buf, (size_t)len), -1);
}

static void test_encoder_refuses_small_buffer(void **state)
{
    (void)state;
    uint8_t buf[10];
    struct ts_lookup_req in = {.parent = 1, .name = ts_str_of("a-long-name")};
    assert_int_equal(ts_lookup_req_encode(&in, buf, sizeof(buf)), -1);
    struct ts_tile_map_req empty_ok = {0};
    assert_int_equal(ts_tile_map_req_encode(&empty_ok, buf, sizeof(buf)), -1);
}

static void test_garbage_never_crashes(void **state)
{
    (void)state;
    uint8_t buf[300];
    unsigned seed = 12345;
    for (int round = 0; round < 20000; round++) {
        size_t len = (size_t)(rand_r(&seed) % sizeof(buf));
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)rand_r(&seed);
        /* Exercise every decoder on the same garbage; only bounds matter. */
        struct ts_header header;
        struct ts_readdir_rep readdir;
        struct ts_heartbeat_req heartbeat;
        struct ts_symlink_req symlink;
        struct ts_setattr_rep setattr;
        (void)ts_header_decode(&header, buf, len);
        if (ts_readdir_rep_decode(&readdir, buf, len) == 0)
            assert_true(readdir.entries.len <= len);
        if (ts_heartbeat_req_decode(&heartbeat, buf, len) == 0)
            assert_true(heartbeat.deleted.len <= len);
        (void)ts_symlink_req_decode(&symlink, buf, len);
        (void)ts_setattr_rep_decode(&setattr, buf, len);
    }
}

static void test_cursor_fails_sticky(void **state)
{
    (void)state;
    uint8_t buf[3] = {1, 2, 3};
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, buf, sizeof(buf));
    assert_int_equal(ts_cursor_u16(&cursor), 0x0201);
    assert_int_equal(ts_cursor_u32(&cursor), 0); /* only one byte left */
    assert_true(cursor.failed);
    assert_int_equal(ts_cursor_u16(&cursor), 0); /* stays failed, even though a u8 is left */
    assert_null(ts_cursor_str(&cursor).ptr);
}

static void test_status_mapping(void **state)
{
    (void)state;
    assert_int_equal(status_to_errno(TS_ERR_NOENT), ENOENT);
    assert_int_equal(status_to_errno(TS_ERR_NOSPC), ENOSPC);
    assert_int_equal(status_to_errno(TS_ERR_TIMEDOUT), EIO);
    assert_int_equal(status_to_errno(9999), EIO);
    assert_int_equal(status_from_errno(-ENOENT), TS_ERR_NOENT);
    assert_int_equal(status_from_errno(EDQUOT), TS_ERR_NOSPC);
    assert_int_equal(status_from_errno(EIO), TS_ERR_IO);
    assert_int_equal(status_from_errno(ENAMETOOLONG), TS_ERR_NAMETOOLONG);
    assert_int_equal(status_from_errno(0), TS_OK);
    assert_string_equal(status_text(TS_ERR_NOTEMPTY), "directory not empty");
    assert_string_equal(status_text(-77), "unknown status");
}

/* ---- records (TS_RECORDS): one test per record, generated ---------------- */

static const char *const sample_names[] = {"alpha", "b", "node-3.example", "x y"};

static void sample_attr(struct ts_attr *attr, uint32_t seed)
{
    memset(attr, 0, sizeof(*attr));
    attr->ino = 0x1000 + seed;
    attr->mode = 0100644;
    attr->nlink = 2;
    attr->uid = 1000 + seed;
    attr->gid = 2000 + seed;
    attr->rdev = 5;
    attr->size = 0x123456789ull;
    attr->blocks = 8;
    attr->atime_sec = -1;
    attr->atime_nsec = 1;
    attr->mtime_sec = 1700000000;
    attr->mtime_nsec = 2;
    attr->ctime_sec = 1700000001;
    attr->ctime_nsec = 3;
    attr->generation = 4;
    attr->tile_bytes = 1 << 20;
    attr->placement = TS_PLACEMENT_DYNAMIC;
    attr->copies = 1;
    attr->flags = TS_ATTR_ARRAY;
    attr->change = 77;
}

/*
 * Every field gets a value no other field has and no zero (strings are not
 * empty), so a field lost or swapped on the way shows in the bytes written
 * again from what was read.
 */
#define FILL_U32(field) field = 0x01000000u + ++seed
#define FILL_U64(field) field = 0x0102030400000000ull + ++seed
#define FILL_I64(field) field = -(int64_t)(1000 + ++seed)
#define FILL_STR(field) field = ts_str_of(sample_names[++seed % 4])
#define FILL_BLOB(field) FILL_STR(field)
#define FILL_ATTR(field) sample_attr(&(field), ++seed)
#define FILL_FIELD(kind, name) FILL_##kind(record.name);

/*
 * For each record: the smallest record is exactly ts_NAME_rec_bytes; a full
 * one reads back to the same fields (written again, the same bytes) and
 * consumes exactly its bytes; every truncated prefix is refused with the
 * cursor failed (each prefix in a buffer of its own size, so ASan sees any
 * read past it); a writer one byte short fails.
 */
#define DEFINE_RECORD_TEST(name, fields, version)                                                  \
    static void test_record_##name(void **state)                                                   \
    {                                                                                              \
        struct ts_##name##_rec record, back;                                                       \
        uint8_t written[1024], again[1024];                                                        \
        struct ts_writer writer;                                                                   \
        struct ts_cursor cursor;                                                                   \
        uint32_t seed = 0;                                                                         \
        (void)state;                                                                               \
        memset(&record, 0, sizeof(record));                                                        \
        ts_writer_init(&writer, written, sizeof(written));                                         \
        ts_##name##_rec_write(&writer, &record);                                                   \
        assert_false(writer.failed);                                                               \
        assert_int_equal(writer.len, ts_##name##_rec_bytes);                                       \
        fields(FILL_FIELD);                                                                        \
        ts_writer_init(&writer, written, sizeof(written));                                         \
        ts_##name##_rec_write(&writer, &record);                                                   \
        assert_false(writer.failed);                                                               \
        size_t len = writer.len;                                                                   \
        assert_true(len >= ts_##name##_rec_bytes);                                                 \
        ts_cursor_init(&cursor, written, len);                                                     \
        assert_int_equal(ts_##name##_rec_read(&cursor, &back), 0);                                 \
        assert_int_equal(cursor.left, 0);                                                          \
        ts_writer_init(&writer, again, sizeof(again));                                             \
        ts_##name##_rec_write(&writer, &back);                                                     \
        assert_int_equal(writer.len, len);                                                         \
        assert_memory_equal(written, again, len);                                                  \
        for (size_t cut = 0; cut < len; cut++) {                                                   \
            uint8_t *prefix = malloc(cut ? cut : 1);                                               \
            assert_non_null(prefix);                                                               \
            memcpy(prefix, written, cut);                                                          \
            ts_cursor_init(&cursor, prefix, cut);                                                  \
            assert_int_equal(ts_##name##_rec_read(&cursor, &back), -1);                            \
            assert_true(cursor.failed);                                                            \
            free(prefix);                                                                          \
        }                                                                                          \
        ts_writer_init(&writer, again, len - 1);                                                   \
        ts_##name##_rec_write(&writer, &record);                                                   \
        assert_true(writer.failed);                                                                \
    }
TS_RECORDS(DEFINE_RECORD_TEST)
#define REGISTER_RECORD_TEST(name, fields, version) cmocka_unit_test(test_record_##name),

/* Records follow each other: the second starts where the first ended. */
static void test_records_back_to_back(void **state)
{
    uint8_t buf[256];
    struct ts_writer writer;
    struct ts_cursor cursor;
    struct ts_readdir_rec entry;
    (void)state;
    ts_writer_init(&writer, buf, sizeof(buf));
    for (uint64_t i = 0; i < 3; i++) {
        struct ts_readdir_rec out = {
            .ino = 10 + i, .mode = 040755, .name = ts_str_of(sample_names[i])};
        ts_readdir_rec_write(&writer, &out);
    }
    assert_false(writer.failed);
    ts_cursor_init(&cursor, buf, writer.len);
    for (uint64_t i = 0; i < 3; i++) {
        assert_int_equal(ts_readdir_rec_read(&cursor, &entry), 0);
        assert_int_equal(entry.ino, 10 + i);
        assert_int_equal(entry.name.len, strlen(sample_names[i]));
        assert_memory_equal(entry.name.ptr, sample_names[i], entry.name.len);
    }
    assert_int_equal(cursor.left, 0);
    /* Past the end: refused, and the cursor stays failed. */
    assert_int_equal(ts_readdir_rec_read(&cursor, &entry), -1);
    assert_true(cursor.failed);
    /* A string longer than its u16 length allows is refused by the writer. */
    static char long_name[TS_MAX_STRING + 2];
    memset(long_name, 'n', sizeof(long_name) - 1);
    struct ts_readdir_rec too_long = {.ino = 1, .name = ts_str_of(long_name)};
    uint8_t *big = malloc(sizeof(long_name) + 64);
    assert_non_null(big);
    ts_writer_init(&writer, big, sizeof(long_name) + 64);
    ts_readdir_rec_write(&writer, &too_long);
    assert_true(writer.failed);
    free(big);
}

/* A TILE_MAP record on the wire: u16 version, u32 body bytes, the fields. */
static void test_tile_map_record_layout(void **state)
{
    uint8_t buf[64];
    struct ts_writer writer;
    struct ts_tile_map_rec record = {.node = 0x11223344,
                                     .version = 0x0102030405060708ull,
                                     .holders = 2,
                                     .read_node = 5,
                                     .read_version = 6,
                                     .flags = TS_TILE_STORED};
    (void)state;
    ts_writer_init(&writer, buf, sizeof(buf));
    ts_tile_map_rec_write(&writer, &record);
    assert_int_equal(writer.len, ts_tile_map_rec_bytes);
    assert_int_equal(ts_tile_map_rec_bytes, TS_REC_PREFIX_BYTES + 32);
    const uint8_t prefix[] = {TS_TILE_MAP_REC_VERSION, 0, 32, 0, 0, 0};
    assert_memory_equal(buf, prefix, sizeof(prefix));
    const uint8_t node[] = {0x44, 0x33, 0x22, 0x11, 0x08, 0x07};
    assert_memory_equal(buf + TS_REC_PREFIX_BYTES, node, sizeof(node));
    assert_int_equal(buf[ts_tile_map_rec_bytes - 4], TS_TILE_STORED);
}

/*
 * Record versions (proto.h, TS_RECORDS): a newer record's further fields
 * are skipped and the next record read where it starts; an older record,
 * a body too short for the reader's fields and a record of the reader's
 * own version with bytes left over are refused.
 */
static void test_record_versions(void **state)
{
    uint8_t buf[256];
    struct ts_writer writer;
    struct ts_cursor cursor;
    struct ts_tile_map_rec record = {.node = 3, .version = 9, .read_node = 3, .read_version = 9};
    struct ts_tile_map_rec back;
    const uint32_t body = ts_tile_map_rec_bytes - TS_REC_PREFIX_BYTES;
    (void)state;

    /* A newer record: version + 1, eight bytes of a field this reader does
     * not know, then a record of this version. */
    ts_writer_init(&writer, buf, sizeof(buf));
    ts_tile_map_rec_write(&writer, &record);
    const uint8_t unknown_field[8] = {0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee};
    ts_writer_bytes(&writer, unknown_field, sizeof(unknown_field));
    record.node = 4;
    ts_tile_map_rec_write(&writer, &record);
    assert_false(writer.failed);
    size_t len = writer.len;
    buf[0] = TS_TILE_MAP_REC_VERSION + 1;
    buf[2] = (uint8_t)(body + sizeof(unknown_field));
    ts_cursor_init(&cursor, buf, len);
    assert_int_equal(ts_tile_map_rec_read(&cursor, &back), 0);
    assert_int_equal(back.node, 3);
    assert_int_equal(back.version, 9);
    assert_int_equal(back.read_version, 9);
    assert_int_equal(ts_tile_map_rec_read(&cursor, &back), 0);
    assert_int_equal(back.node, 4);
    assert_int_equal(cursor.left, 0);

    /* The same bytes claiming this reader's version: the extra field is
     * not skipped but refused. */
    buf[0] = TS_TILE_MAP_REC_VERSION;
    ts_cursor_init(&cursor, buf, len);
    assert_int_equal(ts_tile_map_rec_read(&cursor, &back), -1);
    assert_true(cursor.failed);

    /* An older record: its body lacks fields this reader needs. */
    ts_writer_init(&writer, buf, sizeof(buf));
    ts_tile_map_rec_write(&writer, &record);
    buf[0] = TS_TILE_MAP_REC_VERSION - 1;
    ts_cursor_init(&cursor, buf, writer.len);
    assert_int_equal(ts_tile_map_rec_read(&cursor, &back), -1);
    assert_true(cursor.failed);

    /* A newer record whose body is shorter than the fields this reader
     * knows (the bytes after it are the next record's). */
    buf[0] = TS_TILE_MAP_REC_VERSION + 1;
    buf[2] = (uint8_t)(body - 4);
    ts_cursor_init(&cursor, buf, writer.len);
    assert_int_equal(ts_tile_map_rec_read(&cursor, &back), -1);
    assert_true(cursor.failed);

    /* A body length past the end of the bytes. */
    buf[2] = 0xff;
    ts_cursor_init(&cursor, buf, writer.len);
    assert_int_equal(ts_tile_map_rec_read(&cursor, &back), -1);
    assert_true(cursor.failed);

    /* A versioned record with strings: its body length counts them. */
    struct ts_node_list_rec node = {.id = 7, .machine = ts_str_of("m1"), .address = ts_str_of("a")};
    struct ts_node_list_rec node_back;
    ts_writer_init(&writer, buf, sizeof(buf));
    ts_node_list_rec_write(&writer, &node);
    assert_int_equal(writer.len, ts_node_list_rec_bytes + 3);
    assert_int_equal(buf[2], ts_node_list_rec_bytes - TS_REC_PREFIX_BYTES + 3);
    ts_cursor_init(&cursor, buf, writer.len);
    assert_int_equal(ts_node_list_rec_read(&cursor, &node_back), 0);
    assert_int_equal(node_back.id, 7);
    assert_int_equal(node_back.address.len, 1);
}

/* The blob-size check a decoder makes before allocating count records. */
static void test_records_fit(void **state)
{
    (void)state;
    assert_true(ts_records_fit(0, 0, ts_move_rec_bytes));
    assert_true(ts_records_fit(2, 2 * ts_move_rec_bytes, ts_move_rec_bytes));
    assert_false(ts_records_fit(3, 2 * ts_move_rec_bytes, ts_move_rec_bytes));
    assert_false(ts_records_fit(UINT32_MAX, 1u << 20, ts_node_list_rec_bytes));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_round_trip),
        cmocka_unit_test(test_header_rejects_bad_frames),
        cmocka_unit_test(test_attr_round_trip),
        cmocka_unit_test(test_strings_and_blobs),
        cmocka_unit_test(test_truncated_and_padded_refused),
        cmocka_unit_test(test_encoder_refuses_small_buffer),
        cmocka_unit_test(test_garbage_never_crashes),
        cmocka_unit_test(test_cursor_fails_sticky),
        cmocka_unit_test(test_status_mapping),
        TS_RECORDS(REGISTER_RECORD_TEST) cmocka_unit_test(test_records_back_to_back),
        cmocka_unit_test(test_records_fit),
        cmocka_unit_test(test_tile_map_record_layout),
        cmocka_unit_test(test_record_versions),
    };
    return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}
