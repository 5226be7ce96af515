/*
 * @file modelworkload.h
 * What `tessera model predict|advise` is asked about: a read or write of a
 * size, laid out linearly or as an array, by some clients over some
 * datanodes with some copies, written as key=value words on the command
 * line or in a small INI file's [workload] section (same keys):
 *
 *   op=read size=1G tile=1M clients=4 nodes=4 copies=2 layout=linear
 *
 * Clients on one mount share its CPU (a FUSE mount serves its processes
 * in one queue), so the model's mount queues are the mounts=N the clients
 * are spread over (default 1, on this machine). machines=A,B,... puts the
 * mounts on those machines instead (at least one mount on each, mount i on
 * the (i mod count)th), each client then reading or writing its own part
 * of the bytes (a file of size/clients, placed as the cluster places it):
 *   op=read size=64M clients=4 machines=host1,host2,host3,host4
 *   op=write tile=1M layout=array:16384x4096:f32:mesh=2x2
 *
 * An array's size is its shape times its element; its tiles are the
 * array layout's (arraylayout.h, threshold = tile) and each disk chunk
 * lives on its home datanode (arrayhome.h), as meta would place it.
 * `--what-if disk=inf,net=inf,cpu=inf,nodes=N,tile=4M` changes conditions.
 * Pure: no I/O but the file read.
 */
#ifndef TESSERA_TOOLS_MODELWORKLOAD_H
#define TESSERA_TOOLS_MODELWORKLOAD_H

#include "arrayspec.h"
#include "perfmodel.h"

#include <stddef.h>
#include <stdint.h>

/* machines=: names of at most this many machines, each under MODELWORKLOAD_MACHINE_MAX bytes. */
#define MODELWORKLOAD_MAX_MACHINES 16
#define MODELWORKLOAD_MACHINE_MAX 256

struct modelworkload {
    enum perfmodel_op op;
    uint64_t bytes;      /* size=; an array's own size */
    uint64_t tile_bytes; /* tile= (default 1 MiB) */
    size_t clients;      /* clients= (default 1) */
    size_t mounts;       /* mounts= the clients share (default 1: this machine's) */
    size_t nodes;        /* nodes= (0: every up datanode) */
    /* machines= : n_machines names (none: every mount on --machine). */
    size_t n_machines;
    char machines[MODELWORKLOAD_MAX_MACHINES][MODELWORKLOAD_MACHINE_MAX];
    unsigned copies;     /* copies= (default 1) */
    int is_array;
    struct arrayspec array; /* threshold set from tile_bytes when placed */
};

/* The changed conditions of --what-if. */
struct modelwhatif {
    struct perfmodel_whatif inf;
    size_t nodes;        /* 0: unchanged */
    uint64_t tile_bytes; /* 0: unchanged */
};

/* Defaults: read, 1 GiB, 1 MiB tiles, 1 client, 1 mount, all nodes, 1 copy, linear. */
void modelworkload_init(struct modelworkload *work);

/* Sets one key; 0, or -1 with a one-line reason in err. */
int modelworkload_set(struct modelworkload *work, const char *key, const char *value, char *err,
                      size_t cap);

/* Each word "key=value" in turn; 0, or -1 with the bad word named in err. */
int modelworkload_parse_words(struct modelworkload *work, int count, char *const *words,
                              char *err, size_t cap);

/* The [workload] section of an INI file; 0, or -1 with FILE:LINE in err. */
int modelworkload_read_file(struct modelworkload *work, const char *path, char *err, size_t cap);

/* "disk=inf,net=inf,cpu=inf,nodes=N,tile=SIZE" (any of them); 0 or -1. */
int modelwhatif_parse(const char *text, struct modelwhatif *whatif, char *err, size_t cap);

/* The workload with the what-if's nodes and tile applied. */
void modelwhatif_apply(const struct modelwhatif *whatif, struct modelworkload *work);

/*
 * The model's mount queues: mounts=, at least one on each of machines=,
 * never more than the clients.
 */
size_t modelworkload_mounts(const struct modelworkload *work);

/* One line describing the workload ("read 1.0 GiB, 1 MiB tiles, ..."). */
void modelworkload_describe(const struct modelworkload *work, char *out, size_t cap);

/* The tiles' sizes and primaries the model gets: for an array, its
 * layout's tiles and chunk homes over nodes whose machines are
 * machine[0..n_nodes); NULL arrays for a linear file (round-robin).
 * Returns 0, or -1 with err (a bad array for this tile size, no memory). */
struct modelplacement {
    size_t n_tiles;
    uint32_t *tile_nodes;
    uint32_t *tile_lens;
};
int modelworkload_place(const struct modelworkload *work, const int *machine, size_t n_nodes,
                        struct modelplacement *out, char *err, size_t cap);
void modelplacement_free(struct modelplacement *placement);

#endif
