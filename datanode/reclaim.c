/*
 * @file reclaim.c
 * See reclaim.h. One thread; it owns everything in struct reclaim but the
 * stop flag and its condition (wake_lock), and touches the datanode's state
 * (store, fences, heartbeat) only under the handlers' lock.
 *
 * A pass: for each bucket, readdir in steps of RECLAIM_BATCH_FILES names;
 * each name that parses as a tile file and is past the grace becomes a
 * candidate; the step's candidates go to meta in one TILE_RECONCILE; those
 * it calls UNMAPPED are deleted one by one, each after a fresh look under
 * the lock. The walk's own descriptor of DATA is used for the looks
 * without the lock (fstatat touches no state of the store).
 */
#include "reclaim.h"

#include "log.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"
#include "tilestore.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RECLAIM_PAYLOAD_CAP (64 + RECLAIM_BATCH_FILES * ts_tile_file_rec_bytes)

enum reclaim_verdict reclaim_decide(const struct reclaim_facts *facts)
{
    /* First: nothing else may overrule the grace, not even meta's word. */
    if (facts->age_ms < facts->grace_ms)
        return RECLAIM_KEEP_YOUNG;
    if (!facts->answered)
        return RECLAIM_KEEP_UNANSWERED;
    if (facts->frozen)
        return RECLAIM_KEEP_BUSY;
    switch (facts->state) {
    case TS_RECONCILE_UNMAPPED: return RECLAIM_DELETE;
    case TS_RECONCILE_MAPPED: return RECLAIM_KEEP_MAPPED;
    case TS_RECONCILE_MOVING:
    case TS_RECONCILE_QUEUED: return RECLAIM_KEEP_BUSY;
    default: return RECLAIM_KEEP_DOUBT; /* ELSEWHERE, UNISSUED, or a state unknown here */
    }
}

/* One candidate of a batch. */
struct reclaim_file {
    uint64_t ino;
    uint64_t tile;
    uint64_t version;
    char path[TILESTORE_PATH_MAX]; /* "tiles/<bucket>/<ino>.<tile>.<version>" */
};

/* What a pass counted. */
struct reclaim_counts {
    uint64_t files; /* tile files looked at */
    uint64_t verdicts[RECLAIM_VERDICT_COUNT];
    uint64_t unissued;        /* of KEEP_DOUBT: inodes or versions meta never issued */
    uint64_t elsewhere;       /* of KEEP_DOUBT: mapped to another node */
    uint64_t delete_failures; /* deletions that failed (kept, tried next pass) */
    uint64_t bytes_freed;
};

struct reclaim {
    char meta_endpoint[256];
    int64_t grace_ms;
    int64_t every_ms;
    struct nodehandlers_context *context;
    struct heartbeat *heartbeat;

    pthread_t thread;
    pthread_mutex_t wake_lock; /* guards stopping; wake is signalled on it */
    pthread_cond_t wake;
    bool stopping;

    int data_fd; /* DATA, the walk's own descriptor */
    struct rpc_client *meta;
    bool meta_failing; /* a failure was logged; log the recovery */
    double delete_allowance;
    int64_t allowance_ms;

    /* The cursor of the pass in progress. */
    unsigned bucket;
    DIR *dir; /* bucket `bucket`, open; NULL: the bucket is not opened yet */

    struct reclaim_file files[RECLAIM_BATCH_FILES];
    uint32_t file_count;
    uint8_t payload[RECLAIM_PAYLOAD_CAP];
    uint8_t records[RECLAIM_BATCH_FILES * ts_tile_file_rec_bytes];
    struct reclaim_counts pass;
    uint64_t passes;
};

/* ---- sleeping and stopping ------------------------------------------------ */

/* Sleeps ms (or until stopped); returns true when the thread must stop. */
static bool reclaim_sleep(struct reclaim *reclaim, int64_t ms)
{
    struct timespec deadline = util_monotonic_deadline(ms);
    bool stopping;

    pthread_mutex_lock(&reclaim->wake_lock);
    while (!reclaim->stopping &&
           pthread_cond_timedwait(&reclaim->wake, &reclaim->wake_lock, &deadline) != ETIMEDOUT)
        ;
    stopping = reclaim->stopping;
    pthread_mutex_unlock(&reclaim->wake_lock);
    return stopping;
}

static bool reclaim_stopping(struct reclaim *reclaim)
{
    bool stopping;
    pthread_mutex_lock(&reclaim->wake_lock);
    stopping = reclaim->stopping;
    pthread_mutex_unlock(&reclaim->wake_lock);
    return stopping;
}

/* Waits for the next deletion's turn (RECLAIM_DELETES_PER_SEC); false: stop. */
static bool reclaim_take_turn(struct reclaim *reclaim)
{
    for (;;) {
        int64_t now_ms = util_monotonic_ms();
        reclaim->delete_allowance +=
            (double)(now_ms - reclaim->allowance_ms) * RECLAIM_DELETES_PER_SEC / 1000.0;
        if (reclaim->delete_allowance > RECLAIM_DELETES_PER_SEC)
            reclaim->delete_allowance = RECLAIM_DELETES_PER_SEC;
        reclaim->allowance_ms = now_ms;
        if (reclaim->delete_allowance >= 1.0) {
            reclaim->delete_allowance -= 1.0;
            return !reclaim_stopping(reclaim);
        }
        int64_t wait_ms =
            (int64_t)((1.0 - reclaim->delete_allowance) * 1000.0 / RECLAIM_DELETES_PER_SEC) + 1;
        if (reclaim_sleep(reclaim, wait_ms))
            return false;
    }
}

/* ---- looking at files ----------------------------------------------------- */

/* The age of a file by its mtime against the wall clock, in ms. */
static int64_t reclaim_age_ms(const struct stat *st)
{
    struct timespec now = util_now();
    return ((int64_t)now.tv_sec - (int64_t)st->st_mtim.tv_sec) * 1000 +
           ((int64_t)now.tv_nsec - (int64_t)st->st_mtim.tv_nsec) / 1000000;
}

/* Logs the first of a run of failures to reach meta; the rest go to debug. */
static void reclaim_meta_failed(struct reclaim *reclaim, const char *why)
{
    if (reclaim_stopping(reclaim))
        return; /* the ZeroMQ context was shut down under the call */
    if (!reclaim->meta_failing)
        log_warn("reclaim: cannot ask meta at %s which tile files it maps (%s); deleting "
                 "nothing until it answers",
                 reclaim->meta_endpoint, why);
    else
        log_debug("reclaim: TILE_RECONCILE to %s failed: %s", reclaim->meta_endpoint, why);
    reclaim->meta_failing = true;
}

/*
 * Sends the batch to meta; fills states[] (one enum ts_reconcile_state per
 * file). Returns true when meta answered every file.
 */
static bool reclaim_ask_meta(struct reclaim *reclaim, uint32_t node_id, uint32_t *states)
{
    struct ts_tile_reconcile_req request = {.node_id = node_id, .count = reclaim->file_count};
    struct ts_tile_reconcile_rep answer;
    struct rpc_reply reply;
    struct ts_writer records;
    struct ts_cursor verdicts;
    char why[300];
    bool answered = false;

    ts_writer_init(&records, reclaim->records, sizeof(reclaim->records));
    for (uint32_t i = 0; i < reclaim->file_count; i++) {
        struct ts_tile_file_rec record = {.ino = reclaim->files[i].ino,
                                          .tile = reclaim->files[i].tile,
                                          .version = reclaim->files[i].version};
        ts_tile_file_rec_write(&records, &record);
    }
    if (records.failed)
        return false; /* cannot happen: the buffer fits a batch */
    request.files.ptr = (const char *)reclaim->records;
    request.files.len = (uint32_t)records.len;
    int len = ts_tile_reconcile_req_encode(&request, reclaim->payload, sizeof(reclaim->payload));
    if (len < 0)
        return false;
    if (!reclaim->meta)
        reclaim->meta = rpc_client_new(reclaim->meta_endpoint);
    if (!reclaim->meta) {
        reclaim_meta_failed(reclaim, "no socket");
        return false;
    }
    int status = rpc_client_call(reclaim->meta, TS_OP_TILE_RECONCILE, reclaim->payload, (size_t)len,
                                 NULL, 0, RECLAIM_META_TIMEOUT_MS, &reply);
    if (status != TS_OK) {
        char text[256];
        rpc_reply_error_text(&reply, text, sizeof(text));
        snprintf(why, sizeof(why), "%s%s%s", status_text(status), text[0] ? ": " : "", text);
        reclaim_meta_failed(reclaim, why);
    } else if (ts_tile_reconcile_rep_decode(&answer, reply.payload, reply.payload_len) != 0 ||
               answer.count != reclaim->file_count ||
               (uint64_t)answer.count * ts_reconcile_verdict_rec_bytes != answer.verdicts.len) {
        reclaim_meta_failed(reclaim, "malformed reply");
    } else {
        answered = true;
        ts_cursor_init(&verdicts, answer.verdicts.ptr, answer.verdicts.len);
        for (uint32_t i = 0; i < answer.count && answered; i++) {
            struct ts_reconcile_verdict_rec verdict;
            answered = ts_reconcile_verdict_rec_read(&verdicts, &verdict) == 0;
            states[i] = verdict.state;
        }
        if (reclaim->meta_failing)
            log_info("reclaim: meta at %s answers again", reclaim->meta_endpoint);
        reclaim->meta_failing = false;
    }
    rpc_reply_release(&reply);
    return answered;
}

/*
 * Deletes one file meta maps nowhere, if a fresh look under the handlers'
 * lock still says so. Returns the verdict it acted on.
 */
static enum reclaim_verdict reclaim_delete(struct reclaim *reclaim, const struct reclaim_file *file,
                                           uint32_t state)
{
    struct nodehandlers_context *context = reclaim->context;
    struct reclaim_facts facts = {.grace_ms = reclaim->grace_ms, .answered = true, .state = state};
    enum reclaim_verdict verdict;
    struct stat st;

    pthread_mutex_lock(&context->lock);
    if (fstatat(reclaim->data_fd, file->path, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        pthread_mutex_unlock(&context->lock);
        return RECLAIM_KEEP_BUSY; /* gone meanwhile: the garbage queue was faster */
    }
    facts.age_ms = reclaim_age_ms(&st);
    facts.frozen = fences_check(context->fences, file->ino, file->tile, file->version,
                                util_monotonic_ms()) == FENCES_FROZEN;
    verdict = reclaim_decide(&facts);
    if (verdict == RECLAIM_DELETE) {
        int rc = tilestore_delete(context->store, file->ino, file->tile, file->version);
        if (rc != 0) {
            log_warn("reclaim: cannot delete %s: %s", file->path, strerror(-rc));
            reclaim->pass.delete_failures++;
            verdict = RECLAIM_KEEP_BUSY;
        } else {
            reclaim->pass.bytes_freed += (uint64_t)st.st_size;
            context->stats.tiles_reclaimed++;
            context->stats.bytes_reclaimed += (uint64_t)st.st_size;
        }
    }
    pthread_mutex_unlock(&context->lock);
    return verdict;
}

/* Asks meta about the batch and acts on the answers; false: stop. */
static bool reclaim_batch(struct reclaim *reclaim)
{
    uint32_t states[RECLAIM_BATCH_FILES];
    uint32_t node_id;
    uint64_t deleted = 0;
    const char *example = NULL;

    if (reclaim->file_count == 0)
        return true;
    pthread_mutex_lock(&reclaim->context->lock);
    node_id = heartbeat_node_id(reclaim->heartbeat);
    pthread_mutex_unlock(&reclaim->context->lock);
    bool answered = node_id != 0 && reclaim_ask_meta(reclaim, node_id, states);
    for (uint32_t i = 0; i < reclaim->file_count; i++) {
        /* Past the grace when the walk looked: only meta's word is new here. */
        struct reclaim_facts facts = {.age_ms = reclaim->grace_ms,
                                      .grace_ms = reclaim->grace_ms,
                                      .answered = answered,
                                      .state = answered ? states[i] : 0};
        enum reclaim_verdict verdict = reclaim_decide(&facts);
        if (verdict == RECLAIM_DELETE) {
            if (!reclaim_take_turn(reclaim))
                return false;
            verdict = reclaim_delete(reclaim, &reclaim->files[i], states[i]);
        }
        if (verdict == RECLAIM_DELETE) {
            deleted++;
            example = reclaim->files[i].path;
        }
        if (answered && states[i] == TS_RECONCILE_UNISSUED)
            reclaim->pass.unissued++;
        if (answered && states[i] == TS_RECONCILE_ELSEWHERE)
            reclaim->pass.elsewhere++;
        reclaim->pass.verdicts[verdict]++;
    }
    if (deleted > 0)
        log_info("reclaim: deleted %" PRIu64 " tile file%s that meta maps nowhere (last: %s)",
                 deleted, deleted == 1 ? "" : "s", example);
    reclaim->file_count = 0;
    return true;
}

/*
 * Looks at up to RECLAIM_BATCH_FILES names from the cursor on, adding the
 * candidates to the batch. Returns 1 when the names looked at fill a step,
 * 0 at the end of the pass. A bucket that cannot be read is logged and
 * passed over.
 */
static int reclaim_walk_step(struct reclaim *reclaim)
{
    uint32_t looked = 0;

    while (reclaim->bucket < TILESTORE_BUCKETS) {
        if (!reclaim->dir) {
            char bucket_name[16];
            snprintf(bucket_name, sizeof(bucket_name), "tiles/%u", reclaim->bucket);
            int fd = openat(reclaim->data_fd, bucket_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            reclaim->dir = fd >= 0 ? fdopendir(fd) : NULL;
            if (!reclaim->dir) {
                if (fd >= 0)
                    close(fd);
                if (errno != ENOENT)
                    log_warn("reclaim: cannot read tiles/%u: %s", reclaim->bucket, strerror(errno));
                reclaim->bucket++;
                continue;
            }
        }
        struct dirent *entry = readdir(reclaim->dir);
        if (!entry) {
            closedir(reclaim->dir);
            reclaim->dir = NULL;
            reclaim->bucket++;
            continue;
        }
        struct reclaim_file *file = &reclaim->files[reclaim->file_count];
        struct stat st;
        if (!tilestore_name_parse(entry->d_name, &file->ino, &file->tile, &file->version) ||
            file->ino == 0 || file->ino % TILESTORE_BUCKETS != reclaim->bucket)
            continue; /* staging files, strays: not tiles (tilestore.c logs strays) */
        looked++;
        /* The store's own name for the file: one with leading zeros is a stray. */
        if (tilestore_path(file->ino, file->tile, file->version, file->path, sizeof(file->path)) !=
                0 ||
            fstatat(reclaim->data_fd, file->path, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        reclaim->pass.files++;
        if (reclaim_age_ms(&st) < reclaim->grace_ms)
            reclaim->pass.verdicts[RECLAIM_KEEP_YOUNG]++;
        else
            reclaim->file_count++;
        if (looked == RECLAIM_BATCH_FILES || reclaim->file_count == RECLAIM_BATCH_FILES)
            return 1;
    }
    return 0;
}

static void reclaim_log_pass(struct reclaim *reclaim, int64_t took_ms)
{
    const struct reclaim_counts *pass = &reclaim->pass;
    log_info("reclaim: pass %" PRIu64 " looked at %" PRIu64
             " tile files in %.1f s: deleted %" PRIu64
             " (%.1f MiB) that meta maps nowhere; kept %" PRIu64 " younger than %" PRId64
             " s, %" PRIu64 " mapped here, %" PRIu64 " in a move or the garbage queue, %" PRIu64
             " in doubt, %" PRIu64 " unchecked (meta did not answer)",
             reclaim->passes, pass->files, (double)took_ms / 1000.0, pass->verdicts[RECLAIM_DELETE],
             (double)pass->bytes_freed / 1048576.0, pass->verdicts[RECLAIM_KEEP_YOUNG],
             reclaim->grace_ms / 1000, pass->verdicts[RECLAIM_KEEP_MAPPED],
             pass->verdicts[RECLAIM_KEEP_BUSY], pass->verdicts[RECLAIM_KEEP_DOUBT],
             pass->verdicts[RECLAIM_KEEP_UNANSWERED]);
    if (pass->unissued > 0)
        log_warn("reclaim: %" PRIu64 " tile files name inodes or versions that meta at %s never "
                 "issued: is it the meta that placed them (its --data)? Kept them all",
                 pass->unissued, reclaim->meta_endpoint);
    if (pass->elsewhere > 0)
        log_warn("reclaim: %" PRIu64 " tile files are mapped to another node: did this node "
                 "lose its node.id? Kept them all",
                 pass->elsewhere);
}

static void *reclaim_thread(void *arg)
{
    struct reclaim *reclaim = arg;

    if (reclaim_sleep(reclaim, RECLAIM_FIRST_PASS_DELAY_MS))
        return NULL;
    for (;;) {
        int64_t started_ms = util_monotonic_ms();
        int step;
        memset(&reclaim->pass, 0, sizeof(reclaim->pass));
        reclaim->bucket = 0;
        reclaim->passes++;
        log_debug("reclaim: pass %" PRIu64 " begins", reclaim->passes);
        do {
            step = reclaim_walk_step(reclaim);
            if (!reclaim_batch(reclaim))
                return NULL;
            if (step > 0 && reclaim_sleep(reclaim, RECLAIM_BATCH_PAUSE_MS))
                return NULL;
        } while (step > 0);
        reclaim_log_pass(reclaim, util_monotonic_ms() - started_ms);
        pthread_mutex_lock(&reclaim->context->lock);
        reclaim->context->stats.reclaim_passes++;
        pthread_mutex_unlock(&reclaim->context->lock);
        if (reclaim_sleep(reclaim, reclaim->every_ms))
            return NULL;
    }
}

/* ---- lifecycle -------------------------------------------------------------- */

static void reclaim_free(struct reclaim *reclaim)
{
    if (reclaim->dir)
        closedir(reclaim->dir);
    if (reclaim->data_fd >= 0)
        close(reclaim->data_fd);
    rpc_client_destroy(&reclaim->meta);
    pthread_cond_destroy(&reclaim->wake);
    pthread_mutex_destroy(&reclaim->wake_lock);
    free(reclaim);
}

int reclaim_start(const struct reclaim_config *config, struct nodehandlers_context *context,
                  struct heartbeat *heartbeat, struct reclaim **reclaimp)
{
    struct reclaim *reclaim;
    int rc;

    *reclaimp = NULL;
    if (strlen(config->meta_endpoint) >= sizeof(reclaim->meta_endpoint))
        return -ENAMETOOLONG;
    reclaim = calloc(1, sizeof(*reclaim));
    if (!reclaim)
        return -ENOMEM;
    snprintf(reclaim->meta_endpoint, sizeof(reclaim->meta_endpoint), "%s", config->meta_endpoint);
    reclaim->grace_ms = config->grace_ms;
    reclaim->every_ms = config->every_ms;
    reclaim->context = context;
    reclaim->heartbeat = heartbeat;
    reclaim->allowance_ms = util_monotonic_ms();
    pthread_mutex_init(&reclaim->wake_lock, NULL);
    util_cond_init_monotonic(&reclaim->wake);
    reclaim->data_fd = open(config->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (reclaim->data_fd < 0) {
        rc = -errno;
        reclaim_free(reclaim);
        return rc;
    }
    rc = pthread_create(&reclaim->thread, NULL, reclaim_thread, reclaim);
    if (rc != 0) {
        reclaim_free(reclaim);
        return -rc;
    }
    *reclaimp = reclaim;
    return 0;
}

void reclaim_stop(struct reclaim **reclaimp)
{
    if (!reclaimp || !*reclaimp)
        return;
    struct reclaim *reclaim = *reclaimp;
    pthread_mutex_lock(&reclaim->wake_lock);
    reclaim->stopping = true;
    pthread_cond_signal(&reclaim->wake);
    pthread_mutex_unlock(&reclaim->wake_lock);
    pthread_join(reclaim->thread, NULL);
    reclaim_free(reclaim);
    *reclaimp = NULL;
}
