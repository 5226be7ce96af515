/*
 * @file nodedir.c
 * See nodedir.h. A node that timed out is taken as down for one timeout
 * period: calls to it fail at once (EIO) instead of queueing behind one
 * another, each waiting out the timeout; but one caller at a time PINGs
 * it first (at most every NODEDIR_PING_MS) and goes on if it answers, so
 * the mount recovers by itself as soon as the node returns.
 * A request that outlives the I/O timeout is waited for as long as its
 * node answers a PING from the process the request went to (it is busy,
 * not down), up to NODEDIR_PATIENCE_TIMEOUTS timeouts in all.
 * Before a timeout marks a node down, the node is PINGed: a node whose
 * process started after the request left was restarted (the old process
 * took the request with it), and the request is sent once more.
 *
 * Pools are never destroyed while the mount runs: a thread
 * may be using one while another replaces it, so replaced pools move to a
 * retired list freed at exit. Addresses change rarely; the list stays small.
 */
#include "nodedir.h"

#include "log.h"
#include "status.h"
#include "tile.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long a node that timed out has to answer a PING to count as alive. */
#define NODEDIR_PING_MS 500
/* A node that answers PINGs may take this many I/O timeouts for a request. */
#define NODEDIR_PATIENCE_TIMEOUTS 12
/* A liveness PING's answer stands for other waiting callers this long. */
#define NODEDIR_ALIVE_FRESH_MS 1000

struct node_entry {
    uint32_t id;
    struct rpc_pool *pool;
    /* After a timeout the node counts as down until then: calls fail at
     * once instead of each waiting out the timeout again. */
    int64_t down_until_ms;
    /* While down: one caller at a time PINGs it, at most every
     * NODEDIR_PING_MS, to find it back before the period ends. */
    bool probing;
    int64_t probed_ms;
    /* As meta last said: up, and room for new tiles. */
    bool takes_tiles;
    /* On this mount's machine (same machine name). */
    bool local;
    /* As meta last said: down, and its address is now another node's, up
     * (a new data directory there registered as a new node). Its tiles are
     * not there, so calls fail at once instead of reaching that node. */
    uint32_t replaced_by;
    bool replaced_logged;
    /* The last liveness check of a slow request's node (nodedir_still_working):
     * one caller PINGs at a time, the others wait for and share its answer. */
    bool alive_checking;
    bool alive;
    int64_t alive_checked_ms;
    int64_t alive_started_ms; /* when its process started, as that PING said */
    int64_t answered_ms;      /* when a call to it last got an answer */
};

struct nodedir {
    struct metaclient *meta;
    int io_timeout_ms;
    pthread_mutex_t lock; /* protects everything below */
    pthread_cond_t alive_checked; /* an entry's alive_checking went false */
    struct node_entry *entries;
    size_t count;
    struct rpc_pool **retired;
    size_t retired_count;
    int stale; /* refresh before the next lookup */
    int64_t refreshed_ms; /* when the list last came from meta */
};

struct nodedir *nodedir_new(struct metaclient *meta, int io_timeout_ms)
{
    struct nodedir *dir = calloc(1, sizeof(*dir));
    if (!dir)
        return NULL;
    dir->meta = meta;
    dir->io_timeout_ms = io_timeout_ms;
    dir->stale = 1;
    pthread_mutex_init(&dir->lock, NULL);
    pthread_cond_init(&dir->alive_checked, NULL);
    return dir;
}

void nodedir_destroy(struct nodedir **dirp)
{
    if (!dirp || !*dirp)
        return;
    struct nodedir *dir = *dirp;
    for (size_t i = 0; i < dir->count; i++)
        rpc_pool_destroy(&dir->entries[i].pool);
    for (size_t i = 0; i < dir->retired_count; i++)
        rpc_pool_destroy(&dir->retired[i]);
    free(dir->entries);
    free(dir->retired);
    pthread_mutex_destroy(&dir->lock);
    pthread_cond_destroy(&dir->alive_checked);
    free(dir);
    *dirp = NULL;
}

static struct node_entry *nodedir_find(struct nodedir *dir, uint32_t id)
{
    for (size_t i = 0; i < dir->count; i++) {
        if (dir->entries[i].id == id)
            return &dir->entries[i];
    }
    return NULL;
}

static void nodedir_retire(struct nodedir *dir, struct rpc_pool *pool)
{
    struct rpc_pool **grown =
        realloc(dir->retired, (dir->retired_count + 1) * sizeof(*dir->retired));
    if (!grown) {
        /* Leaking is safer than freeing a pool another thread may hold. */
        return;
    }
    dir->retired = grown;
    dir->retired[dir->retired_count++] = pool;
}

/*
 * Sets each entry's replaced_by from meta's list: a node down whose address
 * an up node of another id has. Called with dir->lock held.
 */
static void nodedir_mark_replaced(struct nodedir *dir, const struct meta_node *nodes, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        struct node_entry *entry = nodedir_find(dir, nodes[i].id);
        uint32_t replaced_by = 0;
        if (!entry)
            continue;
        for (size_t j = 0; j < count && nodes[i].state != TS_NODE_UP; j++) {
            if (nodes[j].id != nodes[i].id && nodes[j].state == TS_NODE_UP &&
                strcmp(nodes[j].address, nodes[i].address) == 0)
                replaced_by = nodes[j].id;
        }
        if (replaced_by != entry->replaced_by)
            entry->replaced_logged = false;
        entry->replaced_by = replaced_by;
    }
}

/* Reloads the node list from meta. Called with dir->lock held. */
static int nodedir_refresh(struct nodedir *dir)
{
    struct meta_node *nodes = NULL;
    size_t count = 0;
    int status = metaclient_node_list(dir->meta, &nodes, &count);
    if (status != TS_OK)
        return status;
    for (size_t i = 0; i < dir->count; i++)
        dir->entries[i].takes_tiles = false; /* unless meta still lists it */
    for (size_t i = 0; i < count; i++) {
        struct node_entry *entry = nodedir_find(dir, nodes[i].id);
        bool takes_tiles = nodes[i].state == TS_NODE_UP && nodes[i].free_bytes >= TILE_DEFAULT_BYTES;
        bool local = nodes[i].machine[0] != '\0' &&
                     strcmp(nodes[i].machine, metaclient_machine(dir->meta)) == 0;
        if (entry && strcmp(rpc_pool_endpoint(entry->pool), nodes[i].address) == 0) {
            entry->takes_tiles = takes_tiles;
            entry->local = local;
            continue;
        }
        struct rpc_pool *pool = rpc_pool_new(nodes[i].address, dir->io_timeout_ms);
        if (!pool)
            continue;
        if (entry) {
            log_info("datanode %u moved to %s", nodes[i].id, nodes[i].address);
            nodedir_retire(dir, entry->pool);
            entry->pool = pool;
            entry->takes_tiles = takes_tiles;
            entry->local = local;
            continue;
        }
        struct node_entry *grown = realloc(dir->entries, (dir->count + 1) * sizeof(*grown));
        if (!grown) {
            rpc_pool_destroy(&pool);
            continue;
        }
        dir->entries = grown;
        dir->entries[dir->count] = (struct node_entry){
            .id = nodes[i].id, .pool = pool, .takes_tiles = takes_tiles, .local = local};
        dir->count++;
    }
    nodedir_mark_replaced(dir, nodes, count);
    free(nodes);
    dir->stale = 0;
    dir->refreshed_ms = util_monotonic_ms();
    return TS_OK;
}

size_t nodedir_candidates(struct nodedir *dir, uint32_t *ids, size_t cap)
{
    size_t count = 0;
    int64_t now = util_monotonic_ms();
    pthread_mutex_lock(&dir->lock);
    /* Up/down and free space change: ask meta again every second or so. */
    if (dir->stale || now - dir->refreshed_ms > 1000)
        nodedir_refresh(dir);
    for (size_t i = 0; i < dir->count && count < cap; i++) {
        const struct node_entry *entry = &dir->entries[i];
        if (entry->takes_tiles && now >= entry->down_until_ms)
            ids[count++] = entry->id;
    }
    pthread_mutex_unlock(&dir->lock);
    return count;
}

/*
 * The entry of node id as a call to it needs it: the list loaded again
 * first if a timeout made it stale, and once more if id is not in it. NULL
 * if meta does not know id. Called with dir->lock held.
 */
static struct node_entry *nodedir_lookup(struct nodedir *dir, uint32_t id)
{
    if (dir->stale)
        nodedir_refresh(dir);
    struct node_entry *entry = nodedir_find(dir, id);
    if (!entry && nodedir_refresh(dir) == TS_OK)
        entry = nodedir_find(dir, id);
    return entry;
}

bool nodedir_is_local(struct nodedir *dir, uint32_t node)
{
    pthread_mutex_lock(&dir->lock);
    const struct node_entry *entry = nodedir_lookup(dir, node);
    bool local = entry && entry->local;
    pthread_mutex_unlock(&dir->lock);
    return local;
}

/*
 * The pool of node id, NULL if unknown; *down is set if it counts as down,
 * *replaced_by (if not NULL) to the node that has its address now (0: none),
 * *first_refusal when that is to be logged now (once per replacement).
 */
static struct rpc_pool *nodedir_pool_checked(struct nodedir *dir, uint32_t id, bool *down,
                                             uint32_t *replaced_by, bool *first_refusal)
{
    struct node_entry *entry;
    struct rpc_pool *pool = NULL;

    pthread_mutex_lock(&dir->lock);
    entry = nodedir_lookup(dir, id);
    if (entry) {
        pool = entry->pool;
        *down = util_monotonic_ms() < entry->down_until_ms;
        if (replaced_by) {
            *replaced_by = entry->replaced_by;
            *first_refusal = entry->replaced_by != 0 && !entry->replaced_logged;
            if (*first_refusal)
                entry->replaced_logged = true;
        }
    }
    pthread_mutex_unlock(&dir->lock);
    return pool;
}

static struct rpc_pool *nodedir_pool(struct nodedir *dir, uint32_t id, bool *down)
{
    return nodedir_pool_checked(dir, id, down, NULL, NULL);
}

void nodedir_suspect(struct nodedir *dir)
{
    pthread_mutex_lock(&dir->lock);
    dir->stale = 1;
    pthread_mutex_unlock(&dir->lock);
}

int nodedir_address(struct nodedir *dir, uint32_t node, struct in_addr *address)
{
    bool down = false;
    struct rpc_pool *pool = nodedir_pool(dir, node, &down);
    if (!pool)
        return -ENOENT;
    /* A pool's endpoint never changes: a new address is a new pool. */
    int rc = util_endpoint_ipv4(rpc_pool_endpoint(pool), address);
    if (rc == 0 && address->s_addr == htonl(INADDR_ANY))
        rc = -EINVAL;
    return rc;
}

void nodedir_endpoint(struct nodedir *dir, uint32_t node, char *out, size_t cap)
{
    bool down = false;
    struct rpc_pool *pool = nodedir_pool(dir, node, &down);
    if (cap > 0)
        snprintf(out, cap, "%s", pool ? rpc_pool_endpoint(pool) : "?");
}

static void nodedir_mark(struct nodedir *dir, uint32_t id, bool timed_out)
{
    pthread_mutex_lock(&dir->lock);
    struct node_entry *entry = nodedir_find(dir, id);
    if (entry) {
        entry->down_until_ms = timed_out ? util_monotonic_ms() + dir->io_timeout_ms : 0;
        if (!timed_out)
            entry->answered_ms = util_monotonic_ms();
    }
    if (timed_out)
        dir->stale = 1; /* it may come back at another address */
    pthread_mutex_unlock(&dir->lock);
}

/*
 * True if the node at pool's endpoint answers a PING within
 * NODEDIR_PING_MS, on a socket of its own (the pool's may all be busy);
 * *uptime_ms (if not NULL) is how long its process has run.
 */
static bool nodedir_answers_ping(const struct rpc_pool *pool, int io_timeout_ms,
                                 int64_t *uptime_ms)
{
    struct rpc_client *client = rpc_client_new(rpc_pool_endpoint(pool));
    struct rpc_reply reply;
    struct ts_ping_rep ping;
    int timeout_ms = io_timeout_ms < NODEDIR_PING_MS ? io_timeout_ms : NODEDIR_PING_MS;
    if (!client)
        return false;
    int status = rpc_client_call(client, TS_OP_PING, NULL, 0, NULL, 0, timeout_ms, &reply);
    if (status == TS_OK && ts_ping_rep_decode(&ping, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    if (status == TS_OK && uptime_ms)
        *uptime_ms = ping.uptime_ms > INT64_MAX ? INT64_MAX : (int64_t)ping.uptime_ms;
    rpc_reply_release(&reply);
    rpc_client_destroy(&client);
    return status == TS_OK;
}

/* rpc_patience's arg for a call to one node. */
struct node_patience {
    struct nodedir *dir;
    uint32_t node;
    struct rpc_pool *pool;
    bool silent; /* set when the node answered no liveness PING */
};

/*
 * PINGs the node of `patience` on one of its pool's sockets (most often
 * connected already: no handshake over a busy link) and records the answer
 * in its entry for the callers waiting on it. A node that answered another
 * call within the I/O timeout has half of one for the PING (it is busy: the
 * PING may wait behind its queue); one silent for as long has
 * NODEDIR_PING_MS, so that a dead node is given up on about as soon as
 * without patience. Called with dir->lock held and the entry's
 * alive_checking taken; returns with the lock held.
 */
static void nodedir_check_alive(struct nodedir *dir, const struct node_patience *patience,
                                int64_t answered_ms)
{
    bool busy = util_monotonic_ms() - answered_ms < dir->io_timeout_ms;
    int ping_ms = busy && dir->io_timeout_ms / 2 > NODEDIR_PING_MS ? dir->io_timeout_ms / 2
                                                                  : NODEDIR_PING_MS;
    struct rpc_reply reply;
    struct ts_ping_rep ping = {0};

    pthread_mutex_unlock(&dir->lock);
    int status = rpc_pool_call_within(patience->pool, TS_OP_PING, NULL, 0, ping_ms, &reply);
    if (status == TS_OK && ts_ping_rep_decode(&ping, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    rpc_reply_release(&reply);
    int64_t now_ms = util_monotonic_ms();
    pthread_mutex_lock(&dir->lock);
    struct node_entry *entry = nodedir_find(dir, patience->node); /* may have moved (refresh) */
    entry->alive_checking = false;
    entry->alive = status == TS_OK;
    entry->alive_checked_ms = now_ms;
    entry->alive_started_ms = 0;
    if (status == TS_OK && ping.uptime_ms < (uint64_t)now_ms)
        entry->alive_started_ms = now_ms - (int64_t)ping.uptime_ms;
    pthread_cond_broadcast(&dir->alive_checked);
}

/*
 * rpc_patience's still_working for a request to a node sent at sent_ms:
 * true while the node answers a PING from the process the request went
 * to, or, its PING unanswered, answers other calls within the I/O
 * timeout. Such a node is busy, not down (a queue of writes from several
 * mounts ahead of the request, a saturated link or CPU). False if it is
 * silent, or restarted: then the request was lost, and nodedir_call_owned
 * sends it again.
 */
static bool nodedir_still_working(void *arg, int64_t sent_ms)
{
    struct node_patience *patience = arg;
    struct nodedir *dir = patience->dir;
    struct node_entry *entry;

    pthread_mutex_lock(&dir->lock);
    for (;;) {
        entry = nodedir_find(dir, patience->node);
        if (!entry) {
            pthread_mutex_unlock(&dir->lock);
            return false;
        }
        if (entry->alive_checking) {
            pthread_cond_wait(&dir->alive_checked, &dir->lock);
            continue;
        }
        if (entry->alive_checked_ms > 0 &&
            util_monotonic_ms() - entry->alive_checked_ms < NODEDIR_ALIVE_FRESH_MS)
            break;
        entry->alive_checking = true;
        nodedir_check_alive(dir, patience, entry->answered_ms);
    }
    /* A PING unanswered over a saturated link proves little while other
     * calls to the node are answered: busy. A PING answered proves it alive,
     * and which process it runs. */
    bool answered_lately = util_monotonic_ms() - entry->answered_ms < dir->io_timeout_ms;
    bool working = entry->alive ? entry->alive_started_ms <= sent_ms : answered_lately;
    patience->silent = !entry->alive && !answered_lately;
    pthread_mutex_unlock(&dir->lock);
    return working;
}

/*
 * For a caller that found node down: true if the node answers a PING now
 * (and is up again), false at once if another caller is probing it or did
 * within NODEDIR_PING_MS.
 */
static bool nodedir_back_up(struct nodedir *dir, uint32_t id, const struct rpc_pool *pool)
{
    pthread_mutex_lock(&dir->lock);
    struct node_entry *entry = nodedir_find(dir, id);
    bool probe = entry && !entry->probing &&
                 util_monotonic_ms() - entry->probed_ms >= NODEDIR_PING_MS;
    if (probe)
        entry->probing = true;
    pthread_mutex_unlock(&dir->lock);
    if (!probe)
        return false;

    bool alive = nodedir_answers_ping(pool, dir->io_timeout_ms, NULL);
    pthread_mutex_lock(&dir->lock);
    entry = nodedir_find(dir, id); /* entries may have moved (refresh) */
    if (entry) {
        entry->probing = false;
        entry->probed_ms = util_monotonic_ms();
        if (alive)
            entry->down_until_ms = 0;
    }
    pthread_mutex_unlock(&dir->lock);
    if (alive)
        log_info("datanode %u at %s answers again", id, rpc_pool_endpoint(pool));
    return alive;
}

int nodedir_call(struct nodedir *dir, uint32_t node, uint16_t op, const void *payload,
                 size_t payload_len, const void *data, size_t data_len, struct rpc_reply *reply)
{
    return nodedir_call_owned(dir, node, op, payload, payload_len, data, data_len, NULL, reply);
}

int nodedir_call_owned(struct nodedir *dir, uint32_t node, uint16_t op, const void *payload,
                       size_t payload_len, const void *data, size_t data_len,
                       const struct rpc_data_owner *owner, struct rpc_reply *reply)
{
    bool down = false;
    uint32_t replaced_by = 0;
    bool first_refusal = false;
    struct rpc_pool *pool = nodedir_pool_checked(dir, node, &down, &replaced_by, &first_refusal);
    bool owned = owner && data;
    bool resendable = !owned || owner->hold_fn;
    int status;

    memset(reply, 0, sizeof(*reply));
    if (pool && replaced_by != 0) {
        if (first_refusal)
            log_error("datanode %u is down and its address %s is datanode %u's now (another data "
                      "directory): requests for datanode %u fail with EIO until it comes back",
                      node, rpc_pool_endpoint(pool), replaced_by, node);
        if (owned)
            owner->free_fn((void *)data, owner->hint);
        return TS_ERR_IO;
    }
    if (pool && down)
        down = !nodedir_back_up(dir, node, pool);
    if (!pool || down) {
        if (!pool)
            log_error("%s: datanode %u is not known to meta", ts_op_name(op), node);
        if (owned)
            owner->free_fn((void *)data, owner->hint);
        return pool ? TS_ERR_TIMEDOUT : TS_ERR_IO;
    }
    int64_t sent_ms = util_monotonic_ms();
    int64_t uptime_ms = 0;
    struct node_patience node_patience = {dir, node, pool, false};
    struct rpc_patience patience = {nodedir_still_working, &node_patience,
                                    NODEDIR_PATIENCE_TIMEOUTS * dir->io_timeout_ms};
    status = rpc_pool_call_patient(pool, op, payload, payload_len, data, data_len, owner,
                                   &patience, reply);
    /* (A node silent to the patience's PING is not asked again.) */
    if (status == TS_ERR_TIMEDOUT && resendable && !node_patience.silent &&
        nodedir_answers_ping(pool, dir->io_timeout_ms, &uptime_ms) &&
        uptime_ms < util_monotonic_ms() - sent_ms) {
        /* A process that started after the request left: the request was
         * lost with the one it replaced, and sending it again is safe (a
         * node merely slow may still carry it out: that one is not asked
         * twice). */
        log_info("%s: datanode %u at %s restarted and lost a request: sent again",
                 ts_op_name(op), node, rpc_pool_endpoint(pool));
        rpc_reply_release(reply);
        if (owned)
            owner->hold_fn(owner->hint);
        status = rpc_pool_call_patient(pool, op, payload, payload_len, data, data_len, owner,
                                       &patience, reply);
        if (status != TS_ERR_TIMEDOUT)
            return status;
    }
    if (status == TS_ERR_TIMEDOUT)
        log_warn("%s: datanode %u at %s gave no answer in %lld ms (silent for --io-timeout-ms %d, "
                 "or busy past %d of them): taken as down for %d ms",
                 ts_op_name(op), node, rpc_pool_endpoint(pool),
                 (long long)(util_monotonic_ms() - sent_ms), dir->io_timeout_ms,
                 NODEDIR_PATIENCE_TIMEOUTS, dir->io_timeout_ms);
    nodedir_mark(dir, node, status == TS_ERR_TIMEDOUT);
    return status;
}
