/*
 * @file tilehandles.h
 * Tile files kept open between reads, with their block CRCs (tilecrc.h)
 * once a read has loaded them.
 *
 * Why: a 4 KiB O_DIRECT read through the mount cost the datanode an
 * openat() and fstat() of the tile and an open and read of its sidecar
 * each time, 15 % of its stream thread's time in a profile; the datanode
 * is the only writer of its files, so it knows when what it keeps goes
 * stale.
 *
 * The rule that keeps it right: every change to a tile's file or sidecar
 * (a write, a truncation, a delete, a relink) calls tilehandles_forget()
 * for that tile, under the same lock as the holds. A handle forgotten
 * while a reader holds it stays open for that reader (who may read bytes
 * newer than its CRCs: a mismatch the reader then settles under the lock,
 * as before there were handles) and is closed at its last release. A
 * deleted tile's inode may be reused (tilestore.h: spares), so a
 * forgotten handle is never found again.
 *
 * Not thread-safe: callers hold the handlers' lock for every call; a
 * holder may read its handle's fd, size, and sums (when not NULL at its
 * hold) without it, as nothing changes them while held.
 */
#ifndef TESSERA_DATANODE_TILEHANDLES_H
#define TESSERA_DATANODE_TILEHANDLES_H

#include "tilecrc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tilehandles;

/* Fewest and most handles kept, whatever the descriptor limit allows. */
#define TILEHANDLES_MIN 16
#define TILEHANDLES_MAX 1024

/* One open tile file. Read-only for holders. */
struct tilehandle {
    uint64_t ino;
    uint64_t tile;
    uint64_t version;
    int fd;         /* O_RDONLY, owned by the handles */
    uint64_t size;  /* the file's size when it was opened */
    /* the sidecar's trusted CRCs (tilecrc_dup()), NULL: not loaded yet */
    struct tilecrc *sums;
    /* The handles' own from here on. */
    unsigned users;        /* holds not yet released */
    bool forgotten;        /* out of the index: closed at its last release */
    int32_t next_in_chain; /* the index's chain, -1: end */
    int32_t newer, older;  /* the list of unheld handles, newest first */
};

/*
 * Makes a set of at most `capacity` handles (clamped to TILEHANDLES_MIN ..
 * TILEHANDLES_MAX). 0 or -ENOMEM.
 */
int tilehandles_new(size_t capacity, struct tilehandles **handlesp);

/* Closes every handle (none may be held) and frees the set; NULL is fine. */
void tilehandles_destroy(struct tilehandles **handlesp);

/* How many handles fit in the set. */
size_t tilehandles_capacity(const struct tilehandles *handles);

/*
 * The handle of (ino, tile, version), held (the caller releases it), or
 * NULL when none is kept.
 */
struct tilehandle *tilehandles_find(struct tilehandles *handles, uint64_t ino, uint64_t tile,
                                    uint64_t version);

/*
 * Keeps fd (an open tile file of size bytes) as the handle of (ino, tile,
 * version), which must not be kept yet, putting out the least recently
 * used unheld handle when the set is full. Returns it held; NULL when
 * every handle is held, and fd stays the caller's.
 */
struct tilehandle *tilehandles_add(struct tilehandles *handles, uint64_t ino, uint64_t tile,
                                   uint64_t version, int fd, uint64_t size);

/*
 * Releases a hold. loaded, when not NULL, holds the tile's trusted CRCs
 * the holder loaded meanwhile: kept with the handle unless it was
 * forgotten or has its own already.
 */
void tilehandles_release(struct tilehandles *handles, struct tilehandle *handle,
                         const struct tilecrc *loaded);

/* Forgets every handle of (ino, tile), whatever its version: its file changed. */
void tilehandles_forget(struct tilehandles *handles, uint64_t ino, uint64_t tile);

/* Handles kept (held or not), forgotten ones still held not counted. */
size_t tilehandles_count(const struct tilehandles *handles);

#endif
