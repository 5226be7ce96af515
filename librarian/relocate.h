/*
 * @file relocate.h
 * The relocation executor: runs the steps of a plan (plan.h), or the
 * journal entries a stopped run left, against meta and the datanodes.
 *
 * One step runs as the relocation journal prescribes (proto.h, "Relocation
 * journal"):
 *   MOVE_BEGIN on meta (journals the step, names the new file version);
 *   TILE_PULL on the target, asked again every poll_ms until it is done;
 *   TILE_FENCE FREEZE on the source: its bytes and checksum must equal the
 *     pull's. If they differ the tile was written meanwhile: the step is
 *     begun again (MOVE_ABORT, MOVE_BEGIN: a new file version), pulled
 *     again while the source stays frozen, and compared again;
 *   for a copy, TILE_FENCE RELINK on the source: its file takes the copy's
 *     new version too, so that the retirement below sends every client
 *     that cached the old replica set back to meta (copies of open files);
 *   MOVE_COMMIT on meta: the map switches, the entry stays, COMMITTED;
 *   TILE_FENCE RETIRE on the old holder's old file;
 *   MOVE_COMMIT again: the entry is finished (removed).
 * A drop pulls nothing: it freezes the holder when it answers (a down
 * holder takes no writes), commits and retires.
 * A commit answered TS_ERR_STALE means the file changed: meta has undone
 * the entry, the source is lifted and the step counts as stale.
 * Any other failure before the commit is undone here (MOVE_ABORT,
 * then LIFT on the source) and counts as failed; running the plan again
 * redoes it. After the commit nothing is undone: a step whose old holder
 * does not take RETIRE keeps its COMMITTED entry and counts as failed,
 * and the next run retires and finishes it (a step with `committed` set:
 * RETIRE, then MOVE_COMMIT).
 *
 * Transport: the executor never sees a socket. It calls the functions of a
 * struct relocate_transport, each worker thread through its own handle
 * (worker_open, called by relocate_start() before the threads start; a
 * handle is then used by its worker thread alone), so tests drive it with
 * an in-memory cluster and the tool with rpc clients.
 *
 * Scheduling: steps of one tile (consecutive steps with the same ino and
 * tile, as plans list them) run one after another in one worker, in the
 * given order; once one of them does not finish, the rest of that tile is
 * not run. Different tiles run concurrently on `concurrency` workers. The
 * bytes pulled are paced to max_bytes_per_sec over all workers. A stop
 * request lets running steps finish (or be undone when they fail) and
 * starts no new step.
 */
#ifndef TESSERA_RELOCATE_H
#define TESSERA_RELOCATE_H

#include "plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RELOCATE_DEFAULT_POLL_MS 20
#define RELOCATE_DEFAULT_PULL_TIMEOUT_MS 120000
#define RELOCATE_DEFAULT_LEASE_MS 10000
#define RELOCATE_WHY_MAX 256

/* One step: a plan action, or a journal entry being resumed. */
struct relocate_step {
    enum plan_action_kind kind;
    uint64_t ino;
    uint64_t tile;
    uint64_t version;    /* the version of from_node's file of the tile */
    uint64_t tile_bytes; /* expected bytes, for pacing and progress; 0 = unknown */
    uint32_t from_node;
    uint32_t to_node; /* 0 for a drop */
    bool committed;   /* a COMMITTED journal entry: only the fence and the finish are left */
};

/* What became of a step. */
enum relocate_outcome {
    RELOCATE_DONE = 0,    /* committed */
    RELOCATE_STALE = 1,   /* the tile changed (or moved) meanwhile: skipped */
    RELOCATE_FAILED = 2,  /* undone after an error: run the plan again */
    RELOCATE_NOT_RUN = 3, /* stopped, or an earlier step of its tile did not finish */
};

/* A finished pull as TILE_PULL reports it. */
struct relocate_pull {
    bool done; /* false: still running */
    uint64_t bytes;
    uint32_t checksum;
};

/*
 * How the executor reaches meta and the datanodes. Every call returns a
 * project status (status.h): TS_OK, the status the peer answered with, or
 * TS_ERR_TIMEDOUT; on failure it may write the peer's error text into
 * why[cap] (else leaves it "").
 */
struct relocate_transport {
    void *ctx;
    /* A handle for worker thread `index`; NULL on failure (errno set). */
    void *(*worker_open)(void *ctx, unsigned index);
    void (*worker_close)(void *worker);
    /* MOVE_BEGIN: journals the step; *new_version names the target's file. */
    int (*move_begin)(void *worker, const struct relocate_step *step, uint64_t *new_version,
                      char *why, size_t cap);
    /* MOVE_COMMIT: commits a BEGUN entry, finishes (removes) a COMMITTED one. */
    int (*move_commit)(void *worker, uint64_t ino, uint64_t tile, char *why, size_t cap);
    int (*move_abort)(void *worker, uint64_t ino, uint64_t tile, char *why, size_t cap);
    /* TILE_PULL on `target` from `source`; *pull says whether it is done. */
    int (*tile_pull)(void *worker, uint32_t target, uint32_t source,
                     const struct relocate_step *step, uint64_t new_version,
                     struct relocate_pull *pull, char *why, size_t cap);
    /*
     * TILE_FENCE `action` (enum ts_fence_action) on `node`'s file (ino,
     * tile, version); new_version: a relink's new name, else 0.
     */
    int (*tile_fence)(void *worker, uint32_t node, uint64_t ino, uint64_t tile, uint64_t version,
                      uint32_t action, uint32_t lease_ms, uint64_t new_version, uint64_t *bytes,
                      uint32_t *checksum, char *why, size_t cap);
};

/* Where a run stands. Counts are of steps unless named otherwise. */
struct relocate_progress {
    size_t steps_total;
    size_t steps_done;
    size_t steps_stale;
    size_t steps_failed;
    size_t steps_not_run;
    size_t steps_running;
    size_t tiles_total;    /* distinct tiles among the steps */
    size_t tiles_finished; /* tiles whose steps all ran (or ended at a failure) */
    uint64_t bytes_total;  /* tile_bytes of the copies and moves */
    uint64_t bytes_done;   /* bytes pulled by steps that finished */
    size_t pulled_again;   /* steps whose tile was written during the pull */
    bool stopping;         /* a stop was requested */
};

/* What became of one step. */
struct relocate_result {
    enum relocate_outcome outcome;
    uint64_t pulled;            /* bytes the target stored (0 for a drop or when not done) */
    bool pulled_again;          /* written during the pull: pulled again, source frozen */
    char why[RELOCATE_WHY_MAX]; /* what failed or was odd, "" when nothing */
};

/*
 * Called once per step when it ends, from the worker that ran it, one call
 * at a time.
 */
typedef void (*relocate_report_fn)(void *ctx, const struct relocate_step *step,
                                   const struct relocate_result *result);

struct relocate_options {
    unsigned concurrency;       /* worker threads; 0 = 1 */
    uint64_t max_bytes_per_sec; /* pace of the pulls over all workers; 0 = unlimited */
    unsigned poll_ms;           /* between TILE_PULL polls; 0 = RELOCATE_DEFAULT_POLL_MS */
    unsigned pull_timeout_ms;   /* how long one pull may take; 0 = the default */
    unsigned lease_ms;          /* the freeze's lease; 0 = RELOCATE_DEFAULT_LEASE_MS */
    relocate_report_fn report;  /* may be NULL */
    void *report_ctx;
};

struct relocate;

/*
 * Starts running `steps` (copied; count may be 0) in the background.
 * transport is borrowed until relocate_destroy(); options may be NULL.
 * Returns 0 and *out, -ENOMEM, -EAGAIN (no thread), -EINVAL, or the
 * -errno of a worker_open() that failed (nothing runs then).
 */
int relocate_start(const struct relocate_step *steps, size_t count,
                   const struct relocate_transport *transport,
                   const struct relocate_options *options, struct relocate **out);

/* A snapshot of the counts; any thread. */
void relocate_progress(struct relocate *run, struct relocate_progress *out);

/* Starts no new step from now on; running steps finish. Any thread. */
void relocate_stop(struct relocate *run);

/*
 * Waits up to timeout_ms (< 0: for ever) for every worker to end.
 * Returns 0 when all have ended, -ETIMEDOUT otherwise.
 */
int relocate_wait(struct relocate *run, int timeout_ms);

/* Stops, waits for the workers, frees; accepts NULL and clears *runp. */
void relocate_destroy(struct relocate **runp);

/*
 * Runs one step on a worker handle, synchronously (no pacing): what each
 * worker does per step, exposed for callers with a single step and for
 * tests. options may be NULL.
 */
void relocate_run_step(const struct relocate_transport *transport, void *worker,
                       const struct relocate_step *step, const struct relocate_options *options,
                       struct relocate_result *result);

/* "done", "stale", "failed", "not run". */
const char *relocate_outcome_name(enum relocate_outcome outcome);

/* A plan action as a step (version and tile_bytes as the plan has them). */
void relocate_step_from_action(const struct plan_action *action, struct relocate_step *step);

#endif
