/*
 * @file service.h
 * The state of one metadata service: the store, the in-memory open counts
 * and datanode liveness, and a scratch buffer for building replies. It is
 * the `ctx` every handler of handlers.c receives, and what the daemon, the
 * unit tests and the fuzzer create, so all three run the same code.
 * Single-threaded: one request at a time.
 */
#ifndef TESSERA_META_SERVICE_H
#define TESSERA_META_SERVICE_H

#include "leases.h"
#include "nodes.h"
#include "proto.h"
#include "opens.h"
#include "store.h"

#include <stddef.h>
#include <stdint.h>

#define SERVICE_DEFAULT_NODE_TIMEOUT_MS 3000

struct service {
    struct store *store;
    struct opens *opens;
    struct leases *leases; /* directory leases of mounts (leases.h) */
    struct nodes_live *live;
    int64_t node_timeout_ms;
    uint32_t default_placement; /* enum ts_placement for files that name none */
    uint8_t *scratch;           /* SERVICE_SCRATCH_BYTES, for array blobs of replies */
    char cluster_id[TS_CLUSTER_ID_HEX + 1]; /* the store's (clusterid.h), read at start */
};

/* The cluster's placement policy unless tessera-meta --placement says otherwise. */
#define SERVICE_DEFAULT_PLACEMENT TS_PLACEMENT_DYNAMIC

/* Large enough for any array blob that fits in one reply frame. */
#define SERVICE_SCRATCH_BYTES (TS_MAX_FRAME_BYTES - TS_HEADER_BYTES - 64)

/*
 * Opens the store in data_dir and prepares it: creates the root directory on
 * first start and deletes the orphans (nlink 0) a previous run left.
 * default_placement starts as SERVICE_DEFAULT_PLACEMENT; the caller may
 * change it before serving.
 * Returns 0 or a negative errno (logged).
 */
int service_open(const char *data_dir, int64_t node_timeout_ms, struct service **servicep);
/* Syncs and closes; accepts NULL, clears *servicep. */
void service_close(struct service **servicep);
/* The once-a-second work: log nodes that went down (the store syncs itself). */
void service_tick(struct service *service);

#endif
