/*
 * @file repairer.c
 * See repairer.h. One thread: pass after pass over the tile map; each
 * REPAIR_SCAN reply's steps are sorted (tiles needing the most copies
 * first, a tile's own steps in meta's order) and run to the end before the
 * next scan, so a pass never hands out a step for a tile still being
 * repaired.
 */
#include "repairer.h"

#include "log.h"
#include "proto.h"
#include "relocate.h"
#include "relocnet.h"
#include "rpc.h"
#include "status.h"
#include "toolmeta.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPAIRER_RATE_WINDOW 8 /* one-second samples the rate is taken over */

struct repairer {
    struct repairer_config config;
    char endpoint[256];
    pthread_t thread;
    pthread_mutex_t lock; /* guards stop and the figures */
    pthread_cond_t wake;
    bool stop;
    struct repairpass_progress figures;
    uint64_t samples[REPAIRER_RATE_WINDOW]; /* bytes_done at each second */
    int64_t sample_ms;
    unsigned sample_next;
};

int repairer_connect_endpoint(const char *listen, char *out, size_t cap)
{
    static const char *const wildcards[] = {"tcp://0.0.0.0:", "tcp://*:"};
    for (size_t i = 0; i < sizeof(wildcards) / sizeof(wildcards[0]); i++) {
        size_t len = strlen(wildcards[i]);
        if (strncmp(listen, wildcards[i], len) == 0) {
            int n = snprintf(out, cap, "tcp://127.0.0.1:%s", listen + len);
            return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
        }
    }
    int n = snprintf(out, cap, "%s", listen);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

void repairer_progress(void *ctx, struct repairpass_progress *out)
{
    struct repairer *repairer = ctx;
    pthread_mutex_lock(&repairer->lock);
    *out = repairer->figures;
    /* Over the last REPAIRER_RATE_WINDOW one-second samples, or as many as taken. */
    unsigned taken = repairer->sample_next;
    unsigned span = taken < REPAIRER_RATE_WINDOW ? taken : REPAIRER_RATE_WINDOW;
    uint64_t oldest = taken < REPAIRER_RATE_WINDOW ? 0 : repairer->samples[taken % REPAIRER_RATE_WINDOW];
    out->bytes_per_sec = span > 0 ? (repairer->figures.bytes_done - oldest) / span : 0;
    pthread_mutex_unlock(&repairer->lock);
}

/* Takes a one-second sample of bytes_done when one is due. Holds the lock. */
static void repairer_sample(struct repairer *repairer, int64_t now_ms)
{
    while (now_ms - repairer->sample_ms >= 1000) {
        repairer->samples[repairer->sample_next % REPAIRER_RATE_WINDOW] =
            repairer->figures.bytes_done;
        repairer->sample_next++;
        repairer->sample_ms += 1000;
        if (now_ms - repairer->sample_ms > 60000)
            repairer->sample_ms = now_ms; /* a long idle gap: start afresh */
    }
}

static bool repairer_stopping(struct repairer *repairer)
{
    pthread_mutex_lock(&repairer->lock);
    bool stop = repairer->stop;
    repairer_sample(repairer, util_monotonic_ms());
    pthread_mutex_unlock(&repairer->lock);
    return stop;
}

/* Waits ms or until stopped; true when stopped. */
static bool repairer_sleep(struct repairer *repairer, int64_t ms)
{
    int64_t until = util_monotonic_ms() + ms;
    pthread_mutex_lock(&repairer->lock);
    while (!repairer->stop) {
        int64_t now = util_monotonic_ms();
        repairer_sample(repairer, now);
        if (now >= until)
            break;
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        int64_t wait = until - now < 1000 ? until - now : 1000;
        deadline.tv_sec += wait / 1000;
        deadline.tv_nsec += (wait % 1000) * 1000000;
        if (deadline.tv_nsec >= 1000000000) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&repairer->wake, &repairer->lock, &deadline);
    }
    bool stop = repairer->stop;
    pthread_mutex_unlock(&repairer->lock);
    return stop;
}

static void repairer_report(void *ctx, const struct relocate_step *step,
                            const struct relocate_result *result)
{
    struct repairer *repairer = ctx;
    pthread_mutex_lock(&repairer->lock);
    struct repairpass_progress *figures = &repairer->figures;
    if (figures->steps_waiting > 0)
        figures->steps_waiting--;
    if (step->kind == PLAN_COPY) {
        figures->bytes_waiting -= figures->bytes_waiting < step->tile_bytes
                                      ? figures->bytes_waiting
                                      : step->tile_bytes;
    }
    if (result->outcome == RELOCATE_DONE) {
        figures->steps_done++;
        figures->bytes_done += result->pulled;
    } else if (result->outcome == RELOCATE_FAILED) {
        figures->steps_failed++;
    }
    pthread_mutex_unlock(&repairer->lock);
    if (result->outcome == RELOCATE_DONE)
        log_info("repair: %s of inode %llu tile %llu from node %u%s%.0u done",
                 step->kind == PLAN_COPY ? "copy" : "drop", (unsigned long long)step->ino,
                 (unsigned long long)step->tile, step->from_node,
                 step->to_node ? " to node " : "", step->to_node);
    else if (result->outcome == RELOCATE_FAILED)
        log_warn("repair: %s of inode %llu tile %llu from node %u failed: %s",
                 step->kind == PLAN_COPY ? "copy" : "drop", (unsigned long long)step->ino,
                 (unsigned long long)step->tile, step->from_node, result->why);
}

/* Runs steps[count] to their end; the nodes come from a fresh NODE_LIST. */
static void repairer_run(struct repairer *repairer, struct rpc_client *meta,
                         const struct relocate_step *steps, size_t count)
{
    struct toolmeta_node *nodes = NULL;
    size_t node_count = 0;
    char why[256] = "";
    struct relocate *run = NULL;

    int status =
        toolmeta_node_list(meta, REPAIRER_TIMEOUT_MS, &nodes, &node_count, why, sizeof(why));
    if (status != TS_OK) {
        log_warn("repair: NODE_LIST failed: %s %s", status_text(status), why);
        return;
    }
    struct relocnet *net = relocnet_new(repairer->endpoint, nodes, node_count, REPAIRER_TIMEOUT_MS);
    free(nodes);
    if (!net)
        return;
    struct relocate_transport transport;
    relocnet_transport(net, &transport);
    struct relocate_options options = {.concurrency = REPAIRER_CONCURRENCY,
                                       .max_bytes_per_sec = repairer->config.max_bytes_per_sec,
                                       .report = repairer_report,
                                       .report_ctx = repairer};
    pthread_mutex_lock(&repairer->lock);
    repairer->figures.steps_waiting += count;
    for (size_t i = 0; i < count; i++)
        repairer->figures.bytes_waiting += steps[i].kind == PLAN_COPY ? steps[i].tile_bytes : 0;
    pthread_mutex_unlock(&repairer->lock);
    int err = relocate_start(steps, count, &transport, &options, &run);
    if (err < 0) {
        log_warn("repair: cannot start the executor: %s", strerror(-err));
    } else {
        bool stopped = false;
        while (relocate_wait(run, 200) == -ETIMEDOUT) {
            if (!stopped && repairer_stopping(repairer)) {
                relocate_stop(run);
                stopped = true;
            }
        }
        relocate_destroy(&run);
    }
    pthread_mutex_lock(&repairer->lock);
    repairer->figures.steps_waiting = 0; /* the rest were not run: the next pass finds them */
    repairer->figures.bytes_waiting = 0;
    pthread_mutex_unlock(&repairer->lock);
    relocnet_destroy(&net);
}

/* Tiles needing more copies first; a tile's steps stay together, in order. */
static int repairer_step_order(const void *a, const void *b)
{
    const struct relocate_step *x = a;
    const struct relocate_step *y = b;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    if (x->tile != y->tile)
        return x->tile < y->tile ? -1 : 1;
    return 0;
}

struct ranked_step {
    struct relocate_step step;
    uint32_t copies_needed; /* COPY steps of its tile */
    size_t order;           /* its place in meta's reply */
};

static int ranked_step_order(const void *a, const void *b)
{
    const struct ranked_step *x = a;
    const struct ranked_step *y = b;
    if (x->copies_needed != y->copies_needed)
        return x->copies_needed > y->copies_needed ? -1 : 1;
    int by_tile = repairer_step_order(&x->step, &y->step);
    if (by_tile != 0)
        return by_tile;
    return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * One REPAIR_SCAN from (*ino, *tile): runs its steps; *done at the map's
 * end. Returns a status.
 */
static int repairer_scan(struct repairer *repairer, struct rpc_client *meta, uint64_t *ino,
                         uint64_t *tile, bool *done)
{
    uint8_t payload[64];
    struct rpc_reply reply;
    struct ts_repair_scan_req request = {.after_ino = *ino,
                                         .after_tile = *tile,
                                         .max_steps = REPAIRER_STEPS_PER_SCAN,
                                         .replace_after_ms =
                                             (uint64_t)repairer->config.replace_after_ms};
    struct ts_repair_scan_rep answer;
    int len = ts_repair_scan_req_encode(&request, payload, sizeof(payload));
    int status = rpc_client_call(meta, TS_OP_REPAIR_SCAN, payload, (size_t)len, NULL, 0,
                                 REPAIRER_TIMEOUT_MS, &reply);
    if (status != TS_OK) {
        char why[256];
        rpc_reply_error_text(&reply, why, sizeof(why));
        log_warn("repair: REPAIR_SCAN failed: %s %s", status_text(status), why);
        rpc_reply_release(&reply);
        return status;
    }
    if (ts_repair_scan_rep_decode(&answer, reply.payload, reply.payload_len) != 0 ||
        (uint64_t)answer.count * ts_repair_step_rec_bytes != answer.steps.len) {
        rpc_reply_release(&reply);
        return TS_ERR_BADMSG;
    }
    struct ranked_step *ranked = calloc(answer.count ? answer.count : 1, sizeof(*ranked));
    if (!ranked) {
        rpc_reply_release(&reply);
        return TS_ERR_NOMEM;
    }
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, answer.steps.ptr, answer.steps.len);
    for (uint32_t i = 0; i < answer.count; i++) {
        struct ts_repair_step_rec record;
        (void)ts_repair_step_rec_read(&cursor, &record); /* the length was checked */
        ranked[i].order = i;
        ranked[i].step = (struct relocate_step){
            .kind = record.kind == TS_MOVE_COPY ? PLAN_COPY : PLAN_DROP,
            .ino = record.ino,
            .tile = record.tile,
            .version = record.version,
            .tile_bytes = record.kind == TS_MOVE_COPY ? record.tile_bytes : 0,
            .from_node = record.from_node,
            .to_node = record.to_node,
        };
    }
    for (uint32_t i = 0; i < answer.count; i++) {
        for (uint32_t j = 0; j < answer.count; j++) {
            if (ranked[j].step.ino == ranked[i].step.ino &&
                ranked[j].step.tile == ranked[i].step.tile && ranked[j].step.kind == PLAN_COPY)
                ranked[i].copies_needed++;
        }
    }
    qsort(ranked, answer.count, sizeof(*ranked), ranked_step_order);
    *done = answer.done != 0;
    *ino = answer.next_ino;
    *tile = answer.next_tile;
    uint32_t count = answer.count;
    rpc_reply_release(&reply);
    struct relocate_step *steps = calloc(count ? count : 1, sizeof(*steps));
    if (!steps) {
        free(ranked);
        return TS_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < count; i++)
        steps[i] = ranked[i].step;
    free(ranked);
    if (count > 0)
        repairer_run(repairer, meta, steps, count);
    free(steps);
    return TS_OK;
}

/*
 * Journal entries older than REPAIRER_ADOPT_AFTER_S nobody finished: a
 * repair or a rebalance interrupted by a restart of meta or a killed tool.
 * They would keep their tiles out of every later pass (REPAIR_SCAN leaves
 * a journaled tile alone), so the repairer runs them to their end as the
 * tool's `rebalance apply` would: a begun step is pulled and committed (or
 * undone), a committed one retired and finished. Returns a status.
 */
static int repairer_adopt_journal(struct repairer *repairer, struct rpc_client *meta)
{
    struct ts_move_rec *moves = NULL;
    size_t count = 0, stale = 0;
    char why[256] = "";
    int status = toolmeta_move_list(meta, REPAIRER_TIMEOUT_MS, &moves, &count, why, sizeof(why));
    if (status != TS_OK) {
        log_warn("repair: MOVE_LIST failed: %s %s", status_text(status), why);
        return status;
    }
    struct relocate_step *steps = calloc(count ? count : 1, sizeof(*steps));
    int64_t now = (int64_t)time(NULL);
    for (size_t i = 0; steps && i < count; i++) {
        if (now - moves[i].started_sec >= REPAIRER_ADOPT_AFTER_S)
            toolmeta_move_step(&moves[i], &steps[stale++]);
    }
    free(moves);
    if (!steps)
        return TS_ERR_NOMEM;
    if (stale > 0) {
        log_info("repair: finishing %zu relocation journal entries left over %d s ago", stale,
                 REPAIRER_ADOPT_AFTER_S);
        repairer_run(repairer, meta, steps, stale);
    }
    free(steps);
    return TS_OK;
}

static void *repairer_main(void *arg)
{
    struct repairer *repairer = arg;
    struct rpc_client *meta = NULL;

    while (!repairer_stopping(repairer)) {
        if (!meta)
            meta = rpc_client_new(repairer->endpoint);
        uint64_t ino = 0, tile = 0;
        bool done = false;
        int status = meta ? repairer_adopt_journal(repairer, meta) : TS_ERR_NOMEM;
        while (status == TS_OK && !done && !repairer_stopping(repairer))
            status = repairer_scan(repairer, meta, &ino, &tile, &done);
        if (status == TS_ERR_TIMEDOUT)
            rpc_client_destroy(&meta); /* a fresh socket after a timeout */
        if (repairer_sleep(repairer, repairer->config.interval_ms))
            break;
    }
    rpc_client_destroy(&meta);
    return NULL;
}

int repairer_start(const struct repairer_config *config, struct repairer **out)
{
    struct repairer *repairer = calloc(1, sizeof(*repairer));
    if (!repairer)
        return -ENOMEM;
    repairer->config = *config;
    if (repairer->config.interval_ms <= 0)
        repairer->config.interval_ms = REPAIRER_PASS_INTERVAL_MS;
    int err = repairer_connect_endpoint(config->meta_endpoint, repairer->endpoint,
                                        sizeof(repairer->endpoint));
    if (err < 0) {
        free(repairer);
        return err;
    }
    repairer->config.meta_endpoint = repairer->endpoint;
    repairer->sample_ms = util_monotonic_ms();
    pthread_mutex_init(&repairer->lock, NULL);
    pthread_cond_init(&repairer->wake, NULL);
    err = pthread_create(&repairer->thread, NULL, repairer_main, repairer);
    if (err != 0) {
        pthread_cond_destroy(&repairer->wake);
        pthread_mutex_destroy(&repairer->lock);
        free(repairer);
        return -err;
    }
    *out = repairer;
    return 0;
}

void repairer_stop(struct repairer **repairerp)
{
    struct repairer *repairer = *repairerp;
    if (!repairer)
        return;
    pthread_mutex_lock(&repairer->lock);
    repairer->stop = true;
    pthread_cond_broadcast(&repairer->wake);
    pthread_mutex_unlock(&repairer->lock);
    pthread_join(repairer->thread, NULL);
    pthread_cond_destroy(&repairer->wake);
    pthread_mutex_destroy(&repairer->lock);
    free(repairer);
    *repairerp = NULL;
}
