/*
 * @file handlers_namespace.c
 * The namespace: LOOKUP, GETATTR, MKNOD, MKDIR, SYMLINK, UNLINK, RMDIR,
 * UNLINK_MANY, RENAME, LINK, READLINK and CREATE_MANY (the creates a mount
 * made under a directory lease), and the rules that keep names and inodes
 * consistent, orphans included. Same shape as every handler (handlers.c).
 *
 * Invariants kept here:
 *  - a directory's nlink is 2 + its number of subdirectories;
 *  - a directory's record names its parent (the rename loop check walks it);
 *  - an inode with nlink 0 is in the store only while it is open, or in
 *    the first mount lease after a start (service.h).
 */
#include "handlers_namespace.h"

#include "dirents.h"
#include "grants.h"
#include "handlers_i.h"
#include "handlers_xattrs.h"
#include "inodes.h"
#include "log.h"
#include "reply.h"
#include "service.h"
#include "sessions.h"
#include "status.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HANDLERS_LINK_MAX 65000 /* hard links to one file, as ext4 */

/* ---- helpers ----------------------------------------------------------- */

/* Checks a name for a new or existing directory entry. */
static int check_name(struct ts_str name)
{
    if (name.len > TS_MAX_NAME)
        return TS_ERR_NAMETOOLONG;
    if (name.len == 0 || memchr(name.ptr, '/', name.len) || memchr(name.ptr, '\0', name.len))
        return TS_ERR_INVAL;
    if ((name.len == 1 && name.ptr[0] == '.') ||
        (name.len == 2 && name.ptr[0] == '.' && name.ptr[1] == '.'))
        return TS_ERR_INVAL;
    return TS_OK;
}

/* Loads the entry `name` of directory dir: TS_OK, TS_ERR_NOENT, or failure. */
static int load_entry(struct store_txn *txn, uint64_t dir, struct ts_str name,
                      struct dirents_entry *entry)
{
    int err = dirents_get(txn, dir, name, entry);
    if (err == -ENOENT)
        return TS_ERR_NOENT;
    return reply_store_status(err);
}

/*
 * Directory dir gained or lost an entry: mtime and ctime become now and its
 * nlink changes by nlink_delta (subdirectories added minus removed).
 */
static int dir_changed(struct store_txn *txn, uint64_t dir, int nlink_delta, struct timespec now)
{
    struct inodes_record record;
    int status = handlers_load_inode(txn, dir, &record);
    if (status != TS_OK)
        return status == TS_ERR_NOENT ? TS_ERR_INTERNAL : status;
    if (nlink_delta < 0 && record.attr.nlink < (uint32_t)-nlink_delta)
        record.attr.nlink = 0;
    else
        record.attr.nlink += (uint32_t)nlink_delta;
    handlers_time_set(&record.attr.mtime_sec, &record.attr.mtime_nsec, now);
    handlers_time_set(&record.attr.ctime_sec, &record.attr.ctime_nsec, now);
    return reply_store_status(inodes_put(txn, &record));
}

/*
 * One name of inode ino went away. A file loses one link; a directory loses
 * both of its own (its entry and its "."). With no link left the inode is
 * deleted, unless it is open: then it stays, an orphan, until its last
 * RELEASE or the end of the session that held it (sessions.h). In the
 * first lease after a start it stays in any case: a mount that holds it
 * open may not have announced that yet.
 */
static int drop_link(struct service *service, struct store_txn *txn, uint64_t ino,
                     struct timespec now)
{
    struct inodes_record record;
    int status = handlers_load_inode(txn, ino, &record);
    if (status != TS_OK)
        return status == TS_ERR_NOENT ? TS_ERR_INTERNAL : status;
    if (S_ISDIR(record.attr.mode) || record.attr.nlink == 0)
        record.attr.nlink = 0;
    else
        record.attr.nlink--;
    handlers_time_set(&record.attr.ctime_sec, &record.attr.ctime_nsec, now);
    if (record.attr.nlink == 0 && sessions_open_count(service->sessions, ino) == 0 &&
        service_may_reap(service, util_monotonic_ms()))
        return reply_store_status(inodes_delete(txn, ino));
    return reply_store_status(inodes_put(txn, &record));
}

/*
 * Whether directory dir is `ancestor` or lies below it, found by walking
 * parent pointers up to the root. TS_OK with *within set, or a failure.
 */
static int dir_within(struct store_txn *txn, uint64_t dir, uint64_t ancestor, bool *within)
{
    for (uint32_t steps = 0; steps < HANDLERS_WALK_MAX; steps++) {
        struct inodes_record record;
        int status;
        if (dir == ancestor) {
            *within = true;
            return TS_OK;
        }
        if (dir == TS_ROOT_INO) {
            *within = false;
            return TS_OK;
        }
        status = handlers_load_inode(txn, dir, &record);
        if (status != TS_OK || record.parent == 0 || record.parent == dir) {
            log_error("broken parent chain at inode %llu", (unsigned long long)dir);
            return TS_ERR_INTERNAL;
        }
        dir = record.parent;
    }
    log_error("parent chain longer than %u steps: a cycle?", HANDLERS_WALK_MAX);
    return TS_ERR_INTERNAL;
}

/* ---- LOOKUP, GETATTR ---------------------------------------------------- */

struct lookup_op {
    const struct ts_lookup_req *request;
    struct inodes_record found;
};

static int lookup_body(struct store_txn *txn, void *arg)
{
    struct lookup_op *op = arg;
    struct ts_str name = op->request->name;
    struct dirents_entry entry;
    int status = handlers_load_dir(txn, op->request->parent, &op->found);
    if (status != TS_OK)
        return status;
    /* "." and ".." are answered from the directory itself (NFS-style lookups). */
    if (name.len == 1 && name.ptr[0] == '.')
        return TS_OK;
    if (name.len == 2 && name.ptr[0] == '.' && name.ptr[1] == '.')
        return handlers_load_inode(txn, op->found.parent, &op->found);
    status = check_name(name);
    if (status == TS_OK)
        status = load_entry(txn, op->request->parent, name, &entry);
    if (status == TS_OK)
        status = handlers_load_child(txn, &entry, &op->found);
    return status;
}

int handlers_namespace_lookup(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_lookup_req message;
    struct lookup_op op = {.request = &message};
    struct ts_attr_rep reply;
    int status;

    if (ts_lookup_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.name.len > TS_MAX_NAME)
        return TS_ERR_NAMETOOLONG;
    status = handlers_lease_check(service, handlers_sender_mount(request), message.parent);
    if (status != TS_OK)
        return status;
    status = store_read(service->store, lookup_body, &op);
    if (status != TS_OK)
        return status;
    inodes_attr(&op.found, &service->defaults, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

int handlers_namespace_getattr(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_getattr_req message;
    struct handlers_inode_op op;
    struct ts_attr_rep reply;
    int status;

    if (ts_getattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    op.ino = message.ino;
    status = handlers_lease_check(service, handlers_sender_mount(request), message.ino);
    if (status != TS_OK)
        return status;
    status = store_read(service->store, handlers_getattr_body, &op);
    if (status != TS_OK)
        return status;
    inodes_attr(&op.found, &service->defaults, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

/* ---- MKNOD, MKDIR, SYMLINK ---------------------------------------------- */

struct create_op {
    struct service *service;
    uint64_t parent;
    struct ts_str name;
    uint32_t mode; /* with its type bits */
    uint64_t rdev;
    uint32_t uid;
    uint32_t gid;
    struct ts_str target; /* symlinks */
    struct timespec now;
    uint64_t sender;      /* the mount sending it */
    uint64_t granted_ino; /* CREATE_MANY: the number the sender gave the file; 0: a new one */
    struct inodes_record created;
};

static int create_body(struct store_txn *txn, void *arg)
{
    struct create_op *op = arg;
    struct inodes_record parent;
    struct dirents_entry entry;
    bool is_dir = S_ISDIR(op->mode);
    uint32_t mode = op->mode;
    uint32_t gid = op->gid;
    int status;
    int err;

    status = handlers_load_live_dir(txn, op->parent, &parent);
    if (status != TS_OK)
        return status;
    status = load_entry(txn, op->parent, op->name, &entry);
    if (status == TS_OK)
        return TS_ERR_EXIST;
    if (status != TS_ERR_NOENT)
        return status;
    /* BSD group semantics under a setgid directory, as Linux does it. */
    if (parent.attr.mode & S_ISGID) {
        gid = parent.attr.gid;
        if (is_dir)
            mode |= S_ISGID;
    }
    if (op->granted_ino != 0) {
        uint64_t generation;
        err = grants_check(txn, op->sender, op->granted_ino, &generation);
        if (err == -EPERM)
            return TS_ERR_PERM;
        if (err == 0 && inodes_get(txn, op->granted_ino, &op->created) == 0)
            return TS_ERR_STALE; /* made already: a create sent twice */
        if (err < 0)
            return reply_store_status(err);
        inodes_init(&op->created, op->granted_ino, generation, mode, op->uid, gid, op->now);
    } else {
        err = inodes_new(txn, mode, op->uid, gid, op->now, &op->created);
        if (err < 0)
            return reply_store_status(err);
    }
    inodes_inherit_layout(&op->created, &parent);
    status = handlers_xattrs_array_inherit(txn, op->service, &op->created, op->parent);
    if (status != TS_OK)
        return status;
    /* tessera profile start on a directory covers what is created in it later. */
    if ((parent.attr.flags & TS_ATTR_PROFILED) && (S_ISREG(mode) || S_ISDIR(mode)))
        op->created.attr.flags |= TS_ATTR_PROFILED;
    if (is_dir)
        op->created.parent = op->parent;
    if (S_ISCHR(mode) || S_ISBLK(mode))
        op->created.attr.rdev = op->rdev;
    if (S_ISLNK(mode)) {
        memcpy(op->created.target, op->target.ptr, op->target.len);
        op->created.target[op->target.len] = '\0';
        op->created.target_len = op->target.len;
        op->created.attr.size = op->target.len;
    }
    err = inodes_put(txn, &op->created);
    if (err < 0)
        return reply_store_status(err);
    entry.ino = op->created.attr.ino;
    entry.mode = mode & S_IFMT;
    err = dirents_put(txn, op->parent, op->name, &entry);
    if (err < 0)
        return reply_store_status(err);
    return dir_changed(txn, op->parent, is_dir ? 1 : 0, op->now);
}

static int create_run(struct service *service, const struct rpc_request *request,
                      struct create_op *op, struct rpc_response *response)
{
    struct ts_attr_rep reply;
    int status = check_name(op->name);
    if (status == TS_OK)
        status = handlers_lease_check(service, handlers_sender_mount(request), op->parent);
    if (status != TS_OK)
        return status;
    op->service = service;
    op->now = util_now();
    status = store_write(service->store, create_body, op);
    if (status != TS_OK)
        return status;
    inodes_attr(&op->created, &service->defaults, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

int handlers_namespace_mknod(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct ts_mknod_req message;
    struct create_op op;
    uint32_t type;

    if (ts_mknod_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    type = message.mode & S_IFMT;
    if (type == 0)
        type = S_IFREG;
    if (type != S_IFREG && type != S_IFIFO && type != S_IFSOCK && type != S_IFCHR &&
        type != S_IFBLK)
        return TS_ERR_INVAL;
    op = (struct create_op){
        .parent = message.parent,
        .name = message.name,
        .mode = type | (message.mode & 07777),
        .rdev = message.rdev,
        .uid = message.uid,
        .gid = message.gid,
    };
    int status = create_run(ctx, request, &op, response);
    if (status == TS_OK && message.open &&
        sessions_open(((struct service *)ctx)->sessions, handlers_sender_mount(request),
                      op.created.attr.ino, util_monotonic_ms()) < 0)
        return TS_ERR_NOMEM; /* the file exists; the client's open fails */
    return status;
}

int handlers_namespace_mkdir(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct ts_mkdir_req message;
    struct create_op op;

    if (ts_mkdir_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    op = (struct create_op){
        .parent = message.parent,
        .name = message.name,
        .mode = S_IFDIR | (message.mode & 07777),
        .uid = message.uid,
        .gid = message.gid,
    };
    return create_run(ctx, request, &op, response);
}

int handlers_namespace_symlink(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response)
{
    struct ts_symlink_req message;
    struct create_op op;

    if (ts_symlink_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.target.len == 0)
        return TS_ERR_INVAL;
    if (message.target.len > TS_MAX_SYMLINK)
        return TS_ERR_NAMETOOLONG;
    op = (struct create_op){
        .parent = message.parent,
        .name = message.name,
        .mode = S_IFLNK | 0777,
        .uid = message.uid,
        .gid = message.gid,
        .target = message.target,
    };
    return create_run(ctx, request, &op, response);
}

/* ---- UNLINK, RMDIR, UNLINK_MANY ----------------------------------------- */

/* The reply of a batch: count (<= 256) statuses, one per record (STATUSES_REP). */
static int reply_statuses(const uint32_t *statuses, uint32_t count, struct rpc_response *response)
{
    uint8_t blob[256 * ts_status_rec_bytes];
    struct ts_writer writer;
    ts_writer_init(&writer, blob, sizeof(blob));
    for (uint32_t i = 0; i < count; i++) {
        struct ts_status_rec record = {.status = statuses[i]};
        ts_status_rec_write(&writer, &record);
    }
    if (writer.failed)
        return TS_ERR_INTERNAL;
    struct ts_statuses_rep reply = {.count = count,
                                    .statuses = {(const char *)blob, (uint32_t)writer.len}};
    return reply_encoded(ts_statuses_rep_encode(&reply, response->payload, response->payload_cap),
                         response);
}

/*
 * Checks that name in parent may be removed (by RMDIR if directory) and
 * finds its entry. Changes nothing: what it refuses (NOENT, NOTDIR, ISDIR,
 * NOTEMPTY) leaves a batch free to go on with its other names.
 */
static int remove_check(struct store_txn *txn, uint64_t parent, struct ts_str name, bool directory,
                        struct dirents_entry *entry)
{
    struct inodes_record record;
    int status = handlers_load_dir(txn, parent, &record);
    if (status == TS_OK)
        status = load_entry(txn, parent, name, entry);
    if (status == TS_OK)
        status = handlers_load_child(txn, entry, &record);
    if (status != TS_OK)
        return status;
    if (directory) {
        bool empty;
        if (!S_ISDIR(record.attr.mode))
            return TS_ERR_NOTDIR;
        int err = dirents_is_empty(txn, entry->ino, &empty);
        if (err < 0)
            return reply_store_status(err);
        if (!empty)
            return TS_ERR_NOTEMPTY;
    } else if (S_ISDIR(record.attr.mode)) {
        return TS_ERR_ISDIR;
    }
    return TS_OK;
}

/* Removes the entry remove_check() found. Any failure is the store's. */
static int remove_apply(struct service *service, struct store_txn *txn, uint64_t parent,
                        struct ts_str name, const struct dirents_entry *entry, bool directory,
                        struct timespec now)
{
    int err = dirents_delete(txn, parent, name);
    if (err < 0)
        return reply_store_status(err);
    int status = drop_link(service, txn, entry->ino, now);
    if (status != TS_OK)
        return status;
    return dir_changed(txn, parent, directory ? -1 : 0, now);
}

struct remove_op {
    struct service *service;
    uint64_t sender; /* its mount, for leases */
    const struct ts_name_req *request;
    bool directory; /* RMDIR */
    struct timespec now;
};

static int remove_body(struct store_txn *txn, void *arg)
{
    struct remove_op *op = arg;
    struct dirents_entry entry;
    int status = remove_check(txn, op->request->parent, op->request->name, op->directory, &entry);
    if (status == TS_OK && op->directory) /* its lease holder may have creates to send */
        status = handlers_lease_check(op->service, op->sender, entry.ino);
    if (status != TS_OK)
        return status;
    return remove_apply(op->service, txn, op->request->parent, op->request->name, &entry,
                        op->directory, op->now);
}

static int remove_run(void *ctx, const struct rpc_request *request, struct rpc_response *response,
                      bool directory)
{
    struct service *service = ctx;
    struct ts_name_req message;
    struct remove_op op = {.service = service,
                           .sender = handlers_sender_mount(request),
                           .request = &message,
                           .directory = directory};
    int status;

    if (ts_name_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    /* Removing a name from a leased directory needs no lease: it cannot make
     * the holder's creates fail (they are of names it saw absent), and an
     * unlink queue waiting for a lease while its own mount's lease waits
     * for that queue could deadlock two mounts. Removing the leased
     * directory itself waits (remove_body). */
    status = check_name(message.name);
    if (status != TS_OK)
        return status;
    op.now = util_now();
    return store_write(service->store, remove_body, &op);
}

int handlers_namespace_unlink(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response)
{
    return remove_run(ctx, request, response, false);
}

int handlers_namespace_rmdir(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    return remove_run(ctx, request, response, true);
}

struct unlink_many_op {
    struct service *service;
    uint32_t count;
    uint64_t parents[TS_MAX_UNLINKS];
    struct ts_str names[TS_MAX_UNLINKS];
    int name_statuses[TS_MAX_UNLINKS]; /* check_name()'s verdicts */
    uint32_t statuses[TS_MAX_UNLINKS]; /* the outcomes, set by the body */
    struct timespec now;
};

/* What remove_check() refuses without changing anything: the name's own
 * outcome. Anything else fails the whole transaction. */
static bool refused_by_check(int status)
{
    return status == TS_ERR_NOENT || status == TS_ERR_NOTDIR || status == TS_ERR_ISDIR ||
           status == TS_ERR_NOTEMPTY;
}

static int unlink_many_body(struct store_txn *txn, void *arg)
{
    struct unlink_many_op *op = arg;
    /* From the start each time: store_write runs the body again after
     * growing a full store. */
    for (uint32_t i = 0; i < op->count; i++) {
        struct dirents_entry entry;
        int status = op->name_statuses[i];
        op->statuses[i] = (uint32_t)status;
        if (status != TS_OK)
            continue;
        status = remove_check(txn, op->parents[i], op->names[i], false, &entry);
        if (refused_by_check(status)) {
            op->statuses[i] = (uint32_t)status;
            continue;
        }
        if (status == TS_OK)
            status = remove_apply(op->service, txn, op->parents[i], op->names[i], &entry, false,
                                  op->now);
        if (status != TS_OK)
            return status;
    }
    return TS_OK;
}

int handlers_namespace_unlink_many(void *ctx, const struct rpc_request *request,
                                   struct rpc_response *response)
{
    struct ts_batch_req message;
    struct ts_cursor cursor;
    struct unlink_many_op *op;
    int status;

    if (ts_batch_req_decode(&message, request->payload, request->payload_len) != 0 ||
        message.count > TS_MAX_UNLINKS)
        return reply_bad_message(response, request->header.type);
    op = calloc(1, sizeof(*op));
    if (!op)
        return TS_ERR_NOMEM;
    op->service = ctx;
    op->count = message.count;
    ts_cursor_init(&cursor, message.records.ptr, message.records.len);
    for (uint32_t i = 0; i < message.count; i++) {
        struct ts_unlink_rec record;
        if (ts_unlink_rec_read(&cursor, &record) != 0)
            break;
        op->parents[i] = record.parent;
        op->names[i] = record.name;
        op->name_statuses[i] = check_name(record.name);
    }
    if (cursor.failed || cursor.left != 0) {
        free(op);
        return reply_bad_message(response, request->header.type);
    }
    op->now = util_now();
    status = store_write(op->service->store, unlink_many_body, op);
    if (status == TS_OK)
        status = reply_statuses(op->statuses, op->count, response);
    free(op);
    return status;
}

/* ---- RENAME ------------------------------------------------------------- */

struct rename_op {
    struct service *service;
    uint64_t sender; /* its mount, for leases */
    const struct ts_rename_req *request;
    struct timespec now;
};

/* Applies the nlink changes of both parents (they may be one directory). */
static int rename_parents_changed(struct store_txn *txn, const struct rename_op *op,
                                  int parent_delta, int new_parent_delta)
{
    uint64_t parent = op->request->parent;
    uint64_t new_parent = op->request->new_parent;
    int status;
    if (parent == new_parent)
        return dir_changed(txn, parent, parent_delta + new_parent_delta, op->now);
    status = dir_changed(txn, parent, parent_delta, op->now);
    if (status == TS_OK)
        status = dir_changed(txn, new_parent, new_parent_delta, op->now);
    return status;
}

/* RENAME_EXCHANGE: both names exist and swap their inodes. */
static int rename_exchange(struct store_txn *txn, const struct rename_op *op,
                           const struct dirents_entry *source_entry,
                           const struct dirents_entry *target_entry)
{
    const struct ts_rename_req *request = op->request;
    bool moves = request->parent != request->new_parent;
    struct inodes_record source;
    struct inodes_record target;
    int parent_delta = 0;
    int new_parent_delta = 0;
    bool within = false;
    int status;
    int err;

    status = handlers_load_child(txn, source_entry, &source);
    if (status == TS_OK)
        status = handlers_load_child(txn, target_entry, &target);
    if (status != TS_OK)
        return status;
    if (moves && S_ISDIR(source.attr.mode)) {
        status = dir_within(txn, request->new_parent, source.attr.ino, &within);
        if (status != TS_OK)
            return status;
        if (within)
            return TS_ERR_INVAL;
    }
    if (moves && S_ISDIR(target.attr.mode)) {
        status = dir_within(txn, request->parent, target.attr.ino, &within);
        if (status != TS_OK)
            return status;
        if (within)
            return TS_ERR_INVAL;
    }
    err = dirents_put(txn, request->parent, request->name, target_entry);
    if (err == 0)
        err = dirents_put(txn, request->new_parent, request->new_name, source_entry);
    if (err < 0)
        return reply_store_status(err);
    if (moves && S_ISDIR(source.attr.mode)) {
        source.parent = request->new_parent;
        parent_delta--;
        new_parent_delta++;
    }
    if (moves && S_ISDIR(target.attr.mode)) {
        target.parent = request->parent;
        new_parent_delta--;
        parent_delta++;
    }
    handlers_time_set(&source.attr.ctime_sec, &source.attr.ctime_nsec, op->now);
    handlers_time_set(&target.attr.ctime_sec, &target.attr.ctime_nsec, op->now);
    err = inodes_put(txn, &source);
    if (err == 0)
        err = inodes_put(txn, &target);
    if (err < 0)
        return reply_store_status(err);
    return rename_parents_changed(txn, op, parent_delta, new_parent_delta);
}

static int rename_body(struct store_txn *txn, void *arg)
{
    struct rename_op *op = arg;
    const struct ts_rename_req *request = op->request;
    struct inodes_record dir;
    struct inodes_record source;
    struct inodes_record target;
    struct dirents_entry source_entry;
    struct dirents_entry target_entry;
    bool target_exists;
    bool source_is_dir;
    int parent_delta = 0;
    int new_parent_delta = 0;
    int status;
    int err;

    status = handlers_load_dir(txn, request->parent, &dir);
    if (status == TS_OK)
        status = handlers_load_live_dir(txn, request->new_parent, &dir);
    if (status == TS_OK)
        status = load_entry(txn, request->parent, request->name, &source_entry);
    if (status != TS_OK)
        return status;
    status = load_entry(txn, request->new_parent, request->new_name, &target_entry);
    if (status != TS_OK && status != TS_ERR_NOENT)
        return status;
    target_exists = status == TS_OK;
    if ((request->flags & TS_RENAME_NOREPLACE) && target_exists)
        return TS_ERR_EXIST;
    if ((request->flags & TS_RENAME_EXCHANGE) && !target_exists)
        return TS_ERR_NOENT;
    /* Two names of one inode: POSIX says rename does nothing. */
    if (target_exists && target_entry.ino == source_entry.ino)
        return TS_OK;
    if (request->flags & TS_RENAME_EXCHANGE)
        return rename_exchange(txn, op, &source_entry, &target_entry);

    status = handlers_load_child(txn, &source_entry, &source);
    if (status != TS_OK)
        return status;
    source_is_dir = S_ISDIR(source.attr.mode);
    if (source_is_dir) {
        bool within;
        status = dir_within(txn, request->new_parent, source.attr.ino, &within);
        if (status != TS_OK)
            return status;
        if (within)
            return TS_ERR_INVAL;
    }
    if (target_exists) {
        bool target_is_dir;
        status = handlers_load_child(txn, &target_entry, &target);
        if (status != TS_OK)
            return status;
        target_is_dir = S_ISDIR(target.attr.mode);
        if (source_is_dir && !target_is_dir)
            return TS_ERR_NOTDIR;
        if (!source_is_dir && target_is_dir)
            return TS_ERR_ISDIR;
        if (target_is_dir) {
            bool empty;
            status = handlers_lease_check(op->service, op->sender, target.attr.ino);
            if (status != TS_OK)
                return status;
            err = dirents_is_empty(txn, target.attr.ino, &empty);
            if (err < 0)
                return reply_store_status(err);
            if (!empty)
                return TS_ERR_NOTEMPTY;
            new_parent_delta--;
        }
    }
    err = dirents_delete(txn, request->parent, request->name);
    if (err == 0)
        err = dirents_put(txn, request->new_parent, request->new_name, &source_entry);
    if (err < 0)
        return reply_store_status(err);
    if (source_is_dir && request->parent != request->new_parent) {
        source.parent = request->new_parent;
        parent_delta--;
        new_parent_delta++;
    }
    handlers_time_set(&source.attr.ctime_sec, &source.attr.ctime_nsec, op->now);
    err = inodes_put(txn, &source);
    if (err < 0)
        return reply_store_status(err);
    if (target_exists) {
        status = drop_link(op->service, txn, target_entry.ino, op->now);
        if (status != TS_OK)
            return status;
    }
    return rename_parents_changed(txn, op, parent_delta, new_parent_delta);
}

int handlers_namespace_rename(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_rename_req message;
    struct rename_op op = {
        .service = service, .sender = handlers_sender_mount(request), .request = &message};
    int status;

    if (ts_rename_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if ((message.flags & ~(TS_RENAME_NOREPLACE | TS_RENAME_EXCHANGE)) != 0 ||
        message.flags == (TS_RENAME_NOREPLACE | TS_RENAME_EXCHANGE))
        return TS_ERR_INVAL;
    status = check_name(message.name);
    if (status == TS_OK)
        status = check_name(message.new_name);
    if (status == TS_OK)
        status = handlers_lease_check(service, op.sender, message.parent);
    if (status == TS_OK)
        status = handlers_lease_check(service, op.sender, message.new_parent);
    if (status != TS_OK)
        return status;
    op.now = util_now();
    return store_write(service->store, rename_body, &op);
}

/* ---- LINK --------------------------------------------------------------- */

struct link_op {
    const struct ts_link_req *request;
    struct timespec now;
    struct inodes_record linked;
};

static int link_body(struct store_txn *txn, void *arg)
{
    struct link_op *op = arg;
    const struct ts_link_req *request = op->request;
    struct inodes_record *linked = &op->linked;
    struct inodes_record parent;
    struct dirents_entry entry;
    int status;
    int err;

    status = handlers_load_inode(txn, request->ino, linked);
    if (status != TS_OK)
        return status;
    if (S_ISDIR(linked->attr.mode))
        return TS_ERR_PERM;
    if (linked->attr.nlink == 0) /* unlinked but open: Linux says ENOENT too */
        return TS_ERR_NOENT;
    if (linked->attr.nlink >= HANDLERS_LINK_MAX)
        return TS_ERR_MLINK;
    status = handlers_load_live_dir(txn, request->new_parent, &parent);
    if (status != TS_OK)
        return status;
    status = load_entry(txn, request->new_parent, request->new_name, &entry);
    if (status == TS_OK)
        return TS_ERR_EXIST;
    if (status != TS_ERR_NOENT)
        return status;
    entry.ino = linked->attr.ino;
    entry.mode = linked->attr.mode & S_IFMT;
    err = dirents_put(txn, request->new_parent, request->new_name, &entry);
    if (err < 0)
        return reply_store_status(err);
    linked->attr.nlink++;
    handlers_time_set(&linked->attr.ctime_sec, &linked->attr.ctime_nsec, op->now);
    err = inodes_put(txn, linked);
    if (err < 0)
        return reply_store_status(err);
    return dir_changed(txn, request->new_parent, 0, op->now);
}

int handlers_namespace_link(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_link_req message;
    struct link_op op = {.request = &message};
    struct ts_attr_rep reply;
    int status;

    if (ts_link_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    status = check_name(message.new_name);
    if (status == TS_OK)
        status = handlers_lease_check(service, handlers_sender_mount(request), message.new_parent);
    if (status != TS_OK)
        return status;
    op.now = util_now();
    status = store_write(service->store, link_body, &op);
    if (status != TS_OK)
        return status;
    inodes_attr(&op.linked, &service->defaults, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

/* ---- READLINK ----------------------------------------------------------- */

static int readlink_body(struct store_txn *txn, void *arg)
{
    struct handlers_inode_op *op = arg;
    int status = handlers_load_inode(txn, op->ino, &op->found);
    if (status == TS_OK && !S_ISLNK(op->found.attr.mode))
        return TS_ERR_INVAL;
    return status;
}

int handlers_namespace_readlink(void *ctx, const struct rpc_request *request,
                                struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_readlink_req message;
    struct ts_readlink_rep reply;
    struct handlers_inode_op op;
    int status;

    if (ts_readlink_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    op.ino = message.ino;
    status = store_read(service->store, readlink_body, &op);
    if (status != TS_OK)
        return status;
    reply.target.ptr = op.found.target;
    reply.target.len = op.found.target_len;
    return REPLY_ENCODE(readlink_rep, &reply, response);
}

/* ---- CREATE_MANY -------------------------------------------------------- */

/* One CREATE_MANY record, as create_body() takes it but for `created`. */
struct create_many_op {
    struct service *service;
    uint64_t sender;
    uint32_t count;
    struct ts_create_rec records[TS_MAX_CREATES];
    struct create_op scratch;          /* the create being made */
    int checks[TS_MAX_CREATES];        /* verdicts found before the transaction */
    uint32_t statuses[TS_MAX_CREATES]; /* the outcomes, set by the body */
};

/* What create_body() refuses before changing anything: that create's outcome. */
static bool refused_before_create(int status)
{
    return status == TS_ERR_NOENT || status == TS_ERR_NOTDIR || status == TS_ERR_EXIST ||
           status == TS_ERR_PERM || status == TS_ERR_STALE;
}

static int create_many_body(struct store_txn *txn, void *arg)
{
    struct create_many_op *op = arg;
    for (uint32_t i = 0; i < op->count; i++) {
        const struct ts_create_rec *record = &op->records[i];
        int status = op->checks[i];
        if (status == TS_OK) {
            op->scratch = (struct create_op){
                .service = op->service,
                .parent = record->parent,
                .name = record->name,
                .mode = record->mode,
                .uid = record->uid,
                .gid = record->gid,
                .now = {.tv_sec = (time_t)record->time_sec, .tv_nsec = (long)record->time_nsec},
                .sender = op->sender,
                .granted_ino = record->ino};
            status = create_body(txn, &op->scratch);
        }
        if (status != TS_OK && status != op->checks[i] && !refused_before_create(status))
            return status; /* the store's failure: nothing is done */
        op->statuses[i] = (uint32_t)status;
    }
    return TS_OK;
}

/* Reads CREATE_MANY's records into op; false when they are malformed. */
static bool create_many_parse(struct create_many_op *op, const struct ts_batch_req *message)
{
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, message->records.ptr, message->records.len);
    for (uint32_t i = 0; i < op->count; i++) {
        struct ts_create_rec *record = &op->records[i];
        if (ts_create_rec_read(&cursor, record) != 0)
            return false;
        if ((record->mode & S_IFMT) != S_IFREG || record->time_nsec >= HANDLERS_NSEC_PER_SEC ||
            record->ino == 0 || record->open > 1)
            op->checks[i] = TS_ERR_INVAL;
        else
            op->checks[i] = check_name(record->name);
        /* Its lease lapsed and another mount leased the directory since:
         * that mount's answers stand, this one loses. */
        if (op->checks[i] == TS_OK)
            op->checks[i] = handlers_lease_check(op->service, op->sender, record->parent);
    }
    return cursor.left == 0;
}

int handlers_namespace_create_many(void *ctx, const struct rpc_request *request,
                                   struct rpc_response *response)
{
    struct ts_batch_req message;
    struct create_many_op *op;
    uint64_t sender = handlers_sender_mount(request);
    int status;

    if (ts_batch_req_decode(&message, request->payload, request->payload_len) != 0 ||
        message.count > TS_MAX_CREATES)
        return reply_bad_message(response, request->header.type);
    if (sender == 0)
        return TS_ERR_INVAL;
    op = calloc(1, sizeof(*op));
    if (!op)
        return TS_ERR_NOMEM;
    op->service = ctx;
    op->sender = sender;
    op->count = message.count;
    if (!create_many_parse(op, &message)) {
        free(op);
        return reply_bad_message(response, request->header.type);
    }
    status = store_write(op->service->store, create_many_body, op);
    if (status == TS_OK) {
        for (uint32_t i = 0; i < op->count; i++)
            if (op->statuses[i] == TS_OK && op->records[i].open &&
                sessions_open(op->service->sessions, sender, op->records[i].ino,
                              util_monotonic_ms()) < 0)
                op->statuses[i] = TS_ERR_NOMEM; /* made, but not open: the mount's open fails */
        status = reply_statuses(op->statuses, op->count, response);
    }
    free(op);
    return status;
}
