/*
 * @file fences.c
 * See fences.h. Frozen files are a small array with their lease ends
 * (a move freezes a handful at a time); expired entries are dropped
 * whenever the array is looked at, so an empty array — the usual case —
 * costs a write nothing. Retired files are an open-addressing hash set
 * (linear probing, at most half full; ino 0 marks a free slot, as no tile
 * has inode 0), since they only accumulate.
 *
 * Invariants: every retirement in the set was fsync'd to the file first;
 * the file's length is a multiple of FENCES_RECORD_BYTES after open (a torn
 * tail is cut off), so each append lands on a record boundary.
 */
#include "fences.h"

#include "crc32c.h"
#include "log.h"
#include "proto.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FENCES_FILE_MODE 0600
#define FENCES_MIN_SLOTS 64u

struct fences_key {
    uint64_t ino;
    uint64_t tile;
    uint64_t version;
};

struct fences_frozen {
    struct fences_key key;
    int64_t until_ms;
};

struct fences {
    int fd; /* DATA/fences.retired, appended to */
    char path[4096];
    struct fences_frozen *frozen;
    uint32_t frozen_count;
    uint32_t frozen_cap;
    struct fences_key *retired; /* slots; ino 0 = free */
    uint64_t retired_slots;     /* a power of two */
    uint64_t retired_count;
};

static bool fences_key_equal(const struct fences_key *a, const struct fences_key *b)
{
    return a->ino == b->ino && a->tile == b->tile && a->version == b->version;
}

static uint64_t fences_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t fences_hash(const struct fences_key *key)
{
    return fences_mix(key->ino ^ fences_mix(key->tile ^ fences_mix(key->version)));
}

/* The slot holding key, or the free slot where it would go. */
static struct fences_key *fences_slot(struct fences_key *slots, uint64_t slot_count,
                                      const struct fences_key *key)
{
    uint64_t mask = slot_count - 1;
    for (uint64_t at = fences_hash(key) & mask;; at = (at + 1) & mask) {
        if (slots[at].ino == 0 || fences_key_equal(&slots[at], key))
            return &slots[at];
    }
}

/* Makes room for one more retirement; 0 or -ENOMEM. */
static int fences_reserve(struct fences *fences)
{
    uint64_t slots = fences->retired_slots;
    if (slots != 0 && (fences->retired_count + 1) * 2 <= slots)
        return 0;
    uint64_t new_slots = slots ? slots * 2 : FENCES_MIN_SLOTS;
    struct fences_key *table = calloc(new_slots, sizeof(*table));
    if (!table)
        return -ENOMEM;
    for (uint64_t i = 0; i < slots; i++) {
        if (fences->retired[i].ino != 0)
            *fences_slot(table, new_slots, &fences->retired[i]) = fences->retired[i];
    }
    free(fences->retired);
    fences->retired = table;
    fences->retired_slots = new_slots;
    return 0;
}

static bool fences_is_retired(const struct fences *fences, const struct fences_key *key)
{
    if (fences->retired_count == 0)
        return false;
    return fences_slot(fences->retired, fences->retired_slots, key)->ino != 0;
}

/* Adds key to the set (room reserved); returns false if it was there. */
static bool fences_insert(struct fences *fences, const struct fences_key *key)
{
    struct fences_key *slot = fences_slot(fences->retired, fences->retired_slots, key);
    if (slot->ino != 0)
        return false;
    *slot = *key;
    fences->retired_count++;
    return true;
}

static void fences_encode(const struct fences_key *key, uint8_t record[FENCES_RECORD_BYTES])
{
    struct ts_writer writer;
    ts_writer_init(&writer, record, FENCES_RECORD_BYTES);
    ts_writer_u64(&writer, key->ino);
    ts_writer_u64(&writer, key->tile);
    ts_writer_u64(&writer, key->version);
    ts_writer_u32(&writer, crc32c(0, record, 24));
}

/* Decodes a record; false if its checksum or inode is wrong. */
static bool fences_decode(const uint8_t *record, struct fences_key *key)
{
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, record, FENCES_RECORD_BYTES);
    key->ino = ts_cursor_u64(&cursor);
    key->tile = ts_cursor_u64(&cursor);
    key->version = ts_cursor_u64(&cursor);
    uint32_t stored = ts_cursor_u32(&cursor);
    return !cursor.failed && stored == crc32c(0, record, 24) && key->ino != 0;
}

/* Reads every record of the open file into the set, cutting off a torn tail. */
static int fences_load(struct fences *fences)
{
    uint8_t record[FENCES_RECORD_BYTES];
    struct stat st;
    uint64_t offset = 0;

    if (fstat(fences->fd, &st) != 0)
        return -errno;
    uint64_t size = (uint64_t)st.st_size;
    uint64_t whole = size - size % FENCES_RECORD_BYTES;
    while (offset < whole) {
        struct fences_key key;
        ssize_t got = pread(fences->fd, record, sizeof(record), (off_t)offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        if ((size_t)got != sizeof(record))
            return -EIO; /* the file shrank under us */
        offset += FENCES_RECORD_BYTES;
        if (!fences_decode(record, &key)) {
            log_warn("%s: ignoring the damaged record at byte %" PRIu64
                     " (checksum does not match); the tile it retired, if any, is served again",
                     fences->path, offset - FENCES_RECORD_BYTES);
            continue;
        }
        int rc = fences_reserve(fences);
        if (rc != 0)
            return rc;
        fences_insert(fences, &key);
    }
    if (whole != size) {
        log_warn("%s: ignoring a torn record of %" PRIu64 " bytes at its end (a crash while "
                 "retiring a tile, whose retirement was never acknowledged); cutting it off",
                 fences->path, size - whole);
        if (ftruncate(fences->fd, (off_t)whole) != 0 || fsync(fences->fd) != 0)
            return -errno;
    }
    return 0;
}

int fences_open(const char *data_dir, struct fences **fencesp)
{
    struct fences *fences;
    struct stat st;
    bool created;
    int rc;

    *fencesp = NULL;
    fences = calloc(1, sizeof(*fences));
    if (!fences)
        return -ENOMEM;
    fences->fd = -1;
    if ((size_t)snprintf(fences->path, sizeof(fences->path), "%s/%s", data_dir,
                         FENCES_RETIRED_FILE) >= sizeof(fences->path)) {
        rc = -ENAMETOOLONG;
        goto fail;
    }
    created = stat(fences->path, &st) != 0 && errno == ENOENT;
    fences->fd = open(fences->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, FENCES_FILE_MODE);
    if (fences->fd < 0) {
        rc = -errno;
        goto fail;
    }
    if (created) {
        /* The name must be durable before a retirement in it is acknowledged. */
        rc = util_fsync_dir(data_dir);
        if (rc != 0)
            goto fail;
    }
    rc = fences_load(fences);
    if (rc != 0)
        goto fail;
    *fencesp = fences;
    return 0;
fail:
    fences_close(&fences);
    return rc;
}

void fences_close(struct fences **fencesp)
{
    if (!fencesp || !*fencesp)
        return;
    struct fences *fences = *fencesp;
    if (fences->fd >= 0)
        close(fences->fd);
    free(fences->frozen);
    free(fences->retired);
    free(fences);
    *fencesp = NULL;
}

/* Drops the freezes whose lease ended by now_ms. */
static void fences_expire(struct fences *fences, int64_t now_ms)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < fences->frozen_count; i++) {
        if (fences->frozen[i].until_ms > now_ms)
            fences->frozen[kept++] = fences->frozen[i];
    }
    fences->frozen_count = kept;
}

static struct fences_frozen *fences_find_frozen(struct fences *fences, const struct fences_key *key)
{
    for (uint32_t i = 0; i < fences->frozen_count; i++) {
        if (fences_key_equal(&fences->frozen[i].key, key))
            return &fences->frozen[i];
    }
    return NULL;
}

int fences_freeze(struct fences *fences, uint64_t ino, uint64_t tile, uint64_t version,
                  uint32_t lease_ms, int64_t now_ms)
{
    struct fences_key key = {ino, tile, version};
    struct fences_frozen *entry;

    if (ino == 0)
        return -EINVAL;
    if (lease_ms == 0)
        lease_ms = FENCES_DEFAULT_LEASE_MS;
    if (lease_ms > FENCES_MAX_LEASE_MS)
        lease_ms = FENCES_MAX_LEASE_MS;
    fences_expire(fences, now_ms);
    entry = fences_find_frozen(fences, &key);
    if (!entry) {
        if (fences->frozen_count >= FENCES_MAX_FROZEN)
            return -EBUSY;
        if (fences->frozen_count == fences->frozen_cap) {
            uint32_t cap = fences->frozen_cap ? fences->frozen_cap * 2 : 16;
            struct fences_frozen *grown = realloc(fences->frozen, cap * sizeof(*grown));
            if (!grown)
                return -ENOMEM;
            fences->frozen = grown;
            fences->frozen_cap = cap;
        }
        entry = &fences->frozen[fences->frozen_count++];
        entry->key = key;
    }
    entry->until_ms = now_ms + (int64_t)lease_ms;
    return 0;
}

void fences_lift(struct fences *fences, uint64_t ino, uint64_t tile, uint64_t version)
{
    struct fences_key key = {ino, tile, version};
    struct fences_frozen *entry = fences_find_frozen(fences, &key);
    if (entry)
        *entry = fences->frozen[--fences->frozen_count];
}

int fences_retire(struct fences *fences, uint64_t ino, uint64_t tile, uint64_t version)
{
    struct fences_key key = {ino, tile, version};
    uint8_t record[FENCES_RECORD_BYTES];
    struct stat st;
    int rc;

    if (ino == 0)
        return -EINVAL;
    if (fences_is_retired(fences, &key))
        return 0;
    rc = fences_reserve(fences);
    if (rc != 0)
        return rc;
    if (fstat(fences->fd, &st) != 0)
        return -errno;
    fences_encode(&key, record);
    ssize_t written = write(fences->fd, record, sizeof(record));
    if (written != (ssize_t)sizeof(record)) {
        rc = written < 0 ? -errno : -EIO;
        /* Never leave a torn record for the next append to follow. */
        if (ftruncate(fences->fd, st.st_size) != 0)
            log_warn("%s: cannot cut off a failed append: %s", fences->path, strerror(errno));
        return rc == -EDQUOT ? -ENOSPC : rc;
    }
    if (fsync(fences->fd) != 0) {
        rc = -errno;
        if (ftruncate(fences->fd, st.st_size) != 0)
            log_warn("%s: cannot cut off an unsynced append: %s", fences->path, strerror(errno));
        return rc;
    }
    fences_insert(fences, &key);
    return 0;
}

enum fences_state fences_check(struct fences *fences, uint64_t ino, uint64_t tile, uint64_t version,
                               int64_t now_ms)
{
    struct fences_key key = {ino, tile, version};
    if (fences_is_retired(fences, &key))
        return FENCES_RETIRED;
    if (fences->frozen_count == 0)
        return FENCES_OPEN;
    fences_expire(fences, now_ms);
    return fences_find_frozen(fences, &key) ? FENCES_FROZEN : FENCES_OPEN;
}

uint64_t fences_retired_count(const struct fences *fences)
{
    return fences->retired_count;
}

uint32_t fences_frozen_count(struct fences *fences, int64_t now_ms)
{
    fences_expire(fences, now_ms);
    return fences->frozen_count;
}
