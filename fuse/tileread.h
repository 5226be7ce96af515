/*
 * @file tileread.h
 * Reading bytes of a tile from where this machine reads it (meta's first
 * holder for it), failing over to its other holders, following the tile
 * if it moves and telling a hole from a lost tile. Private to the data path; takes none of its locks.
 */
#ifndef TESSERA_TILEREAD_H
#define TESSERA_TILEREAD_H

#include "datapath_i.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * Reads part of a tile into `reply` (reply->data_len bytes; the rest of the
 * range holds nothing: zeros) from where this machine reads it, following
 * the tile if it moves: *location ends as the place it was read from
 * (node 0: the tile became a hole, and reply is empty). A tile whose file
 * its datanode lacks is a hole only if meta says it was never written
 * (read_missing(): else the next holder). A holder that fails for another
 * reason is given up for the next; -EIO (or the last failure) only when
 * every holder failed. The caller
 * releases reply in every case. Takes no lock of the data path.
 */
int tileread_fetch(struct datapath *datapath, uint64_t ino, uint64_t tile, uint32_t tile_offset,
                   uint32_t length, struct tile_location *location, struct rpc_reply *reply);

/* True if the tile is read from a datanode on this machine. */
bool tileread_is_local(struct datapath *datapath, const struct tile_location *location);

#endif
