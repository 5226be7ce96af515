/*
 * @file modelcluster.h
 * The cluster the performance model (perfmodel.h) is given: the up
 * datanodes meta lists, with, for each figure, the best source there is --
 * the calibration `tessera model calibrate` stored in meta, else what the
 * datanodes measure and send in heartbeats (disk MB/s, a throttle), else
 * the stated defaults below.  Also the calibration record itself, kept as
 * the root directory's attribute MODELCALIB_XATTR in meta's store, as
 * text:
 *
 *   tessera-model 1
 *   when UNIX_SECONDS
 *   mount PER_REQUEST_S READ_PER_BYTE_S WRITE_PER_BYTE_S
 *   meta RTT_S
 *   client READ_PER_BYTE_S WRITE_PER_BYTE_S READ_PER_REQUEST_S WRITE_PER_REQUEST_S
 *          COPY_PER_BYTE_S ARRAY_READ_PER_BYTE_S ARRAY_WRITE_PER_BYTE_S
 *   array MOUNT_READ_PER_BYTE_S MOUNT_WRITE_PER_BYTE_S
 *   remote READ_PER_BYTE_S
 *   node ID PER_REQUEST_S PER_BYTE_S SYNC_S
 *   link MACHINE MBPS
 *
 * The client line (the CPU a transfer costs on the calibrating machine,
 * struct perfmodel_client_cpu), the array line (the mount's cost per
 * byte of an array file), the remote line (the calibrating machine's CPU
 * per byte read from another machine's datanode) and the link lines (a
 * machine's network link,
 * measured by reading tiles held on other machines) may be missing: a
 * record from before them parses, as not measured.  A machine without a
 * link line gets the link measured on another (a cluster's machines are
 * usually cabled alike), else MODELCLUSTER_DEFAULT_LINK_MBPS.
 */
#ifndef TESSERA_TOOLS_MODELCLUSTER_H
#define TESSERA_TOOLS_MODELCLUSTER_H

#include "perfmodel.h"
#include "toolmeta.h"

#include <stddef.h>
#include <stdint.h>

#define MODELCALIB_XATTR "user.tessera.model"
#define MODELCALIB_TEXT_MAX 8192

/* Defaults when neither calibration nor heartbeats say (a 2020s server). */
#define MODELCLUSTER_DEFAULT_DISK_MBPS 200.0
#define MODELCLUSTER_DEFAULT_SYNC_S 0.005
#define MODELCLUSTER_DEFAULT_NODE_REQUEST_S 100e-6
#define MODELCLUSTER_DEFAULT_NODE_BYTE_S 0.5e-9
#define MODELCLUSTER_DEFAULT_MOUNT_REQUEST_S 200e-6
#define MODELCLUSTER_DEFAULT_MOUNT_BYTE_S 2e-9
#define MODELCLUSTER_DEFAULT_META_RTT_S 300e-6
#define MODELCLUSTER_DEFAULT_LINK_MBPS 1000.0
#define MODELCLUSTER_DEFAULT_LATENCY_S 50e-6

struct modelcalib_node {
    uint32_t id;
    double cpu_per_request_s, cpu_per_byte_s, sync_s;
};

/* A machine's link as measured from it; names hold no white space. */
#define MODELCALIB_MACHINE_MAX 64
struct modelcalib_link {
    char machine[MODELCALIB_MACHINE_MAX];
    double mbps;
};

struct modelcalib {
    int64_t when; /* 0: no calibration */
    double mount_per_request_s, mount_read_per_byte_s, mount_write_per_byte_s;
    double meta_rtt_s;
    struct perfmodel_client_cpu client_cpu;                           /* all zero: not measured */
    double mount_array_read_per_byte_s, mount_array_write_per_byte_s; /* 0: not measured */
    size_t n_nodes;
    struct modelcalib_node nodes[PERFMODEL_MAX_NODES];
    size_t n_links;
    struct modelcalib_link links[PERFMODEL_MAX_MACHINES];
};

/* The record as text into out; -1 if cap is too small. */
int modelcalib_format(const struct modelcalib *calib, char *out, size_t cap);

/* Parses len bytes of text (from the wire: checked, no NUL needed). 0 or -1. */
int modelcalib_parse(const char *text, size_t len, struct modelcalib *calib);

/* Where each figure of the built cluster came from. */
enum modelcluster_source { MODELCLUSTER_DEFAULT, MODELCLUSTER_HEARTBEAT, MODELCLUSTER_CALIBRATED };

struct modelcluster {
    struct perfmodel_cluster model;
    uint32_t node_ids[PERFMODEL_MAX_NODES]; /* 0 for a what-if node */
    int client_machine;                     /* where the clients run */
    char machines[PERFMODEL_MAX_MACHINES][256]; /* model.links[i] is machines[i]'s */
    /* A machine the calibration measured no link of: one measured on
     * another, else the default. */
    struct perfmodel_link unmeasured_link;
    enum modelcluster_source disk_source, cpu_source, mount_source;
};

/*
 * From meta's nodes (only up, active ones count), the calibration (may be
 * NULL or have when 0), the machine the clients run on and its core count
 * (0: unknown), with want_nodes datanodes (0: all of them; more than there
 * are: copies of the existing ones on their machines, the what-if
 * nodes=N).  Returns 0, or -1 when no datanode is up.
 */
int modelcluster_build(const struct toolmeta_node *nodes, size_t count,
                       const struct modelcalib *calib, const char *client_machine,
                       unsigned client_cores, size_t want_nodes, struct modelcluster *out);

/* The index of machine `name` (a profile's reader), added with
 * unmeasured_link if new; -1 when the model has no room for more. */
int modelcluster_machine_index(struct modelcluster *cluster, const char *name);

/* The datanode machine indexes the placement needs (out[n_nodes]). */
void modelcluster_machines(const struct modelcluster *cluster, int *out);

#endif
