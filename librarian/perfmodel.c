/*
 * @file perfmodel.c
 * The Panda-style queue model (see perfmodel.h).  Each tile request is
 * routed through the resources it uses and adds its service time to each;
 * the requests of all clients run concurrently, so the transfer ends when
 * the busiest resource drains (the paper's "slowest resource finish
 * time"), plus the start-up (a meta round trip to open) and the closing
 * (writes: the slowest node's final sync, and a meta round trip to close).
 */
#include "perfmodel.h"

#include <stdio.h>

static double seconds_for(uint64_t bytes, double mbps, int infinite)
{
    if (infinite || mbps <= 0.0)
        return 0.0;
    return (double)bytes / (mbps * 1e6);
}

static size_t resource_slot(struct perfmodel_result *out,
                            enum perfmodel_resource_kind kind, int index)
{
    for (size_t i = 0; i < out->n_resources; i++)
        if (out->resources[i].kind == kind && out->resources[i].index == index)
            return i;
    size_t i = out->n_resources++;
    out->resources[i] = (struct perfmodel_resource){ kind, index, 0.0 };
    return i;
}

static void add_busy(struct perfmodel_result *out,
                     enum perfmodel_resource_kind kind, int index, double s)
{
    out->resources[resource_slot(out, kind, index)].busy_s += s;
}

/* CPU work on a machine with a known core count also queues there. */
static void add_cpu(struct perfmodel_result *out, const struct perfmodel_cluster *c,
                    enum perfmodel_resource_kind kind, int index, int machine, double s)
{
    add_busy(out, kind, index, s);
    if (c->machine_cores[machine] > 0)
        add_busy(out, PERFMODEL_RES_MACHINE_CPU, machine, s / c->machine_cores[machine]);
}

static int workload_valid(const struct perfmodel_cluster *c,
                          const struct perfmodel_workload *w)
{
    if (c->n_nodes == 0 || c->n_nodes > PERFMODEL_MAX_NODES ||
        c->n_machines == 0 || c->n_machines > PERFMODEL_MAX_MACHINES)
        return 0;
    if (w->n_clients == 0 || w->n_clients > PERFMODEL_MAX_CLIENTS ||
        w->bytes == 0 || w->tile_bytes == 0 ||
        w->copies == 0 || w->copies > c->n_nodes)
        return 0;
    for (size_t i = 0; i < c->n_nodes; i++)
        if (c->nodes[i].machine < 0 ||
            (size_t)c->nodes[i].machine >= c->n_machines)
            return 0;
    for (size_t i = 0; i < w->n_clients; i++)
        if (w->client_machine[i] < 0 ||
            (size_t)w->client_machine[i] >= c->n_machines)
            return 0;
    if (!w->tile_nodes && !w->tile_lens && !w->tile_clients)
        return 1;
    /* An explicit placement names one node per tile and covers bytes. */
    if (w->n_tiles == 0 || ((w->tile_nodes || w->tile_clients) && w->tile_lens == NULL &&
        w->n_tiles != (w->bytes + w->tile_bytes - 1) / w->tile_bytes))
        return 0;
    uint64_t sum = 0;
    for (size_t t = 0; t < w->n_tiles; t++) {
        if (w->tile_nodes && w->tile_nodes[t] >= c->n_nodes)
            return 0;
        if (w->tile_clients && w->tile_clients[t] >= w->n_clients)
            return 0;
        if (w->tile_lens)
            sum += w->tile_lens[t];
    }
    return !w->tile_lens || sum == w->bytes;
}

static int holder_taken(const size_t *holders, unsigned count, size_t node)
{
    for (unsigned i = 0; i < count; i++)
        if (holders[i] == node)
            return 1;
    return 0;
}

void perfmodel_holders(const struct perfmodel_cluster *c, size_t primary, unsigned copies,
                       int writer_machine, size_t *holders)
{
    unsigned count = 0;
    holders[count++] = primary;
    if (copies >= 2 && writer_machine >= 0 && c->nodes[primary].machine != writer_machine) {
        for (size_t step = 1; step < c->n_nodes; step++) {
            size_t n = (primary + step) % c->n_nodes;
            if (c->nodes[n].machine == writer_machine) {
                holders[count++] = n;
                break;
            }
        }
    }
    for (size_t step = 1; count < copies && step < c->n_nodes; step++) {
        size_t n = (primary + step) % c->n_nodes;
        if (!holder_taken(holders, count, n))
            holders[count++] = n;
    }
}

int perfmodel_predict(const struct perfmodel_cluster *c,
                      const struct perfmodel_workload *w,
                      const struct perfmodel_whatif *whatif,
                      struct perfmodel_result *out)
{
    static const struct perfmodel_whatif none;
    if (!whatif)
        whatif = &none;
    if (!workload_valid(c, w))
        return -1;
    *out = (struct perfmodel_result){ 0 };
    int cpu0 = whatif->cpu_inf;
    uint64_t n_tiles = w->tile_lens ? w->n_tiles
                                    : (w->bytes + w->tile_bytes - 1) / w->tile_bytes;
    double max_latency = 0.0;
    unsigned char wrote[PERFMODEL_MAX_NODES] = { 0 }; /* who syncs at close */

    add_busy(out, PERFMODEL_RES_META, 0, 0.0);
    for (uint64_t t = 0; t < n_tiles; t++) {
        uint64_t len = w->tile_lens ? w->tile_lens[t]
                     : t + 1 < n_tiles ? w->tile_bytes
                                       : w->bytes - t * w->tile_bytes;
        uint64_t primary = w->tile_nodes ? w->tile_nodes[t] : t;
        size_t client = w->tile_clients ? w->tile_clients[t] : (size_t)(t % w->n_clients);
        int cm = w->client_machine[client];
        double per_byte = w->op == PERFMODEL_WRITE && c->mount_write_cpu_per_byte_s > 0.0
                              ? c->mount_write_cpu_per_byte_s : c->mount_cpu_per_byte_s;
        double array_byte = w->op == PERFMODEL_WRITE ? c->mount_array_write_per_byte_s
                                                     : c->mount_array_read_per_byte_s;
        if (w->array && array_byte > 0.0)
            per_byte = array_byte;
        double mount = cpu0 ? 0.0 : c->mount_cpu_per_request_s + (double)len * per_byte;
        /* A write goes to every holder; a read to one: the primary, or
         * one on the reader's machine (writer_copies). */
        size_t holders[PERFMODEL_MAX_NODES];
        perfmodel_holders(c, (size_t)(primary % c->n_nodes), w->copies, w->writer_copies ? cm : -1,
                          holders);
        unsigned served = w->op == PERFMODEL_READ ? 1 : w->copies;
        if (w->op == PERFMODEL_READ && w->writer_copies)
            for (unsigned k = 1; k < w->copies; k++)
                if (c->nodes[holders[k]].machine == cm && c->nodes[holders[0]].machine != cm) {
                    holders[0] = holders[k];
                    break;
                }
        const struct perfmodel_client_cpu *cc = &c->client_cpu;
        int writing = w->op == PERFMODEL_WRITE;
        double measured = writing ? cc->write_per_byte_s : cc->read_per_byte_s;
        /* A byte from another machine costs this one its network's work
         * instead of its own datanode's. */
        if (!writing && cc->remote_read_per_byte_s > 0.0 && c->nodes[holders[0]].machine != cm)
            measured = cc->remote_read_per_byte_s;
        double per_request = writing ? cc->write_per_request_s : cc->read_per_request_s;
        double array = writing ? cc->array_write_per_byte_s : cc->array_read_per_byte_s;
        if (w->array && array > 0.0) {
            measured = array;
            per_request = 0.0; /* in the array probe's per byte */
        }
        int client_measured = measured > 0.0 && c->machine_cores[cm] > 0;
        if (client_measured) {
            /* The machine's CPU as measured replaces its parts' sum there. */
            add_busy(out, PERFMODEL_RES_MOUNT_CPU, (int)client, mount);
            add_busy(out, PERFMODEL_RES_MACHINE_CPU, cm,
                     cpu0 ? 0.0 : ((double)len * measured + per_request) / c->machine_cores[cm]);
        } else
            add_cpu(out, c, PERFMODEL_RES_MOUNT_CPU, (int)client, cm, mount);
        double chain = mount; /* this request's whole cost, for a serial client */
        for (unsigned k = 0; k < served; k++) {
            size_t n = holders[k];
            const struct perfmodel_node *node = &c->nodes[n];
            wrote[n] = 1;
            int nm = node->machine;
            double dcpu = cpu0 ? 0.0 : node->cpu_per_request_s +
                                       (double)len * node->cpu_per_byte_s;
            if (client_measured && (k == 0 || cc->copy_per_byte_s > 0.0) && nm == cm)
                add_busy(out, PERFMODEL_RES_NODE_CPU, (int)n, dcpu);
            else
                add_cpu(out, c, PERFMODEL_RES_NODE_CPU, (int)n, nm, dcpu);
            /* A further copy as measured: the mount's send and, here, its datanode. */
            if (client_measured && k > 0 && !cpu0)
                add_busy(out, PERFMODEL_RES_MACHINE_CPU, cm,
                         (double)len * cc->copy_per_byte_s / c->machine_cores[cm]);
            double mbps = w->op == PERFMODEL_READ ? node->disk_read_mbps
                                                  : node->disk_write_mbps;
            double disk = seconds_for(len, mbps, whatif->disk_inf);
            add_busy(out, PERFMODEL_RES_DISK, (int)n, disk);
            chain += dcpu + disk;
            if (nm != cm) { /* same machine: no network hop */
                int from = w->op == PERFMODEL_READ ? nm : cm;
                int to = w->op == PERFMODEL_READ ? cm : nm;
                add_busy(out, PERFMODEL_RES_LINK_OUT, from,
                         seconds_for(len, c->links[from].mbps, whatif->net_inf));
                add_busy(out, PERFMODEL_RES_LINK_IN, to,
                         seconds_for(len, c->links[to].mbps, whatif->net_inf));
                double lat = whatif->net_inf ? 0.0 :
                    c->links[from].latency_s + c->links[to].latency_s;
                chain += 2 * lat + seconds_for(len, c->links[to].mbps, whatif->net_inf);
                if (lat > max_latency)
                    max_latency = lat;
            }
        }
        if (w->serial)
            add_busy(out, PERFMODEL_RES_CHAIN, (int)client, chain);
    }
    /* Start-up: open (a meta round trip) and the first request's flight. */
    out->startup_s = c->meta_rtt_s + max_latency;
    /* Closing: release at meta; writes wait for every node's final sync,
     * which run in parallel, so the slowest one counts. */
    out->closing_s = c->meta_rtt_s;
    if (w->op == PERFMODEL_WRITE) {
        double worst = 0.0;
        for (size_t n = 0; n < c->n_nodes; n++)
            if (wrote[n] && !whatif->disk_inf && c->nodes[n].sync_seconds > worst)
                worst = c->nodes[n].sync_seconds;
        out->closing_s += worst;
    }
    add_busy(out, PERFMODEL_RES_META, 0, 2 * c->meta_rtt_s);
    /* Meta's round trips are the start-up and closing, so the
     * bottleneck is the busiest of the other resources. */
    out->bottleneck = 1;
    for (size_t i = 2; i < out->n_resources; i++)
        if (out->resources[i].busy_s > out->resources[out->bottleneck].busy_s)
            out->bottleneck = i;
    double slowest = out->resources[out->bottleneck].busy_s;
    out->total_s = out->startup_s + slowest + out->closing_s;
    out->mbps = out->total_s > 0.0 ? (double)w->bytes / out->total_s / 1e6 : 0.0;
    return 0;
}

void perfmodel_resource_name(const struct perfmodel_resource *res,
                             char *buf, size_t len)
{
    static const char *const names[] = {
        [PERFMODEL_RES_MOUNT_CPU] = "mount-cpu", [PERFMODEL_RES_LINK_OUT] = "link-out",
        [PERFMODEL_RES_LINK_IN] = "link-in", [PERFMODEL_RES_NODE_CPU] = "node-cpu",
        [PERFMODEL_RES_DISK] = "disk", [PERFMODEL_RES_META] = "meta",
        [PERFMODEL_RES_MACHINE_CPU] = "machine-cpu", [PERFMODEL_RES_CHAIN] = "chain",
    };
    snprintf(buf, len, "%s[%d]", names[res->kind], res->index);
}
