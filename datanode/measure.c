/*
 * @file measure.c
 * See measure.h.
 */
#include "measure.h"

#define MEASURE_NS_PER_SEC 1e9

void measure_add(struct measure_rate *rate, uint64_t bytes, int64_t busy_ns)
{
    rate->window_bytes += bytes;
    if (busy_ns > 0)
        rate->window_busy_ns += busy_ns;
}

void measure_seed(struct measure_rate *rate, uint64_t bytes, int64_t busy_ns)
{
    if (bytes == 0 || busy_ns <= 0)
        return;
    rate->average = (double)bytes * MEASURE_NS_PER_SEC / (double)busy_ns;
    rate->restart = false;
}

bool measure_fold(struct measure_rate *rate)
{
    double sample;

    if (rate->window_bytes < MEASURE_MIN_WINDOW_BYTES)
        return false;
    /* Bytes in no measurable time: the clock's resolution, count 1 ns. */
    sample = (double)rate->window_bytes * MEASURE_NS_PER_SEC /
             (double)(rate->window_busy_ns > 0 ? rate->window_busy_ns : 1);
    if (rate->average <= 0 || rate->restart)
        rate->average = sample;
    else
        rate->average =
            MEASURE_SAMPLE_WEIGHT * sample + (1 - MEASURE_SAMPLE_WEIGHT) * rate->average;
    rate->restart = false;
    rate->window_bytes = 0;
    rate->window_busy_ns = 0;
    return true;
}

void measure_disk_changed(struct measure_rate *rate, uint64_t max_bytes_per_sec)
{
    if (max_bytes_per_sec > 0 && rate->average > (double)max_bytes_per_sec)
        rate->average = (double)max_bytes_per_sec;
    rate->restart = true;
    rate->window_bytes = 0;
    rate->window_busy_ns = 0;
}

uint64_t measure_bytes_per_sec(const struct measure_rate *rate)
{
    if (rate->average <= 0)
        return 0;
    if (rate->average >= 1.8e19)
        return UINT64_MAX;
    return (uint64_t)(rate->average + 0.5);
}
