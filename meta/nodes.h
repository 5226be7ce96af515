/*
 * @file nodes.h
 * The datanode registry. In LMDB (`nodes` table, key u32 BE id): what each
 * datanode last reported — machine, address, capacity, free and used bytes,
 * tile count, measured read and write throughput, queue depth, throttle.
 * In memory (struct nodes_live): when each last sent a heartbeat, which
 * decides whether it is up, and its backlog. Neither is persisted: after a
 * meta restart every node is down until it heartbeats, and idle.
 *
 * The backlog model (what static placement adds to a node's finish time):
 * meta counts the bytes of every tile it places on a node, since those
 * will be written there soon, and lets the count drain at the node's
 * measured write throughput as time passes:
 *
 *   backlog(t) = max(0, backlog(t0) - write_bytes_per_sec * (t - t0))
 *
 * (at NODES_ASSUMED_BYTES_PER_SEC while the node has not measured itself).
 * A heartbeat's queue depth q is work the node really has: the backlog is
 * raised to at least q tiles of TILE_DEFAULT_BYTES. Meta cannot see when a
 * writer actually sends its tiles, so this is an estimate: tiles placed but
 * written late drain early, which only makes that node look idle sooner.
 */
#ifndef TESSERA_META_NODES_H
#define TESSERA_META_NODES_H

#include "placement.h"
#include "store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NODES_MAX_TEXT 255 /* bytes of machine name or address */
#define NODES_MAX_KEY_USER 79 /* "ROLE:NAME" of a key (keys.h: 15 + 1 + 63) */

struct nodes_record {
    uint32_t id;
    char machine[NODES_MAX_TEXT + 1];
    char address[NODES_MAX_TEXT + 1];
    uint64_t capacity;
    uint64_t free_bytes;
    uint64_t used_bytes;
    uint64_t tiles;
    uint64_t read_bytes_per_sec;     /* measured by the node; 0 = not yet */
    uint64_t write_bytes_per_sec;    /* measured by the node; 0 = not yet */
    uint32_t queue_depth;            /* tile requests in service or waiting */
    uint64_t throttle_bytes_per_sec; /* its disk cap, 0 = none */
    /* The random identity of the data directory it registered with (HEARTBEAT
     * incarnation); 0 = not known yet (a record older than identities). */
    uint64_t incarnation;
    /* enum ts_node_admin: the operator's drain or removal (NODE_ADMIN). */
    uint32_t admin;
    /* The key it registered with ("ROLE:NAME", curve.h); "" = none yet (a
     * cluster without keys, or a record older than keys). Only that key
     * may heartbeat as this node from then on. */
    char key_user[NODES_MAX_KEY_USER + 1];
};

/* How fast an unmeasured node's backlog drains. */
#define NODES_ASSUMED_BYTES_PER_SEC (100ull * 1000 * 1000)

/* 0, -ENOENT if no such node, or a negative errno. */
int nodes_get(struct store_txn *txn, uint32_t id, struct nodes_record *record);
int nodes_put(struct store_txn *txn, const struct nodes_record *record);
/*
 * Every registered node in id order, in a malloc'd array the caller frees
 * (NULL when there are none). 0 or a negative errno.
 */
int nodes_list(struct store_txn *txn, struct nodes_record **records, size_t *count);

/* ---- liveness (in memory) ---------------------------------------------- */

struct nodes_live;

/*
 * Meta calls nodes_live_check() every second and the others as requests
 * come; a longer gap than this between two calls means meta itself stood
 * still (a store write waiting for a disk busy with someone's `sync`, say)
 * while the nodes' heartbeats waited in its socket. Silence during such a
 * gap is meta's, not the nodes': they count as down only once they have
 * been silent for the timeout while meta was listening. (Before, a 3.5 s
 * stall during a benchmark's `sync` marked all four datanodes down at once
 * and writes failed with "no datanode is up".)
 */
#define NODES_STALL_MS 1500

/* NULL when out of memory. */
struct nodes_live *nodes_live_new(int64_t timeout_ms);
void nodes_live_destroy(struct nodes_live **livep);
/* Records a heartbeat of node id at now_ms (monotonic). 0 or -ENOMEM. */
int nodes_live_beat(struct nodes_live *live, uint32_t id, int64_t now_ms);
/* Milliseconds since node id's last heartbeat, or -1 if none since start (for display). */
int64_t nodes_live_age_ms(const struct nodes_live *live, uint32_t id, int64_t now_ms);
/* Whether node id was silent less than the timeout while meta listened. */
bool nodes_live_is_up(const struct nodes_live *live, uint32_t id, int64_t now_ms);
/* Logs each node that went silent since the last call (once per outage). */
void nodes_live_check(struct nodes_live *live, int64_t now_ms);

/*
 * Takes a heartbeat's load report (after nodes_live_beat() of the same
 * node): the drain rate becomes write_bytes_per_sec, and the backlog is
 * raised to queue_depth tiles. 0 or -ENOENT for a node never beaten.
 */
int nodes_live_load(struct nodes_live *live, uint32_t id, uint64_t write_bytes_per_sec,
                    uint32_t queue_depth, int64_t now_ms);
/*
 * A node's steady write throughput: the peak of its reported measure
 * (write_bytes_per_sec, an average over about two seconds of busy disk
 * time) decaying with a time constant of NODES_STEADY_DECAY_S, started
 * over when its disk's cap (throttle_bytes_per_sec) changes. Array homes
 * are judged slow on it (arrayhome.h): the two-second measure dips to a
 * tenth of its peers' for a second when a window catches an fsync or a
 * write into fresh memory (a VM's page cache), and a home judged on it
 * lost part or all of its chunk to such a dip (quadrants.sh: 70,52,64,70
 * and 96,0,80,80 tiles per host where 64 each were asked). A disk that
 * really is slow is seen after a few time constants. nodes_live_steady_note()
 * takes a heartbeat's report (after nodes_live_beat(); 0 or -ENOENT);
 * nodes_live_steady_write() is 0 for a node with no report yet, and
 * PLACEMENT_SPEED_UNPROVEN while every report is the first one, the start-up
 * probe's (three 1 MiB files, each synced: 106-460 MB/s where the same
 * nodes measured 645-2,432 once they had worked, with one sync for many
 * tiles): a node that has not worked is not compared with nodes that have.
 * (After a restart of meta the first report it hears is taken as the
 * probe's: an idle node is then unproven until its measure moves.)
 */
#define NODES_STEADY_DECAY_S 20.0
int nodes_live_steady_note(struct nodes_live *live, uint32_t id, uint64_t write_bytes_per_sec,
                           uint64_t throttle_bytes_per_sec, int64_t now_ms);
uint64_t nodes_live_steady_write(const struct nodes_live *live, uint32_t id);

/*
 * A node's integrity as meta knows it (TS_INTEGRITY_FIELDS): corrupt_files
 * counts the corrupt tile files its heartbeats reported since meta
 * started (kept in memory only: a restart starts over, and the replicas'
 * repair, not this count, is what keeps the data); the scrub fields are
 * the node's last report.
 */
struct nodes_integrity {
    uint64_t corrupt_files;
    uint32_t scrub_running;
    uint64_t scrub_files;
    uint64_t scrub_bytes;
    uint64_t scrub_corrupt;
    uint64_t scrub_rate;
    uint64_t scrub_passes;
};
/*
 * Takes a heartbeat's integrity report: corrupt_added more corrupt files,
 * and the scrub fields of *scrub (its corrupt_files is ignored). 0 or
 * -ENOENT for a node never beaten.
 */
int nodes_live_integrity(struct nodes_live *live, uint32_t id, uint64_t corrupt_added,
                         const struct nodes_integrity *scrub);
/* The node's integrity (zeros for an unknown node). */
void nodes_live_integrity_get(const struct nodes_live *live, uint32_t id,
                              struct nodes_integrity *integrity);
/* The disk a node's data directory is on, as its last heartbeat said (TS_DISK_FIELDS). */
struct nodes_disk {
    uint64_t id; /* 0: unknown (its space is then counted on its own) */
    uint64_t bytes;
    uint64_t free;
};
/* Takes a heartbeat's disk report. 0 or -ENOENT for a node never beaten. */
int nodes_live_disk(struct nodes_live *live, uint32_t id, const struct nodes_disk *disk);
/* The node's disk (zeros for an unknown node). */
void nodes_live_disk_get(const struct nodes_live *live, uint32_t id, struct nodes_disk *disk);

/* The node's backlog drained to now_ms (0 for an unknown node). Changes nothing. */
uint64_t nodes_live_backlog(const struct nodes_live *live, uint32_t id, int64_t now_ms);
/*
 * Sets the node's backlog as of now_ms (after placing tiles on it). 0, or
 * -ENOENT for a node never beaten (nothing to remember it by).
 */
int nodes_live_set_backlog(struct nodes_live *live, uint32_t id, uint64_t backlog_bytes,
                           int64_t now_ms);

#endif
