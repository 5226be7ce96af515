/*
 * @file plan.c
 * Policy dispatch, names and release of plans (see plan.h). The planners
 * themselves are plan_frequent.c, plan_balanced.c and plan_lbm.c; the working form and
 * the plan's steps are built in plan_work.c.
 */
#include "plan.h"

#include "plan_balanced.h"
#include "plan_frequent.h"
#include "plan_lbm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int plan_make(enum plan_policy policy, const struct plan_cluster *cluster,
              const struct plan_profile *profile, const struct plan_tilemap *map,
              const struct plan_options *options, struct plan *out)
{
    switch (policy) {
    case PLAN_FREQUENT: return plan_frequent(cluster, profile, map, options, out);
    case PLAN_BALANCED: return plan_balanced(cluster, profile, map, options, out);
    case PLAN_LBM: return plan_lbm(cluster, profile, map, options, out);
    }
    if (out)
        memset(out, 0, sizeof(*out));
    return -EINVAL;
}

void plan_release(struct plan *plan)
{
    if (!plan)
        return;
    free(plan->actions);
    free(plan->changed);
    free(plan->node_seconds_before);
    free(plan->node_seconds_after);
    memset(plan, 0, sizeof(*plan));
}

int plan_policy_parse(const char *name, enum plan_policy *out)
{
    if (name && strcmp(name, "frequent") == 0)
        *out = PLAN_FREQUENT;
    else if (name && strcmp(name, "balanced") == 0)
        *out = PLAN_BALANCED;
    else if (name && strcmp(name, "lbm") == 0)
        *out = PLAN_LBM;
    else
        return -EINVAL;
    return 0;
}

const char *plan_policy_name(enum plan_policy policy)
{
    switch (policy) {
    case PLAN_FREQUENT: return "frequent";
    case PLAN_BALANCED: return "balanced";
    case PLAN_LBM: return "lbm";
    }
    return "?";
}

const char *plan_action_kind_name(enum plan_action_kind kind)
{
    switch (kind) {
    case PLAN_COPY: return "copy";
    case PLAN_MOVE: return "move";
    case PLAN_DROP: return "drop";
    }
    return "?";
}
