/*
 * @file applyrun.c
 * See applyrun.h. The workers (librarian/relocate.c) run with SIGINT and
 * SIGTERM blocked, so the signals reach the main thread, which draws the
 * progress and turns a signal into relocate_stop(). Worker reports and the
 * progress line share stderr under `applyrun_run.output_lock`.
 */
#include "applyrun.h"

#include "fmt.h"
#include "progress.h"
#include "status.h"

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define APPLYRUN_WHO "tessera rebalance"
#define APPLYRUN_TICK_MS 100

static volatile sig_atomic_t applyrun_signals;

static void applyrun_on_signal(int signo)
{
    applyrun_signals++;
    /* The first signal stops cleanly; the next one ends the process at once. */
    signal(signo, SIG_DFL);
}

void applyrun_catch_signals(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = applyrun_on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
}

struct applyrun_run {
    const struct rebalanceinput *input; /* NULL for journal entries: no paths */
    pthread_mutex_t output_lock;
    bool tty;
    bool line_shown; /* a progress line is on the terminal's last line */
};

/* "move of tile 3 of /mnt/f (datanode 1 -> 3)" into out. */
static void applyrun_describe(const struct applyrun_run *run, const struct relocate_step *step,
                              char *out, size_t cap)
{
    const struct rebalanceinput_file *file =
        run->input ? rebalanceinput_file_of(run->input, step->ino) : NULL;
    char where[PATH_MAX + 32];

    if (file)
        snprintf(where, sizeof(where), "%.*s", PATH_MAX, file->path);
    else
        snprintf(where, sizeof(where), "inode %" PRIu64, step->ino);
    if (step->kind == PLAN_DROP)
        snprintf(out, cap, "drop of tile %" PRIu64 " of %s (datanode %" PRIu32 ")", step->tile,
                 where, step->from_node);
    else
        snprintf(out, cap, "%s of tile %" PRIu64 " of %s (datanode %" PRIu32 " -> %" PRIu32 ")",
                 plan_action_kind_name(step->kind), step->tile, where, step->from_node,
                 step->to_node);
}

/* Clears the progress line on a terminal; call with output_lock held. */
static void applyrun_clear_line(struct applyrun_run *run)
{
    if (run->tty && run->line_shown) {
        fputs("\r\033[K", stderr);
        run->line_shown = false;
    }
}

static void applyrun_report(void *ctx, const struct relocate_step *step,
                            const struct relocate_result *result)
{
    struct applyrun_run *run = ctx;
    char what[PATH_MAX + 128];

    if (result->outcome == RELOCATE_DONE)
        return;
    if (result->outcome == RELOCATE_NOT_RUN)
        return; /* counted in the summary */
    applyrun_describe(run, step, what, sizeof(what));
    pthread_mutex_lock(&run->output_lock);
    applyrun_clear_line(run);
    if (result->outcome == RELOCATE_STALE)
        fprintf(stderr, "%s: %s skipped: the file changed (%s)\n", APPLYRUN_WHO, what, result->why);
    else if (result->outcome == RELOCATE_FAILED)
        fprintf(stderr, "%s: %s failed: %s\n", APPLYRUN_WHO, what, result->why);
    else
        fprintf(stderr, "%s: %s done; note: %s\n", APPLYRUN_WHO, what, result->why);
    pthread_mutex_unlock(&run->output_lock);
}

static double applyrun_elapsed(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static void applyrun_draw(struct applyrun_run *run, const struct relocate_progress *progress,
                          double elapsed, bool final)
{
    struct progress_view view = {
        .tiles_done = progress->tiles_finished,
        .tiles_total = progress->tiles_total,
        .bytes_done = progress->bytes_done,
        .bytes_total = progress->bytes_total,
        .elapsed_sec = elapsed,
        .failed = progress->steps_failed,
        .stale = progress->steps_stale,
    };
    char line[256];

    progress_format(&view, line, sizeof(line));
    pthread_mutex_lock(&run->output_lock);
    if (run->tty) {
        fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
        run->line_shown = !final;
    } else {
        fprintf(stderr, "%s\n", line);
    }
    fflush(stderr);
    pthread_mutex_unlock(&run->output_lock);
}

/*
 * Runs steps with progress until they end or a signal stops them. *out
 * gets the final counts. Returns 0, or exit code 1 when the run could not
 * start.
 */
int applyrun_steps(struct relocnet *net, const struct rebalanceinput *input,
                   const struct relocate_step *steps, size_t count, unsigned concurrency,
                   uint64_t max_bytes_per_sec, struct applylease *lease,
                   struct relocate_progress *out)
{
    struct applyrun_run run = {.input = input, .tty = isatty(STDERR_FILENO) == 1};
    struct relocate_options relocate_options = {
        .concurrency = concurrency,
        .max_bytes_per_sec = max_bytes_per_sec,
        .report = applyrun_report,
        .report_ctx = &run,
    };
    struct relocate_transport transport;
    struct relocate *relocation = NULL;
    struct timespec start;
    sigset_t block, saved;
    double last_draw = -1;
    bool stop_sent = false;
    /* Steps an earlier run of this process (the journal's) already counted. */
    uint64_t lease_base = lease ? lease->steps_total : 0;
    int rc;

    pthread_mutex_init(&run.output_lock, NULL);
    relocnet_transport(net, &transport);
    clock_gettime(CLOCK_MONOTONIC, &start);
    /* The workers inherit this mask: signals go to this thread only. */
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &saved);
    rc = relocate_start(steps, count, &transport, &relocate_options, &relocation);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc != 0) {
        fprintf(stderr, "%s: cannot start the relocation workers: %s\n", APPLYRUN_WHO,
                strerror(-rc));
        pthread_mutex_destroy(&run.output_lock);
        return 1;
    }
    while (relocate_wait(relocation, APPLYRUN_TICK_MS) != 0) {
        struct relocate_progress progress;
        double elapsed = applyrun_elapsed(&start);
        if (lease) {
            relocate_progress(relocation, &progress);
            applylease_progress(lease, lease_base + progress.steps_total,
                                lease_base + progress.steps_done + progress.steps_stale +
                                    progress.steps_failed);
            if (!applylease_tick(lease) && !stop_sent) {
                relocate_stop(relocation);
                stop_sent = true;
                pthread_mutex_lock(&run.output_lock);
                applyrun_clear_line(&run);
                fprintf(stderr,
                        "%s: stopping: this run's apply lock lapsed (meta did not hear from it "
                        "for %d s) and another run took it\n",
                        APPLYRUN_WHO, APPLYLEASE_LEASE_MS / 1000);
                pthread_mutex_unlock(&run.output_lock);
            }
        }
        if (applyrun_signals > 0 && !stop_sent) {
            relocate_stop(relocation);
            stop_sent = true;
            relocate_progress(relocation, &progress);
            pthread_mutex_lock(&run.output_lock);
            applyrun_clear_line(&run);
            if (progress.steps_running > 0)
                fprintf(stderr,
                        "%s: stopping: no new steps; waiting for %zu running step%s to finish "
                        "or be undone (Ctrl-C again quits at once; apply resumes what it "
                        "leaves)\n",
                        APPLYRUN_WHO, progress.steps_running,
                        progress.steps_running == 1 ? "" : "s");
            else
                fprintf(stderr, "%s: stopping: no new steps\n", APPLYRUN_WHO);
            pthread_mutex_unlock(&run.output_lock);
        }
        /* Redrawn in place on a terminal; one line a second into a file or pipe. */
        if (elapsed - last_draw >= (run.tty ? 0.2 : 1.0)) {
            relocate_progress(relocation, &progress);
            applyrun_draw(&run, &progress, elapsed, false);
            last_draw = elapsed;
        }
    }
    relocate_progress(relocation, out);
    applyrun_draw(&run, out, applyrun_elapsed(&start), true);
    relocate_destroy(&relocation);
    pthread_mutex_destroy(&run.output_lock);
    return 0;
}

/* The summary line of a run; returns the exit code it stands for. */
int applyrun_summary(const char *what, const struct relocate_progress *progress)
{
    char pulled[16];

    fmt_size(progress->bytes_done, pulled, sizeof(pulled));
    printf("%s: %zu step%s: %zu done, %zu skipped (file changed), %zu failed, %zu not run; %s "
           "pulled\n",
           what, progress->steps_total, progress->steps_total == 1 ? "" : "s", progress->steps_done,
           progress->steps_stale, progress->steps_failed, progress->steps_not_run, pulled);
    if (progress->pulled_again)
        printf("%zu tile%s written while being pulled: pulled again from the frozen source\n",
               progress->pulled_again, progress->pulled_again == 1 ? " was" : "s were");
    if (progress->stopping) {
        size_t left = progress->steps_not_run + progress->steps_failed;
        fprintf(stderr,
                "%s: interrupted: %zu step%s left; run `tessera rebalance apply` again "
                "to finish\n",
                APPLYRUN_WHO, left, left == 1 ? "" : "s");
        return APPLYRUN_EXIT_INTERRUPTED;
    }
    if (progress->steps_failed > 0) {
        fprintf(stderr, "%s: %zu step%s failed; run `tessera rebalance apply` again\n",
                APPLYRUN_WHO, progress->steps_failed, progress->steps_failed == 1 ? "" : "s");
        return 1;
    }
    return 0;
}

bool applyrun_interrupted(void)
{
    return applyrun_signals > 0;
}
