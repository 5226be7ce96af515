/*
 * @file repairplan.h
 * What one tile needs to get back to its copies (self-healing, DESIGN.md
 * "Replicas and integrity"): pure, so meta's REPAIR_SCAN handler and the
 * unit tests run the same decisions.
 *
 * A replica is
 *  - good: its node is up and ACTIVE;
 *  - waited for: its node is ACTIVE and down for less than replace_after_ms
 *    (a restart or a short outage must not copy a whole disk);
 *  - replaced: its node is down longer, DRAINING or REMOVED, or unknown.
 * Health: HEALTHY with good >= copies, UNAVAILABLE with no replica on an up
 * node, DEGRADED otherwise.
 * Steps: copies - good - waited COPY steps, from the up replica on the
 * fastest reader (good ones first: a draining node is read only when it is
 * the last), each to a new node: up, ACTIVE, not a holder, with room,
 * on a machine no kept or new replica is on when there is one, then the
 * earliest to finish (bytes already planned on it this pass over its
 * measured write throughput). Then one DROP step per replaced replica,
 * only if the good, waited-for and new replicas reach copies without it;
 * node_down marks those of nodes that are down.
 * The executor runs a tile's steps in order and stops at the first that
 * fails, so a replica is never dropped before its replacement exists.
 */
#ifndef TESSERA_LIBRARIAN_REPAIRPLAN_H
#define TESSERA_LIBRARIAN_REPAIRPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One datanode as the planner sees it. */
struct repairplan_node {
    uint32_t id;
    bool up;
    uint32_t admin;      /* enum ts_node_admin */
    int64_t down_ms;     /* how long it has been down (ignored when up) */
    uint64_t free_bytes; /* as it last reported */
    uint64_t read_bytes_per_sec;
    uint64_t write_bytes_per_sec;
    const char *machine;    /* "" = unknown: a machine of its own */
    uint64_t planned_bytes; /* repair bytes planned onto it so far (updated) */
};

struct repairplan_holder {
    uint32_t node;
    uint64_t version;
};

enum repairplan_kind { REPAIRPLAN_COPY = 1, REPAIRPLAN_DROP = 3 }; /* = TS_MOVE_COPY, _DROP */

struct repairplan_step {
    enum repairplan_kind kind;
    uint32_t from_node;
    uint64_t version; /* from_node's file */
    uint32_t to_node; /* 0 for a drop */
    /* A drop of a replica whose node is down: nothing to freeze or retire
     * there, so meta drops it from the map itself (the executor's fence
     * would wait for a node that does not answer). */
    bool node_down;
};

struct repairplan_tile {
    const struct repairplan_holder *holders;
    size_t holder_count;
    uint32_t copies; /* the file's floor */
    uint64_t tile_bytes;
};

struct repairplan_verdict {
    int health;    /* enum ts_health */
    size_t good;   /* replicas on up ACTIVE nodes */
    size_t waited; /* replicas on ACTIVE nodes down less than replace_after_ms */
    size_t steps;  /* steps written */
};

/* REPAIRPLAN_MAX_STEPS bounds what one tile can need (copies <= 8, holders <= 16). */
#define REPAIRPLAN_MAX_STEPS 24

/*
 * Plans tile's repair into steps[REPAIRPLAN_MAX_STEPS] and says its health.
 * Adds each COPY's tile_bytes to its target's planned_bytes.
 */
void repairplan_tile(struct repairplan_node *nodes, size_t node_count,
                     const struct repairplan_tile *tile, int64_t replace_after_ms,
                     struct repairplan_step *steps, struct repairplan_verdict *verdict);

#endif
