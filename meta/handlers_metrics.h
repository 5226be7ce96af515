/*
 * @file handlers_metrics.h
 * METRICS_LIST (proto.h): where meta, each datanode and each mount serve
 * their Prometheus figures, for `tessera stats`. Same contract as every
 * handler of handlers.h: ctx is the struct service. No store: the
 * directory lives in memory (metricsdir.h).
 */
#ifndef TESSERA_META_HANDLERS_METRICS_H
#define TESSERA_META_HANDLERS_METRICS_H

#include "rpc.h"

int handlers_metrics_list(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response);

#endif
