/*
 * @file metricsfetch.h
 * One HTTP GET of a daemon's Prometheus endpoint, through libcurl (a
 * well-kept client: redirects, chunked bodies, timeouts and the corner
 * cases of HTTP are its job, not ours). Call curl_global_init() once
 * before the first fetch, as libcurl asks of a program.
 */
#ifndef TESSERA_TOOLS_METRICSFETCH_H
#define TESSERA_TOOLS_METRICSFETCH_H

#include <stddef.h>

/* A larger body is refused: no endpoint of ours writes a tenth of it. */
#define METRICSFETCH_MAX_BYTES (8u << 20)

/*
 * GETs http://ADDRESS/metrics (ADDRESS as HOST:PORT) within timeout_ms.
 * 0 with *body (NUL-terminated, the caller frees) and *len; -1 with why
 * in error (error_cap bytes with the NUL): no connection, a timeout, an
 * HTTP status other than 200, or a body over METRICSFETCH_MAX_BYTES.
 */
int metricsfetch_get(const char *address, long timeout_ms, char **body, size_t *len, char *error,
                     size_t error_cap);

#endif
