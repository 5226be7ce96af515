/*
 * @file rebalancemodel.c
 * See rebalancemodel.h.
 */
#include "rebalancemodel.h"

#include "modelprobe.h"
#include "status.h"

#include <string.h>
#include <unistd.h>

int rebalancemodel_build(struct rebalancemodel *out, struct rpc_client *meta, int timeout_ms,
                         const struct toolmeta_node *nodes, size_t count,
                         const struct plan_profile *profile, uint64_t network_bytes_per_sec)
{
    struct modelcalib calib = {0};
    char host[256];

    memset(out, 0, sizeof(*out));
    /* No calibration stored (or unreadable): the measured disks and defaults. */
    if (modelprobe_load(meta, timeout_ms, &calib) != TS_OK)
        memset(&calib, 0, sizeof(calib));
    out->calibrated = calib.when > 0;
    if (gethostname(host, sizeof(host)) != 0)
        strcpy(host, "localhost");
    host[sizeof(host) - 1] = '\0';
    /* The mounts are the profile's machines, not this one: no core count. */
    if (modelcluster_build(nodes, count, &calib, host, 0, 0, &out->cluster) != 0)
        return -1;
    for (size_t i = 0; i < profile->count; i++) {
        if (modelcluster_machine_index(&out->cluster, profile->accesses[i].machine) < 0)
            return -1;
    }
    struct perfmodel_cluster *c = &out->cluster.model;
    for (size_t m = 0; m < c->n_machines; m++) {
        out->machines[m] = out->cluster.machines[m];
        if (network_bytes_per_sec > 0)
            c->links[m].mbps = (double)network_bytes_per_sec / 1e6;
    }
    out->model = (struct planmodel){
        .cluster = c, .node_ids = out->cluster.node_ids, .machines = out->machines};
    out->predictor = (struct plan_predictor){planmodel_seconds, &out->model};
    return 0;
}
