/*
 * @file fences.h
 * The fences a relocation puts on the source's tile files (TILE_FENCE,
 * proto.h), keyed by tile file (ino, tile, version):
 * - frozen: until a lease runs out (or a lift), writes and truncates of the
 *   file are refused, reads go on; kept in memory only, because a lease
 *   that outlived a restart would outlive the tool that renews it too;
 * - retired: for good; writes, truncates and reads are refused. Kept in an
 *   append-only file, DATA/fences.retired, each retirement fsync'd before
 *   it is acknowledged, and loaded at start, so a client that still holds
 *   the old location is told to ask meta again even after a restart. The
 *   retirement outlives the tile file (meta's garbage deletion removes the
 *   file, not the fence).
 *
 * The clock is the caller's (now_ms, CLOCK_MONOTONIC milliseconds in the
 * daemon), so tests can move it. Functions return 0 or a negative errno.
 * Not thread-safe: callers hold the handlers' lock (nodehandlers.h).
 */
#ifndef TESSERA_DATANODE_FENCES_H
#define TESSERA_DATANODE_FENCES_H

#include <stdint.h>

/* A lease of 0 means this many milliseconds; longer ones are cut to the max. */
#define FENCES_DEFAULT_LEASE_MS 10000u
#define FENCES_MAX_LEASE_MS 600000u
/* Frozen files at once; a freeze beyond that is refused (-EBUSY). */
#define FENCES_MAX_FROZEN 65536u
/* The retirements file under the data directory. */
#define FENCES_RETIRED_FILE "fences.retired"
/* One retirement on disk: u64 ino, u64 tile, u64 version, u32 CRC-32C of those 24 bytes. */
#define FENCES_RECORD_BYTES 28

enum fences_state {
    FENCES_OPEN = 0,    /* no fence */
    FENCES_FROZEN = 1,  /* writes and truncates refused */
    FENCES_RETIRED = 2, /* every access refused */
};

struct fences;

/*
 * Opens DATA/fences.retired (creating it when missing) and loads the
 * retirements. A damaged record (bad checksum) is skipped and a short one
 * at the end (a crash in mid-append) is cut off, each with a warning.
 * Returns 0, or a negative errno (the file cannot be opened or read).
 */
int fences_open(const char *data_dir, struct fences **fencesp);
/* Closes (NULL-safe) and clears the caller's pointer. */
void fences_close(struct fences **fencesp);

/*
 * Freezes the file until now_ms + lease_ms (lease_ms 0: the default;
 * capped at the max); freezing again renews the lease. -EBUSY when
 * FENCES_MAX_FROZEN files are frozen already, -ENOMEM.
 */
int fences_freeze(struct fences *fences, uint64_t ino, uint64_t tile, uint64_t version,
                  uint32_t lease_ms, int64_t now_ms);
/* Ends the file's freeze (none is fine); a retirement stays. */
void fences_lift(struct fences *fences, uint64_t ino, uint64_t tile, uint64_t version);
/*
 * Retires the file for good: appended and fsync'd before it returns 0
 * (retiring again is a no-op). A negative errno if it could not be made
 * durable; the file is not retired then.
 */
int fences_retire(struct fences *fences, uint64_t ino, uint64_t tile, uint64_t version);
/* The file's fence at now_ms (retired wins over frozen). */
enum fences_state fences_check(struct fences *fences, uint64_t ino, uint64_t tile, uint64_t version,
                               int64_t now_ms);
/* How many files are retired, and frozen at now_ms. */
uint64_t fences_retired_count(const struct fences *fences);
uint32_t fences_frozen_count(struct fences *fences, int64_t now_ms);

#endif
