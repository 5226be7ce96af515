/*
 * @file relocnet.c
 * See relocnet.h. Error texts name the peer (the datanode's id and
 * address) when the peer gave none, so a failed step says where to look.
 */
#include "relocnet.h"

#include "nodeclient.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert((int)PLAN_COPY == (int)TS_MOVE_COPY && (int)PLAN_MOVE == (int)TS_MOVE_MOVE &&
                   (int)PLAN_DROP == (int)TS_MOVE_DROP,
               "plan steps travel as journal kinds");

struct relocnet {
    char *meta_endpoint;
    struct toolmeta_node *nodes;
    size_t node_count;
    int timeout_ms;
};

/* One worker's clients: meta, and one per datanode (NULL until used). */
struct relocnet_worker {
    const struct relocnet *net;
    struct rpc_client *meta;
    struct rpc_client **node_clients; /* indexed like net->nodes */
};

struct relocnet *relocnet_new(const char *meta_endpoint, const struct toolmeta_node *nodes,
                              size_t count, int timeout_ms)
{
    struct relocnet *net = calloc(1, sizeof(*net));

    if (!net)
        return NULL;
    net->meta_endpoint = strdup(meta_endpoint);
    net->nodes = count ? malloc(count * sizeof(*nodes)) : NULL;
    if (!net->meta_endpoint || (count && !net->nodes)) {
        relocnet_destroy(&net);
        return NULL;
    }
    if (count)
        memcpy(net->nodes, nodes, count * sizeof(*nodes));
    net->node_count = count;
    net->timeout_ms = timeout_ms;
    return net;
}

void relocnet_destroy(struct relocnet **netp)
{
    struct relocnet *net = netp ? *netp : NULL;
    if (!net)
        return;
    free(net->meta_endpoint);
    free(net->nodes);
    free(net);
    *netp = NULL;
}

static void relocnet_text(char *out, size_t cap, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* snprintf where cutting a long text short is fine. */
static void relocnet_text(char *out, size_t cap, const char *format, ...)
{
    va_list args;
    if (!out || cap == 0)
        return;
    va_start(args, format);
    (void)vsnprintf(out, cap, format, args);
    va_end(args);
}

static void *relocnet_worker_open(void *ctx, unsigned index)
{
    const struct relocnet *net = ctx;
    struct relocnet_worker *worker = calloc(1, sizeof(*worker));

    (void)index;
    if (!worker)
        goto fail;
    worker->net = net;
    worker->meta = rpc_client_new(net->meta_endpoint);
    worker->node_clients =
        calloc(net->node_count ? net->node_count : 1, sizeof(struct rpc_client *));
    if (!worker->meta || !worker->node_clients)
        goto fail;
    return worker;
fail:
    if (worker) {
        rpc_client_destroy(&worker->meta);
        free(worker->node_clients);
        free(worker);
    }
    errno = ENOMEM;
    return NULL;
}

static void relocnet_worker_close(void *handle)
{
    struct relocnet_worker *worker = handle;
    if (!worker)
        return;
    for (size_t i = 0; i < worker->net->node_count; i++)
        rpc_client_destroy(&worker->node_clients[i]);
    rpc_client_destroy(&worker->meta);
    free(worker->node_clients);
    free(worker);
}

/* The datanode with this id, or NULL with why written. */
static const struct toolmeta_node *relocnet_node(const struct relocnet *net, uint32_t id,
                                                   size_t *index, char *why, size_t cap)
{
    for (size_t i = 0; i < net->node_count; i++) {
        if (net->nodes[i].id == id) {
            *index = i;
            return &net->nodes[i];
        }
    }
    relocnet_text(why, cap, "datanode %" PRIu32 " is not in meta's node list", id);
    return NULL;
}

/* The worker's client to datanode id; NULL with why written. */
static struct rpc_client *relocnet_node_client(struct relocnet_worker *worker, uint32_t id,
                                               char *why, size_t cap)
{
    size_t index;
    const struct toolmeta_node *node = relocnet_node(worker->net, id, &index, why, cap);

    if (!node)
        return NULL;
    if (!worker->node_clients[index]) {
        worker->node_clients[index] = rpc_client_new(node->address);
        if (!worker->node_clients[index])
            relocnet_text(why, cap, "datanode %" PRIu32 " has an unusable address '%s'", id,
                          node->address);
    }
    return worker->node_clients[index];
}

/* Adds where the datanode is to a failure that came without a text. */
static void relocnet_blame(const struct relocnet *net, uint32_t id, int status, char *why,
                           size_t cap)
{
    size_t index;
    char ignored[8];
    const struct toolmeta_node *node;

    if (status == TS_OK || (why && why[0]))
        return;
    node = relocnet_node(net, id, &index, ignored, sizeof(ignored));
    if (node)
        relocnet_text(why, cap, "datanode %" PRIu32 " at %s%s", id, node->address,
                      node->state == TS_NODE_UP ? "" : " (meta lists it as down)");
}

static int relocnet_move_begin(void *handle, const struct relocate_step *step,
                               uint64_t *new_version, char *why, size_t cap)
{
    struct relocnet_worker *worker = handle;
    struct ts_move_rec move = {
        .ino = step->ino,
        .tile = step->tile,
        .kind = (uint32_t)step->kind,
        .from_node = step->from_node,
        .to_node = step->to_node,
        .version = step->version,
    };
    return toolmeta_move_begin(worker->meta, worker->net->timeout_ms, &move, new_version, why,
                                 cap);
}

static int relocnet_move_commit(void *handle, uint64_t ino, uint64_t tile, char *why, size_t cap)
{
    struct relocnet_worker *worker = handle;
    return toolmeta_move_end(worker->meta, worker->net->timeout_ms, ino, tile, 0, why, cap);
}

static int relocnet_move_abort(void *handle, uint64_t ino, uint64_t tile, char *why, size_t cap)
{
    struct relocnet_worker *worker = handle;
    return toolmeta_move_end(worker->meta, worker->net->timeout_ms, ino, tile, 1, why, cap);
}

static int relocnet_tile_pull(void *handle, uint32_t target, uint32_t source,
                              const struct relocate_step *step, uint64_t new_version,
                              struct relocate_pull *pull, char *why, size_t cap)
{
    struct relocnet_worker *worker = handle;
    struct rpc_client *client = relocnet_node_client(worker, target, why, cap);
    struct ts_tile_pull_rep answer;
    const struct toolmeta_node *from;
    size_t index;
    int status;

    if (!client)
        return TS_ERR_INVAL;
    from = relocnet_node(worker->net, source, &index, why, cap);
    if (!from)
        return TS_ERR_INVAL;
    status = nodeclient_tile_pull(client, worker->net->timeout_ms, step->ino, step->tile,
                                  step->version, new_version, from->address, &answer, why, cap);
    relocnet_blame(worker->net, target, status, why, cap);
    if (status != TS_OK)
        return status;
    pull->done = answer.state == TS_PULL_DONE;
    pull->bytes = answer.bytes;
    pull->checksum = answer.checksum;
    return TS_OK;
}

static int relocnet_tile_fence(void *handle, uint32_t node, uint64_t ino, uint64_t tile,
                               uint64_t version, uint32_t action, uint32_t lease_ms,
                               uint64_t new_version, uint64_t *bytes, uint32_t *checksum,
                               char *why, size_t cap)
{
    struct relocnet_worker *worker = handle;
    struct rpc_client *client = relocnet_node_client(worker, node, why, cap);
    int status;

    if (!client)
        return TS_ERR_INVAL;
    status = nodeclient_tile_fence(client, worker->net->timeout_ms, ino, tile, version, action,
                                   lease_ms, new_version, bytes, checksum, why, cap);
    relocnet_blame(worker->net, node, status, why, cap);
    return status;
}

void relocnet_transport(struct relocnet *net, struct relocate_transport *transport)
{
    memset(transport, 0, sizeof(*transport));
    transport->ctx = net;
    transport->worker_open = relocnet_worker_open;
    transport->worker_close = relocnet_worker_close;
    transport->move_begin = relocnet_move_begin;
    transport->move_commit = relocnet_move_commit;
    transport->move_abort = relocnet_move_abort;
    transport->tile_pull = relocnet_tile_pull;
    transport->tile_fence = relocnet_tile_fence;
}
