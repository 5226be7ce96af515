/*
 * @file promtext.h
 * A reader of the Prometheus text exposition format (0.0.4), as the
 * daemons' /metrics endpoints write it (common/metrics.h): enough for
 * `tessera stats` to take counters and gauges by name and label. Debian
 * has no library for it, so this is a small, strict parser: every line is
 * a comment ('#'), empty, or one sample
 *
 *   NAME[{LABEL="VALUE",...}] VALUE [TIMESTAMP]
 *
 * with NAME [a-zA-Z_:][a-zA-Z0-9_:]*, label values escaped with \\, \" and
 * \n, VALUE a float (also NaN, +Inf, -Inf). Anything else is refused with
 * the line number and what was wrong, never guessed at: the input comes
 * over the network from whatever answers at an address.
 */
#ifndef TESSERA_TOOLS_PROMTEXT_H
#define TESSERA_TOOLS_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Samples beyond this are refused: a bound on what one scrape may cost. */
#define PROMTEXT_MAX_SAMPLES 100000

struct promtext_sample {
    char *name;
    char *labels; /* the text between the braces as written, "" for none */
    double value;
};

struct promtext {
    struct promtext_sample *samples;
    size_t count;
};

/*
 * Parses len bytes of text into *parsed (emptied first). 0; -EINVAL for
 * malformed text, with "line N: what" in error (error_cap bytes with the
 * NUL), *parsed then empty; -E2BIG past PROMTEXT_MAX_SAMPLES; -ENOMEM.
 */
int promtext_parse(const char *text, size_t len, struct promtext *parsed, char *error,
                   size_t error_cap);

/* Frees the samples; *parsed is empty after. Accepts an empty one. */
void promtext_clear(struct promtext *parsed);

/*
 * The sum of the samples named name whose labels contain label_match
 * (e.g. `op="read"`; NULL or "" for all). *found tells whether any sample
 * matched (the sum is 0 then).
 */
double promtext_sum(const struct promtext *parsed, const char *name, const char *label_match,
                    bool *found);

#endif
