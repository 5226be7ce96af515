/*
 * @file tilecache.h
 * The read cache of an open file: whole tiles loaded by read-ahead and
 * data sieving, READ_SLOTS per file, their memory from the read budget.
 * Private to the data path; called with the file's lock held.
 */
#ifndef TESSERA_TILECACHE_H
#define TESSERA_TILECACHE_H

#include "datapath_i.h"

#include <stdint.h>

/* Empties a slot, giving back its bytes and budget. */
void tilecache_slot_clear(struct datapath *datapath, struct open_file *file,
                          struct read_slot *slot);

/* Drops cached tiles in [first, last]: their bytes are about to change. */
void tilecache_forget_range(struct datapath *datapath, struct open_file *file, uint64_t first,
                            uint64_t last);

/*
 * Takes the size meta gave for the file. When it grew (another mount wrote
 * past the end this mount knew), the cached tiles from the old end on may
 * hold fewer bytes than the tiles have now, and their zeros must not be
 * served as the new bytes: they are forgotten. Called with file->lock held.
 */
void tilecache_size_learned(struct datapath *datapath, struct open_file *file, uint64_t size);

/* The slot holding `tile` (loading, ready or failed), or NULL. */
struct read_slot *tilecache_find(struct open_file *file, uint64_t tile);

/*
 * Starts loading a whole tile into the cache. Returns the slot, or NULL when
 * there is no memory or slot for it (the caller reads directly instead).
 * The caller makes sure this mount has no bytes of the tile not yet
 * written out (the load would miss them). Called with file->lock held.
 */
struct read_slot *tilecache_load(struct datapath *datapath, struct open_file *file, uint64_t tile,
                                 int *error);

/* Gives back the memory of every slot of a file being freed (no loads in flight). */
void tilecache_free(struct datapath *datapath, struct open_file *file);

#endif
