/*
 * @file metaclient.h
 * The few questions the tessera command asks tessera-meta: PING (is it
 * serving?), NODE_LIST (the datanodes and their state), STATFS (the
 * filesystem's totals), GETATTR and TILE_MAP (a file's layout and where
 * its tiles are, for `tessera layout`). Each call has a deadline and returns a project
 * status (status.h): TS_OK, TS_ERR_TIMEDOUT when meta did not answer in
 * time, the status meta answered with, or TS_ERR_BADMSG for a reply that
 * does not decode.
 */
#ifndef TESSERA_TOOLS_METACLIENT_H
#define TESSERA_TOOLS_METACLIENT_H

#include "proto.h"
#include "rpc.h"

#include <stddef.h>
#include <stdint.h>

/* One datanode as NODE_LIST describes it (proto.h, NODE_LIST record). */
struct metaclient_node {
    uint32_t id;
    uint32_t state; /* enum ts_node_state */
    uint64_t capacity;
    uint64_t free_bytes;
    uint64_t used_bytes;
    uint64_t tiles;
    uint64_t heartbeat_age_ms;
    uint64_t read_bytes_per_sec;  /* measured by the node; 0 = not yet */
    uint64_t write_bytes_per_sec; /* measured by the node; 0 = not yet */
    uint32_t queue_depth;         /* tile requests in service or waiting */
    uint64_t throttle_bytes_per_sec; /* 0 = none */
    char machine[256]; /* longer names are cut */
    char address[256];
};

/* PING; TS_OK when meta answered. */
int metaclient_ping(struct rpc_client *client, int timeout_ms);

/*
 * NODE_LIST. On TS_OK, *nodes is a malloc'd array of *count entries (NULL
 * when count is 0) that the caller frees. On failure *nodes is NULL, and
 * error_text (if not NULL) holds meta's error text, "" if none.
 */
int metaclient_node_list(struct rpc_client *client, int timeout_ms, struct metaclient_node **nodes,
                         size_t *count, char *error_text, size_t error_cap);

/* STATFS; fills *totals on TS_OK. */
int metaclient_statfs(struct rpc_client *client, int timeout_ms, struct ts_statfs_rep *totals);

/* GETATTR of ino; fills *attr on TS_OK. */
int metaclient_getattr(struct rpc_client *client, int timeout_ms, uint64_t ino,
                       struct ts_attr *attr);

/*
 * TILE_MAP without allocating: where tiles [first, first + count) of ino
 * are (count <= TS_MAX_TILES_PER_MAP); nodes[i] = 0 for a hole. On failure
 * error_text (if not NULL) holds meta's error text, "" if none.
 */
int metaclient_tile_map(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t first,
                        uint32_t count, uint32_t *nodes, uint64_t *versions, char *error_text,
                        size_t error_cap);

#endif
