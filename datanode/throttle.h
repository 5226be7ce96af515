/*
 * @file throttle.h
 * The heterogeneity knob of DESIGN.md: a token bucket that caps a
 * datanode's disk I/O at a given rate, so that a benchmark or a test can
 * make one node slow on purpose (the paper did it by writing every chunk
 * twice).
 *
 * It is kept in its virtual-time form (GCRA): free_at_ns is when the
 * emulated disk finishes the work booked so far. Work of b bytes that
 * starts at time s is done at
 *
 *   free_at = max(free_at, s - burst / rate) + b / rate
 *
 * and may not be reported done before then. This is exactly a token bucket
 * of depth `burst` filled at `rate`: an idle disk has up to `burst` bytes of
 * credit, a busy one serves at `rate`. The real I/O time overlaps the
 * emulated one, so a throttled node runs at min(real speed, rate).
 *
 * Pure arithmetic: times are passed in (nanoseconds of any monotonic
 * clock), so tests drive it with a fake clock.
 */
#ifndef TESSERA_DATANODE_THROTTLE_H
#define TESSERA_DATANODE_THROTTLE_H

#include <stdint.h>

struct throttle {
    uint64_t bytes_per_sec; /* 0 = no cap */
    uint64_t burst_bytes;   /* bucket depth: credit an idle disk builds up */
    int64_t free_at_ns;     /* when the work booked so far is done */
};

/* A bucket with this rate (0 = none) and depth, the disk idle. */
void throttle_init(struct throttle *throttle, uint64_t bytes_per_sec, uint64_t burst_bytes);

/*
 * Changes the rate from now on (0 = none). Work already booked keeps its
 * time; new work is booked at the new rate.
 */
void throttle_set_rate(struct throttle *throttle, uint64_t bytes_per_sec);

/*
 * Books `bytes` of I/O that started at start_ns and returns the time before
 * which it must not be reported done. Without a cap that is start_ns (no
 * wait); with one it may lie in the past (credit), which also means no wait.
 */
int64_t throttle_book(struct throttle *throttle, uint64_t bytes, int64_t start_ns);

#endif
