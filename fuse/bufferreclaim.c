/*
 * @file bufferreclaim.c
 * See bufferreclaim.h. A file written a little at a time keeps its partial
 * tiles until close: many such files open at once would hold the whole
 * write budget while their one writer waits for more. So once a writer
 * finds the budget spent (and has sent its own file's other buffers), this
 * thread sends the buffers of other files that no write touched for
 * RECLAIM_IDLE_MS, skipping files whose lock is taken.
 */
#include "bufferreclaim.h"

#include "openfiles.h"
#include "util.h"
#include "writebehind.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

/* How often the reclaimer looks again while writers still wait for budget,
 * and how long a buffer must have gone unwritten for it to send it. */
#define RECLAIM_RETRY_MS 20
#define RECLAIM_IDLE_MS 50

/*
 * Writes out the file's buffers that no write touched for RECLAIM_IDLE_MS
 * (a stream's buffer being filled stays: sent now it would cost its tile
 * two writes). Returns how many. Called with file->lock held.
 */
static uint64_t buffers_write_out_idle(struct datapath *datapath, struct open_file *file)
{
    uint64_t sent = 0;
    for (;;) {
        int64_t now = util_monotonic_ms();
        struct write_buffer *idle = NULL;
        for (int i = 0; i < file->buffer_limit && !idle; i++) {
            struct write_buffer *buffer = &file->buffers[i];
            if (buffer->used && now - buffer->written_ms >= RECLAIM_IDLE_MS)
                idle = buffer;
        }
        if (!idle)
            return sent;
        writebehind_write_out(datapath, file, idle); /* may let the lock go: look again */
        sent++;
    }
}

/* Called by budget_take before it waits for write budget. */
static void reclaim_wanted(void *arg)
{
    struct datapath *datapath = arg;
    pthread_mutex_lock(&datapath->reclaim_lock);
    datapath->reclaim_wanted = true;
    pthread_cond_signal(&datapath->reclaim_wake);
    pthread_mutex_unlock(&datapath->reclaim_lock);
}

/*
 * Sends the idle buffers of every open file whose lock is free. A locked
 * file is skipped, not waited for: its holder may be the writer waiting for
 * budget.
 */
static void reclaim_pass(struct datapath *datapath)
{
    size_t count;
    struct open_file **files = openfiles_hold_all(datapath, &count);
    if (!files)
        return;
    for (size_t i = 0; i < count; i++) {
        struct open_file *file = files[i];
        if (pthread_mutex_trylock(&file->lock) == 0) {
            datapath->buffers_reclaimed += buffers_write_out_idle(datapath, file);
            pthread_mutex_unlock(&file->lock);
        }
        openfiles_put(datapath, file);
    }
    free(files);
}

/* Reclaims when asked, then every RECLAIM_RETRY_MS while writers still wait
 * (their other files' buffers go idle meanwhile, locked files come free). */
static void *reclaimer_main(void *arg)
{
    struct datapath *datapath = arg;
    pthread_mutex_lock(&datapath->reclaim_lock);
    while (!datapath->stopping) {
        if (!datapath->reclaim_wanted) {
            pthread_cond_wait(&datapath->reclaim_wake, &datapath->reclaim_lock);
            continue;
        }
        datapath->reclaim_wanted = false;
        pthread_mutex_unlock(&datapath->reclaim_lock);
        reclaim_pass(datapath);
        pthread_mutex_lock(&datapath->reclaim_lock);
        if (!datapath->reclaim_wanted && !datapath->stopping &&
            budget_wanted(&datapath->write_budget)) {
            struct timespec until = util_monotonic_deadline(RECLAIM_RETRY_MS);
            pthread_cond_timedwait(&datapath->reclaim_wake, &datapath->reclaim_lock, &until);
            datapath->reclaim_wanted = budget_wanted(&datapath->write_budget);
        }
    }
    pthread_mutex_unlock(&datapath->reclaim_lock);
    return NULL;
}

bool bufferreclaim_start(struct datapath *datapath)
{
    pthread_mutex_init(&datapath->reclaim_lock, NULL);
    util_cond_init_monotonic(&datapath->reclaim_wake);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    datapath->reclaimer_running =
        pthread_create(&datapath->reclaimer, NULL, reclaimer_main, datapath) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!datapath->reclaimer_running)
        return false;
    budget_on_short(&datapath->write_budget, reclaim_wanted, datapath);
    return true;
}

void bufferreclaim_stop(struct datapath *datapath)
{
    if (datapath->reclaimer_running) {
        pthread_mutex_lock(&datapath->reclaim_lock);
        datapath->stopping = true;
        pthread_cond_signal(&datapath->reclaim_wake);
        pthread_mutex_unlock(&datapath->reclaim_lock);
        pthread_join(datapath->reclaimer, NULL);
    }
    pthread_cond_destroy(&datapath->reclaim_wake);
    pthread_mutex_destroy(&datapath->reclaim_lock);
}
