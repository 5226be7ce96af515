/*
 * @file statsview.h
 * `tessera stats`: live figures of every daemon, as `top` shows
 * processes: meta, each datanode and each mount, their operations, bytes
 * and latency per second, errors, queues and repair and scrub progress,
 * computed from their Prometheus endpoints (statsfigures.h), which meta
 * lists (METRICS_LIST) or the command line names.
 */
#ifndef TESSERA_TOOLS_STATSVIEW_H
#define TESSERA_TOOLS_STATSVIEW_H

int statsview_main(int argc, char **argv);

#endif
