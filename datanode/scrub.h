/*
 * @file scrub.h
 * The datanode's scrub: a background thread that walks DATA/tiles and
 * checks every stored tile's bytes against its block checksums
 * (tilestore_verify()), slowly (--scrub-mbps, default SCRUB_DEFAULT_MBPS;
 * 0 = no background passes), so that a tile that rotted on the disk is
 * found before a reader needs it. A corrupt file found is remembered by
 * the tile store, which the heartbeat reports to meta, and listed in the
 * pass's results for `tessera scrub` (NODE_SCRUB).
 *
 * Passes: background passes follow each other SCRUB_PAUSE_MS apart at the
 * background rate; scrub_request() starts a full pass at once at the rate
 * it names (ending the pass that runs). Each tile is read without the
 * handlers' lock (tilestore_verify_unlocked()); one that does not come out
 * clean is checked again with the lock held (a write cannot change it
 * meanwhile), which decides. The thread sleeps between tiles as long as
 * keeps its bytes per second at the pass's rate.
 *
 * Between passes the thread also ends the tile store's checksum run every
 * SCRUB_CHECKPOINT_MS (tilestore_checkpoint()), so a crash leaves at most
 * that much of recent writes without their old block CRCs.
 *
 * Thread-safety: scrub_request() and scrub_report() may be called from any
 * thread (the loop's handlers do) while the scrub runs.
 */
#ifndef TESSERA_DATANODE_SCRUB_H
#define TESSERA_DATANODE_SCRUB_H

#include "proto.h"
#include "tilestore.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SCRUB_DEFAULT_MBPS 8
/* Between two background passes: a pass over an idle store costs nothing then. */
#define SCRUB_PAUSE_MS (60 * 1000)
/* Between checksum checkpoints (tilestore.h): a syncfs every 5 minutes is cheap. */
#define SCRUB_CHECKPOINT_MS (5 * 60 * 1000)

struct scrub;

struct scrub_report {
    uint32_t running;        /* a pass is going on */
    uint64_t pass;           /* the pass running or last started (1, 2, ...; 0 = none yet) */
    uint64_t files;          /* tile files checked in it */
    uint64_t bytes;          /* their bytes */
    uint64_t total_bytes;    /* the store's bytes when it started */
    uint64_t corrupt;        /* corrupt files it found */
    uint64_t bytes_per_sec;  /* its rate so far */
    uint64_t passes;         /* passes that went through every tile */
    uint64_t finished_pass;  /* the number of the last of those (0 = none) */
    /* The corrupt files of pass finished_pass (at most TS_MAX_SCRUB_CORRUPT). */
    uint32_t finished_corrupt_count;
    struct ts_tile_file_rec finished_corrupt[TS_MAX_SCRUB_CORRUPT];
};

/*
 * Starts the scrub thread over store, taking lock (the handlers' lock)
 * around each tile. background_bytes_per_sec 0: passes only on request.
 * 0, or a negative errno; *scrubp owns the thread then.
 */
int scrub_start(struct tilestore *store, pthread_mutex_t *lock, uint64_t background_bytes_per_sec,
                struct scrub **scrubp);
/* Stops and joins the thread (NULL-safe) and clears the caller's pointer. */
void scrub_stop(struct scrub **scrubp);

/*
 * Starts a full pass now at bytes_per_sec (0: unlimited), ending the one
 * running; returns its pass number.
 */
uint64_t scrub_request(struct scrub *scrub, uint64_t bytes_per_sec);

/*
 * Fills *report; finished_corrupt only when with_files (the heartbeat's
 * once a second needs the counts alone).
 */
void scrub_report(struct scrub *scrub, struct scrub_report *report, bool with_files);

#endif
