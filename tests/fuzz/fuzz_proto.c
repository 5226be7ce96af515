/*
 * libFuzzer target: every decoder of the wire protocol, messages and
 * records, on arbitrary bytes.
 * The decoders must never read outside the input (ASan watches) and a
 * successful decode must only point inside it.
 */
#include "proto.h"
#include "status.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static void check_inside(struct ts_str str, const uint8_t *data, size_t size)
{
    if (str.len == 0)
        return;
    assert((const uint8_t *)str.ptr >= data);
    assert((const uint8_t *)str.ptr + str.len <= data + size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ts_header header;
    (void)ts_header_decode(&header, data, size);

#define FUZZ_DECODE(name, fields)                                                                  \
    {                                                                                              \
        struct ts_##name message;                                                                  \
        if (ts_##name##_decode(&message, data, size) == 0) {                                       \
            uint8_t again[1 << 16];                                                                \
            int len = ts_##name##_encode(&message, again, sizeof(again));                          \
            /* what decodes re-encodes to the same bytes */                                        \
            assert(size > sizeof(again) || (len == (int)size));                                   \
            assert(size > sizeof(again) || memcmp(again, data, size) == 0);                      \
        }                                                                                          \
    }
    TS_MESSAGES(FUZZ_DECODE)
#undef FUZZ_DECODE

    struct ts_readdir_rep readdir;
    if (ts_readdir_rep_decode(&readdir, data, size) == 0)
        check_inside(readdir.entries, data, size);

#define CHECK_FIELD_U32(field)
#define CHECK_FIELD_U64(field)
#define CHECK_FIELD_I64(field)
#define CHECK_FIELD_ATTR(field)
#define CHECK_FIELD_STR(field) check_inside(field, data, size);
#define CHECK_FIELD_BLOB(field) check_inside(field, data, size);
#define CHECK_FIELD(kind, name) CHECK_FIELD_##kind(record.name)
#define FUZZ_RECORDS(name, fields, version)                                                        \
    {                                                                                              \
        struct ts_cursor cursor;                                                                   \
        struct ts_##name##_rec record;                                                             \
        ts_cursor_init(&cursor, data, size);                                                       \
        while (cursor.left > 0 && ts_##name##_rec_read(&cursor, &record) == 0) {                   \
            fields(CHECK_FIELD)                                                                    \
        }                                                                                          \
    }
    /* Every record kind, read back to back until the bytes run out or one
     * is refused; each string a record read points inside the input. */
    TS_RECORDS(FUZZ_RECORDS)
#undef FUZZ_RECORDS

    /* The tile stream's fixed-size heads, a write's CRC among them. */
    if (size >= TS_STREAM_REQ_BYTES) {
        struct ts_tile_read_req request;
        enum ts_stream_kind kind;
        uint32_t crc = 0;
        if (ts_stream_req_decode(&request, &kind, &crc, data) == TS_OK) {
            uint8_t again[TS_STREAM_REQ_BYTES];
            ts_stream_req_encode(&request, kind, crc, again);
            assert(memcmp(again, data, TS_STREAM_REQ_BYTES) == 0);
        }
    }
    if (size >= TS_STREAM_REP_BYTES) {
        int32_t status;
        uint32_t data_bytes;
        (void)ts_stream_rep_decode(&status, &data_bytes, data);
    }
    return 0;
}
