/*
 * @file service.c
 * See service.h. Orphans are never deleted in the first mount lease after
 * a start: open counts live in memory only (sessions.h), so until every
 * live mount has renewed and announced its opens, "nobody holds it open"
 * cannot be told from "its holder has not spoken yet".
 */
#include "service.h"

#include "clusterid.h"
#include "inodes.h"
#include "log.h"
#include "parents.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>

struct service_prepare_work {
    struct service *service;
    bool fresh;         /* the store was made by this start */
    bool parents_built; /* the parents table was built from the dirents (an older store) */
};

/* Start-up work in one transaction: the root exists, the cluster has its id. */
static int service_prepare(struct store_txn *txn, void *arg)
{
    struct service_prepare_work *work = arg;
    struct inodes_record root;
    int err = inodes_get(txn, TS_ROOT_INO, &root);
    work->fresh = err == -ENOENT;
    if (err == -ENOENT)
        err = inodes_create_root(txn, util_now());
    if (err == 0)
        err = clusterid_get(txn, work->service->cluster_id);
    if (err == 0)
        err = parents_ensure(txn, &work->parents_built);
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
    service->defaults.placement = SERVICE_DEFAULT_PLACEMENT;
    service->defaults.copies = SERVICE_DEFAULT_COPIES;
    service->sessions = sessions_new(SESSIONS_DEFAULT_LEASE_MS);
    service->leases = leases_new();
    service->session_keys = sessionkeys_new();
    service->live = nodes_live_new(node_timeout_ms);
    service->metrics_dir = metricsdir_new();
    service->scratch = malloc(SERVICE_SCRATCH_BYTES);
    if (!service->sessions || !service->leases || !service->session_keys || !service->live ||
        !service->metrics_dir || !service->scratch) {
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
    log_info("cluster id %s", service->cluster_id);
    if (work.parents_built && !work.fresh)
        log_info("built the parents table of a store from before it (subtree exports need it)");
    service->started_ms = util_monotonic_ms();
    service->fresh_store = work.fresh;
    service_set_mount_lease(service, SESSIONS_DEFAULT_LEASE_MS);
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
    sessions_destroy(&service->sessions);
    leases_destroy(&service->leases);
    sessionkeys_destroy(&service->session_keys);
    metricsdir_destroy(&service->metrics_dir);
    exports_clear(&service->exports);
    free(service->scratch);
    free(service);
    *servicep = NULL;
}

void service_set_mount_lease(struct service *service, int64_t lease_ms)
{
    sessions_set_lease_ms(service->sessions, lease_ms);
    /* A store made by this start: no mount can hold anything from before. */
    service->reap_after_ms =
        service->started_ms + (service->fresh_store ? 0 : sessions_lease_ms(service->sessions));
}

bool service_may_reap(const struct service *service, int64_t now_ms)
{
    /* The sweep ends the grace (a test may run it at a time of its choice). */
    return service->orphans_swept || now_ms >= service->reap_after_ms;
}

struct service_reap_op {
    struct service *service;
    const uint64_t *inos;
    size_t count;
    uint64_t reaped;
};

static int service_reap_body(struct store_txn *txn, void *arg)
{
    struct service_reap_op *op = arg;
    op->reaped = 0; /* the body may run twice */
    for (size_t i = 0; i < op->count; i++) {
        struct inodes_record record;
        if (sessions_open_count(op->service->sessions, op->inos[i]) > 0)
            continue;
        int err = inodes_get(txn, op->inos[i], &record);
        if (err == -ENOENT || (err == 0 && record.attr.nlink > 0))
            continue;
        if (err == 0)
            err = inodes_delete(txn, op->inos[i]);
        if (err < 0)
            return TS_ERR_IO;
        op->reaped++;
    }
    return TS_OK;
}

int service_reap(struct service *service, const uint64_t *inos, size_t count, int64_t now_ms,
                 uint64_t *reaped)
{
    struct service_reap_op op = {.service = service, .inos = inos, .count = count};
    int status = TS_OK;
    if (count > 0 && service_may_reap(service, now_ms))
        status = store_write(service->store, service_reap_body, &op);
    if (status != TS_OK) {
        log_warn("%zu orphan inodes not deleted (%s); they go at the next start", count,
                 status_text(status));
        op.reaped = 0;
    }
    if (reaped)
        *reaped = op.reaped;
    return status;
}

/* The start-up sweep keeps what a mount announced it holds open. */
static bool service_held(void *ctx, uint64_t ino)
{
    return sessions_open_count(ctx, ino) > 0;
}

static int service_sweep_body(struct store_txn *txn, void *arg)
{
    struct service_reap_op *op = arg;
    int err = inodes_reap_orphans(txn, service_held, op->service->sessions, &op->reaped);
    return err == 0 ? TS_OK : TS_ERR_IO;
}

void service_tick_at(struct service *service, int64_t now_ms)
{
    struct sessions_freed freed = {0};
    size_t ended = 0;
    uint64_t dropped = 0;
    uint64_t reaped = 0;

    /* The store syncs on its own thread (store.h). */
    nodes_live_check(service->live, now_ms);
    if (sessions_expire(service->sessions, now_ms, &freed, &ended, &dropped) < 0)
        log_warn("out of memory while ending expired mount sessions: some orphans stay until "
                 "the next start");
    if (!service->orphans_swept && service_may_reap(service, now_ms)) {
        struct service_reap_op sweep = {.service = service};
        if (store_write(service->store, service_sweep_body, &sweep) != TS_OK)
            log_warn("orphaned inodes not deleted; they go at the next start");
        else if (!service->fresh_store)
            log_info("orphan sweep: deleted %llu unlinked inodes no mount announced it holds "
                     "open; %zu mount sessions known",
                     (unsigned long long)sweep.reaped, sessions_count(service->sessions));
        service->orphans_swept = true;
    } else if (freed.count > 0) {
        service_reap(service, freed.inos, freed.count, now_ms, &reaped);
    }
    if (ended > 0)
        log_warn("%zu mount sessions expired (their mounts stopped renewing for %lld ms): "
                 "dropped their %llu opens, deleted %llu orphaned inodes nobody holds open",
                 ended, (long long)sessions_lease_ms(service->sessions),
                 (unsigned long long)dropped, (unsigned long long)reaped);
    sessions_freed_clear(&freed);
}

void service_tick(struct service *service)
{
    service_tick_at(service, util_monotonic_ms());
}
