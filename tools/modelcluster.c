/*
 * @file modelcluster.c
 * See modelcluster.h.  A throttled disk counts at its throttle when that
 * is below what the node measured: the throttle is what the node serves.
 */
#include "modelcluster.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int modelcalib_format(const struct modelcalib *calib, char *out, size_t cap)
{
    size_t used = 0;
    int n = snprintf(out, cap,
                     "tessera-model 1\nwhen %" PRId64 "\nmount %.9g %.9g %.9g\nmeta %.9g\n"
                     "client %.9g %.9g %.9g %.9g %.9g %.9g %.9g\narray %.9g %.9g\n",
                     calib->when, calib->mount_per_request_s, calib->mount_read_per_byte_s,
                     calib->mount_write_per_byte_s, calib->meta_rtt_s,
                     calib->client_cpu.read_per_byte_s, calib->client_cpu.write_per_byte_s,
                     calib->client_cpu.read_per_request_s, calib->client_cpu.write_per_request_s,
                     calib->client_cpu.copy_per_byte_s, calib->client_cpu.array_read_per_byte_s,
                     calib->client_cpu.array_write_per_byte_s, calib->mount_array_read_per_byte_s,
                     calib->mount_array_write_per_byte_s);
    if (n < 0 || (size_t)n >= cap)
        return -1;
    used = (size_t)n;
    for (size_t i = 0; i < calib->n_nodes; i++) {
        const struct modelcalib_node *node = &calib->nodes[i];
        n = snprintf(out + used, cap - used, "node %" PRIu32 " %.9g %.9g %.9g\n", node->id,
                     node->cpu_per_request_s, node->cpu_per_byte_s, node->sync_s);
        if (n < 0 || (size_t)n >= cap - used)
            return -1;
        used += (size_t)n;
    }
    if (calib->client_cpu.remote_read_per_byte_s > 0) {
        n = snprintf(out + used, cap - used, "remote %.9g\n",
                     calib->client_cpu.remote_read_per_byte_s);
        if (n < 0 || (size_t)n >= cap - used)
            return -1;
        used += (size_t)n;
    }
    for (size_t i = 0; i < calib->n_links; i++) {
        n = snprintf(out + used, cap - used, "link %s %.9g\n", calib->links[i].machine,
                     calib->links[i].mbps);
        if (n < 0 || (size_t)n >= cap - used)
            return -1;
        used += (size_t)n;
    }
    return 0;
}

/* A figure from the record: finite, not negative, below a day. */
static int modelcalib_sane(double value)
{
    return value >= 0.0 && value < 86400.0;
}

int modelcalib_parse(const char *text, size_t len, struct modelcalib *calib)
{
    char buf[MODELCALIB_TEXT_MAX];
    if (len >= sizeof(buf) || memchr(text, '\0', len))
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    *calib = (struct modelcalib){ 0 };
    int seen_header = 0, seen_mount = 0, seen_meta = 0;
    double remote_read = 0.0; /* its line may come before the client line */
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char extra;
        int version;
        long long when;
        unsigned id;
        double a, b, c, d, e, f, g;
        char machine[MODELCALIB_MACHINE_MAX];
        if (sscanf(line, "tessera-model %d %c", &version, &extra) == 1 && version == 1)
            seen_header = 1;
        else if (sscanf(line, "when %lld %c", &when, &extra) == 1 && when > 0)
            calib->when = when;
        else if (sscanf(line, "mount %lf %lf %lf %c", &a, &b, &c, &extra) == 3 &&
                 modelcalib_sane(a) && modelcalib_sane(b) && modelcalib_sane(c)) {
            calib->mount_per_request_s = a;
            calib->mount_read_per_byte_s = b;
            calib->mount_write_per_byte_s = c;
            seen_mount = 1;
        } else if (sscanf(line, "client %lf %lf %lf %lf %lf %lf %lf %c", &a, &b, &c, &d, &e, &f, &g,
                          &extra) == 7 &&
                   modelcalib_sane(a) && modelcalib_sane(b) && modelcalib_sane(c) &&
                   modelcalib_sane(d) && modelcalib_sane(e) && modelcalib_sane(f) &&
                   modelcalib_sane(g)) {
            calib->client_cpu = (struct perfmodel_client_cpu){.read_per_byte_s = a,
                                                              .write_per_byte_s = b,
                                                              .read_per_request_s = c,
                                                              .write_per_request_s = d,
                                                              .copy_per_byte_s = e,
                                                              .array_read_per_byte_s = f,
                                                              .array_write_per_byte_s = g};
        } else if (sscanf(line, "remote %lf %c", &a, &extra) == 1 && modelcalib_sane(a)) {
            remote_read = a;
        } else if (sscanf(line, "array %lf %lf %c", &a, &b, &extra) == 2 && modelcalib_sane(a) &&
                   modelcalib_sane(b)) {
            calib->mount_array_read_per_byte_s = a;
            calib->mount_array_write_per_byte_s = b;
        } else if (sscanf(line, "meta %lf %c", &a, &extra) == 1 && modelcalib_sane(a)) {
            calib->meta_rtt_s = a;
            seen_meta = 1;
        } else if (sscanf(line, "node %u %lf %lf %lf %c", &id, &a, &b, &c, &extra) == 4 &&
                   modelcalib_sane(a) && modelcalib_sane(b) && modelcalib_sane(c) &&
                   calib->n_nodes < PERFMODEL_MAX_NODES) {
            calib->nodes[calib->n_nodes++] =
                (struct modelcalib_node){ .id = id, .cpu_per_request_s = a,
                                          .cpu_per_byte_s = b, .sync_s = c };
        } else if (sscanf(line, "link %63s %lf %c", machine, &a, &extra) == 2 && a > 0.0 &&
                   a < 1e9 && calib->n_links < PERFMODEL_MAX_MACHINES) {
            struct modelcalib_link *link = &calib->links[calib->n_links++];
            snprintf(link->machine, sizeof(link->machine), "%s", machine);
            link->mbps = a;
        } else
            return -1;
    }
    calib->client_cpu.remote_read_per_byte_s = remote_read;
    return seen_header && seen_mount && seen_meta && calib->when > 0 ? 0 : -1;
}

static const struct modelcalib_node *modelcluster_calibrated(const struct modelcalib *calib,
                                                             uint32_t id)
{
    for (size_t i = 0; calib && i < calib->n_nodes; i++)
        if (calib->nodes[i].id == id)
            return &calib->nodes[i];
    return NULL;
}

static const struct modelcalib_link *modelcluster_link(const struct modelcalib *calib,
                                                       const char *machine)
{
    for (size_t i = 0; i < calib->n_links; i++)
        if (strcmp(calib->links[i].machine, machine) == 0)
            return &calib->links[i];
    return NULL;
}

/* The index of machine `name`, added if new; -1 when there is no room. */
static int modelcluster_machine(char (*names)[256], size_t *count, const char *name)
{
    for (size_t i = 0; i < *count; i++)
        if (strcmp(names[i], name) == 0)
            return (int)i;
    if (*count >= PERFMODEL_MAX_MACHINES)
        return -1;
    snprintf(names[*count], 256, "%s", name);
    return (int)(*count)++;
}

static double modelcluster_disk(uint64_t measured, uint64_t throttle, int *from_heartbeat)
{
    double mbps = MODELCLUSTER_DEFAULT_DISK_MBPS;
    if (measured > 0) {
        mbps = (double)measured / 1e6;
        *from_heartbeat = 1;
    }
    if (throttle > 0 && (double)throttle / 1e6 < mbps) {
        mbps = (double)throttle / 1e6;
        *from_heartbeat = 1;
    }
    return mbps;
}

int modelcluster_build(const struct toolmeta_node *nodes, size_t count,
                       const struct modelcalib *calib, const char *client_machine,
                       unsigned client_cores, size_t want_nodes, struct modelcluster *out)
{
    char (*names)[256] = out->machines;
    size_t n_machines = 0;
    int calibrated = calib && calib->when > 0;
    int heartbeat = 0, node_calibrated = 0;
    *out = (struct modelcluster){ 0 };
    struct perfmodel_cluster *c = &out->model;
    for (size_t i = 0; i < count && c->n_nodes < PERFMODEL_MAX_NODES; i++) {
        const struct toolmeta_node *node = &nodes[i];
        if (node->state != TS_NODE_UP || node->admin != TS_NODE_ACTIVE)
            continue;
        int machine = modelcluster_machine(names, &n_machines, node->machine);
        if (machine < 0)
            break;
        const struct modelcalib_node *cal = calibrated ? modelcluster_calibrated(calib, node->id)
                                                       : NULL;
        node_calibrated |= cal != NULL;
        struct perfmodel_node *m = &c->nodes[c->n_nodes];
        *m = (struct perfmodel_node){
            .machine = machine,
            /* No read measured yet: reads are taken to be as fast as writes. */
            .disk_read_mbps = modelcluster_disk(node->read_bytes_per_sec
                                                    ? node->read_bytes_per_sec
                                                    : node->write_bytes_per_sec,
                                                node->throttle_bytes_per_sec, &heartbeat),
            .disk_write_mbps = modelcluster_disk(node->write_bytes_per_sec,
                                                 node->throttle_bytes_per_sec, &heartbeat),
            .sync_seconds = cal ? cal->sync_s : MODELCLUSTER_DEFAULT_SYNC_S,
            .cpu_per_request_s = cal ? cal->cpu_per_request_s : MODELCLUSTER_DEFAULT_NODE_REQUEST_S,
            .cpu_per_byte_s = cal ? cal->cpu_per_byte_s : MODELCLUSTER_DEFAULT_NODE_BYTE_S,
        };
        out->node_ids[c->n_nodes++] = node->id;
    }
    if (c->n_nodes == 0)
        return -1;
    /* nodes=N: fewer takes the first N; more repeats the nodes there are. */
    size_t real = c->n_nodes;
    if (want_nodes > 0 && want_nodes < real)
        c->n_nodes = want_nodes;
    for (size_t i = real; i < want_nodes && i < PERFMODEL_MAX_NODES; i++) {
        c->nodes[i] = c->nodes[i % real];
        out->node_ids[i] = 0;
        c->n_nodes = i + 1;
    }
    out->client_machine = modelcluster_machine(names, &n_machines, client_machine);
    if (out->client_machine < 0)
        out->client_machine = 0;
    c->n_machines = n_machines;
    out->unmeasured_link = (struct perfmodel_link){.latency_s = MODELCLUSTER_DEFAULT_LATENCY_S,
                                                   .mbps = calibrated && calib->n_links > 0
                                                               ? calib->links[0].mbps
                                                               : MODELCLUSTER_DEFAULT_LINK_MBPS};
    for (size_t m = 0; m < n_machines; m++) {
        const struct modelcalib_link *measured =
            calibrated ? modelcluster_link(calib, names[m]) : NULL;
        c->links[m] = out->unmeasured_link;
        if (measured)
            c->links[m].mbps = measured->mbps;
    }
    c->machine_cores[out->client_machine] = client_cores;
    c->mount_cpu_per_request_s = calibrated ? calib->mount_per_request_s
                                            : MODELCLUSTER_DEFAULT_MOUNT_REQUEST_S;
    c->mount_cpu_per_byte_s = calibrated ? calib->mount_read_per_byte_s
                                         : MODELCLUSTER_DEFAULT_MOUNT_BYTE_S;
    c->mount_write_cpu_per_byte_s = calibrated ? calib->mount_write_per_byte_s : 0.0;
    c->meta_rtt_s = calibrated ? calib->meta_rtt_s : MODELCLUSTER_DEFAULT_META_RTT_S;
    if (calibrated) {
        c->client_cpu = calib->client_cpu;
        c->mount_array_read_per_byte_s = calib->mount_array_read_per_byte_s;
        c->mount_array_write_per_byte_s = calib->mount_array_write_per_byte_s;
    }
    out->disk_source = heartbeat ? MODELCLUSTER_HEARTBEAT : MODELCLUSTER_DEFAULT;
    out->cpu_source = node_calibrated ? MODELCLUSTER_CALIBRATED : MODELCLUSTER_DEFAULT;
    out->mount_source = calibrated ? MODELCLUSTER_CALIBRATED : MODELCLUSTER_DEFAULT;
    return 0;
}

int modelcluster_machine_index(struct modelcluster *cluster, const char *name)
{
    struct perfmodel_cluster *c = &cluster->model;
    int i = modelcluster_machine(cluster->machines, &c->n_machines, name);
    if (i >= 0 && c->links[i].mbps == 0.0)
        c->links[i] = cluster->unmeasured_link;
    return i;
}

void modelcluster_machines(const struct modelcluster *cluster, int *out)
{
    for (size_t i = 0; i < cluster->model.n_nodes; i++)
        out[i] = cluster->model.nodes[i].machine;
}
