/*
 * @file handlers_subtree.c
 * See handlers_subtree.h. Each op is decoded, each of its inode fields
 * mapped and checked in place (subtree_field()), and the message encoded
 * again into the caller's buffer: the inode fields keep their sizes, so
 * only LOOKUP's `..` made `.` changes a length. Records of a batch are
 * rewritten into the first part of the buffer and the message, pointing
 * at them, after them; it is then moved to the front. All checks of one
 * request run in one read transaction.
 */
#include "handlers_subtree.h"

#include "handlers_i.h"
#include "log.h"
#include "proto.h"
#include "reply.h"
#include "service.h"
#include "sessions.h"
#include "status.h"
#include "subtree.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* What a body returns for a payload that does not decode: its handler refuses it. */
#define SUBTREE_UNDECODED (-1)

struct subtree_gate {
    struct service *service;
    const struct exports_rule *rule;
    const struct rpc_request *request;
    struct store_txn *txn;
    uint64_t top;            /* the exported directory */
    uint64_t mount;          /* the sender's mount (sessions) */
    bool detached_ok;        /* SESSION_HOLDS: unlinked inodes may be announced */
    int status;              /* the first refusal */
    uint8_t *out;
    size_t cap;
    int len;                 /* bytes written to out, or SUBTREE_UNDECODED */
    char *why;
    size_t why_cap;
};

/* Maps *ino (1: the exported directory) and checks that it is under it. */
static void subtree_field(struct subtree_gate *gate, uint64_t *ino)
{
    enum subtree_place place;
    if (gate->status != TS_OK || *ino == 0) /* 0 names no inode: the handler refuses it */
        return;
    if (*ino == TS_ROOT_INO) {
        *ino = gate->top;
        return;
    }
    int err = subtree_place(gate->txn, gate->top, *ino, &place);
    if (err == -ELOOP) {
        log_error("inode %llu: parents walk longer than %u steps: the parents table loops?",
                  (unsigned long long)*ino, SUBTREE_STEPS_MAX);
        place = SUBTREE_OUTSIDE;
    } else if (err < 0) {
        gate->status = reply_store_status(err);
        return;
    }
    if (place == SUBTREE_UNDER)
        return;
    if (place == SUBTREE_DETACHED &&
        (gate->detached_ok || sessions_holds(gate->service->sessions, gate->mount, *ino) > 0))
        return;
    gate->status = TS_ERR_PERM;
    snprintf(gate->why, gate->why_cap, "inode %llu is not under %s, the export of %s",
             (unsigned long long)*ino, gate->rule->path, gate->request->key_user);
}

/* A message with up to two inode fields: decode, map, encode. */
#define SUBTREE_MESSAGE(op, msg, ...)                                                              \
    case TS_OP_##op: {                                                                             \
        struct ts_##msg m;                                                                         \
        if (ts_##msg##_decode(&m, in, len) != 0)                                                   \
            return SUBTREE_UNDECODED;                                                              \
        uint64_t *fields[] = {__VA_ARGS__};                                                        \
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)                            \
            subtree_field(gate, fields[i]);                                                        \
        return ts_##msg##_encode(&m, gate->out, gate->cap);                                        \
    }

/*
 * A message whose blob `blob` holds `count` records `rec` with one inode
 * field each: records mapped into the front of out, the message after
 * them, then moved to the front.
 */
#define SUBTREE_BATCH(op, msg, blob, rec, field)                                                   \
    case TS_OP_##op: {                                                                             \
        struct ts_##msg m;                                                                         \
        struct ts_cursor cursor;                                                                   \
        struct ts_writer writer;                                                                   \
        if (ts_##msg##_decode(&m, in, len) != 0 || m.blob.len > gate->cap)                         \
            return SUBTREE_UNDECODED;                                                              \
        ts_cursor_init(&cursor, m.blob.ptr, m.blob.len);                                           \
        ts_writer_init(&writer, gate->out, m.blob.len);                                            \
        for (uint32_t i = 0; i < m.count; i++) {                                                   \
            struct ts_##rec##_rec record;                                                          \
            if (ts_##rec##_rec_read(&cursor, &record) != 0)                                        \
                return SUBTREE_UNDECODED;                                                          \
            subtree_field(gate, &record.field);                                                    \
            ts_##rec##_rec_write(&writer, &record);                                                \
        }                                                                                          \
        if (writer.failed || writer.len != m.blob.len)                                             \
            return SUBTREE_UNDECODED;                                                              \
        m.blob.ptr = (const char *)gate->out;                                                      \
        int message = ts_##msg##_encode(&m, gate->out + writer.len, gate->cap - writer.len);       \
        if (message < 0)                                                                           \
            return SUBTREE_UNDECODED;                                                              \
        memmove(gate->out, gate->out + writer.len, (size_t)message);                               \
        return message;                                                                            \
    }

/* The payload rewritten into gate->out: its length, SUBTREE_UNDECODED, or -2 (no inode in it). */
static int subtree_rewrite(struct subtree_gate *gate)
{
    const uint8_t *in = gate->request->payload;
    size_t len = gate->request->payload_len;
    switch (gate->request->header.type) {
    case TS_OP_LOOKUP: {
        struct ts_lookup_req m;
        if (ts_lookup_req_decode(&m, in, len) != 0)
            return SUBTREE_UNDECODED;
        subtree_field(gate, &m.parent);
        /* `..` of the mount's root is the root, as on a local chroot. */
        if (m.parent == gate->top && m.name.len == 2 && memcmp(m.name.ptr, "..", 2) == 0)
            m.name = ts_str_of(".");
        return ts_lookup_req_encode(&m, gate->out, gate->cap);
    }
        SUBTREE_MESSAGE(GETATTR, getattr_req, &m.ino)
        SUBTREE_MESSAGE(SETATTR, setattr_req, &m.ino)
        SUBTREE_MESSAGE(MKNOD, mknod_req, &m.parent)
        SUBTREE_MESSAGE(MKDIR, mkdir_req, &m.parent)
        SUBTREE_MESSAGE(UNLINK, name_req, &m.parent)
        SUBTREE_MESSAGE(RMDIR, name_req, &m.parent)
        SUBTREE_MESSAGE(RENAME, rename_req, &m.parent, &m.new_parent)
        SUBTREE_MESSAGE(LINK, link_req, &m.ino, &m.new_parent)
        SUBTREE_MESSAGE(SYMLINK, symlink_req, &m.parent)
        SUBTREE_MESSAGE(READLINK, readlink_req, &m.ino)
        SUBTREE_MESSAGE(READDIR, readdir_req, &m.ino)
        SUBTREE_MESSAGE(READDIRPLUS, readdirplus_req, &m.ino)
        SUBTREE_MESSAGE(OPEN, open_req, &m.ino)
        SUBTREE_MESSAGE(RELEASE, release_req, &m.ino)
        SUBTREE_MESSAGE(SETXATTR, setxattr_req, &m.ino)
        SUBTREE_MESSAGE(GETXATTR, getxattr_req, &m.ino)
        SUBTREE_MESSAGE(LISTXATTR, listxattr_req, &m.ino)
        SUBTREE_MESSAGE(REMOVEXATTR, removexattr_req, &m.ino)
        SUBTREE_MESSAGE(DIR_LEASE, dir_lease_req, &m.dir)
        SUBTREE_MESSAGE(TILE_MAP, tile_map_req, &m.ino)
        SUBTREE_MESSAGE(COMMIT, commit_req, &m.ino)
        SUBTREE_MESSAGE(PUNCH, punch_req, &m.ino)
        SUBTREE_MESSAGE(REPLICA_DROP, replica_drop_req, &m.ino)
        SUBTREE_BATCH(RELEASE_MANY, release_many_req, inos, release, ino)
        SUBTREE_BATCH(UNLINK_MANY, batch_req, records, unlink, parent)
        SUBTREE_BATCH(CREATE_MANY, batch_req, records, create, parent)
        SUBTREE_BATCH(SESSION_HOLDS, session_holds_req, records, hold, ino)
        SUBTREE_BATCH(PROFILE_RECORD, profile_record_req, records, profile_count, ino)
    default: return -2; /* names no inode (STATFS, SESSION_RENEW, PING, ...) */
    }
}

static int subtree_body(struct store_txn *txn, void *arg)
{
    struct subtree_gate *gate = arg;
    int err = subtree_resolve(txn, gate->rule->path, &gate->top);
    gate->txn = txn;
    gate->status = TS_OK;
    if (err == -ENOENT || err == -ENOTDIR || err == -EINVAL) {
        snprintf(gate->why, gate->why_cap, "%s, the export of %s, is not a directory now",
                 gate->rule->path, gate->request->key_user);
        return TS_ERR_PERM;
    }
    if (err < 0)
        return reply_store_status(err);
    gate->len = subtree_rewrite(gate);
    if (gate->status == TS_OK && gate->len == SUBTREE_UNDECODED) {
        /* Refused here rather than passed on unchecked: a batch handler
         * might act on its records before finding the bad one. */
        snprintf(gate->why, gate->why_cap, "%s does not decode",
                 ts_op_name(gate->request->header.type));
        return TS_ERR_BADMSG;
    }
    return gate->status;
}

int handlers_subtree_check(struct service *service, const struct exports_rule *rule,
                           const struct rpc_request *request, uint8_t *out, size_t cap,
                           size_t *out_len, char *why, size_t why_cap)
{
    struct subtree_gate gate = {
        .service = service,
        .rule = rule,
        .request = request,
        .mount = handlers_sender_mount(request),
        .detached_ok = request->header.type == TS_OP_SESSION_HOLDS,
        .out = out,
        .cap = cap,
        .why = why,
        .why_cap = why_cap,
    };
    int status = store_read(service->store, subtree_body, &gate);
    if (status != TS_OK)
        return status;
    *out_len = gate.len < 0 ? SIZE_MAX : (size_t)gate.len; /* -2: no inode named */
    return TS_OK;
}
