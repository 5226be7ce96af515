/*
 * @file mountmetrics.h
 * The mount's Prometheus figures (metrics.h): FUSE requests per operation,
 * the bytes applications asked to read and wrote, and the time the request
 * threads spent on each operation. Counted by the request loop (reqloop.c)
 * for every request it reads from /dev/fuse; a mount run with -s (libfuse's
 * own loop, for debugging) counts nothing.
 */
#ifndef TESSERA_FUSE_MOUNTMETRICS_H
#define TESSERA_FUSE_MOUNTMETRICS_H

#include "metrics.h"

#include <stddef.h>
#include <stdint.h>

/* The start of a request mountmetrics_note() reads: a fuse_in_header and
 * the fuse_read_in / fuse_write_in after it (40 + 40 bytes), rounded up. */
#define MOUNTMETRICS_HEAD_BYTES 96

/*
 * Counts one request: the first MOUNTMETRICS_HEAD_BYTES (or fewer) of its
 * bytes as read from /dev/fuse (a fuse_in_header first; anything shorter
 * is ignored), copied before it was served, and the time its thread spent
 * on it. Any thread; lock-free.
 */
void mountmetrics_note(const void *request, size_t size, int64_t elapsed_ns);

/* A metrics_collect_fn; the context is unused (one mount per process). */
void mountmetrics_collect(void *context, struct metrics_text *text);

#endif
