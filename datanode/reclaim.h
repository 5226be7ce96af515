/*
 * @file reclaim.h
 * Reclaiming tile files that no one maps: the datanode's reconciliation of
 * its tile directory with meta's tile map.
 *
 * Meta's garbage queue deletes what meta knows it dropped. Some files it
 * never learns of, or forgets: a client that wrote tiles and died before
 * their map commit, a file deleted while this node was down whose garbage
 * record was lost, a pull whose move never committed. Nothing would ever
 * delete those, and they can fill the node for good. So a background
 * thread walks DATA/tiles, bucket by bucket, RECLAIM_BATCH_FILES names at
 * a time (the open directory is the cursor: it persists from one batch to
 * the next), asks meta (TILE_RECONCILE) which of the files older than the
 * grace period it still maps to this node, and deletes those meta maps
 * nowhere, then starts the next pass --reclaim-every seconds later.
 *
 * What it never deletes (reclaim_decide() is the rule, unit-tested):
 *  - a file younger than the grace period (its mtime; --reclaim-grace,
 *    RECLAIM_GRACE_DEFAULT_S): it may belong to a write or a pull whose map
 *    commit is still to come. That holds for a file whose version is newer
 *    than the one meta maps here too: only past the grace is it garbage;
 *  - anything, when meta is unreachable or answers an error;
 *  - a file that meta maps (primary or read copy), that a relocation in
 *    the journal names, that is in the garbage queue (the heartbeat deletes
 *    it), that meta maps to another node, or whose inode or version meta
 *    never issued (a meta on the wrong or an older store: keep everything);
 *  - a file frozen by a move in progress (fences.h).
 *
 * Just before a deletion it takes the handlers' lock, looks at the file and
 * its fence again and decides anew, so a write that reached the file since
 * the walk saw it (a fresh mtime) keeps it.
 *
 * Load: between batches the thread sleeps RECLAIM_BATCH_PAUSE_MS, so a
 * directory of a million tiles takes minutes, not a disk's full attention;
 * deletions go at RECLAIM_DELETES_PER_SEC (as the garbage deletion does,
 * heartbeat.c); the handlers' lock is held for one deletion at a time; no
 * remote call is made under it.
 *
 * Reports: each batch's deletions (info), each pass's summary (info), the
 * first failure to reach meta of a run (warn); and the files and bytes
 * deleted and the passes done in the handlers' counters (NODE_STATS,
 * `tessera node stats`).
 */
#ifndef TESSERA_DATANODE_RECLAIM_H
#define TESSERA_DATANODE_RECLAIM_H

#include "nodehandlers.h"
#include "heartbeat.h"

#include <stdbool.h>
#include <stdint.h>

/* Files younger than this are never touched: longer than any write or pull
 * takes to commit its map (a pull times out after PULLER_READ_TIMEOUT_MS). */
#define RECLAIM_GRACE_DEFAULT_S 600
/* From the end of one pass to the start of the next. */
#define RECLAIM_EVERY_DEFAULT_S 3600
/* The first pass waits this long after start: the node registers meanwhile. */
#define RECLAIM_FIRST_PASS_DELAY_MS 2000
/* Names looked at per batch (one TILE_RECONCILE at most). */
#define RECLAIM_BATCH_FILES 256
/* Sleep between batches: at most 2,560 names a second are looked at. */
#define RECLAIM_BATCH_PAUSE_MS 100
/* Deletions per second, and as many in one burst (heartbeat.c's reason). */
#define RECLAIM_DELETES_PER_SEC 16.0
/* How long a TILE_RECONCILE may take. */
#define RECLAIM_META_TIMEOUT_MS 5000

/* What becomes of one tile file. */
enum reclaim_verdict {
    RECLAIM_DELETE = 0,      /* no one maps it and it is past the grace */
    RECLAIM_KEEP_YOUNG,      /* younger than the grace */
    RECLAIM_KEEP_UNANSWERED, /* meta did not answer, or answered an error */
    RECLAIM_KEEP_MAPPED,     /* meta maps it to this node */
    RECLAIM_KEEP_BUSY,       /* a move, a pull or the garbage queue owns it */
    RECLAIM_KEEP_DOUBT,      /* mapped elsewhere, never issued, or an unknown answer */
    RECLAIM_VERDICT_COUNT
};

/* What is known of one tile file when its fate is decided. */
struct reclaim_facts {
    int64_t age_ms;   /* now - its mtime (negative: an mtime in the future) */
    int64_t grace_ms; /* --reclaim-grace */
    bool answered;    /* meta answered the batch with TS_OK */
    uint32_t state;   /* enum ts_reconcile_state, when answered */
    bool frozen;      /* a move freezes it (fences.h) */
};

/* The rule above, and nothing else: pure, for any thread. */
enum reclaim_verdict reclaim_decide(const struct reclaim_facts *facts);

struct reclaim_config {
    const char *meta_endpoint; /* copied */
    const char *data_dir;      /* copied */
    int64_t grace_ms;          /* > 0 */
    int64_t every_ms;          /* > 0 */
};

struct reclaim;

/*
 * Starts the thread. context (its lock, store and fences) and heartbeat
 * (the node id, read under the lock) must outlive the reclaimer. Returns 0,
 * -ENAMETOOLONG, -ENOMEM, or the error of opening DATA or of
 * pthread_create.
 */
int reclaim_start(const struct reclaim_config *config, struct nodehandlers_context *context,
                  struct heartbeat *heartbeat, struct reclaim **reclaimp);
/*
 * Stops the thread and frees everything (NULL-safe; clears *reclaimp).
 * A TILE_RECONCILE in flight ends at its deadline, or at once once the
 * ZeroMQ context is shut down. Call without the handlers' lock.
 */
void reclaim_stop(struct reclaim **reclaimp);

#endif
