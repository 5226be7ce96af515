/*
 * @file topologyfile.h
 * The `--topology FILE` of `tessera rebalance --policy lbm` and `tessera
 * place`: reads the file (format in librarian/topology.h) and checks it
 * covers every machine the planner will see.
 */
#ifndef TESSERA_TOOLS_TOPOLOGYFILE_H
#define TESSERA_TOOLS_TOPOLOGYFILE_H

#include "plan.h"
#include "topology.h"

/* Largest topology file read: a cluster of thousands of machines fits easily. */
#define TOPOLOGYFILE_MAX_BYTES (4u << 20)

/*
 * Reads and parses `path`. Returns 0 with *out to topology_release(), or
 * 1 after printing "WHO: PATH: line N: ..." (or why it could not read the
 * file) to stderr, *out empty.
 */
int topologyfile_load(const char *who, const char *path, struct topology *out);

/*
 * Checks that every machine of the snapshot's nodes and of the profile is
 * in the topology. Returns 0, or 1 after naming each missing machine on
 * stderr.
 */
int topologyfile_check(const char *who, const char *path, const struct topology *topology,
                       const struct plan_cluster *cluster, const struct plan_profile *profile);

#endif
