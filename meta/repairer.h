/*
 * @file repairer.h
 * Self-healing: a thread of tessera-meta that keeps every tile at its
 * file's copies (DESIGN.md "Replicas and integrity").
 *
 * It is a client of its own meta, like `tessera rebalance apply`: it walks
 * the tile map with REPAIR_SCAN (meta decides each tile's steps from the
 * replicas' nodes, repairplan.h), then runs the steps through the
 * relocation executor (librarian/relocate.h) over the same transport the
 * tool uses (tools/relocnet.h): a COPY is pulled peer to peer by the new
 * holder from a good one, checked against a freeze of the source, and only
 * then committed; a DROP of a replaced replica follows its tile's copies.
 * So a repair is journaled, never lowers a tile's good replicas, and what
 * a restart of meta, the source or the target interrupts is found again by
 * the next pass (the map, not the repairer, remembers what is missing);
 * a journal entry left over REPAIRER_ADOPT_AFTER_S (a step a restart of
 * meta or a killed `tessera rebalance apply` interrupted) is finished
 * first, since a journaled tile is left out of the passes.
 * Least-replicated first: each pass runs the steps of tiles with one good
 * replica or none before the others. Copies are paced to
 * max_bytes_per_sec. Files open on clients are repaired like closed ones:
 * a copy relinks its source to the new version and retires the old name,
 * so a writer that cached the old replica set asks meta again (proto.h,
 * "Relocation journal").
 *
 * Why through meta's socket and not its store: the request thread owns the
 * store's writes and the nodes' liveness; the repairer sees them the way
 * every other client does.
 */
#ifndef TESSERA_META_REPAIRER_H
#define TESSERA_META_REPAIRER_H

#include "repairpass.h"

#include <stdint.h>

#define REPAIRER_DEFAULT_REPLACE_AFTER_MS (10 * 60 * 1000) /* as Ceph and HDFS */
#define REPAIRER_DEFAULT_BYTES_PER_SEC (64ull * 1000 * 1000)
#define REPAIRER_PASS_INTERVAL_MS 2000 /* between passes that found nothing to do */
#define REPAIRER_STEPS_PER_SCAN 256
#define REPAIRER_CONCURRENCY 8 /* steps at once: each waits on a pull and a few meta calls */
#define REPAIRER_TIMEOUT_MS 10000
/* A relocation journal entry this old is taken as abandoned and finished. */
#define REPAIRER_ADOPT_AFTER_S 120

struct repairer_config {
    const char *meta_endpoint;  /* where this meta answers (connectable) */
    int64_t replace_after_ms;   /* a node down this long is replaced */
    uint64_t max_bytes_per_sec; /* pace of the copies; 0 = unlimited */
    int64_t interval_ms;        /* idle wait between passes */
};

struct repairer;

/* Starts the thread. 0, or a negative errno. */
int repairer_start(const struct repairer_config *config, struct repairer **out);
/*
 * Stops the thread: no new step starts; running ones end (the caller
 * shuts the ZeroMQ context down first to end them at once). NULL-safe.
 */
void repairer_stop(struct repairer **repairerp);
/* The figures for HEALTH (service.h repair_progress); any thread. */
void repairer_progress(void *repairer, struct repairpass_progress *out);

/*
 * The endpoint to reach a server listening on `listen`: a wildcard host
 * (tcp://0.0.0.0:P, or tcp:// then "*" and :P) becomes 127.0.0.1. -ENAMETOOLONG if it does
 * not fit cap.
 */
int repairer_connect_endpoint(const char *listen, char *out, size_t cap);

#endif
