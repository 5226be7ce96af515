/*
 * @file scrub.c
 * See scrub.h. One thread; its state is under `mutex`, which is never held
 * while a tile is read (the handlers' lock is, one tile at a time), so
 * scrub_report() answers at once.
 *
 * Invariants (under mutex): report.running is set from the start of a pass
 * to its end; report.pass is the number of that pass; next_pass numbers
 * passes in the order they are started (a request takes the next number at
 * once, so its caller knows which pass to wait for); `requested` holds a
 * request's pass number until the thread starts it.
 */
#include "scrub.h"

#include "log.h"
#include "tilecrc.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct scrub {
    struct tilestore *store;
    pthread_mutex_t *handlers_lock;
    int tiles_fd;
    uint64_t background_rate;
    pthread_t thread;
    bool started;

    pthread_mutex_t mutex; /* protects everything below */
    pthread_cond_t wake;   /* a request, or stopping */
    bool stopping;
    uint64_t next_pass;
    uint64_t requested;      /* a requested pass not started yet (0: none) */
    uint64_t requested_rate; /* its rate */
    uint64_t pass_rate;      /* the running pass's rate (0: unlimited) */
    int64_t pass_start_ns;
    int64_t last_end_ms; /* when the last pass ended (monotonic), 0: none yet */
    int64_t last_checkpoint_ms; /* the last tilestore_checkpoint() (monotonic) */
    struct tilecrc_trust trust; /* the store's, as the running pass started (the thread's) */
    struct scrub_report report;
    uint32_t corrupt_count; /* the running pass's corrupt files */
    struct ts_tile_file_rec corrupt[TS_MAX_SCRUB_CORRUPT];
};

/* A bucket's tile files, listed before any is checked (no lock held while listing). */
struct scrub_names {
    struct ts_tile_file_rec *files;
    size_t count;
    size_t cap;
};

static int scrub_list_bucket(struct scrub *scrub, unsigned bucket, struct scrub_names *names)
{
    char bucket_name[16];
    names->count = 0;
    snprintf(bucket_name, sizeof(bucket_name), "%u", bucket);
    int fd = openat(scrub->tiles_fd, bucket_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        int rc = errno ? -errno : -EIO;
        if (fd >= 0)
            close(fd);
        return rc;
    }
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        uint64_t ino, tile, version;
        if (!tilestore_name_parse(entry->d_name, &ino, &tile, &version) || ino == 0 ||
            ino % TILESTORE_BUCKETS != bucket)
            continue; /* sidecars, staging files, strays */
        if (names->count == names->cap) {
            size_t cap = names->cap ? names->cap * 2 : 256;
            struct ts_tile_file_rec *grown = realloc(names->files, cap * sizeof(*grown));
            if (!grown)
                break; /* the rest of the bucket waits for the next pass */
            names->files = grown;
            names->cap = cap;
        }
        names->files[names->count++] =
            (struct ts_tile_file_rec){.ino = ino, .tile = tile, .version = version};
    }
    closedir(dir);
    return 0;
}

/* Whether the running pass must end: stopping, or a request waits. Under mutex. */
static bool scrub_interrupted(const struct scrub *scrub)
{
    return scrub->stopping || scrub->requested != 0;
}

/*
 * Waits until the pass's bytes so far fit its rate (or it is
 * interrupted). Under mutex, which the wait lets go.
 */
static void scrub_pace(struct scrub *scrub, uint64_t bytes)
{
    if (scrub->pass_rate == 0)
        return;
    int64_t due_ns = scrub->pass_start_ns + (int64_t)((double)bytes / (double)scrub->pass_rate * 1e9);
    while (!scrub_interrupted(scrub)) {
        int64_t now_ns = util_monotonic_ns();
        if (now_ns >= due_ns)
            return;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        int64_t wait_ns = due_ns - now_ns;
        if (wait_ns > 200 * 1000 * 1000)
            wait_ns = 200 * 1000 * 1000;
        until.tv_nsec += (long)wait_ns;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&scrub->wake, &scrub->mutex, &until);
    }
}

/*
 * Checks one tile file; under mutex on entry and exit, which it lets go
 * meanwhile. The bytes are read without the handlers' lock (a tile read
 * from a cold disk would hold up every writer); only a tile that does not
 * come out clean is checked again under it, which decides.
 */
static void scrub_check(struct scrub *scrub, const struct ts_tile_file_rec *file)
{
    uint64_t bytes = 0;
    pthread_mutex_unlock(&scrub->mutex);
    int rc = tilestore_verify_unlocked(scrub->store, &scrub->trust, file->ino, file->tile,
                                       file->version, 0, UINT64_MAX, &bytes);
    if (rc == -EAGAIN) {
        pthread_mutex_lock(scrub->handlers_lock);
        rc = tilestore_verify(scrub->store, file->ino, file->tile, file->version, 0, UINT64_MAX,
                              &bytes);
        pthread_mutex_unlock(scrub->handlers_lock);
    }
    pthread_mutex_lock(&scrub->mutex);
    if (rc == -ENOENT)
        return; /* deleted since the bucket was listed */
    scrub->report.files++;
    scrub->report.bytes += bytes;
    if (rc == -EBADMSG) {
        scrub->report.corrupt++;
        if (scrub->corrupt_count < TS_MAX_SCRUB_CORRUPT)
            scrub->corrupt[scrub->corrupt_count++] = *file;
    } else if (rc != 0) {
        log_warn("scrub: cannot check tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 ": %s", file->ino,
                 file->tile, file->version, strerror(-rc));
    }
}

/* One pass; true if it went through every tile. Under mutex. */
static bool scrub_pass(struct scrub *scrub)
{
    struct scrub_names names = {NULL, 0, 0};
    bool whole = true;
    for (unsigned bucket = 0; bucket < TILESTORE_BUCKETS && whole; bucket++) {
        pthread_mutex_unlock(&scrub->mutex);
        int rc = scrub_list_bucket(scrub, bucket, &names);
        pthread_mutex_lock(&scrub->mutex);
        if (rc != 0)
            log_warn("scrub: cannot list tiles/%u: %s", bucket, strerror(-rc));
        for (size_t i = 0; i < names.count; i++) {
            if (scrub_interrupted(scrub)) {
                whole = false;
                break;
            }
            scrub_check(scrub, &names.files[i]);
            int64_t elapsed_ns = util_monotonic_ns() - scrub->pass_start_ns;
            if (elapsed_ns > 0)
                scrub->report.bytes_per_sec =
                    (uint64_t)((double)scrub->report.bytes * 1e9 / (double)elapsed_ns);
            scrub_pace(scrub, scrub->report.bytes);
        }
        if (scrub_interrupted(scrub))
            whole = false;
    }
    free(names.files);
    return whole;
}

static void *scrub_main(void *arg)
{
    struct scrub *scrub = arg;
    pthread_mutex_lock(&scrub->mutex);
    while (!scrub->stopping) {
        uint64_t rate;
        if (scrub->requested != 0) {
            scrub->report.pass = scrub->requested;
            rate = scrub->requested_rate;
            scrub->requested = 0;
        } else if (scrub->background_rate > 0 &&
                   (scrub->last_end_ms == 0 ||
                    util_monotonic_ms() - scrub->last_end_ms >= SCRUB_PAUSE_MS)) {
            scrub->report.pass = ++scrub->next_pass;
            rate = scrub->background_rate;
        } else {
            if (util_monotonic_ms() - scrub->last_checkpoint_ms >= SCRUB_CHECKPOINT_MS) {
                /* Without the scrub's mutex: the syncs may take a while. */
                pthread_mutex_unlock(&scrub->mutex);
                tilestore_checkpoint(scrub->store, scrub->handlers_lock);
                pthread_mutex_lock(&scrub->mutex);
                scrub->last_checkpoint_ms = util_monotonic_ms();
                continue;
            }
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            pthread_cond_timedwait(&scrub->wake, &scrub->mutex, &until);
            continue;
        }
        uint64_t used_bytes = 0, tiles = 0;
        pthread_mutex_unlock(&scrub->mutex);
        pthread_mutex_lock(scrub->handlers_lock);
        tilestore_usage(scrub->store, &tiles, &used_bytes);
        tilestore_trust(scrub->store, &scrub->trust); /* a later run's sidecars: rechecked locked */
        pthread_mutex_unlock(scrub->handlers_lock);
        pthread_mutex_lock(&scrub->mutex);
        scrub->report.running = 1;
        scrub->report.files = 0;
        scrub->report.bytes = 0;
        scrub->report.corrupt = 0;
        scrub->report.bytes_per_sec = 0;
        scrub->report.total_bytes = used_bytes;
        scrub->corrupt_count = 0;
        scrub->pass_rate = rate;
        scrub->pass_start_ns = util_monotonic_ns();
        uint64_t pass = scrub->report.pass;
        bool whole = scrub_pass(scrub);
        scrub->report.running = 0;
        scrub->last_end_ms = util_monotonic_ms();
        if (whole) {
            scrub->report.passes++;
            scrub->report.finished_pass = pass;
            scrub->report.finished_corrupt_count = scrub->corrupt_count;
            memcpy(scrub->report.finished_corrupt, scrub->corrupt,
                   scrub->corrupt_count * sizeof(scrub->corrupt[0]));
            log_info("scrub: pass %" PRIu64 " checked %" PRIu64 " tile files (%" PRIu64
                     " bytes) at %.1f MB/s: %" PRIu64 " corrupt",
                     pass, scrub->report.files, scrub->report.bytes,
                     (double)scrub->report.bytes_per_sec / 1e6, scrub->report.corrupt);
        }
    }
    pthread_mutex_unlock(&scrub->mutex);
    return NULL;
}

int scrub_start(struct tilestore *store, pthread_mutex_t *lock, uint64_t background_bytes_per_sec,
                struct scrub **scrubp)
{
    *scrubp = NULL;
    struct scrub *scrub = calloc(1, sizeof(*scrub));
    if (!scrub)
        return -ENOMEM;
    scrub->store = store;
    scrub->handlers_lock = lock;
    scrub->background_rate = background_bytes_per_sec;
    scrub->tiles_fd = tilestore_tiles_fd(store);
    scrub->last_checkpoint_ms = util_monotonic_ms();
    pthread_mutex_init(&scrub->mutex, NULL);
    pthread_cond_init(&scrub->wake, NULL);
    int rc = -pthread_create(&scrub->thread, NULL, scrub_main, scrub);
    if (rc != 0) {
        pthread_cond_destroy(&scrub->wake);
        pthread_mutex_destroy(&scrub->mutex);
        free(scrub);
        return rc;
    }
    scrub->started = true;
    *scrubp = scrub;
    return 0;
}

void scrub_stop(struct scrub **scrubp)
{
    struct scrub *scrub = scrubp ? *scrubp : NULL;
    if (!scrub)
        return;
    pthread_mutex_lock(&scrub->mutex);
    scrub->stopping = true;
    pthread_cond_broadcast(&scrub->wake);
    pthread_mutex_unlock(&scrub->mutex);
    if (scrub->started)
        pthread_join(scrub->thread, NULL);
    pthread_cond_destroy(&scrub->wake);
    pthread_mutex_destroy(&scrub->mutex);
    free(scrub);
    *scrubp = NULL;
}

uint64_t scrub_request(struct scrub *scrub, uint64_t bytes_per_sec)
{
    pthread_mutex_lock(&scrub->mutex);
    scrub->requested = ++scrub->next_pass;
    scrub->requested_rate = bytes_per_sec;
    uint64_t pass = scrub->requested;
    pthread_cond_broadcast(&scrub->wake);
    pthread_mutex_unlock(&scrub->mutex);
    return pass;
}

void scrub_report(struct scrub *scrub, struct scrub_report *report, bool with_files)
{
    pthread_mutex_lock(&scrub->mutex);
    if (with_files)
        *report = scrub->report;
    else
        memcpy(report, &scrub->report, offsetof(struct scrub_report, finished_corrupt));
    if (scrub->requested != 0) {
        /* Asked for and about to start: it counts as running already. */
        report->running = 1;
        report->pass = scrub->requested;
        report->files = report->bytes = report->corrupt = report->bytes_per_sec = 0;
    }
    pthread_mutex_unlock(&scrub->mutex);
}
