/*
 * @file nodemetrics.c
 * See nodemetrics.h. Every figure is read under the handlers' lock (the
 * loop releases it while it polls, and a stream thread between requests),
 * then written out after it is released, so a slow scrape never holds up
 * a request. Counters restart from zero when NODE_STATS resets them, which
 * Prometheus takes as a counter reset.
 */
#include "nodemetrics.h"

#include "diskio.h"
#include "nodehandlers.h"
#include "scrub.h"
#include "tilestore.h"

#include <stdio.h>
#include <string.h>

/* The operations a datanode serves, in the order they are written. */
static const uint16_t nodemetrics_ops[] = {
    TS_OP_PING,          TS_OP_TILE_WRITE,  TS_OP_TILE_READ,  TS_OP_TILE_SYNC,
    TS_OP_TILE_TRUNCATE, TS_OP_TILE_STREAM, TS_OP_TILE_PULL,  TS_OP_TILE_FENCE,
    TS_OP_NODE_THROTTLE, TS_OP_NODE_STATS,  TS_OP_NODE_SCRUB,
};
#define NODEMETRICS_OPS (sizeof(nodemetrics_ops) / sizeof(nodemetrics_ops[0]))

/* What one scrape reports, copied under the lock. */
struct nodemetrics_snapshot {
    uint64_t requests[NODEMETRICS_OPS];
    uint64_t busy_ns[NODEMETRICS_OPS];
    uint64_t failures, bytes_read, bytes_written, tiles_warmed, reads_direct, writes_refused_crc;
    uint64_t tiles_reclaimed, bytes_reclaimed, reclaim_passes;
    uint64_t tiles, used_bytes, capacity, free_bytes, corrupt_found;
    bool have_space;
    struct diskio_report disk;
    struct scrub_report scrub;
    bool have_scrub;
};

static void nodemetrics_take(struct nodehandlers_context *context,
                             struct nodemetrics_snapshot *snap)
{
    memset(snap, 0, sizeof(*snap));
    pthread_mutex_lock(&context->lock);
    const struct nodehandlers_stats *stats = &context->stats;
    for (size_t i = 0; i < NODEMETRICS_OPS; i++) {
        snap->requests[i] = stats->requests[nodemetrics_ops[i]];
        snap->busy_ns[i] = stats->busy_ns[nodemetrics_ops[i]];
    }
    snap->failures = stats->failures;
    snap->bytes_read = stats->bytes_read;
    snap->bytes_written = stats->bytes_written;
    snap->tiles_warmed = stats->tiles_warmed;
    snap->reads_direct = stats->reads_direct;
    snap->writes_refused_crc = stats->writes_refused_crc;
    snap->tiles_reclaimed = stats->tiles_reclaimed;
    snap->bytes_reclaimed = stats->bytes_reclaimed;
    snap->reclaim_passes = stats->reclaim_passes;
    tilestore_usage(context->store, &snap->tiles, &snap->used_bytes);
    snap->have_space = tilestore_space(context->store, &snap->capacity, &snap->free_bytes) == 0;
    snap->corrupt_found = tilestore_corrupt_found(context->store);
    diskio_report(context->disk, &snap->disk);
    if (context->scrub) {
        scrub_report(context->scrub, &snap->scrub, false);
        snap->have_scrub = true;
    }
    pthread_mutex_unlock(&context->lock);
}

void nodemetrics_collect(void *arg, struct metrics_text *text)
{
    struct nodemetrics_snapshot snap;
    char labels[64];

    nodemetrics_take(arg, &snap);
    metrics_text_family(text, "tessera_datanode_requests_total", "counter",
                        "Requests served, by operation (ZeroMQ and tile streams), failed ones "
                        "included.");
    for (size_t i = 0; i < NODEMETRICS_OPS; i++) {
        snprintf(labels, sizeof(labels), "op=\"%s\"", ts_op_name(nodemetrics_ops[i]));
        metrics_text_sample(text, "tessera_datanode_requests_total", labels,
                            (double)snap.requests[i]);
    }
    metrics_text_family(text, "tessera_datanode_request_seconds_total", "counter",
                        "Time spent serving requests, by operation; divided by "
                        "tessera_datanode_requests_total, the mean latency.");
    for (size_t i = 0; i < NODEMETRICS_OPS; i++) {
        snprintf(labels, sizeof(labels), "op=\"%s\"", ts_op_name(nodemetrics_ops[i]));
        metrics_text_sample(text, "tessera_datanode_request_seconds_total", labels,
                            (double)snap.busy_ns[i] / 1e9);
    }
    metrics_text_one(text, "tessera_datanode_request_failures_total", "counter",
                     "Requests answered with an error.", (double)snap.failures);
    metrics_text_one(text, "tessera_datanode_read_bytes_total", "counter",
                     "Tile bytes sent to readers.", (double)snap.bytes_read);
    metrics_text_one(text, "tessera_datanode_written_bytes_total", "counter",
                     "Tile bytes stored by writes.", (double)snap.bytes_written);
    metrics_text_one(text, "tessera_datanode_writes_refused_crc_total", "counter",
                     "Writes whose bytes did not match the writer's CRC.",
                     (double)snap.writes_refused_crc);
    metrics_text_one(text, "tessera_datanode_tiles_warmed_total", "counter",
                     "Tiles read ahead whole after small reads.", (double)snap.tiles_warmed);
    metrics_text_one(text, "tessera_datanode_reads_direct_total", "counter",
                     "Stream reads of bytes not in the page cache, read past it (O_DIRECT).",
                     (double)snap.reads_direct);
    metrics_text_one(text, "tessera_datanode_tiles", "gauge", "Tile files stored.",
                     (double)snap.tiles);
    metrics_text_one(text, "tessera_datanode_stored_bytes", "gauge", "Bytes of the tile files.",
                     (double)snap.used_bytes);
    if (snap.have_space) {
        metrics_text_one(text, "tessera_datanode_capacity_bytes", "gauge",
                         "Capacity: the disk's, or --capacity.", (double)snap.capacity);
        metrics_text_one(text, "tessera_datanode_free_bytes", "gauge",
                         "Bytes still free for tiles.", (double)snap.free_bytes);
    }
    metrics_text_one(text, "tessera_datanode_disk_read_bytes_per_second", "gauge",
                     "The disk's measured read rate (0: not measured yet).",
                     (double)snap.disk.read_bytes_per_sec);
    metrics_text_one(text, "tessera_datanode_disk_write_bytes_per_second", "gauge",
                     "The disk's measured write rate (0: not measured yet).",
                     (double)snap.disk.write_bytes_per_sec);
    metrics_text_one(text, "tessera_datanode_throttle_bytes_per_second", "gauge",
                     "The disk throttle (0: none).", (double)snap.disk.throttle_bytes_per_sec);
    metrics_text_one(text, "tessera_datanode_disk_busy", "gauge",
                     "1 while a disk operation is in progress or waits out the throttle.",
                     (double)snap.disk.in_service);
    metrics_text_one(text, "tessera_datanode_corrupt_found_total", "counter",
                     "Checksum mismatches found (reads and scrubs), repeated ones included.",
                     (double)snap.corrupt_found);
    if (snap.have_scrub) {
        metrics_text_one(text, "tessera_datanode_scrub_running", "gauge",
                         "1 while a scrub pass is going on.", (double)snap.scrub.running);
        metrics_text_one(text, "tessera_datanode_scrub_passes_total", "counter",
                         "Scrub passes that checked every tile.", (double)snap.scrub.passes);
        metrics_text_one(text, "tessera_datanode_scrub_pass_checked_bytes", "gauge",
                         "Bytes the current (or last) scrub pass has checked.",
                         (double)snap.scrub.bytes);
        metrics_text_one(text, "tessera_datanode_scrub_pass_total_bytes", "gauge",
                         "Bytes stored when the current (or last) scrub pass started.",
                         (double)snap.scrub.total_bytes);
    }
    metrics_text_one(text, "tessera_datanode_reclaimed_tiles_total", "counter",
                     "Unmapped tile files deleted by the reclaimer.", (double)snap.tiles_reclaimed);
    metrics_text_one(text, "tessera_datanode_reclaimed_bytes_total", "counter", "Their bytes.",
                     (double)snap.bytes_reclaimed);
    metrics_text_one(text, "tessera_datanode_reclaim_passes_total", "counter",
                     "The reclaimer's passes over the tile files.", (double)snap.reclaim_passes);
}
