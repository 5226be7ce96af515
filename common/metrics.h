/*
 * @file metrics.h
 * A Prometheus text endpoint (exposition format 0.0.4) served by
 * libmicrohttpd on a thread of its own: GET /metrics (or /) answers what
 * the daemon's collect function writes at that moment. Knows no daemon:
 * each one passes a collect function that takes its own locks (it runs on
 * the HTTP thread) and writes families with metrics_text_family() and
 * samples with metrics_text_sample().
 *
 * Addresses (--metrics): "PORT" or ":PORT" (loopback, 127.0.0.1),
 * "HOST:PORT" with an IPv4 HOST ("0.0.0.0" for every interface). Off
 * unless a daemon is given one.
 */
#ifndef TESSERA_COMMON_METRICS_H
#define TESSERA_COMMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct metrics_text;
struct metrics_server;

/* Writes a daemon's figures into text; runs on the HTTP thread, once per scrape. */
typedef void metrics_collect_fn(void *context, struct metrics_text *text);

/* "# HELP name help" and "# TYPE name type" (counter, gauge). */
void metrics_text_family(struct metrics_text *text, const char *name, const char *type,
                         const char *help);

/* "name{labels} value"; labels like `op="read"` or NULL. */
void metrics_text_sample(struct metrics_text *text, const char *name, const char *labels,
                         double value);

/* A family of one unlabelled sample: metrics_text_family() then metrics_text_sample(). */
void metrics_text_one(struct metrics_text *text, const char *name, const char *type,
                      const char *help, double value);

/* Appends text produced elsewhere (a snapshot rendered by another thread). */
void metrics_text_append(struct metrics_text *text, const char *chunk, size_t len);

/*
 * Renders collect's output into a new NUL-terminated string (*out, the
 * caller frees; *len its length). For the server and for tests. 0 or -ENOMEM.
 */
int metrics_render(metrics_collect_fn *collect, void *context, char **out, size_t *len);

/* Parses an address as above into host (dotted IPv4) and port. 0 or -EINVAL. */
int metrics_parse_address(const char *text, char *host, size_t host_cap, uint16_t *port);

/*
 * The address a daemon announces for address (as above) so that others can
 * scrape it (HEARTBEAT, SESSION_RENEW): "HOST:PORT", where a HOST of
 * 0.0.0.0 (every interface) becomes any_host when that is not NULL or "",
 * since 0.0.0.0 names no machine. 0, or -EINVAL for a bad address or one
 * that does not fit in cap bytes.
 */
int metrics_announced_address(const char *address, const char *any_host, char *out, size_t cap);

/*
 * The HOST of a ZeroMQ endpoint "tcp://HOST:PORT" into host (cap bytes with
 * the NUL), for metrics_announced_address()'s any_host; "" for any other
 * endpoint (ipc://, a wildcard "*", too long).
 */
void metrics_endpoint_host(const char *endpoint, char *host, size_t cap);

/*
 * Starts serving on address (as above). 0 with *serverp set, -EINVAL for a
 * bad address, or -errno when it cannot listen (-EADDRINUSE, ...).
 */
int metrics_server_start(const char *address, metrics_collect_fn *collect, void *context,
                         struct metrics_server **serverp);

/* Stops serving and joins the thread; accepts NULL, clears *serverp. */
void metrics_server_stop(struct metrics_server **serverp);

#endif
