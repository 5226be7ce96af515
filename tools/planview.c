/*
 * @file planview.c
 * See planview.h.
 */
#include "planview.h"

#include "fmt.h"
#include "jsonname.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

static const char *planview_basis_text(enum plan_basis basis)
{
    switch (basis) {
    case PLAN_BASIS_FREQUENT: return "the most-frequent-accessor placement";
    case PLAN_BASIS_BALANCED: return "the balanced greedy placement";
    case PLAN_BASIS_CURRENT: return "the current placement (nothing predicted better)";
    case PLAN_BASIS_LBM: return "the load-balance-matching placement";
    }
    return "?";
}

static const char *planview_basis_name(enum plan_basis basis)
{
    switch (basis) {
    case PLAN_BASIS_FREQUENT: return "frequent";
    case PLAN_BASIS_BALANCED: return "balanced";
    case PLAN_BASIS_CURRENT: return "current";
    case PLAN_BASIS_LBM: return "lbm";
    }
    return "?";
}

struct planview_counts planview_count(const struct plan *plan)
{
    struct planview_counts counts = {0};
    for (size_t i = 0; i < plan->action_count; i++) {
        switch (plan->actions[i].kind) {
        case PLAN_COPY: counts.copies++; break;
        case PLAN_MOVE: counts.moves++; break;
        case PLAN_DROP: counts.drops++; break;
        }
    }
    return counts;
}

/* "3 (alpha)" into out. */
static void planview_node_label(const struct rebalanceinput *input, uint32_t id, char *out,
                                size_t cap)
{
    snprintf(out, cap, "%" PRIu32 " (%.40s)", id, rebalanceinput_node_machine(input, id));
}

/* kind, path (a name), then the rest of a step, in this order. */
static json_t *planview_json_step(const struct rebalanceinput *input,
                                  const struct plan_action *action)
{
    const struct rebalanceinput_file *file = rebalanceinput_file_of(input, action->ino);
    json_t *object = json_pack("{s:s}", "kind", plan_action_kind_name(action->kind));
    json_t *rest = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}", "ino", (json_int_t)action->ino, "tile",
        (json_int_t)action->tile, "from", (json_int_t)action->from_node, "to",
        (json_int_t)action->to_node, "bytes",
        (json_int_t)(action->kind == PLAN_DROP ? 0 : action->tile_bytes), "version",
        (json_int_t)action->version, "cost_before", action->cost_before, "cost_after",
        action->cost_after);
    if (!object || !rest || jsonname_set(object, "path", file ? file->path : "") != 0 ||
        json_object_update(object, rest) != 0) {
        json_decref(object);
        object = NULL;
    }
    json_decref(rest);
    return object;
}

void planview_json(FILE *out, const char *path, enum plan_policy policy,
                   const struct rebalanceinput *input, const struct plan *plan)
{
    json_t *root = json_object();
    json_t *rest = json_pack("{s:s, s:s, s:I, s:I, s:I, s:f, s:f}", "policy",
                             plan_policy_name(policy), "basis", planview_basis_name(plan->basis),
                             "files", (json_int_t)input->file_count, "tiles",
                             (json_int_t)input->tile_count, "transfer_bytes",
                             (json_int_t)plan->transfer_bytes, "makespan_before",
                             plan->makespan_before, "makespan_after", plan->makespan_after);
    json_t *steps = json_array();
    json_t *nodes = json_array();
    bool modelled = plan->model_seconds_before > 0;
    bool ok = root && rest && steps && nodes && jsonname_set(root, "path", path) == 0 &&
              json_object_update(root, rest) == 0 &&
              json_object_set_new(root, "model_seconds_before",
                                  modelled ? json_real(plan->model_seconds_before)
                                           : json_null()) == 0 &&
              json_object_set_new(root, "model_seconds_after",
                                  modelled ? json_real(plan->model_seconds_after)
                                           : json_null()) == 0;

    for (size_t i = 0; ok && i < plan->action_count; i++)
        ok = json_array_append_new(steps, planview_json_step(input, &plan->actions[i])) == 0;
    for (size_t i = 0; ok && i < plan->node_count && i < input->node_count; i++) {
        json_t *node = json_pack("{s:I}", "id", (json_int_t)input->nodes[i].id);
        json_t *figures = json_pack("{s:b, s:f, s:f}", "up", input->nodes[i].up ? 1 : 0,
                                    "seconds_before", plan->node_seconds_before[i],
                                    "seconds_after", plan->node_seconds_after[i]);
        ok = node && figures &&
             jsonname_set(node, "machine",
                          input->nodes[i].machine ? input->nodes[i].machine : "") == 0 &&
             json_object_update(node, figures) == 0;
        json_decref(figures);
        if (ok)
            ok = json_array_append_new(nodes, node) == 0;
        else
            json_decref(node);
    }
    json_decref(rest);
    if (ok) {
        /* set_new takes its value even when it fails. */
        ok = json_object_set_new(root, "steps", steps) == 0;
        ok = json_object_set_new(root, "nodes", nodes) == 0 && ok;
        steps = nodes = NULL;
    }
    json_decref(steps);
    json_decref(nodes);
    if (!ok) {
        json_decref(root);
        root = NULL;
    }
    if (jsonname_print(out, root) != 0)
        fprintf(stderr, "tessera rebalance: cannot write the JSON (out of memory?)\n");
}

void planview_text(FILE *out, const char *path, enum plan_policy policy,
                   const struct rebalanceinput *input, const struct plan *plan)
{
    struct planview_counts counts = planview_count(plan);
    char transfer[16], bytes[16], from[64], to[64];

    fmt_size(plan->transfer_bytes, transfer, sizeof(transfer));
    fprintf(out, "plan for %s, policy %s, from %s\n", path, plan_policy_name(policy),
            planview_basis_text(plan->basis));
    fprintf(out,
            "%zu file%s, %zu profiled tile%s; %zu step%s: %zu cop%s, %zu move%s, %zu drop%s; "
            "%s to transfer\n",
            input->file_count, input->file_count == 1 ? "" : "s", input->tile_count,
            input->tile_count == 1 ? "" : "s", plan->action_count,
            plan->action_count == 1 ? "" : "s", counts.copies, counts.copies == 1 ? "y" : "ies",
            counts.moves, counts.moves == 1 ? "" : "s", counts.drops, counts.drops == 1 ? "" : "s",
            transfer);
    if (plan->action_count == 0)
        fprintf(out, "nothing to do: %s\n",
                input->tile_count ? "the tiles are where the policy wants them"
                                  : "no profiled tiles (tessera profile start PATH, "
                                    "then use the files)");
    uint64_t shown_ino = 0;
    for (size_t i = 0; i < plan->action_count; i++) {
        const struct plan_action *action = &plan->actions[i];
        if (i == 0 || action->ino != shown_ino) {
            const struct rebalanceinput_file *file = rebalanceinput_file_of(input, action->ino);
            fprintf(out, "\n%s (inode %" PRIu64 "):\n", file ? file->path : "?", action->ino);
            fprintf(out, "  %-5s %-5s %-8s %-18s    %-18s %8s %12s %12s\n", "step", "kind", "tile",
                    "from", "to", "bytes", "before (s)", "after (s)");
            shown_ino = action->ino;
        }
        planview_node_label(input, action->from_node, from, sizeof(from));
        if (action->kind == PLAN_DROP)
            snprintf(to, sizeof(to), "-");
        else
            planview_node_label(input, action->to_node, to, sizeof(to));
        fmt_size(action->kind == PLAN_DROP ? 0 : action->tile_bytes, bytes, sizeof(bytes));
        fprintf(out, "  %-5zu %-5s %-8" PRIu64 " %-18s -> %-18s %8s %12.6f %12.6f\n", i + 1,
                plan_action_kind_name(action->kind), action->tile, from, to, bytes,
                action->cost_before, action->cost_after);
    }
    fprintf(out, "\npredicted busy time of the profiled I/O per datanode:\n");
    fprintf(out, "%-8s %-20s %-5s %12s %12s\n", "node", "machine", "state", "before (s)",
            "after (s)");
    for (size_t i = 0; i < plan->node_count && i < input->node_count; i++)
        fprintf(out, "%-8" PRIu32 " %-20s %-5s %12.6f %12.6f\n", input->nodes[i].id,
                input->nodes[i].machine ? input->nodes[i].machine : "-",
                input->nodes[i].up ? "up" : "down", plan->node_seconds_before[i],
                plan->node_seconds_after[i]);
    planview_predictions(out, plan);
}

/* "what: before -> after (N.NNx faster)". */
static void planview_before_after(FILE *out, const char *what, double before, double after)
{
    fprintf(out, "%s: %.6f s -> %.6f s", what, before, after);
    if (after > 0 && before > after)
        fprintf(out, " (%.2fx faster)", before / after);
    fprintf(out, "\n");
}

void planview_predictions(FILE *out, const struct plan *plan)
{
    planview_before_after(out, "makespan", plan->makespan_before, plan->makespan_after);
    if (plan->model_seconds_before > 0)
        planview_before_after(out, "performance model (mounts, links, datanodes)",
                              plan->model_seconds_before, plan->model_seconds_after);
}
