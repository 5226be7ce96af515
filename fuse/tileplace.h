/*
 * @file tileplace.h
 * Where the data path's new tiles go under dynamic placement: the tile
 * writes this mount has in flight per datanode, and the pick of the node
 * for a writer's next batch. Private to the data path (datapath_i.h).
 */
#ifndef TESSERA_TILEPLACE_H
#define TESSERA_TILEPLACE_H

#include "datapath_i.h"

#include <stdint.h>

/* Dynamic placement: tiles handed to a node at once (Panda's batch; small,
 * as the size of a stream is not known ahead). */
#define TILEPLACE_BATCH 2

/* Counts a tile write to `node` starting (+1) or ending (-1). */
void tileplace_load_change(struct datapath *datapath, uint32_t node, int delta);

/*
 * Panda's dynamic allocation with the writer as manager: the datanode that
 * has room for `tiles` more writes first gets them (the least loaded one;
 * ties rotate). Waits while every node is full, with file->lock (held by
 * the caller) released meanwhile. Returns 0 when no node takes tiles (the
 * caller leaves the choice to meta).
 */
uint32_t tileplace_pick(struct datapath *datapath, struct open_file *file, uint32_t tiles);

#endif
