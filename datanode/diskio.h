/*
 * @file diskio.h
 * The datanode's disk work as the rest of the cluster sees it: every tile
 * read, write and sync goes through here, which times it, holds it to the
 * throttle (throttle.h) and feeds the measured throughput (measure.h) that
 * heartbeats report and static placement relies on.
 *
 * A throttled operation does its real I/O at once and then waits until the
 * emulated disk would have finished, so the client sees the emulated speed
 * and the measurement sees it too. Throttled requests are the loop
 * thread's (a throttled disk refuses the tile stream), so the wait
 * is spent in a caller-given hook (diskio_set_wait()): the daemon uses it
 * to keep heartbeats going while it waits; without a hook it sleeps. The
 * hook is also called, with a deadline already past, after every operation,
 * so a long run of requests never starves the heartbeat.
 *
 * With diskio_set_defer() the loop does not wait at all: the operation
 * ends at once, counted (in the measurement too) as ending when the
 * emulated disk would have finished, and that time is kept for the reply
 * (diskio_take_reply_at()), which the rpc server holds back until then
 * (rpc_response.send_at_ns). The loop meanwhile serves heartbeats, other
 * clients and admin requests.
 *
 * At start diskio_probe() runs the paper's empirical test: three 1 MiB
 * files written and synced (and read back from the disk, not the cache)
 * under the data directory, which seeds both averages before the first
 * heartbeat, at the median file's speed.
 *
 * Functions return what the tilestore returns (0 or a negative errno).
 * Not thread-safe: callers hold the handlers' lock (nodehandlers.h).
 */
#ifndef TESSERA_DATANODE_DISKIO_H
#define TESSERA_DATANODE_DISKIO_H

#include "tilestore.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Credit an idle throttled disk builds up: one page, so a small request
 * after idle time does not wait, while a tile-sized one is not made
 * measurably faster than the rate (1 MiB after idle time: 0.4 %).
 */
#define DISKIO_THROTTLE_BURST_BYTES 4096u
/*
 * The longest one operation waits out its throttle (or has its reply held
 * back, deferring): however far ahead the emulated disk is booked (a huge
 * tile at the lowest rate), no reply comes later than this, so no client
 * times out on a throttle. At the rates NODE_THROTTLE accepts a default
 * tile waits about 1 s.
 */
#define DISKIO_MAX_WAIT_NS (2ll * 1000 * 1000 * 1000)
#define DISKIO_PROBE_FILES 3
#define DISKIO_PROBE_BYTES (1u << 20)

struct diskio;

/* What the heartbeat reports. */
struct diskio_report {
    uint64_t read_bytes_per_sec;  /* 0 = not measured yet */
    uint64_t write_bytes_per_sec; /* 0 = not measured yet */
    uint64_t throttle_bytes_per_sec;
    uint32_t in_service; /* 1 while an operation is in progress (or waiting out its throttle) */
};

/*
 * Called while an operation waits for its throttle: return no later than
 * until_ns (diskio_now_ns() clock), or at once when it is already past.
 */
typedef void (*diskio_wait_fn)(void *arg, int64_t until_ns);

/* The store must outlive the diskio. Returns 0 or -ENOMEM. */
int diskio_new(struct tilestore *store, uint64_t throttle_bytes_per_sec, struct diskio **diskp);
void diskio_destroy(struct diskio **diskp);
void diskio_set_wait(struct diskio *disk, diskio_wait_fn wait, void *arg);
/*
 * Deferring (see the top): throttle waits are not waited out but noted
 * for the reply. Off at first (the probe and tests wait).
 */
void diskio_set_defer(struct diskio *disk, bool defer);
/*
 * The monotonic time (ns) before which the reply to the request handled
 * since the last call must not leave (0: none, or not deferring), and
 * forgets it.
 */
int64_t diskio_take_reply_at(struct diskio *disk);

/* CLOCK_MONOTONIC in nanoseconds: the clock of throttle deadlines. */
int64_t diskio_now_ns(void);

/* As the tilestore functions of the same name, timed and throttled. */
/* diskio_write: tilestore_write_summed() (sums NULL: not summed yet). */
int diskio_write(struct diskio *disk, uint64_t ino, uint64_t tile, uint64_t version,
                 uint64_t offset, const void *data, size_t len,
                 const struct tilecrc_payload *sums);
int diskio_read(struct diskio *disk, uint64_t ino, uint64_t tile, uint64_t version, uint64_t offset,
                size_t length, void *buf, size_t *got);
/*
 * Adds a read done outside diskio (a stream's, started at start_ns,
 * bytes sent) to the measured read rate. Not throttled: streams are
 * refused on a throttled disk.
 */
void diskio_add_read(struct diskio *disk, int64_t start_ns, uint64_t bytes);
/* True while a throttle caps the disk. */
bool diskio_throttled(const struct diskio *disk);

/*
 * A tile stream's write, its bytes received into memory and summed already
 * (tilestore_write_summed()): measured as a write, not throttled and no wait hook
 * called (streams are refused on a throttled disk, and a stream's thread
 * calls this).
 */
int diskio_receive(struct diskio *disk, uint64_t ino, uint64_t tile, uint64_t version,
                   uint64_t offset, const void *data, size_t len,
                   const struct tilecrc_payload *sums);

int diskio_sync(struct diskio *disk, uint64_t ino, uint64_t tile, uint64_t version);
/* Counts syncs that began at start_ns (made with tilestore_sync_file()) as
 * write time: the measured write throughput includes the sync. */
void diskio_add_sync(struct diskio *disk, int64_t start_ns);

/*
 * The empirical test: writes and fsyncs DISKIO_PROBE_FILES files of
 * DISKIO_PROBE_BYTES under data_dir (through the throttle), reads them back
 * after dropping them from the page cache, removes them, and seeds the
 * averages. Returns 0, or a negative errno (the averages stay unmeasured
 * and fill in from real work).
 */
int diskio_probe(struct diskio *disk, const char *data_dir);

/*
 * Sets the throttle (0 = none); the averages restart (measure.h), an
 * average above the new cap drops to it at once.
 */
void diskio_set_throttle(struct diskio *disk, uint64_t bytes_per_sec);
uint64_t diskio_throttle(const struct diskio *disk);

/*
 * Folds the work since the last report into the averages and fills
 * *report. Call once per heartbeat.
 */
void diskio_report(struct diskio *disk, struct diskio_report *report);

#endif
