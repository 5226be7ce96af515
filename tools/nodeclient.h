/*
 * @file nodeclient.h
 * The relocation calls the tessera command makes straight to a datanode:
 * TILE_PULL (the target copies a tile from the source) and TILE_FENCE
 * (freeze, retire or lift the source's file). Each call has a deadline and
 * returns a project status (status.h): TS_OK, TS_ERR_TIMEDOUT, the status
 * the datanode answered with (then error_text, if not NULL, holds its
 * text, "" if none), or TS_ERR_BADMSG for a reply that does not decode.
 */
#ifndef TESSERA_TOOLS_NODECLIENT_H
#define TESSERA_TOOLS_NODECLIENT_H

#include "proto.h"
#include "rpc.h"

#include <stddef.h>
#include <stdint.h>

/* TILE_PULL as proto.h describes it; *answer gets state, bytes and checksum. */
int nodeclient_tile_pull(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t tile,
                         uint64_t version, uint64_t new_version, const char *source,
                         struct ts_tile_pull_rep *answer, char *error_text, size_t error_cap);

/*
 * TILE_FENCE action (enum ts_fence_action; new_version for a relink, else
 * 0); *bytes, *checksum: the file now.
 */
int nodeclient_tile_fence(struct rpc_client *client, int timeout_ms, uint64_t ino, uint64_t tile,
                          uint64_t version, uint32_t action, uint32_t lease_ms,
                          uint64_t new_version, uint64_t *bytes, uint32_t *checksum,
                          char *error_text, size_t error_cap);

#endif
