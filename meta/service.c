/*
 * @file service.c
 * See service.h.
 */
#include "service.h"

#include "clusterid.h"
#include "inodes.h"
#include "log.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>

struct service_prepare_work {
    struct service *service;
    uint64_t reaped;
};

/*
 * Start-up work in one transaction: the root exists, no orphan remains,
 * the cluster has its id.
 */
static int service_prepare(struct store_txn *txn, void *arg)
{
    struct service_prepare_work *work = arg;
    int err = inodes_create_root(txn, util_now());
    if (err == 0)
        err = inodes_reap_orphans(txn, &work->reaped);
    if (err == 0)
        err = clusterid_get(txn, work->service->cluster_id);
    return err == 0 ? TS_OK : TS_ERR_INTERNAL;
}

int service_open(const char *data_dir, int64_t node_timeout_ms, struct service **servicep)
{
    struct service *service;
    struct service_prepare_work work = {0};
    int err;

    *servicep = NULL;
    service = calloc(1, sizeof(*service));
    if (!service)
        return -ENOMEM;
    service->node_timeout_ms = node_timeout_ms;
    service->default_placement = SERVICE_DEFAULT_PLACEMENT;
    service->opens = opens_new();
    service->leases = leases_new();
    service->live = nodes_live_new(node_timeout_ms);
    service->scratch = malloc(SERVICE_SCRATCH_BYTES);
    if (!service->opens || !service->leases || !service->live || !service->scratch) {
        err = -ENOMEM;
        goto fail;
    }
    err = store_open(data_dir, &service->store);
    if (err < 0)
        goto fail;
    work.service = service;
    if (store_write(service->store, service_prepare, &work) != TS_OK) {
        log_error("cannot prepare the metadata store in %s", data_dir);
        err = -EIO;
        goto fail;
    }
    if (work.reaped > 0)
        log_info("deleted %llu orphaned inodes left by the previous run",
                 (unsigned long long)work.reaped);
    log_info("cluster id %s", service->cluster_id);
    *servicep = service;
    return 0;

fail:
    service_close(&service);
    return err;
}

void service_close(struct service **servicep)
{
    if (!servicep || !*servicep)
        return;
    struct service *service = *servicep;
    store_close(&service->store);
    nodes_live_destroy(&service->live);
    opens_destroy(&service->opens);
    leases_destroy(&service->leases);
    free(service->scratch);
    free(service);
    *servicep = NULL;
}

void service_tick(struct service *service)
{
    /* The store syncs on its own thread (store.h). */
    nodes_live_check(service->live, util_monotonic_ms());
}
