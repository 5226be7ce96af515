/*
 * @file progress.h
 * The progress line of long tool runs (`tessera rebalance apply`): tiles
 * and bytes done of the total, the rate so far and the time left at that
 * rate. Pure formatting; the caller decides when and where to draw it.
 * MB here is 10^6 bytes, as in --max-mbps.
 */
#ifndef TESSERA_TOOLS_PROGRESS_H
#define TESSERA_TOOLS_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

struct progress_view {
    size_t tiles_done; /* tiles none of whose steps is left */
    size_t tiles_total;
    uint64_t bytes_done;
    uint64_t bytes_total;
    double elapsed_sec;
    size_t failed; /* shown only when non-zero */
    size_t stale;  /* shown only when non-zero */
};

/*
 * Seconds as "0:07", "12:34" or "1:02:03"; "--:--" when negative, not
 * finite, or longer than 99 hours. Always NUL-terminates when cap > 0.
 */
void progress_format_duration(double seconds, char *out, size_t cap);

/*
 * The estimated seconds left: by bytes when the work has a byte total and
 * some bytes are done, else by tiles; -1 when nothing is done yet.
 */
double progress_eta(const struct progress_view *view);

/*
 * "tiles 12/40, 12.0M/40.0M, 8.3 MB/s, ETA 0:03[, 1 failed][, 2 stale]".
 * Always NUL-terminates when cap > 0.
 */
void progress_format(const struct progress_view *view, char *out, size_t cap);

#endif
