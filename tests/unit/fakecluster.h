/*
 * @file fakecluster.h
 * An in-memory meta and datanodes for unit tests of the mount's data path.
 *
 * The seam is the link: fakecluster.c defines the functions of
 * fuse/metaclient.h, fuse/nodedir.h and fuse/tilestream.h that the data
 * path calls, and the test is linked with the data path's own files
 * (meson's datapath_sources) instead of the real clients. So the data path
 * runs unchanged, workers and all, against a meta that keeps a tile map
 * and sizes, and datanodes 1..FAKECLUSTER_NODES that keep tile files as
 * byte arrays. Tests pass NULL for the meta client and the directory.
 *
 * Meta places a new tile of inode ino on datanode ((ino + tile) mod
 * FAKECLUSTER_NODES) + 1, or on the node the request names. A datanode
 * write marks the tile TS_TILE_STORED in meta, as the datanode's report
 * would. Every function is thread-safe (one lock): the data path's workers
 * call in from their threads.
 */
#ifndef TESSERA_FAKECLUSTER_H
#define TESSERA_FAKECLUSTER_H

#include "attrguard.h"
#include "datapath.h"
#include "metaclient.h"
#include "workers.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define FAKECLUSTER_NODES 3

/* Forgets every file, tile and counter; tiles of tile_bytes bytes. */
void fakecluster_reset(uint32_t tile_bytes);
/* Frees what the cluster holds. */
void fakecluster_free(void);

/* Meta's attributes of a regular file of `size` bytes, as OPEN returns them. */
struct ts_attr fakecluster_file(uint64_t ino, uint64_t size, uint32_t placement);
/* What meta has of a file: its size, and the COMMITs and RELEASEs it got. */
struct fakecluster_meta {
    uint64_t size;
    int commits;
    int releases;
};
struct fakecluster_meta fakecluster_meta_of(uint64_t ino);

/* Meta's record of a tile: false for a hole. */
bool fakecluster_location(uint64_t ino, uint64_t tile, struct tile_location *location);
/* Sets meta's record of a tile (a move, or a tile stored and then lost). */
void fakecluster_map(uint64_t ino, uint64_t tile, const struct tile_location *location);

/* A datanode's file of a tile: copies up to cap bytes into out; -1 if it has none. */
int fakecluster_tile_bytes(uint32_t node, uint64_t ino, uint64_t tile, void *out, uint32_t cap);
/* Puts (replaces) a tile's file on a datanode. */
void fakecluster_store(uint32_t node, uint64_t ino, uint64_t tile, uint64_t version,
                       const void *bytes, uint32_t length);
/* A datanode answers every request for the tile with TS_ERR_STALE (moved away). */
void fakecluster_moved_away(uint32_t node, uint64_t ino, uint64_t tile);
/* A datanode answers every TILE_WRITE with `status` (TS_OK: normally again). */
void fakecluster_fail_writes(uint32_t node, int32_t status);
/* A datanode answers every TILE_SYNC with `status` (TS_OK: normally again). */
void fakecluster_fail_syncs(uint32_t node, int32_t status);
/* New tiles get `holders` holders (1..FAKECLUSTER_NODES; 1 after a reset):
 * the node placement names, then the next ones, each a version of its own. */
void fakecluster_set_copies(uint32_t holders);
/* REPLICA_DROPs that removed a holder since the reset. */
int fakecluster_replica_drops(void);
/* A datanode answers every TILE_READ with `status` (TS_OK: normally again). */
void fakecluster_fail_reads(uint32_t node, int32_t status);
/* Each TILE_WRITE takes up to this long (random), so that jobs overlap. */
void fakecluster_write_delay_us(int max_us);

/* While held, meta's TILE_MAP, GETATTR and COMMIT wait (a slow meta); false lets them go on. */
void fakecluster_meta_hold(bool hold);
/* Waits up to five seconds for a call to wait at the hold: true if one does. */
bool fakecluster_meta_wait_for_caller(void);

/* Requests a datanode got for a tile (op: TS_OP_TILE_READ, ...), whatever it answered. */
int fakecluster_requests(uint32_t node, uint16_t op, uint64_t ino, uint64_t tile);

/* A data path over the fake cluster, with its workers and attribute guard. */
struct fakecluster_mount {
    struct datapath *datapath;
    struct workers *workers;
    struct attrguard *guard;
};

/* Resets the cluster (tiles of tile_bytes) and starts a data path with
 * memory for 32 tiles: 0 or -ENOMEM. */
int fakecluster_mount(struct fakecluster_mount *mount, uint32_t tile_bytes,
                      uint32_t readahead_tiles);
/* Stops the data path (every file released) and frees the cluster. */
void fakecluster_unmount(struct fakecluster_mount *mount);

/* datapath_read of [offset, offset + size) into out (unbuffered, no tile
 * streams); returns its byte count or -errno. */
ssize_t fakecluster_read(struct fakecluster_mount *mount, struct open_file *file, void *out,
                         size_t size, uint64_t offset);

#endif
