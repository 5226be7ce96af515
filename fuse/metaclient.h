/*
 * @file metaclient.h
 * The FUSE client's calls to tessera-meta: one function per request, each
 * returning a project status (TS_OK or TS_ERR_*); callers turn it into an
 * errno with status_to_errno(). Safe to call from any thread: requests go
 * through an rpc_pool, each with the meta timeout, so a meta that is down
 * costs at most that long and then TS_ERR_TIMEDOUT. A request refused
 * because another mount holds a directory's lease (TS_ERR_LEASED) is sent
 * again, within that same timeout, until the holder gives the lease back.
 */
#ifndef TESSERA_METACLIENT_H
#define TESSERA_METACLIENT_H

#include "nsqueue.h"
#include "proto.h"
#include "tiletoken.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct metaclient;

/* Where a tile lives; node 0 means a hole (no tile stored). */
/* One TILE_MAP record (proto.h): the primary, and where to read from. */
/* One holder of a tile (proto.h TS_REC_REPLICA). */
struct tile_holder {
    uint32_t node;
    uint32_t state; /* enum ts_replica_state: TS_REPLICA_DOWN if meta counts it down */
    uint64_t version;
    /* Meta's tile token for writing this holder's file (common/tiletoken.h),
     * sent with every
     * TILE_WRITE and TILE_TRUNCATE. An expired one is answered STALE, and
     * the write asks meta again (tilelocation_relocate()). token_expiry 0:
     * no token (meta gave none: tokens off). */
    uint64_t token_expiry;
    uint8_t token[TILETOKEN_MAC_BYTES];
};

struct tile_location {
    uint32_t node; /* the primary; 0 = a hole */
    uint64_t version;
    /* Every holder (the primary too), in the order this machine reads them
     * (meta's): writes go to all of them, reads to the first that answers. */
    uint32_t holder_count;
    struct tile_holder holders[TS_MAX_HOLDERS];
    uint32_t read_node; /* where this machine reads first (a failover moves it on) */
    uint64_t read_version;
    /* TS_TILE_STORED: a holder reported the tile's file, so a holder without
     * it lost it (an error); else a missing file is a hole (zeros). */
    uint32_t flags;
};

/* One directory entry as READDIR returns it. */
struct meta_dirent {
    uint64_t ino;
    uint32_t mode;
    char name[TS_MAX_NAME + 1];
};

/* One directory entry with its attributes, as READDIRPLUS returns it. */
struct meta_direntplus {
    struct ts_attr attr;
    char name[TS_MAX_NAME + 1];
};

/* One datanode as NODE_LIST returns it. */
struct meta_node {
    uint32_t id;
    uint32_t state;
    uint64_t free_bytes;
    char machine[TS_MAX_NAME + 1];
    char address[256];
};

/*
 * A client of the meta at endpoint. machine: this mount's machine name,
 * sent with every TILE_MAP (meta picks the read source on it) and
 * PROFILE_RECORD; at most TS_MAX_NAME bytes ("" = none). NULL on a bad
 * endpoint or no memory.
 */
struct metaclient *metaclient_new(const char *endpoint, int timeout_ms, const char *machine);
void metaclient_destroy(struct metaclient **clientp);
/* The machine name given to metaclient_new(). */
const char *metaclient_machine(const struct metaclient *client);
/*
 * The mount's Prometheus endpoint (HOST:PORT, at most 255 bytes; longer is
 * -ENAMETOOLONG) that its session renewals name, so that meta lists it for
 * `tessera stats` (METRICS_LIST). Call before metaclient_keep_session().
 */
int metaclient_set_metrics(struct metaclient *client, const char *address);

/*
 * Directories whose attributes a namespace change also fetches, pipelined
 * behind the change in the same round trip: meta gives them as they are
 * right after it. The kernel asks for a changed directory's attributes
 * before it uses the directory again (its mode, for default_permissions),
 * and the mount answers that from these. NULL or count 0: none.
 */
#define METACLIENT_MAX_DIRS 2
struct metaclient_dirs {
    uint32_t count; /* 0..METACLIENT_MAX_DIRS, set by the caller with ino[] */
    uint64_t ino[METACLIENT_MAX_DIRS];
    struct ts_attr attr[METACLIENT_MAX_DIRS];
    int status[METACLIENT_MAX_DIRS]; /* TS_OK where attr[i] was filled */
};

int metaclient_lookup(struct metaclient *client, uint64_t parent, const char *name,
                      struct ts_attr *attr);
int metaclient_getattr(struct metaclient *client, uint64_t ino, struct ts_attr *attr);
/* reply->attr and the cut tile fields are filled on success. */
int metaclient_setattr(struct metaclient *client, const struct ts_setattr_req *request,
                       struct ts_setattr_rep *reply);
/* With open, the new file is also opened (one RELEASE owed, as for OPEN). */
/* The namespace changes; dirs (may be NULL): see struct metaclient_dirs. */
int metaclient_mknod(struct metaclient *client, uint64_t parent, const char *name,
                     uint32_t mode, uint64_t rdev, uint32_t uid, uint32_t gid, int open,
                     struct ts_attr *attr, struct metaclient_dirs *dirs);
int metaclient_mkdir(struct metaclient *client, uint64_t parent, const char *name,
                     uint32_t mode, uint32_t uid, uint32_t gid, struct ts_attr *attr,
                     struct metaclient_dirs *dirs);
int metaclient_unlink(struct metaclient *client, uint64_t parent, const char *name,
                      struct metaclient_dirs *dirs);
int metaclient_rmdir(struct metaclient *client, uint64_t parent, const char *name,
                     struct metaclient_dirs *dirs);
int metaclient_rename(struct metaclient *client, uint64_t parent, const char *name,
                      uint64_t new_parent, const char *new_name, uint32_t flags,
                      struct metaclient_dirs *dirs);
int metaclient_link(struct metaclient *client, uint64_t ino, uint64_t new_parent,
                    const char *new_name, struct ts_attr *attr, struct metaclient_dirs *dirs);
int metaclient_symlink(struct metaclient *client, uint64_t parent, const char *name,
                       const char *target, uint32_t uid, uint32_t gid, struct ts_attr *attr,
                       struct metaclient_dirs *dirs);
/* Copies the target, NUL-terminated, into target[cap]. */
int metaclient_readlink(struct metaclient *client, uint64_t ino, char *target, size_t cap);
/*
 * Up to `max` entries of directory ino after the name `after` ("" = start)
 * into entries; *count gets how many, *done 1 when the listing is complete.
 */
int metaclient_readdir(struct metaclient *client, uint64_t ino, const char *after,
                       struct meta_dirent *entries, uint32_t max, uint32_t *count,
                       uint32_t *done);
/*
 * As metaclient_readdir(), with attributes: the entries from the name
 * `from` on (itself included with inclusive, else strictly after it).
 */
int metaclient_readdirplus(struct metaclient *client, uint64_t ino, const char *from,
                           int inclusive, struct meta_direntplus *entries, uint32_t max,
                           uint32_t *count, uint32_t *done);
/*
 * Opens ino in meta: one RELEASE owed when it returns TS_OK. Meta holds the
 * open (an unlinked file stays) only while this client's session lives:
 * start it with metaclient_keep_session(). truncate != 0 (TS_SET_* bits
 * within TS_OPEN_TRUNCATE_BITS, with TS_SET_SIZE) truncates the file to 0
 * first, in the same round trip (open(O_TRUNC)). *attr: the attributes
 * after it. *array_spec: an array file's layout text, malloc'd (caller
 * frees), NULL for other files and on failure.
 */
int metaclient_open(struct metaclient *client, uint64_t ino, uint32_t flags, uint32_t truncate,
                    struct ts_attr *attr, char **array_spec);
/*
 * After metaclient_defer_releases() the release is queued and sent in the
 * background (TS_OK at once); metaclient_destroy() sends what is left.
 */
int metaclient_release(struct metaclient *client, uint64_t ino);
/* count (1..TS_MAX_RELEASES) releases in one request. */
int metaclient_release_many(struct metaclient *client, const uint64_t *inos, uint32_t count);
/*
 * From now on releases go through a background queue (relqueue.h), sent
 * at most delay_ms after they were made. TS_OK or TS_ERR_NOMEM.
 */
int metaclient_defer_releases(struct metaclient *client, int delay_ms);
/*
 * From now on metaclient_unlink_later() queues unlinks (nsqueue.h), at most
 * max_pending outstanding. A later request about a queued name waits for
 * its unlink; a listing or getattr of a directory with queued unlinks, or a
 * getattr of an inode being unlinked, waits for them; rmdir waits for all.
 * TS_OK or TS_ERR_NOMEM.
 */
int metaclient_defer_unlinks(struct metaclient *client, uint32_t max_pending);
/*
 * Queues the unlink of name (inode ino) in parent (TS_OK: meta will be told
 * in the background), or TS_ERR_INVAL when unlinks are not deferred: then
 * the caller uses metaclient_unlink().
 */
int metaclient_unlink_later(struct metaclient *client, uint64_t parent, const char *name,
                            uint64_t ino);
/*
 * Queues a create answered under a directory lease (dirlease.h), sent in
 * order with the unlinks: TS_OK, or TS_ERR_INVAL when changes are not
 * queued (metaclient_defer_unlinks() was not called).
 */
int metaclient_create_later(struct metaclient *client, const struct nsqueue_item *item);
/* Whether changes are queued: metaclient_defer_unlinks() was called. */
bool metaclient_queues_changes(const struct metaclient *client);
/*
 * DIR_LEASE (proto.h): action is enum ts_lease_action; want_inodes for
 * TS_LEASE_INODES. Never waits for queued creates.
 */
int metaclient_dir_lease(struct metaclient *client, uint64_t dir, uint32_t action,
                         uint32_t want_inodes, struct ts_dir_lease_rep *reply);
/* Returns once the changes queued in dir are done (fsync of a directory). */
void metaclient_sync_dir(struct metaclient *client, uint64_t dir);
int metaclient_statfs(struct metaclient *client, struct ts_statfs_rep *statfs);
/* CLUSTER_ID: meta's cluster id into out (cap bytes with the NUL); TS_ERR_BADMSG if longer. */
int metaclient_cluster_id(struct metaclient *client, char *out, size_t cap);
int metaclient_setxattr(struct metaclient *client, uint64_t ino, const char *name,
                        const void *value, size_t size, uint32_t flags);
/*
 * The attribute's value: *value is malloc'd (caller frees), *size its length.
 */
int metaclient_getxattr(struct metaclient *client, uint64_t ino, const char *name,
                        void **value, size_t *size);
/* All names, each NUL-terminated, malloc'd into *names. */
int metaclient_listxattr(struct metaclient *client, uint64_t ino, char **names, size_t *size);
int metaclient_removexattr(struct metaclient *client, uint64_t ino, const char *name);
/*
 * Locations of tiles [first, first + count); with allocate, missing tiles
 * are placed and committed by meta first: on datanode `node` if non-zero,
 * else by the file's placement policy. count <= TS_MAX_TILES_PER_MAP.
 * The read source in each record is chosen for this client's machine.
 */
int metaclient_tile_map(struct metaclient *client, uint64_t ino, uint64_t first, uint32_t count,
                        int allocate, uint32_t node, struct tile_location *locations);
/* metaclient_tile_map(), and *size: the file's size as meta answered. */
int metaclient_tile_map_sized(struct metaclient *client, uint64_t ino, uint64_t first,
                              uint32_t count, int allocate, uint32_t node,
                              struct tile_location *locations, uint64_t *size);
/*
 * REPLICA_DROP: holder (node, version) of the tile failed a write, sync or
 * cut that another holder took; meta drops it (if it still holds that
 * version) and *location becomes the tile's location now. TS_ERR_BUSY:
 * it is the tile's last holder (kept).
 */
int metaclient_replica_drop(struct metaclient *client, uint64_t ino, uint64_t tile, uint32_t node,
                            uint64_t version, struct tile_location *location);
/*
 * Adds `count` PROFILE_RECORD records (ts_profile_count_rec_bytes each, as
 * proto.h lays them out) to meta's counts, as this client's machine.
 * count <= TS_MAX_PROFILE_RECORDS. *kept: the records meta kept (those of
 * inodes still profiled).
 */
int metaclient_profile_record(struct metaclient *client, const uint8_t *records, uint32_t count,
                              uint32_t *kept);
/* Drops tiles first_tile..last_tile of a linear file (PUNCH in proto.h). */
int metaclient_punch(struct metaclient *client, uint64_t ino, uint64_t first_tile,
                     uint64_t last_tile, struct ts_attr *attr);
/* Written data: size = max(size, min_size), mtime if given; sync = durable. */
int metaclient_commit(struct metaclient *client, uint64_t ino, uint64_t min_size,
                      const struct timespec *mtime, int sync, struct ts_attr *attr);
/*
 * The mount's session with meta (SESSION_RENEW in proto.h): a thread
 * renews it every quarter of meta's lease, and when meta does not know it
 * (meta restarted, or this mount was cut off longer than the lease)
 * announces every open this client holds, so meta keeps unlinked files
 * open here alive. metaclient_destroy() stops it and ends the session.
 * TS_OK or TS_ERR_NOMEM.
 */
int metaclient_keep_session(struct metaclient *client);
/*
 * Called, from the session's thread, for each inode this mount held open
 * that meta deleted while the session was expired: its I/O must fail.
 * fn NULL: none. Returns once no call of the previous fn runs.
 */
typedef void (*metaclient_lost_fn)(void *ctx, uint64_t ino);
void metaclient_on_lost(struct metaclient *client, metaclient_lost_fn fn, void *ctx);

/* Every datanode; *nodes is malloc'd (caller frees). */
int metaclient_node_list(struct metaclient *client, struct meta_node **nodes, size_t *count);

#endif
