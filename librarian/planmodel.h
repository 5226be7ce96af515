/*
 * @file planmodel.h
 * The performance model (perfmodel.h) as a planner's predictor (plan.h's
 * struct plan_predictor): the seconds a profile's recorded I/O takes with
 * a given placement of its tiles, on a cluster the tool built from the
 * calibration and the datanodes' measures (tools/modelcluster.h). Issue
 * 32's step 4: `balanced` and every plan's "predicted before/after" then
 * count what plan_cost.h leaves out, the mounts' CPU, each machine's link
 * and the datanodes' CPU, as queues that overlap.
 *
 * Each (tile, machine) access of the profile becomes requests of at most
 * one tile's bytes from that machine's mount (one client per machine):
 * a read to the holder plan_cost.h would serve it from (a local one, else
 * the fastest), a write to every holder (the mount fans writes out). The
 * reads and the writes are predicted as two phases whose times add up,
 * each start-up + slowest resource + closing, as `tessera model explain`
 * does for one file. Pure: no I/O, no globals.
 */
#ifndef TESSERA_PLANMODEL_H
#define TESSERA_PLANMODEL_H

#include "perfmodel.h"
#include "plan.h"
#include "plan_work.h"

#include <stddef.h>
#include <stdint.h>

struct planmodel {
    const struct perfmodel_cluster *cluster;
    const uint32_t *node_ids;    /* cluster->nodes[i] is datanode node_ids[i] */
    const char *const *machines; /* cluster->links[i] is machine machines[i]'s */
    /* Out, from the last prediction: requests left out (a holder or a
     * machine the model does not have, more machines than it takes). */
    size_t skipped;
    /* Out: the reads' and the writes' predictions of the last call. */
    struct perfmodel_result reads, writes;
    int have_reads, have_writes;
};

/*
 * plan_predictor's seconds: arg is a struct planmodel. 0 when nothing of
 * the profile could be predicted.
 */
double planmodel_seconds(void *arg, const struct plan_work *work,
                         const struct plan_placement *placements);

#endif
