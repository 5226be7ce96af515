/*
 * @file measure.h
 * A datanode's measured disk throughput: bytes per second of busy disk
 * time, as an exponentially weighted moving average (DESIGN.md "Placement
 * by live throughput"). Reads and writes are kept apart, one measure_rate
 * each; a sync counts as write time without bytes, so the average includes
 * what it costs to make data durable.
 *
 * Busy time, not wall time, is the denominator: a node that is idle half
 * of the time is not half as fast. Work is added to a window; once a second
 * (each heartbeat) measure_fold() turns a window that has seen at least
 * MEASURE_MIN_WINDOW_BYTES into a sample and folds it into the average
 * with weight MEASURE_SAMPLE_WEIGHT. A smaller window keeps collecting, so
 * a trickle of small requests (or a sync whose bytes came in the previous
 * window) does not make a noisy sample.
 *
 * The empirical test at start (the paper's three 1 MiB tiles, written and
 * synced) seeds the average; a known change of the disk (its throttle) makes
 * the next sample replace the average instead of being mixed with
 * measurements of a disk that no longer exists.
 *
 * Pure arithmetic on plain structs; the caller measures the times.
 */
#ifndef TESSERA_DATANODE_MEASURE_H
#define TESSERA_DATANODE_MEASURE_H

#include <stdbool.h>
#include <stdint.h>

#define MEASURE_MIN_WINDOW_BYTES (2u << 20)
#define MEASURE_SAMPLE_WEIGHT 0.5

struct measure_rate {
    double average;        /* bytes per second of busy time; 0 = not measured */
    uint64_t window_bytes; /* work since the last sample */
    int64_t window_busy_ns;
    bool restart; /* the next sample replaces the average */
};

/* Adds work: bytes moved (0 for a sync) in busy_ns of disk time. */
void measure_add(struct measure_rate *rate, uint64_t bytes, int64_t busy_ns);

/* Sets the average from a test run of bytes in busy_ns (ignored if either is 0). */
void measure_seed(struct measure_rate *rate, uint64_t bytes, int64_t busy_ns);

/*
 * Turns the window into a sample if it is big enough and folds it into
 * the average; returns true if the average changed.
 */
bool measure_fold(struct measure_rate *rate);

/*
 * The disk changed to a cap of max_bytes_per_sec (0 = none): an average
 * above a new cap is lowered to it at once, and the next sample replaces
 * the average. The window so far is dropped: it measured the old disk.
 */
void measure_disk_changed(struct measure_rate *rate, uint64_t max_bytes_per_sec);

/* The average, rounded, in bytes per second (0 = not measured yet). */
uint64_t measure_bytes_per_sec(const struct measure_rate *rate);

#endif
