/*
 * @file tilestore.c
 * See tilestore.h. Files are reached with *at() calls relative to one
 * descriptor of DATA/tiles, so a tile's path is always the short
 * "<bucket>/<ino>.<tile>.<version>" built from integers here.
 *
 * Invariants:
 * - tiles and used_bytes are the count and size sum of the tile files: the
 *   walk at open sets them, every change to a file adjusts them by what
 *   fstat says it became (not by what was asked), so a partial failure
 *   cannot make them drift.
 * - only the holder of the handlers' lock (nodehandlers.h: the loop thread or a
 *   stream thread) changes the struct; tilestore_checksum() and
 *   tilestore_install() (background pulls) and tilestore_sync_file(),
 *   tilestore_wait_file() and tilestore_sync_filesystem() (a TILE_SYNC with
 *   the lock released) read tiles_fd and nothing else, and
 *   the file a pull adds is counted later by tilestore_count_installed().
 *   The flusher (flusher.h) has a lock of its own.
 * - bucket_unsynced[b] is set whenever an entry of bucket b is created or
 *   removed and cleared only after that directory was fsync'd; a sync of
 *   any tile in the bucket flushes it, so a new tile's name is durable
 *   before its sync is acknowledged.
 * - Spare files: a deleted tile's file is emptied and kept in DATA/spares
 *   (up to TILESTORE_SPARES_MAX), and a new tile takes one by rename: a new
 *   inode costs a scan of the inode bitmap and table (long on a filesystem
 *   without a journal after many deletes: ext4's recently_deleted()), and a
 *   datanode makes one file per tile. Every file in spares/ (named by an
 *   integer) is empty once tilestore_open() has run (a crash between rename
 *   and truncation leaves a full one, emptied then); spare_ids lists them.
 * - created holds, oldest first from created_head, a record (u64 ino,
 *   u64 tile, u64 version) of every tile file found by the walk at open
 *   and made since (a write that created it, a pull counted in), until the
 *   heartbeat takes it for meta (tilestore_take_created()): meta marks
 *   those tiles written, so that a file missing later is known lost rather
 *   than taken for a hole. 24 bytes a tile while queued.
 */
#include "tilestore.h"

#include "crc32c.h"
#include "flusher.h"
#include "tilecrc.h"
#include "tilehandles.h"
#include "log.h"
#include "proto.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Tiles hold the data of files whose owners may differ: keep them private. */
#define TILESTORE_FILE_MODE 0600
#define TILESTORE_DIR_MODE 0700
/* Staging files: "<bucket>/.<ino>.<tile>.<version>.pull". */
#define TILESTORE_STAGING_SUFFIX ".pull"
/* Emptied tile files kept for reuse (see the invariants above). */
#define TILESTORE_SPARES_MAX 4096
/* Tile writes whose disk writes the flusher may have waiting (flusher.h). */
#define TILESTORE_FLUSH_QUEUE 256
/*
 * Written bytes after which the flusher syncs ahead (flusher.h). 4 streams
 * writing 2 GiB to 4 datanodes measured 8 and 32 MiB alike, both ahead of
 * never; 32 asks a disk whose flushes are slow (spinning) for fewer.
 */
#define TILESTORE_SYNC_AHEAD_BYTES (32ull << 20)
/* DATA/checksum.runs: which datanode runs' sidecars are trusted (tilestore.h). */
#define TILESTORE_RUNS_FILE "checksum.runs"
#define TILESTORE_RUNS_MAGIC 0x534e5552u /* "RUNS" */
/* Crashed runs remembered; older ones are forgotten (their sidecars then pass
 * for clean: a datanode that crashed this often has bigger problems). */
#define TILESTORE_SUSPECT_MAX 64
/* Corrupt tile files remembered for the heartbeat, and so reported once each. */
#define TILESTORE_CORRUPT_MAX 1024
/* What tilestore_checksum() reads at a time. */
#define TILESTORE_CHECKSUM_CHUNK (64u << 10)

struct tilestore {
    int tiles_fd; /* DATA/tiles */
    int lock_fd;  /* DATA/datanode.lock, flock'd while open */
    int spares_fd; /* DATA/spares */
    uint64_t capacity_limit;
    uint64_t tiles;
    uint64_t used_bytes;
    bool tiles_dir_unsynced; /* a bucket was recreated since DATA/tiles was synced */
    bool bucket_unsynced[TILESTORE_BUCKETS];
    tilestore_delete_hook delete_hook;
    void *delete_hook_arg;
    uint32_t spare_ids[TILESTORE_SPARES_MAX]; /* spares/<id>, a stack */
    uint32_t spare_count;
    uint32_t next_spare_id;
    struct flusher *flusher; /* starts the disk writes of written ranges */
    struct tilehandles *handles; /* tile files kept open for the stream's reads */
    uint8_t *created;        /* records not yet taken (see the invariants) */
    size_t created_head;     /* records before it were taken */
    size_t created_count;    /* records in created, taken ones included */
    size_t created_cap;
    bool created_dropped; /* out of memory once: logged */
    int data_fd;          /* DATA, for the runs file */
    uint64_t run;         /* this run's number (tilestore.h: checksums) */
    uint64_t suspect_runs[TILESTORE_SUSPECT_MAX]; /* runs that crashed */
    size_t suspect_count;
    struct tilecrc_trust trust;
    /* Corrupt tile files found: [0, corrupt_taken) reported, the rest not yet. */
    struct ts_tile_file_rec corrupt[TILESTORE_CORRUPT_MAX];
    size_t corrupt_count;
    size_t corrupt_taken;
    uint64_t corrupt_found; /* every detection, repeated ones too */
};

/* Bytes of one created record (TS_REC_TILE_FILE). */
#define TILESTORE_CREATED_BYTES ts_tile_file_rec_bytes

static int tilestore_pwrite_all(int fd, const uint8_t *data, size_t len, uint64_t offset);

/* -errno of the last failure, with a full quota reported as a full disk. */
static int tilestore_errno(void)
{
    int saved = errno;
    if (saved == EDQUOT)
        return -ENOSPC;
    return saved ? -saved : -EIO;
}

static unsigned tilestore_bucket(uint64_t ino)
{
    return (unsigned)(ino % TILESTORE_BUCKETS);
}

/* "<bucket>/<ino>.<tile>.<version>", relative to tiles_fd. */
static void tilestore_name(uint64_t ino, uint64_t tile, uint64_t version,
                           char out[TILESTORE_PATH_MAX])
{
    snprintf(out, TILESTORE_PATH_MAX, "%u/%" PRIu64 ".%" PRIu64 ".%" PRIu64, tilestore_bucket(ino),
             ino, tile, version);
}

int tilestore_path(uint64_t ino, uint64_t tile, uint64_t version, char *out, size_t cap)
{
    char name[TILESTORE_PATH_MAX];
    tilestore_name(ino, tile, version, name);
    int len = snprintf(out, cap, "tiles/%s", name);
    if (len < 0 || (size_t)len >= cap)
        return -ENAMETOOLONG;
    return 0;
}

/* The checks every operation shares: a real inode and a range inside one tile. */
static int tilestore_check(uint64_t ino, uint64_t offset, uint64_t len)
{
    if (ino == 0)
        return -EINVAL;
    if (offset > TS_MAX_DATA_BYTES || len > TS_MAX_DATA_BYTES - offset)
        return -EINVAL;
    return 0;
}

/* Whether growing the stored bytes by `growth` stays within --capacity. */
static bool tilestore_fits(const struct tilestore *store, uint64_t growth)
{
    if (store->capacity_limit == 0 || growth == 0)
        return true;
    return store->used_bytes <= store->capacity_limit &&
           growth <= store->capacity_limit - store->used_bytes;
}

/* Moves used_bytes from a file's old size to its new one. */
static void tilestore_account(struct tilestore *store, uint64_t old_size, uint64_t new_size)
{
    if (new_size >= old_size) {
        store->used_bytes += new_size - old_size;
    } else {
        uint64_t shrink = old_size - new_size;
        store->used_bytes = shrink < store->used_bytes ? store->used_bytes - shrink : 0;
    }
}

/* The size of an open file, or `fallback` if fstat fails (it does not on a live fd). */
static uint64_t tilestore_file_size(int fd, uint64_t fallback)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return fallback;
    return (uint64_t)st.st_size;
}

/*
 * Queues a created record for the heartbeat. Out of memory the record is
 * dropped (logged once): the tile is then never marked written, and a
 * loss of its file reads as a hole, as before records existed.
 */
static void tilestore_note_created(struct tilestore *store, uint64_t ino, uint64_t tile,
                                   uint64_t version)
{
    if (store->created_head > 0 && store->created_head == store->created_count) {
        store->created_head = 0;
        store->created_count = 0;
    }
    if (store->created_count == store->created_cap) {
        size_t cap = store->created_cap ? store->created_cap * 2 : 256;
        uint8_t *grown = realloc(store->created, cap * TILESTORE_CREATED_BYTES);
        if (!grown) {
            if (!store->created_dropped)
                log_warn("out of memory queueing tile %" PRIu64 ".%" PRIu64 ".%" PRIu64
                         " for meta: it will not be known as written",
                         ino, tile, version);
            store->created_dropped = true;
            return;
        }
        store->created = grown;
        store->created_cap = cap;
    }
    struct ts_writer writer;
    ts_writer_init(&writer, store->created + store->created_count * TILESTORE_CREATED_BYTES,
                   TILESTORE_CREATED_BYTES);
    struct ts_tile_file_rec record = {.ino = ino, .tile = tile, .version = version};
    ts_tile_file_rec_write(&writer, &record);
    store->created_count++;
}

uint32_t tilestore_take_created(struct tilestore *store, uint8_t *records, uint32_t max)
{
    size_t left = store->created_count - store->created_head;
    uint32_t taken = left < max ? (uint32_t)left : max;
    if (taken == 0)
        return 0;
    memcpy(records, store->created + store->created_head * TILESTORE_CREATED_BYTES,
           (size_t)taken * TILESTORE_CREATED_BYTES);
    store->created_head += taken;
    if (store->created_head == store->created_count) {
        store->created_head = 0;
        store->created_count = 0;
    } else if (store->created_head >= store->created_cap / 2) {
        /* Keep the queue from creeping along its buffer. */
        memmove(store->created, store->created + store->created_head * TILESTORE_CREATED_BYTES,
                (store->created_count - store->created_head) * TILESTORE_CREATED_BYTES);
        store->created_count -= store->created_head;
        store->created_head = 0;
    }
    return taken;
}

/* ---- checksums: runs, corrupt files, loading a tile's block CRCs ---- */

/*
 * Writes DATA/checksum.runs durably (staged, fsync'd, renamed): run,
 * whether it ended cleanly, and the runs that crashed.
 */
static int tilestore_save_runs(const struct tilestore *store, bool clean)
{
    uint8_t file[32 + 8 * TILESTORE_SUSPECT_MAX];
    struct ts_writer writer;
    ts_writer_init(&writer, file, sizeof(file));
    ts_writer_u32(&writer, TILESTORE_RUNS_MAGIC);
    ts_writer_u32(&writer, clean ? 1 : 0);
    ts_writer_u64(&writer, store->run);
    ts_writer_u32(&writer, (uint32_t)store->suspect_count);
    for (size_t i = 0; i < store->suspect_count; i++)
        ts_writer_u64(&writer, store->suspect_runs[i]);
    ts_writer_u32(&writer, crc32c(0, file, writer.len));
    int fd = openat(store->data_fd, TILESTORE_RUNS_FILE ".new",
                    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, TILESTORE_FILE_MODE);
    if (fd < 0)
        return tilestore_errno();
    int rc = tilestore_pwrite_all(fd, file, writer.len, 0);
    if (rc == 0 && fsync(fd) != 0)
        rc = tilestore_errno();
    close(fd);
    if (rc == 0 && renameat(store->data_fd, TILESTORE_RUNS_FILE ".new", store->data_fd,
                            TILESTORE_RUNS_FILE) != 0)
        rc = tilestore_errno();
    if (rc == 0 && fsync(store->data_fd) != 0)
        rc = tilestore_errno();
    return rc;
}

/*
 * Reads DATA/checksum.runs and starts a new run: the last one is suspect
 * unless it ended cleanly. No file: a store from before checksums (or a new
 * one), whose tiles have no sidecars yet. A damaged file trusts no sidecar
 * older than this run: every run up to the newest a sidecar could name is
 * unknown, so run numbers restart far above them (from the clock).
 */
static int tilestore_start_run(struct tilestore *store)
{
    uint8_t file[32 + 8 * TILESTORE_SUSPECT_MAX];
    ssize_t got = -1;
    int fd = openat(store->data_fd, TILESTORE_RUNS_FILE, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        got = read(fd, file, sizeof(file));
        close(fd);
    } else if (errno != ENOENT) {
        return tilestore_errno();
    }
    store->run = 1;
    if (got >= 0) {
        struct ts_cursor cursor;
        ts_cursor_init(&cursor, file, (size_t)got);
        uint32_t magic = ts_cursor_u32(&cursor);
        uint32_t clean = ts_cursor_u32(&cursor);
        uint64_t last_run = ts_cursor_u64(&cursor);
        uint32_t count = ts_cursor_u32(&cursor);
        for (uint32_t i = 0; i < count && i < TILESTORE_SUSPECT_MAX; i++)
            store->suspect_runs[i] = ts_cursor_u64(&cursor);
        size_t summed = (size_t)got - cursor.left;
        uint32_t sum = ts_cursor_u32(&cursor);
        if (cursor.failed || magic != TILESTORE_RUNS_MAGIC || count > TILESTORE_SUSPECT_MAX ||
            sum != crc32c(0, file, summed)) {
            /* Every sidecar written so far is suspect: rebuilt at first use. */
            log_warn("%s is damaged: the block checksums of every tile are recomputed from its "
                     "bytes when first used",
                     TILESTORE_RUNS_FILE);
            store->suspect_count = 0;
            store->run = ((uint64_t)time(NULL) << 20) + 1;
            store->trust.current_run = store->run;
            store->trust.trust_from_run = store->run;
        } else {
            store->suspect_count = count;
            store->run = last_run + 1;
            if (!clean) {
                if (store->suspect_count == TILESTORE_SUSPECT_MAX) {
                    memmove(store->suspect_runs, store->suspect_runs + 1,
                            (TILESTORE_SUSPECT_MAX - 1) * sizeof(store->suspect_runs[0]));
                    store->suspect_count--;
                }
                store->suspect_runs[store->suspect_count++] = last_run;
                log_info("run %" PRIu64 " of this datanode did not stop cleanly: block checksums "
                         "it wrote are recomputed from the tiles' bytes when first used",
                         last_run);
            }
        }
    }
    store->trust.current_run = store->run;
    store->trust.suspect_runs = store->suspect_runs;
    store->trust.suspect_count = store->suspect_count;
    return tilestore_save_runs(store, false);
}

int tilestore_checkpoint(struct tilestore *store, pthread_mutex_t *lock)
{
    /* Most dirty bytes go out before the lock is taken, so writers wait little. */
    if (syncfs(store->tiles_fd) != 0)
        return tilestore_errno();
    if (lock)
        pthread_mutex_lock(lock);
    uint64_t ended = store->run;
    __atomic_store_n(&store->run, ended + 1, __ATOMIC_RELAXED); /* tilestore_install() reads it */
    store->trust.current_run = store->run;
    if (lock)
        pthread_mutex_unlock(lock);
    /* Nothing is written as `ended` any more: once synced, it is a clean run. */
    int rc = syncfs(store->tiles_fd) != 0 ? tilestore_errno() : 0;
    if (rc == 0 && lock)
        pthread_mutex_lock(lock);
    if (rc == 0) {
        rc = tilestore_save_runs(store, false);
        if (lock)
            pthread_mutex_unlock(lock);
    }
    if (rc != 0) {
        /* The runs file still names an older run as running: `ended` stays
         * suspect after a crash, which is safe. */
        log_warn("checksum checkpoint of run %" PRIu64 " failed: %s", ended, strerror(-rc));
    }
    return rc;
}

/* Remembers a corrupt tile file for the heartbeat, once. */
static void tilestore_note_corrupt(struct tilestore *store, uint64_t ino, uint64_t tile,
                                   uint64_t version)
{
    store->corrupt_found++;
    for (size_t i = 0; i < store->corrupt_count; i++) {
        const struct ts_tile_file_rec *known = &store->corrupt[i];
        if (known->ino == ino && known->tile == tile && known->version == version)
            return;
    }
    log_error("tile file %" PRIu64 ".%" PRIu64 ".%" PRIu64
              " does not match its block checksums: its bytes are not served",
              ino, tile, version);
    if (store->corrupt_count == TILESTORE_CORRUPT_MAX) {
        if (store->corrupt_taken == 0)
            return; /* all still to report: the newest waits for a later detection */
        /* Forget the oldest reported one. */
        memmove(store->corrupt, store->corrupt + 1,
                (TILESTORE_CORRUPT_MAX - 1) * sizeof(store->corrupt[0]));
        store->corrupt_count--;
        store->corrupt_taken--;
    }
    store->corrupt[store->corrupt_count++] =
        (struct ts_tile_file_rec){.ino = ino, .tile = tile, .version = version};
}

/* Forgets a corrupt file that is gone or rewritten whole (a new detection reports it again). */
static void tilestore_forget_corrupt(struct tilestore *store, uint64_t ino, uint64_t tile,
                                     uint64_t version)
{
    for (size_t i = 0; i < store->corrupt_count; i++) {
        const struct ts_tile_file_rec *known = &store->corrupt[i];
        if (known->ino == ino && known->tile == tile && known->version == version) {
            memmove(store->corrupt + i, store->corrupt + i + 1,
                    (store->corrupt_count - i - 1) * sizeof(store->corrupt[0]));
            store->corrupt_count--;
            if (i < store->corrupt_taken)
                store->corrupt_taken--;
            return;
        }
    }
}

uint32_t tilestore_take_corrupt(struct tilestore *store, uint8_t *records, uint32_t max)
{
    struct ts_writer writer;
    uint32_t taken = 0;
    ts_writer_init(&writer, records, (size_t)max * ts_tile_file_rec_bytes);
    while (taken < max && store->corrupt_taken < store->corrupt_count) {
        ts_tile_file_rec_write(&writer, &store->corrupt[store->corrupt_taken++]);
        taken++;
    }
    return taken;
}

uint64_t tilestore_corrupt_found(const struct tilestore *store)
{
    return store->corrupt_found;
}

/*
 * The block CRCs of the open tile file fd (size bytes) named `name`: its
 * trusted sidecar, or, when it has none (a tile from before checksums, or
 * one whose sidecar a crash left untrusted), computed from its bytes and
 * stored as this run's. -EBADMSG (noted as corrupt) when a trusted sidecar
 * does not fit the file.
 */
static int tilestore_load_crc(struct tilestore *store, uint64_t ino, uint64_t tile,
                              uint64_t version, const char *name, int fd, uint64_t size,
                              struct tilecrc *crc)
{
    int rc = tilecrc_load(store->tiles_fd, name, fd, size, &store->trust, crc);
    bool converted = rc == 0 && crc->run == 0;
    bool rebuilt = rc == 1;
    if (rebuilt)
        rc = tilecrc_rebuild(fd, size, crc);
    if (rebuilt || converted) {
        if (rc == 0)
            rc = tilecrc_store(store->tiles_fd, name, crc, store->run, false);
        if (rc == 0) {
            crc->run = store->run;
            log_debug("tile %s: block checksums %s", name,
                      converted ? "of 4 KiB blocks made from its old sidecar's, checked"
                                : "computed from its bytes (no trusted sidecar)");
        }
    }
    if (rc == -EBADMSG)
        tilestore_note_corrupt(store, ino, tile, version);
    return rc;
}

bool tilestore_name_parse(const char *name, uint64_t *ino, uint64_t *tile, uint64_t *version)
{
    uint64_t values[3] = {0, 0, 0};
    const char *at = name;
    for (int part = 0; part < 3; part++) {
        if (*at < '0' || *at > '9')
            return false;
        while (*at >= '0' && *at <= '9') {
            uint64_t digit = (uint64_t)(*at - '0');
            if (values[part] > (UINT64_MAX - digit) / 10)
                return false;
            values[part] = values[part] * 10 + digit;
            at++;
        }
        if (part < 2 && *at++ != '.')
            return false;
    }
    if (*at != '\0')
        return false;
    *ino = values[0];
    *tile = values[1];
    *version = values[2];
    return true;
}

/* "." + a tile name + ".pull": what tilestore_install() stages. */
static bool tilestore_is_staging(const char *name)
{
    char tile_name[TILESTORE_PATH_MAX];
    size_t len = strlen(name);
    uint64_t ino, tile, version;

    if (name[0] != '.' || len < 1 + 5 + sizeof(TILESTORE_STAGING_SUFFIX) - 1 ||
        len - 1 >= sizeof(tile_name) ||
        strcmp(name + len - (sizeof(TILESTORE_STAGING_SUFFIX) - 1), TILESTORE_STAGING_SUFFIX) != 0)
        return false;
    memcpy(tile_name, name + 1, len - 1 - (sizeof(TILESTORE_STAGING_SUFFIX) - 1));
    tile_name[len - 1 - (sizeof(TILESTORE_STAGING_SUFFIX) - 1)] = '\0';
    return tilestore_name_parse(tile_name, &ino, &tile, &version);
}

/* Counts the tile files of one bucket into the store's counters. */
static int tilestore_count_bucket(struct tilestore *store, unsigned bucket)
{
    char bucket_name[16];
    struct dirent *entry;
    DIR *dir;
    int fd;

    snprintf(bucket_name, sizeof(bucket_name), "%u", bucket);
    fd = openat(store->tiles_fd, bucket_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return tilestore_errno();
    dir = fdopendir(fd);
    if (!dir) {
        int rc = tilestore_errno();
        close(fd);
        return rc;
    }
    for (;;) {
        struct stat st;
        uint64_t ino, tile, version;
        entry = readdir(dir);
        if (!entry)
            break;
        if (entry->d_name[0] == '.') {
            if (tilestore_is_staging(entry->d_name)) {
                /* A pull that a crash cut short: its tile never got a name. */
                if (unlinkat(dirfd(dir), entry->d_name, 0) == 0)
                    log_info("removed unfinished pull tiles/%u/%s", bucket, entry->d_name);
                else
                    log_warn("cannot remove unfinished pull tiles/%u/%s: %s", bucket, entry->d_name,
                             strerror(errno));
            }
            continue;
        }
        size_t name_len = strlen(entry->d_name);
        if (name_len > sizeof(TILECRC_SUFFIX) - 1 &&
            strcmp(entry->d_name + name_len - (sizeof(TILECRC_SUFFIX) - 1), TILECRC_SUFFIX) == 0) {
            /* A tile's checksums; without its tile (removed by hand) it only
             * takes room, and would be overwritten by a new tile's anyway. */
            char tile_name[TILESTORE_PATH_MAX];
            size_t tile_len = name_len - (sizeof(TILECRC_SUFFIX) - 1);
            if (tile_len < sizeof(tile_name)) {
                memcpy(tile_name, entry->d_name, tile_len);
                tile_name[tile_len] = '\0';
                if (fstatat(dirfd(dir), tile_name, &st, AT_SYMLINK_NOFOLLOW) != 0 &&
                    errno == ENOENT && unlinkat(dirfd(dir), entry->d_name, 0) == 0)
                    log_info("removed the checksums of a missing tile: tiles/%u/%s", bucket,
                             entry->d_name);
            }
            continue;
        }
        if (!tilestore_name_parse(entry->d_name, &ino, &tile, &version) ||
            tilestore_bucket(ino) != bucket || ino == 0) {
            log_warn("ignoring stray file tiles/%u/%s", bucket, entry->d_name);
            continue;
        }
        if (fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        store->tiles++;
        store->used_bytes += (uint64_t)st.st_size;
        /* Reported again at each start: a report lost with a crash, or
         * made before meta knew to keep it, is made good. */
        tilestore_note_created(store, ino, tile, version);
    }
    closedir(dir);
    return 0;
}

/*
 * Asks the filesystem to place the buckets as it places top-level
 * directories (FS_TOPDIR_FL, `chattr +T`): ext4 then spreads them over block
 * groups with room, instead of putting them next to DATA's parent, where
 * other programs' files come and go. On ext4 without a journal a new inode's
 * search skips, one by one, every inode of its group freed in the last
 * minutes (recently_deleted()): next to a directory where thousands of files
 * had just been removed, the datanodes spent 1.5 to 2 times the CPU on a
 * 2 GiB write. Only buckets made afterwards move. A filesystem without the
 * flag refuses it, and nothing changes.
 */
static void tilestore_spread_buckets(int tiles_fd)
{
    int flags = 0;
    if (ioctl(tiles_fd, FS_IOC_GETFLAGS, &flags) != 0 || (flags & FS_TOPDIR_FL))
        return;
    flags |= FS_TOPDIR_FL;
    if (ioctl(tiles_fd, FS_IOC_SETFLAGS, &flags) != 0)
        log_debug("tiles directory keeps the filesystem's own placement: %s", strerror(errno));
}

/* Creates DATA/tiles/<bucket> for all buckets and makes the names durable. */
static int tilestore_make_buckets(struct tilestore *store, const char *data_dir)
{
    char bucket_name[16];
    tilestore_spread_buckets(store->tiles_fd);
    for (unsigned bucket = 0; bucket < TILESTORE_BUCKETS; bucket++) {
        snprintf(bucket_name, sizeof(bucket_name), "%u", bucket);
        if (mkdirat(store->tiles_fd, bucket_name, TILESTORE_DIR_MODE) != 0 && errno != EEXIST)
            return tilestore_errno();
    }
    if (fsync(store->tiles_fd) != 0)
        return tilestore_errno();
    return util_fsync_dir(data_dir);
}

/* The name of spare file `id` in DATA/spares. */
static void tilestore_spare_name(uint32_t id, char out[16])
{
    snprintf(out, 16, "%" PRIu32, id);
}

/* Empties the file `name` in directory dir_fd; 0 or -errno. */
static int tilestore_empty_file(int dir_fd, const char *name)
{
    int fd = openat(dir_fd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return tilestore_errno();
    int rc = ftruncate(fd, 0) == 0 ? 0 : tilestore_errno();
    close(fd);
    return rc;
}

/* Opens DATA/spares, empties the spare files of an earlier run, keeps up to the cap. */
static int tilestore_load_spares(struct tilestore *store, const char *data_dir)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof(path), "%s/spares", data_dir) >= sizeof(path))
        return -ENAMETOOLONG;
    if (mkdir(path, TILESTORE_DIR_MODE) != 0 && errno != EEXIST)
        return tilestore_errno();
    store->spares_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (store->spares_fd < 0)
        return tilestore_errno();
    int dir_fd = dup(store->spares_fd);
    DIR *dir = dir_fd >= 0 ? fdopendir(dir_fd) : NULL;
    if (!dir) {
        if (dir_fd >= 0)
            close(dir_fd);
        return tilestore_errno();
    }
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        char *end = NULL;
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9')
            continue;
        unsigned long id = strtoul(entry->d_name, &end, 10);
        if (*end != '\0' || id >= UINT32_MAX)
            continue;
        if (store->spare_count == TILESTORE_SPARES_MAX ||
            tilestore_empty_file(store->spares_fd, entry->d_name) != 0) {
            unlinkat(store->spares_fd, entry->d_name, 0);
            continue;
        }
        store->spare_ids[store->spare_count++] = (uint32_t)id;
        if (id >= store->next_spare_id)
            store->next_spare_id = (uint32_t)id + 1;
    }
    closedir(dir);
    return 0;
}

/*
 * Moves the tile file `name` to the spares and empties it. Returns true if
 * it is gone from its name, false if the caller should unlink it instead.
 */
static bool tilestore_keep_spare(struct tilestore *store, const char *name)
{
    char spare[16];
    if (store->spare_count == TILESTORE_SPARES_MAX || store->next_spare_id == UINT32_MAX)
        return false;
    tilestore_spare_name(store->next_spare_id, spare);
    if (renameat(store->tiles_fd, name, store->spares_fd, spare) != 0)
        return false;
    if (tilestore_empty_file(store->spares_fd, spare) != 0) {
        unlinkat(store->spares_fd, spare, 0);
        return true;
    }
    store->spare_ids[store->spare_count++] = store->next_spare_id++;
    return true;
}

/* Opens a spare file under `name` for writing, or returns -1 (none, or it failed). */
static int tilestore_take_spare(struct tilestore *store, const char *name)
{
    char spare[16];
    while (store->spare_count > 0) {
        tilestore_spare_name(store->spare_ids[--store->spare_count], spare);
        if (renameat2(store->spares_fd, spare, store->tiles_fd, name, RENAME_NOREPLACE) == 0) {
            int fd = openat(store->tiles_fd, name, O_RDWR | O_CLOEXEC);
            if (fd >= 0)
                return fd;
            unlinkat(store->tiles_fd, name, 0);
            return -1;
        }
        int rename_errno = errno;
        unlinkat(store->spares_fd, spare, 0); /* a bad spare is dropped */
        if (rename_errno == ENOENT)
            return -1; /* perhaps the bucket is gone: the caller recreates it */
    }
    return -1;
}

/*
 * How many tile files the store keeps open for reads: an eighth of the
 * descriptors the process may have, the rest being its connections' and
 * the files a write or a pull opens.
 */
static size_t tilestore_handles_allowed(void)
{
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY)
        return TILEHANDLES_MAX;
    return (size_t)(files.rlim_cur / 8);
}

int tilestore_open(const char *data_dir, uint64_t capacity_limit, struct tilestore **storep)
{
    char path[4096];
    struct tilestore *store;
    int rc;

    *storep = NULL;
    store = calloc(1, sizeof(*store));
    if (!store)
        return -ENOMEM;
    store->tiles_fd = -1;
    store->lock_fd = -1;
    store->spares_fd = -1;
    store->data_fd = -1;
    store->capacity_limit = capacity_limit;

    rc = util_mkdir_p(data_dir, TILESTORE_DIR_MODE);
    if (rc != 0)
        goto fail;
    if ((size_t)snprintf(path, sizeof(path), "%s/datanode.lock", data_dir) >= sizeof(path)) {
        rc = -ENAMETOOLONG;
        goto fail;
    }
    store->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, TILESTORE_FILE_MODE);
    if (store->lock_fd < 0) {
        rc = tilestore_errno();
        goto fail;
    }
    /* Two datanodes on one directory would corrupt each other's counts. */
    if (flock(store->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        rc = errno == EWOULDBLOCK ? -EBUSY : tilestore_errno();
        goto fail;
    }

    store->data_fd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (store->data_fd < 0) {
        rc = tilestore_errno();
        goto fail;
    }
    rc = tilestore_start_run(store);
    if (rc != 0)
        goto fail;

    snprintf(path, sizeof(path), "%s/tiles", data_dir);
    if (mkdir(path, TILESTORE_DIR_MODE) != 0 && errno != EEXIST) {
        rc = tilestore_errno();
        goto fail;
    }
    store->tiles_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (store->tiles_fd < 0) {
        rc = tilestore_errno();
        goto fail;
    }
    rc = tilestore_make_buckets(store, data_dir);
    if (rc != 0)
        goto fail;
    for (unsigned bucket = 0; bucket < TILESTORE_BUCKETS; bucket++) {
        rc = tilestore_count_bucket(store, bucket);
        if (rc != 0)
            goto fail;
    }
    rc = tilestore_load_spares(store, data_dir);
    if (rc != 0)
        goto fail;
    rc = flusher_start(TILESTORE_FLUSH_QUEUE, store->tiles_fd, TILESTORE_SYNC_AHEAD_BYTES,
                       &store->flusher);
    if (rc != 0)
        goto fail;
    rc = tilehandles_new(tilestore_handles_allowed(), &store->handles);
    if (rc != 0)
        goto fail;
    log_info("keeping up to %zu tile files open for reads", tilehandles_capacity(store->handles));
    *storep = store;
    return 0;
fail:
    tilestore_close(&store);
    return rc;
}

void tilestore_close(struct tilestore **storep)
{
    if (!storep || !*storep)
        return;
    struct tilestore *store = *storep;
    tilehandles_destroy(&store->handles);
    if (store->flusher) {
        struct flusher_stats stats;
        flusher_stop(&store->flusher, &stats);
        log_info("writes started early by the flusher: %" PRIu64 " (%" PRIu64
                 " left to the kernel's writeback), %" PRIu64 " synced ahead",
                 stats.flushed, stats.skipped, stats.synced);
    }
    if (store->tiles_fd >= 0 && store->data_fd >= 0 && store->run != 0) {
        /* Everything this run wrote on the disk: its sidecars are trusted from now on. */
        if (syncfs(store->tiles_fd) != 0 || tilestore_save_runs(store, true) != 0)
            log_warn("cannot mark run %" PRIu64 " as ended cleanly (%s): its block checksums are "
                     "recomputed at the next start",
                     store->run, strerror(errno));
    }
    if (store->tiles_fd >= 0)
        close(store->tiles_fd);
    if (store->data_fd >= 0)
        close(store->data_fd);
    if (store->spares_fd >= 0)
        close(store->spares_fd);
    if (store->lock_fd >= 0)
        close(store->lock_fd); /* releases the flock */
    free(store->created);
    free(store);
    *storep = NULL;
}

/* Creates a tile file (from a spare if any), recreating its bucket if someone removed it. */
static int tilestore_create(struct tilestore *store, uint64_t ino, const char *name)
{
    int fd = tilestore_take_spare(store, name);
    if (fd >= 0) {
        store->bucket_unsynced[tilestore_bucket(ino)] = true;
        return fd;
    }
    fd = openat(store->tiles_fd, name, O_RDWR | O_CREAT | O_CLOEXEC, TILESTORE_FILE_MODE);
    if (fd < 0 && errno == ENOENT) {
        char bucket_name[16];
        snprintf(bucket_name, sizeof(bucket_name), "%u", tilestore_bucket(ino));
        if (mkdirat(store->tiles_fd, bucket_name, TILESTORE_DIR_MODE) != 0 && errno != EEXIST)
            return tilestore_errno();
        store->tiles_dir_unsynced = true;
        fd = openat(store->tiles_fd, name, O_RDWR | O_CREAT | O_CLOEXEC, TILESTORE_FILE_MODE);
    }
    if (fd < 0)
        return tilestore_errno();
    store->bucket_unsynced[tilestore_bucket(ino)] = true;
    return fd;
}

/*
 * Gives a new tile's sidecar a spare file's inode, as the tile got one: a
 * new inode per sidecar would cost what a new inode per tile did (see the
 * invariants). Without a spare, tilecrc_store() creates the file.
 */
static void tilestore_spare_sidecar(struct tilestore *store, const char *tile_name)
{
    char sidecar[TILESTORE_PATH_MAX + sizeof(TILECRC_SUFFIX)];
    if (tilecrc_name(tile_name, sidecar, sizeof(sidecar)) != 0)
        return;
    int fd = tilestore_take_spare(store, sidecar);
    if (fd >= 0)
        close(fd);
}

/* pwrite until everything is written; 0 or -errno. */
/*
 * Tile bytes go to the file at most this many at a time. ext4 (Linux 6.16
 * on) sizes a write's page-cache folios by the write: one 1 MiB pwrite
 * took 1 MiB folios, fresh high-order memory, and on a VM that hands free
 * memory back to its host each first touch of it faults in the host: the
 * copy into the page cache cost three times as much CPU (perf, 4 streams
 * writing: 2.3 s per 1.6 GB, against 0.9 s when the bytes came through a
 * pipe, 64 KiB at a time, before checksums). 64 KiB pieces: the datanodes'
 * CPU 4.0-4.2 s where it was 5.8-6.2 s, and 16 system calls a MiB cost
 * next to nothing on any machine.
 */
#define TILESTORE_WRITE_PIECE_BYTES (64u << 10)

static int tilestore_pwrite_all(int fd, const uint8_t *data, size_t len, uint64_t offset)
{
    while (len > 0) {
        size_t piece = len < TILESTORE_WRITE_PIECE_BYTES ? len : TILESTORE_WRITE_PIECE_BYTES;
        ssize_t written = pwrite(fd, data, piece, (off_t)offset);
        if (written < 0) {
            if (errno == EINTR)
                continue;
            return tilestore_errno();
        }
        if (written == 0)
            return -EIO; /* no progress and no error: do not spin */
        data += written;
        len -= (size_t)written;
        offset += (uint64_t)written;
    }
    return 0;
}

/*
 * Makes the loaded block CRCs of a tile about to change this run's: a
 * sidecar last written by an earlier (clean) run is trusted after a crash,
 * so this run's number must be on the disk before the tile's bytes change,
 * or a crash could leave new bytes beside old CRCs that are still trusted.
 * Once per tile and run; a tile made or rebuilt in this run has it already.
 */
static int tilestore_claim_crc(struct tilestore *store, const char *name, struct tilecrc *crc)
{
    if (crc->run == store->run)
        return 0;
    int rc = tilecrc_store(store->tiles_fd, name, crc, store->run, true);
    if (rc == 0)
        crc->run = store->run;
    return rc;
}

int tilestore_write(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                    uint64_t offset, const void *data, size_t len)
{
    return tilestore_write_summed(store, ino, tile, version, offset, data, len, NULL);
}

int tilestore_write_summed(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                           uint64_t offset, const void *data, size_t len,
                           const struct tilecrc_payload *sums)
{
    char name[TILESTORE_PATH_MAX];
    struct tilecrc crc = {.blocks = 0};
    uint64_t old_size = 0;
    uint64_t end = offset + len;
    bool created = false;
    int rc = tilestore_check(ino, offset, len);
    int fd;

    if (rc != 0 || len == 0)
        return rc;
    tilehandles_forget(store->handles, ino, tile);
    tilestore_name(ino, tile, version, name);
    fd = openat(store->tiles_fd, name, O_RDWR | O_CLOEXEC);
    if (fd < 0 && errno != ENOENT)
        return tilestore_errno();
    if (fd >= 0) {
        struct stat st;
        if (fstat(fd, &st) != 0) {
            rc = tilestore_errno();
            goto out;
        }
        old_size = (uint64_t)st.st_size;
        rc = tilestore_load_crc(store, ino, tile, version, name, fd, old_size, &crc);
        if (rc != 0)
            goto out;
    }
    /* Checked before the file exists, so a refused write leaves nothing behind. */
    if (!tilestore_fits(store, end > old_size ? end - old_size : 0)) {
        rc = -ENOSPC;
        goto out;
    }
    /* The new CRCs before any byte changes: a kept part of a block that is
     * corrupt refuses the write (it would be vouched for anew). */
    rc = tilecrc_update(fd, old_size, end > old_size ? end : old_size, offset, data, len, sums,
                        &crc);
    if (rc == -EBADMSG)
        tilestore_note_corrupt(store, ino, tile, version);
    if (rc != 0)
        goto out;
    if (fd < 0) {
        fd = tilestore_create(store, ino, name);
        if (fd < 0)
            return fd;
        created = true;
        crc.run = store->run;
        tilestore_spare_sidecar(store, name);
    } else {
        rc = tilestore_claim_crc(store, name, &crc);
        if (rc != 0)
            goto out;
    }
    rc = tilestore_pwrite_all(fd, data, len, offset);
    if (rc == 0)
        rc = tilecrc_store(store->tiles_fd, name, &crc, store->run, false);
    if (rc != 0) {
        if (created) {
            unlinkat(store->tiles_fd, name, 0);
            tilecrc_remove(store->tiles_fd, name);
            goto out;
        }
        if (ftruncate(fd, (off_t)old_size) != 0)
            log_warn("tile %s: cannot undo a failed write's growth: %s", name, strerror(errno));
        /* Bytes inside the old size may have changed: the CRCs say what is there now. */
        struct tilecrc now;
        if (tilecrc_rebuild(fd, tilestore_file_size(fd, old_size), &now) == 0)
            tilecrc_store(store->tiles_fd, name, &now, store->run, false);
    } else {
        if (created) {
            store->tiles++;
            tilestore_note_created(store, ino, tile, version);
        }
        /* Start writing the bytes to disk soon, on the flusher's thread: a
         * later fsync (the client's) then finds little left to do, and the
         * disk works while the stream goes on instead of all at the end. */
        flusher_add(store->flusher, fd, offset, len);
    }
    tilestore_account(store, old_size, tilestore_file_size(fd, end > old_size ? end : old_size));
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

int tilestore_read(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                   uint64_t offset, size_t length, void *buf, size_t *got)
{
    char name[TILESTORE_PATH_MAX];
    uint8_t *at = buf;
    size_t done = 0;
    int rc = tilestore_check(ino, offset, length);
    int fd;

    *got = 0;
    if (rc != 0 || length == 0)
        return rc;
    tilestore_name(ino, tile, version, name);
    fd = openat(store->tiles_fd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : tilestore_errno(); /* a missing tile is a hole */
    /* Short at the end of the file: the rest is a hole. */
    rc = util_pread_upto(fd, at, length, offset, &done);
    if (rc == 0 && done > 0) {
        /* Not one byte goes out that its block's CRC does not vouch for. */
        struct tilecrc crc;
        uint64_t size = tilestore_file_size(fd, offset + done);
        rc = tilestore_load_crc(store, ino, tile, version, name, fd, size, &crc);
        if (rc == 0)
            rc = tilecrc_verify(fd, size, &crc, offset, done, buf, done);
        if (rc == -EBADMSG)
            tilestore_note_corrupt(store, ino, tile, version);
    }
    close(fd);
    if (rc == 0)
        *got = done;
    return rc;
}

void tilestore_trust(const struct tilestore *store, struct tilecrc_trust *trust)
{
    *trust = store->trust;
}

/* Opens a tile's file to check it: its name, descriptor and size. */
static int tilestore_open_to_verify(const struct tilestore *store, uint64_t ino, uint64_t tile,
                                    uint64_t version, char name[TILESTORE_PATH_MAX], int *fd,
                                    uint64_t *size)
{
    int rc = tilestore_check(ino, 0, 0);
    if (rc != 0)
        return rc;
    tilestore_name(ino, tile, version, name);
    *fd = openat(store->tiles_fd, name, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return tilestore_errno();
    *size = tilestore_file_size(*fd, 0);
    return 0;
}

int tilestore_verify_unlocked(const struct tilestore *store, const struct tilecrc_trust *trust,
                              uint64_t ino, uint64_t tile, uint64_t version, uint64_t offset,
                              uint64_t length, uint64_t *bytes)
{
    char name[TILESTORE_PATH_MAX];
    struct tilecrc crc;
    uint64_t size = 0;
    int fd = -1;

    *bytes = 0;
    int rc = tilestore_open_to_verify(store, ino, tile, version, name, &fd, &size);
    if (rc != 0)
        return rc;
    rc = tilecrc_load(store->tiles_fd, name, fd, size, trust, &crc);
    if (rc == 0)
        rc = tilecrc_verify(fd, size, &crc, offset, length, NULL, 0);
    close(fd);
    *bytes = size;
    /* Anything but a clean answer is the locked check's to give: a write may
     * have been between the file and its sidecar, or the sidecar needs making. */
    return rc == 0 ? 0 : -EAGAIN;
}

/* The stream's checks: the range's blocks, from `served` (its bytes from offset on) where it holds
 * them, against `kept` CRCs, or when NULL the sidecar's, loaded into *loaded (*did_load then true). */
static int tilestore_check_range(const struct tilestore *store, const struct tilecrc_trust *trust,
                                 uint64_t ino, uint64_t tile, uint64_t version, int fd,
                                 uint64_t size, uint64_t offset, size_t length,
                                 const uint8_t *served, size_t served_len,
                                 const struct tilecrc *kept, struct tilecrc *loaded, bool *did_load)
{
    char name[TILESTORE_PATH_MAX];
    int rc = tilestore_check(ino, 0, 0);
    *did_load = false;
    if (rc != 0)
        return rc;
    if (!kept) {
        /* Before the sidecar's read, so from a cold disk the two wait for it
         * together (a cold copies=1 read's time was 12 % sidecar reads). */
        if (!served)
            tilecrc_read_ahead(fd, offset, length);
        tilestore_name(ino, tile, version, name);
        rc = tilecrc_load(store->tiles_fd, name, fd, size, trust, loaded);
        *did_load = rc == 0;
        kept = loaded;
    }
    if (rc == 0)
        rc = tilecrc_verify(fd, size, kept, offset, length, served, served_len);
    /* As tilestore_verify_unlocked(): anything but clean is the lock's to decide. */
    return rc == 0 ? 0 : -EAGAIN;
}

int tilestore_check_open_unlocked(const struct tilestore *store, const struct tilecrc_trust *trust,
                                  uint64_t ino, uint64_t tile, uint64_t version, int fd,
                                  uint64_t size, uint64_t offset, size_t length)
{
    struct tilecrc loaded;
    bool did_load;
    return tilestore_check_range(store, trust, ino, tile, version, fd, size, offset, length, NULL,
                                 0, NULL, &loaded, &did_load);
}

int tilestore_hold(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                   struct tilestore_held *held)
{
    *held = (struct tilestore_held){.fd = -1};
    struct tilehandle *handle = tilehandles_find(store->handles, ino, tile, version);
    if (!handle) {
        int fd = -1;
        uint64_t size = 0;
        int rc = tilestore_open_tile(store, ino, tile, version, &fd, &size);
        if (rc != 0)
            return rc;
        handle = tilehandles_add(store->handles, ino, tile, version, fd, size);
        if (!handle) {
            held->fd = fd; /* every handle held: this read's own descriptor */
            held->size = size;
            return 0;
        }
    }
    held->handle = handle;
    held->fd = handle->fd;
    held->size = handle->size;
    held->sums = handle->sums;
    return 0;
}

void tilestore_unhold(struct tilestore *store, struct tilestore_held *held,
                      const struct tilecrc *loaded)
{
    if (held->handle)
        tilehandles_release(store->handles, held->handle, loaded);
    else if (held->fd >= 0)
        close(held->fd);
    *held = (struct tilestore_held){.fd = -1};
}

int tilestore_check_held_unlocked(const struct tilestore *store, const struct tilecrc_trust *trust,
                                  uint64_t ino, uint64_t tile, uint64_t version,
                                  const struct tilestore_held *held, uint64_t offset, size_t length,
                                  const uint8_t *served, size_t served_len, struct tilecrc *loaded,
                                  bool *did_load)
{
    return tilestore_check_range(store, trust, ino, tile, version, held->fd, held->size, offset,
                                 length, served, served_len, held->sums, loaded, did_load);
}

int tilestore_check_read_unlocked(const struct tilestore *store, const struct tilecrc_trust *trust,
                                  uint64_t ino, uint64_t tile, uint64_t version, int fd,
                                  uint64_t size, uint64_t start, const uint8_t *bytes, size_t len)
{
    struct tilecrc loaded;
    bool did_load;
    return tilestore_check_range(store, trust, ino, tile, version, fd, size, start, len, bytes,
                                 len, NULL, &loaded, &did_load);
}

int tilestore_verify(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                     uint64_t offset, uint64_t length, uint64_t *bytes)
{
    char name[TILESTORE_PATH_MAX];
    struct tilecrc crc;
    uint64_t size = 0;
    int fd = -1;

    *bytes = 0;
    int rc = tilestore_open_to_verify(store, ino, tile, version, name, &fd, &size);
    if (rc != 0)
        return rc;
    rc = tilestore_load_crc(store, ino, tile, version, name, fd, size, &crc);
    if (rc == 0)
        rc = tilecrc_verify(fd, size, &crc, offset, length, NULL, 0);
    if (rc == -EBADMSG)
        tilestore_note_corrupt(store, ino, tile, version);
    close(fd);
    if (rc == 0)
        *bytes = size;
    return rc;
}

/*
 * Opens the tile's file and fsyncs it (metadata too), or with data_only
 * writes what is still dirty and waits for it (sync_file_range: no journal
 * commit, no disk cache flush). Either reports a failed writeback of the
 * file. A missing file is a hole: nothing to sync.
 */
static int tilestore_flush_tile(const struct tilestore *store, uint64_t ino, uint64_t tile,
                                uint64_t version, bool data_only)
{
    const unsigned whole_range =
        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
    char name[TILESTORE_PATH_MAX];
    int rc = tilestore_check(ino, 0, 0);
    int fd;

    if (rc != 0)
        return rc;
    tilestore_name(ino, tile, version, name);
    fd = openat(store->tiles_fd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : tilestore_errno();
    if ((data_only ? sync_file_range(fd, 0, 0, whole_range) : fsync(fd)) != 0)
        rc = tilestore_errno();
    close(fd);
    return rc;
}

int tilestore_sync_file(const struct tilestore *store, uint64_t ino, uint64_t tile,
                        uint64_t version)
{
    return tilestore_flush_tile(store, ino, tile, version, false);
}

int tilestore_wait_file(const struct tilestore *store, uint64_t ino, uint64_t tile,
                        uint64_t version)
{
    return tilestore_flush_tile(store, ino, tile, version, true);
}

int tilestore_sync_filesystem(const struct tilestore *store)
{
    return syncfs(store->tiles_fd) != 0 ? tilestore_errno() : 0;
}

int tilestore_sync(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version)
{
    int rc = tilestore_sync_file(store, ino, tile, version);
    return rc != 0 ? rc : tilestore_sync_names(store, ino);
}

int tilestore_sync_names(struct tilestore *store, uint64_t ino)
{
    char bucket_name[16];
    unsigned bucket = tilestore_bucket(ino);
    int rc = tilestore_check(ino, 0, 0);
    int fd;

    if (rc != 0)
        return rc;
    if (store->bucket_unsynced[bucket]) {
        snprintf(bucket_name, sizeof(bucket_name), "%u", bucket);
        fd = openat(store->tiles_fd, bucket_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            return tilestore_errno();
        if (fsync(fd) != 0)
            rc = tilestore_errno();
        close(fd);
        if (rc != 0)
            return rc;
        store->bucket_unsynced[bucket] = false;
    }
    if (store->tiles_dir_unsynced) {
        if (fsync(store->tiles_fd) != 0)
            return tilestore_errno();
        store->tiles_dir_unsynced = false;
    }
    return 0;
}

int tilestore_truncate(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                       uint64_t length)
{
    char name[TILESTORE_PATH_MAX];
    struct stat st;
    int rc = tilestore_check(ino, 0, length);
    int fd;

    if (rc != 0)
        return rc;
    tilehandles_forget(store->handles, ino, tile);
    tilestore_name(ino, tile, version, name);
    fd = openat(store->tiles_fd, name, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : tilestore_errno();
    if (fstat(fd, &st) != 0) {
        rc = tilestore_errno();
        goto out;
    }
    uint64_t old_size = (uint64_t)st.st_size;
    if (!tilestore_fits(store, length > old_size ? length - old_size : 0)) {
        rc = -ENOSPC;
        goto out;
    }
    struct tilecrc crc;
    rc = tilestore_load_crc(store, ino, tile, version, name, fd, old_size, &crc);
    if (rc == 0)
        rc = tilecrc_update(fd, old_size, length, length, NULL, 0, NULL, &crc);
    if (rc == -EBADMSG)
        tilestore_note_corrupt(store, ino, tile, version);
    if (rc == 0)
        rc = tilestore_claim_crc(store, name, &crc);
    if (rc != 0)
        goto out;
    if (ftruncate(fd, (off_t)length) != 0)
        rc = tilestore_errno();
    if (rc == 0)
        rc = tilecrc_store(store->tiles_fd, name, &crc, store->run, false);
    tilestore_account(store, old_size, tilestore_file_size(fd, old_size));
out:
    close(fd);
    return rc;
}

int tilestore_delete(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version)
{
    char name[TILESTORE_PATH_MAX];
    struct stat st;
    int rc = tilestore_check(ino, 0, 0);

    if (rc != 0)
        return rc;
    if (store->delete_hook)
        store->delete_hook(store->delete_hook_arg, ino, tile, version);
    /* Its inode may become a spare, and then another tile's. */
    tilehandles_forget(store->handles, ino, tile);
    tilestore_name(ino, tile, version, name);
    /* The sidecar first: a crash between leaves a tile without one, whose
     * CRCs are rebuilt, never a sidecar a later file of that name would trust. */
    char sidecar[TILESTORE_PATH_MAX + sizeof(TILECRC_SUFFIX)];
    rc = tilecrc_name(name, sidecar, sizeof(sidecar));
    if (rc == 0 && !tilestore_keep_spare(store, sidecar))
        rc = tilecrc_remove(store->tiles_fd, name);
    if (rc != 0)
        return rc;
    tilestore_forget_corrupt(store, ino, tile, version);
    if (fstatat(store->tiles_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : tilestore_errno();
    /* A spare is emptied: never one whose inode another name still holds. */
    bool shared = st.st_nlink > 1;
    if ((shared || !tilestore_keep_spare(store, name)) && unlinkat(store->tiles_fd, name, 0) != 0)
        return errno == ENOENT ? 0 : tilestore_errno();
    store->bucket_unsynced[tilestore_bucket(ino)] = true;
    tilestore_account(store, (uint64_t)st.st_size, 0);
    if (store->tiles > 0)
        store->tiles--;
    return 0;
}

int tilestore_relink(struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                     uint64_t new_version)
{
    char name[TILESTORE_PATH_MAX];
    char new_name[TILESTORE_PATH_MAX];
    char bucket_name[16];
    struct tilecrc crc = {.blocks = 0};
    struct stat st, new_st;
    int rc = tilestore_check(ino, 0, 0);
    int fd, bucket_fd;

    if (rc != 0)
        return rc;
    if (new_version == version || new_version == 0)
        return -EINVAL;
    tilestore_name(ino, tile, version, name);
    tilestore_name(ino, tile, new_version, new_name);
    fd = openat(store->tiles_fd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : tilestore_errno();
    if (fstat(fd, &st) != 0) {
        rc = tilestore_errno();
        goto out;
    }
    if (fstatat(store->tiles_fd, new_name, &new_st, AT_SYMLINK_NOFOLLOW) == 0) {
        rc = new_st.st_ino == st.st_ino && new_st.st_dev == st.st_dev ? 0 : -EEXIST;
        goto out;
    }
    if (errno != ENOENT) {
        rc = tilestore_errno();
        goto out;
    }
    /* The CRCs the new name gets are checked against the bytes first. */
    rc = tilestore_load_crc(store, ino, tile, version, name, fd, (uint64_t)st.st_size, &crc);
    if (rc == 0)
        rc = tilecrc_verify(fd, (uint64_t)st.st_size, &crc, 0, (uint64_t)st.st_size, NULL, 0);
    if (rc == -EBADMSG)
        tilestore_note_corrupt(store, ino, tile, version);
    if (rc == 0 && fdatasync(fd) != 0)
        rc = tilestore_errno();
    if (rc == 0 && linkat(store->tiles_fd, name, store->tiles_fd, new_name, 0) != 0)
        rc = tilestore_errno();
    if (rc != 0)
        goto out;
    rc = tilecrc_store(store->tiles_fd, new_name, &crc, store->run, true);
    if (rc != 0) {
        /* As tilestore_install(): its CRCs are rebuilt from these durable bytes at first use. */
        log_warn("tile %s: its block checksums could not be stored (%s); they are computed "
                 "from its bytes when it is first read",
                 new_name, strerror(-rc));
        tilecrc_remove(store->tiles_fd, new_name);
        rc = 0;
    }
    snprintf(bucket_name, sizeof(bucket_name), "%u", tilestore_bucket(ino));
    bucket_fd = openat(store->tiles_fd, bucket_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (bucket_fd < 0) {
        rc = tilestore_errno();
        goto out;
    }
    if (fsync(bucket_fd) != 0)
        rc = tilestore_errno();
    close(bucket_fd);
    tilestore_count_installed(store, ino, tile, new_version, (uint64_t)st.st_size);
out:
    close(fd);
    return rc;
}

int tilestore_tiles_fd(const struct tilestore *store)
{
    return store->tiles_fd;
}

void tilestore_usage(const struct tilestore *store, uint64_t *tiles, uint64_t *used_bytes)
{
    *tiles = store->tiles;
    *used_bytes = store->used_bytes;
}

int tilestore_space(const struct tilestore *store, uint64_t *capacity, uint64_t *free_bytes)
{
    struct statvfs disk;
    if (fstatvfs(store->tiles_fd, &disk) != 0)
        return tilestore_errno();
    uint64_t disk_capacity = (uint64_t)disk.f_blocks * disk.f_frsize;
    uint64_t disk_free = (uint64_t)disk.f_bavail * disk.f_frsize;
    if (store->capacity_limit == 0) {
        *capacity = disk_capacity;
        *free_bytes = disk_free;
        return 0;
    }
    uint64_t limit_free =
        store->used_bytes < store->capacity_limit ? store->capacity_limit - store->used_bytes : 0;
    *capacity = store->capacity_limit;
    *free_bytes = disk_free < limit_free ? disk_free : limit_free;
    return 0;
}

int tilestore_disk(const struct tilestore *store, uint64_t *disk_id, uint64_t *disk_bytes,
                   uint64_t *disk_free)
{
    struct statvfs disk;
    if (fstatvfs(store->tiles_fd, &disk) != 0)
        return tilestore_errno();
    *disk_id = (uint64_t)disk.f_fsid;
    *disk_bytes = (uint64_t)disk.f_blocks * disk.f_frsize;
    *disk_free = (uint64_t)disk.f_bavail * disk.f_frsize;
    return 0;
}

int tilestore_open_tile(const struct tilestore *store, uint64_t ino, uint64_t tile,
                        uint64_t version, int *fd, uint64_t *bytes)
{
    char name[TILESTORE_PATH_MAX];
    struct stat st;
    int rc = tilestore_check(ino, 0, 0);

    *fd = -1;
    *bytes = 0;
    if (rc != 0)
        return rc;
    tilestore_name(ino, tile, version, name);
    int file = openat(store->tiles_fd, name, O_RDONLY | O_CLOEXEC);
    if (file < 0)
        return tilestore_errno();
    if (fstat(file, &st) != 0) {
        rc = tilestore_errno();
        close(file);
        return rc;
    }
    *fd = file;
    *bytes = (uint64_t)st.st_size;
    return 0;
}

int tilestore_size(const struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                   uint64_t *bytes)
{
    char name[TILESTORE_PATH_MAX];
    struct stat st;
    int rc = tilestore_check(ino, 0, 0);

    *bytes = 0;
    if (rc != 0)
        return rc;
    tilestore_name(ino, tile, version, name);
    if (fstatat(store->tiles_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return tilestore_errno();
    *bytes = (uint64_t)st.st_size;
    return 0;
}

int tilestore_checksum(const struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                       uint64_t *bytes, uint32_t *checksum)
{
    char name[TILESTORE_PATH_MAX];
    uint64_t total = 0;
    uint32_t crc = 0;
    uint8_t *chunk;
    int rc = tilestore_check(ino, 0, 0);
    int fd;

    *bytes = 0;
    *checksum = 0;
    if (rc != 0)
        return rc;
    tilestore_name(ino, tile, version, name);
    fd = openat(store->tiles_fd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tilestore_errno();
    chunk = malloc(TILESTORE_CHECKSUM_CHUNK);
    if (!chunk) {
        close(fd);
        return -ENOMEM;
    }
    for (;;) {
        ssize_t count = pread(fd, chunk, TILESTORE_CHECKSUM_CHUNK, (off_t)total);
        if (count < 0) {
            if (errno == EINTR)
                continue;
            rc = tilestore_errno();
            break;
        }
        if (count == 0)
            break;
        crc = crc32c(crc, chunk, (size_t)count);
        total += (uint64_t)count;
    }
    free(chunk);
    close(fd);
    if (rc != 0)
        return rc;
    *bytes = total;
    *checksum = crc;
    return 0;
}

/* Renames staging to final unless final exists; 0, -EEXIST or -errno. */
static int tilestore_rename_new(int dir_fd, const char *staging, const char *final)
{
    if (renameat2(dir_fd, staging, dir_fd, final, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return tilestore_errno();
    /* A filesystem without RENAME_NOREPLACE: a hard link fails just as well on EEXIST. */
    if (linkat(dir_fd, staging, dir_fd, final, 0) != 0)
        return tilestore_errno();
    unlinkat(dir_fd, staging, 0);
    return 0;
}

int tilestore_install(const struct tilestore *store, uint64_t ino, uint64_t tile, uint64_t version,
                      const void *data, size_t len)
{
    char final_name[TILESTORE_PATH_MAX];
    char staging_name[TILESTORE_PATH_MAX + 16];
    char bucket_name[16];
    unsigned bucket = tilestore_bucket(ino);
    int rc = tilestore_check(ino, 0, len);
    int fd, bucket_fd;

    if (rc != 0)
        return rc;
    tilestore_name(ino, tile, version, final_name);
    snprintf(bucket_name, sizeof(bucket_name), "%u", bucket);
    snprintf(staging_name, sizeof(staging_name), "%u/.%" PRIu64 ".%" PRIu64 ".%" PRIu64 "%s",
             bucket, ino, tile, version, TILESTORE_STAGING_SUFFIX);
    fd = openat(store->tiles_fd, staging_name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                TILESTORE_FILE_MODE);
    if (fd < 0 && errno == ENOENT) {
        /* Its bucket was removed under us: make it again, as tilestore_create() does. */
        if (mkdirat(store->tiles_fd, bucket_name, TILESTORE_DIR_MODE) != 0 && errno != EEXIST)
            return tilestore_errno();
        if (fsync(store->tiles_fd) != 0)
            return tilestore_errno();
        fd = openat(store->tiles_fd, staging_name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                    TILESTORE_FILE_MODE);
    }
    if (fd < 0)
        return tilestore_errno();
    rc = tilestore_pwrite_all(fd, data, len, 0);
    if (rc == 0 && fsync(fd) != 0)
        rc = tilestore_errno();
    close(fd);
    if (rc == 0)
        rc = tilestore_rename_new(store->tiles_fd, staging_name, final_name);
    if (rc != 0) {
        unlinkat(store->tiles_fd, staging_name, 0);
        return rc;
    }
    /* Its CRCs, from the bytes the puller checked. A crash before they are
     * durable leaves a tile without a trusted sidecar: rebuilt from these
     * same (fsync'd) bytes at first use. */
    struct tilecrc crc = {.blocks = tilecrc_blocks_for(len)};
    for (uint32_t b = 0; b < crc.blocks; b++) {
        size_t start = (size_t)b * TILECRC_BLOCK_BYTES;
        crc.crcs[b] = crc32c(0, (const uint8_t *)data + start,
                             len - start < TILECRC_BLOCK_BYTES ? len - start : TILECRC_BLOCK_BYTES);
    }
    rc = tilecrc_store(store->tiles_fd, final_name, &crc,
                       __atomic_load_n(&store->run, __ATOMIC_RELAXED), true);
    if (rc != 0) {
        log_warn("tile %s: its block checksums could not be stored (%s); they are computed "
                 "from its bytes when it is first read",
                 final_name, strerror(-rc));
        tilecrc_remove(store->tiles_fd, final_name);
        rc = 0;
    }
    bucket_fd = openat(store->tiles_fd, bucket_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (bucket_fd < 0)
        return tilestore_errno();
    if (fsync(bucket_fd) != 0)
        rc = tilestore_errno();
    close(bucket_fd);
    return rc;
}

void tilestore_count_installed(struct tilestore *store, uint64_t ino, uint64_t tile,
                               uint64_t version, uint64_t bytes)
{
    store->tiles++;
    store->used_bytes += bytes;
    tilestore_note_created(store, ino, tile, version);
}

void tilestore_set_delete_hook(struct tilestore *store, tilestore_delete_hook hook, void *arg)
{
    store->delete_hook = hook;
    store->delete_hook_arg = arg;
}
