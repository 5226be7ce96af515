/*
 * @file tilestore.h
 * A datanode's tiles as plain files on its local disk.
 *
 * Each tile version is one file, DATA/tiles/<ino % 256>/<ino>.<tile>.<version>,
 * named only from integers (nothing a client sends becomes a path). A
 * missing file reads as zero bytes here; whether that is a hole or a lost
 * tile only meta knows (TS_TILE_STORED, from the created records this
 * store queues), so the handlers answer "no file" as such. The store
 * keeps the count of tile files and the sum of their sizes, so a heartbeat
 * can report them without walking the disk, and enforces an optional
 * capacity limit (--capacity) on that sum.
 *
 * Checksums. Beside each tile file its sidecar "<tile file>.crc" holds a
 * CRC-32C per 4 KiB block (tilecrc.h). A write computes the CRCs of the
 * blocks it touches before it changes a byte (the kept part of a partial
 * block is read back and checked against its old CRC first, and a
 * mismatch refuses the write); a read checks every block it serves
 * (whole blocks covering the range) and answers -EBADMSG instead of bytes
 * that do not match; a truncation checks and resums the block it cuts.
 * Every corrupt file found is remembered for the heartbeat
 * (tilestore_take_corrupt()). Deleting a tile deletes its sidecar first.
 *
 * Which sidecars are trusted, and why no crash leaves a false one. Each
 * start of the store is a "run" with a number (DATA/checksum.runs, which
 * also lists the runs that crashed); a sidecar records the run that last
 * wrote it. tilestore_close() syncs the filesystem and marks its run clean;
 * tilestore_checkpoint() does the same for a running store by starting a
 * new run. A sidecar is trusted when its run ended cleanly (or is this
 * run); a sidecar of a run that crashed, a torn one, or none at all (tiles
 * written before checksums existed, or whose sidecar a crash lost) is
 * rebuilt from the tile's bytes at first use and trusted from then on. So
 * after a crash only tiles written since the last clean end or checkpoint
 * lose their old CRCs, and those bytes were what TILE_SYNC made durable:
 * neither TILE_SYNC nor tilestore_install() needs to wait for a sidecar
 * (install does fsync its own, cheaply, being one write). The one order
 * kept on the write path: before a tile whose sidecar an earlier, clean
 * run wrote changes in this run, its sidecar is rewritten with this run's
 * number and fdatasync'd (once per tile and run), else a crash could leave
 * new bytes beside old CRCs still trusted.
 *
 * Every function returns 0 or a negative errno; -EBADMSG: the tile's
 * bytes do not match their checksums. A full disk or quota
 * (ENOSPC, EDQUOT) and a write past the capacity limit all come back as
 * -ENOSPC, so the client sees "no space" for a full datanode. Not
 * thread-safe: callers hold the handlers' lock (nodehandlers.h; the loop thread
 * or a stream thread), except of the functions marked "for other threads"
 * (background pulls use them).
 */
#ifndef TESSERA_DATANODE_TILESTORE_H
#define TESSERA_DATANODE_TILESTORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tilestore;
struct tilecrc;
struct tilehandle;

/* Bucket directories under DATA/tiles, named 0 .. TILESTORE_BUCKETS - 1. */
#define TILESTORE_BUCKETS 256

/* Longest relative tile path: "tiles/255/" + three u64 and two dots. */
#define TILESTORE_PATH_MAX 80

/*
 * Opens (creating as needed) the store under data_dir: takes an exclusive
 * lock on DATA/datanode.lock (-EBUSY if another datanode holds it), creates
 * DATA/tiles and its 256 buckets, counts the tiles already there and
 * removes staging files a crash left (tilestore_install()).
 * capacity_limit = 0 means "the disk's own size". On success *storep owns
 * the store; release it with tilestore_close().
 */
int tilestore_open(const char *data_dir, uint64_t capacity_limit, struct tilestore **storep);
/* Closes the store (NULL-safe) and clears the caller's pointer. */
void tilestore_close(struct tilestore **storep);

/*
 * Writes len bytes at offset into the tile, creating its file if needed.
 * -EINVAL if ino is 0 or offset + len > TS_MAX_DATA_BYTES; -ENOSPC if the
 * growth would pass the capacity limit (nothing is written then). len 0
 * only validates. On a failed write the file's growth is undone (a file
 * this call created is removed); bytes inside the old size may have changed.
 */
int tilestore_write(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                    uint64_t offset, const void *data, size_t len);

/*
 * As tilestore_write(), with the bytes summed already (tilecrc.h
 * tilecrc_sum_payload(), of exactly these bytes: a handler that checked
 * the writer's CRC with them), so they are not summed twice. sums NULL:
 * tilestore_write().
 */
struct tilecrc_payload;
int tilestore_write_summed(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                           uint64_t offset, const void *data, size_t len,
                           const struct tilecrc_payload *sums);

/*
 * Reads up to length bytes at offset into buf; *got is how many were there.
 * A missing tile or a read past its end gives a short count (0 included):
 * the caller treats the rest as zeros. -EINVAL as for tilestore_write();
 * -EBADMSG (*got 0) when a block of the range fails its CRC.
 */
int tilestore_read(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                   uint64_t offset, size_t length, void *buf, size_t *got);

/*
 * Checks the blocks holding [offset, offset + length) of the tile (the
 * range cut at its end; length UINT64_MAX for all of it), for a reader
 * that checks a range before it reads, and the scrub. *bytes: the file's
 * size. 0, -ENOENT (no file), -EBADMSG or another negative errno.
 */
int tilestore_verify(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                     uint64_t offset, uint64_t length, uint64_t *bytes);

/*
 * For the scrub, which reads tiles without holding up the handlers:
 * tilestore_trust() copies which sidecars are trusted (under the lock);
 * tilestore_verify_unlocked() then checks a whole tile as
 * tilestore_verify() does, touching nothing of the store (for other
 * threads), of [offset, offset + length) as tilestore_verify() does, and
 * answers 0 (every block good), -ENOENT, another negative
 * errno, or -EAGAIN: not clean (a mismatch, which a write running
 * meanwhile can fake, or a sidecar to make or not trusted by this copy),
 * for tilestore_verify() under the lock to decide.
 */
struct tilecrc_trust;
void tilestore_trust(const struct tilestore *store, struct tilecrc_trust *trust);
int tilestore_verify_unlocked(const struct tilestore *store, const struct tilecrc_trust *trust,
                              uint64_t ino, uint64_t tile, uint64_t version, uint64_t offset,
                              uint64_t length, uint64_t *bytes);

/*
 * For the stream's reads: checks bytes [offset, offset + length) of the
 * tile open as fd (tilestore_open_tile(), `size` bytes then; the range
 * within it) against its sidecar (tilecrc_verify(): read 64 KiB at a
 * time, 4 KiB blocks, into a buffer that stays in the CPU's cache), touching nothing of
 * the store, so the stream sends them from fd. 0, or -EAGAIN as
 * tilestore_verify_unlocked() (then tilestore_read() under the lock).
 */
int tilestore_check_open_unlocked(const struct tilestore *store,
                                  const struct tilecrc_trust *trust, uint64_t ino, uint64_t tile,
                                  uint64_t version, int fd, uint64_t size, uint64_t offset,
                                  size_t length);

/*
 * As tilestore_check_open_unlocked(), for bytes the caller read already:
 * the len bytes of the tile from `start` (a CRC block's first byte) are
 * in `bytes` and are checked there, each block whole (directread.h).
 * fd is read only for a block that `bytes` does not hold whole.
 */
int tilestore_check_read_unlocked(const struct tilestore *store, const struct tilecrc_trust *trust,
                                  uint64_t ino, uint64_t tile, uint64_t version, int fd,
                                  uint64_t size, uint64_t start, const uint8_t *bytes, size_t len);

/*
 * A tile file held open for one read (tilehandles.h): kept between reads,
 * with its trusted CRCs once a read has loaded them, so a small read does
 * not open the file and its sidecar each time.
 */
struct tilestore_held {
    struct tilehandle *handle; /* NULL: fd is this read's own */
    int fd;
    uint64_t size;              /* the file's size when it was opened */
    const struct tilecrc *sums; /* the trusted CRCs, NULL: not loaded yet */
};

/*
 * Holds the tile's file for a read (under the lock): 0, -ENOENT when it
 * has none, or another negative errno. Every change to the tile through
 * the store lets go of what is kept for it; a holder reads on as the file
 * was (tilehandles.h).
 */
int tilestore_hold(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                   struct tilestore_held *held);

/*
 * Ends a hold (under the lock). loaded: the trusted CRCs
 * tilestore_check_held_unlocked() loaded for it, or NULL.
 */
void tilestore_unhold(struct tilestore *store, struct tilestore_held *held,
                      const struct tilecrc *loaded);

/*
 * As tilestore_check_read_unlocked() (served, served_len) or, with served
 * NULL, tilestore_check_open_unlocked(), for a held file: its kept CRCs,
 * or its sidecar's loaded into *loaded (*did_load then true, for
 * tilestore_unhold()). 0, or -EAGAIN: tilestore_read() under the lock.
 */
int tilestore_check_held_unlocked(const struct tilestore *store, const struct tilecrc_trust *trust,
                                  uint64_t ino, uint64_t tile, uint64_t version,
                                  const struct tilestore_held *held, uint64_t offset, size_t length,
                                  const uint8_t *served, size_t served_len, struct tilecrc *loaded,
                                  bool *did_load);

/*
 * Moves up to max of the corrupt tile files found and not yet taken into
 * records (TS_REC_TILE_FILE, ts_tile_file_rec_bytes each) and returns how
 * many: for the heartbeat to report to meta. Each file is reported once
 * until it is deleted.
 */
uint32_t tilestore_take_corrupt(struct tilestore *store, uint8_t *records, uint32_t max);
/* Checksum mismatches found since the store opened, repeated ones included. */
uint64_t tilestore_corrupt_found(const struct tilestore *store);

/*
 * Ends this run cleanly and starts the next (see "Checksums" above): syncs
 * the filesystem, then switches the run number under `lock` (the handlers'
 * lock; NULL when the caller holds it or is alone), syncs again and records
 * the run as ended. Call it now and then (the heartbeat does every few
 * minutes) so a crash costs only recent tiles their old CRCs. On failure
 * the run stays unconfirmed, which is safe.
 */
int tilestore_checkpoint(struct tilestore *store, pthread_mutex_t *lock);

/*
 * Makes the tile durable: fsyncs its file if it exists and, when a file was
 * created or removed in its bucket since that bucket was last synced, the
 * bucket directory too. A missing tile is not an error.
 */
int tilestore_sync(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version);
/*
 * The two halves of tilestore_sync(), for a caller that syncs many tiles
 * without holding up others: tilestore_sync_file() fsyncs the tile's file
 * only and touches nothing of the store but tiles_fd (for other threads);
 * tilestore_sync_names() then makes the names in ino's bucket durable.
 */
int tilestore_sync_file(const struct tilestore *store, uint64_t ino, uint64_t tile,
                        uint64_t version);
int tilestore_sync_names(struct tilestore *store, uint64_t ino);
/*
 * For a sync of many tiles at once: tilestore_wait_file() puts one tile's
 * bytes on the disk (sync_file_range, no journal commit and no cache flush);
 * tilestore_sync_filesystem() then commits the journal and flushes the disk
 * cache once for all of them (syncfs). Per tile fsyncs flush the disk cache
 * once per file: a thousand flushes at the end of a 1 GiB write.
 */
int tilestore_wait_file(const struct tilestore *store, uint64_t ino, uint64_t tile,
                        uint64_t version);
int tilestore_sync_filesystem(const struct tilestore *store);

/*
 * Sets an existing tile's size to length (cut or zero-extended). A missing
 * tile stays missing and is not an error. -EINVAL if ino is 0 or length >
 * TS_MAX_DATA_BYTES; -ENOSPC if extending would pass the capacity limit.
 */
int tilestore_truncate(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                       uint64_t length);

/*
 * Removes the tile's file; a missing tile is not an error. A file that has
 * another name too (tilestore_relink()) loses this name only: it is not
 * emptied into the spares, since the other name still holds its bytes.
 */
int tilestore_delete(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version);
/*
 * Gives the tile file (ino, tile, version) a second name, new_version, for
 * a copy of an open file (TS_FENCE_RELINK, proto.h): the bytes are made
 * durable (fdatasync), hard-linked under the new name, and given a sidecar
 * of their own holding the same block CRCs (so a later rewrite of one
 * name's sidecar never touches the other's); the bucket is fsync'd before
 * it returns. The new name is counted and queued as created (the
 * heartbeat tells meta). Linking again to the same file is a no-op;
 * -EEXIST when new_version names another file; 0 with nothing done when
 * the old file does not exist (a tile never written: a hole either way);
 * -EBADMSG when its bytes do not match their checksums (nothing linked).
 */
int tilestore_relink(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                     uint64_t new_version);

/* The descriptor of DATA/tiles, valid while the store is open (for reading names). */
int tilestore_tiles_fd(const struct tilestore *store);

/* Tile files held and the sum of their sizes. */
void tilestore_usage(const struct tilestore *store, uint64_t *tiles, uint64_t *used_bytes);

/*
 * Capacity and free bytes for the heartbeat: the disk's (statvfs) or, with a
 * capacity limit, the limit and min(disk free, limit - used).
 */
int tilestore_space(const struct tilestore *store, uint64_t *capacity, uint64_t *free_bytes);

/*
 * The filesystem the data directory is on (statvfs): its id (f_fsid; 0
 * if it has none), size and bytes free to this process. Datanodes sharing
 * a disk report the same id, so meta counts its space once.
 */
int tilestore_disk(const struct tilestore *store, uint64_t *disk_id, uint64_t *disk_bytes,
                   uint64_t *disk_free);

/*
 * The size of the tile's file into *bytes: 0, -ENOENT when it has none,
 * or another negative errno. A cheap stat, for bounding a read's buffer.
 */
/*
 * Opens the tile's file for reading: its descriptor (the caller closes it)
 * and size. 0, -ENOENT when it has none, or another negative errno.
 */
int tilestore_open_tile(const struct tilestore *store, uint64_t ino, uint64_t tile,
                        uint64_t version, int *fd, uint64_t *bytes);

int tilestore_size(const struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                   uint64_t *bytes);

/* ---- for other threads ------------------------------------------------
 * The two functions below touch no counter or flag of the store, only
 * files through its directory descriptor, so any thread may call them while
 * the loop thread uses the store (which must stay open meanwhile).
 */

/*
 * The size of the tile's file and the CRC-32C (crc32c.h) of its bytes:
 * 0, -ENOENT when the tile has no file, or another negative errno.
 */
int tilestore_checksum(const struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                       uint64_t *bytes, uint32_t *checksum);

/*
 * Stores len bytes as the whole tile file, durably and atomically: writes
 * them to a staging file "<bucket>/.<ino>.<tile>.<version>.pull", fsyncs
 * it, renames it to the tile's name only if no file has that name yet and
 * fsyncs the bucket directory. Returns 0; -EEXIST if the tile already had a
 * file (left untouched: an install never overwrites); -EINVAL as for
 * tilestore_write(); or another negative errno. On failure the staging file
 * is gone. Two calls must never stage the same tile at the same time.
 * The new file is not counted yet: the loop thread calls
 * tilestore_count_installed() once it learns of it. Staging files left by
 * a crash are removed by tilestore_open().
 */
int tilestore_install(const struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                      const void *data, size_t len);

/*
 * Counts a file tilestore_install() made, and queues it for meta as
 * created (tilestore_take_created()); loop thread only, as the rest.
 */
void tilestore_count_installed(struct tilestore *store, uint64_t ino, uint64_t tile,
                               uint64_t version, uint64_t bytes);

/*
 * Moves up to max of the oldest queued created records (TS_REC_TILE_FILE,
 * ts_tile_file_rec_bytes each) into records
 * and returns how many: the tile files found at open and made since, for
 * the heartbeat to report (meta then knows those tiles were written, and
 * that a missing file of theirs is lost, not a hole). Taken records are
 * the caller's to deliver.
 */
uint32_t tilestore_take_created(struct tilestore *store, uint8_t *records, uint32_t max);

/*
 * Called by tilestore_delete() before it looks for the file, on the loop
 * thread, so whoever may be making that file (a pull in flight) learns it
 * is garbage. NULL unsets it.
 */
typedef void (*tilestore_delete_hook)(void *arg, uint64_t ino, uint64_t tile, uint64_t version);
void tilestore_set_delete_hook(struct tilestore *store, tilestore_delete_hook hook, void *arg);

/*
 * The tile's file path relative to the data directory,
 * "tiles/<ino % 256>/<ino>.<tile>.<version>", into out (cap bytes,
 * TILESTORE_PATH_MAX is enough). Returns 0 or -ENAMETOOLONG.
 */
int tilestore_path(uint64_t ino, uint64_t tile, uint64_t version, char *out, size_t cap);

/*
 * Parses a tile file's name, "<ino>.<tile>.<version>" (decimal digits only,
 * each fitting 64 bits): true with the three numbers, false for any other
 * name (staging files, strays).
 */
bool tilestore_name_parse(const char *name, uint64_t *ino, uint64_t *tile, uint64_t *version);

#endif
