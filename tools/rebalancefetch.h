/*
 * @file rebalancefetch.h
 * Asks meta for what the planner needs about the files under a path of
 * the mount, into a struct rebalanceinput (rebalanceinput.h): each file's
 * layout, its profile and the holders of its profiled tiles.
 */
#ifndef TESSERA_TOOLS_REBALANCEFETCH_H
#define TESSERA_TOOLS_REBALANCEFETCH_H

#include "toolmeta.h"
#include "rebalanceinput.h"
#include "rpc.h"

#include <stddef.h>

/*
 * Fills input (initialised, empty) with nodes[node_count] (from
 * NODE_LIST) and the regular files under root, asking meta (at endpoint,
 * for messages) with timeout_ms per request. Hard links are counted once.
 * Returns 0, or exit code 1 after printing why on stderr.
 */
int rebalancefetch_build(const char *root, const char *endpoint, struct rpc_client *meta,
                         int timeout_ms, const struct toolmeta_node *nodes, size_t node_count,
                         struct rebalanceinput *input);

#endif
