/*
 * @file perfmodel.h
 * A pure performance model of a Tessera transfer, after Chen et al.'s
 * Panda model (seed 001): predicted time = start-up + the finish time of
 * the slowest resource + closing.  Every resource (each mount's CPU, each
 * machine's link in each direction, each datanode's CPU and disk, meta)
 * is a queue whose busy time is the sum of the work routed through it, so
 * resources working at the same time overlap instead of adding up; the
 * one with the largest busy time is the bottleneck.  No I/O, no globals.
 */
#ifndef TESSERA_PERFMODEL_H
#define TESSERA_PERFMODEL_H

#include <stddef.h>
#include <stdint.h>

#define PERFMODEL_MAX_NODES   64
#define PERFMODEL_MAX_CLIENTS 64
#define PERFMODEL_MAX_MACHINES 64
#define PERFMODEL_MAX_RESOURCES (2 * PERFMODEL_MAX_NODES + \
    2 * PERFMODEL_MAX_CLIENTS + 3 * PERFMODEL_MAX_MACHINES + 1)

/* One datanode: where it runs and what its disk and CPU cost. */
struct perfmodel_node {
    int machine;              /* index into the cluster's machines */
    double disk_read_mbps;    /* MB/s (1e6 bytes); 0 = infinitely fast */
    double disk_write_mbps;
    double sync_seconds;      /* final fsync cost per written file */
    double cpu_per_request_s; /* datanode CPU per tile request */
    double cpu_per_byte_s;    /* datanode CPU per byte moved */
};

/*
 * All the CPU a client's transfer costs on the client's machine (one with
 * machine_cores), as measured there: the application's copies, the
 * kernel's FUSE work, the mount, and the datanodes on that machine -- per
 * byte and per tile request, for the first copy; each further copy of a
 * written byte adds copy_per_byte_s.  An array file's bytes take another
 * path (cut into hyper-rectangles at the mount, read through its tile
 * cache): array_*_per_byte_s, per request included, when measured.  A
 * direction whose per-byte figure is 0 is not measured: the machine is
 * charged the sum of the mount's and datanodes' figures, which leaves the
 * application and the kernel out.
 */
struct perfmodel_client_cpu {
    double read_per_byte_s, write_per_byte_s;
    double read_per_request_s, write_per_request_s;
    double copy_per_byte_s;
    double array_read_per_byte_s, array_write_per_byte_s;
    /* A linear byte read from a datanode on another machine: the
     * network's work here instead of the local datanode's; 0 = as
     * read_per_byte_s. */
    double remote_read_per_byte_s;
};

/* One machine's network link; both directions have this speed. */
struct perfmodel_link {
    double latency_s;         /* one-way, paid once per request */
    double mbps;              /* MB/s; 0 = infinitely fast */
};

struct perfmodel_cluster {
    size_t n_nodes;
    struct perfmodel_node nodes[PERFMODEL_MAX_NODES];
    size_t n_machines;
    struct perfmodel_link links[PERFMODEL_MAX_MACHINES];
    double mount_cpu_per_request_s; /* FUSE mount CPU per tile request */
    double mount_cpu_per_byte_s;    /* reads (and writes, unless below) */
    double mount_write_cpu_per_byte_s; /* writes; 0 = mount_cpu_per_byte_s */
    /* An array file's bytes (cut into hyper-rectangles, through the tile
     * cache); 0 = the linear figures above. */
    double mount_array_read_per_byte_s, mount_array_write_per_byte_s;
    double meta_rtt_s;              /* one metadata round trip */
    /* CPUs each machine has (0 = as many as its processes want): the
     * mounts and datanodes on one machine share them, so their CPU work
     * also queues on the machine (a local cluster's 2 cores). */
    unsigned machine_cores[PERFMODEL_MAX_MACHINES];
    struct perfmodel_client_cpu client_cpu;
};

enum perfmodel_op { PERFMODEL_READ, PERFMODEL_WRITE };

/* What is moved: clients share the file's tiles (tile t is client t mod
 * n_clients's).  Without a placement each tile's primary is node (tile
 * index mod n_nodes) -- Tessera's round-robin linear layout; with one
 * (tile_nodes, e.g. an array's chunk homes) tile t's primary is
 * tile_nodes[t], and with tile_clients (a profile's accesses) its client
 * is tile_clients[t].  Copies are the nodes following the primary.  tile_lens,
 * if given, are the tiles' own sizes (an array's edge tiles are smaller);
 * both arrays then hold n_tiles entries and bytes is their sum. */
struct perfmodel_workload {
    enum perfmodel_op op;
    uint64_t bytes;
    uint64_t tile_bytes;
    size_t n_clients;
    int client_machine[PERFMODEL_MAX_CLIENTS];
    unsigned copies;          /* 1 = no replica */
    size_t n_tiles;           /* entries of tile_nodes / tile_lens */
    const uint32_t *tile_nodes; /* NULL: round-robin */
    const uint32_t *tile_lens;  /* NULL: tile_bytes each, the last the rest */
    const uint32_t *tile_clients; /* NULL: tile t is client t mod n_clients's */
    /* No read-ahead: each client waits for one tile before asking for the
     * next (Tessera's array reads load tiles on demand), so a client's
     * requests form a chain whose time is the sum of their costs -- the
     * paper's Formula 6, subchunk after subchunk -- not only a queue. */
    int serial;
    int array; /* an array file's (perfmodel_client_cpu) */
    /* The clients wrote the tiles themselves (or are writing them): as meta
     * places them (meta/handlers_files.c, tile_map_writer_node), a tile
     * of copies >= 2 whose primary is on another machine has its second
     * holder on the writer's machine, and a read is served by a holder on
     * the reader's machine when there is one (the mount's nearest
     * replica).  0: copies are the nodes following the primary and reads
     * go to the primary (a profile's tiles, whose writers are unknown). */
    int writer_copies;
};

/* What-if overrides: infinitely fast disk / network / CPU. */
struct perfmodel_whatif {
    int disk_inf, net_inf, cpu_inf;
};

enum perfmodel_resource_kind {
    PERFMODEL_RES_MOUNT_CPU, PERFMODEL_RES_LINK_OUT, PERFMODEL_RES_LINK_IN,
    PERFMODEL_RES_NODE_CPU, PERFMODEL_RES_DISK, PERFMODEL_RES_META,
    PERFMODEL_RES_MACHINE_CPU,
    PERFMODEL_RES_CHAIN,      /* a serial client's requests one by one */
};

struct perfmodel_resource {
    enum perfmodel_resource_kind kind;
    int index;                /* client, machine or node index */
    double busy_s;
};

struct perfmodel_result {
    double startup_s, closing_s, total_s;
    double mbps;              /* bytes / total_s, in MB/s */
    size_t n_resources;
    struct perfmodel_resource resources[PERFMODEL_MAX_RESOURCES];
    size_t bottleneck;        /* index into resources */
};

/*
 * The holders of a tile whose primary is node `primary`, in order, into
 * holders[copies]: with writer_machine >= 0, the second a node on that
 * machine when the primary is elsewhere (the first such node after the
 * primary, round-robin); the rest the nodes following the primary.
 * Pure.
 */
void perfmodel_holders(const struct perfmodel_cluster *cluster, size_t primary, unsigned copies,
                       int writer_machine, size_t *holders);

/* Predicts the workload's time on the cluster.  Returns 0, or -1 (and
 * leaves out untouched) when the input is out of range. */
int perfmodel_predict(const struct perfmodel_cluster *cluster,
                      const struct perfmodel_workload *work,
                      const struct perfmodel_whatif *whatif,
                      struct perfmodel_result *out);

/* "mount-cpu[2]", "disk[0]", ... into buf. */
void perfmodel_resource_name(const struct perfmodel_resource *res,
                             char *buf, size_t len);

#endif
