/*
 * @file tilecrc.h
 * The block checksums kept beside each tile file: a CRC-32C (crc32c.h) per
 * TILECRC_BLOCK_BYTES block, in a sidecar file "<tile name>.crc" in the
 * tile's bucket. Block b covers the file's bytes
 * [b * TILECRC_BLOCK_BYTES, min((b + 1) * TILECRC_BLOCK_BYTES, size)): the
 * last block is as short as the file makes it.
 *
 * Sidecar layout (little-endian): a TILECRC_HEADER_BYTES header
 *   u32 magic "TCRC", u16 format 1, u16 0, u32 block_bytes, u32 blocks,
 *   u64 run (the datanode run that last wrote it), u32 0,
 *   u32 CRC-32C of the 28 bytes before it,
 * then blocks u32 CRCs.
 *
 * When a sidecar is trusted (the rule tilestore.h states in full): its
 * header checks out, and the run that last wrote it ended cleanly. A tile
 * whose sidecar is missing (written before checksums existed, or a crash
 * before its sidecar's name was durable) or not trusted gets its CRCs
 * rebuilt from its bytes at first use. A trusted sidecar whose block count
 * does not match the file's size means the file changed behind the
 * datanode's back: that is corruption (-EBADMSG), as a CRC mismatch is.
 *
 * These functions touch only the descriptors they are given; they are
 * thread-safe as long as two threads do not work on one tile at once.
 * Every function returns 0 or a negative errno; -EBADMSG means "the bytes
 * do not match their checksums".
 */
#ifndef TESSERA_DATANODE_TILECRC_H
#define TESSERA_DATANODE_TILECRC_H

#include "proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * 4 KiB, as Btrfs's and Ceph BlueStore's checksum blocks: a 4 KiB read
 * (an O_DIRECT random reader's) reads and sums 4 KiB, where 64 KiB blocks
 * (MooseFS's, and this store's first format) made it read and sum 64 KiB,
 * most of a small read's cost at the datanode. Checks read the file
 * TILECRC_IO_BYTES at a time, so a large check is no more reads than before.
 */
#define TILECRC_BLOCK_BYTES (4u << 10)
#define TILECRC_IO_BYTES (64u << 10)
/*
 * A sidecar of larger blocks (64 KiB: written before 4 KiB blocks) is
 * still trusted as before: loading it reads the tile, checks every block
 * against it and gives 4 KiB CRCs of the same, checked, bytes (run 0: the
 * caller stores them). Up to this block size.
 */
#define TILECRC_OLD_BLOCK_MAX (64u << 10)
#define TILECRC_MAX_BLOCKS (TS_MAX_DATA_BYTES / TILECRC_BLOCK_BYTES)
#define TILECRC_HEADER_BYTES 32
#define TILECRC_SUFFIX ".crc"

/* A tile's block CRCs in memory: blocks entries of crcs are meaningful. */
struct tilecrc {
    /* the run that wrote the sidecar it was loaded from; 0: rebuilt, or
     * converted from an older sidecar's larger blocks (not stored yet) */
    uint64_t run;
    uint32_t blocks;
    uint32_t crcs[TILECRC_MAX_BLOCKS];
};

/*
 * Which runs' sidecars are trusted: those from trust_from_run up to
 * current_run but the suspect ones (runs that crashed).
 */
struct tilecrc_trust {
    uint64_t current_run;
    uint64_t trust_from_run;
    const uint64_t *suspect_runs;
    size_t suspect_count;
};

/* Blocks of a file of `bytes` bytes. */
uint32_t tilecrc_blocks_for(uint64_t bytes);

/*
 * Loads the sidecar of tile `tile_name` (relative to dir_fd) for its open
 * data file data_fd of data_bytes. 0: trusted, *crc filled (crc->run 0:
 * converted from larger blocks, TILECRC_OLD_BLOCK_MAX); 1: missing or not
 * trusted (the caller rebuilds it with tilecrc_rebuild()); -EBADMSG:
 * trusted but its block count does not fit data_bytes, or (converting)
 * the bytes do not match it; another negative errno.
 */
int tilecrc_load(int dir_fd, const char *tile_name, int data_fd, uint64_t data_bytes,
                 const struct tilecrc_trust *trust, struct tilecrc *crc);

/*
 * A copy of *from on the heap holding only its blocks' CRCs (crcs[0,
 * blocks) and nothing past them: a struct tilecrc is 16 KiB, a 1 MiB
 * tile's CRCs 1 KiB), for keeping; free() it. NULL out of memory.
 */
struct tilecrc *tilecrc_dup(const struct tilecrc *from);

/* Computes *crc from the data_bytes bytes of the open file data_fd. */
int tilecrc_rebuild(int data_fd, uint64_t data_bytes, struct tilecrc *crc);

/*
 * Writes the sidecar of tile_name (replacing it) as written by run `run`,
 * fsync'd when sync is true.
 */
int tilecrc_store(int dir_fd, const char *tile_name, const struct tilecrc *crc, uint64_t run,
                  bool sync);

/* Removes the sidecar of tile_name; a missing one is not an error. */
int tilecrc_remove(int dir_fd, const char *tile_name);

/* "<tile_name>.crc" into out (cap bytes); -ENAMETOOLONG if it does not fit. */
int tilecrc_name(const char *tile_name, char *out, size_t cap);

/*
 * Asks the disk, without waiting, for the whole blocks that hold bytes
 * [offset, offset + length) of data_fd: a cold range then comes in one
 * read, not TILECRC_IO_BYTES at a time behind the readahead window's ramp
 * as tilecrc_verify() reads it.
 */
void tilecrc_read_ahead(int data_fd, uint64_t offset, uint64_t length);

/*
 * Checks the blocks that hold bytes [offset, offset + length) of data_fd
 * (a file of data_bytes; the range is cut at its end) against *crc.
 * `served`, when not NULL, holds the file's bytes from `offset` on as read
 * already (served_len of them): whole blocks inside it are summed from
 * there instead of being read again. 0 or -EBADMSG (or a read's -errno).
 */
int tilecrc_verify(int data_fd, uint64_t data_bytes, const struct tilecrc *crc, uint64_t offset,
                   uint64_t length, const uint8_t *served, size_t served_len);

/*
 * A write's bytes summed in one pass (tilecrc_sum_payload()): `whole`, the
 * CRC-32C of all len bytes (what the writer's crc must be), and for every
 * block that starts inside the write, the CRC of its part of the bytes
 * (crcs[b - first_block]), which tilecrc_update() takes instead of summing
 * those bytes again.
 */
struct tilecrc_payload {
    uint64_t offset;
    size_t len;
    size_t summed; /* bytes summed so far (tilecrc_sum_next()) */
    uint32_t whole;
    uint32_t first_block;
    uint32_t count;
    uint32_t crcs[TILECRC_MAX_BLOCKS];
};

/*
 * Sums len bytes of data to be written at offset of a tile (offset + len
 * within TS_MAX_DATA_BYTES: the caller checked) into *sums.
 */
void tilecrc_sum_payload(uint64_t offset, const uint8_t *data, size_t len,
                         struct tilecrc_payload *sums);

/*
 * The same sums taken piece by piece as the bytes arrive, each piece summed
 * while it is still in the CPU's cache: tilecrc_sum_begin() for a write of
 * len bytes at offset; then while summed < len, tilecrc_sum_next_len()
 * bytes (up to the next TILECRC_IO_BYTES boundary: one receive, many
 * blocks) go to tilecrc_sum_next().
 */
void tilecrc_sum_begin(uint64_t offset, size_t len, struct tilecrc_payload *sums);
size_t tilecrc_sum_next_len(const struct tilecrc_payload *sums);
void tilecrc_sum_next(struct tilecrc_payload *sums, const uint8_t *piece);

/*
 * Updates *crc for a change of the file from old_size to new_size bytes in
 * which [offset, offset + len) gets `data` (len 0 and data NULL for a
 * truncation: then offset is new_size): called before the file changes.
 * A block the change keeps part of is read back and checked against its
 * old CRC first: -EBADMSG then, and *crc is left as it was. sums, when not
 * NULL, are those of exactly this data (the blocks it wholly replaces take
 * theirs from it).
 */
int tilecrc_update(int data_fd, uint64_t old_size, uint64_t new_size, uint64_t offset,
                   const uint8_t *data, size_t len, const struct tilecrc_payload *sums,
                   struct tilecrc *crc);

#endif
