/*
 * @file planmodel.c
 * See planmodel.h. The requests of one phase are gathered into the
 * arrays perfmodel_workload takes (tile_nodes, tile_lens, tile_clients).
 */
#include "planmodel.h"

#include "plan_cost.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One phase's requests, as perfmodel_workload wants them. */
struct planmodel_phase {
    struct perfmodel_workload workload;
    uint32_t *nodes, *lens, *clients;
    size_t count, cap;
};

static int phase_add(struct planmodel_phase *phase, uint32_t node, uint32_t client, uint32_t len)
{
    if (phase->count == phase->cap) {
        size_t cap = phase->cap ? 2 * phase->cap : 256;
        uint32_t *nodes = realloc(phase->nodes, cap * sizeof(*nodes));
        if (nodes)
            phase->nodes = nodes;
        uint32_t *lens = realloc(phase->lens, cap * sizeof(*lens));
        if (lens)
            phase->lens = lens;
        uint32_t *clients = realloc(phase->clients, cap * sizeof(*clients));
        if (clients)
            phase->clients = clients;
        if (!nodes || !lens || !clients)
            return -1;
        phase->cap = cap;
    }
    phase->nodes[phase->count] = node;
    phase->lens[phase->count] = len;
    phase->clients[phase->count++] = client;
    phase->workload.bytes += len;
    return 0;
}

/* bytes from machine `client` to or from model node `node`, in requests of at most chunk bytes. */
static int phase_add_bytes(struct planmodel_phase *phase, uint32_t node, uint32_t client,
                           uint64_t bytes, uint64_t chunk)
{
    while (bytes > 0) {
        uint64_t len = bytes < chunk ? bytes : chunk;
        if (phase_add(phase, node, client, (uint32_t)len) != 0)
            return -1;
        bytes -= len;
    }
    return 0;
}

static void phase_release(struct planmodel_phase *phase)
{
    free(phase->nodes);
    free(phase->lens);
    free(phase->clients);
}

/* Predicts one phase into *out; false when it has no request or the model refuses it. */
static bool phase_predict(const struct planmodel *model, struct planmodel_phase *phase,
                          const int *clients_machine, size_t n_clients,
                          struct perfmodel_result *out)
{
    struct perfmodel_workload *w = &phase->workload;
    if (phase->count == 0)
        return false;
    w->tile_bytes = 1;
    w->copies = 1;
    w->n_clients = n_clients;
    memcpy(w->client_machine, clients_machine, n_clients * sizeof(*clients_machine));
    w->n_tiles = phase->count;
    w->tile_nodes = phase->nodes;
    w->tile_lens = phase->lens;
    w->tile_clients = phase->clients;
    return perfmodel_predict(model->cluster, w, NULL, out) == 0;
}

/* The model's index of work node n, -1 if it has none. */
static int model_node(const struct planmodel *model, const struct plan_work *work, uint32_t n)
{
    for (size_t k = 0; k < model->cluster->n_nodes; k++) {
        if (model->node_ids[k] == work->nodes[n].id)
            return (int)k;
    }
    return -1;
}

/* The model's index of the machine named `name`, -1 if it has none. */
static int model_machine(const struct planmodel *model, const char *name)
{
    for (size_t k = 0; k < model->cluster->n_machines; k++) {
        if (model->machines[k] && strcmp(model->machines[k], name) == 0)
            return (int)k;
    }
    return -1;
}

double planmodel_seconds(void *arg, const struct plan_work *work,
                         const struct plan_placement *placements)
{
    struct planmodel *model = arg;
    struct planmodel_phase reads = {.workload.op = PERFMODEL_READ};
    struct planmodel_phase writes = {.workload.op = PERFMODEL_WRITE};
    int clients_machine[PERFMODEL_MAX_CLIENTS];
    size_t n_clients = 0;
    int *client_of = calloc(work->machine_count ? work->machine_count : 1, sizeof(*client_of));
    int *node_of = calloc(work->node_count ? work->node_count : 1, sizeof(*node_of));
    double seconds = 0;
    bool failed = client_of == NULL || node_of == NULL;

    model->skipped = 0;
    model->have_reads = model->have_writes = 0;
    for (size_t m = 0; !failed && m < work->machine_count; m++) {
        int machine = model_machine(model, work->machines[m]);
        client_of[m] = -1;
        if (machine >= 0 && n_clients < PERFMODEL_MAX_CLIENTS) {
            clients_machine[n_clients] = machine;
            client_of[m] = (int)n_clients++;
        }
    }
    for (uint32_t n = 0; !failed && n < work->node_count; n++)
        node_of[n] = model_node(model, work, n);

    for (size_t t = 0; !failed && t < work->tile_count; t++) {
        const struct plan_work_tile *tile = &work->tiles[t];
        const struct plan_placement *placement = &placements[t];
        uint64_t chunk = tile->tile->tile_bytes ? tile->tile->tile_bytes : 1;
        for (size_t a = 0; !failed && a < tile->access_count; a++) {
            const struct plan_work_access *access = &tile->accesses[a];
            int client = client_of[access->machine];
            if (access->bytes_read) {
                int node = node_of[plan_cost_serving_reader(work, placement, access->machine)];
                if (client < 0 || node < 0)
                    model->skipped++;
                else
                    failed = phase_add_bytes(&reads, (uint32_t)node, (uint32_t)client,
                                             access->bytes_read, chunk) != 0;
            }
            for (uint32_t k = 0; access->bytes_written && !failed && k < placement->count; k++) {
                int node = node_of[placement->node[k]];
                if (client < 0 || node < 0)
                    model->skipped++;
                else
                    failed = phase_add_bytes(&writes, (uint32_t)node, (uint32_t)client,
                                             access->bytes_written, chunk) != 0;
            }
        }
    }
    if (!failed) {
        model->have_reads = phase_predict(model, &reads, clients_machine, n_clients, &model->reads);
        model->have_writes =
            phase_predict(model, &writes, clients_machine, n_clients, &model->writes);
        seconds = (model->have_reads ? model->reads.total_s : 0) +
                  (model->have_writes ? model->writes.total_s : 0);
    }
    phase_release(&reads);
    phase_release(&writes);
    free(client_of);
    free(node_of);
    return seconds;
}
