/*
 * @file metametrics.h
 * tessera-meta's Prometheus figures (metrics.h): requests, failures, time
 * and bytes per operation (counted by the ZeroMQ server, read live), and
 * the cluster as meta sees it: datanodes up and down with their tiles and
 * space, files, tiles healthy, degraded and unavailable as the last health
 * pass found them, the repairer's progress.
 *
 * The store and the node table belong to the request thread: it renders
 * those figures once a tick (metametrics_update()), and a scrape (on the
 * HTTP thread) sends the latest rendering, at most a tick old.
 */
#ifndef TESSERA_META_METAMETRICS_H
#define TESSERA_META_METAMETRICS_H

#include "metrics.h"
#include "rpc.h"
#include "service.h"

struct metametrics;

/* Reads server's counters at each scrape. 0 or -ENOMEM. */
int metametrics_new(struct rpc_server *server, struct metametrics **out);

/* Renders the cluster figures from service; the request thread only. */
void metametrics_update(struct metametrics *metrics, struct service *service);

/* A metrics_collect_fn over a struct metametrics. */
void metametrics_collect(void *metrics, struct metrics_text *text);

/* Frees; accepts NULL, clears *metricsp. The HTTP server must be stopped first. */
void metametrics_destroy(struct metametrics **metricsp);

#endif
