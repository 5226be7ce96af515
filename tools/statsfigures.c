/*
 * @file statsfigures.c
 * See statsfigures.h. Each kind's counter names are in one table, so a
 * renamed figure in a daemon's metrics is one line here.
 */
#include "statsfigures.h"

#include <math.h>
#include <string.h>

/* The counters every kind has, or NULL where the kind has none. */
struct statsfigures_names {
    const char *prefix; /* every figure of this kind starts with it */
    const char *requests;
    const char *seconds;
    const char *failures;
    const char *read_bytes;
    const char *written_bytes;
    const char *read_label;  /* the read requests' label */
    const char *write_label; /* the write requests' label */
};

static const struct statsfigures_names statsfigures_table[] = {
    [STATSFIGURES_META] = {"tessera_meta_", "tessera_meta_requests_total",
                           "tessera_meta_request_seconds_total",
                           "tessera_meta_request_failures_total", NULL, NULL, NULL, NULL},
    [STATSFIGURES_DATANODE] = {"tessera_datanode_", "tessera_datanode_requests_total",
                               "tessera_datanode_request_seconds_total",
                               "tessera_datanode_request_failures_total",
                               "tessera_datanode_read_bytes_total",
                               "tessera_datanode_written_bytes_total", "op=\"TILE_READ\"",
                               "op=\"TILE_WRITE\""},
    [STATSFIGURES_MOUNT] = {"tessera_mount_", "tessera_mount_requests_total",
                            "tessera_mount_request_seconds_total", NULL,
                            "tessera_mount_read_bytes_total", "tessera_mount_written_bytes_total",
                            "op=\"read\"", "op=\"write\""},
};

enum statsfigures_kind statsfigures_kind_of(const struct promtext *scrape)
{
    for (size_t i = 0; i < scrape->count; i++)
        for (int kind = STATSFIGURES_META; kind < STATSFIGURES_UNKNOWN; kind++) {
            const char *prefix = statsfigures_table[kind].prefix;
            if (strncmp(scrape->samples[i].name, prefix, strlen(prefix)) == 0)
                return (enum statsfigures_kind)kind;
        }
    return STATSFIGURES_UNKNOWN;
}

const char *statsfigures_kind_name(enum statsfigures_kind kind)
{
    switch (kind) {
    case STATSFIGURES_META: return "meta";
    case STATSFIGURES_DATANODE: return "datanode";
    case STATSFIGURES_MOUNT: return "mount";
    case STATSFIGURES_UNKNOWN: break;
    }
    return "unknown";
}

/* How much a counter grew; NAN when absent from either scrape or it went down. */
static double statsfigures_growth(const struct promtext *before, const struct promtext *after,
                                  const char *name, const char *label)
{
    bool found_before, found_after;
    if (!name)
        return NAN;
    double first = promtext_sum(before, name, label, &found_before);
    double last = promtext_sum(after, name, label, &found_after);
    if (!found_before || !found_after || last < first)
        return NAN;
    return last - first;
}

/* A gauge of the later scrape; NAN when absent. */
static double statsfigures_gauge(const struct promtext *after, const char *name, const char *label)
{
    bool found;
    double value = promtext_sum(after, name, label, &found);
    return found ? value : NAN;
}

/* Mean milliseconds per request; NAN without requests. */
static double statsfigures_latency_ms(double seconds_grown, double requests_grown)
{
    if (isnan(seconds_grown) || isnan(requests_grown) || requests_grown <= 0)
        return NAN;
    return seconds_grown / requests_grown * 1000.0;
}

void statsfigures_compute(enum statsfigures_kind kind, const struct promtext *before,
                          const struct promtext *after, double seconds,
                          struct statsfigures *figures)
{
    figures->ops_per_second = figures->read_ops_per_second = figures->write_ops_per_second = NAN;
    figures->read_bytes_per_second = figures->write_bytes_per_second = NAN;
    figures->latency_ms = figures->read_latency_ms = figures->write_latency_ms = NAN;
    figures->errors_per_second = NAN;
    figures->datanodes_up = figures->degraded_tiles = figures->unavailable_tiles = NAN;
    figures->repair_bytes_per_second = figures->repair_steps_waiting = NAN;
    figures->repair_bytes_waiting = NAN;
    figures->disk_busy = figures->tiles = figures->free_bytes = NAN;
    figures->scrub_running = figures->scrub_percent = NAN;
    if (kind == STATSFIGURES_UNKNOWN || !(seconds > 0))
        return;

    const struct statsfigures_names *names = &statsfigures_table[kind];
    double requests = statsfigures_growth(before, after, names->requests, NULL);
    double busy = statsfigures_growth(before, after, names->seconds, NULL);
    figures->ops_per_second = requests / seconds;
    figures->latency_ms = statsfigures_latency_ms(busy, requests);
    figures->errors_per_second =
        statsfigures_growth(before, after, names->failures, NULL) / seconds;
    figures->read_bytes_per_second =
        statsfigures_growth(before, after, names->read_bytes, NULL) / seconds;
    figures->write_bytes_per_second =
        statsfigures_growth(before, after, names->written_bytes, NULL) / seconds;
    if (names->read_label) {
        double reads = statsfigures_growth(before, after, names->requests, names->read_label);
        double writes = statsfigures_growth(before, after, names->requests, names->write_label);
        figures->read_ops_per_second = reads / seconds;
        figures->write_ops_per_second = writes / seconds;
        figures->read_latency_ms = statsfigures_latency_ms(
            statsfigures_growth(before, after, names->seconds, names->read_label), reads);
        figures->write_latency_ms = statsfigures_latency_ms(
            statsfigures_growth(before, after, names->seconds, names->write_label), writes);
    }

    if (kind == STATSFIGURES_META) {
        figures->datanodes_up = statsfigures_gauge(after, "tessera_meta_datanodes", "state=\"up\"");
        figures->degraded_tiles =
            statsfigures_gauge(after, "tessera_meta_health_degraded_tiles", NULL);
        figures->unavailable_tiles =
            statsfigures_gauge(after, "tessera_meta_health_unavailable_tiles", NULL);
        figures->repair_bytes_per_second =
            statsfigures_growth(before, after, "tessera_meta_repair_bytes_done_total", NULL) /
            seconds;
        figures->repair_steps_waiting =
            statsfigures_gauge(after, "tessera_meta_repair_steps_waiting", NULL);
        figures->repair_bytes_waiting =
            statsfigures_gauge(after, "tessera_meta_repair_bytes_waiting", NULL);
    } else if (kind == STATSFIGURES_DATANODE) {
        figures->disk_busy = statsfigures_gauge(after, "tessera_datanode_disk_busy", NULL);
        figures->tiles = statsfigures_gauge(after, "tessera_datanode_tiles", NULL);
        figures->free_bytes = statsfigures_gauge(after, "tessera_datanode_free_bytes", NULL);
        figures->scrub_running = statsfigures_gauge(after, "tessera_datanode_scrub_running", NULL);
        double checked =
            statsfigures_gauge(after, "tessera_datanode_scrub_pass_checked_bytes", NULL);
        double total = statsfigures_gauge(after, "tessera_datanode_scrub_pass_total_bytes", NULL);
        if (!isnan(checked) && !isnan(total))
            figures->scrub_percent = total > 0 ? fmin(100.0, checked / total * 100.0) : 100.0;
    }
}
