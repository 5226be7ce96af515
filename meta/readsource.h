/*
 * @file readsource.h
 * Where a client reads each tile from (proto.h TILE_MAP, ViPIOS buddy
 * access): the TILE_MAP record of a tile, with its number of read copies
 * and its read source for the asking client's machine:
 *  - the primary, when the primary's datanode runs on that machine;
 *  - else a copy on a datanode of that machine that is up (the lowest node
 *    id of those);
 *  - else the primary.
 * A node's machine is what its heartbeats report (nodes table); whether it
 * is up is meta's in-memory liveness.
 *
 * One struct readsource serves one TILE_MAP request: it is loaded once,
 * inside the request's transaction (one scan of the copies of the whole
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
 * Loads what tiles first..first+count-1 of ino need: their copies, and the
 * nodes of `machine` ("" = none: every tile reads from its primary) with
 * their liveness at now_ms. 0 or a negative errno; *sourcep is NULL on
 * failure.
 */
int readsource_load(struct store_txn *txn, const struct nodes_live *live, int64_t now_ms,
                    uint64_t ino, uint64_t first, uint32_t count, struct ts_str machine,
                    struct readsource **sourcep);

/*
 * Appends tile's TILE_MAP record (TS_REC_TILE_MAP) to writer: primary
 * (node 0 = hole: all fields 0), copies, read source, the primary's flags
 * (TS_TILE_STORED). tile must lie in the
 * loaded range.
 */
void readsource_record(const struct readsource *source, uint64_t tile,
                       const struct tiles_entry *primary, struct ts_writer *writer);

/* Frees; accepts NULL, clears *sourcep. */
void readsource_free(struct readsource **sourcep);

#endif
