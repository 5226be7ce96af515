/*
 * @file handlers_dirs.c
 * Directories as a whole: READDIR and READDIRPLUS (pages of a directory's
 * entries, the second with each entry's attributes) and DIR_LEASE (a
 * mount's lease to answer creates in a directory itself, and the inode
 * numbers it gives them; leases.h, grants.h). Same shape as every handler
 * (handlers.c); a page is read in one read transaction, so it is a
 * consistent view of the directory.
 */
#include "handlers_dirs.h"

#include "arrayhint.h"
#include "dirents.h"
#include "grants.h"
#include "handlers_i.h"
#include "inodes.h"
#include "leases.h"
#include "reply.h"
#include "service.h"
#include "status.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HANDLERS_READDIR_MAX_ENTRIES 4096
#define HANDLERS_READDIR_MAX_BYTES (1u << 20)

/* ---- READDIR ------------------------------------------------------------ */

struct readdir_op {
    const struct ts_readdir_req *request;
    uint32_t max_entries;
    struct ts_writer entries;
    uint32_t count;
    bool done;
};

/* Appends one entry unless the reply is full (then the scan stops before it). */
static int readdir_visit(void *arg, struct ts_str name, const struct dirents_entry *entry)
{
    struct readdir_op *op = arg;
    size_t record_bytes = ts_readdir_rec_bytes + name.len;
    if (op->count >= op->max_entries || op->entries.len + record_bytes > HANDLERS_READDIR_MAX_BYTES)
        return 1;
    struct ts_readdir_rec record = {.ino = entry->ino, .mode = entry->mode, .name = name};
    ts_readdir_rec_write(&op->entries, &record);
    if (op->entries.failed)
        return -ENOBUFS;
    op->count++;
    return 0;
}

static int readdir_body(struct store_txn *txn, void *arg)
{
    struct readdir_op *op = arg;
    struct inodes_record dir;
    int status = handlers_load_dir(txn, op->request->ino, &dir);
    int result;
    if (status != TS_OK)
        return status;
    op->count = 0;
    op->entries.len = 0;
    result = dirents_scan(txn, op->request->ino, op->request->after, readdir_visit, op);
    if (result < 0)
        return reply_store_status(result);
    op->done = result == 0;
    return TS_OK;
}

int handlers_dirs_readdir(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_readdir_req message;
    struct readdir_op op = {.request = &message};
    struct ts_readdir_rep reply;
    int status;

    if (ts_readdir_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.after.len > TS_MAX_NAME)
        return TS_ERR_INVAL;
    status = handlers_lease_check(service, handlers_sender_mount(request), message.ino);
    if (status != TS_OK)
        return status;
    op.max_entries = message.max_entries;
    if (op.max_entries == 0 || op.max_entries > HANDLERS_READDIR_MAX_ENTRIES)
        op.max_entries = HANDLERS_READDIR_MAX_ENTRIES;
    ts_writer_init(&op.entries, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_read(service->store, readdir_body, &op);
    if (status != TS_OK)
        return status;
    reply.count = op.count;
    reply.done = op.done ? 1 : 0;
    reply.entries.ptr = (const char *)service->scratch;
    reply.entries.len = (uint32_t)op.entries.len;
    return REPLY_ENCODE(readdir_rep, &reply, response);
}

/* ---- READDIRPLUS -------------------------------------------------------- */

struct readdirplus_op {
    const struct ts_readdirplus_req *request;
    const struct layout_defaults *defaults;
    uint32_t max_entries;
    struct ts_writer entries;
    uint32_t count;
    bool done;
    struct store_txn *txn;
    struct inodes_record child; /* scratch: too big for the visitor's stack frame */
};

/* Appends one entry with its attributes unless the reply is full. */
static int readdirplus_visit(void *arg, struct ts_str name, const struct dirents_entry *entry)
{
    struct readdirplus_op *op = arg;
    struct ts_readdirplus_rec record = {.name = name};
    size_t record_bytes = ts_readdirplus_rec_bytes + name.len;
    if (op->count >= op->max_entries || op->entries.len + record_bytes > HANDLERS_READDIR_MAX_BYTES)
        return 1;
    int status = handlers_load_child(op->txn, entry, &op->child);
    if (status != TS_OK)
        return status == TS_ERR_NOMEM ? -ENOMEM : -EIO;
    inodes_attr(&op->child, op->defaults, &record.attr);
    ts_readdirplus_rec_write(&op->entries, &record);
    if (op->entries.failed)
        return -ENOBUFS;
    op->count++;
    return 0;
}

static int readdirplus_body(struct store_txn *txn, void *arg)
{
    struct readdirplus_op *op = arg;
    struct inodes_record dir;
    int status = handlers_load_dir(txn, op->request->ino, &dir);
    int result;
    if (status != TS_OK)
        return status;
    op->txn = txn;
    op->count = 0;
    op->entries.len = 0;
    op->entries.failed = false;
    result = dirents_scan_from(txn, op->request->ino, op->request->after,
                               op->request->inclusive != 0, readdirplus_visit, op);
    if (result < 0)
        return reply_store_status(result);
    op->done = result == 0;
    return TS_OK;
}

int handlers_dirs_readdirplus(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_readdirplus_req message;
    struct readdirplus_op *op;
    struct ts_readdirplus_rep reply;
    int status;

    if (ts_readdirplus_req_decode(&message, request->payload, request->payload_len) != 0 ||
        message.inclusive > 1)
        return reply_bad_message(response, request->header.type);
    if (message.after.len > TS_MAX_NAME)
        return TS_ERR_INVAL;
    status = handlers_lease_check(service, handlers_sender_mount(request), message.ino);
    if (status != TS_OK)
        return status;
    op = calloc(1, sizeof(*op));
    if (!op)
        return TS_ERR_NOMEM;
    op->request = &message;
    op->defaults = &service->defaults;
    op->max_entries = message.max_entries;
    if (op->max_entries == 0 || op->max_entries > HANDLERS_READDIR_MAX_ENTRIES)
        op->max_entries = HANDLERS_READDIR_MAX_ENTRIES;
    ts_writer_init(&op->entries, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_read(service->store, readdirplus_body, op);
    if (status == TS_OK) {
        reply.count = op->count;
        reply.done = op->done ? 1 : 0;
        reply.entries.ptr = (const char *)service->scratch;
        reply.entries.len = (uint32_t)op->entries.len;
        status = REPLY_ENCODE(readdirplus_rep, &reply, response);
    }
    free(op);
    return status;
}

/* ---- DIR_LEASE ------------------------------------------------------------- */

struct lease_template_op {
    uint64_t dir;
    const struct layout_defaults *defaults;
    struct ts_attr template;
};

/*
 * The attributes create_body() would give a new regular file in op->dir,
 * but for its number, owner, mode and times; TS_ERR_BUSY for a directory
 * whose new files get more than that (a setgid group, an array layout).
 */
static int lease_template_body(struct store_txn *txn, void *arg)
{
    struct lease_template_op *op = arg;
    struct inodes_record parent;
    struct inodes_record *created = malloc(sizeof(*created));
    char text[ARRAYSPEC_TEXT_MAX + 1];
    size_t len;
    if (!created)
        return TS_ERR_NOMEM;
    int status = handlers_load_live_dir(txn, op->dir, &parent);
    if (status == TS_OK && (parent.attr.mode & S_ISGID))
        status = TS_ERR_BUSY;
    if (status == TS_OK) {
        int err = arrayhint_get(txn, op->dir, text, sizeof(text), &len);
        status = err == 0 ? TS_ERR_BUSY : err == -ENOENT ? TS_OK : reply_store_status(err);
    }
    if (status == TS_OK) {
        inodes_init(created, 0, 0, S_IFREG, 0, 0, (struct timespec){0, 0});
        inodes_inherit_layout(created, &parent);
        if (parent.attr.flags & TS_ATTR_PROFILED)
            created->attr.flags |= TS_ATTR_PROFILED;
        inodes_attr(created, op->defaults, &op->template);
    }
    free(created);
    return status;
}

struct grant_op {
    uint64_t mount;
    uint32_t count;
    uint64_t first_ino;
    uint64_t first_generation;
};

static int grant_body(struct store_txn *txn, void *arg)
{
    struct grant_op *op = arg;
    return reply_store_status(
        grants_take(txn, op->mount, op->count, &op->first_ino, &op->first_generation));
}

int handlers_dirs_lease(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_dir_lease_req message;
    struct ts_dir_lease_rep reply;
    uint64_t mount = handlers_sender_mount(request);
    int64_t now_ms = util_monotonic_ms();
    int status = TS_OK;

    if (ts_dir_lease_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (mount == 0) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "DIR_LEASE: only a mount that names its sockets ('M' + mount id) holds leases");
        return TS_ERR_INVAL;
    }
    memset(&reply, 0, sizeof(reply));
    switch (message.action) {
    case TS_LEASE_GET: {
        struct lease_template_op op = {.dir = message.dir,
                                       .defaults = &service->defaults};
        status = store_read(service->store, lease_template_body, &op);
        if (status == TS_OK && leases_get(service->leases, message.dir, mount, now_ms) < 0)
            status = TS_ERR_BUSY;
        reply.template = op.template;
        reply.lease_ms = LEASES_TTL_MS;
        break;
    }
    case TS_LEASE_RENEW:
        if (leases_renew(service->leases, message.dir, mount, now_ms) < 0)
            status = TS_ERR_BUSY;
        reply.lease_ms = LEASES_TTL_MS;
        break;
    case TS_LEASE_RETURN: leases_return(service->leases, message.dir, mount); break;
    case TS_LEASE_INODES: {
        struct grant_op op = {.mount = mount, .count = message.want_inodes};
        if (message.want_inodes == 0 || message.want_inodes > TS_MAX_CREATES)
            return TS_ERR_INVAL;
        status = store_write(service->store, grant_body, &op);
        reply.first_ino = op.first_ino;
        reply.first_generation = op.first_generation;
        reply.inode_count = op.count;
        break;
    }
    default:
        snprintf(response->error_text, sizeof(response->error_text),
                 "DIR_LEASE: unknown action %u (1 get, 2 renew, 3 return, 4 inodes)",
                 message.action);
        return TS_ERR_INVAL;
    }
    if (status != TS_OK)
        return status;
    return REPLY_ENCODE(dir_lease_rep, &reply, response);
}
