/*
 * @file nodemetrics.h
 * The datanode's Prometheus figures (metrics.h): requests, failures, time
 * serving and bytes per operation (the ZeroMQ server's and the tile
 * streams', as NODE_STATS counts them), tiles and bytes stored, capacity
 * and free space, the disk's measured rates and throttle, the scrub's
 * progress and corruption found, the reclaimer's deletions.
 */
#ifndef TESSERA_DATANODE_NODEMETRICS_H
#define TESSERA_DATANODE_NODEMETRICS_H

#include "metrics.h"

/*
 * A metrics_collect_fn over a struct nodehandlers_context (the context):
 * takes its lock while it reads, so it waits out a request at most.
 */
void nodemetrics_collect(void *context, struct metrics_text *text);

#endif
