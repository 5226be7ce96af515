/*
 * @file metaclient.h
 * The FUSE client's calls to tessera-meta: one function per request, each
 * returning a project status (TS_OK or TS_ERR_*); callers turn it into an
 * errno with status_to_errno(). Safe to call from any thread: requests go
 * through an rpc_pool, each with the meta timeout, so a meta that is down
 * costs at most that long and then TS_ERR_TIMEDOUT.
 */
#ifndef TESSERA_METACLIENT_H
#define TESSERA_METACLIENT_H

#include "proto.h"

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct metaclient;

/* Where a tile lives; node 0 means a hole (no tile stored). */
/* One TILE_MAP record (proto.h): the primary, and where to read from. */
struct tile_location {
    uint32_t node; /* primary: writes go here; 0 = a hole */
    uint64_t version;
    uint32_t copies;    /* read copies besides the primary */
    uint32_t read_node; /* this machine's best source: a local copy, else node */
    uint64_t read_version;
};

/* One directory entry as READDIR returns it. */
struct meta_dirent {
    uint64_t ino;
    uint32_t mode;
    char name[TS_MAX_NAME + 1];
};

/* One datanode as NODE_LIST returns it. */
struct meta_node {
    uint32_t id;
    uint32_t state;
    uint64_t free_bytes;
    char address[256];
};

struct metaclient *metaclient_new(const char *endpoint, int timeout_ms);
void metaclient_destroy(struct metaclient **clientp);

int metaclient_lookup(struct metaclient *client, uint64_t parent, const char *name,
                      struct ts_attr *attr);
int metaclient_getattr(struct metaclient *client, uint64_t ino, struct ts_attr *attr);
/* reply->attr and the cut tile fields are filled on success. */
int metaclient_setattr(struct metaclient *client, const struct ts_setattr_req *request,
                       struct ts_setattr_rep *reply);
/* With open, the new file is also opened (one RELEASE owed, as for OPEN). */
int metaclient_mknod(struct metaclient *client, uint64_t parent, const char *name,
                     uint32_t mode, uint64_t rdev, uint32_t uid, uint32_t gid, int open,
                     struct ts_attr *attr);
int metaclient_mkdir(struct metaclient *client, uint64_t parent, const char *name,
                     uint32_t mode, uint32_t uid, uint32_t gid, struct ts_attr *attr);
int metaclient_unlink(struct metaclient *client, uint64_t parent, const char *name);
int metaclient_rmdir(struct metaclient *client, uint64_t parent, const char *name);
int metaclient_rename(struct metaclient *client, uint64_t parent, const char *name,
                      uint64_t new_parent, const char *new_name, uint32_t flags);
int metaclient_link(struct metaclient *client, uint64_t ino, uint64_t new_parent,
                    const char *new_name, struct ts_attr *attr);
int metaclient_symlink(struct metaclient *client, uint64_t parent, const char *name,
                       const char *target, uint32_t uid, uint32_t gid, struct ts_attr *attr);
/* Copies the target, NUL-terminated, into target[cap]. */
int metaclient_readlink(struct metaclient *client, uint64_t ino, char *target, size_t cap);
/*
 * Up to `max` entries of directory ino after the name `after` ("" = start)
 * into entries; *count gets how many, *done 1 when the listing is complete.
 */
int metaclient_readdir(struct metaclient *client, uint64_t ino, const char *after,
                       struct meta_dirent *entries, uint32_t max, uint32_t *count,
                       uint32_t *done);
int metaclient_open(struct metaclient *client, uint64_t ino, uint32_t flags,
                    struct ts_attr *attr);
int metaclient_release(struct metaclient *client, uint64_t ino);
int metaclient_statfs(struct metaclient *client, struct ts_statfs_rep *statfs);
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
 */
int metaclient_tile_map(struct metaclient *client, uint64_t ino, uint64_t first, uint32_t count,
                        int allocate, uint32_t node, struct tile_location *locations);
/* Written data: size = max(size, min_size), mtime if given; sync = durable. */
int metaclient_commit(struct metaclient *client, uint64_t ino, uint64_t min_size,
                      const struct timespec *mtime, int sync, struct ts_attr *attr);
/* Every datanode; *nodes is malloc'd (caller frees). */
int metaclient_node_list(struct metaclient *client, struct meta_node **nodes, size_t *count);

#endif
