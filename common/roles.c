/*
 * @file roles.c
 * See roles.h. The table follows who sends what today (the opcode comments
 * in proto.h): mounts do namespace and tile I/O; datanodes heartbeat,
 * reconcile and read a peer's tile for a pull; meta's own key does what
 * its repairer sends (its journal of moves, pulls and fences on
 * datanodes); admin keys (the tool) read the cluster's state and do
 * everything that steers it. Requests that carry a uid/gid (SETATTR,
 * MKNOD, MKDIR, SYMLINK, CREATE_MANY) and every other namespace change
 * come from mounts only, so meta takes an owner only from a mount key.
 * README.md shows the same table; keep them together.
 */
#include "roles.h"

#include "proto.h"

#include <stdio.h>
#include <string.h>

#define M ROLES_META
#define D ROLES_DATANODE
#define U ROLES_MOUNT
#define A ROLES_ADMIN

static const unsigned roles_table[TS_OP_MAX] = {
    [TS_OP_PING] = M | D | U | A,
    [TS_OP_CLUSTER_ID] = M | D | U | A,

    /* meta: reading the namespace */
    [TS_OP_LOOKUP] = U | A,
    [TS_OP_GETATTR] = U | A,
    [TS_OP_READLINK] = U | A,
    [TS_OP_READDIR] = U | A,
    [TS_OP_READDIRPLUS] = U | A,
    [TS_OP_GETXATTR] = U | A,
    [TS_OP_LISTXATTR] = U | A,
    [TS_OP_STATFS] = U | A,
    /* meta: changing it, the mount's sessions and leases */
    [TS_OP_SETATTR] = U,
    [TS_OP_MKNOD] = U,
    [TS_OP_MKDIR] = U,
    [TS_OP_UNLINK] = U,
    [TS_OP_RMDIR] = U,
    [TS_OP_RENAME] = U,
    [TS_OP_LINK] = U,
    [TS_OP_SYMLINK] = U,
    [TS_OP_SETXATTR] = U,
    [TS_OP_REMOVEXATTR] = U,
    [TS_OP_UNLINK_MANY] = U,
    [TS_OP_CREATE_MANY] = U,
    [TS_OP_OPEN] = U,
    [TS_OP_RELEASE] = U,
    [TS_OP_RELEASE_MANY] = U,
    [TS_OP_DIR_LEASE] = U,
    [TS_OP_SESSION_RENEW] = U,
    [TS_OP_SESSION_HOLDS] = U,
    /* meta: placement */
    [TS_OP_TILE_MAP] = U | A,
    [TS_OP_COMMIT] = U,
    [TS_OP_PUNCH] = U,
    [TS_OP_NODE_LIST] = M | D | U | A, /* a datanode checks a pull's source in it */
    [TS_OP_REPLICA_DROP] = U | A,      /* a mount's failed write; tessera fsck */
    /* meta: profiles (the mount records, the tool switches and reads) */
    [TS_OP_PROFILE_SET] = A,
    [TS_OP_PROFILE_RECORD] = U,
    [TS_OP_PROFILE_GET] = A,
    /* meta: the relocation journal (tessera rebalance, meta's repairer) */
    [TS_OP_MOVE_BEGIN] = M | A,
    [TS_OP_MOVE_COMMIT] = M | A,
    [TS_OP_MOVE_ABORT] = M | A,
    [TS_OP_MOVE_LIST] = M | A,
    /* the tool's apply lease; meta's repairer does not take it (applylock.h) */
    [TS_OP_APPLY_LOCK] = A,
    [TS_OP_REPAIR_SCAN] = M,
    /* meta: datanodes */
    [TS_OP_HEARTBEAT] = D,
    [TS_OP_TILE_RECONCILE] = D,
    /* meta: the operator */
    [TS_OP_TILE_HOLDERS] = A,
    [TS_OP_NODE_ADMIN] = A,
    [TS_OP_HEALTH] = A,
    [TS_OP_METRICS_LIST] = A,

    /* datanode: tile I/O (a pulling datanode reads its source) */
    [TS_OP_TILE_WRITE] = U | D,
    [TS_OP_TILE_READ] = U | D,
    [TS_OP_TILE_SYNC] = U,
    [TS_OP_TILE_TRUNCATE] = U,
    [TS_OP_TILE_STREAM] = U,
    /* datanode: relocation, ordered by meta's repairer or tessera rebalance */
    [TS_OP_TILE_PULL] = M | A,
    [TS_OP_TILE_FENCE] = M | A,
    /* datanode: the operator */
    [TS_OP_NODE_THROTTLE] = A,
    [TS_OP_NODE_STATS] = A,
    [TS_OP_NODE_SCRUB] = A,
    [TS_OP_TILE_CHECK] = A,
};

#undef M
#undef D
#undef U
#undef A

static const struct {
    const char *name;
    unsigned bit;
} roles_names[] = {
    {"meta", ROLES_META},
    {"datanode", ROLES_DATANODE},
    {"mount", ROLES_MOUNT},
    {"admin", ROLES_ADMIN},
};

unsigned roles_allowed(uint16_t op)
{
    return op < TS_OP_MAX ? roles_table[op] : 0;
}

unsigned roles_of_user(const char *key_user)
{
    const char *colon = key_user ? strchr(key_user, ':') : NULL;
    if (!colon)
        return 0;
    size_t len = (size_t)(colon - key_user);
    for (size_t i = 0; i < sizeof(roles_names) / sizeof(roles_names[0]); i++)
        if (strlen(roles_names[i].name) == len && memcmp(roles_names[i].name, key_user, len) == 0)
            return roles_names[i].bit;
    return 0;
}

bool roles_permit(uint16_t op, const char *key_user)
{
    if (!key_user || key_user[0] == '\0')
        return true;
    return (roles_allowed(op) & roles_of_user(key_user)) != 0;
}

void roles_describe(unsigned roles, char *out, size_t cap)
{
    size_t len = 0;
    if (cap == 0)
        return;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof(roles_names) / sizeof(roles_names[0]); i++) {
        if (!(roles & roles_names[i].bit))
            continue;
        int n = snprintf(out + len, cap - len, "%s%s", len ? ", " : "", roles_names[i].name);
        if (n < 0 || (size_t)n >= cap - len)
            return;
        len += (size_t)n;
    }
    if (len == 0)
        snprintf(out, cap, "none");
}
