/*
 * @file relocate.c
 * See relocate.h. The invariants this file keeps:
 * - a step that got past MOVE_BEGIN leaves meta's journal entry either
 *   aborted (the source lifted, or frozen only until its lease runs out
 *   when even LIFT failed), finished (the old holder's old file retired),
 *   or COMMITTED (the old holder did not answer RETIRE: the entry
 *   remembers it); a committed entry is never finished before its RETIRE;
 * - a copy's source is relinked to the copy's new version (frozen, checked
 *   against the pull) before the commit names it there, so every client
 *   that cached the old replica set is sent back to meta by the retirement
 *   and no write reaches the source without the new replica;
 * - the freeze is renewed while a frozen source is pulled from, so its
 *   lease never ends before the commit;
 * - counts in struct relocate are changed under its mutex only, and every
 *   step is counted exactly once (done, stale, failed, not run or busy).
 */
#include "relocate.h"

#include "proto.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The longest pause between two checks of a stop request while pacing. */
#define RELOCATE_PACE_SLICE_MS 50

/* A run of consecutive steps of the same tile. */
struct relocate_group {
    size_t first;
    size_t count;
};

struct relocate_worker {
    struct relocate *run;
    void *handle;
    pthread_t thread;
    bool started;
};

struct relocate {
    struct relocate_step *steps;
    size_t step_count;
    struct relocate_group *groups;
    size_t group_count;
    struct relocate_transport transport;
    struct relocate_options options;
    struct relocate_worker *workers;
    unsigned worker_count;

    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t ended; /* signalled when workers_alive drops to 0 */
    size_t next_group;
    unsigned workers_alive;
    bool stopping;
    double next_pull_ms; /* pacing: when the next pull may start (monotonic) */
    struct relocate_progress progress;
    pthread_mutex_t report_lock; /* one report call at a time */
};

static double relocate_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1000.0 + (double)now.tv_nsec / 1e6;
}

static void relocate_sleep_ms(double ms)
{
    struct timespec pause;
    if (ms <= 0)
        return;
    pause.tv_sec = (time_t)(ms / 1000.0);
    pause.tv_nsec = (long)((ms - (double)pause.tv_sec * 1000.0) * 1e6);
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
}

/* snprintf for messages, where cutting a long peer text short is fine. */
__attribute__((format(printf, 3, 4))) static void relocate_text(char *out, size_t cap,
                                                                const char *format, ...)
{
    va_list args;
    va_start(args, format);
    (void)vsnprintf(out, cap, format, args);
    va_end(args);
}

const char *relocate_outcome_name(enum relocate_outcome outcome)
{
    switch (outcome) {
    case RELOCATE_DONE: return "done";
    case RELOCATE_STALE: return "stale";
    case RELOCATE_FAILED: return "failed";
    case RELOCATE_NOT_RUN: return "not run";
    }
    return "?";
}

void relocate_step_from_action(const struct plan_action *action, struct relocate_step *step)
{
    memset(step, 0, sizeof(*step));
    step->kind = action->kind;
    step->ino = action->ino;
    step->tile = action->tile;
    step->version = action->version;
    step->tile_bytes = action->kind == PLAN_DROP ? 0 : action->tile_bytes;
    step->from_node = action->from_node;
    step->to_node = action->kind == PLAN_DROP ? 0 : action->to_node;
}

/* The options with every 0 replaced by its default. */
static struct relocate_options relocate_resolve(const struct relocate_options *options)
{
    struct relocate_options resolved = {0};
    if (options)
        resolved = *options;
    if (resolved.concurrency == 0)
        resolved.concurrency = 1;
    if (resolved.poll_ms == 0)
        resolved.poll_ms = RELOCATE_DEFAULT_POLL_MS;
    if (resolved.pull_timeout_ms == 0)
        resolved.pull_timeout_ms = RELOCATE_DEFAULT_PULL_TIMEOUT_MS;
    if (resolved.lease_ms == 0)
        resolved.lease_ms = RELOCATE_DEFAULT_LEASE_MS;
    return resolved;
}

/*
 * Writes "WHAT: status text[: peer text]" into the result's why (the first
 * failure wins: an undo's own failures do not hide the cause).
 */
static void relocate_explain(struct relocate_result *result, const char *what, int status,
                             const char *peer_text)
{
    if (result->why[0])
        return;
    relocate_text(result->why, sizeof(result->why), "%s: %s%s%s", what, status_text(status),
                  peer_text && peer_text[0] ? ": " : "", peer_text ? peer_text : "");
}

/* Everything one step needs while it runs. */
struct relocate_call {
    const struct relocate_transport *tr;
    void *worker;
    const struct relocate_step *step;
    struct relocate_options options;
    struct relocate_result *result;
    char peer[RELOCATE_WHY_MAX]; /* the last call's error text */
    bool freeze_tried;           /* a FREEZE went to the source: LIFT when undoing */
};

/* TILE_FENCE action on the step's source; new_version: a relink's new name, else 0. */
static int relocate_fence_as(struct relocate_call *call, uint32_t action, uint64_t new_version,
                             uint64_t *bytes, uint32_t *checksum)
{
    const struct relocate_step *step = call->step;
    uint64_t ignored_bytes;
    uint32_t ignored_checksum;

    call->peer[0] = '\0';
    if (action == TS_FENCE_FREEZE)
        call->freeze_tried = true;
    return call->tr->tile_fence(call->worker, step->from_node, step->ino, step->tile, step->version,
                                action, call->options.lease_ms, new_version,
                                bytes ? bytes : &ignored_bytes,
                                checksum ? checksum : &ignored_checksum, call->peer,
                                sizeof(call->peer));
}

static int relocate_fence(struct relocate_call *call, uint32_t action, uint64_t *bytes,
                          uint32_t *checksum)
{
    return relocate_fence_as(call, action, 0, bytes, checksum);
}

/*
 * Takes the step back: MOVE_ABORT on meta, LIFT on the source if frozen.
 * Returns MOVE_ABORT's status: TS_ERR_INVAL means meta holds the entry as
 * committed (a commit whose answer was lost), which cannot be taken back:
 * the source is left frozen then, and the caller finishes the step.
 */
static int relocate_undo(struct relocate_call *call)
{
    const struct relocate_step *step = call->step;
    int status;

    call->peer[0] = '\0';
    status =
        call->tr->move_abort(call->worker, step->ino, step->tile, call->peer, sizeof(call->peer));
    if (status == TS_ERR_INVAL)
        return status;
    if (status != TS_OK && status != TS_ERR_NOENT) {
        /* The cause is already in why; say the journal still holds the step. */
        size_t len = strlen(call->result->why);
        relocate_text(call->result->why + len, sizeof(call->result->why) - len,
                      " (MOVE_ABORT failed too: %s; `tessera rebalance abort` clears it)",
                      status_text(status));
    }
    /* A LIFT that fails is left alone: the freeze ends with its lease. */
    if (call->freeze_tried)
        (void)relocate_fence(call, TS_FENCE_LIFT, NULL, NULL);
    return status;
}

/* The outcome of a step meta refused: stale or failed. */
static enum relocate_outcome relocate_refused(int status)
{
    return status == TS_ERR_STALE ? RELOCATE_STALE : RELOCATE_FAILED;
}

/*
 * Asks the target for the pull until it is done, the deadline passes or it
 * fails. While the source is frozen (keep_frozen) the freeze is renewed
 * every third of its lease. Returns a status; on failure why is written.
 */
static int relocate_pull_wait(struct relocate_call *call, uint64_t new_version, bool keep_frozen,
                              struct relocate_pull *pull)
{
    const struct relocate_step *step = call->step;
    double start = relocate_now_ms();
    double last_freeze = start;
    char what[96];
    int status;

    for (;;) {
        memset(pull, 0, sizeof(*pull));
        call->peer[0] = '\0';
        status = call->tr->tile_pull(call->worker, step->to_node, step->from_node, step,
                                     new_version, pull, call->peer, sizeof(call->peer));
        if (status != TS_OK) {
            relocate_text(what, sizeof(what),
                          "TILE_PULL on datanode %" PRIu32 " from datanode %" PRIu32, step->to_node,
                          step->from_node);
            relocate_explain(call->result, what, status, call->peer);
            return status;
        }
        if (pull->done)
            return TS_OK;
        double now = relocate_now_ms();
        if (now - start > (double)call->options.pull_timeout_ms) {
            relocate_text(what, sizeof(what),
                          "TILE_PULL on datanode %" PRIu32 " from datanode %" PRIu32, step->to_node,
                          step->from_node);
            relocate_explain(call->result, what, TS_ERR_TIMEDOUT,
                             "still running after the pull timeout");
            return TS_ERR_TIMEDOUT;
        }
        if (keep_frozen && now - last_freeze > (double)call->options.lease_ms / 3.0) {
            status = relocate_fence(call, TS_FENCE_FREEZE, NULL, NULL);
            if (status != TS_OK) {
                relocate_text(what, sizeof(what), "renewing the freeze on datanode %" PRIu32,
                              step->from_node);
                relocate_explain(call->result, what, status, call->peer);
                return status;
            }
            last_freeze = now;
        }
        relocate_sleep_ms(call->options.poll_ms);
    }
}

/* MOVE_BEGIN; returns TS_OK, or the status with why written. */
static int relocate_begin(struct relocate_call *call, uint64_t *new_version)
{
    int status;

    call->peer[0] = '\0';
    *new_version = 0;
    status =
        call->tr->move_begin(call->worker, call->step, new_version, call->peer, sizeof(call->peer));
    if (status == TS_ERR_STALE)
        relocate_explain(call->result, "MOVE_BEGIN", status,
                         call->peer[0] ? call->peer : "the tile changed since it was planned");
    else if (status != TS_OK)
        relocate_explain(call->result, "MOVE_BEGIN on meta", status, call->peer);
    return status;
}

/*
 * After the map switched: RETIRE on the old holder's old file (a copy's
 * source holds the tile under its new version too, since the relink),
 * then MOVE_COMMIT again to finish the entry. Sets the outcome. A step is
 * never finished without its RETIRE: a client that cached the old file
 * could write it once the freeze ends, past the new replica (a copy) or
 * into a file about to be deleted (a move). When the holder does not take
 * it, the COMMITTED entry stays for the next run and the step fails.
 */
static void relocate_finish(struct relocate_call *call)
{
    const struct relocate_step *step = call->step;
    struct relocate_result *result = call->result;
    char fence_peer[RELOCATE_WHY_MAX];
    char what[128];
    int fence_status;
    int status;

    fence_status = relocate_fence(call, TS_FENCE_RETIRE, NULL, NULL);
    memcpy(fence_peer, call->peer, sizeof(fence_peer));
    relocate_text(what, sizeof(what), "committed, but RETIRE on datanode %" PRIu32 " failed",
                  step->from_node);
    if (fence_status != TS_OK) {
        size_t len;
        relocate_explain(result, what, fence_status, fence_peer);
        len = strlen(result->why);
        relocate_text(result->why + len, sizeof(result->why) - len,
                      " (the journal keeps the step: run apply again once datanode %" PRIu32
                      " answers)",
                      step->from_node);
        result->outcome = RELOCATE_FAILED;
        return;
    }
    call->peer[0] = '\0';
    status =
        call->tr->move_commit(call->worker, step->ino, step->tile, call->peer, sizeof(call->peer));
    /* NOENT: finished already (an answer lost before, or `rebalance abort` meanwhile). */
    if (status != TS_OK && status != TS_ERR_NOENT) {
        relocate_explain(result, "finishing the committed step (MOVE_COMMIT on meta)", status,
                         call->peer);
        result->outcome = RELOCATE_FAILED;
        return;
    }
    result->outcome = RELOCATE_DONE;
}

/* MOVE_COMMIT, then relocate_finish(). Sets the outcome. */
static void relocate_commit(struct relocate_call *call)
{
    const struct relocate_step *step = call->step;
    struct relocate_result *result = call->result;
    int status;

    call->peer[0] = '\0';
    status =
        call->tr->move_commit(call->worker, step->ino, step->tile, call->peer, sizeof(call->peer));
    if (status == TS_ERR_STALE) {
        /* Meta undid the entry itself; only the freeze is left to lift. */
        relocate_explain(result, "MOVE_COMMIT", status,
                         call->peer[0] ? call->peer : "the tile was written meanwhile");
        if (call->freeze_tried)
            (void)relocate_fence(call, TS_FENCE_LIFT, NULL, NULL);
        result->outcome = RELOCATE_STALE;
        return;
    }
    if (status != TS_OK) {
        enum relocate_outcome outcome = relocate_refused(status);
        relocate_explain(result, "MOVE_COMMIT on meta", status, call->peer);
        if (relocate_undo(call) != TS_ERR_INVAL) {
            result->outcome = outcome;
            return;
        }
        /* Committed after all, its answer lost: finish it as any committed step. */
        result->why[0] = '\0';
    }
    relocate_finish(call);
}

/*
 * A copy's source, frozen and checked against the pull, takes the copy's
 * new version too (TS_FENCE_RELINK), before the commit names it there.
 * TS_OK, or the status with why written.
 */
static int relocate_relink(struct relocate_call *call, uint64_t new_version,
                           const struct relocate_pull *pull)
{
    const struct relocate_step *step = call->step;
    uint64_t bytes = 0;
    uint32_t checksum = 0;
    char what[96];
    int status = relocate_fence_as(call, TS_FENCE_RELINK, new_version, &bytes, &checksum);

    relocate_text(what, sizeof(what), "TILE_FENCE relink on datanode %" PRIu32, step->from_node);
    if (status != TS_OK) {
        relocate_explain(call->result, what, status, call->peer);
        return status;
    }
    if (bytes != pull->bytes || checksum != pull->checksum) {
        relocate_explain(call->result, what, TS_ERR_IO, "the relinked file differs from the copy");
        return TS_ERR_IO;
    }
    return TS_OK;
}

/* A drop: freeze the holder if it answers, commit, retire. */
static void relocate_drop(struct relocate_call *call)
{
    int status = relocate_fence(call, TS_FENCE_FREEZE, NULL, NULL);

    /*
     * A holder that does not answer takes no writes either: commit without
     * its freeze. Its RETIRE fails too then, so the committed entry waits in
     * the journal until the holder is back and takes it.
     */
    if (status != TS_OK)
        call->freeze_tried = false;
    relocate_commit(call);
}

void relocate_run_step(const struct relocate_transport *transport, void *worker,
                       const struct relocate_step *step, const struct relocate_options *options,
                       struct relocate_result *result)
{
    struct relocate_call call = {
        .tr = transport,
        .worker = worker,
        .step = step,
        .options = relocate_resolve(options),
        .result = result,
    };
    struct relocate_pull pull;
    uint64_t new_version;
    uint64_t bytes = 0;
    uint32_t checksum = 0;
    char what[128];
    int status;

    memset(result, 0, sizeof(*result));
    if (step->committed) {
        relocate_finish(&call);
        return;
    }
    status = relocate_begin(&call, &new_version);
    if (status != TS_OK) {
        result->outcome = relocate_refused(status);
        return;
    }
    if (step->kind == PLAN_DROP) {
        relocate_drop(&call);
        return;
    }
    for (int attempt = 0;; attempt++) {
        status = relocate_pull_wait(&call, new_version, attempt > 0, &pull);
        if (status != TS_OK)
            goto undo;
        status = relocate_fence(&call, TS_FENCE_FREEZE, &bytes, &checksum);
        if (status != TS_OK) {
            relocate_text(what, sizeof(what), "TILE_FENCE freeze on datanode %" PRIu32,
                          step->from_node);
            relocate_explain(result, what, status, call.peer);
            goto undo;
        }
        if (bytes == pull.bytes && checksum == pull.checksum) {
            if (step->kind == PLAN_COPY && relocate_relink(&call, new_version, &pull) != TS_OK)
                goto undo;
            break;
        }
        if (attempt > 0) {
            relocate_text(result->why, sizeof(result->why),
                          "the copy on datanode %" PRIu32 " (%" PRIu64 " bytes, crc %08" PRIx32
                          ") differs from datanode %" PRIu32 "'s (%" PRIu64 " bytes, crc %08" PRIx32
                          ") even with the source frozen",
                          step->to_node, pull.bytes, pull.checksum, step->from_node, bytes,
                          checksum);
            goto undo;
        }
        result->pulled_again = true;
        /*
         * Written during the pull. The target's file is of no use: begin
         * again (a new file version, so the target pulls afresh instead of
         * answering with the pull it finished) while the source stays frozen.
         */
        call.peer[0] = '\0';
        status = transport->move_abort(worker, step->ino, step->tile, call.peer, sizeof(call.peer));
        if (status != TS_OK && status != TS_ERR_NOENT) {
            relocate_explain(result, "MOVE_ABORT on meta (to pull again)", status, call.peer);
            goto undo;
        }
        status = relocate_begin(&call, &new_version);
        if (status != TS_OK) {
            (void)relocate_fence(&call, TS_FENCE_LIFT, NULL, NULL);
            result->outcome = relocate_refused(status);
            return;
        }
    }
    relocate_commit(&call);
    if (result->outcome == RELOCATE_DONE)
        result->pulled = pull.bytes;
    return;
undo:
    relocate_undo(&call);
    result->outcome = RELOCATE_FAILED;
}

/* ---- the run: workers, pacing, counts ------------------------------- */

/*
 * Waits until `bytes` more may be pulled under max_bytes_per_sec. Returns
 * 0, or -ECANCELED when a stop came meanwhile (nothing was charged then).
 */
static int relocate_pace(struct relocate *run, uint64_t bytes)
{
    uint64_t rate = run->options.max_bytes_per_sec;
    double start;

    if (rate == 0)
        return 0;
    pthread_mutex_lock(&run->lock);
    double now = relocate_now_ms();
    start = run->next_pull_ms > now ? run->next_pull_ms : now;
    run->next_pull_ms = start + (double)bytes * 1000.0 / (double)rate;
    pthread_mutex_unlock(&run->lock);
    for (;;) {
        double left = start - relocate_now_ms();
        if (left <= 0)
            return 0;
        pthread_mutex_lock(&run->lock);
        bool stopping = run->stopping;
        if (stopping)
            run->next_pull_ms -= (double)bytes * 1000.0 / (double)rate;
        pthread_mutex_unlock(&run->lock);
        if (stopping)
            return -ECANCELED;
        relocate_sleep_ms(left < RELOCATE_PACE_SLICE_MS ? left : RELOCATE_PACE_SLICE_MS);
    }
}

/* Charges pulled bytes the pacing did not expect (a step of unknown size). */
static void relocate_pace_extra(struct relocate *run, uint64_t expected, uint64_t pulled)
{
    uint64_t rate = run->options.max_bytes_per_sec;
    if (rate == 0 || pulled <= expected)
        return;
    pthread_mutex_lock(&run->lock);
    double now = relocate_now_ms();
    if (run->next_pull_ms < now)
        run->next_pull_ms = now;
    run->next_pull_ms += (double)(pulled - expected) * 1000.0 / (double)rate;
    pthread_mutex_unlock(&run->lock);
}

static void relocate_report(struct relocate *run, const struct relocate_step *step,
                            const struct relocate_result *result)
{
    if (!run->options.report)
        return;
    pthread_mutex_lock(&run->report_lock);
    run->options.report(run->options.report_ctx, step, result);
    pthread_mutex_unlock(&run->report_lock);
}

/* Counts the steps [from, to) of a group as not run, and reports them. */
static void relocate_skip(struct relocate *run, size_t from, size_t to, const char *why)
{
    struct relocate_result result = {.outcome = RELOCATE_NOT_RUN};
    relocate_text(result.why, sizeof(result.why), "%s", why);
    pthread_mutex_lock(&run->lock);
    run->progress.steps_not_run += to - from;
    pthread_mutex_unlock(&run->lock);
    for (size_t i = from; i < to; i++)
        relocate_report(run, &run->steps[i], &result);
}

/*
 * Runs one tile's steps in order; stops at the first that does not finish.
 * Returns false when a stop request left some of them not run.
 */
static bool relocate_group_run(struct relocate_worker *worker, const struct relocate_group *group)
{
    struct relocate *run = worker->run;
    struct relocate_result result;

    for (size_t i = group->first; i < group->first + group->count; i++) {
        const struct relocate_step *step = &run->steps[i];
        pthread_mutex_lock(&run->lock);
        bool stopping = run->stopping;
        pthread_mutex_unlock(&run->lock);
        if (stopping || relocate_pace(run, step->tile_bytes) != 0) {
            relocate_skip(run, i, group->first + group->count, "stopped before it started");
            return false;
        }
        pthread_mutex_lock(&run->lock);
        run->progress.steps_running++;
        pthread_mutex_unlock(&run->lock);
        relocate_run_step(&run->transport, worker->handle, step, &run->options, &result);
        relocate_pace_extra(run, step->tile_bytes, result.pulled);
        pthread_mutex_lock(&run->lock);
        run->progress.steps_running--;
        switch (result.outcome) {
        case RELOCATE_DONE: run->progress.steps_done++; break;
        case RELOCATE_STALE: run->progress.steps_stale++; break;
        case RELOCATE_FAILED: run->progress.steps_failed++; break;
        case RELOCATE_NOT_RUN: run->progress.steps_not_run++; break;
        }
        if (result.outcome == RELOCATE_DONE)
            run->progress.bytes_done += result.pulled ? result.pulled : step->tile_bytes;
        if (result.pulled_again)
            run->progress.pulled_again++;
        pthread_mutex_unlock(&run->lock);
        relocate_report(run, step, &result);
        if (result.outcome != RELOCATE_DONE) {
            relocate_skip(run, i + 1, group->first + group->count,
                          "an earlier step of its tile did not finish");
            return true;
        }
    }
    return true;
}

static void *relocate_worker_main(void *arg)
{
    struct relocate_worker *worker = arg;
    struct relocate *run = worker->run;

    for (;;) {
        pthread_mutex_lock(&run->lock);
        if (run->stopping || run->next_group >= run->group_count) {
            pthread_mutex_unlock(&run->lock);
            break;
        }
        const struct relocate_group *group = &run->groups[run->next_group++];
        pthread_mutex_unlock(&run->lock);
        bool finished = relocate_group_run(worker, group);
        pthread_mutex_lock(&run->lock);
        run->progress.tiles_finished += finished;
        pthread_mutex_unlock(&run->lock);
    }
    pthread_mutex_lock(&run->lock);
    if (--run->workers_alive == 0)
        pthread_cond_broadcast(&run->ended);
    pthread_mutex_unlock(&run->lock);
    return NULL;
}

/* Cuts the steps into groups of one tile each; returns 0 or -ENOMEM. */
static int relocate_group_steps(struct relocate *run)
{
    if (run->step_count == 0)
        return 0;
    run->groups = calloc(run->step_count, sizeof(*run->groups));
    if (!run->groups)
        return -ENOMEM;
    for (size_t i = 0; i < run->step_count; i++) {
        const struct relocate_step *step = &run->steps[i];
        struct relocate_group *last = run->group_count ? &run->groups[run->group_count - 1] : NULL;
        if (last && run->steps[last->first].ino == step->ino &&
            run->steps[last->first].tile == step->tile) {
            last->count++;
        } else {
            run->groups[run->group_count].first = i;
            run->groups[run->group_count].count = 1;
            run->group_count++;
        }
        if (step->kind != PLAN_DROP)
            run->progress.bytes_total += step->tile_bytes;
    }
    return 0;
}

static bool relocate_steps_valid(const struct relocate_step *steps, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const struct relocate_step *step = &steps[i];
        if (step->from_node == 0)
            return false;
        if (step->kind == PLAN_DROP)
            continue;
        if ((step->kind != PLAN_COPY && step->kind != PLAN_MOVE) || step->to_node == 0 ||
            step->to_node == step->from_node)
            return false;
    }
    return true;
}

/* Frees a run whose threads have ended (or never started). */
static void relocate_free(struct relocate *run)
{
    if (run->workers) {
        for (unsigned i = 0; i < run->worker_count; i++) {
            if (run->workers[i].handle && run->transport.worker_close)
                run->transport.worker_close(run->workers[i].handle);
        }
    }
    pthread_mutex_destroy(&run->report_lock);
    pthread_cond_destroy(&run->ended);
    pthread_mutex_destroy(&run->lock);
    free(run->workers);
    free(run->groups);
    free(run->steps);
    free(run);
}

int relocate_start(const struct relocate_step *steps, size_t count,
                   const struct relocate_transport *transport,
                   const struct relocate_options *options, struct relocate **out)
{
    struct relocate *run;
    int rc;

    *out = NULL;
    if (!transport || !transport->worker_open || !transport->move_begin ||
        !transport->move_commit || !transport->move_abort || !transport->tile_pull ||
        !transport->tile_fence || (count > 0 && !steps) || !relocate_steps_valid(steps, count))
        return -EINVAL;
    run = calloc(1, sizeof(*run));
    if (!run)
        return -ENOMEM;
    pthread_mutex_init(&run->lock, NULL);
    pthread_mutex_init(&run->report_lock, NULL);
    util_cond_init_monotonic(&run->ended);
    run->transport = *transport;
    run->options = relocate_resolve(options);
    run->step_count = count;
    run->progress.steps_total = count;
    if (count > 0) {
        run->steps = malloc(count * sizeof(*steps));
        if (!run->steps) {
            rc = -ENOMEM;
            goto fail;
        }
        memcpy(run->steps, steps, count * sizeof(*steps));
    }
    rc = relocate_group_steps(run);
    if (rc != 0)
        goto fail;
    run->progress.tiles_total = run->group_count;
    /* No more workers than tiles: an idle worker would hold sockets for nothing. */
    run->worker_count = run->options.concurrency;
    if (run->worker_count > run->group_count)
        run->worker_count = (unsigned)run->group_count;
    if (run->worker_count > 0) {
        run->workers = calloc(run->worker_count, sizeof(*run->workers));
        if (!run->workers) {
            rc = -ENOMEM;
            goto fail;
        }
    }
    for (unsigned i = 0; i < run->worker_count; i++) {
        run->workers[i].run = run;
        errno = 0;
        run->workers[i].handle = transport->worker_open(transport->ctx, i);
        if (!run->workers[i].handle) {
            rc = errno ? -errno : -ENOMEM;
            goto fail;
        }
    }
    for (unsigned i = 0; i < run->worker_count; i++) {
        pthread_mutex_lock(&run->lock);
        run->workers_alive++;
        pthread_mutex_unlock(&run->lock);
        rc = pthread_create(&run->workers[i].thread, NULL, relocate_worker_main, &run->workers[i]);
        if (rc != 0) {
            pthread_mutex_lock(&run->lock);
            run->workers_alive--;
            pthread_mutex_unlock(&run->lock);
            if (i == 0) {
                rc = -rc;
                goto fail;
            }
            break; /* fewer workers than asked still do the work */
        }
        run->workers[i].started = true;
    }
    *out = run;
    return 0;
fail:
    relocate_free(run);
    return rc;
}

void relocate_progress(struct relocate *run, struct relocate_progress *out)
{
    pthread_mutex_lock(&run->lock);
    *out = run->progress;
    out->stopping = run->stopping;
    if (run->workers_alive == 0) {
        /* Tiles no worker took (stopped before them) count as not run. */
        size_t counted = out->steps_done + out->steps_stale + out->steps_failed +
                         out->steps_not_run;
        out->steps_not_run += out->steps_total - counted;
    }
    pthread_mutex_unlock(&run->lock);
}

void relocate_stop(struct relocate *run)
{
    pthread_mutex_lock(&run->lock);
    run->stopping = true;
    pthread_mutex_unlock(&run->lock);
}

int relocate_wait(struct relocate *run, int timeout_ms)
{
    struct timespec deadline;
    int rc = 0;

    clock_gettime(CLOCK_MONOTONIC, &deadline);
    if (timeout_ms >= 0)
        util_timespec_add_ms(&deadline, timeout_ms);
    pthread_mutex_lock(&run->lock);
    while (run->workers_alive > 0 && rc == 0) {
        if (timeout_ms < 0)
            pthread_cond_wait(&run->ended, &run->lock);
        else if (pthread_cond_timedwait(&run->ended, &run->lock, &deadline) == ETIMEDOUT)
            rc = -ETIMEDOUT;
    }
    if (run->workers_alive == 0)
        rc = 0;
    pthread_mutex_unlock(&run->lock);
    return rc;
}

void relocate_destroy(struct relocate **runp)
{
    struct relocate *run = runp ? *runp : NULL;

    if (!run)
        return;
    relocate_stop(run);
    for (unsigned i = 0; i < run->worker_count; i++) {
        if (run->workers[i].started)
            pthread_join(run->workers[i].thread, NULL);
    }
    relocate_free(run);
    *runp = NULL;
}
