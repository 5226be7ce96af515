/*
 * @file tilelocation.h
 * The location of each tile of an open file: a cache of what meta said,
 * asked again (and allocated, for writes) when missing, and followed when
 * a datanode answers that a tile moved. Private to the data path.
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
 * (only without allocate). Called with file->lock held; an allocation may
 * release it while it waits for a datanode with room (tileplace_pick).
 */
int tilelocation_get(struct datapath *datapath, struct open_file *file, uint64_t tile,
                     bool allocate, struct tile_location *location);

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

/* Where this machine reads a tile: a copy here, or the primary. */
void tilelocation_read_source(const struct tile_location *location, uint32_t *node,
                              uint64_t *version);

/* What a request does to a tile: which location it uses, what it may allocate. */
enum tile_access { TILE_ACCESS_READ, TILE_ACCESS_WRITE, TILE_ACCESS_TRUNCATE };

/* The time left to a request that follows a moving tile, and its backoff. */
struct stale_retry {
    bool started;
    int64_t deadline_ms;
    int delay_ms;
};

/* The place a request of this kind goes to: the read source, or the primary. */
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
 * Has meta drop the read copies of a tile about to be written (so no
 * reader is served a copy older than the primary) and makes *location say
 * so. Takes no lock of the data path.
 */
int tilelocation_uncopy(struct datapath *datapath, uint64_t ino, uint64_t tile,
                        struct tile_location *location);

#endif
