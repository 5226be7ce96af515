/*
 * @file linkprobe.h
 * `tessera model calibrate`'s probe of this machine's network link: a
 * file of 1 MiB tiles, one copy each, spread round-robin over the
 * datanodes, is written through the mount; its tiles held by datanodes on
 * other machines are then read back with O_DIRECT, LINKPROBE_STREAMS
 * reads at once, each pass from the highest offset down.  O_DIRECT keeps
 * the page cache out; reading backwards keeps the mount from seeing a
 * stream and reading ahead (it would fetch the local tiles too, and serve
 * a later pass from its cache), so each pass moves every remote tile over
 * the link exactly once.  Several reads at once keep the link busy, as a
 * workload's read-ahead does: one at a time would measure the round trip.
 */
#ifndef TESSERA_TOOLS_LINKPROBE_H
#define TESSERA_TOOLS_LINKPROBE_H

#include "rpc.h"
#include "toolmeta.h"

#include <stddef.h>
#include <stdint.h>

#define LINKPROBE_STREAMS 4

/*
 * Probes through the directory dir of a mount on `machine` (dir's files
 * must have 1 MiB tiles, one copy, round-robin placement) with a file of
 * about probe_bytes: pass_s[runs] the seconds of each timed pass (after
 * one untimed), *remote_bytes what each pass read over the link.  Returns
 * 1 when measured, 0 when no tile is held on another machine (a
 * single-machine cluster: nothing to measure), -1 on an error (printed).
 */
int linkprobe_measure(struct rpc_client *meta, int timeout_ms, const struct toolmeta_node *nodes,
                      size_t count, const char *dir, const char *machine, uint64_t probe_bytes,
                      int runs, double *pass_s, uint64_t *remote_bytes);

#endif
