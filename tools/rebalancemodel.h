/*
 * @file rebalancemodel.h
 * The performance model as `tessera rebalance`'s predictor (librarian's
 * planmodel.h): the cluster `tessera model` predicts with (the stored
 * calibration, the datanodes' measured disks and throttles, defaults for
 * the rest; tools/modelcluster.h), every machine of the profile added to
 * it, each machine's link at --network-mbps when given.
 */
#ifndef TESSERA_TOOLS_REBALANCEMODEL_H
#define TESSERA_TOOLS_REBALANCEMODEL_H

#include "modelcluster.h"
#include "plan.h"
#include "planmodel.h"
#include "rpc.h"
#include "toolmeta.h"

#include <stdbool.h>
#include <stdint.h>

struct rebalancemodel {
    struct modelcluster cluster;
    const char *machines[PERFMODEL_MAX_MACHINES];
    struct planmodel model;
    struct plan_predictor predictor;
    bool calibrated; /* from `tessera model calibrate`, not only defaults */
};

/*
 * Builds the predictor for a plan of `profile` over `nodes`. Returns 0;
 * -1 when the model cannot be built (no datanode up, more machines than it
 * takes): the plan is then made without it, and the caller says so.
 */
int rebalancemodel_build(struct rebalancemodel *out, struct rpc_client *meta, int timeout_ms,
                         const struct toolmeta_node *nodes, size_t count,
                         const struct plan_profile *profile, uint64_t network_bytes_per_sec);

#endif
