/*
 * @file tilecrc.c
 * See tilecrc.h. A sidecar is at most TILECRC_HEADER_BYTES + 4 *
 * TILECRC_MAX_BLOCKS (16 KiB of CRCs for a 16 MiB tile), so it is always
 * read and written whole, in one call: no partial sidecar state exists in
 * memory. Bytes read back to be summed (a partial block of a write, the
 * parts of a read the caller has not read) go through a TILECRC_IO_BYTES
 * buffer of the call's own, many blocks to one read.
 */
#include "tilecrc.h"

#include "crc32c.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TILECRC_MAGIC 0x43524354u /* "TCRC" */
#define TILECRC_FORMAT 1
#define TILECRC_FILE_MODE 0600
#define TILECRC_FILE_MAX (TILECRC_HEADER_BYTES + 4 * TILECRC_MAX_BLOCKS)

uint32_t tilecrc_blocks_for(uint64_t bytes)
{
    return (uint32_t)((bytes + TILECRC_BLOCK_BYTES - 1) / TILECRC_BLOCK_BYTES);
}

int tilecrc_name(const char *tile_name, char *out, size_t cap)
{
    int len = snprintf(out, cap, "%s" TILECRC_SUFFIX, tile_name);
    return len < 0 || (size_t)len >= cap ? -ENAMETOOLONG : 0;
}

static int tilecrc_errno(void)
{
    return errno ? -errno : -EIO;
}

/* Reads exactly len bytes at offset; a short file is -EBADMSG (it shrank behind us). */
static int tilecrc_pread_all(int fd, uint8_t *buf, size_t len, uint64_t offset)
{
    size_t done = 0;
    int rc = util_pread_upto(fd, buf, len, offset, &done);
    if (rc != 0)
        return rc;
    return done < len ? -EBADMSG : 0;
}

static bool tilecrc_run_suspect(const struct tilecrc_trust *trust, uint64_t run)
{
    for (size_t i = 0; i < trust->suspect_count; i++) {
        if (trust->suspect_runs[i] == run)
            return true;
    }
    /* From a future run: the runs file was lost; before trust_from_run: it was damaged. */
    return run > trust->current_run || run < trust->trust_from_run;
}

/*
 * The 4 KiB CRCs of a file whose sidecar has old_blocks CRCs of
 * old_block_bytes each (a multiple of TILECRC_BLOCK_BYTES): every old
 * block is read, its 4 KiB pieces summed, and their CRCs combined must
 * give the old block's CRC (-EBADMSG otherwise), so the new CRCs vouch for
 * exactly the bytes the old ones did.
 */
static int tilecrc_convert(int data_fd, uint64_t data_bytes, uint32_t old_block_bytes,
                           const uint32_t *old_crcs, uint32_t old_blocks, struct tilecrc *crc)
{
    uint8_t *chunk = malloc(TILECRC_OLD_BLOCK_MAX);
    if (!chunk)
        return -ENOMEM;
    int rc = 0;
    crc->blocks = tilecrc_blocks_for(data_bytes);
    crc->run = 0;
    for (uint32_t old = 0; old < old_blocks && rc == 0; old++) {
        uint64_t start = (uint64_t)old * old_block_bytes;
        size_t len =
            data_bytes - start < old_block_bytes ? (size_t)(data_bytes - start) : old_block_bytes;
        rc = tilecrc_pread_all(data_fd, chunk, len, start);
        uint32_t whole = 0;
        for (size_t at = 0; rc == 0 && at < len; at += TILECRC_BLOCK_BYTES) {
            size_t piece = len - at < TILECRC_BLOCK_BYTES ? len - at : TILECRC_BLOCK_BYTES;
            uint32_t sum = crc32c(0, chunk + at, piece);
            crc->crcs[(start + at) / TILECRC_BLOCK_BYTES] = sum;
            whole = crc32c_combine(whole, sum, piece);
        }
        if (rc == 0 && whole != old_crcs[old])
            rc = -EBADMSG;
    }
    free(chunk);
    return rc;
}

int tilecrc_load(int dir_fd, const char *tile_name, int data_fd, uint64_t data_bytes,
                 const struct tilecrc_trust *trust, struct tilecrc *crc)
{
    char name[128];
    uint8_t file[TILECRC_FILE_MAX];
    int rc = tilecrc_name(tile_name, name, sizeof(name));
    if (rc != 0)
        return rc;
    int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 1 : tilecrc_errno();
    ssize_t got;
    do {
        got = pread(fd, file, sizeof(file), 0);
    } while (got < 0 && errno == EINTR);
    rc = got < 0 ? tilecrc_errno() : 0;
    close(fd);
    if (rc != 0)
        return rc;

    struct ts_cursor cursor;
    ts_cursor_init(&cursor, file, (size_t)got);
    uint32_t magic = ts_cursor_u32(&cursor);
    uint16_t format = ts_cursor_u16(&cursor);
    (void)ts_cursor_u16(&cursor);
    uint32_t block_bytes = ts_cursor_u32(&cursor);
    uint32_t blocks = ts_cursor_u32(&cursor);
    uint64_t run = ts_cursor_u64(&cursor);
    (void)ts_cursor_u32(&cursor);
    uint32_t header_crc = ts_cursor_u32(&cursor);
    bool known_blocks =
        block_bytes == TILECRC_BLOCK_BYTES ||
        (block_bytes > TILECRC_BLOCK_BYTES && block_bytes <= TILECRC_OLD_BLOCK_MAX &&
         block_bytes % TILECRC_BLOCK_BYTES == 0);
    /* A header torn or never made durable by a crash: rebuilt, not trusted. */
    if (cursor.failed || magic != TILECRC_MAGIC || format != TILECRC_FORMAT || !known_blocks ||
        blocks > TILECRC_MAX_BLOCKS || header_crc != crc32c(0, file, TILECRC_HEADER_BYTES - 4) ||
        (size_t)got < TILECRC_HEADER_BYTES + 4 * (size_t)blocks || tilecrc_run_suspect(trust, run))
        return 1;
    /* Larger than any tile (an old sidecar's count allows 256 MiB): changed behind our back. */
    if ((uint64_t)blocks != (data_bytes + block_bytes - 1) / block_bytes ||
        data_bytes > TS_MAX_DATA_BYTES)
        return -EBADMSG;
    if (block_bytes != TILECRC_BLOCK_BYTES) {
        uint32_t old_crcs[TILECRC_MAX_BLOCKS];
        for (uint32_t b = 0; b < blocks; b++)
            old_crcs[b] = ts_cursor_u32(&cursor);
        return tilecrc_convert(data_fd, data_bytes, block_bytes, old_crcs, blocks, crc);
    }
    crc->blocks = blocks;
    crc->run = run;
    for (uint32_t b = 0; b < blocks; b++)
        crc->crcs[b] = ts_cursor_u32(&cursor);
    return 0;
}

struct tilecrc *tilecrc_dup(const struct tilecrc *from)
{
    size_t bytes = offsetof(struct tilecrc, crcs) + sizeof(from->crcs[0]) * from->blocks;
    struct tilecrc *to = malloc(bytes);
    if (to)
        memcpy(to, from, bytes);
    return to;
}

int tilecrc_rebuild(int data_fd, uint64_t data_bytes, struct tilecrc *crc)
{
    if (data_bytes > TS_MAX_DATA_BYTES)
        return -EFBIG;
    uint8_t *chunk = malloc(TILECRC_IO_BYTES);
    if (!chunk)
        return -ENOMEM;
    int rc = 0;
    crc->blocks = tilecrc_blocks_for(data_bytes);
    crc->run = 0;
    for (uint64_t start = 0; start < data_bytes && rc == 0; start += TILECRC_IO_BYTES) {
        size_t len =
            data_bytes - start < TILECRC_IO_BYTES ? (size_t)(data_bytes - start) : TILECRC_IO_BYTES;
        rc = tilecrc_pread_all(data_fd, chunk, len, start);
        for (size_t at = 0; rc == 0 && at < len; at += TILECRC_BLOCK_BYTES)
            crc->crcs[(start + at) / TILECRC_BLOCK_BYTES] = crc32c(
                0, chunk + at, len - at < TILECRC_BLOCK_BYTES ? len - at : TILECRC_BLOCK_BYTES);
    }
    free(chunk);
    return rc;
}

int tilecrc_store(int dir_fd, const char *tile_name, const struct tilecrc *crc, uint64_t run,
                  bool sync)
{
    char name[128];
    uint8_t file[TILECRC_FILE_MAX];
    struct ts_writer writer;
    int rc = tilecrc_name(tile_name, name, sizeof(name));
    if (rc != 0)
        return rc;
    ts_writer_init(&writer, file, sizeof(file));
    ts_writer_u32(&writer, TILECRC_MAGIC);
    ts_writer_u16(&writer, TILECRC_FORMAT);
    ts_writer_u16(&writer, 0);
    ts_writer_u32(&writer, TILECRC_BLOCK_BYTES);
    ts_writer_u32(&writer, crc->blocks);
    ts_writer_u64(&writer, run);
    ts_writer_u32(&writer, 0);
    ts_writer_u32(&writer, crc32c(0, file, TILECRC_HEADER_BYTES - 4));
    for (uint32_t b = 0; b < crc->blocks; b++)
        ts_writer_u32(&writer, crc->crcs[b]);
    if (writer.failed)
        return -EINVAL;

    int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, TILECRC_FILE_MODE);
    if (fd < 0)
        return tilecrc_errno();
    const uint8_t *at = file;
    size_t left = writer.len;
    off_t offset = 0;
    while (left > 0 && rc == 0) {
        ssize_t put = pwrite(fd, at, left, offset);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0) {
            rc = put < 0 ? tilecrc_errno() : -EIO;
            break;
        }
        at += put;
        left -= (size_t)put;
        offset += put;
    }
    /* A shrunk tile's sidecar loses its old tail. */
    if (rc == 0 && ftruncate(fd, (off_t)writer.len) != 0)
        rc = tilecrc_errno();
    if (rc == 0 && sync && fdatasync(fd) != 0)
        rc = tilecrc_errno();
    close(fd);
    return rc;
}

int tilecrc_remove(int dir_fd, const char *tile_name)
{
    char name[128];
    int rc = tilecrc_name(tile_name, name, sizeof(name));
    if (rc != 0)
        return rc;
    if (unlinkat(dir_fd, name, 0) != 0 && errno != ENOENT)
        return tilecrc_errno();
    return 0;
}

/* The length of block b of a file of `bytes` bytes (0 past its end). */
static size_t tilecrc_block_len(uint32_t b, uint64_t bytes)
{
    uint64_t start = (uint64_t)b * TILECRC_BLOCK_BYTES;
    if (start >= bytes)
        return 0;
    return bytes - start < TILECRC_BLOCK_BYTES ? (size_t)(bytes - start) : TILECRC_BLOCK_BYTES;
}

/* The blocks that hold bytes [offset, end) of a file. */
struct tilecrc_span {
    uint64_t end;
    uint32_t first;
    uint32_t last;
};

/*
 * The span of [offset, offset + length) of a file of data_bytes (cut at
 * its end): 1, or 0 when it holds no byte, or -EBADMSG when *crc has
 * fewer blocks than the span needs.
 */
static int tilecrc_span_of(const struct tilecrc *crc, uint64_t data_bytes, uint64_t offset,
                           uint64_t length, struct tilecrc_span *span)
{
    if (offset >= data_bytes || length == 0)
        return 0;
    span->end = length > data_bytes - offset ? data_bytes : offset + length;
    span->first = (uint32_t)(offset / TILECRC_BLOCK_BYTES);
    span->last = (uint32_t)((span->end - 1) / TILECRC_BLOCK_BYTES);
    return span->last >= crc->blocks ? -EBADMSG : 1;
}

void tilecrc_read_ahead(int data_fd, uint64_t offset, uint64_t length)
{
    uint64_t start = offset / TILECRC_BLOCK_BYTES * TILECRC_BLOCK_BYTES;
    uint64_t end = (uint64_t)tilecrc_blocks_for(offset + length) * TILECRC_BLOCK_BYTES;
    (void)posix_fadvise(data_fd, (off_t)start, (off_t)(end - start), POSIX_FADV_WILLNEED);
}

/* Whether block b (start, len) is wholly within the caller's bytes. */
static bool tilecrc_block_served(uint64_t start, size_t len, uint64_t offset, size_t served_len)
{
    return start >= offset && start + len <= offset + served_len;
}

int tilecrc_verify(int data_fd, uint64_t data_bytes, const struct tilecrc *crc, uint64_t offset,
                   uint64_t length, const uint8_t *served, size_t served_len)
{
    struct tilecrc_span span;
    uint8_t *chunk = NULL;
    uint64_t chunk_start = 0; /* the file's bytes [chunk_start, chunk_end) are in chunk */
    uint64_t chunk_end = 0;
    int rc = tilecrc_span_of(crc, data_bytes, offset, length, &span);

    if (rc <= 0)
        return rc;
    if (!served)
        served_len = 0;
    rc = 0;
    for (uint32_t b = span.first; b <= span.last && rc == 0; b++) {
        uint64_t start = (uint64_t)b * TILECRC_BLOCK_BYTES;
        size_t len = tilecrc_block_len(b, data_bytes);
        const uint8_t *bytes;
        if (tilecrc_block_served(start, len, offset, served_len)) {
            bytes = served + (start - offset);
        } else {
            if (start + len > chunk_end) {
                /* This block and the unserved ones after it, in one read. */
                uint64_t end = start + len;
                for (uint32_t next = b + 1; next <= span.last; next++) {
                    uint64_t next_start = (uint64_t)next * TILECRC_BLOCK_BYTES;
                    size_t next_len = tilecrc_block_len(next, data_bytes);
                    if (next_start + next_len - start > TILECRC_IO_BYTES ||
                        tilecrc_block_served(next_start, next_len, offset, served_len))
                        break;
                    end = next_start + next_len;
                }
                if (!chunk && !(chunk = malloc(TILECRC_IO_BYTES))) {
                    rc = -ENOMEM;
                    break;
                }
                rc = tilecrc_pread_all(data_fd, chunk, (size_t)(end - start), start);
                if (rc != 0)
                    break;
                chunk_start = start;
                chunk_end = end;
            }
            bytes = chunk + (start - chunk_start);
        }
        if (crc32c(0, bytes, len) != crc->crcs[b])
            rc = -EBADMSG;
    }
    free(chunk);
    return rc;
}

void tilecrc_sum_begin(uint64_t offset, size_t len, struct tilecrc_payload *sums)
{
    uint64_t aligned = (offset + TILECRC_BLOCK_BYTES - 1) / TILECRC_BLOCK_BYTES * TILECRC_BLOCK_BYTES;
    sums->offset = offset;
    sums->len = len;
    sums->summed = 0;
    sums->first_block = (uint32_t)(aligned / TILECRC_BLOCK_BYTES);
    sums->count = 0;
    sums->whole = 0;
}

size_t tilecrc_sum_next_len(const struct tilecrc_payload *sums)
{
    uint64_t at = sums->offset + sums->summed;
    uint64_t boundary = (at / TILECRC_IO_BYTES + 1) * TILECRC_IO_BYTES;
    size_t left = sums->len - sums->summed;
    return boundary - at < left ? (size_t)(boundary - at) : left;
}

void tilecrc_sum_next(struct tilecrc_payload *sums, const uint8_t *piece)
{
    size_t piece_len = tilecrc_sum_next_len(sums);
    size_t done = 0;
    while (done < piece_len) {
        uint64_t at = sums->offset + sums->summed;
        size_t len = (size_t)((at / TILECRC_BLOCK_BYTES + 1) * TILECRC_BLOCK_BYTES - at);
        if (len > piece_len - done)
            len = piece_len - done;
        uint32_t crc = crc32c(0, piece + done, len);
        /* A part that starts a block is that block's part of the write; one
         * before the first boundary is not a block's at all. */
        if (at % TILECRC_BLOCK_BYTES == 0)
            sums->crcs[sums->count++] = crc;
        sums->whole = crc32c_combine(sums->whole, crc, len);
        sums->summed += len;
        done += len;
    }
}

void tilecrc_sum_payload(uint64_t offset, const uint8_t *data, size_t len,
                         struct tilecrc_payload *sums)
{
    tilecrc_sum_begin(offset, len, sums);
    while (sums->summed < len)
        tilecrc_sum_next(sums, data + sums->summed);
}

int tilecrc_update(int data_fd, uint64_t old_size, uint64_t new_size, uint64_t offset,
                   const uint8_t *data, size_t len, const struct tilecrc_payload *sums,
                   struct tilecrc *crc)
{
    uint32_t old_blocks = tilecrc_blocks_for(old_size);
    uint32_t new_blocks = tilecrc_blocks_for(new_size);
    uint64_t change = offset < old_size ? offset : old_size;
    uint64_t end = offset + len;
    uint32_t first = (uint32_t)(change / TILECRC_BLOCK_BYTES);
    uint32_t last;
    uint32_t new_sums[TILECRC_MAX_BLOCKS];
    uint8_t *block = NULL;
    int rc = 0;

    if (new_blocks > TILECRC_MAX_BLOCKS || old_blocks != crc->blocks)
        return old_blocks != crc->blocks ? -EBADMSG : -EFBIG;
    if (new_size == 0)
        goto done;
    last = new_size != old_size || len == 0 ? new_blocks - 1 : (uint32_t)((end - 1) / TILECRC_BLOCK_BYTES);
    for (uint32_t b = first; b <= last && b < new_blocks; b++) {
        uint64_t start = (uint64_t)b * TILECRC_BLOCK_BYTES;
        size_t new_len = tilecrc_block_len(b, new_size);
        if (len > 0 && offset <= start && end >= start + new_len) {
            /* All new bytes: summed already when the write was checked. */
            bool summed = sums && sums->offset == offset && sums->len == len &&
                          b >= sums->first_block && b - sums->first_block < sums->count;
            new_sums[b] = summed ? sums->crcs[b - sums->first_block]
                                 : crc32c(0, data + (start - offset), new_len);
            continue;
        }
        if (!block && !(block = malloc(TILECRC_BLOCK_BYTES))) {
            rc = -ENOMEM;
            goto out;
        }
        size_t old_len = b < old_blocks ? tilecrc_block_len(b, old_size) : 0;
        if (old_len > 0) {
            /* Kept bytes must be good before a new CRC vouches for them. */
            rc = tilecrc_pread_all(data_fd, block, old_len, start);
            if (rc == 0 && crc32c(0, block, old_len) != crc->crcs[b])
                rc = -EBADMSG;
            if (rc != 0)
                goto out;
        }
        if (new_len > old_len)
            memset(block + old_len, 0, new_len - old_len); /* never written: zeros */
        if (len > 0 && end > start && offset < start + new_len) {
            uint64_t from = offset > start ? offset : start;
            uint64_t to = end < start + new_len ? end : start + new_len;
            memcpy(block + (from - start), data + (from - offset), (size_t)(to - from));
        }
        new_sums[b] = crc32c(0, block, new_len);
    }
    for (uint32_t b = first; b <= last && b < new_blocks; b++)
        crc->crcs[b] = new_sums[b];
done:
    crc->blocks = new_blocks;
out:
    free(block);
    return rc;
}
