/*
 * @file readsource.h
 * Where a client reads each tile from (proto.h TILE_MAP, ViPIOS buddy
 * access): the TILE_MAP record of a tile, followed by its holders (the
 * primary and the replicas) in the order the asking client's machine
 * should try them:
 *  - holders up on a datanode of that machine (primary first, then node
 *    order);
 *  - then the other holders that are up, the fastest by measured read
 *    throughput first; those at least half as fast as the fastest are
 *    taken in an order rotated by a hash of (ino, tile), so that readers
 *    spread over every holder rather than all queueing on the one that
 *    measured fastest (for an asker that names its machine, a mount; for
 *    one that names none, the primary first among equals, then node
 *    order);
 *  - then holders on datanodes meta counts as down (TS_REPLICA_DOWN).
 * The first is the record's read source. A node's machine is what its
 * heartbeats report (nodes table); whether it is up is meta's in-memory
 * liveness; a holder on a node meta does not know counts as down.
 *
 * One struct readsource serves one TILE_MAP request: it is loaded once,
 * inside the request's transaction (one scan of the replicas of the whole
 * range, one read of the nodes table), then asked tile by tile.
 */
#ifndef TESSERA_META_READSOURCE_H
#define TESSERA_META_READSOURCE_H

#include "nodes.h"
#include "proto.h"
#include "store.h"
#include "tiles.h"

#include <stdint.h>

struct readsource;

/*
 * Loads what tiles first..first+count-1 of ino need: their replicas, and
 * every node with its liveness at now_ms, its read throughput and whether
 * it is on `machine` ("" = none: no holder is local). 0 or a negative errno; *sourcep is NULL on
 * failure.
 */
int readsource_load(struct store_txn *txn, const struct nodes_live *live, int64_t now_ms,
                    uint64_t ino, uint64_t first, uint32_t count, struct ts_str machine,
                    struct readsource **sourcep);

/*
 * Appends tile's TILE_MAP record (TS_REC_TILE_MAP) and its holders
 * (TS_REC_REPLICA, in the order above) to writer: primary (node 0 = hole:
 * all fields 0, no holders), holder count, read source, the tile's flags
 * (TS_TILE_STORED). tile must lie in the loaded range.
 */
void readsource_record(const struct readsource *source, uint64_t tile,
                       const struct tiles_entry *primary, struct ts_writer *writer);

/*
 * Makes readsource_record() give every holder a tile token
 * (common/tiletoken.h) with these rights (TILETOKEN_WRITE or
 * TILETOKEN_READ; 0: none), valid tiletoken_lifetime_ms() from now. Without
 * a tile secret no token is given. Before it: none.
 */
void readsource_grant(struct readsource *source, uint32_t rights);

/* Frees; accepts NULL, clears *sourcep. */
void readsource_free(struct readsource **sourcep);

#endif
