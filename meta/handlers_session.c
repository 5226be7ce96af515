/*
 * @file handlers_session.c
 * See handlers_session.h and sessions.h. Only a mount that names its
 * sockets ('M' + mount id, as for DIR_LEASE) has a session; a request of
 * any other sender is TS_ERR_INVAL. An announced open of an inode that no
 * longer exists is not counted but answered as lost, so the mount fails
 * that file's I/O rather than reading or writing tiles that are gone.
 */
#include "handlers_session.h"

#include "inodes.h"
#include "leases.h"
#include "log.h"
#include "reply.h"
#include "service.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* The sender's mount id, or 0 with the refusal's text written. */
static uint64_t session_mount_of(const struct rpc_request *request, struct rpc_response *response)
{
    uint64_t mount = leases_mount_of(request->peer, request->peer_len);
    if (mount == 0)
        snprintf(response->error_text, sizeof(response->error_text),
                 "%s: only a mount that names its sockets ('M' + mount id) has a session",
                 ts_op_name(request->header.type));
    return mount;
}

/* Deletes the orphans that lost their last holder with a session's end. */
static void session_reap_freed(struct service *service, struct sessions_freed *freed)
{
    service_reap(service, freed->inos, freed->count, util_monotonic_ms(), NULL);
    sessions_freed_clear(freed);
}

int handlers_session_key_check(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response)
{
    struct service *service = ctx;
    uint64_t mount = leases_mount_of(request->peer, request->peer_len);
    char owner[128] = "";
    if (mount == 0 || !request->key_user || request->key_user[0] == '\0')
        return TS_OK;
    int rc = sessionkeys_claim(service->session_keys, mount, request->key_user,
                               util_monotonic_ms(), owner, sizeof(owner));
    if (rc == 0)
        return TS_OK;
    const char *address = request->peer_address && *request->peer_address
                              ? request->peer_address
                              : "a local peer";
    if (rc == -ENOSPC) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "meta holds %d mount session ids in use; try again later", SESSIONKEYS_MAX);
        log_warn("refused %s from key %s at %s: no room for its mount session id %016llx "
                 "(%d in use)",
                 ts_op_name(request->header.type), request->key_user, address,
                 (unsigned long long)mount, SESSIONKEYS_MAX);
        return TS_ERR_BUSY;
    }
    snprintf(response->error_text, sizeof(response->error_text),
             "mount session %016llx belongs to another key", (unsigned long long)mount);
    log_warn("refused %s from key %s at %s: its mount session id %016llx belongs to key %s",
             ts_op_name(request->header.type), request->key_user, address,
             (unsigned long long)mount, owner);
    return TS_ERR_PERM;
}

int handlers_session_renew(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_session_renew_req message;
    struct ts_session_renew_rep reply = {0};
    uint64_t mount;

    if (ts_session_renew_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    mount = session_mount_of(request, response);
    if (mount == 0)
        return TS_ERR_INVAL;
    reply.lease_ms = (uint32_t)sessions_lease_ms(service->sessions);
    if (message.ending)
        metricsdir_forget(service->metrics_dir, TS_METRICS_MOUNT, mount);
    else if (metricsdir_note(service->metrics_dir, TS_METRICS_MOUNT, mount, message.machine,
                             message.metrics, util_monotonic_ms()) < 0)
        log_debug("mount %016llx's metrics endpoint is not listed", (unsigned long long)mount);
    if (message.ending) {
        struct sessions_freed freed = {0};
        if (sessions_end(service->sessions, mount, &freed) < 0)
            log_warn("out of memory while ending the session of mount %016llx: some orphans "
                     "stay until the next start",
                     (unsigned long long)mount);
        session_reap_freed(service, &freed);
        reply.state = TS_SESSION_OK;
    } else {
        reply.state = sessions_renew(service->sessions, mount, message.holds, message.fingerprint,
                                     util_monotonic_ms());
    }
    return REPLY_ENCODE(session_renew_rep, &reply, response);
}

/* The announced records, split into those whose inode exists and the lost. */
struct holds_op {
    size_t count;
    uint64_t *inos;
    uint32_t *counts;
    bool *exists;
};

static int holds_body(struct store_txn *txn, void *arg)
{
    struct holds_op *op = arg;
    for (size_t i = 0; i < op->count; i++) {
        struct inodes_record record;
        int err = inodes_get(txn, op->inos[i], &record);
        if (err < 0 && err != -ENOENT)
            return reply_store_status(err);
        op->exists[i] = err == 0;
    }
    return TS_OK;
}

static int holds_parse(struct holds_op *op, const struct ts_session_holds_req *message)
{
    op->count = message->count;
    op->inos = calloc(op->count ? op->count : 1, sizeof(*op->inos));
    op->counts = calloc(op->count ? op->count : 1, sizeof(*op->counts));
    op->exists = calloc(op->count ? op->count : 1, sizeof(*op->exists));
    if (!op->inos || !op->counts || !op->exists)
        return TS_ERR_NOMEM;
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, message->records.ptr, message->records.len);
    for (size_t i = 0; i < op->count; i++) {
        struct ts_hold_rec record;
        if (ts_hold_rec_read(&cursor, &record) != 0 || record.ino == 0 || record.count == 0)
            return TS_ERR_BADMSG;
        op->inos[i] = record.ino;
        op->counts[i] = record.count;
    }
    return TS_OK;
}

/* Answers the lost records, then keeps only the others in op. */
static int holds_reply_lost(struct holds_op *op, struct rpc_response *response)
{
    uint8_t *blob = NULL;
    struct ts_writer records;
    uint32_t lost = 0;
    size_t kept = 0;
    for (size_t i = 0; i < op->count; i++)
        lost += !op->exists[i];
    if (lost > 0) {
        blob = malloc((size_t)lost * ts_hold_rec_bytes);
        if (!blob)
            return TS_ERR_NOMEM;
    }
    ts_writer_init(&records, blob, (size_t)lost * ts_hold_rec_bytes);
    lost = 0;
    for (size_t i = 0; i < op->count; i++) {
        if (op->exists[i]) {
            op->inos[kept] = op->inos[i];
            op->counts[kept++] = op->counts[i];
            continue;
        }
        struct ts_hold_rec record = {.ino = op->inos[i], .count = op->counts[i]};
        ts_hold_rec_write(&records, &record);
        lost++;
    }
    op->count = kept;
    struct ts_session_holds_rep reply = {.count = lost,
                                         .records = {(const char *)blob, (uint32_t)records.len}};
    int status = REPLY_ENCODE(session_holds_rep, &reply, response);
    free(blob);
    return status;
}

int handlers_session_holds(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_session_holds_req message;
    struct holds_op op = {0};
    struct sessions_freed freed = {0};
    uint64_t mount;
    int status;

    if (ts_session_holds_req_decode(&message, request->payload, request->payload_len) != 0 ||
        message.count > TS_MAX_HOLDS ||
        message.records.len != (uint64_t)message.count * ts_hold_rec_bytes)
        return reply_bad_message(response, request->header.type);
    mount = session_mount_of(request, response);
    if (mount == 0)
        return TS_ERR_INVAL;
    status = holds_parse(&op, &message);
    if (status == TS_ERR_BADMSG) {
        free(op.inos);
        free(op.counts);
        free(op.exists);
        return reply_bad_message(response, request->header.type);
    }
    if (status == TS_OK)
        status = store_read(service->store, holds_body, &op);
    size_t announced = op.count;
    if (status == TS_OK)
        status = holds_reply_lost(&op, response);
    if (status == TS_OK) {
        if (sessions_hold(service->sessions, mount, message.first != 0, op.inos, op.counts,
                          op.count, util_monotonic_ms(), &freed) < 0)
            status = TS_ERR_NOMEM; /* the mount announces again at its next renewal */
        session_reap_freed(service, &freed);
    }
    if (status == TS_OK && announced > op.count)
        log_warn("mount %016llx holds %zu inodes open that were deleted while its session "
                 "was expired: their I/O fails there",
                 (unsigned long long)mount, announced - op.count);
    else if (status == TS_OK && message.first && op.count > 0)
        log_info("mount %016llx announced its opens of %zu inodes", (unsigned long long)mount,
                 op.count);
    free(op.inos);
    free(op.counts);
    free(op.exists);
    return status;
}
