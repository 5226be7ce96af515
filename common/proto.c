/*
 * @file proto.c
 * Encoding and decoding of the wire protocol described in proto.h.
 *
 * The cursor and writer do all bounds checking; the per-message encoders and
 * decoders are generated from the field lists in proto.h, so each message's
 * layout is written down exactly once. A decoder accepts a frame only if its
 * fields fill it exactly: trailing bytes are as suspicious as missing ones.
 */
#include "proto.h"

#include "status.h"

#include <string.h>

/* ---- cursor ----------------------------------------------------------- */

void ts_cursor_init(struct ts_cursor *cursor, const void *buf, size_t len)
{
    cursor->pos = buf;
    cursor->left = buf ? len : 0;
    cursor->failed = false;
}

const uint8_t *ts_cursor_bytes(struct ts_cursor *cursor, size_t len)
{
    if (cursor->failed || len > cursor->left) {
        cursor->failed = true;
        return NULL;
    }
    const uint8_t *at = cursor->pos;
    cursor->pos += len;
    cursor->left -= len;
    return at;
}

static uint64_t read_le(struct ts_cursor *cursor, size_t width)
{
    const uint8_t *at = ts_cursor_bytes(cursor, width);
    uint64_t value = 0;
    if (!at)
        return 0;
    for (size_t i = 0; i < width; i++)
        value |= (uint64_t)at[i] << (8 * i);
    return value;
}

uint16_t ts_cursor_u16(struct ts_cursor *cursor) { return (uint16_t)read_le(cursor, 2); }
uint32_t ts_cursor_u32(struct ts_cursor *cursor) { return (uint32_t)read_le(cursor, 4); }
uint64_t ts_cursor_u64(struct ts_cursor *cursor) { return read_le(cursor, 8); }
int64_t ts_cursor_i64(struct ts_cursor *cursor) { return (int64_t)read_le(cursor, 8); }

static struct ts_str cursor_sized(struct ts_cursor *cursor, uint32_t len)
{
    struct ts_str str = {NULL, 0};
    const uint8_t *at = ts_cursor_bytes(cursor, len);
    if (at) {
        str.ptr = (const char *)at;
        str.len = len;
    }
    return str;
}

struct ts_str ts_cursor_str(struct ts_cursor *cursor)
{
    uint32_t len = ts_cursor_u16(cursor);
    return cursor_sized(cursor, len);
}

struct ts_str ts_cursor_blob(struct ts_cursor *cursor)
{
    uint32_t len = ts_cursor_u32(cursor);
    return cursor_sized(cursor, len);
}

void ts_cursor_attr(struct ts_cursor *cursor, struct ts_attr *attr)
{
    attr->ino = ts_cursor_u64(cursor);
    attr->mode = ts_cursor_u32(cursor);
    attr->nlink = ts_cursor_u32(cursor);
    attr->uid = ts_cursor_u32(cursor);
    attr->gid = ts_cursor_u32(cursor);
    attr->rdev = ts_cursor_u64(cursor);
    attr->size = ts_cursor_u64(cursor);
    attr->blocks = ts_cursor_u64(cursor);
    attr->atime_sec = ts_cursor_i64(cursor);
    attr->atime_nsec = ts_cursor_u32(cursor);
    attr->mtime_sec = ts_cursor_i64(cursor);
    attr->mtime_nsec = ts_cursor_u32(cursor);
    attr->ctime_sec = ts_cursor_i64(cursor);
    attr->ctime_nsec = ts_cursor_u32(cursor);
    attr->generation = ts_cursor_u64(cursor);
    attr->tile_bytes = ts_cursor_u32(cursor);
    attr->placement = ts_cursor_u32(cursor);
    attr->copies = ts_cursor_u32(cursor);
    attr->flags = ts_cursor_u32(cursor);
    attr->change = ts_cursor_u64(cursor);
}

/* ---- writer ----------------------------------------------------------- */

void ts_writer_init(struct ts_writer *writer, void *buf, size_t cap)
{
    writer->buf = buf;
    writer->cap = buf ? cap : 0;
    writer->len = 0;
    writer->failed = false;
}

void ts_writer_bytes(struct ts_writer *writer, const void *bytes, size_t len)
{
    if (writer->failed || len > writer->cap - writer->len) {
        writer->failed = true;
        return;
    }
    if (len > 0)
        memcpy(writer->buf + writer->len, bytes, len);
    writer->len += len;
}

static void write_le(struct ts_writer *writer, uint64_t value, size_t width)
{
    uint8_t bytes[8];
    for (size_t i = 0; i < width; i++)
        bytes[i] = (uint8_t)(value >> (8 * i));
    ts_writer_bytes(writer, bytes, width);
}

void ts_writer_u16(struct ts_writer *writer, uint16_t value) { write_le(writer, value, 2); }
void ts_writer_u32(struct ts_writer *writer, uint32_t value) { write_le(writer, value, 4); }
void ts_writer_u64(struct ts_writer *writer, uint64_t value) { write_le(writer, value, 8); }
void ts_writer_i64(struct ts_writer *writer, int64_t value)
{
    write_le(writer, (uint64_t)value, 8);
}

void ts_writer_str(struct ts_writer *writer, struct ts_str str)
{
    if (str.len > TS_MAX_STRING) {
        writer->failed = true;
        return;
    }
    ts_writer_u16(writer, (uint16_t)str.len);
    ts_writer_bytes(writer, str.ptr, str.len);
}

void ts_writer_blob(struct ts_writer *writer, struct ts_str blob)
{
    ts_writer_u32(writer, blob.len);
    ts_writer_bytes(writer, blob.ptr, blob.len);
}

void ts_writer_attr(struct ts_writer *writer, const struct ts_attr *attr)
{
    ts_writer_u64(writer, attr->ino);
    ts_writer_u32(writer, attr->mode);
    ts_writer_u32(writer, attr->nlink);
    ts_writer_u32(writer, attr->uid);
    ts_writer_u32(writer, attr->gid);
    ts_writer_u64(writer, attr->rdev);
    ts_writer_u64(writer, attr->size);
    ts_writer_u64(writer, attr->blocks);
    ts_writer_i64(writer, attr->atime_sec);
    ts_writer_u32(writer, attr->atime_nsec);
    ts_writer_i64(writer, attr->mtime_sec);
    ts_writer_u32(writer, attr->mtime_nsec);
    ts_writer_i64(writer, attr->ctime_sec);
    ts_writer_u32(writer, attr->ctime_nsec);
    ts_writer_u64(writer, attr->generation);
    ts_writer_u32(writer, attr->tile_bytes);
    ts_writer_u32(writer, attr->placement);
    ts_writer_u32(writer, attr->copies);
    ts_writer_u32(writer, attr->flags);
    ts_writer_u64(writer, attr->change);
}

struct ts_str ts_str_of(const char *s)
{
    struct ts_str str = {s, s ? (uint32_t)strlen(s) : 0};
    return str;
}

int ts_str_copy(struct ts_str str, char *out, size_t cap)
{
    if (cap == 0 || str.len >= cap)
        return -1;
    if (str.len > 0)
        memcpy(out, str.ptr, str.len);
    out[str.len] = '\0';
    return 0;
}

/* ---- generated message codecs ---------------------------------------- */

#define WRITE_FIELD_U32(writer, value) ts_writer_u32(writer, value)
#define WRITE_FIELD_U64(writer, value) ts_writer_u64(writer, value)
#define WRITE_FIELD_I64(writer, value) ts_writer_i64(writer, value)
#define WRITE_FIELD_STR(writer, value) ts_writer_str(writer, value)
#define WRITE_FIELD_BLOB(writer, value) ts_writer_blob(writer, value)
#define WRITE_FIELD_ATTR(writer, value) ts_writer_attr(writer, &(value))
#define ENCODE_FIELD(kind, name) WRITE_FIELD_##kind(&writer, m->name);

#define READ_FIELD_U32(cursor, field) field = ts_cursor_u32(cursor)
#define READ_FIELD_U64(cursor, field) field = ts_cursor_u64(cursor)
#define READ_FIELD_I64(cursor, field) field = ts_cursor_i64(cursor)
#define READ_FIELD_STR(cursor, field) field = ts_cursor_str(cursor)
#define READ_FIELD_BLOB(cursor, field) field = ts_cursor_blob(cursor)
#define READ_FIELD_ATTR(cursor, field) ts_cursor_attr(cursor, &(field))
#define DECODE_FIELD(kind, name) READ_FIELD_##kind(&cursor, m->name);

#define DEFINE_MESSAGE(name, fields)                                                               \
    int ts_##name##_encode(const struct ts_##name *m, uint8_t *buf, size_t cap)                   \
    {                                                                                              \
        struct ts_writer writer;                                                                   \
        ts_writer_init(&writer, buf, cap);                                                         \
        (void)m;                                                                                   \
        fields(ENCODE_FIELD) return writer.failed ? -1 : (int)writer.len;                          \
    }                                                                                              \
    int ts_##name##_decode(struct ts_##name *m, const uint8_t *buf, size_t len)                    \
    {                                                                                              \
        struct ts_cursor cursor;                                                                   \
        memset(m, 0, sizeof(*m));                                                                  \
        ts_cursor_init(&cursor, buf, len);                                                         \
        fields(DECODE_FIELD) return (cursor.failed || cursor.left != 0) ? -1 : 0;                  \
    }
TS_MESSAGES(DEFINE_MESSAGE)

/* ---- generated record codecs ------------------------------------------ */

/*
 * Starts a record of the given version: for version > 0 writes the prefix
 * with a body length of 0, which record_write_end() fills in. Returns where
 * the body starts.
 */
static size_t record_write_begin(struct ts_writer *writer, uint16_t version)
{
    if (version > 0) {
        ts_writer_u16(writer, version);
        ts_writer_u32(writer, 0);
    }
    return writer->len;
}

static void record_write_end(struct ts_writer *writer, uint16_t version, size_t body_start)
{
    if (version == 0 || writer->failed)
        return;
    size_t body_bytes = writer->len - body_start;
    if (body_bytes > UINT32_MAX) {
        writer->failed = true;
        return;
    }
    for (size_t i = 0; i < 4; i++)
        writer->buf[body_start - 4 + i] = (uint8_t)(body_bytes >> (8 * i));
}

/*
 * Opens a record of the reader's version: for version 0 the body is the
 * rest of the cursor, else the body_bytes the prefix announces. Returns the
 * record's version, or -1 (cursor failed) for bytes that end inside the
 * record or a version older than the reader's.
 */
static int record_read_begin(struct ts_cursor *cursor, uint16_t version, struct ts_cursor *body)
{
    if (version == 0) {
        *body = *cursor;
        return cursor->failed ? -1 : 0;
    }
    uint16_t record_version = ts_cursor_u16(cursor);
    uint32_t body_bytes = ts_cursor_u32(cursor);
    const uint8_t *at = ts_cursor_bytes(cursor, body_bytes);
    if (!at || record_version < version) {
        cursor->failed = true;
        return -1;
    }
    ts_cursor_init(body, at, body_bytes);
    return record_version;
}

/*
 * Ends a record read through body: a record of version 0 moves the cursor
 * past its fields; a versioned one must have held every field the reader
 * knows, and, when of the reader's own version, nothing else (a newer
 * record's further fields are skipped). Returns 0 or -1 (cursor failed).
 */
static int record_read_end(struct ts_cursor *cursor, uint16_t version, int record_version,
                           const struct ts_cursor *body)
{
    if (version == 0) {
        *cursor = *body;
        return cursor->failed ? -1 : 0;
    }
    if (body->failed || (record_version == version && body->left != 0)) {
        cursor->failed = true;
        return -1;
    }
    return 0;
}

#define WRITE_RECORD_FIELD(kind, name) WRITE_FIELD_##kind(writer, r->name);
#define READ_RECORD_FIELD(kind, name) READ_FIELD_##kind(&body, r->name);

#define DEFINE_RECORD(name, fields, version)                                                       \
    void ts_##name##_rec_write(struct ts_writer *writer, const struct ts_##name##_rec *r)          \
    {                                                                                              \
        size_t body_start = record_write_begin(writer, (version));                                 \
        fields(WRITE_RECORD_FIELD) record_write_end(writer, (version), body_start);                \
    }                                                                                              \
    int ts_##name##_rec_read(struct ts_cursor *cursor, struct ts_##name##_rec *r)                  \
    {                                                                                              \
        struct ts_cursor body;                                                                     \
        memset(r, 0, sizeof(*r));                                                                  \
        int record_version = record_read_begin(cursor, (version), &body);                          \
        if (record_version < 0)                                                                    \
            return -1;                                                                             \
        fields(READ_RECORD_FIELD) return record_read_end(cursor, (version), record_version,        \
                                                         &body);                                   \
    }
TS_RECORDS(DEFINE_RECORD)

bool ts_records_fit(uint32_t count, size_t len, size_t min_record_bytes)
{
    return (uint64_t)count * min_record_bytes <= len;
}

/* ---- the tile stream --------------------------------------------- */

static const uint32_t stream_magics[] = {
    [TS_STREAM_READ] = TS_STREAM_MAGIC,
    [TS_STREAM_READ_KEPT] = TS_STREAM_KEPT_MAGIC,
    [TS_STREAM_WRITE] = TS_STREAM_WRITE_MAGIC,
};

/* The stream's token: TILE_READ_REQ's own is a STR, the stream's requests are fixed-size. */
#define STREAM_TOKEN_BYTES 32
#define STREAM_FIELDS_BYTES 32 /* ino, tile, version, offset, length */

void ts_stream_req_encode(const struct ts_tile_read_req *request, enum ts_stream_kind kind,
                          uint32_t crc, uint8_t out[TS_STREAM_REQ_BYTES])
{
    struct ts_writer writer;
    bool token = request->token.len == STREAM_TOKEN_BYTES && request->token_expiry != 0;
    memset(out, 0, TS_STREAM_REQ_BYTES);
    ts_writer_init(&writer, out, TS_STREAM_REQ_BYTES);
    ts_writer_u32(&writer, stream_magics[kind]);
    ts_writer_u64(&writer, request->ino);
    ts_writer_u64(&writer, request->tile);
    ts_writer_u64(&writer, request->version);
    ts_writer_u32(&writer, request->offset);
    ts_writer_u32(&writer, request->length);
    ts_writer_u32(&writer, crc);
    ts_writer_u64(&writer, token ? request->token_expiry : 0);
    if (token)
        memcpy(out + writer.len, request->token.ptr, STREAM_TOKEN_BYTES);
}

int ts_stream_req_decode(struct ts_tile_read_req *request, enum ts_stream_kind *kind,
                         uint32_t *crc, const uint8_t in[TS_STREAM_REQ_BYTES])
{
    _Static_assert(4 + STREAM_FIELDS_BYTES + 4 + 8 + STREAM_TOKEN_BYTES == TS_STREAM_REQ_BYTES,
                   "the stream request's layout (proto.h)");
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, in, TS_STREAM_REQ_BYTES - STREAM_TOKEN_BYTES);
    uint32_t magic = ts_cursor_u32(&cursor);
    size_t known = 0;
    while (known < sizeof(stream_magics) / sizeof(stream_magics[0]) &&
           stream_magics[known] != magic)
        known++;
    memset(request, 0, sizeof(*request));
    request->ino = ts_cursor_u64(&cursor);
    request->tile = ts_cursor_u64(&cursor);
    request->version = ts_cursor_u64(&cursor);
    request->offset = ts_cursor_u32(&cursor);
    request->length = ts_cursor_u32(&cursor);
    *crc = ts_cursor_u32(&cursor);
    request->token_expiry = ts_cursor_u64(&cursor);
    if (known == sizeof(stream_magics) / sizeof(stream_magics[0]) || cursor.failed ||
        request->length > TS_MAX_DATA_BYTES)
        return TS_ERR_BADMSG;
    /* Expiry 0: no token (tokens off), as TILE_MAP's holders say; its
     * bytes are then zeros, so that a request has one encoding. */
    const uint8_t *token = in + TS_STREAM_REQ_BYTES - STREAM_TOKEN_BYTES;
    if (request->token_expiry == 0) {
        for (size_t i = 0; i < STREAM_TOKEN_BYTES; i++)
            if (token[i] != 0)
                return TS_ERR_BADMSG;
    } else
        request->token = (struct ts_str){.ptr = (const char *)token, .len = STREAM_TOKEN_BYTES};
    *kind = (enum ts_stream_kind)known;
    return TS_OK;
}

void ts_stream_rep_encode(int32_t status, uint32_t data_bytes, uint8_t out[TS_STREAM_REP_BYTES])
{
    struct ts_writer writer;
    ts_writer_init(&writer, out, TS_STREAM_REP_BYTES);
    ts_writer_u32(&writer, TS_STREAM_MAGIC);
    ts_writer_u32(&writer, (uint32_t)status);
    ts_writer_u32(&writer, data_bytes);
}

int ts_stream_rep_decode(int32_t *status, uint32_t *data_bytes,
                         const uint8_t in[TS_STREAM_REP_BYTES])
{
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, in, TS_STREAM_REP_BYTES);
    uint32_t magic = ts_cursor_u32(&cursor);
    *status = (int32_t)ts_cursor_u32(&cursor);
    *data_bytes = ts_cursor_u32(&cursor);
    if (magic != TS_STREAM_MAGIC || *data_bytes > TS_MAX_DATA_BYTES ||
        (*status != TS_OK && *data_bytes != 0))
        return TS_ERR_BADMSG;
    return TS_OK;
}

/* ---- header ----------------------------------------------------------- */

void ts_header_encode(const struct ts_header *header, uint8_t out[TS_HEADER_BYTES])
{
    struct ts_writer writer;
    ts_writer_init(&writer, out, TS_HEADER_BYTES);
    ts_writer_u32(&writer, header->magic);
    ts_writer_u16(&writer, header->version);
    ts_writer_u16(&writer, header->type);
    ts_writer_u64(&writer, header->request_id);
    ts_writer_u32(&writer, header->flags);
    ts_writer_u32(&writer, (uint32_t)header->status);
    ts_writer_u32(&writer, header->payload_bytes);
    ts_writer_u32(&writer, header->data_bytes);
}

int ts_header_decode(struct ts_header *header, const uint8_t *frame, size_t frame_len)
{
    struct ts_cursor cursor;
    memset(header, 0, sizeof(*header));
    if (frame_len < TS_HEADER_BYTES)
        return TS_ERR_BADMSG;
    if (frame_len > TS_MAX_FRAME_BYTES)
        return TS_ERR_TOOBIG;
    ts_cursor_init(&cursor, frame, TS_HEADER_BYTES);
    header->magic = ts_cursor_u32(&cursor);
    header->version = ts_cursor_u16(&cursor);
    header->type = ts_cursor_u16(&cursor);
    header->request_id = ts_cursor_u64(&cursor);
    header->flags = ts_cursor_u32(&cursor);
    header->status = (int32_t)ts_cursor_u32(&cursor);
    header->payload_bytes = ts_cursor_u32(&cursor);
    header->data_bytes = ts_cursor_u32(&cursor);
    if (header->magic != TS_PROTO_MAGIC)
        return TS_ERR_BADMSG;
    if (header->version != TS_PROTO_VERSION)
        return TS_ERR_PROTO;
    if (header->payload_bytes != frame_len - TS_HEADER_BYTES)
        return TS_ERR_BADMSG;
    if (header->data_bytes > TS_MAX_DATA_BYTES)
        return TS_ERR_TOOBIG;
    return TS_OK;
}

uint64_t ts_hold_mix(uint64_t ino)
{
    ino ^= ino >> 30;
    ino *= 0xbf58476d1ce4e5b9ull;
    ino ^= ino >> 27;
    ino *= 0x94d049bb133111ebull;
    return ino ^ (ino >> 31);
}

const char *ts_op_name(uint16_t type)
{
    switch (type) {
    case TS_OP_PING: return "PING";
    case TS_OP_LOOKUP: return "LOOKUP";
    case TS_OP_GETATTR: return "GETATTR";
    case TS_OP_SETATTR: return "SETATTR";
    case TS_OP_MKNOD: return "MKNOD";
    case TS_OP_MKDIR: return "MKDIR";
    case TS_OP_UNLINK: return "UNLINK";
    case TS_OP_RMDIR: return "RMDIR";
    case TS_OP_RENAME: return "RENAME";
    case TS_OP_LINK: return "LINK";
    case TS_OP_SYMLINK: return "SYMLINK";
    case TS_OP_READLINK: return "READLINK";
    case TS_OP_READDIR: return "READDIR";
    case TS_OP_OPEN: return "OPEN";
    case TS_OP_RELEASE: return "RELEASE";
    case TS_OP_STATFS: return "STATFS";
    case TS_OP_SETXATTR: return "SETXATTR";
    case TS_OP_GETXATTR: return "GETXATTR";
    case TS_OP_LISTXATTR: return "LISTXATTR";
    case TS_OP_REMOVEXATTR: return "REMOVEXATTR";
    case TS_OP_READDIRPLUS: return "READDIRPLUS";
    case TS_OP_RELEASE_MANY: return "RELEASE_MANY";
    case TS_OP_SESSION_RENEW: return "SESSION_RENEW";
    case TS_OP_SESSION_HOLDS: return "SESSION_HOLDS";
    case TS_OP_UNLINK_MANY: return "UNLINK_MANY";
    case TS_OP_DIR_LEASE: return "DIR_LEASE";
    case TS_OP_CREATE_MANY: return "CREATE_MANY";
    case TS_OP_TILE_MAP: return "TILE_MAP";
    case TS_OP_COMMIT: return "COMMIT";
    case TS_OP_NODE_LIST: return "NODE_LIST";
    case TS_OP_REPLICA_DROP: return "REPLICA_DROP";
    case TS_OP_PROFILE_SET: return "PROFILE_SET";
    case TS_OP_PROFILE_RECORD: return "PROFILE_RECORD";
    case TS_OP_PROFILE_GET: return "PROFILE_GET";
    case TS_OP_MOVE_BEGIN: return "MOVE_BEGIN";
    case TS_OP_MOVE_COMMIT: return "MOVE_COMMIT";
    case TS_OP_MOVE_ABORT: return "MOVE_ABORT";
    case TS_OP_MOVE_LIST: return "MOVE_LIST";
    case TS_OP_APPLY_LOCK: return "APPLY_LOCK";
    case TS_OP_HEARTBEAT: return "HEARTBEAT";
    case TS_OP_TILE_RECONCILE: return "TILE_RECONCILE";
    case TS_OP_TILE_HOLDERS: return "TILE_HOLDERS";
    case TS_OP_NODE_ADMIN: return "NODE_ADMIN";
    case TS_OP_HEALTH: return "HEALTH";
    case TS_OP_REPAIR_SCAN: return "REPAIR_SCAN";
    case TS_OP_METRICS_LIST: return "METRICS_LIST";
    case TS_OP_TILE_WRITE: return "TILE_WRITE";
    case TS_OP_TILE_READ: return "TILE_READ";
    case TS_OP_TILE_SYNC: return "TILE_SYNC";
    case TS_OP_TILE_TRUNCATE: return "TILE_TRUNCATE";
    case TS_OP_TILE_STREAM: return "TILE_STREAM";
    case TS_OP_TILE_PULL: return "TILE_PULL";
    case TS_OP_TILE_FENCE: return "TILE_FENCE";
    case TS_OP_NODE_THROTTLE: return "NODE_THROTTLE";
    case TS_OP_NODE_STATS: return "NODE_STATS";
    case TS_OP_TILE_CHECK: return "TILE_CHECK";
    case TS_OP_NODE_SCRUB: return "NODE_SCRUB";
    case TS_OP_CLUSTER_ID: return "CLUSTER_ID";
    default: return "?";
    }
}
