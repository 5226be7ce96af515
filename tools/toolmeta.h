/*
 * @file toolmeta.h
 * The few questions the tessera command asks tessera-meta: PING (is it
 * serving?), NODE_LIST (the datanodes and their state), STATFS (the
 * filesystem's totals), GETATTR and TILE_MAP (a file's layout and where
 * its tiles are, for `tessera layout`), PROFILE_SET/GET (`tessera profile`)
 * and the relocation journal, MOVE_BEGIN/COMMIT/ABORT/LIST, and the apply
 * lease, APPLY_LOCK (`tessera rebalance`). Each call has a deadline and returns a project
 * status (status.h): TS_OK, TS_ERR_TIMEDOUT when meta did not answer in
 * time, the status meta answered with, or TS_ERR_BADMSG for a reply that
 * does not decode.
 */
#ifndef TESSERA_TOOLS_TOOLMETA_H
#define TESSERA_TOOLS_TOOLMETA_H

#include "proto.h"
#include "relocate.h"
#include "rpc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One datanode as NODE_LIST describes it (proto.h, NODE_LIST record). */
struct toolmeta_node {
    uint32_t id;
    uint32_t state; /* enum ts_node_state */
    uint64_t capacity;
    uint64_t free_bytes;
    uint64_t used_bytes;
    uint64_t tiles;
    uint64_t heartbeat_age_ms;
    uint64_t read_bytes_per_sec;     /* measured by the node; 0 = not yet */
    uint64_t write_bytes_per_sec;    /* measured by the node; 0 = not yet */
    uint32_t queue_depth;            /* tile requests in service or waiting */
    uint64_t throttle_bytes_per_sec; /* 0 = none */
    char machine[256];               /* longer names are cut */
    char address[256];
    uint32_t admin; /* enum ts_node_admin: drained or removed by the operator */
    /* Integrity (proto.h TS_INTEGRITY_FIELDS): corrupt files meta was told of, the scrub. */
    uint64_t corrupt_files;
    uint32_t scrub_running;
    uint64_t scrub_files;
    uint64_t scrub_bytes;
    uint64_t scrub_corrupt;
    uint64_t scrub_rate;
    uint64_t scrub_passes;
    /* The disk its data directory is on (proto.h TS_DISK_FIELDS; id 0: unknown). */
    uint64_t disk_id;
    uint64_t disk_bytes;
    uint64_t disk_free;
};

/* PING; TS_OK when meta answered. */
int toolmeta_ping(struct rpc_client *client, int timeout_ms);

/* CLUSTER_ID: the id of meta's cluster into out (cap bytes with the NUL). */
int toolmeta_cluster_id(struct rpc_client *client, int timeout_ms, char *out, size_t cap);

/*
 * NODE_LIST. On TS_OK, *nodes is a malloc'd array of *count entries (NULL
 * when count is 0) that the caller frees. On failure *nodes is NULL, and
 * error_text (if not NULL) holds meta's error text, "" if none.
 */
int toolmeta_node_list(struct rpc_client *client, int timeout_ms, struct toolmeta_node **nodes,
                         size_t *count, char *error_text, size_t error_cap);

/* STATFS; fills *totals on TS_OK. */
int toolmeta_statfs(struct rpc_client *client, int timeout_ms, struct ts_statfs_rep *totals);

/* GETATTR of ino; fills *attr on TS_OK. */
int toolmeta_getattr(struct rpc_client *client, int timeout_ms, uint64_t ino,
                       struct ts_attr *attr);

/*
 * TILE_MAP without allocating: where tiles [first, first + count) of ino
 * are (count <= TS_MAX_TILES_PER_MAP); nodes[i] = 0 for a hole; flags[i]
 * the records' TS_TILE_* flags (flags may be NULL). On failure error_text
 * (if not NULL) holds meta's error text, "" if none.
 */
int toolmeta_tile_map(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t first,
                        uint32_t count, uint32_t *nodes, uint64_t *versions, uint32_t *flags,
                        char *error_text, size_t error_cap);

/*
 * TILE_MAP without allocating, as seen from `machine` ("" = none), with
 * the whole records (proto.h, TS_REC_TILE_MAP): tiles[count]
 * (count <= TS_MAX_TILES_PER_MAP).
 */
int toolmeta_tile_records(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t first,
                          uint32_t count, const char *machine, struct ts_tile_map_rec *tiles,
                          char *error_text, size_t error_cap);

/* One holder of a tile (TILE_HOLDERS, proto.h). */
struct toolmeta_holder {
    uint64_t tile;
    uint32_t node;
    uint64_t version; /* the holder's own tile file */
    uint32_t kind;    /* enum ts_holder_kind: the primary, or another replica */
};

/*
 * TILE_HOLDERS: every holder of tiles [first, first + count) of ino
 * (count <= TS_MAX_TILES_PER_MAP), tile by tile, each tile's primary first
 * and then its other replicas; holes have none. *holders is malloc'd (the
 * caller frees it; NULL when there are none), *holder_count its length.
 * TS_ERR_PROTO from a meta that does not know the request; on failure
 * error_text (if not NULL) holds meta's error text.
 */
int toolmeta_tile_holders(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t first,
                            uint32_t count, struct toolmeta_holder **holders,
                            size_t *holder_count, char *error_text, size_t error_cap);

/* PROFILE_SET action (enum ts_profile_action) on ino; *profiling = state after. */
int toolmeta_profile_set(struct rpc_client *client, int timeout_ms, uint64_t ino, uint32_t action,
                           uint32_t *profiling, char *error_text, size_t error_cap);

/* One PROFILE_GET record: what one machine did to one tile. */
struct toolmeta_access {
    uint64_t tile;
    char machine[TS_MAX_NAME + 1]; /* longer names are cut */
    uint64_t reads;
    uint64_t writes;
    uint64_t bytes_read;
    uint64_t bytes_written;
    uint64_t local_bytes; /* of those, served by a datanode on the machine */
    uint64_t first_access_ns;
};

/*
 * Decodes a PROFILE_GET reply's records (pure; for tests too) into a
 * malloc'd array (NULL when count is 0) the caller frees. Returns TS_OK,
 * TS_ERR_BADMSG when the blob does not hold exactly `count` records, or
 * TS_ERR_NOMEM.
 */
int toolmeta_profile_decode(const struct ts_profile_get_rep *reply,
                              struct toolmeta_access **records, size_t *count);

/*
 * Every profile record of ino (PROFILE_GET, page after page), in the order
 * meta gives them; *records is malloc'd (NULL when none), *profiling the
 * inode's state.
 */
int toolmeta_profile_all(struct rpc_client *client, int timeout_ms, uint64_t ino,
                           struct toolmeta_access **records, size_t *count, uint32_t *profiling,
                           char *error_text, size_t error_cap);

/*
 * Relocation journal entries travel as MOVE_LIST records (proto.h,
 * TS_REC_MOVE): version is from_node's file, new_version to_node's new
 * file (0 for a drop).
 */

/* MOVE_BEGIN of move's ino, tile, version, kind, from and to. */
int toolmeta_move_begin(struct rpc_client *client, int timeout_ms, const struct ts_move_rec *move,
                        uint64_t *new_version, char *error_text, size_t error_cap);
/*
 * MOVE_COMMIT (abort = 0: commits a BEGUN entry, finishes a COMMITTED one)
 * or MOVE_ABORT (abort = 1) of the tile's entry.
 */
int toolmeta_move_end(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t tile,
                        int abort, char *error_text, size_t error_cap);

/* Decodes MOVE_LIST records (pure); as toolmeta_profile_decode(). */
int toolmeta_move_decode(const struct ts_move_list_rep *reply, struct ts_move_rec **moves,
                         size_t *count);

/* A journal entry as the executor's step (its size is not known). */
void toolmeta_move_step(const struct ts_move_rec *move, struct relocate_step *step);

/* Every journal entry (MOVE_LIST, page after page); *moves malloc'd. */
int toolmeta_move_list(struct rpc_client *client, int timeout_ms, struct ts_move_rec **moves,
                       size_t *count, char *error_text, size_t error_cap);

/* The lock as APPLY_LOCK answers it (proto.h); holder NUL-terminated. */
struct toolmeta_apply_lock {
    bool granted;
    bool held;
    char holder[256];
    int64_t since_sec;
    uint64_t steps_total;
    uint64_t steps_done;
    uint32_t left_ms;
};

/* APPLY_LOCK: request (its holder a C string) into *out. */
int toolmeta_apply_lock(struct rpc_client *client, int timeout_ms,
                        const struct ts_apply_lock_req *request, struct toolmeta_apply_lock *out,
                        char *error_text, size_t error_cap);

#endif
