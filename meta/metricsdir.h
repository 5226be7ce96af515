/*
 * @file metricsdir.h
 * Where each daemon of the cluster serves its Prometheus figures, as its
 * own messages say (HEARTBEAT for a datanode, SESSION_RENEW for a mount),
 * for METRICS_LIST (`tessera stats`). In memory only: every entry is
 * announced again within a heartbeat or a renewal, so a restarted meta
 * knows them all again within seconds, and nothing stale outlives it.
 * Single-threaded, as the service that owns it.
 */
#ifndef TESSERA_META_METRICSDIR_H
#define TESSERA_META_METRICSDIR_H

#include "proto.h"

#include <stddef.h>
#include <stdint.h>

struct metricsdir_entry {
    uint32_t kind; /* enum ts_metrics_kind */
    uint64_t id;   /* node id or mount id */
    char machine[TS_MAX_NAME + 1];
    char address[256];
    int64_t seen_ms; /* monotonic: when it was last announced */
};

struct metricsdir;

/* An empty directory; NULL when out of memory. */
struct metricsdir *metricsdir_new(void);
/* Frees it; accepts NULL, clears *dirp. */
void metricsdir_destroy(struct metricsdir **dirp);

/*
 * The daemon (kind, id) serves its figures at address, seen at now_ms: its
 * entry is made or refreshed; an empty address forgets it (the daemon runs
 * without --metrics now). 0, -ENAMETOOLONG for a machine or address longer
 * than an entry holds, -ENOSPC past TS_MAX_METRICS_ENDPOINTS entries, or
 * -ENOMEM.
 */
int metricsdir_note(struct metricsdir *dir, uint32_t kind, uint64_t id, struct ts_str machine,
                    struct ts_str address, int64_t now_ms);

/* Forgets (kind, id), e.g. a mount whose session ended; unknown is fine. */
void metricsdir_forget(struct metricsdir *dir, uint32_t kind, uint64_t id);

/*
 * Drops the entries not announced since now_ms - fresh_ms, then returns
 * the others (in the order they were first announced) and their count.
 * The array stays valid until the next call that changes the directory.
 */
const struct metricsdir_entry *metricsdir_fresh(struct metricsdir *dir, int64_t now_ms,
                                                int64_t fresh_ms, size_t *count);

#endif
