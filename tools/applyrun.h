/*
 * @file applyrun.h
 * Running relocation steps for `tessera rebalance apply`: the executor
 * (librarian/relocate.h) over rpc (relocnet.h), with a progress line on
 * stderr (redrawn in place on a terminal, one line a second otherwise),
 * a line per step that failed or was skipped, and a clean stop on SIGINT
 * or SIGTERM: no new steps, running ones finish or are undone; a second
 * signal ends the process at once.
 */
#ifndef TESSERA_TOOLS_APPLYRUN_H
#define TESSERA_TOOLS_APPLYRUN_H

#include "applylease.h"
#include "rebalanceinput.h"
#include "relocate.h"
#include "relocnet.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define APPLYRUN_EXIT_INTERRUPTED 130

/* Catches SIGINT and SIGTERM from now on (once per process). */
void applyrun_catch_signals(void);

/* True once a signal asked to stop. */
bool applyrun_interrupted(void);

/*
 * Runs steps[count] (concurrency workers, pulls paced to
 * max_bytes_per_sec, 0 = unlimited) until they end or a signal stops
 * them; input (may be NULL) names the files in messages. lease (may be
 * NULL) is renewed with the progress while they run; lost to another
 * run, it stops them as a signal would. *out gets the final counts.
 * Returns 0, or exit code 1 when the run could not start.
 */
int applyrun_steps(struct relocnet *net, const struct rebalanceinput *input,
                   const struct relocate_step *steps, size_t count, unsigned concurrency,
                   uint64_t max_bytes_per_sec, struct applylease *lease,
                   struct relocate_progress *out);

/*
 * Prints the summary of a run (what: "apply", "journal"): counts on
 * stdout, what is left on stderr. Returns its exit code: 0 (copies
 * skipped because their files were open do not fail a run), 1 when steps
 * failed, APPLYRUN_EXIT_INTERRUPTED when stopped.
 */
int applyrun_summary(const char *what, const struct relocate_progress *progress);

#endif
