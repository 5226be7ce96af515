/*
 * @file tilecrc.c
 * See tilecrc.h. A sidecar is at most TILECRC_HEADER_BYTES + 4 *
 * TILECRC_MAX_BLOCKS (1 KiB of CRCs for a 16 MiB tile), so it is always
 * read and written whole, in one call: no partial sidecar state exists in
 * memory. Blocks read back (a partial block of a write, the edges of a
 * read) go through a 64 KiB buffer of the call's own.
 */
#include "tilecrc.h"

#include "crc32c.h"

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
    while (done < len) {
        ssize_t got = pread(fd, buf + done, len - done, (off_t)(offset + done));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return tilecrc_errno();
        if (got == 0)
            return -EBADMSG;
        done += (size_t)got;
    }
    return 0;
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

int tilecrc_load(int dir_fd, const char *tile_name, uint64_t data_bytes,
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
    /* A header torn or never made durable by a crash: rebuilt, not trusted. */
    if (cursor.failed || magic != TILECRC_MAGIC || format != TILECRC_FORMAT ||
        block_bytes != TILECRC_BLOCK_BYTES || blocks > TILECRC_MAX_BLOCKS ||
        header_crc != crc32c(0, file, TILECRC_HEADER_BYTES - 4) ||
        (size_t)got < TILECRC_HEADER_BYTES + 4 * (size_t)blocks || tilecrc_run_suspect(trust, run))
        return 1;
    if (blocks != tilecrc_blocks_for(data_bytes))
        return -EBADMSG;
    crc->blocks = blocks;
    crc->run = run;
    for (uint32_t b = 0; b < blocks; b++)
        crc->crcs[b] = ts_cursor_u32(&cursor);
    return 0;
}

int tilecrc_rebuild(int data_fd, uint64_t data_bytes, struct tilecrc *crc)
{
    if (data_bytes > TS_MAX_DATA_BYTES)
        return -EFBIG;
    uint8_t *block = malloc(TILECRC_BLOCK_BYTES);
    if (!block)
        return -ENOMEM;
    int rc = 0;
    crc->blocks = tilecrc_blocks_for(data_bytes);
    crc->run = 0;
    for (uint32_t b = 0; b < crc->blocks && rc == 0; b++) {
        uint64_t start = (uint64_t)b * TILECRC_BLOCK_BYTES;
        size_t len = data_bytes - start < TILECRC_BLOCK_BYTES ? (size_t)(data_bytes - start)
                                                              : TILECRC_BLOCK_BYTES;
        rc = tilecrc_pread_all(data_fd, block, len, start);
        if (rc == 0)
            crc->crcs[b] = crc32c(0, block, len);
    }
    free(block);
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

int tilecrc_verify(int data_fd, uint64_t data_bytes, const struct tilecrc *crc, uint64_t offset,
                   uint64_t length, const uint8_t *served, size_t served_len)
{
    struct tilecrc_span span;
    uint8_t *block = NULL;
    int rc = tilecrc_span_of(crc, data_bytes, offset, length, &span);

    if (rc <= 0)
        return rc;
    rc = 0;
    for (uint32_t b = span.first; b <= span.last && rc == 0; b++) {
        uint64_t start = (uint64_t)b * TILECRC_BLOCK_BYTES;
        size_t len = tilecrc_block_len(b, data_bytes);
        uint32_t sum;
        if (served && start >= offset && start + len <= offset + served_len) {
            sum = crc32c(0, served + (start - offset), len);
        } else {
            if (!block && !(block = malloc(TILECRC_BLOCK_BYTES))) {
                rc = -ENOMEM;
                break;
            }
            rc = tilecrc_pread_all(data_fd, block, len, start);
            if (rc != 0)
                break;
            sum = crc32c(0, block, len);
        }
        if (sum != crc->crcs[b])
            rc = -EBADMSG;
    }
    free(block);
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
    uint64_t boundary = (at / TILECRC_BLOCK_BYTES + 1) * TILECRC_BLOCK_BYTES;
    size_t left = sums->len - sums->summed;
    return boundary - at < left ? (size_t)(boundary - at) : left;
}

void tilecrc_sum_next(struct tilecrc_payload *sums, const uint8_t *piece)
{
    size_t len = tilecrc_sum_next_len(sums);
    uint32_t crc = crc32c(0, piece, len);
    /* A piece that starts a block is that block's part of the write; one
     * before the first boundary is not a block's at all. */
    if ((sums->offset + sums->summed) % TILECRC_BLOCK_BYTES == 0)
        sums->crcs[sums->count++] = crc;
    sums->whole = crc32c_combine(sums->whole, crc, len);
    sums->summed += len;
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
