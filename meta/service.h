/*
 * @file service.h
 * The state of one metadata service: the store, the in-memory opens of
 * mount sessions and datanode liveness, and a scratch buffer for building
 * replies. It is
 * the `ctx` every handler of handlers.c receives, and what the daemon, the
 * unit tests and the fuzzer create, so all three run the same code.
 * Single-threaded: one request at a time.
 */
#ifndef TESSERA_META_SERVICE_H
#define TESSERA_META_SERVICE_H

#include "applylock.h"
#include "exports.h"
#include "layout.h"
#include "leases.h"
#include "metricsdir.h"
#include "nodes.h"
#include "proto.h"
#include "repairpass.h"
#include "sessionkeys.h"
#include "sessions.h"
#include "recentcuts.h"
#include "store.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define SERVICE_DEFAULT_NODE_TIMEOUT_MS 3000

struct service {
    struct store *store;
    struct sessions *sessions; /* who holds which inode open (sessions.h) */
    struct sessionkeys *session_keys; /* which key owns which session id (sessionkeys.h) */
    struct leases *leases;     /* directory leases of mounts (leases.h) */
    struct nodes_live *live;
    int64_t node_timeout_ms;
    /* The cluster defaults of files that name none: placement (enum
     * ts_placement) and copies (replicas per tile). */
    struct layout_defaults defaults;
    uint8_t *scratch;           /* SERVICE_SCRATCH_BYTES, for array blobs of replies */
    char cluster_id[TS_CLUSTER_ID_HEX + 1]; /* the store's (clusterid.h), read at start */
    /*
     * Orphans (nlink 0) are deleted only from reap_after_ms on (monotonic):
     * a mount lease after the start, so every live mount has announced the
     * opens it held before meta restarted. orphans_swept: the start-up
     * sweep of the orphans nobody announced has run.
     */
    int64_t started_ms;
    int64_t reap_after_ms;
    bool fresh_store; /* made by this start: no grace */
    struct repairpass repair_pass; /* health as REPAIR_SCAN found it (repairpass.h) */
    /* The repairer's progress for HEALTH; NULL when none runs (tests). Any thread. */
    void (*repair_progress)(void *ctx, struct repairpass_progress *out);
    void *repair_progress_ctx;
    bool orphans_swept;
    /* The export table (exports.h) and the file it is read from ("" none),
     * looked at again at most once a second (handlers_exports.c). */
    struct exports exports;
    char exports_path[PATH_MAX];
    int64_t exports_checked_ms;
    struct timespec exports_mtime;
    off_t exports_size;
    /* Mounts just told to cut a tile by SETATTR, whose REPLICA_DROP of it
     * is accepted without the file open (recentcuts.h). */
    struct recentcuts recent_cuts;
    struct applylock apply_lock; /* the running rebalance apply's lease (APPLY_LOCK) */
    /* Where the daemons serve their Prometheus figures (METRICS_LIST), and
     * meta's own HOST:PORT ("" none; set by main before serving). */
    struct metricsdir *metrics_dir;
    char metrics_address[256];
};

/* The cluster's placement policy unless tessera-meta --placement says otherwise. */
#define SERVICE_DEFAULT_PLACEMENT TS_PLACEMENT_DYNAMIC
/* Replicas per tile unless tessera-meta --copies says otherwise: one lost
 * disk loses no file (DESIGN.md "Replicas and integrity"). */
#define SERVICE_DEFAULT_COPIES 2

/* Large enough for any array blob that fits in one reply frame. */
#define SERVICE_SCRATCH_BYTES (TS_MAX_FRAME_BYTES - TS_HEADER_BYTES - 64)

/*
 * Opens the store in data_dir and prepares it: creates the root directory on
 * first start. The orphans (nlink 0) a previous run left are deleted by the
 * first service_tick() a mount lease (SESSIONS_DEFAULT_LEASE_MS, or
 * service_set_mount_lease()) after this call, unless a mount announced
 * it still holds them open; until then no orphan is deleted (but in a
 * store this call made). defaults start as
 * SERVICE_DEFAULT_PLACEMENT and SERVICE_DEFAULT_COPIES; the caller may change it before serving.
 * Returns 0 or a negative errno (logged).
 */
int service_open(const char *data_dir, int64_t node_timeout_ms, struct service **servicep);
/* Syncs and closes; accepts NULL, clears *servicep. */
void service_close(struct service **servicep);
/*
 * The lease of mount sessions (SESSION_RENEW in proto.h), and with it how
 * long after service_open() orphans are kept for mounts to announce.
 */
void service_set_mount_lease(struct service *service, int64_t lease_ms);
/*
 * The once-a-second work: log nodes that went down, end the sessions of
 * mounts that stopped renewing, and delete the orphans nobody holds open
 * any more (the store syncs itself). service_tick_at() is the same at a
 * given monotonic time (tests).
 */
void service_tick(struct service *service);
void service_tick_at(struct service *service, int64_t now_ms);
/* Whether orphans may be deleted at now_ms (the start-up grace is over). */
bool service_may_reap(const struct service *service, int64_t now_ms);
/*
 * Deletes those of inos[0..count) that are orphans (nlink 0) nobody holds
 * open, when service_may_reap(now_ms); *reaped (may be NULL) counts them.
 * TS_OK or a failure status (logged; the orphans go at the next start).
 */
int service_reap(struct service *service, const uint64_t *inos, size_t count, int64_t now_ms,
                 uint64_t *reaped);

#endif
