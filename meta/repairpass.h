/*
 * @file repairpass.h
 * What meta learns of its data's health while its repairer walks the tile
 * map (REPAIR_SCAN in proto.h): the counts of the pass under way, and of
 * the last pass that reached the end, which HEALTH reports. In the service,
 * touched by the request thread only.
 */
#ifndef TESSERA_META_REPAIRPASS_H
#define TESSERA_META_REPAIRPASS_H

#include "proto.h"

#include <stdbool.h>
#include <stdint.h>

struct repairpass_file {
    uint64_t ino;
    uint64_t tiles; /* its unavailable tiles */
};

struct repairpass_counts {
    uint64_t tiles;
    uint64_t degraded_tiles;
    uint64_t degraded_bytes;
    uint64_t unavailable_tiles;
    uint64_t steps;       /* repair steps the pass handed out */
    uint64_t steps_bytes; /* ... and the bytes of their copies */
    uint32_t file_count;
    struct repairpass_file files[TS_MAX_HEALTH_FILES];
};

struct repairpass {
    struct repairpass_counts running; /* the pass under way */
    struct repairpass_counts last;    /* the last complete pass */
    bool have_last;
    int64_t last_ended_ms; /* monotonic */
};

/* The repairer's figures (meta/repairer.h), as HEALTH reports them. */
struct repairpass_progress {
    uint64_t steps_done;
    uint64_t bytes_done;
    uint64_t bytes_per_sec; /* over the last few seconds */
    uint64_t steps_waiting; /* handed out, not run yet */
    uint64_t bytes_waiting;
    uint64_t steps_failed;
};

/* Counts one more tile of ino (bytes long) with health (enum ts_health). */
void repairpass_count(struct repairpass_counts *counts, uint64_t ino, uint64_t bytes, int health);

#endif
