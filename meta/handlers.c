/*
 * @file handlers.c
 * One handler per opcode, and the table that finds them (handlers.h).
 *
 * Shape of every handler: decode the request (TS_ERR_BADMSG on -1), check
 * what can be checked without the store, run a transaction body through
 * store_write() or store_read(), then encode the reply from what the body
 * left in its op struct. Bodies return a status and never change anything
 * outside the transaction, because store_write() may run them twice (map
 * growth); in-memory state (open counts, heartbeat times) is changed by the
 * handler only after the transaction committed.
 *
 * The FUSE client mounts with default_permissions, so the kernel has checked
 * permissions before a request gets here; meta checks only what makes the
 * namespace consistent (types, existence, emptiness, loops).
 *
 * Invariants kept here:
 *  - a directory's nlink is 2 + its number of subdirectories;
 *  - a directory's record names its parent (the rename loop check walks it);
 *  - an inode with nlink 0 is in the store only while it is open, or in
 *    the first mount lease after a start (service.h);
 *  - tiles_allocated in an inode equals its records in the tiles table, and
 *    every tile that leaves the tiles table enters the garbage table, and
 *    so does every read copy that leaves the copies table (copies.h).
 */
#include "handlers.h"

#include "arrayhint.h"
#include "copies.h"
#include "dirents.h"
#include "garbage.h"
#include "grants.h"
#include "handlers_reloc.h"
#include "handlers_tiles.h"
#include "handlers_session.h"
#include "inodes.h"
#include "layout.h"
#include "log.h"
#include "nodes.h"
#include "placement.h"
#include "readsource.h"
#include "reply.h"
#include "service.h"
#include "status.h"
#include "tile.h"
#include "tiles.h"
#include "util.h"
#include "xattrs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HANDLERS_READDIR_MAX_ENTRIES 4096
#define HANDLERS_READDIR_MAX_BYTES (1u << 20)
#define HANDLERS_LINK_MAX 65000      /* hard links to one file, as ext4 */
#define HANDLERS_WALK_MAX (1u << 20) /* parent-pointer steps before assuming a cycle */
#define HANDLERS_NSEC_PER_SEC 1000000000u

/* ---- helpers ----------------------------------------------------------- */

static void time_set(int64_t *sec, uint32_t *nsec, struct timespec when)
{
    *sec = when.tv_sec;
    *nsec = (uint32_t)when.tv_nsec;
}

/* The mount that sent request, 0 if none (leases.h). */
static uint64_t sender_mount(const struct rpc_request *request)
{
    return leases_mount_of(request->peer, request->peer_len);
}

/*
 * TS_ERR_LEASED when a mount other than the sender holds a lease on dir
 * (which asks that mount to give it back); the sender tries again.
 */
static int lease_check(struct service *service, uint64_t sender, uint64_t dir)
{
    return leases_refuse(service->leases, dir, sender, util_monotonic_ms()) ? TS_ERR_LEASED
                                                                            : TS_OK;
}

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

/* Loads inode ino: TS_OK, TS_ERR_NOENT, or a failure status. */
static int load_inode(struct store_txn *txn, uint64_t ino, struct inodes_record *record)
{
    int err = inodes_get(txn, ino, record);
    if (err == -ENOENT)
        return TS_ERR_NOENT;
    return reply_store_status(err);
}

/* As load_inode(), and TS_ERR_NOTDIR if it is not a directory. */
static int load_dir(struct store_txn *txn, uint64_t ino, struct inodes_record *record)
{
    int status = load_inode(txn, ino, record);
    if (status == TS_OK && !S_ISDIR(record->attr.mode))
        return TS_ERR_NOTDIR;
    return status;
}

/*
 * As load_dir(), for a directory about to get a new entry: one that was
 * removed while open (nlink 0) takes none, as on Linux.
 */
static int load_live_dir(struct store_txn *txn, uint64_t ino, struct inodes_record *record)
{
    int status = load_dir(txn, ino, record);
    if (status == TS_OK && record->attr.nlink == 0)
        return TS_ERR_NOENT;
    return status;
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

/* Loads the inode an entry names; a missing one means the store is damaged. */
static int load_child(struct store_txn *txn, const struct dirents_entry *entry,
                      struct inodes_record *record)
{
    int status = load_inode(txn, entry->ino, record);
    if (status == TS_ERR_NOENT) {
        log_error("directory entry names missing inode %llu", (unsigned long long)entry->ino);
        return TS_ERR_INTERNAL;
    }
    return status;
}

/*
 * Directory dir gained or lost an entry: mtime and ctime become now and its
 * nlink changes by nlink_delta (subdirectories added minus removed).
 */
static int dir_changed(struct store_txn *txn, uint64_t dir, int nlink_delta, struct timespec now)
{
    struct inodes_record record;
    int status = load_inode(txn, dir, &record);
    if (status != TS_OK)
        return status == TS_ERR_NOENT ? TS_ERR_INTERNAL : status;
    if (nlink_delta < 0 && record.attr.nlink < (uint32_t)-nlink_delta)
        record.attr.nlink = 0;
    else
        record.attr.nlink += (uint32_t)nlink_delta;
    time_set(&record.attr.mtime_sec, &record.attr.mtime_nsec, now);
    time_set(&record.attr.ctime_sec, &record.attr.ctime_nsec, now);
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
    int status = load_inode(txn, ino, &record);
    if (status != TS_OK)
        return status == TS_ERR_NOENT ? TS_ERR_INTERNAL : status;
    if (S_ISDIR(record.attr.mode) || record.attr.nlink == 0)
        record.attr.nlink = 0;
    else
        record.attr.nlink--;
    time_set(&record.attr.ctime_sec, &record.attr.ctime_nsec, now);
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
        status = load_inode(txn, dir, &record);
        if (status != TS_OK || record.parent == 0 || record.parent == dir) {
            log_error("broken parent chain at inode %llu", (unsigned long long)dir);
            return TS_ERR_INTERNAL;
        }
        dir = record.parent;
    }
    log_error("parent chain longer than %u steps: a cycle?", HANDLERS_WALK_MAX);
    return TS_ERR_INTERNAL;
}

/* Accepts only "user." attribute names, as the FUSE client promises. */
static int check_xattr_name(struct ts_str name)
{
    static const char prefix[] = "user.";
    const size_t prefix_len = sizeof(prefix) - 1;
    if (name.len > TS_MAX_XATTR_NAME)
        return TS_ERR_RANGE;
    if (name.len == 0 || memchr(name.ptr, '\0', name.len))
        return TS_ERR_INVAL;
    if (name.len < prefix_len || memcmp(name.ptr, prefix, prefix_len) != 0)
        return TS_ERR_NOTSUP;
    if (name.len == prefix_len)
        return TS_ERR_INVAL;
    return TS_OK;
}

static bool payload_empty(const struct rpc_request *request)
{
    return request->payload_len == 0;
}

/* The array hint (section "user.tessera.array" below). */
static int array_inherit(struct store_txn *txn, struct service *service,
                         struct inodes_record *created, uint64_t parent);
static int array_load(struct store_txn *txn, uint64_t ino, struct arraylayout **layoutp);

/* ---- PING -------------------------------------------------------------- */

static int handle_ping(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    struct ts_ping_rep reply = {.role = ts_str_of("meta"),
                                .uptime_ms = (uint64_t)util_process_age_ms()};
    (void)ctx;
    if (!payload_empty(request))
        return reply_bad_message(response, request->header.type);
    return REPLY_ENCODE(ping_rep, &reply, response);
}

/* ---- CLUSTER_ID --------------------------------------------------------- */

static int handle_cluster_id(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_cluster_id_rep reply = {.cluster_id = ts_str_of(service->cluster_id)};
    if (!payload_empty(request))
        return reply_bad_message(response, request->header.type);
    return REPLY_ENCODE(cluster_id_rep, &reply, response);
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
    int status = load_dir(txn, op->request->parent, &op->found);
    if (status != TS_OK)
        return status;
    /* "." and ".." are answered from the directory itself (NFS-style lookups). */
    if (name.len == 1 && name.ptr[0] == '.')
        return TS_OK;
    if (name.len == 2 && name.ptr[0] == '.' && name.ptr[1] == '.')
        return load_inode(txn, op->found.parent, &op->found);
    status = check_name(name);
    if (status == TS_OK)
        status = load_entry(txn, op->request->parent, name, &entry);
    if (status == TS_OK)
        status = load_child(txn, &entry, &op->found);
    return status;
}

static int handle_lookup(void *ctx, const struct rpc_request *request,
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
    status = lease_check(service, sender_mount(request), message.parent);
    if (status != TS_OK)
        return status;
    status = store_read(service->store, lookup_body, &op);
    if (status != TS_OK)
        return status;
    inodes_attr(&op.found, service->default_placement, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

struct inode_op {
    uint64_t ino;
    struct inodes_record found;
};

static int getattr_body(struct store_txn *txn, void *arg)
{
    struct inode_op *op = arg;
    return load_inode(txn, op->ino, &op->found);
}

static int handle_getattr(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_getattr_req message;
    struct inode_op op;
    struct ts_attr_rep reply;
    int status;

    if (ts_getattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    op.ino = message.ino;
    status = lease_check(service, sender_mount(request), message.ino);
    if (status != TS_OK)
        return status;
    status = store_read(service->store, getattr_body, &op);
    if (status != TS_OK)
        return status;
    inodes_attr(&op.found, service->default_placement, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

/* ---- SETATTR ------------------------------------------------------------ */

struct setattr_op {
    const struct ts_setattr_req *request;
    struct timespec now;
    struct inodes_record record;
    struct ts_setattr_rep reply;
    char why[160]; /* why a size change of an array file was refused */
};

/*
 * The sizes an array file may take (its tiles are hyper-rectangles, not
 * byte ranges, so a partial cut has no tile boundary to fall on): 0, which
 * drops every tile and keeps the layout; its current size (nothing
 * changes); or anything up to the array's size, growing (the rest reads as
 * zeros). Shrinking to another size is TS_ERR_INVAL, past the array's size
 * TS_ERR_FBIG.
 */
static int setattr_array_size(struct store_txn *txn, struct setattr_op *op)
{
    const struct ts_attr *attr = &op->record.attr;
    uint64_t size = op->request->size;
    struct arraylayout *layout;
    int status = array_load(txn, attr->ino, &layout);
    if (status != TS_OK)
        return status;
    uint64_t array_bytes = layout->array_bytes;
    free(layout);
    if (size > array_bytes) {
        snprintf(op->why, sizeof(op->why),
                 "size %llu is past the end of the array (%llu bytes, user.tessera.array)",
                 (unsigned long long)size, (unsigned long long)array_bytes);
        return TS_ERR_FBIG;
    }
    if (size != 0 && size < attr->size) {
        snprintf(op->why, sizeof(op->why),
                 "an array file can only be truncated to 0 or grown (asked %llu, size %llu)",
                 (unsigned long long)size, (unsigned long long)attr->size);
        return TS_ERR_INVAL;
    }
    return TS_OK;
}

/*
 * Truncates a regular file's tiles at new_size: drops (into garbage) every
 * tile wholly past the end and, with `cut`, names the tile the end falls
 * inside so that the client cuts it on its datanode.
 */
static int shrink_tiles(struct store_txn *txn, struct setattr_op *op, uint64_t new_size, bool cut)
{
    struct inodes_record *record = &op->record;
    uint32_t tile_bytes = record->attr.tile_bytes;
    uint64_t dropped = 0;
    struct tiles_entry last;
    int err =
        tiles_drop_from(txn, record->attr.ino, tile_count_for(new_size, tile_bytes), &dropped);
    if (err < 0)
        return reply_store_status(err);
    record->tiles_allocated =
        record->tiles_allocated > dropped ? record->tiles_allocated - dropped : 0;
    if (!cut || new_size % tile_bytes == 0)
        return TS_OK;
    /*
     * The client cuts the primary of the tile the end falls in; its copies
     * would keep the bytes past the cut (and show them if the file grows).
     */
    err = copies_drop(txn, record->attr.ino, new_size / tile_bytes, new_size / tile_bytes, NULL);
    if (err < 0)
        return reply_store_status(err);
    err = tiles_get(txn, record->attr.ino, new_size / tile_bytes, &last);
    if (err == -ENOENT)
        return TS_OK;
    if (err < 0)
        return reply_store_status(err);
    op->reply.cut_node = last.node;
    op->reply.cut_tile = new_size / tile_bytes;
    op->reply.cut_version = last.version;
    op->reply.cut_bytes = (uint32_t)(new_size % tile_bytes);
    return TS_OK;
}

static int setattr_body(struct store_txn *txn, void *arg)
{
    struct setattr_op *op = arg;
    const struct ts_setattr_req *request = op->request;
    struct ts_attr *attr = &op->record.attr;
    uint32_t valid = request->valid;
    int status;

    memset(&op->reply, 0, sizeof(op->reply));
    status = load_inode(txn, request->ino, &op->record);
    if (status != TS_OK)
        return status;
    if (valid & TS_SET_SIZE) {
        if (S_ISDIR(attr->mode))
            return TS_ERR_ISDIR;
        if (!S_ISREG(attr->mode))
            return TS_ERR_INVAL;
        if (attr->tile_bytes == 0)
            return TS_ERR_INTERNAL;
        if (attr->flags & TS_ATTR_ARRAY) {
            status = setattr_array_size(txn, op);
            if (status != TS_OK)
                return status;
        }
    }
    if (valid & TS_SET_MODE)
        attr->mode = (attr->mode & S_IFMT) | (request->mode & 07777);
    if ((valid & TS_SET_KILL_PRIV) && S_ISREG(attr->mode)) {
        attr->mode &= ~(uint32_t)S_ISUID;
        if (attr->mode & S_IXGRP)
            attr->mode &= ~(uint32_t)S_ISGID;
    }
    if (valid & TS_SET_UID)
        attr->uid = request->uid;
    if (valid & TS_SET_GID)
        attr->gid = request->gid;
    /*
     * Truncating to the current size or below also drops tiles past the end
     * that a crashed writer allocated but never committed (O_TRUNC of an
     * empty file clears them). Growing leaves every tile alone: a writer may
     * have tiles in flight beyond the old end. An array file's tile indices
     * are not file order: only truncating it to 0 drops tiles (all of them).
     */
    bool array = (attr->flags & TS_ATTR_ARRAY) != 0;
    if ((valid & TS_SET_SIZE) && request->size <= attr->size && (!array || request->size == 0)) {
        status = shrink_tiles(txn, op, request->size, request->size < attr->size);
        if (status != TS_OK)
            return status;
    }
    if ((valid & TS_SET_SIZE) && request->size != attr->size) {
        attr->size = request->size;
        time_set(&attr->mtime_sec, &attr->mtime_nsec, op->now);
    }
    if (valid & TS_SET_ATIME_NOW)
        time_set(&attr->atime_sec, &attr->atime_nsec, op->now);
    else if (valid & TS_SET_ATIME) {
        attr->atime_sec = request->atime_sec;
        attr->atime_nsec = request->atime_nsec;
    }
    if (valid & TS_SET_MTIME_NOW)
        time_set(&attr->mtime_sec, &attr->mtime_nsec, op->now);
    else if (valid & TS_SET_MTIME) {
        attr->mtime_sec = request->mtime_sec;
        attr->mtime_nsec = request->mtime_nsec;
    }
    time_set(&attr->ctime_sec, &attr->ctime_nsec, op->now);
    return reply_store_status(inodes_put(txn, &op->record));
}

static int handle_setattr(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_setattr_req message;
    struct setattr_op op = {.request = &message};
    int status;

    if (ts_setattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if ((message.valid & TS_SET_SIZE) && message.size > INT64_MAX)
        return TS_ERR_FBIG;
    if (((message.valid & TS_SET_ATIME) && message.atime_nsec >= HANDLERS_NSEC_PER_SEC) ||
        ((message.valid & TS_SET_MTIME) && message.mtime_nsec >= HANDLERS_NSEC_PER_SEC))
        return TS_ERR_INVAL;
    status = lease_check(service, sender_mount(request), message.ino);
    if (status != TS_OK)
        return status;
    op.now = util_now();
    status = store_write(service->store, setattr_body, &op);
    if (status != TS_OK && op.why[0]) {
        log_info("setattr of inode %llu refused: %s", (unsigned long long)message.ino, op.why);
        snprintf(response->error_text, sizeof(response->error_text), "%s", op.why);
    }
    if (status != TS_OK)
        return status;
    inodes_attr(&op.record, service->default_placement, &op.reply.attr);
    return REPLY_ENCODE(setattr_rep, &op.reply, response);
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

    status = load_live_dir(txn, op->parent, &parent);
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
    status = array_inherit(txn, op->service, &op->created, op->parent);
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
        status = lease_check(service, sender_mount(request), op->parent);
    if (status != TS_OK)
        return status;
    op->service = service;
    op->now = util_now();
    status = store_write(service->store, create_body, op);
    if (status != TS_OK)
        return status;
    inodes_attr(&op->created, service->default_placement, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

static int handle_mknod(void *ctx, const struct rpc_request *request, struct rpc_response *response)
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
        sessions_open(((struct service *)ctx)->sessions, sender_mount(request), op.created.attr.ino,
                      util_monotonic_ms()) < 0)
        return TS_ERR_NOMEM; /* the file exists; the client's open fails */
    return status;
}

static int handle_mkdir(void *ctx, const struct rpc_request *request, struct rpc_response *response)
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

static int handle_symlink(void *ctx, const struct rpc_request *request,
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
static int reply_statuses(const uint32_t *statuses, uint32_t count,
                          struct rpc_response *response)
{
    uint8_t blob[256 * 4];
    struct ts_writer writer;
    ts_writer_init(&writer, blob, sizeof(blob));
    for (uint32_t i = 0; i < count; i++)
        ts_writer_u32(&writer, statuses[i]);
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
static int remove_check(struct store_txn *txn, uint64_t parent, struct ts_str name,
                        bool directory, struct dirents_entry *entry)
{
    struct inodes_record record;
    int status = load_dir(txn, parent, &record);
    if (status == TS_OK)
        status = load_entry(txn, parent, name, entry);
    if (status == TS_OK)
        status = load_child(txn, entry, &record);
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
        status = lease_check(op->service, op->sender, entry.ino);
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
                           .sender = sender_mount(request),
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

static int handle_unlink(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response)
{
    return remove_run(ctx, request, response, false);
}

static int handle_rmdir(void *ctx, const struct rpc_request *request, struct rpc_response *response)
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

static int handle_unlink_many(void *ctx, const struct rpc_request *request,
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
        op->parents[i] = ts_cursor_u64(&cursor);
        op->names[i] = ts_cursor_str(&cursor);
        if (!cursor.failed)
            op->name_statuses[i] = check_name(op->names[i]);
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

    status = load_child(txn, source_entry, &source);
    if (status == TS_OK)
        status = load_child(txn, target_entry, &target);
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
    time_set(&source.attr.ctime_sec, &source.attr.ctime_nsec, op->now);
    time_set(&target.attr.ctime_sec, &target.attr.ctime_nsec, op->now);
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

    status = load_dir(txn, request->parent, &dir);
    if (status == TS_OK)
        status = load_live_dir(txn, request->new_parent, &dir);
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

    status = load_child(txn, &source_entry, &source);
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
        status = load_child(txn, &target_entry, &target);
        if (status != TS_OK)
            return status;
        target_is_dir = S_ISDIR(target.attr.mode);
        if (source_is_dir && !target_is_dir)
            return TS_ERR_NOTDIR;
        if (!source_is_dir && target_is_dir)
            return TS_ERR_ISDIR;
        if (target_is_dir) {
            bool empty;
            status = lease_check(op->service, op->sender, target.attr.ino);
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
    time_set(&source.attr.ctime_sec, &source.attr.ctime_nsec, op->now);
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

static int handle_rename(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_rename_req message;
    struct rename_op op = {.service = service, .sender = sender_mount(request), .request = &message};
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
        status = lease_check(service, op.sender, message.parent);
    if (status == TS_OK)
        status = lease_check(service, op.sender, message.new_parent);
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

    status = load_inode(txn, request->ino, linked);
    if (status != TS_OK)
        return status;
    if (S_ISDIR(linked->attr.mode))
        return TS_ERR_PERM;
    if (linked->attr.nlink == 0) /* unlinked but open: Linux says ENOENT too */
        return TS_ERR_NOENT;
    if (linked->attr.nlink >= HANDLERS_LINK_MAX)
        return TS_ERR_MLINK;
    status = load_live_dir(txn, request->new_parent, &parent);
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
    time_set(&linked->attr.ctime_sec, &linked->attr.ctime_nsec, op->now);
    err = inodes_put(txn, linked);
    if (err < 0)
        return reply_store_status(err);
    return dir_changed(txn, request->new_parent, 0, op->now);
}

static int handle_link(void *ctx, const struct rpc_request *request, struct rpc_response *response)
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
        status = lease_check(service, sender_mount(request), message.new_parent);
    if (status != TS_OK)
        return status;
    op.now = util_now();
    status = store_write(service->store, link_body, &op);
    if (status != TS_OK)
        return status;
    inodes_attr(&op.linked, service->default_placement, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

/* ---- READLINK ----------------------------------------------------------- */

static int readlink_body(struct store_txn *txn, void *arg)
{
    struct inode_op *op = arg;
    int status = load_inode(txn, op->ino, &op->found);
    if (status == TS_OK && !S_ISLNK(op->found.attr.mode))
        return TS_ERR_INVAL;
    return status;
}

static int handle_readlink(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_readlink_req message;
    struct ts_readlink_rep reply;
    struct inode_op op;
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
    size_t record_bytes = 8 + 4 + 2 + name.len;
    if (op->count >= op->max_entries || op->entries.len + record_bytes > HANDLERS_READDIR_MAX_BYTES)
        return 1;
    ts_writer_u64(&op->entries, entry->ino);
    ts_writer_u32(&op->entries, entry->mode);
    ts_writer_str(&op->entries, name);
    if (op->entries.failed)
        return -ENOBUFS;
    op->count++;
    return 0;
}

static int readdir_body(struct store_txn *txn, void *arg)
{
    struct readdir_op *op = arg;
    struct inodes_record dir;
    int status = load_dir(txn, op->request->ino, &dir);
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

static int handle_readdir(void *ctx, const struct rpc_request *request,
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
    status = lease_check(service, sender_mount(request), message.ino);
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
    uint32_t default_placement;
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
    struct ts_attr attr;
    size_t record_bytes = TS_ATTR_WIRE_BYTES + 2 + name.len;
    if (op->count >= op->max_entries || op->entries.len + record_bytes > HANDLERS_READDIR_MAX_BYTES)
        return 1;
    int status = load_child(op->txn, entry, &op->child);
    if (status != TS_OK)
        return status == TS_ERR_NOMEM ? -ENOMEM : -EIO;
    inodes_attr(&op->child, op->default_placement, &attr);
    ts_writer_attr(&op->entries, &attr);
    ts_writer_str(&op->entries, name);
    if (op->entries.failed)
        return -ENOBUFS;
    op->count++;
    return 0;
}

static int readdirplus_body(struct store_txn *txn, void *arg)
{
    struct readdirplus_op *op = arg;
    struct inodes_record dir;
    int status = load_dir(txn, op->request->ino, &dir);
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

static int handle_readdirplus(void *ctx, const struct rpc_request *request,
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
    status = lease_check(service, sender_mount(request), message.ino);
    if (status != TS_OK)
        return status;
    op = calloc(1, sizeof(*op));
    if (!op)
        return TS_ERR_NOMEM;
    op->request = &message;
    op->default_placement = service->default_placement;
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

/* ---- OPEN, RELEASE ------------------------------------------------------ */

static int handle_open(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_open_req message;
    struct ts_attr_rep reply;
    struct inode_op op;
    int status;

    if (ts_open_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    op.ino = message.ino;
    status = store_read(service->store, getattr_body, &op);
    if (status != TS_OK)
        return status;
    if (sessions_open(service->sessions, sender_mount(request), message.ino, util_monotonic_ms()) <
        0)
        return TS_ERR_NOMEM;
    inodes_attr(&op.found, service->default_placement, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

/*
 * One release of ino by mount: counts down what mount holds (a release of
 * an open it does not hold, sent twice or from before a restart of meta,
 * changes nothing) and deletes the inode after the last close of an
 * unlinked file.
 */
static void release_one(struct service *service, uint64_t mount, uint64_t ino)
{
    struct inode_op op;

    if (!sessions_release(service->sessions, mount, ino) ||
        sessions_open_count(service->sessions, ino) > 0)
        return;
    /* A read first: most last closes are of linked files, which stay. */
    op.ino = ino;
    if (store_read(service->store, getattr_body, &op) != TS_OK || op.found.attr.nlink > 0)
        return;
    service_reap(service, &ino, 1, util_monotonic_ms(), NULL);
}

static int handle_release(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct ts_release_req message;

    if (ts_release_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    release_one(ctx, sender_mount(request), message.ino);
    return TS_OK;
}

static int handle_release_many(void *ctx, const struct rpc_request *request,
                               struct rpc_response *response)
{
    struct ts_release_many_req message;
    struct ts_cursor cursor;

    if (ts_release_many_req_decode(&message, request->payload, request->payload_len) != 0 ||
        message.count > TS_MAX_RELEASES || message.inos.len != (uint64_t)message.count * 8)
        return reply_bad_message(response, request->header.type);
    ts_cursor_init(&cursor, message.inos.ptr, message.inos.len);
    for (uint32_t i = 0; i < message.count; i++)
        release_one(ctx, sender_mount(request), ts_cursor_u64(&cursor));
    return TS_OK;
}

/* ---- STATFS ------------------------------------------------------------- */

struct statfs_op {
    struct service *service;
    struct ts_statfs_rep reply;
};

static int statfs_body(struct store_txn *txn, void *arg)
{
    struct statfs_op *op = arg;
    struct nodes_record *nodes;
    size_t count;
    int64_t now_ms = util_monotonic_ms();
    int err = nodes_list(txn, &nodes, &count);
    if (err < 0)
        return reply_store_status(err);
    memset(&op->reply, 0, sizeof(op->reply));
    for (size_t i = 0; i < count; i++) {
        if (!nodes_live_is_up(op->service->live, nodes[i].id, now_ms))
            continue;
        op->reply.total_bytes += nodes[i].capacity;
        op->reply.free_bytes += nodes[i].free_bytes;
        op->reply.nodes_up++;
    }
    free(nodes);
    return reply_store_status(inodes_count(txn, &op->reply.files));
}

static int handle_statfs(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response)
{
    struct service *service = ctx;
    struct statfs_op op = {.service = service};
    int status;

    if (!payload_empty(request))
        return reply_bad_message(response, request->header.type);
    status = store_read(service->store, statfs_body, &op);
    if (status != TS_OK)
        return status;
    return REPLY_ENCODE(statfs_rep, &op.reply, response);
}

/* ---- xattrs ------------------------------------------------------------- */

struct xattr_op {
    uint64_t ino;
    struct ts_str name;
    struct ts_str value;
    uint32_t flags;
    struct timespec now;
    struct rpc_response *response; /* GETXATTR encodes inside the txn */
    struct ts_writer names;        /* LISTXATTR */
};

/* Records an attribute change in the inode's ctime. */
static int xattr_touch(struct store_txn *txn, uint64_t ino, struct timespec now)
{
    struct inodes_record record;
    int status = load_inode(txn, ino, &record);
    if (status != TS_OK)
        return status;
    time_set(&record.attr.ctime_sec, &record.attr.ctime_nsec, now);
    return reply_store_status(inodes_put(txn, &record));
}

static int setxattr_body(struct store_txn *txn, void *arg)
{
    struct xattr_op *op = arg;
    struct ts_str existing;
    int status = xattr_touch(txn, op->ino, op->now);
    int err;
    if (status != TS_OK)
        return status;
    err = xattrs_get(txn, op->ino, op->name, &existing);
    if (err < 0 && err != -ENOENT)
        return reply_store_status(err);
    if ((op->flags & TS_XATTR_CREATE) && err == 0)
        return TS_ERR_EXIST;
    if ((op->flags & TS_XATTR_REPLACE) && err == -ENOENT)
        return TS_ERR_NODATA;
    return reply_store_status(xattrs_put(txn, op->ino, op->name, op->value));
}

/* ---- user.tessera.layout ---------------------------------------------- */

/*
 * The layout hint is not stored in the xattrs table: it is the layout in
 * the inode record, read and written here. It exists on every regular file
 * and directory (getxattr shows the effective layout) and is not listed by
 * LISTXATTR, so that copying a tree with its xattrs does not pin every
 * copied file to the layout its source happened to have.
 */

struct layout_op {
    struct service *service;
    uint64_t ino;
    struct layout given; /* what SETXATTR asked for */
    bool remove;         /* REMOVEXATTR: back to the defaults */
    uint32_t flags;      /* SETXATTR flags */
    struct timespec now;
    char text[64]; /* GETXATTR: the effective layout */
    char why[160]; /* why the change was refused */
};

static bool layout_xattr(struct ts_str name)
{
    return name.len == strlen(LAYOUT_XATTR) && memcmp(name.ptr, LAYOUT_XATTR, name.len) == 0;
}

static int layout_get_body(struct store_txn *txn, void *arg)
{
    struct layout_op *op = arg;
    struct inodes_record record;
    struct layout layout;
    int status = load_inode(txn, op->ino, &record);
    if (status != TS_OK)
        return status;
    if (!S_ISREG(record.attr.mode) && !S_ISDIR(record.attr.mode))
        return TS_ERR_NODATA;
    inodes_layout(&record, op->service->default_placement, &layout);
    return layout_format(&layout, op->text, sizeof(op->text)) < 0 ? TS_ERR_INTERNAL : TS_OK;
}

static bool layout_same(const struct layout *a, const struct layout *b)
{
    return a->tile_bytes == b->tile_bytes && a->copies == b->copies && a->placement == b->placement;
}

static int layout_set_body(struct store_txn *txn, void *arg)
{
    struct layout_op *op = arg;
    struct inodes_record record;
    struct ts_attr *attr = &record.attr;
    struct layout before;
    struct layout after;
    int status = load_inode(txn, op->ino, &record);
    if (status != TS_OK)
        return status;
    if (!S_ISREG(attr->mode) && !S_ISDIR(attr->mode))
        return op->remove ? TS_ERR_NODATA : TS_ERR_INVAL;
    if (op->flags & TS_XATTR_CREATE)
        return TS_ERR_EXIST; /* every file and directory has a layout */

    struct layout stored = {attr->tile_bytes, attr->copies, attr->placement, 0};
    if (op->remove) {
        bool dir = S_ISDIR(attr->mode);
        stored.tile_bytes = dir ? 0 : TILE_DEFAULT_BYTES;
        stored.copies = dir ? 0 : 1;
        stored.placement = TS_PLACEMENT_DEFAULT;
    } else {
        layout_apply(&stored, &op->given);
    }
    inodes_layout(&record, op->service->default_placement, &before);
    attr->tile_bytes = stored.tile_bytes;
    attr->copies = stored.copies;
    attr->placement = stored.placement;
    inodes_layout(&record, op->service->default_placement, &after);
    /* A file's layout is fixed once it has tiles; setting the same one again is harmless. */
    if (S_ISREG(attr->mode) && record.tiles_allocated > 0) {
        if (layout_same(&before, &after))
            return TS_OK;
        snprintf(op->why, sizeof(op->why),
                 "the file already has %llu tiles; its layout is fixed (set it before the "
                 "first write, or on the directory)",
                 (unsigned long long)record.tiles_allocated);
        return TS_ERR_BUSY;
    }
    time_set(&attr->ctime_sec, &attr->ctime_nsec, op->now);
    return reply_store_status(inodes_put(txn, &record));
}

/* SETXATTR or REMOVEXATTR of user.tessera.layout; value is NULL for a removal. */
static int layout_set(struct service *service, uint64_t ino, const struct ts_str *value,
                      uint32_t flags, struct rpc_response *response)
{
    struct layout_op op;
    int status;

    memset(&op, 0, sizeof(op));
    op.service = service;
    op.ino = ino;
    op.flags = flags;
    op.remove = value == NULL;
    op.now = util_now();
    if (value && layout_parse(value->ptr, value->len, &op.given, op.why, sizeof(op.why)) != 0) {
        log_warn("setxattr %s on inode %llu refused: %s", LAYOUT_XATTR, (unsigned long long)ino,
                 op.why);
        snprintf(response->error_text, sizeof(response->error_text), "%s: %s", LAYOUT_XATTR,
                 op.why);
        return TS_ERR_INVAL;
    }
    status = store_write(service->store, layout_set_body, &op);
    if (status == TS_ERR_BUSY) {
        log_info("%s of inode %llu not changed: %s", LAYOUT_XATTR, (unsigned long long)ino, op.why);
        snprintf(response->error_text, sizeof(response->error_text), "%s: %s", LAYOUT_XATTR,
                 op.why);
    }
    return status;
}

static int layout_get(struct service *service, uint64_t ino, struct rpc_response *response)
{
    struct layout_op op;
    struct ts_getxattr_rep reply;
    int status;

    memset(&op, 0, sizeof(op));
    op.service = service;
    op.ino = ino;
    status = store_read(service->store, layout_get_body, &op);
    if (status != TS_OK)
        return status;
    reply.value = ts_str_of(op.text);
    return REPLY_ENCODE(getxattr_rep, &reply, response);
}

/* ---- user.tessera.array ----------------------------------------------- */

/*
 * The array hint (arrayhint.h). On a regular file it may be set, changed or
 * removed while the file is empty: size 0 and no tiles (setting the text
 * the file already has is harmless at any time); otherwise EBUSY. Setting it
 * stores the canonical text and sets TS_ATTR_ARRAY; removing it clears both
 * and makes the file linear again. On a directory it is kept for the files
 * created in it; GETXATTR there shows it resolved with the directory's tile
 * size, as a new file would get it. Like user.tessera.layout it is not
 * listed by LISTXATTR.
 */

struct array_op {
    struct service *service;
    uint64_t ino;
    struct ts_str value; /* SETXATTR: the text given */
    bool remove;         /* REMOVEXATTR */
    uint32_t flags;      /* SETXATTR flags */
    struct timespec now;
    struct arraylayout layout;
    char text[ARRAYSPEC_TEXT_MAX + 1]; /* GETXATTR: the effective text */
    char why[ARRAYHINT_WHY_MAX];       /* why the change was refused */
};

static bool array_xattr(struct ts_str name)
{
    return name.len == strlen(ARRAYHINT_XATTR) && memcmp(name.ptr, ARRAYHINT_XATTR, name.len) == 0;
}

/* The tile size new tiles (or a directory's new files) of record get. */
static uint32_t array_tile_bytes(const struct service *service, const struct inodes_record *record)
{
    struct layout layout;
    inodes_layout(record, service->default_placement, &layout);
    return layout.tile_bytes;
}

static int array_get_body(struct store_txn *txn, void *arg)
{
    struct array_op *op = arg;
    struct inodes_record record;
    size_t len;
    int status = load_inode(txn, op->ino, &record);
    int err;
    if (status != TS_OK)
        return status;
    if (!S_ISREG(record.attr.mode) && !S_ISDIR(record.attr.mode))
        return TS_ERR_NODATA;
    err = arrayhint_get(txn, op->ino, op->text, sizeof(op->text), &len);
    if (err == -ENOENT)
        return TS_ERR_NODATA;
    if (err < 0)
        return reply_store_status(err);
    if (S_ISREG(record.attr.mode))
        return TS_OK; /* already canonical */
    if (arrayhint_compile(op->text, len, array_tile_bytes(op->service, &record), &op->layout,
                          op->why, sizeof(op->why)) != 0 ||
        arrayspec_format(&op->layout.spec, op->text, sizeof(op->text)) < 0) {
        log_error("directory %llu: stored array layout '%s' does not compile: %s",
                  (unsigned long long)op->ino, op->text, op->why);
        return TS_ERR_INTERNAL;
    }
    return TS_OK;
}

static int array_set_body(struct store_txn *txn, void *arg)
{
    struct array_op *op = arg;
    struct inodes_record record;
    struct ts_attr *attr = &record.attr;
    char stored[ARRAYSPEC_TEXT_MAX + 1];
    char canonical[ARRAYSPEC_TEXT_MAX + 1];
    size_t stored_len = 0;
    int status = load_inode(txn, op->ino, &record);
    int err;
    if (status != TS_OK)
        return status;
    if (!S_ISREG(attr->mode) && !S_ISDIR(attr->mode)) {
        snprintf(op->why, sizeof(op->why), "only regular files and directories take one");
        return op->remove ? TS_ERR_NODATA : TS_ERR_INVAL;
    }
    err = arrayhint_get(txn, op->ino, stored, sizeof(stored), &stored_len);
    if (err < 0 && err != -ENOENT)
        return reply_store_status(err);
    bool had = err == 0;
    if (op->remove && !had)
        return TS_ERR_NODATA;
    if ((op->flags & TS_XATTR_CREATE) && had)
        return TS_ERR_EXIST;
    if ((op->flags & TS_XATTR_REPLACE) && !had)
        return TS_ERR_NODATA;

    const char *text = op->value.ptr;
    size_t len = op->value.len;
    if (!op->remove) {
        if (arrayhint_compile(op->value.ptr, op->value.len, array_tile_bytes(op->service, &record),
                              &op->layout, op->why, sizeof(op->why)) != 0)
            return TS_ERR_INVAL;
        if (S_ISREG(attr->mode)) {
            int canonical_len = arrayspec_format(&op->layout.spec, canonical, sizeof(canonical));
            if (canonical_len < 0)
                return TS_ERR_INTERNAL;
            text = canonical;
            len = (size_t)canonical_len;
        }
    }
    if (S_ISREG(attr->mode) && (attr->size != 0 || record.tiles_allocated != 0)) {
        if (!op->remove && had && stored_len == len && memcmp(stored, text, len) == 0)
            return TS_OK;
        snprintf(op->why, sizeof(op->why),
                 "the file already has data (%llu bytes, %llu tiles); its layout is fixed (set "
                 "it on an empty file before the first write, on the directory, or truncate the "
                 "file to 0 first)",
                 (unsigned long long)attr->size, (unsigned long long)record.tiles_allocated);
        return TS_ERR_BUSY;
    }
    err = op->remove ? arrayhint_delete(txn, op->ino) : arrayhint_put(txn, op->ino, text, len);
    if (err < 0)
        return reply_store_status(err);
    if (S_ISREG(attr->mode)) {
        if (op->remove)
            attr->flags &= ~TS_ATTR_ARRAY;
        else
            attr->flags |= TS_ATTR_ARRAY;
    }
    time_set(&attr->ctime_sec, &attr->ctime_nsec, op->now);
    return reply_store_status(inodes_put(txn, &record));
}

/* SETXATTR or REMOVEXATTR of user.tessera.array; value is NULL for a removal. */
static int array_set(struct service *service, uint64_t ino, const struct ts_str *value,
                     uint32_t flags, struct rpc_response *response)
{
    struct array_op *op = calloc(1, sizeof(*op));
    int status;

    if (!op)
        return TS_ERR_NOMEM;
    op->service = service;
    op->ino = ino;
    op->flags = flags;
    op->remove = value == NULL;
    if (value)
        op->value = *value;
    op->now = util_now();
    status = store_write(service->store, array_set_body, op);
    if ((status == TS_ERR_INVAL || status == TS_ERR_BUSY) && op->why[0]) {
        log_warn("%s %s on inode %llu refused: %s", op->remove ? "removexattr" : "setxattr",
                 ARRAYHINT_XATTR, (unsigned long long)ino, op->why);
        /* The reply's text is shorter than the log's: the start says what is wrong. */
        snprintf(response->error_text, sizeof(response->error_text), "%s: %.200s", ARRAYHINT_XATTR,
                 op->why);
    }
    free(op);
    return status;
}

static int array_get(struct service *service, uint64_t ino, struct rpc_response *response)
{
    struct array_op *op = calloc(1, sizeof(*op));
    struct ts_getxattr_rep reply;
    int status;

    if (!op)
        return TS_ERR_NOMEM;
    op->service = service;
    op->ino = ino;
    status = store_read(service->store, array_get_body, op);
    if (status == TS_OK) {
        reply.value = ts_str_of(op->text);
        status = REPLY_ENCODE(getxattr_rep, &reply, response);
    }
    free(op);
    return status;
}

/*
 * A new inode in directory `parent` takes its array hint: a regular file
 * the hint resolved with its own tile size (and TS_ATTR_ARRAY), a
 * subdirectory the text as it is. Called before the new record is stored.
 */
static int array_inherit(struct store_txn *txn, struct service *service,
                         struct inodes_record *created, uint64_t parent)
{
    char text[ARRAYSPEC_TEXT_MAX + 1];
    char why[ARRAYHINT_WHY_MAX];
    struct arraylayout *layout;
    size_t len;
    int err;

    if (!S_ISREG(created->attr.mode) && !S_ISDIR(created->attr.mode))
        return TS_OK;
    err = arrayhint_get(txn, parent, text, sizeof(text), &len);
    if (err == -ENOENT)
        return TS_OK;
    if (err < 0)
        return reply_store_status(err);
    if (S_ISDIR(created->attr.mode))
        return reply_store_status(arrayhint_put(txn, created->attr.ino, text, len));
    layout = malloc(sizeof(*layout));
    if (!layout)
        return TS_ERR_NOMEM;
    if (arrayhint_compile(text, len, array_tile_bytes(service, created), layout, why,
                          sizeof(why)) != 0) {
        log_error("directory %llu: stored array layout '%s' does not compile: %s",
                  (unsigned long long)parent, text, why);
        free(layout);
        return TS_ERR_INTERNAL;
    }
    int text_len = arrayspec_format(&layout->spec, text, sizeof(text));
    free(layout);
    if (text_len < 0)
        return TS_ERR_INTERNAL;
    created->attr.flags |= TS_ATTR_ARRAY;
    return reply_store_status(arrayhint_put(txn, created->attr.ino, text, (size_t)text_len));
}

/*
 * The compiled layout of an array file into a buffer the caller frees;
 * TS_OK or a failure status (a missing or damaged record is internal).
 */
static int array_load(struct store_txn *txn, uint64_t ino, struct arraylayout **layoutp)
{
    struct arraylayout *layout = malloc(sizeof(*layout));
    int err;
    *layoutp = NULL;
    if (!layout)
        return TS_ERR_NOMEM;
    err = arrayhint_load(txn, ino, layout);
    if (err < 0) {
        free(layout);
        if (err == -ENOENT)
            log_error("array file %llu has no array layout record", (unsigned long long)ino);
        return err == -ENOENT ? TS_ERR_INTERNAL : reply_store_status(err);
    }
    *layoutp = layout;
    return TS_OK;
}

static int handle_setxattr(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_setxattr_req message;
    struct xattr_op op;
    int status;

    if (ts_setxattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    status = check_xattr_name(message.name);
    if (status != TS_OK)
        return status;
    if (message.value.len > TS_MAX_XATTR_VALUE)
        return TS_ERR_RANGE;
    if ((message.flags & ~(TS_XATTR_CREATE | TS_XATTR_REPLACE)) != 0)
        return TS_ERR_INVAL;
    /* A directory's hints shape its new files: its lease holder's template. */
    status = lease_check(service, sender_mount(request), message.ino);
    if (status != TS_OK)
        return status;
    if (layout_xattr(message.name))
        return layout_set(service, message.ino, &message.value, message.flags, response);
    if (array_xattr(message.name))
        return array_set(service, message.ino, &message.value, message.flags, response);
    memset(&op, 0, sizeof(op));
    op.ino = message.ino;
    op.name = message.name;
    op.value = message.value;
    op.flags = message.flags;
    op.now = util_now();
    return store_write(service->store, setxattr_body, &op);
}

static int getxattr_body(struct store_txn *txn, void *arg)
{
    struct xattr_op *op = arg;
    struct inodes_record record;
    struct ts_getxattr_rep reply;
    int status = load_inode(txn, op->ino, &record);
    int err;
    if (status != TS_OK)
        return status;
    err = xattrs_get(txn, op->ino, op->name, &reply.value);
    if (err == -ENOENT)
        return TS_ERR_NODATA;
    if (err < 0)
        return reply_store_status(err);
    /* The value points into the map: encode before the transaction ends. */
    return REPLY_ENCODE(getxattr_rep, &reply, op->response);
}

static int handle_getxattr(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_getxattr_req message;
    struct xattr_op op;
    int status;

    if (ts_getxattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    status = check_xattr_name(message.name);
    if (status != TS_OK)
        return status;
    if (layout_xattr(message.name))
        return layout_get(service, message.ino, response);
    if (array_xattr(message.name))
        return array_get(service, message.ino, response);
    memset(&op, 0, sizeof(op));
    op.ino = message.ino;
    op.name = message.name;
    op.response = response;
    return store_read(service->store, getxattr_body, &op);
}

static int listxattr_body(struct store_txn *txn, void *arg)
{
    struct xattr_op *op = arg;
    struct inodes_record record;
    int status = load_inode(txn, op->ino, &record);
    int err;
    if (status != TS_OK)
        return status;
    err = xattrs_list(txn, op->ino, &op->names);
    if (err == -ERANGE)
        return TS_ERR_RANGE;
    return reply_store_status(err);
}

static int handle_listxattr(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_listxattr_req message;
    struct ts_listxattr_rep reply;
    struct xattr_op op;
    int status;

    if (ts_listxattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    memset(&op, 0, sizeof(op));
    op.ino = message.ino;
    ts_writer_init(&op.names, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_read(service->store, listxattr_body, &op);
    if (status != TS_OK)
        return status;
    reply.names.ptr = (const char *)service->scratch;
    reply.names.len = (uint32_t)op.names.len;
    return REPLY_ENCODE(listxattr_rep, &reply, response);
}

static int removexattr_body(struct store_txn *txn, void *arg)
{
    struct xattr_op *op = arg;
    int status = xattr_touch(txn, op->ino, op->now);
    int err;
    if (status != TS_OK)
        return status;
    err = xattrs_delete(txn, op->ino, op->name);
    if (err == -ENOENT)
        return TS_ERR_NODATA;
    return reply_store_status(err);
}

static int handle_removexattr(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_removexattr_req message;
    struct xattr_op op;
    int status;

    if (ts_removexattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    status = check_xattr_name(message.name);
    if (status == TS_OK)
        status = lease_check(service, sender_mount(request), message.ino);
    if (status != TS_OK)
        return status;
    if (layout_xattr(message.name))
        return layout_set(service, message.ino, NULL, 0, response);
    if (array_xattr(message.name))
        return array_set(service, message.ino, NULL, 0, response);
    memset(&op, 0, sizeof(op));
    op.ino = message.ino;
    op.name = message.name;
    op.now = util_now();
    return store_write(service->store, removexattr_body, &op);
}

/* ---- TILE_MAP ----------------------------------------------------------- */

/*
 * Placement of new tiles (DESIGN.md "Placement by live throughput"). The
 * file's policy (its layout, else the cluster's default) decides:
 * - roundrobin: placement_choose(PLACEMENT_ROUNDROBIN);
 * - static: earliest finish time over each node's measured write
 *   throughput and the backlog meta keeps for it (nodes.h);
 * - dynamic: the writer names the node (request->node) and the tiles go
 *   there while it is up and has room, the rest by earliest finish time; a
 *   request naming no node (a writer that does not schedule itself) is
 *   placed by earliest finish time, the closest meta can come to "the node
 *   that frees a slot first".
 * A named node is honoured for dynamic files only: a file that asked for
 * static or round-robin placement gets it whoever writes it.
 *
 * The snapshot of the nodes is built inside the transaction (from the
 * nodes table and the in-memory backlog) and carries every tile placed by
 * the request; once the transaction has committed, the handler stores the
 * grown backlogs back, so an aborted request leaves no trace.
 */

struct tile_map_op {
    struct service *service;
    const struct ts_tile_map_req *request;
    struct ts_writer records;
    int64_t now_ms;
    /* placement snapshot, built on the first missing tile, freed by the handler */
    struct placement_node *candidates;
    size_t candidate_count;
    bool have_candidates;
    struct arraylayout *array; /* an array file's layout, freed by the handler */
};

/* The registered nodes: up or not, free space, speed and backlog as of now. */
static int tile_map_candidates(struct store_txn *txn, struct tile_map_op *op)
{
    struct nodes_record *nodes;
    size_t count;
    int err = nodes_list(txn, &nodes, &count);
    if (err < 0)
        return reply_store_status(err);
    op->candidates = calloc(count ? count : 1, sizeof(*op->candidates));
    if (!op->candidates) {
        free(nodes);
        return TS_ERR_NOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        struct placement_node *candidate = &op->candidates[i];
        candidate->id = nodes[i].id;
        candidate->up = nodes_live_is_up(op->service->live, nodes[i].id, op->now_ms);
        candidate->free_bytes = nodes[i].free_bytes;
        candidate->write_bytes_per_sec = nodes[i].write_bytes_per_sec;
        candidate->backlog_bytes = nodes_live_backlog(op->service->live, nodes[i].id, op->now_ms);
    }
    op->candidate_count = count;
    op->have_candidates = true;
    free(nodes);
    return TS_OK;
}

/* Places tile `tile` of the file on a node and records it. */
static int tile_map_allocate(struct store_txn *txn, struct tile_map_op *op,
                             const struct inodes_record *record, uint64_t tile,
                             struct tiles_entry *entry)
{
    /* An array file's tiles differ in size: the placement model weighs each. */
    uint32_t tile_bytes =
        op->array ? arraylayout_tile_bytes(op->array, tile) : record->attr.tile_bytes;
    uint32_t placement =
        record->attr.placement ? record->attr.placement : op->service->default_placement;
    uint32_t node = 0;
    int status;
    int err;

    if (!op->have_candidates) {
        status = tile_map_candidates(txn, op);
        if (status != TS_OK)
            return status;
    }
    if (placement == TS_PLACEMENT_DYNAMIC && op->request->node != 0)
        err = placement_choose_named(op->request->node, op->candidates, op->candidate_count,
                                     record->attr.ino, tile, tile_bytes, 1, &node);
    else
        err = placement_choose(
            placement == TS_PLACEMENT_ROUNDROBIN ? PLACEMENT_ROUNDROBIN : PLACEMENT_STATIC,
            op->candidates, op->candidate_count, record->attr.ino, tile, tile_bytes, 1, &node);
    if (err == -ENOENT)
        return TS_ERR_INVAL; /* a node id meta never registered */
    if (err == -ENOSPC)
        return TS_ERR_NOSPC;
    if (err == -ENOMEM)
        return TS_ERR_NOMEM;
    if (err < 0)
        return TS_ERR_NONODES;
    entry->node = node;
    err = store_counter_take(txn, STORE_NEXT_VERSION, &entry->version);
    if (err == 0)
        err = tiles_put(txn, record->attr.ino, tile, entry);
    return reply_store_status(err);
}

static int tile_map_body(struct store_txn *txn, void *arg)
{
    struct tile_map_op *op = arg;
    const struct ts_tile_map_req *request = op->request;
    struct inodes_record record;
    struct readsource *source;
    uint64_t allocated = 0;
    int status;
    int err;

    op->records.len = 0;
    op->records.failed = false;
    /* A rerun (map growth) starts from a fresh snapshot. */
    free(op->candidates);
    op->candidates = NULL;
    op->have_candidates = false;
    free(op->array);
    op->array = NULL;
    status = load_inode(txn, request->ino, &record);
    if (status != TS_OK)
        return status;
    if (!S_ISREG(record.attr.mode) || record.attr.tile_bytes == 0)
        return TS_ERR_INVAL;
    if (record.attr.flags & TS_ATTR_ARRAY) {
        /* An array has its tiles, whatever the file's size so far. */
        status = array_load(txn, request->ino, &op->array);
        if (status != TS_OK)
            return status;
        if (request->first + request->count > arraylayout_tile_count(op->array))
            return TS_ERR_FBIG;
    } else if (request->first + (request->count - 1) >
               (uint64_t)INT64_MAX / record.attr.tile_bytes) {
        /* The last tile must hold bytes below the largest file size. */
        return TS_ERR_FBIG;
    }
    /* Copies and the asking machine's nodes, for each record's read source. */
    err = readsource_load(txn, op->service->live, op->now_ms, request->ino, request->first,
                          request->count, request->machine, &source);
    if (err < 0)
        return reply_store_status(err);
    for (uint32_t i = 0; i < request->count && status == TS_OK; i++) {
        uint64_t tile = request->first + i;
        struct tiles_entry entry = {0, 0, 0};
        err = tiles_get(txn, request->ino, tile, &entry);
        if (err == -ENOENT && request->allocate) {
            status = tile_map_allocate(txn, op, &record, tile, &entry);
            allocated++;
        } else if (err < 0 && err != -ENOENT) {
            status = reply_store_status(err);
        }
        readsource_record(source, tile, &entry, &op->records);
    }
    readsource_free(&source);
    if (status != TS_OK)
        return status;
    if (op->records.failed)
        return TS_ERR_INTERNAL;
    if (allocated == 0)
        return TS_OK;
    record.tiles_allocated += allocated;
    return reply_store_status(inodes_put(txn, &record));
}

static int handle_tile_map(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_tile_map_req message;
    struct tile_map_op op = {.service = service, .request = &message};
    struct ts_tile_map_rep reply;
    int status;

    if (ts_tile_map_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.count == 0 || message.count > TS_MAX_TILES_PER_MAP)
        return TS_ERR_INVAL;
    if (message.first > UINT64_MAX - message.count)
        return TS_ERR_FBIG;
    ts_writer_init(&op.records, service->scratch, SERVICE_SCRATCH_BYTES);
    op.now_ms = util_monotonic_ms();
    if (message.allocate)
        status = store_write(service->store, tile_map_body, &op);
    else
        status = store_read(service->store, tile_map_body, &op);
    /* Committed: the tiles just placed are now part of their nodes' backlog. */
    for (size_t i = 0; status == TS_OK && i < op.candidate_count; i++)
        nodes_live_set_backlog(service->live, op.candidates[i].id, op.candidates[i].backlog_bytes,
                               op.now_ms);
    free(op.candidates);
    if (status == TS_ERR_FBIG && op.array)
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_MAP: tiles %llu..%llu asked, the array has %llu",
                 (unsigned long long)message.first,
                 (unsigned long long)(message.first + message.count - 1),
                 (unsigned long long)arraylayout_tile_count(op.array));
    free(op.array);
    if (status == TS_ERR_INVAL && message.allocate && message.node != 0)
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_MAP: no datanode %u is registered (or the file is not a regular file)",
                 message.node);
    if (status != TS_OK)
        return status;
    reply.count = message.count;
    reply.tiles.ptr = (const char *)service->scratch;
    reply.tiles.len = (uint32_t)op.records.len;
    return REPLY_ENCODE(tile_map_rep, &reply, response);
}

/* ---- COMMIT ------------------------------------------------------------- */

struct commit_op {
    const struct ts_commit_req *request;
    struct timespec now;
    struct inodes_record record;
};

static int commit_body(struct store_txn *txn, void *arg)
{
    struct commit_op *op = arg;
    const struct ts_commit_req *request = op->request;
    struct ts_attr *attr = &op->record.attr;
    int status = load_inode(txn, request->ino, &op->record);
    if (status != TS_OK)
        return status;
    if (!S_ISREG(attr->mode))
        return TS_ERR_INVAL;
    if ((attr->flags & TS_ATTR_ARRAY) && request->min_size > attr->size) {
        struct arraylayout *layout;
        status = array_load(txn, request->ino, &layout);
        if (status != TS_OK)
            return status;
        uint64_t array_bytes = layout->array_bytes;
        free(layout);
        if (request->min_size > array_bytes)
            return TS_ERR_FBIG; /* the client refuses such writes; a bug if it gets here */
    }
    if (request->min_size > attr->size)
        attr->size = request->min_size;
    if (request->mtime_sec != 0) {
        attr->mtime_sec = attr->ctime_sec = request->mtime_sec;
        attr->mtime_nsec = attr->ctime_nsec = request->mtime_nsec;
    }
    return reply_store_status(inodes_put(txn, &op->record));
}

static int handle_commit(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_commit_req message;
    struct commit_op op = {.request = &message};
    struct ts_attr_rep reply;
    int status;

    if (ts_commit_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.min_size > INT64_MAX)
        return TS_ERR_FBIG;
    if (message.mtime_nsec >= HANDLERS_NSEC_PER_SEC)
        return TS_ERR_INVAL;
    op.now = util_now();
    status = store_write(service->store, commit_body, &op);
    if (status != TS_OK)
        return status;
    if (message.sync && store_sync(service->store, true) < 0)
        return TS_ERR_IO;
    inodes_attr(&op.record, service->default_placement, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

/* ---- PUNCH -------------------------------------------------------------- */

struct punch_op {
    const struct ts_punch_req *request;
    struct inodes_record record;
    struct timespec now;
};

static int punch_body(struct store_txn *txn, void *arg)
{
    struct punch_op *op = arg;
    const struct ts_punch_req *request = op->request;
    struct ts_attr *attr = &op->record.attr;
    uint64_t dropped = 0;
    int status = load_inode(txn, request->ino, &op->record);
    if (status != TS_OK)
        return status;
    if (!S_ISREG(attr->mode))
        return TS_ERR_INVAL;
    if (attr->flags & TS_ATTR_ARRAY)
        return TS_ERR_NOTSUP;
    int err = tiles_drop_range(txn, request->ino, request->first_tile, request->last_tile,
                               &dropped);
    if (err < 0)
        return reply_store_status(err);
    op->record.tiles_allocated =
        op->record.tiles_allocated > dropped ? op->record.tiles_allocated - dropped : 0;
    time_set(&attr->mtime_sec, &attr->mtime_nsec, op->now);
    time_set(&attr->ctime_sec, &attr->ctime_nsec, op->now);
    return reply_store_status(inodes_put(txn, &op->record));
}

static int handle_punch(void *ctx, const struct rpc_request *request,
                        struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_punch_req message;
    struct punch_op op = {.request = &message};
    struct ts_attr_rep reply;

    if (ts_punch_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    if (message.first_tile > message.last_tile)
        return TS_ERR_INVAL;
    op.now = util_now();
    int status = store_write(service->store, punch_body, &op);
    if (status != TS_OK)
        return status;
    inodes_attr(&op.record, service->default_placement, &reply.attr);
    return REPLY_ENCODE(attr_rep, &reply, response);
}

/* ---- NODE_LIST ---------------------------------------------------------- */

struct node_list_op {
    struct service *service;
    struct ts_writer records;
    uint32_t count;
};

static int node_list_body(struct store_txn *txn, void *arg)
{
    struct node_list_op *op = arg;
    struct nodes_record *nodes;
    size_t count;
    int64_t now_ms = util_monotonic_ms();
    int err = nodes_list(txn, &nodes, &count);
    if (err < 0)
        return reply_store_status(err);
    for (size_t i = 0; i < count; i++) {
        int64_t age = nodes_live_age_ms(op->service->live, nodes[i].id, now_ms);
        bool up = nodes_live_is_up(op->service->live, nodes[i].id, now_ms);
        ts_writer_u32(&op->records, nodes[i].id);
        ts_writer_u32(&op->records, up ? TS_NODE_UP : TS_NODE_DOWN);
        ts_writer_u64(&op->records, nodes[i].capacity);
        ts_writer_u64(&op->records, nodes[i].free_bytes);
        ts_writer_u64(&op->records, nodes[i].used_bytes);
        ts_writer_u64(&op->records, nodes[i].tiles);
        ts_writer_u64(&op->records, age < 0 ? UINT64_MAX : (uint64_t)age);
        ts_writer_u64(&op->records, nodes[i].read_bytes_per_sec);
        ts_writer_u64(&op->records, nodes[i].write_bytes_per_sec);
        ts_writer_u32(&op->records, nodes[i].queue_depth);
        ts_writer_u64(&op->records, nodes[i].throttle_bytes_per_sec);
        ts_writer_str(&op->records, ts_str_of(nodes[i].machine));
        ts_writer_str(&op->records, ts_str_of(nodes[i].address));
    }
    op->count = (uint32_t)count;
    free(nodes);
    return op->records.failed ? TS_ERR_TOOBIG : TS_OK;
}

static int handle_node_list(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    struct service *service = ctx;
    struct node_list_op op = {.service = service};
    struct ts_node_list_rep reply;
    int status;

    if (!payload_empty(request))
        return reply_bad_message(response, request->header.type);
    ts_writer_init(&op.records, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_read(service->store, node_list_body, &op);
    if (status != TS_OK)
        return status;
    reply.count = op.count;
    reply.nodes.ptr = (const char *)service->scratch;
    reply.nodes.len = (uint32_t)op.records.len;
    return REPLY_ENCODE(node_list_rep, &reply, response);
}

/* ---- HEARTBEAT ---------------------------------------------------------- */

struct heartbeat_op {
    const struct ts_heartbeat_req *request;
    struct ts_writer garbage;
    uint32_t garbage_count;
    uint32_t node_id;  /* the id the node has after this heartbeat */
    uint32_t replaced; /* a new node took the address of this one (0: none) */
    bool reclaimed;    /* a node without node.id was known by its identity */
    uint32_t stored;   /* tiles its `created` records marked TS_TILE_STORED */
    char why[256];     /* why the heartbeat was refused (fits an error reply) */
};

/*
 * Whether a heartbeat of a registered node may speak for it: the data
 * directory must be the one it registered with. A record without an
 * incarnation (written before identities) takes the first one it is given.
 */
static bool heartbeat_identity_matches(const struct nodes_record *known, uint64_t incarnation)
{
    return known->incarnation == 0 || known->incarnation == incarnation;
}

/*
 * For a node registering anew (no node.id): into *same the registered node
 * whose data directory it has (its identity), which it then is again, its
 * node.id lost; else into *previous the registered node that had its
 * address, if any. A new directory does not hold that node's tiles: only
 * the log says so, the old node stays registered (down). 0 = none.
 */
static int heartbeat_known_directory(struct store_txn *txn, const struct ts_heartbeat_req *request,
                                     uint32_t *same, uint32_t *previous)
{
    struct nodes_record *nodes = NULL;
    size_t count = 0;
    *same = 0;
    *previous = 0;
    int err = nodes_list(txn, &nodes, &count);
    if (err < 0)
        return err;
    for (size_t i = 0; i < count; i++) {
        if (request->incarnation != 0 && nodes[i].incarnation == request->incarnation)
            *same = nodes[i].id;
        if (strlen(nodes[i].address) == request->address.len &&
            memcmp(nodes[i].address, request->address.ptr, request->address.len) == 0)
            *previous = nodes[i].id;
    }
    free(nodes);
    if (*same != 0)
        *previous = 0;
    return 0;
}

/*
 * Marks the tiles of `created` records (u64 ino, u64 tile, u64 version)
 * that node holds, as primary or copy at that version, TS_TILE_STORED.
 * Records of tiles it no longer holds (moved, dropped, deleted since) are
 * skipped. *stored counts the tiles marked now.
 */
static int heartbeat_mark_stored(struct store_txn *txn, uint32_t node, struct ts_str created,
                                 uint32_t count, uint32_t *stored)
{
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, created.ptr, created.len);
    *stored = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t ino = ts_cursor_u64(&cursor);
        uint64_t tile = ts_cursor_u64(&cursor);
        uint64_t version = ts_cursor_u64(&cursor);
        uint64_t copy_version = 0;
        struct tiles_entry primary;
        int err = tiles_get(txn, ino, tile, &primary);
        if (err == -ENOENT || (err == 0 && (primary.flags & TS_TILE_STORED)))
            continue;
        if (err < 0)
            return err;
        bool holds = primary.node == node && primary.version == version;
        if (!holds) {
            err = copies_get(txn, ino, tile, node, &copy_version);
            if (err < 0 && err != -ENOENT)
                return err;
            holds = err == 0 && copy_version == version;
        }
        if (!holds)
            continue;
        primary.flags |= TS_TILE_STORED;
        err = tiles_put(txn, ino, tile, &primary);
        if (err < 0)
            return err;
        (*stored)++;
    }
    return 0;
}

/*
 * A fresh node id that no registered node has. Ids are u32 on the wire; a
 * node that adopted a huge id may push the counter past them, so it wraps
 * to 1 and skips the ids in use.
 */
static int heartbeat_new_id(struct store_txn *txn, uint32_t *id)
{
    for (uint32_t tries = 0; tries < HANDLERS_WALK_MAX; tries++) {
        struct nodes_record existing;
        uint64_t next;
        int err = store_counter_take(txn, STORE_NEXT_NODE_ID, &next);
        if (err < 0)
            return reply_store_status(err);
        if (next == 0 || next > UINT32_MAX) {
            err = store_counter_set(txn, STORE_NEXT_NODE_ID, 1);
            if (err < 0)
                return reply_store_status(err);
            continue;
        }
        err = nodes_get(txn, (uint32_t)next, &existing);
        if (err == -ENOENT) {
            *id = (uint32_t)next;
            return TS_OK;
        }
        if (err < 0)
            return reply_store_status(err);
    }
    log_error("no free datanode id found");
    return TS_ERR_INTERNAL;
}

static int heartbeat_body(struct store_txn *txn, void *arg)
{
    struct heartbeat_op *op = arg;
    const struct ts_heartbeat_req *request = op->request;
    struct nodes_record record;
    struct ts_cursor deleted;
    int status;
    int err;

    op->garbage.len = 0;
    op->garbage.failed = false;
    op->node_id = request->node_id;
    op->replaced = 0;
    op->stored = 0;
    op->why[0] = '\0';
    op->reclaimed = false;
    if (op->node_id == 0) {
        uint32_t same = 0;
        err = heartbeat_known_directory(txn, request, &same, &op->replaced);
        if (err < 0)
            return reply_store_status(err);
        op->reclaimed = same != 0;
        op->node_id = same;
        if (!op->reclaimed) {
            status = heartbeat_new_id(txn, &op->node_id);
            if (status != TS_OK)
                return status;
        }
    } else {
        err = nodes_get(txn, op->node_id, &record);
        if (err < 0 && err != -ENOENT)
            return reply_store_status(err);
        if (err == 0 && !heartbeat_identity_matches(&record, request->incarnation)) {
            snprintf(op->why, sizeof(op->why),
                     "data directory %016llx of the datanode at %.*s is not the one node %u "
                     "registered with (%016llx): wiped or replaced, node %u's tiles are not in "
                     "it; restore it, or delete its node.id to join as a new node",
                     (unsigned long long)request->incarnation, (int)request->address.len,
                     request->address.ptr, op->node_id, (unsigned long long)record.incarnation,
                     op->node_id);
            return TS_ERR_STALE;
        }
        /* An id meta may not know (its store was wiped): take it as given. */
        err = store_counter_raise(txn, STORE_NEXT_NODE_ID, (uint64_t)op->node_id + 1);
        if (err < 0)
            return reply_store_status(err);
    }
    memset(&record, 0, sizeof(record));
    record.id = op->node_id;
    record.incarnation = request->incarnation;
    ts_str_copy(request->machine, record.machine, sizeof(record.machine));
    ts_str_copy(request->address, record.address, sizeof(record.address));
    record.capacity = request->capacity;
    record.free_bytes = request->free_bytes;
    record.used_bytes = request->used_bytes;
    record.tiles = request->tiles;
    record.read_bytes_per_sec = request->read_bytes_per_sec;
    record.write_bytes_per_sec = request->write_bytes_per_sec;
    record.queue_depth = request->queue_depth;
    record.throttle_bytes_per_sec = request->throttle_bytes_per_sec;
    err = nodes_put(txn, &record);
    if (err < 0)
        return reply_store_status(err);
    ts_cursor_init(&deleted, request->deleted.ptr, request->deleted.len);
    for (uint32_t i = 0; i < request->deleted_count; i++) {
        struct garbage_record done = {.node = op->node_id};
        done.ino = ts_cursor_u64(&deleted);
        done.tile = ts_cursor_u64(&deleted);
        done.version = ts_cursor_u64(&deleted);
        err = garbage_remove(txn, &done);
        if (err < 0 && err != -ENOENT)
            return reply_store_status(err);
    }
    err = heartbeat_mark_stored(txn, op->node_id, request->created, request->created_count,
                                &op->stored);
    if (err < 0)
        return reply_store_status(err);
    err = garbage_list(txn, op->node_id, TS_MAX_GARBAGE, &op->garbage, &op->garbage_count);
    return reply_store_status(err);
}

static int handle_heartbeat(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_heartbeat_req message;
    struct heartbeat_op op = {.request = &message};
    struct ts_heartbeat_rep reply;
    int status;

    if (ts_heartbeat_req_decode(&message, request->payload, request->payload_len) != 0 ||
        (uint64_t)message.deleted_count * TS_GARBAGE_RECORD_BYTES != message.deleted.len ||
        message.created_count > TS_MAX_CREATED ||
        (uint64_t)message.created_count * TS_GARBAGE_RECORD_BYTES != message.created.len)
        return reply_bad_message(response, request->header.type);
    if (message.machine.len > NODES_MAX_TEXT || message.address.len > NODES_MAX_TEXT ||
        message.address.len == 0)
        return TS_ERR_INVAL;
    ts_writer_init(&op.garbage, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_write(service->store, heartbeat_body, &op);
    if (status == TS_ERR_STALE && op.why[0]) {
        log_error("refused a heartbeat: %s", op.why);
        snprintf(response->error_text, sizeof(response->error_text), "%s", op.why);
    }
    if (status != TS_OK)
        return status;
    if (op.reclaimed)
        log_warn("the datanode at %.*s has no node.id but the data directory of node %u "
                 "(identity %016llx): it is node %u again",
                 (int)message.address.len, message.address.ptr, op.node_id,
                 (unsigned long long)message.incarnation, op.node_id);
    else if (message.node_id == 0 && op.replaced != 0)
        log_warn("new datanode %u at %.*s, where node %u was: a new data directory (identity "
                 "%016llx), so node %u's tiles are not on it; node %u stays registered, down "
                 "until its own data directory comes back",
                 op.node_id, (int)message.address.len, message.address.ptr, op.replaced,
                 (unsigned long long)message.incarnation, op.replaced, op.replaced);
    else if (message.node_id == 0)
        log_info("new datanode %u at %.*s (data directory identity %016llx)", op.node_id,
                 (int)message.address.len, message.address.ptr,
                 (unsigned long long)message.incarnation);
    if (op.stored > 0)
        log_debug("datanode %u reported %u tiles written", op.node_id, op.stored);
    int64_t now_ms = util_monotonic_ms();
    if (nodes_live_beat(service->live, op.node_id, now_ms) < 0)
        return TS_ERR_NOMEM;
    nodes_live_load(service->live, op.node_id, message.write_bytes_per_sec, message.queue_depth,
                    now_ms);
    reply.node_id = op.node_id;
    reply.garbage_count = op.garbage_count;
    reply.garbage.ptr = (const char *)service->scratch;
    reply.garbage.len = (uint32_t)op.garbage.len;
    return REPLY_ENCODE(heartbeat_rep, &reply, response);
}

/* ---- DIR_LEASE, CREATE_MANY -------------------------------------------- */

struct lease_template_op {
    uint64_t dir;
    uint32_t default_placement;
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
    int status = load_live_dir(txn, op->dir, &parent);
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
        inodes_attr(created, op->default_placement, &op->template);
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

static int handle_dir_lease(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_dir_lease_req message;
    struct ts_dir_lease_rep reply;
    uint64_t mount = sender_mount(request);
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
                                       .default_placement = service->default_placement};
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
    case TS_LEASE_RETURN:
        leases_return(service->leases, message.dir, mount);
        break;
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

/* One CREATE_MANY record, as create_body() takes it but for `created`. */
struct create_record {
    uint64_t parent;
    uint64_t ino;
    uint32_t mode;
    uint32_t uid;
    uint32_t gid;
    struct timespec now;
    uint32_t open;
    struct ts_str name;
};

struct create_many_op {
    struct service *service;
    uint64_t sender;
    uint32_t count;
    struct create_record records[TS_MAX_CREATES];
    struct create_op scratch; /* the create being made */
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
        const struct create_record *record = &op->records[i];
        int status = op->checks[i];
        if (status == TS_OK) {
            op->scratch = (struct create_op){.service = op->service,
                                             .parent = record->parent,
                                             .name = record->name,
                                             .mode = record->mode,
                                             .uid = record->uid,
                                             .gid = record->gid,
                                             .now = record->now,
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
        struct create_record *record = &op->records[i];
        record->parent = ts_cursor_u64(&cursor);
        record->ino = ts_cursor_u64(&cursor);
        record->mode = ts_cursor_u32(&cursor);
        record->uid = ts_cursor_u32(&cursor);
        record->gid = ts_cursor_u32(&cursor);
        record->now.tv_sec = (time_t)ts_cursor_i64(&cursor);
        record->now.tv_nsec = (long)ts_cursor_u32(&cursor);
        record->open = ts_cursor_u32(&cursor);
        record->name = ts_cursor_str(&cursor);
        if (cursor.failed)
            return false;
        if ((record->mode & S_IFMT) != S_IFREG || record->now.tv_nsec >= HANDLERS_NSEC_PER_SEC ||
            record->ino == 0 || record->open > 1)
            op->checks[i] = TS_ERR_INVAL;
        else
            op->checks[i] = check_name(record->name);
        /* Its lease lapsed and another mount leased the directory since:
         * that mount's answers stand, this one loses. */
        if (op->checks[i] == TS_OK)
            op->checks[i] = lease_check(op->service, op->sender, record->parent);
    }
    return cursor.left == 0;
}

static int handle_create_many(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response)
{
    struct ts_batch_req message;
    struct create_many_op *op;
    uint64_t sender = sender_mount(request);
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

/* ---- the table ---------------------------------------------------------- */

/* TILE_UNCOPY, PROFILE_* and MOVE_* are in handlers_reloc.c, TILE_RECONCILE and
 * TILE_HOLDERS in handlers_tiles.c. */
const rpc_handler_fn handlers_table[TS_OP_MAX] = {
    [TS_OP_PING] = handle_ping,
    [TS_OP_CLUSTER_ID] = handle_cluster_id,
    [TS_OP_LOOKUP] = handle_lookup,
    [TS_OP_GETATTR] = handle_getattr,
    [TS_OP_SETATTR] = handle_setattr,
    [TS_OP_MKNOD] = handle_mknod,
    [TS_OP_MKDIR] = handle_mkdir,
    [TS_OP_UNLINK] = handle_unlink,
    [TS_OP_RMDIR] = handle_rmdir,
    [TS_OP_RENAME] = handle_rename,
    [TS_OP_LINK] = handle_link,
    [TS_OP_SYMLINK] = handle_symlink,
    [TS_OP_READLINK] = handle_readlink,
    [TS_OP_READDIR] = handle_readdir,
    [TS_OP_OPEN] = handle_open,
    [TS_OP_RELEASE] = handle_release,
    [TS_OP_STATFS] = handle_statfs,
    [TS_OP_SETXATTR] = handle_setxattr,
    [TS_OP_GETXATTR] = handle_getxattr,
    [TS_OP_LISTXATTR] = handle_listxattr,
    [TS_OP_REMOVEXATTR] = handle_removexattr,
    [TS_OP_READDIRPLUS] = handle_readdirplus,
    [TS_OP_RELEASE_MANY] = handle_release_many,
    [TS_OP_UNLINK_MANY] = handle_unlink_many,
    [TS_OP_DIR_LEASE] = handle_dir_lease,
    [TS_OP_CREATE_MANY] = handle_create_many,
    [TS_OP_SESSION_RENEW] = handlers_session_renew,
    [TS_OP_SESSION_HOLDS] = handlers_session_holds,
    [TS_OP_TILE_MAP] = handle_tile_map,
    [TS_OP_COMMIT] = handle_commit,
    [TS_OP_NODE_LIST] = handle_node_list,
    [TS_OP_HEARTBEAT] = handle_heartbeat,
    [TS_OP_TILE_RECONCILE] = handlers_tiles_reconcile,
    [TS_OP_TILE_HOLDERS] = handlers_tiles_holders,
    [TS_OP_TILE_UNCOPY] = handlers_reloc_tile_uncopy,
    [TS_OP_PUNCH] = handle_punch,
    [TS_OP_PROFILE_SET] = handlers_reloc_profile_set,
    [TS_OP_PROFILE_RECORD] = handlers_reloc_profile_record,
    [TS_OP_PROFILE_GET] = handlers_reloc_profile_get,
    [TS_OP_MOVE_BEGIN] = handlers_reloc_move_begin,
    [TS_OP_MOVE_COMMIT] = handlers_reloc_move_commit,
    [TS_OP_MOVE_ABORT] = handlers_reloc_move_abort,
    [TS_OP_MOVE_LIST] = handlers_reloc_move_list,
};
