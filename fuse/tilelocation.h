/*
 * @file tilelocation.h
 * The location of each tile of an open file: a cache of what meta said,
 * asked again (and allocated, for writes) when missing, and followed when
 * a datanode answers that a tile moved, and the replica set's changes a
 * failed holder makes (REPLICA_DROP). Private to the data path.
 * Functions that take an open file are called with its lock held.
 */
#ifndef TESSERA_TILELOCATION_H
#define TESSERA_TILELOCATION_H

#include "datapath_i.h"

#include <stdbool.h>
#include <stdint.h>

/* Sets up and frees a new file's location cache: 0 or -ENOMEM. */
int tilelocation_init(struct open_file *file);
void tilelocation_fini(struct open_file *file);

/*
 * The location of `tile`; with allocate, a hole gets a tile placed by meta
 * (with the following tiles too when the writer is sequential, so meta sees
 * one request per batch, not per tile). location->node is 0 for a hole
 * (only without allocate). Called with file->lock held; lets it go while
 * it asks meta (a miss) or waits for a datanode with room (tileplace_pick):
 * a pointer into the file's slots or buffers taken before may be stale
 * after it.
 */
int tilelocation_get(struct datapath *datapath, struct open_file *file, uint64_t tile,
                     bool allocate, struct tile_location *location);

/*
 * For a read past the end this mount knows: meta's size of the file, with
 * the locations of the tiles from the one `offset` falls in, in one round
 * trip (TILE_MAP answers the size). Lets file->lock go while it asks.
 * Returns 0, -ERANGE when offset is past the bytes an array file can have
 * (nothing to ask), -EAGAIN when a truncation came meanwhile (the size may
 * be older than it), or meta's error.
 */
int tilelocation_size_at(struct datapath *datapath, struct open_file *file, uint64_t offset,
                         uint64_t *size);

/* Puts a tile's location in the cache; holes are not kept (another mount
 * may fill them). */
void tilelocation_remember(struct open_file *file, uint64_t tile,
                           const struct tile_location *location);

/* Forgets the locations of tiles first_tile and after. */
void tilelocation_forget_from(struct open_file *file, uint64_t first_tile);

/* Forgets the locations of tiles first_tile..last_tile, or of every tile. */
void tilelocation_forget_range(struct open_file *file, uint64_t first_tile, uint64_t last_tile);
void tilelocation_forget_all(struct open_file *file);

/*
 * After a worker followed a tile to `now`: puts it in the cache unless the
 * cache already moved on from `before` (another thread relocated it first).
 * Called with file->lock held.
 */
void tilelocation_replace(struct open_file *file, uint64_t tile, const struct tile_location *before,
                          const struct tile_location *now);

/* Where this machine reads a tile first: meta's first holder, or the one a failover moved on to. */
void tilelocation_read_source(const struct tile_location *location, uint32_t *node,
                              uint64_t *version);

/*
 * The TILE_READ of bytes [offset, offset + length) of tile `tile` of file
 * `ino` from where this machine reads it (tilelocation_read_source(), the
 * node into *node): that holder's version and tile token (none when meta
 * gave none), so the datanode serves the read (common/tiletoken.h). The
 * token points into location, which must outlive the request's sending.
 */
struct ts_tile_read_req tilelocation_read_request(const struct tile_location *location,
                                                  uint64_t ino, uint64_t tile, uint32_t offset,
                                                  uint32_t length, uint32_t *node);

/* What a request does to a tile: which location it uses, what it may allocate. */
enum tile_access { TILE_ACCESS_READ, TILE_ACCESS_WRITE, TILE_ACCESS_TRUNCATE };

/* The time left to a request that follows a moving tile, and its backoff. */
struct stale_retry {
    bool started;
    int64_t deadline_ms;
    int delay_ms;
};

/* The place a request of this kind goes to: the read source, or every holder (writes, cuts). */
bool tilelocation_same_for(enum tile_access access, const struct tile_location *a,
                           const struct tile_location *b);

/*
 * Called when the datanode of *location answered TS_ERR_STALE for a tile:
 * asks meta where the tile is now and puts that in *location (writes have
 * a missing tile allocated; for reads and truncates node 0 means the tile
 * is a hole now). While meta still names the same place (the move has not
 * committed yet, or the tile is frozen for a moment), sleeps first, 5 ms
 * doubling to 100 ms. Returns 0 to try the datanode again; -EIO (with a log
 * line) once io_timeout_ms have passed since the first STALE; or meta's
 * error. Takes no lock of the data path.
 */
int tilelocation_relocate(struct datapath *datapath, uint64_t ino, uint64_t tile,
                          enum tile_access access, struct stale_retry *retry,
                          struct tile_location *location);

/*
 * A read of the tile from location->read_node failed: moves the read
 * source on to the next holder (meta's order) not in *tried, marking the
 * failed one in *tried (a bit per index of location->holders). False when
 * every holder has been tried.
 */
bool tilelocation_read_next(struct tile_location *location, uint32_t *tried);

/*
 * Holder `holder` of the tile failed a write, sync or cut (failure: its
 * status) that another holder took: has meta drop it (REPLICA_DROP) so no
 * reader is ever served its bytes, and puts the tile's location now in
 * *location. Returns 0, or meta's error (the holder may still be in the
 * set: the caller's operation must fail). Takes no lock of the data path.
 */
int tilelocation_drop_holder(struct datapath *datapath, uint64_t ino, uint64_t tile,
                             const struct tile_holder *holder, int failure,
                             struct tile_location *location);

#endif
