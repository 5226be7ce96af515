/*
 * @file handlers_profiles.c
 * Access profiles: PROFILE_SET (start or stop profiling a file or a
 * directory), PROFILE_RECORD (a mount's batch of accesses) and PROFILE_GET
 * (a profile, page by page, for the planner). Same shape as every handler
 * (handlers.c); bodies write why they refused into their op's `why`, which
 * the handler passes on as the reply's text (handlers_refused()).
 */
#include "handlers_profiles.h"

#include "handlers_i.h"
#include "inodes.h"
#include "leases.h"
#include "profiles.h"
#include "reply.h"
#include "service.h"
#include "status.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* PROFILE_GET pages: records when the request asks for none or more. */
#define HANDLERS_PROFILE_GET_MAX_RECORDS 8192

/* ---- PROFILE_SET -------------------------------------------------------- */

struct profile_set_op {
    const struct ts_profile_set_req *request;
    bool profiling; /* after the call */
    char why[HANDLERS_WHY_MAX];
};

static int profile_set_body(struct store_txn *txn, void *arg)
{
    struct profile_set_op *op = arg;
    const struct ts_profile_set_req *request = op->request;
    struct inodes_record record;
    struct ts_attr *attr = &record.attr;
    uint32_t flags;
    int status = handlers_load_inode_why(txn, request->ino, &record, op->why);
    if (status != TS_OK)
        return status;
    if (request->action == TS_PROFILE_RESET) {
        op->profiling = (attr->flags & TS_ATTR_PROFILED) != 0;
        return reply_store_status(profiles_delete_all(txn, request->ino, NULL));
    }
    if (!S_ISREG(attr->mode) && !S_ISDIR(attr->mode)) {
        snprintf(op->why, sizeof(op->why),
                 "inode %llu is neither a regular file nor a directory: nothing to profile",
                 (unsigned long long)request->ino);
        return TS_ERR_INVAL;
    }
    flags = attr->flags;
    if (request->action == TS_PROFILE_START)
        attr->flags |= TS_ATTR_PROFILED;
    else
        attr->flags &= ~TS_ATTR_PROFILED;
    op->profiling = (attr->flags & TS_ATTR_PROFILED) != 0;
    /* Not a change of the file itself: ctime stays. */
    if (attr->flags == flags)
        return TS_OK;
    return reply_store_status(inodes_put(txn, &record));
}

int handlers_profiles_set(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_profile_set_req message;
    struct profile_set_op op = {.request = &message};
    struct ts_profile_set_rep reply;
    int status;

    if (ts_profile_set_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.action != TS_PROFILE_STOP && message.action != TS_PROFILE_START &&
        message.action != TS_PROFILE_RESET) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "PROFILE_SET: unknown action %u (0 stop, 1 start, 2 reset)", message.action);
        return TS_ERR_INVAL;
    }
    /* Profiling a directory marks its new files: its lease holder's template. */
    if (leases_refuse(service->leases, message.ino,
                      leases_mount_of(request->peer, request->peer_len), util_monotonic_ms()))
        return TS_ERR_LEASED;
    status = store_write(service->store, profile_set_body, &op);
    if (status != TS_OK)
        return handlers_refused(status, op.why, response);
    reply.profiling = op.profiling ? 1 : 0;
    return REPLY_ENCODE(profile_set_rep, &reply, response);
}

/* ---- PROFILE_RECORD ----------------------------------------------------- */

struct profile_record_op {
    const struct ts_profile_record_req *request;
    uint32_t kept;
};

static int profile_record_body(struct store_txn *txn, void *arg)
{
    struct profile_record_op *op = arg;
    const struct ts_profile_record_req *request = op->request;
    struct ts_cursor records;
    uint64_t known_ino = 0; /* the last inode looked up: a batch comes sorted by file */
    bool known_profiled = false;
    bool known = false;

    op->kept = 0;
    ts_cursor_init(&records, request->records.ptr, request->records.len);
    for (uint32_t i = 0; i < request->count; i++) {
        struct ts_profile_count_rec record;
        (void)ts_profile_count_rec_read(&records, &record); /* a failure is checked below */
        uint64_t ino = record.ino;
        uint64_t tile = record.tile;
        struct profiles_counts counts = {.reads = record.reads,
                                         .writes = record.writes,
                                         .bytes_read = record.bytes_read,
                                         .bytes_written = record.bytes_written,
                                         .local_bytes = record.local_bytes,
                                         .first_access_ns = record.first_access_ns};
        if (!known || ino != known_ino) {
            struct inodes_record record;
            int err = inodes_get(txn, ino, &record);
            if (err < 0 && err != -ENOENT)
                return reply_store_status(err);
            known = true;
            known_ino = ino;
            /* Gone, or no longer profiled: the counts are dropped. */
            known_profiled = err == 0 && (record.attr.flags & TS_ATTR_PROFILED);
        }
        if (!known_profiled)
            continue;
        int err = profiles_add(txn, ino, tile, request->machine, &counts);
        if (err < 0)
            return reply_store_status(err);
        op->kept++;
    }
    return records.failed ? TS_ERR_INTERNAL : TS_OK;
}

int handlers_profiles_record(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_profile_record_req message;
    struct profile_record_op op = {.request = &message};
    struct ts_profile_record_rep reply;
    int status;

    if (ts_profile_record_req_decode(&message, request->payload, request->payload_len) != 0 ||
        (uint64_t)message.count * ts_profile_count_rec_bytes != message.records.len) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "malformed PROFILE_RECORD request (records must be count x %u bytes)",
                 ts_profile_count_rec_bytes);
        return TS_ERR_BADMSG;
    }
    if (message.count > TS_MAX_PROFILE_RECORDS) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "PROFILE_RECORD: %u records, at most %u in one request (flush more often)",
                 message.count, TS_MAX_PROFILE_RECORDS);
        return TS_ERR_INVAL;
    }
    if (message.machine.len == 0 || message.machine.len > PROFILES_MAX_MACHINE ||
        memchr(message.machine.ptr, '\0', message.machine.len)) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "PROFILE_RECORD: the machine name must be 1..%u bytes without NUL (got %u)",
                 PROFILES_MAX_MACHINE, message.machine.len);
        return TS_ERR_INVAL;
    }
    status = store_write(service->store, profile_record_body, &op);
    if (status != TS_OK)
        return status;
    reply.kept = op.kept;
    return REPLY_ENCODE(profile_record_rep, &reply, response);
}

/* ---- PROFILE_GET -------------------------------------------------------- */

struct profile_get_op {
    const struct ts_profile_get_req *request;
    uint32_t max_records;
    struct ts_writer records;
    uint32_t count;
    bool profiling;
    bool done;
    uint64_t next_tile;
    /* the tile being listed: where its records start, to take them back whole */
    bool listing;
    uint64_t tile;
    size_t tile_start_len;
    uint32_t tile_start_count;
    char why[HANDLERS_WHY_MAX];
};

/*
 * Lists whole tiles only: a tile whose records would take the page past
 * max_records or past the buffer is taken back and starts the next page,
 * unless it is the page's first tile, which is listed whole whatever its
 * number of records (TS_ERR_TOOBIG if it does not fit the frame at all).
 */
static int profile_get_visit(void *arg, uint64_t tile, struct ts_str machine,
                             const struct profiles_counts *counts)
{
    struct profile_get_op *op = arg;
    if (!op->listing || tile != op->tile) {
        if (op->count >= op->max_records) {
            op->next_tile = tile;
            return 1;
        }
        op->listing = true;
        op->tile = tile;
        op->tile_start_len = op->records.len;
        op->tile_start_count = op->count;
    }
    struct ts_profile_get_rec record = {.tile = tile,
                                        .machine = machine,
                                        .reads = counts->reads,
                                        .writes = counts->writes,
                                        .bytes_read = counts->bytes_read,
                                        .bytes_written = counts->bytes_written,
                                        .local_bytes = counts->local_bytes,
                                        .first_access_ns = counts->first_access_ns};
    ts_profile_get_rec_write(&op->records, &record);
    bool full = op->records.failed || op->count + 1 > op->max_records;
    if (full && op->tile_start_count > 0) {
        op->records.len = op->tile_start_len;
        op->records.failed = false;
        op->count = op->tile_start_count;
        op->next_tile = tile;
        return 1;
    }
    if (op->records.failed) {
        snprintf(op->why, sizeof(op->why), "tile %llu alone has more counts than a reply can carry",
                 (unsigned long long)tile);
        return -ENOBUFS;
    }
    op->count++;
    return 0;
}

static int profile_get_body(struct store_txn *txn, void *arg)
{
    struct profile_get_op *op = arg;
    struct inodes_record record;
    int status = handlers_load_inode_why(txn, op->request->ino, &record, op->why);
    int result;
    if (status != TS_OK)
        return status;
    op->profiling = (record.attr.flags & TS_ATTR_PROFILED) != 0;
    op->records.len = 0;
    op->records.failed = false;
    op->count = 0;
    op->listing = false;
    result = profiles_scan(txn, op->request->ino, op->request->first_tile, profile_get_visit, op);
    if (result == -ENOBUFS)
        return TS_ERR_TOOBIG;
    if (result < 0)
        return reply_store_status(result);
    op->done = result == 0;
    if (op->done && op->listing)
        op->next_tile = op->tile == UINT64_MAX ? UINT64_MAX : op->tile + 1;
    else if (op->done)
        op->next_tile = op->request->first_tile;
    return TS_OK;
}

int handlers_profiles_get(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_profile_get_req message;
    struct profile_get_op op = {.request = &message};
    struct ts_profile_get_rep reply;
    int status;

    if (ts_profile_get_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    op.max_records = message.max_records;
    if (op.max_records == 0 || op.max_records > HANDLERS_PROFILE_GET_MAX_RECORDS)
        op.max_records = HANDLERS_PROFILE_GET_MAX_RECORDS;
    ts_writer_init(&op.records, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_read(service->store, profile_get_body, &op);
    if (status != TS_OK)
        return handlers_refused(status, op.why, response);
    reply.profiling = op.profiling ? 1 : 0;
    reply.count = op.count;
    reply.done = op.done ? 1 : 0;
    reply.next_tile = op.next_tile;
    reply.records.ptr = (const char *)service->scratch;
    reply.records.len = (uint32_t)op.records.len;
    return REPLY_ENCODE(profile_get_rep, &reply, response);
}
