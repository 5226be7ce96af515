/*
 * @file throttle.c
 * See throttle.h. Durations are bytes * 10^9 / rate nanoseconds, computed
 * in 128 bits so that no tile size or rate can overflow them.
 */
#include "throttle.h"

__extension__ typedef unsigned __int128 throttle_wide;

#define THROTTLE_NS_PER_SEC 1000000000u

/* Nanoseconds the emulated disk needs for `bytes`, saturating at INT64_MAX. */
static int64_t throttle_duration_ns(uint64_t bytes, uint64_t bytes_per_sec)
{
    throttle_wide ns = (throttle_wide)bytes * THROTTLE_NS_PER_SEC / bytes_per_sec;
    return ns > (throttle_wide)INT64_MAX ? INT64_MAX : (int64_t)ns;
}

static int64_t throttle_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

void throttle_init(struct throttle *throttle, uint64_t bytes_per_sec, uint64_t burst_bytes)
{
    throttle->bytes_per_sec = bytes_per_sec;
    throttle->burst_bytes = burst_bytes;
    throttle->free_at_ns = INT64_MIN;
}

void throttle_set_rate(struct throttle *throttle, uint64_t bytes_per_sec)
{
    throttle->bytes_per_sec = bytes_per_sec;
}

int64_t throttle_book(struct throttle *throttle, uint64_t bytes, int64_t start_ns)
{
    int64_t credit_from;

    if (throttle->bytes_per_sec == 0)
        return start_ns;
    /* The earliest an idle bucket's credit can reach back to (saturating). */
    int64_t credit_ns = throttle_duration_ns(throttle->burst_bytes, throttle->bytes_per_sec);
    credit_from = start_ns < INT64_MIN + credit_ns ? INT64_MIN : start_ns - credit_ns;
    if (throttle->free_at_ns < credit_from)
        throttle->free_at_ns = credit_from;
    throttle->free_at_ns =
        throttle_add(throttle->free_at_ns, throttle_duration_ns(bytes, throttle->bytes_per_sec));
    return throttle->free_at_ns;
}
