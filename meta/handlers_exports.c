/*
 * @file handlers_exports.c
 * See handlers_exports.h. Root squash rewrites a copy of the request's
 * payload (the fields keep their sizes) and hands the handler that copy;
 * the original frame is never written.
 */
#include "handlers_exports.h"

#include "handlers.h"
#include "handlers_session.h"
#include "handlers_subtree.h"
#include "log.h"
#include "roles.h"
#include "service.h"
#include "status.h"
#include "tiletoken.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EXPORTS_CHECK_EVERY_MS 1000

int handlers_exports_refresh(struct service *service, int64_t now_ms, bool force, char *why,
                             size_t why_cap)
{
    struct stat info;
    if (service->exports_path[0] == '\0' ||
        (!force && now_ms - service->exports_checked_ms < EXPORTS_CHECK_EVERY_MS))
        return 0;
    service->exports_checked_ms = now_ms;
    if (stat(service->exports_path, &info) != 0) {
        if (service->exports.present)
            log_warn("exports: %s is gone: every mount key mounts / read-write again",
                     service->exports_path);
        exports_clear(&service->exports);
        return 0;
    }
    if (!force && service->exports.present && info.st_size == service->exports_size &&
        info.st_mtim.tv_sec == service->exports_mtime.tv_sec &&
        info.st_mtim.tv_nsec == service->exports_mtime.tv_nsec)
        return 0;
    struct exports fresh = {0};
    char text[256];
    int rc = exports_read(service->exports_path, &fresh, text, sizeof(text));
    if (rc != 0) {
        exports_clear(&fresh);
        log_error("exports: %s; the table stays as it was", text);
        if (why)
            snprintf(why, why_cap, "%s", text);
        return force ? rc : 0;
    }
    exports_clear(&service->exports);
    service->exports = fresh;
    service->exports_mtime = info.st_mtim;
    service->exports_size = info.st_size;
    log_info("exports: %zu rules from %s", fresh.count, service->exports_path);
    return 0;
}

/* Whether op (with this payload) would change the namespace or the data. */
static bool exports_changes(const struct rpc_request *request)
{
    switch (request->header.type) {
    case TS_OP_SETATTR:
    case TS_OP_MKNOD:
    case TS_OP_MKDIR:
    case TS_OP_UNLINK:
    case TS_OP_RMDIR:
    case TS_OP_RENAME:
    case TS_OP_LINK:
    case TS_OP_SYMLINK:
    case TS_OP_SETXATTR:
    case TS_OP_REMOVEXATTR:
    case TS_OP_UNLINK_MANY:
    case TS_OP_CREATE_MANY:
    case TS_OP_COMMIT:
    case TS_OP_PUNCH:
    case TS_OP_REPLICA_DROP: return true;
    case TS_OP_OPEN: {
        struct ts_open_req open;
        /* A request that does not decode goes on to its handler's refusal. */
        return ts_open_req_decode(&open, request->payload, request->payload_len) == 0 &&
               ((open.flags & O_ACCMODE) != O_RDONLY || open.truncate != 0);
    }
    case TS_OP_TILE_MAP: {
        struct ts_tile_map_req map;
        return ts_tile_map_req_decode(&map, request->payload, request->payload_len) == 0 &&
               map.allocate != 0;
    }
    case TS_OP_DIR_LEASE: {
        /* A lease lets the mount answer creates before meta sees them: none here. */
        struct ts_dir_lease_req lease;
        return ts_dir_lease_req_decode(&lease, request->payload, request->payload_len) == 0 &&
               lease.action == TS_LEASE_GET;
    }
    default: return false;
    }
}

static uint32_t exports_squash(uint32_t id)
{
    return id == 0 ? EXPORTS_NOBODY : id;
}

/*
 * Into out (cap bytes, at least the payload's length): the payload with its
 * owners squashed. The length written, or -1 when it does not decode (the
 * handler then refuses the original).
 */
static int exports_squashed(const struct rpc_request *request, uint8_t *out, size_t cap)
{
    const uint8_t *in = request->payload;
    size_t len = request->payload_len;
    switch (request->header.type) {
    case TS_OP_SETATTR: {
        struct ts_setattr_req m;
        if (ts_setattr_req_decode(&m, in, len) != 0)
            return -1;
        m.uid = exports_squash(m.uid);
        m.gid = exports_squash(m.gid);
        return ts_setattr_req_encode(&m, out, cap);
    }
    case TS_OP_MKNOD: {
        struct ts_mknod_req m;
        if (ts_mknod_req_decode(&m, in, len) != 0)
            return -1;
        m.uid = exports_squash(m.uid);
        m.gid = exports_squash(m.gid);
        return ts_mknod_req_encode(&m, out, cap);
    }
    case TS_OP_MKDIR: {
        struct ts_mkdir_req m;
        if (ts_mkdir_req_decode(&m, in, len) != 0)
            return -1;
        m.uid = exports_squash(m.uid);
        m.gid = exports_squash(m.gid);
        return ts_mkdir_req_encode(&m, out, cap);
    }
    case TS_OP_SYMLINK: {
        struct ts_symlink_req m;
        if (ts_symlink_req_decode(&m, in, len) != 0)
            return -1;
        m.uid = exports_squash(m.uid);
        m.gid = exports_squash(m.gid);
        return ts_symlink_req_encode(&m, out, cap);
    }
    case TS_OP_CREATE_MANY: {
        struct ts_batch_req m;
        struct ts_cursor cursor;
        struct ts_writer writer;
        if (ts_batch_req_decode(&m, in, len) != 0 || m.records.len > cap)
            return -1;
        /* The records, squashed, go first in out; the message after them. */
        ts_cursor_init(&cursor, m.records.ptr, m.records.len);
        ts_writer_init(&writer, out, m.records.len);
        for (uint32_t i = 0; i < m.count; i++) {
            struct ts_create_rec record;
            if (ts_create_rec_read(&cursor, &record) != 0)
                return -1;
            record.uid = exports_squash(record.uid);
            record.gid = exports_squash(record.gid);
            ts_create_rec_write(&writer, &record);
        }
        if (writer.failed || writer.len != m.records.len)
            return -1;
        m.records.ptr = (const char *)out;
        int message = ts_batch_req_encode(&m, out + writer.len, cap - writer.len);
        if (message < 0)
            return -1;
        memmove(out, out + writer.len, (size_t)message);
        return message;
    }
    default: return -2; /* nothing to squash */
    }
}

/* Runs request's handler, its owners squashed first when rule says so. */
static int handlers_exports_squash(void *ctx, const struct exports_rule *rule,
                                   const struct rpc_request *request,
                                   struct rpc_response *response)
{
    rpc_handler_fn handler = handlers_table[request->header.type];
    if (!rule->root_squash)
        return handler(ctx, request, response);
    /* A copy a little larger than the payload: CREATE_MANY's is built twice in it. */
    size_t cap = 2 * request->payload_len + 64;
    uint8_t *copy = malloc(cap);
    if (!copy)
        return TS_ERR_NOMEM;
    int len = exports_squashed(request, copy, cap);
    int status;
    if (len >= 0) {
        struct rpc_request squashed = *request;
        squashed.payload = copy;
        squashed.payload_len = (size_t)len;
        status = handler(ctx, &squashed, response);
    } else {
        status = handler(ctx, request, response);
    }
    free(copy);
    return status;
}

int handlers_exports_gate(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct service *service = ctx;
    rpc_handler_fn handler = handlers_table[request->header.type];
    const char *key_user = request->key_user ? request->key_user : "";
    int owned = handlers_session_key_check(ctx, request, response);
    if (owned != TS_OK)
        return owned;

    if (roles_of_user(key_user) != ROLES_MOUNT)
        return handler(ctx, request, response);
    handlers_exports_refresh(service, util_monotonic_ms(), false, NULL, 0);
    const struct exports_rule *rule = exports_find(&service->exports, key_user);
    if (!rule) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "mount key %s is not in meta's exports", key_user);
        log_warn("refused %s from %s: not in the exports", ts_op_name(request->header.type),
                 key_user);
        return TS_ERR_PERM;
    }
    if (rule->read_only && exports_changes(request)) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "mount key %s has a read-only export", key_user);
        return TS_ERR_ROFS;
    }
    struct rpc_request checked = *request;
    uint8_t *mapped = NULL;
    int status;
    if (exports_rule_subtree(rule)) {
        size_t cap = 2 * request->payload_len + 64;
        size_t len;
        mapped = malloc(cap);
        if (!mapped)
            return TS_ERR_NOMEM;
        status = handlers_subtree_check(service, rule, request, mapped, cap, &len,
                                        response->error_text, sizeof(response->error_text));
        if (status != TS_OK) {
            if (status == TS_ERR_PERM)
                log_warn("refused %s from %s: %s", ts_op_name(request->header.type), key_user,
                         response->error_text);
            free(mapped);
            return status;
        }
        if (len != SIZE_MAX) {
            checked.payload = mapped;
            checked.payload_len = len;
        }
    }
    status = handlers_exports_squash(ctx, rule, &checked, response);
    free(mapped);
    return status;
}

uint32_t handlers_exports_token_rights(struct service *service, const char *key_user)
{
    const uint32_t read_write = TILETOKEN_READ | TILETOKEN_WRITE;
    if (!key_user || key_user[0] == '\0')
        return read_write;
    if (roles_of_user(key_user) != ROLES_MOUNT)
        return TILETOKEN_READ;
    const struct exports_rule *rule = exports_find(&service->exports, key_user);
    return rule && !rule->read_only ? read_write : TILETOKEN_READ;
}

void handlers_exports_table(rpc_handler_fn table[TS_OP_MAX])
{
    for (size_t op = 0; op < TS_OP_MAX; op++)
        table[op] = handlers_table[op] ? handlers_exports_gate : NULL;
}
