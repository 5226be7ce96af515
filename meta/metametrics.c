/*
 * @file metametrics.c
 * See metametrics.h. The cluster figures are rendered into a string under
 * a mutex that only ever guards a pointer swap and a copy, so neither
 * thread waits on the other's work.
 */
#include "metametrics.h"

#include "nodes.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct metametrics {
    struct rpc_server *server;
    pthread_mutex_t lock; /* guards rendered */
    char *rendered;       /* the last update's text, NULL before the first */
    size_t rendered_len;
};

int metametrics_new(struct rpc_server *server, struct metametrics **out)
{
    struct metametrics *metrics = calloc(1, sizeof(*metrics));
    if (!metrics)
        return -ENOMEM;
    metrics->server = server;
    pthread_mutex_init(&metrics->lock, NULL);
    *out = metrics;
    return 0;
}

/* What one update reads from the store. */
struct metametrics_read {
    struct nodes_record *nodes;
    size_t node_count;
    uint64_t inodes;
    uint64_t tile_entries;
};

static int metametrics_read_store(struct store_txn *txn, void *arg)
{
    struct metametrics_read *read = arg;
    int err = nodes_list(txn, &read->nodes, &read->node_count);
    if (err == 0)
        err = store_entries(txn, STORE_INODES, &read->inodes);
    if (err == 0)
        err = store_entries(txn, STORE_TILES, &read->tile_entries);
    return err;
}

/* Label text for a node; its address is escaped as Prometheus wants (\\ and "). */
static void metametrics_node_labels(const struct nodes_record *node, char *out, size_t cap)
{
    char address[2 * NODES_MAX_TEXT + 1];
    size_t at = 0;
    for (const char *c = node->address; *c && at + 2 < sizeof(address); c++) {
        if (*c == '\\' || *c == '"')
            address[at++] = '\\';
        if (*c == '\n')
            continue;
        address[at++] = *c;
    }
    address[at] = '\0';
    snprintf(out, cap, "node=\"%u\",address=\"%s\"", (unsigned)node->id, address);
}

/* Writes the node table and health figures into text. */
static void metametrics_render_cluster(struct service *service, struct metrics_text *text)
{
    struct metametrics_read read = {0};
    int64_t now_ms = util_monotonic_ms();
    char labels[2 * NODES_MAX_TEXT + 64];
    size_t up = 0;

    if (store_read(service->store, metametrics_read_store, &read) == 0) {
        for (size_t i = 0; i < read.node_count; i++)
            up += nodes_live_is_up(service->live, read.nodes[i].id, now_ms);
        metrics_text_family(text, "tessera_meta_datanodes", "gauge",
                            "Registered datanodes, by state.");
        metrics_text_sample(text, "tessera_meta_datanodes", "state=\"up\"", (double)up);
        metrics_text_sample(text, "tessera_meta_datanodes", "state=\"down\"",
                            (double)(read.node_count - up));
        const struct {
            const char *name, *help;
            size_t field;
        } per_node[] = {
            {"tessera_meta_datanode_up", "1 while the datanode heartbeats.", 0},
            {"tessera_meta_datanode_tiles", "Tiles the datanode reported.",
             offsetof(struct nodes_record, tiles)},
            {"tessera_meta_datanode_used_bytes", "Bytes of tiles the datanode reported.",
             offsetof(struct nodes_record, used_bytes)},
            {"tessera_meta_datanode_free_bytes", "Free bytes the datanode reported.",
             offsetof(struct nodes_record, free_bytes)},
            {"tessera_meta_datanode_capacity_bytes", "The datanode's capacity.",
             offsetof(struct nodes_record, capacity)},
        };
        for (size_t f = 0; f < sizeof(per_node) / sizeof(per_node[0]); f++) {
            metrics_text_family(text, per_node[f].name, "gauge", per_node[f].help);
            for (size_t i = 0; i < read.node_count; i++) {
                double value;
                if (per_node[f].field == 0)
                    value = nodes_live_is_up(service->live, read.nodes[i].id, now_ms);
                else
                    value = (double)*(const uint64_t *)((const char *)&read.nodes[i] +
                                                        per_node[f].field);
                metametrics_node_labels(&read.nodes[i], labels, sizeof(labels));
                metrics_text_sample(text, per_node[f].name, labels, value);
            }
        }
        metrics_text_one(text, "tessera_meta_inodes", "gauge", "Files, directories and links.",
                         (double)read.inodes);
        metrics_text_one(text, "tessera_meta_tiles", "gauge", "Tiles in the tile map.",
                         (double)read.tile_entries);
    }
    free(read.nodes);

    if (service->repair_pass.have_last) {
        const struct repairpass_counts *last = &service->repair_pass.last;
        metrics_text_one(text, "tessera_meta_health_tiles", "gauge",
                         "Tiles the last health pass looked at.", (double)last->tiles);
        metrics_text_one(text, "tessera_meta_health_degraded_tiles", "gauge",
                         "Tiles with fewer good replicas than their copies (last health pass).",
                         (double)last->degraded_tiles);
        metrics_text_one(text, "tessera_meta_health_degraded_bytes", "gauge", "Their bytes.",
                         (double)last->degraded_bytes);
        metrics_text_one(text, "tessera_meta_health_unavailable_tiles", "gauge",
                         "Tiles with no good replica on a live datanode (last health pass).",
                         (double)last->unavailable_tiles);
    }
    if (service->repair_progress) {
        struct repairpass_progress progress;
        service->repair_progress(service->repair_progress_ctx, &progress);
        metrics_text_one(text, "tessera_meta_repair_steps_done_total", "counter",
                         "Replica copies the repairer made.", (double)progress.steps_done);
        metrics_text_one(text, "tessera_meta_repair_bytes_done_total", "counter", "Their bytes.",
                         (double)progress.bytes_done);
        metrics_text_one(text, "tessera_meta_repair_steps_failed_total", "counter",
                         "Replica copies that failed.", (double)progress.steps_failed);
        metrics_text_one(text, "tessera_meta_repair_steps_waiting", "gauge",
                         "Replica copies handed out, not made yet.",
                         (double)progress.steps_waiting);
        metrics_text_one(text, "tessera_meta_repair_bytes_waiting", "gauge", "Their bytes.",
                         (double)progress.bytes_waiting);
        metrics_text_one(text, "tessera_meta_repair_bytes_per_second", "gauge",
                         "The repair's rate over the last few seconds.",
                         (double)progress.bytes_per_sec);
    }
}

/* metrics_render's collect for the cluster figures: the service is the context. */
static void metametrics_cluster_collect(void *service, struct metrics_text *text)
{
    metametrics_render_cluster(service, text);
}

void metametrics_update(struct metametrics *metrics, struct service *service)
{
    char *rendered = NULL;
    size_t len = 0;
    if (metrics_render(metametrics_cluster_collect, service, &rendered, &len) != 0)
        return; /* out of memory: the last rendering stays */
    pthread_mutex_lock(&metrics->lock);
    char *old = metrics->rendered;
    metrics->rendered = rendered;
    metrics->rendered_len = len;
    pthread_mutex_unlock(&metrics->lock);
    free(old);
}

void metametrics_collect(void *arg, struct metrics_text *text)
{
    struct metametrics *metrics = arg;
    const struct {
        const char *name, *type, *help;
    } families[] = {
        {"tessera_meta_requests_total", "counter", "Requests served, by operation."},
        {"tessera_meta_request_failures_total", "counter",
         "Requests answered with an error, by operation."},
        {"tessera_meta_request_seconds_total", "counter",
         "Time spent serving requests, by operation; divided by tessera_meta_requests_total, "
         "the mean latency."},
        {"tessera_meta_request_bytes_total", "counter", "Request bytes received, by operation."},
        {"tessera_meta_reply_bytes_total", "counter", "Reply bytes sent, by operation."},
    };
    char labels[64];

    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
        metrics_text_family(text, families[f].name, families[f].type, families[f].help);
        for (uint16_t op = 0; op < TS_OP_MAX; op++) {
            struct rpc_op_counters counters;
            rpc_server_op_counters(metrics->server, op, &counters);
            if (counters.requests == 0)
                continue; /* only what this meta has been asked */
            double values[] = {(double)counters.requests, (double)counters.failures,
                               (double)counters.latency_ns / 1e9, (double)counters.bytes_in,
                               (double)counters.bytes_out};
            snprintf(labels, sizeof(labels), "op=\"%s\"", ts_op_name(op));
            metrics_text_sample(text, families[f].name, labels, values[f]);
        }
    }
    pthread_mutex_lock(&metrics->lock);
    if (metrics->rendered)
        metrics_text_append(text, metrics->rendered, metrics->rendered_len);
    pthread_mutex_unlock(&metrics->lock);
}

void metametrics_destroy(struct metametrics **metricsp)
{
    struct metametrics *metrics = metricsp ? *metricsp : NULL;
    if (!metrics)
        return;
    pthread_mutex_destroy(&metrics->lock);
    free(metrics->rendered);
    free(metrics);
    *metricsp = NULL;
}
