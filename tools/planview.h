/*
 * @file planview.h
 * What `tessera rebalance plan` prints about a plan (librarian/plan.h)
 * made from a struct rebalanceinput: its steps grouped by file, each
 * tile's predicted I/O time before and after, each datanode's predicted
 * busy time and the makespans, the bytes to transfer; as text or as one
 * JSON object. Pure formatting.
 */
#ifndef TESSERA_TOOLS_PLANVIEW_H
#define TESSERA_TOOLS_PLANVIEW_H

#include "plan.h"
#include "rebalanceinput.h"

#include <stddef.h>
#include <stdio.h>

struct planview_counts {
    size_t copies;
    size_t moves;
    size_t drops;
};

/* How many steps of each kind the plan has. */
struct planview_counts planview_count(const struct plan *plan);

/* The plan for the files under path as tables. */
void planview_text(FILE *out, const char *path, enum plan_policy policy,
                   const struct rebalanceinput *input, const struct plan *plan);

/*
 * The plan's predictions, before -> after: the makespan (plan_cost.h) and,
 * when the plan had it, the performance model's seconds.
 */
void planview_predictions(FILE *out, const struct plan *plan);

/*
 * The plan as {"path", "policy", "basis", "files", "tiles",
 * "transfer_bytes", "makespan_before", "makespan_after",
 * "model_seconds_before", "model_seconds_after" (null without the
 * performance model), "steps": [{kind,
 * path, ino, tile, from, to, bytes, version, cost_before, cost_after}],
 * "nodes": [{id, machine, up, seconds_before, seconds_after}]}.
 */
void planview_json(FILE *out, const char *path, enum plan_policy policy,
                   const struct rebalanceinput *input, const struct plan *plan);

#endif
