/*
 * @file handlers.c
 * The table that finds meta's handlers (handlers.h), the two questions
 * about the service itself (PING, CLUSTER_ID), and the helpers the
 * handler files share (handlers_i.h). The handlers live one file per area:
 * handlers_namespace.c, handlers_dirs.c, handlers_files.c,
 * handlers_xattrs.c, handlers_nodes.c, handlers_session.c,
 * handlers_profiles.c, handlers_moves.c and handlers_tiles.c.
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
 */
#include "handlers.h"

#include "dirents.h"
#include "handlers_dirs.h"
#include "handlers_files.h"
#include "handlers_i.h"
#include "handlers_applylock.h"
#include "handlers_metrics.h"
#include "handlers_moves.h"
#include "handlers_namespace.h"
#include "handlers_nodes.h"
#include "handlers_profiles.h"
#include "handlers_repair.h"
#include "handlers_session.h"
#include "handlers_tiles.h"
#include "handlers_xattrs.h"
#include "inodes.h"
#include "leases.h"
#include "log.h"
#include "reply.h"
#include "service.h"
#include "status.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

/* ---- helpers (handlers_i.h) -------------------------------------------- */

void handlers_time_set(int64_t *sec, uint32_t *nsec, struct timespec when)
{
    *sec = when.tv_sec;
    *nsec = (uint32_t)when.tv_nsec;
}

uint64_t handlers_sender_mount(const struct rpc_request *request)
{
    return leases_mount_of(request->peer, request->peer_len);
}

int handlers_lease_check(struct service *service, uint64_t sender, uint64_t dir)
{
    return leases_refuse(service->leases, dir, sender, util_monotonic_ms()) ? TS_ERR_LEASED : TS_OK;
}

int handlers_load_inode(struct store_txn *txn, uint64_t ino, struct inodes_record *record)
{
    int err = inodes_get(txn, ino, record);
    if (err == -ENOENT)
        return TS_ERR_NOENT;
    return reply_store_status(err);
}

int handlers_load_dir(struct store_txn *txn, uint64_t ino, struct inodes_record *record)
{
    int status = handlers_load_inode(txn, ino, record);
    if (status == TS_OK && !S_ISDIR(record->attr.mode))
        return TS_ERR_NOTDIR;
    return status;
}

int handlers_load_live_dir(struct store_txn *txn, uint64_t ino, struct inodes_record *record)
{
    int status = handlers_load_dir(txn, ino, record);
    if (status == TS_OK && record->attr.nlink == 0)
        return TS_ERR_NOENT;
    return status;
}

int handlers_load_child(struct store_txn *txn, const struct dirents_entry *entry,
                        struct inodes_record *record)
{
    int status = handlers_load_inode(txn, entry->ino, record);
    if (status == TS_ERR_NOENT) {
        log_error("directory entry names missing inode %llu", (unsigned long long)entry->ino);
        return TS_ERR_INTERNAL;
    }
    return status;
}

bool handlers_payload_empty(const struct rpc_request *request)
{
    return request->payload_len == 0;
}

int handlers_getattr_body(struct store_txn *txn, void *arg)
{
    struct handlers_inode_op *op = arg;
    return handlers_load_inode(txn, op->ino, &op->found);
}

int handlers_refused(int status, const char *why, struct rpc_response *response)
{
    if (status != TS_OK && why[0])
        snprintf(response->error_text, sizeof(response->error_text), "%s", why);
    return status;
}

int handlers_load_inode_why(struct store_txn *txn, uint64_t ino, struct inodes_record *record,
                            char *why)
{
    int err = inodes_get(txn, ino, record);
    if (err == -ENOENT) {
        snprintf(why, HANDLERS_WHY_MAX, "no inode %llu", (unsigned long long)ino);
        return TS_ERR_NOENT;
    }
    return reply_store_status(err);
}

int handlers_load_file_why(struct store_txn *txn, uint64_t ino, struct inodes_record *record,
                           char *why)
{
    int status = handlers_load_inode_why(txn, ino, record, why);
    if (status == TS_OK && !S_ISREG(record->attr.mode)) {
        snprintf(why, HANDLERS_WHY_MAX, "inode %llu is not a regular file: it has no tiles",
                 (unsigned long long)ino);
        return TS_ERR_INVAL;
    }
    return status;
}

/* ---- PING -------------------------------------------------------------- */

static int handle_ping(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    struct ts_ping_rep reply = {.role = ts_str_of("meta"),
                                .uptime_ms = (uint64_t)util_process_age_ms()};
    (void)ctx;
    if (!handlers_payload_empty(request))
        return reply_bad_message(response, request->header.type);
    return REPLY_ENCODE(ping_rep, &reply, response);
}

/* ---- CLUSTER_ID --------------------------------------------------------- */

static int handle_cluster_id(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_cluster_id_rep reply = {.cluster_id = ts_str_of(service->cluster_id)};
    if (!handlers_payload_empty(request))
        return reply_bad_message(response, request->header.type);
    return REPLY_ENCODE(cluster_id_rep, &reply, response);
}

/* ---- the table ---------------------------------------------------------- */

/* Each handler's file is named after its area; the file's header lists them. */
const rpc_handler_fn handlers_table[TS_OP_MAX] = {
    [TS_OP_PING] = handle_ping,
    [TS_OP_CLUSTER_ID] = handle_cluster_id,
    [TS_OP_LOOKUP] = handlers_namespace_lookup,
    [TS_OP_GETATTR] = handlers_namespace_getattr,
    [TS_OP_SETATTR] = handlers_files_setattr,
    [TS_OP_MKNOD] = handlers_namespace_mknod,
    [TS_OP_MKDIR] = handlers_namespace_mkdir,
    [TS_OP_UNLINK] = handlers_namespace_unlink,
    [TS_OP_RMDIR] = handlers_namespace_rmdir,
    [TS_OP_RENAME] = handlers_namespace_rename,
    [TS_OP_LINK] = handlers_namespace_link,
    [TS_OP_SYMLINK] = handlers_namespace_symlink,
    [TS_OP_READLINK] = handlers_namespace_readlink,
    [TS_OP_READDIR] = handlers_dirs_readdir,
    [TS_OP_OPEN] = handlers_files_open,
    [TS_OP_RELEASE] = handlers_files_release,
    [TS_OP_STATFS] = handlers_nodes_statfs,
    [TS_OP_SETXATTR] = handlers_xattrs_set,
    [TS_OP_GETXATTR] = handlers_xattrs_get,
    [TS_OP_LISTXATTR] = handlers_xattrs_list,
    [TS_OP_REMOVEXATTR] = handlers_xattrs_remove,
    [TS_OP_READDIRPLUS] = handlers_dirs_readdirplus,
    [TS_OP_RELEASE_MANY] = handlers_files_release_many,
    [TS_OP_UNLINK_MANY] = handlers_namespace_unlink_many,
    [TS_OP_DIR_LEASE] = handlers_dirs_lease,
    [TS_OP_CREATE_MANY] = handlers_namespace_create_many,
    [TS_OP_SESSION_RENEW] = handlers_session_renew,
    [TS_OP_SESSION_HOLDS] = handlers_session_holds,
    [TS_OP_TILE_MAP] = handlers_files_tile_map,
    [TS_OP_COMMIT] = handlers_files_commit,
    [TS_OP_NODE_LIST] = handlers_nodes_list,
    [TS_OP_HEARTBEAT] = handlers_nodes_heartbeat,
    [TS_OP_TILE_RECONCILE] = handlers_tiles_reconcile,
    [TS_OP_TILE_HOLDERS] = handlers_tiles_holders,
    [TS_OP_NODE_ADMIN] = handlers_repair_node_admin,
    [TS_OP_REPAIR_SCAN] = handlers_repair_scan,
    [TS_OP_HEALTH] = handlers_repair_health,
    [TS_OP_METRICS_LIST] = handlers_metrics_list,
    [TS_OP_REPLICA_DROP] = handlers_moves_replica_drop,
    [TS_OP_PUNCH] = handlers_files_punch,
    [TS_OP_PROFILE_SET] = handlers_profiles_set,
    [TS_OP_PROFILE_RECORD] = handlers_profiles_record,
    [TS_OP_PROFILE_GET] = handlers_profiles_get,
    [TS_OP_MOVE_BEGIN] = handlers_moves_begin,
    [TS_OP_MOVE_COMMIT] = handlers_moves_commit,
    [TS_OP_MOVE_ABORT] = handlers_moves_abort,
    [TS_OP_MOVE_LIST] = handlers_moves_list,
    [TS_OP_APPLY_LOCK] = handlers_applylock,
};
