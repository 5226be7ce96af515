/*
 * @file statsfigures.h
 * The live figures `tessera stats` shows for one daemon, computed from two
 * scrapes of its Prometheus endpoint (promtext.h) some seconds apart:
 * counters become per-second rates, gauges are the later scrape's. Pure:
 * no network, no clock, so the unit tests check every figure.
 *
 * A figure the daemon does not export (or not in both scrapes) is NAN,
 * shown as "-" and null in JSON; a counter that went down (the daemon
 * restarted between the scrapes) gives NAN rather than a negative rate.
 */
#ifndef TESSERA_TOOLS_STATSFIGURES_H
#define TESSERA_TOOLS_STATSFIGURES_H

#include "promtext.h"

enum statsfigures_kind {
    STATSFIGURES_META,
    STATSFIGURES_DATANODE,
    STATSFIGURES_MOUNT,
    STATSFIGURES_UNKNOWN, /* an endpoint with no tessera_meta_/datanode_/mount_ figure */
};

struct statsfigures {
    /* Every kind (meta has no byte figures: it moves no file bytes). */
    double ops_per_second;
    double read_ops_per_second;  /* mount: read; datanode: TILE_READ */
    double write_ops_per_second; /* mount: write; datanode: TILE_WRITE */
    double read_bytes_per_second;
    double write_bytes_per_second;
    double latency_ms;        /* mean over the interval's requests (NAN: none) */
    double read_latency_ms;   /* of the reads alone */
    double write_latency_ms;  /* of the writes alone */
    double errors_per_second; /* requests answered with an error (not counted by mounts) */
    /* meta: health and repair */
    double datanodes_up;
    double degraded_tiles;
    double unavailable_tiles;
    double repair_bytes_per_second; /* made over the interval */
    double repair_steps_waiting;    /* the repair queue */
    double repair_bytes_waiting;
    /* datanode: disk and scrub */
    double disk_busy; /* 1 while a disk operation is in progress */
    double tiles;
    double free_bytes;
    double scrub_running;
    double scrub_percent; /* of the current or last pass */
};

/* Which daemon wrote a scrape, from the prefixes of its figures. */
enum statsfigures_kind statsfigures_kind_of(const struct promtext *scrape);

/* "meta", "datanode", "mount" or "unknown". */
const char *statsfigures_kind_name(enum statsfigures_kind kind);

/* The figures of a daemon of kind over seconds (> 0) between two scrapes. */
void statsfigures_compute(enum statsfigures_kind kind, const struct promtext *before,
                          const struct promtext *after, double seconds,
                          struct statsfigures *figures);

#endif
