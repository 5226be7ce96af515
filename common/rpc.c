/*
 * @file rpc.c
 * See rpc.h. Frame layout on the wire, after ZeroMQ's own framing:
 *   client -> server (DEALER): [frame 0][frame 1?]
 *   server sees (ROUTER):      [identity][frame 0][frame 1?]
 * Request ids come from one process-wide counter, so a reply can always be
 * matched to its request.
 */
#include "rpc.h"

#include "curve.h"
#include "log.h"
#include "roles.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *rpc_zmq_context;
static pthread_once_t rpc_context_once = PTHREAD_ONCE_INIT;
static atomic_uint_fast64_t rpc_next_request_id = 1;

static void rpc_context_create(void)
{
    rpc_zmq_context = zmq_ctx_new();
    /* A few I/O threads keep 1 MiB tile transfers to several nodes moving. */
    if (rpc_zmq_context)
        zmq_ctx_set(rpc_zmq_context, ZMQ_IO_THREADS, 2);
}

void *rpc_context(void)
{
    pthread_once(&rpc_context_once, rpc_context_create);
    return rpc_zmq_context;
}

static int64_t monotonic_us(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

static int64_t monotonic_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

size_t rpc_frame_build(uint8_t *out, size_t cap, uint16_t op, uint64_t request_id,
                       uint32_t flags, int status, const void *payload, size_t payload_len,
                       size_t data_len)
{
    struct ts_header header = {
        .magic = TS_PROTO_MAGIC,
        .version = TS_PROTO_VERSION,
        .type = op,
        .request_id = request_id,
        .flags = flags,
        .status = status,
        .payload_bytes = (uint32_t)payload_len,
        .data_bytes = (uint32_t)data_len,
    };
    size_t total = TS_HEADER_BYTES + payload_len;
    if (total > cap || total > TS_MAX_FRAME_BYTES || data_len > TS_MAX_DATA_BYTES)
        return 0;
    ts_header_encode(&header, out);
    if (payload_len > 0)
        memcpy(out + TS_HEADER_BYTES, payload, payload_len);
    return total;
}

/* ---- replies ---------------------------------------------------------- */

void rpc_reply_release(struct rpc_reply *reply)
{
    if (reply->frames_held >= 1)
        zmq_msg_close(&reply->frame);
    if (reply->frames_held >= 2)
        zmq_msg_close(&reply->data_frame);
    memset(reply, 0, sizeof(*reply));
}

void rpc_reply_error_text(const struct rpc_reply *reply, char *out, size_t cap)
{
    struct ts_error error;
    if (cap == 0)
        return;
    out[0] = '\0';
    if (reply->frames_held == 0 || reply->header.status == TS_OK)
        return;
    if (ts_error_decode(&error, reply->payload, reply->payload_len) == 0)
        snprintf(out, cap, "%.*s", (int)error.text.len, error.text.ptr);
}

/* ---- client ----------------------------------------------------------- */

struct rpc_client {
    void *socket;
    char endpoint[256];
    uint8_t name[RPC_MAX_NAME]; /* routing id prefix (rpc_pool_set_name); name_len 0: none */
    size_t name_len;
};

/* Serial numbers that make each named socket's routing id unique. */
static atomic_uint_fast32_t rpc_next_socket_serial = 1;

static void *rpc_socket_open(const char *endpoint, const uint8_t *name, size_t name_len)
{
    void *socket = zmq_socket(rpc_context(), ZMQ_DEALER);
    int zero = 0;
    int hwm = 64;
    if (!socket)
        return NULL;
    /* Never keep a process alive for unsent requests; bound the queues. */
    zmq_setsockopt(socket, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(socket, ZMQ_SNDHWM, &hwm, sizeof(hwm));
    zmq_setsockopt(socket, ZMQ_RCVHWM, &hwm, sizeof(hwm));
    if (name_len > 0) {
        /* name + a serial: a socket reopened after a timeout (Lazy Pirate)
         * never reuses the id of one the server may still know. */
        uint8_t id[RPC_MAX_NAME + 4];
        uint32_t serial = (uint32_t)atomic_fetch_add(&rpc_next_socket_serial, 1);
        memcpy(id, name, name_len);
        memcpy(id + name_len, &serial, sizeof(serial));
        zmq_setsockopt(socket, ZMQ_ROUTING_ID, id, name_len + sizeof(serial));
    }
    if (curve_apply_client(socket) != 0) {
        zmq_close(socket);
        return NULL;
    }
    if (zmq_connect(socket, endpoint) != 0) {
        log_error("cannot connect to %s: %s", endpoint, zmq_strerror(zmq_errno()));
        zmq_close(socket);
        return NULL;
    }
    return socket;
}

/* A client whose sockets are named `name` (name_len 0: unnamed). */
static struct rpc_client *rpc_client_named(const char *endpoint, const uint8_t *name,
                                           size_t name_len)
{
    struct rpc_client *client = calloc(1, sizeof(*client));
    if (!client)
        return NULL;
    snprintf(client->endpoint, sizeof(client->endpoint), "%s", endpoint);
    if (name_len > 0)
        memcpy(client->name, name, name_len);
    client->name_len = name_len;
    client->socket = rpc_socket_open(endpoint, name, name_len);
    if (!client->socket) {
        free(client);
        return NULL;
    }
    return client;
}

struct rpc_client *rpc_client_new(const char *endpoint)
{
    return rpc_client_named(endpoint, NULL, 0);
}

void rpc_client_destroy(struct rpc_client **clientp)
{
    if (!clientp || !*clientp)
        return;
    if ((*clientp)->socket)
        zmq_close((*clientp)->socket);
    free(*clientp);
    *clientp = NULL;
}

/*
 * Receives one multipart reply into `reply` and checks its frames and
 * header; returns TS_OK (the reply's own status is in reply->header), a
 * failure status, or TS_ERR_TIMEDOUT when nothing was waiting.
 */
static int rpc_receive_frames_of_reply(void *socket, struct rpc_reply *reply)
{
    int more;
    size_t more_len = sizeof(more);
    int status;

    zmq_msg_init(&reply->frame);
    reply->frames_held = 1;
    if (zmq_msg_recv(&reply->frame, socket, ZMQ_DONTWAIT) < 0)
        return TS_ERR_TIMEDOUT;
    zmq_getsockopt(socket, ZMQ_RCVMORE, &more, &more_len);
    if (more) {
        zmq_msg_init(&reply->data_frame);
        reply->frames_held = 2;
        if (zmq_msg_recv(&reply->data_frame, socket, ZMQ_DONTWAIT) < 0)
            return TS_ERR_BADMSG;
        zmq_getsockopt(socket, ZMQ_RCVMORE, &more, &more_len);
        if (more) { /* a well-formed reply has at most two frames */
            while (more) {
                zmq_msg_t extra;
                zmq_msg_init(&extra);
                zmq_msg_recv(&extra, socket, ZMQ_DONTWAIT);
                zmq_msg_close(&extra);
                zmq_getsockopt(socket, ZMQ_RCVMORE, &more, &more_len);
            }
            return TS_ERR_BADMSG;
        }
    }
    status = ts_header_decode(&reply->header, zmq_msg_data(&reply->frame),
                              zmq_msg_size(&reply->frame));
    if (status != TS_OK)
        return status;
    if (!(reply->header.flags & TS_FLAG_REPLY))
        return TS_ERR_BADMSG;
    reply->payload = (const uint8_t *)zmq_msg_data(&reply->frame) + TS_HEADER_BYTES;
    reply->payload_len = reply->header.payload_bytes;
    if (reply->frames_held == 2) {
        if (zmq_msg_size(&reply->data_frame) != reply->header.data_bytes)
            return TS_ERR_BADMSG;
        reply->data = zmq_msg_data(&reply->data_frame);
        reply->data_len = zmq_msg_size(&reply->data_frame);
    } else if (reply->header.data_bytes != 0) {
        return TS_ERR_BADMSG;
    }
    return TS_OK;
}

/* Receives the reply to (request_id, op); -1 for a late reply to an earlier call. */
static int rpc_receive_reply(void *socket, uint64_t request_id, uint16_t op,
                             struct rpc_reply *reply)
{
    int status = rpc_receive_frames_of_reply(socket, reply);
    if (status != TS_OK)
        return status;
    if (reply->header.request_id != request_id)
        return -1; /* a late reply to an earlier call: skip it */
    if (reply->header.type != op)
        return TS_ERR_BADMSG;
    return reply->header.status;
}

/* Sends frame 1: copied, or handed to ZeroMQ when data_free is set. */
static int rpc_send_data(void *socket, const void *data, size_t data_len,
                         const struct rpc_data_owner *owner)
{
    zmq_msg_t message;
    if (!owner)
        return zmq_send(socket, data, data_len, ZMQ_DONTWAIT) < 0 ? -1 : 0;
    if (zmq_msg_init_data(&message, (void *)data, data_len, owner->free_fn, owner->hint) != 0) {
        owner->free_fn((void *)data, owner->hint);
        return -1;
    }
    if (zmq_msg_send(&message, socket, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&message); /* calls free_fn */
        return -1;
    }
    return 0;
}

int rpc_client_call(struct rpc_client *client, uint16_t op, const void *payload,
                    size_t payload_len, const void *data, size_t data_len, int timeout_ms,
                    struct rpc_reply *reply)
{
    return rpc_client_call_owned(client, op, payload, payload_len, data, data_len, NULL,
                                 timeout_ms, reply);
}

/*
 * The reply's deadline passed at now_ms: true (with *deadline moved on by
 * one more timeout, never past the patience's limit) if the caller's
 * patience says the server is still working and that limit is not reached.
 */
static bool rpc_wait_longer(const struct rpc_patience *patience, int64_t sent_ms, int64_t now_ms,
                            int timeout_ms, int64_t *deadline)
{
    if (!patience || !patience->still_working)
        return false;
    int64_t limit = sent_ms + patience->max_ms;
    if (now_ms >= limit || !patience->still_working(patience->arg, sent_ms))
        return false;
    now_ms = monotonic_ms(); /* the check may itself have taken a while */
    *deadline = now_ms + timeout_ms < limit ? now_ms + timeout_ms : limit;
    return *deadline > now_ms;
}

int rpc_client_call_owned(struct rpc_client *client, uint16_t op, const void *payload,
                          size_t payload_len, const void *data, size_t data_len,
                          const struct rpc_data_owner *owner, int timeout_ms,
                          struct rpc_reply *reply)
{
    return rpc_client_call_patient(client, op, payload, payload_len, data, data_len, owner,
                                   timeout_ms, NULL, reply);
}

int rpc_client_call_patient(struct rpc_client *client, uint16_t op, const void *payload,
                            size_t payload_len, const void *data, size_t data_len,
                            const struct rpc_data_owner *owner, int timeout_ms,
                            const struct rpc_patience *patience, struct rpc_reply *reply)
{
    uint64_t request_id = atomic_fetch_add(&rpc_next_request_id, 1);
    size_t frame_cap = TS_HEADER_BYTES + payload_len;
    uint8_t stack_frame[512];
    uint8_t *frame = frame_cap <= sizeof(stack_frame) ? stack_frame : malloc(frame_cap);
    int64_t sent_ms = monotonic_ms();
    int64_t deadline = sent_ms + timeout_ms;
    int status = TS_ERR_TIMEDOUT;

    memset(reply, 0, sizeof(*reply));
    if (!frame) {
        if (owner && data)
            owner->free_fn((void *)data, owner->hint);
        return TS_ERR_NOMEM;
    }
    if (!client->socket)
        client->socket = rpc_socket_open(client->endpoint, client->name, client->name_len);
    if (!client->socket) {
        if (owner && data)
            owner->free_fn((void *)data, owner->hint);
        status = TS_ERR_IO;
        goto out;
    }
    size_t frame_len = rpc_frame_build(frame, frame_cap, op, request_id, 0, TS_OK, payload,
                                       payload_len, data ? data_len : 0);
    if (frame_len == 0) {
        if (owner && data)
            owner->free_fn((void *)data, owner->hint);
        status = TS_ERR_TOOBIG;
        goto out;
    }
    /* Sends are queued by ZeroMQ even before the peer is connected. */
    if (zmq_send(client->socket, frame, frame_len, (data ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT) < 0) {
        if (owner && data)
            owner->free_fn((void *)data, owner->hint);
        status = TS_ERR_TIMEDOUT;
        goto reset;
    }
    if (data && rpc_send_data(client->socket, data, data_len, owner) != 0) {
        status = TS_ERR_TIMEDOUT;
        goto reset;
    }
    for (;;) {
        zmq_pollitem_t item = {client->socket, 0, ZMQ_POLLIN, 0};
        int64_t now_ms = monotonic_ms();
        if (deadline <= now_ms &&
            !rpc_wait_longer(patience, sent_ms, now_ms, timeout_ms, &deadline))
            break;
        int64_t left = deadline - monotonic_ms();
        /* Never a negative timeout: zmq_poll would wait forever. */
        int ready = zmq_poll(&item, 1, left > 0 ? (long)left : 0);
        if (ready < 0 && zmq_errno() == EINTR)
            continue;
        if (ready < 0)
            break;
        if (ready == 0)
            continue; /* the deadline: the top of the loop decides */
        status = rpc_receive_reply(client->socket, request_id, op, reply);
        if (status != -1)
            goto out;
        rpc_reply_release(reply);
        status = TS_ERR_TIMEDOUT;
    }
reset:
    /* Lazy Pirate: a socket with a request in flight is never reused. */
    zmq_close(client->socket);
    client->socket = NULL;
out:
    if (frame != stack_frame)
        free(frame);
    return status;
}

/*
 * Moves a received reply into `to` (which holds nothing): ZeroMQ keeps a
 * small message inside its zmq_msg_t, so the frames move with
 * zmq_msg_move and the pointers into them are taken again.
 */
static void rpc_reply_move(struct rpc_reply *to, struct rpc_reply *from)
{
    memset(to, 0, sizeof(*to));
    to->header = from->header;
    zmq_msg_init(&to->frame);
    zmq_msg_move(&to->frame, &from->frame);
    to->frames_held = 1;
    to->payload = (const uint8_t *)zmq_msg_data(&to->frame) + TS_HEADER_BYTES;
    to->payload_len = from->payload_len;
    if (from->frames_held == 2) {
        zmq_msg_init(&to->data_frame);
        zmq_msg_move(&to->data_frame, &from->data_frame);
        to->frames_held = 2;
        to->data = zmq_msg_data(&to->data_frame);
        to->data_len = zmq_msg_size(&to->data_frame);
    }
    rpc_reply_release(from);
}

int rpc_client_call_many(struct rpc_client *client, const struct rpc_call *calls, size_t count,
                         int timeout_ms, struct rpc_reply *replies, int *statuses)
{
    uint8_t stack_frame[512];
    uint8_t *frame = stack_frame;
    size_t frame_cap = sizeof(stack_frame);
    uint64_t first_id;
    size_t received = 0;
    int64_t deadline = monotonic_ms() + timeout_ms;
    int status = TS_OK;

    if (count == 0 || count > RPC_MAX_PIPELINE)
        return TS_ERR_INVAL;
    for (size_t i = 0; i < count; i++) {
        memset(&replies[i], 0, sizeof(replies[i]));
        statuses[i] = TS_ERR_TIMEDOUT;
    }
    for (size_t i = 0; i < count; i++) {
        if (calls[i].payload_len > TS_MAX_FRAME_BYTES - TS_HEADER_BYTES)
            return TS_ERR_TOOBIG;
        if (TS_HEADER_BYTES + calls[i].payload_len > frame_cap)
            frame_cap = TS_HEADER_BYTES + calls[i].payload_len;
    }
    if (frame_cap > sizeof(stack_frame))
        frame = malloc(frame_cap);
    if (!frame)
        return TS_ERR_NOMEM;
    if (!client->socket)
        client->socket = rpc_socket_open(client->endpoint, client->name, client->name_len);
    if (!client->socket) {
        status = TS_ERR_IO;
        goto out;
    }
    first_id = atomic_fetch_add(&rpc_next_request_id, count);
    for (size_t i = 0; i < count; i++) {
        size_t frame_len = rpc_frame_build(frame, frame_cap, calls[i].op, first_id + i, 0, TS_OK,
                                           calls[i].payload, calls[i].payload_len, 0);
        if (zmq_send(client->socket, frame, frame_len, ZMQ_DONTWAIT) < 0) {
            status = TS_ERR_TIMEDOUT;
            goto reset;
        }
    }
    while (received < count) {
        int64_t left = deadline - monotonic_ms();
        zmq_pollitem_t item = {client->socket, 0, ZMQ_POLLIN, 0};
        struct rpc_reply reply;
        if (left <= 0)
            break;
        int ready = zmq_poll(&item, 1, (long)left);
        if (ready < 0 && zmq_errno() == EINTR)
            continue;
        if (ready <= 0)
            break;
        memset(&reply, 0, sizeof(reply));
        int got = rpc_receive_frames_of_reply(client->socket, &reply);
        uint64_t index = reply.header.request_id - first_id;
        if (got == TS_ERR_TIMEDOUT) {
            rpc_reply_release(&reply);
            continue; /* woken without a whole message */
        }
        if (got != TS_OK) {
            rpc_reply_release(&reply);
            status = got;
            goto reset;
        }
        if (reply.header.request_id < first_id || index >= count ||
            replies[index].frames_held != 0) {
            rpc_reply_release(&reply); /* a late reply to an earlier call */
            continue;
        }
        statuses[index] =
            reply.header.type == calls[index].op ? reply.header.status : TS_ERR_BADMSG;
        rpc_reply_move(&replies[index], &reply);
        received++;
    }
    if (received == count)
        goto out;
    status = TS_ERR_TIMEDOUT;
reset:
    /* Lazy Pirate: a socket with a request in flight is never reused. */
    zmq_close(client->socket);
    client->socket = NULL;
out:
    if (frame != stack_frame)
        free(frame);
    return status;
}

/* ---- pool ------------------------------------------------------------- */

struct rpc_pool {
    pthread_mutex_t lock; /* protects idle, idle_count */
    struct rpc_client **idle;
    size_t idle_count;
    size_t idle_cap;
    int timeout_ms;
    char endpoint[256];
    uint8_t name[RPC_MAX_NAME];
    size_t name_len;
};

struct rpc_pool *rpc_pool_new(const char *endpoint, int timeout_ms)
{
    struct rpc_pool *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return NULL;
    pthread_mutex_init(&pool->lock, NULL);
    pool->timeout_ms = timeout_ms;
    snprintf(pool->endpoint, sizeof(pool->endpoint), "%s", endpoint);
    return pool;
}

void rpc_pool_destroy(struct rpc_pool **poolp)
{
    if (!poolp || !*poolp)
        return;
    struct rpc_pool *pool = *poolp;
    for (size_t i = 0; i < pool->idle_count; i++)
        rpc_client_destroy(&pool->idle[i]);
    free(pool->idle);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
    *poolp = NULL;
}

const char *rpc_pool_endpoint(const struct rpc_pool *pool) { return pool->endpoint; }

int rpc_pool_set_name(struct rpc_pool *pool, const void *name, size_t name_len)
{
    if (name_len == 0 || name_len > RPC_MAX_NAME || ((const uint8_t *)name)[0] == 0)
        return TS_ERR_INVAL;
    pthread_mutex_lock(&pool->lock);
    memcpy(pool->name, name, name_len);
    pool->name_len = name_len;
    for (size_t i = 0; i < pool->idle_count; i++) /* reopened with the name on next use */
        rpc_client_destroy(&pool->idle[i]);
    pool->idle_count = 0;
    pthread_mutex_unlock(&pool->lock);
    return TS_OK;
}

int rpc_pool_call(struct rpc_pool *pool, uint16_t op, const void *payload, size_t payload_len,
                  const void *data, size_t data_len, struct rpc_reply *reply)
{
    return rpc_pool_call_owned(pool, op, payload, payload_len, data, data_len, NULL, reply);
}

/* An idle client of the pool, or a new one; NULL if none can be made. */
static struct rpc_client *rpc_pool_take(struct rpc_pool *pool)
{
    struct rpc_client *client = NULL;
    pthread_mutex_lock(&pool->lock);
    if (pool->idle_count > 0)
        client = pool->idle[--pool->idle_count];
    pthread_mutex_unlock(&pool->lock);
    if (!client)
        client = rpc_client_named(pool->endpoint, pool->name, pool->name_len);
    return client;
}

/* Makes client idle again (or destroys it if the pool cannot hold it). */
static void rpc_pool_give_back(struct rpc_pool *pool, struct rpc_client *client)
{
    pthread_mutex_lock(&pool->lock);
    if (pool->idle_count == pool->idle_cap) {
        size_t new_cap = pool->idle_cap ? pool->idle_cap * 2 : 8;
        struct rpc_client **grown = realloc(pool->idle, new_cap * sizeof(*grown));
        if (grown) {
            pool->idle = grown;
            pool->idle_cap = new_cap;
        }
    }
    if (pool->idle_count < pool->idle_cap) {
        pool->idle[pool->idle_count++] = client;
        client = NULL;
    }
    pthread_mutex_unlock(&pool->lock);
    rpc_client_destroy(&client);
}

/* rpc_pool_call_patient() with a timeout of the caller's. */
static int rpc_pool_call_owned_within(struct rpc_pool *pool, uint16_t op, const void *payload,
                                      size_t payload_len, const void *data, size_t data_len,
                                      const struct rpc_data_owner *owner, int timeout_ms,
                                      const struct rpc_patience *patience,
                                      struct rpc_reply *reply)
{
    struct rpc_client *client = rpc_pool_take(pool);
    int status;
    if (!client) {
        memset(reply, 0, sizeof(*reply));
        if (owner && data)
            owner->free_fn((void *)data, owner->hint);
        return TS_ERR_IO;
    }
    status = rpc_client_call_patient(client, op, payload, payload_len, data, data_len, owner,
                                     timeout_ms, patience, reply);
    rpc_pool_give_back(pool, client);
    return status;
}

int rpc_pool_call_owned(struct rpc_pool *pool, uint16_t op, const void *payload,
                        size_t payload_len, const void *data, size_t data_len,
                        const struct rpc_data_owner *owner, struct rpc_reply *reply)
{
    return rpc_pool_call_owned_within(pool, op, payload, payload_len, data, data_len, owner,
                                      pool->timeout_ms, NULL, reply);
}

int rpc_pool_call_patient(struct rpc_pool *pool, uint16_t op, const void *payload,
                          size_t payload_len, const void *data, size_t data_len,
                          const struct rpc_data_owner *owner, const struct rpc_patience *patience,
                          struct rpc_reply *reply)
{
    return rpc_pool_call_owned_within(pool, op, payload, payload_len, data, data_len, owner,
                                      pool->timeout_ms, patience, reply);
}

int rpc_pool_call_within(struct rpc_pool *pool, uint16_t op, const void *payload,
                         size_t payload_len, int timeout_ms, struct rpc_reply *reply)
{
    return rpc_pool_call_owned_within(pool, op, payload, payload_len, NULL, 0, NULL, timeout_ms,
                                      NULL, reply);
}

int rpc_pool_call_many_within(struct rpc_pool *pool, const struct rpc_call *calls, size_t count,
                              int timeout_ms, struct rpc_reply *replies, int *statuses)
{
    struct rpc_client *client;
    int status;
    if (count == 0 || count > RPC_MAX_PIPELINE)
        return TS_ERR_INVAL;
    client = rpc_pool_take(pool);
    if (!client) {
        for (size_t i = 0; i < count; i++) {
            memset(&replies[i], 0, sizeof(replies[i]));
            statuses[i] = TS_ERR_IO;
        }
        return TS_ERR_IO;
    }
    status = rpc_client_call_many(client, calls, count, timeout_ms, replies, statuses);
    rpc_pool_give_back(pool, client);
    return status;
}

int rpc_pool_call_many(struct rpc_pool *pool, const struct rpc_call *calls, size_t count,
                       struct rpc_reply *replies, int *statuses)
{
    return rpc_pool_call_many_within(pool, calls, count, pool->timeout_ms, replies, statuses);
}

/* ---- server ----------------------------------------------------------- */

/*
 * Small replies to one peer's requests that came together are sent
 * together once those are handled (at most this many, the first held at
 * most about RPC_SERVER_REPLY_HOLD_US): a client's pipelined requests
 * (rpc_client_call_many), which it waits for all at once, then get their
 * replies in one write, and the client wakes once for all of them. A
 * request from another peer, or a reply with bulk data (a tile), sends
 * what is held first, so no peer waits for another's requests.
 */
#define RPC_SERVER_REPLY_BATCH 8
#define RPC_SERVER_REPLY_HOLD_US 200

struct rpc_pending_reply {
    zmq_msg_t identity;
    zmq_msg_t frame;
    zmq_msg_t data;
    bool with_data;
};

/* A reply held back until due_ns (rpc_response.send_at_ns). */
struct rpc_held_reply {
    struct rpc_pending_reply reply;
    int64_t due_ns;
};

struct rpc_server {
    void *socket;
    const rpc_handler_fn *handlers;
    void *ctx;
    uint8_t *reply_frame; /* header + payload of the reply being built */
    struct rpc_pending_reply pending[RPC_SERVER_REPLY_BATCH];
    int pending_count;
    int64_t pending_since_us; /* when pending[0] was queued */
    bool (*room)(void *arg);  /* may another message be taken? NULL: always */
    void *room_arg;
    struct rpc_held_reply *held; /* in the order their requests came */
    size_t held_count;
    size_t held_cap;
    /* Per opcode; added to by the serving thread, read by the metrics
     * thread: relaxed atomics, each figure on its own. */
    struct rpc_op_counters counters[TS_OP_MAX];
};

/* Counts one handled request of op into the server's counters. */
static void rpc_server_count(struct rpc_server *server, uint16_t op, int status, uint64_t bytes_in,
                             const struct rpc_response *response, int64_t elapsed_ns)
{
    struct rpc_op_counters *counters = &server->counters[op];
    __atomic_fetch_add(&counters->requests, 1, __ATOMIC_RELAXED);
    if (status != TS_OK)
        __atomic_fetch_add(&counters->failures, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&counters->bytes_in, bytes_in, __ATOMIC_RELAXED);
    __atomic_fetch_add(&counters->bytes_out, response->payload_len + response->data_len,
                       __ATOMIC_RELAXED);
    __atomic_fetch_add(&counters->latency_ns, elapsed_ns > 0 ? (uint64_t)elapsed_ns : 0,
                       __ATOMIC_RELAXED);
}

void rpc_server_op_counters(const struct rpc_server *server, uint16_t op,
                            struct rpc_op_counters *out)
{
    memset(out, 0, sizeof(*out));
    if (op >= TS_OP_MAX)
        return;
    const struct rpc_op_counters *counters = &server->counters[op];
    out->requests = __atomic_load_n(&counters->requests, __ATOMIC_RELAXED);
    out->failures = __atomic_load_n(&counters->failures, __ATOMIC_RELAXED);
    out->bytes_in = __atomic_load_n(&counters->bytes_in, __ATOMIC_RELAXED);
    out->bytes_out = __atomic_load_n(&counters->bytes_out, __ATOMIC_RELAXED);
    out->latency_ns = __atomic_load_n(&counters->latency_ns, __ATOMIC_RELAXED);
}

struct rpc_server *rpc_server_new(const char *endpoint, const rpc_handler_fn *handlers,
                                  void *ctx)
{
    struct rpc_server *server = calloc(1, sizeof(*server));
    int zero = 0;
    /* Per peer socket. Requests: a low mark keeps a datanode's memory
     * bounded, ZeroMQ stops reading a peer whose queue is full. Replies: a
     * ROUTER silently drops a reply that finds its peer's queue full, so
     * that queue holds a whole pipeline (a client socket has at most
     * RPC_MAX_PIPELINE requests in flight) and then some. */
    int hwm = 8;
    int reply_hwm = 2 * RPC_MAX_PIPELINE;
    int64_t max_message = TS_MAX_FRAME_BYTES + TS_MAX_DATA_BYTES;

    if (!server)
        return NULL;
    server->handlers = handlers;
    server->ctx = ctx;
    server->reply_frame = malloc(TS_MAX_FRAME_BYTES);
    server->socket = zmq_socket(rpc_context(), ZMQ_ROUTER);
    if (!server->reply_frame || !server->socket)
        goto fail;
    zmq_setsockopt(server->socket, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(server->socket, ZMQ_SNDHWM, &reply_hwm, sizeof(reply_hwm));
    zmq_setsockopt(server->socket, ZMQ_RCVHWM, &hwm, sizeof(hwm));
    /* A peer sending more than any valid message is disconnected by ZeroMQ. */
    zmq_setsockopt(server->socket, ZMQ_MAXMSGSIZE, &max_message, sizeof(max_message));
    if (curve_apply_server(server->socket, endpoint) != 0)
        goto fail;
    if (zmq_bind(server->socket, endpoint) != 0) {
        log_error("cannot listen on %s: %s (is another daemon using it? pick another --listen)",
                  endpoint, zmq_strerror(zmq_errno()));
        goto fail;
    }
    return server;
fail:
    rpc_server_destroy(&server);
    return NULL;
}

/* Closes a reply's messages unsent. */
static void rpc_pending_close(struct rpc_pending_reply *reply)
{
    zmq_msg_close(&reply->identity);
    zmq_msg_close(&reply->frame);
    if (reply->with_data)
        zmq_msg_close(&reply->data);
}

void rpc_server_destroy(struct rpc_server **serverp)
{
    if (!serverp || !*serverp)
        return;
    for (size_t i = 0; i < (*serverp)->held_count; i++)
        rpc_pending_close(&(*serverp)->held[i].reply);
    free((*serverp)->held);
    if ((*serverp)->socket)
        zmq_close((*serverp)->socket);
    free((*serverp)->reply_frame);
    free(*serverp);
    *serverp = NULL;
}

void *rpc_server_socket(struct rpc_server *server) { return server->socket; }

int rpc_receive_multipart(void *socket, zmq_msg_t *frames, int max)
{
    int count = 0;
    int more = 1;
    size_t more_len = sizeof(more);
    while (more) {
        zmq_msg_t extra;
        zmq_msg_t *target = count < max ? &frames[count] : &extra;
        zmq_msg_init(target);
        if (zmq_msg_recv(target, socket, 0) < 0) {
            zmq_msg_close(target);
            return count;
        }
        zmq_getsockopt(socket, ZMQ_RCVMORE, &more, &more_len);
        if (target == &extra)
            zmq_msg_close(&extra);
        count++;
    }
    return count;
}

/* Sends one built reply and closes its messages. */
static void rpc_send_pending(struct rpc_server *server, struct rpc_pending_reply *reply)
{
    zmq_msg_send(&reply->identity, server->socket, ZMQ_SNDMORE);
    if (zmq_msg_send(&reply->frame, server->socket, reply->with_data ? ZMQ_SNDMORE : 0) < 0)
        log_warn("reply not sent: %s", zmq_strerror(zmq_errno()));
    if (reply->with_data && zmq_msg_send(&reply->data, server->socket, 0) < 0)
        zmq_msg_close(&reply->data);
    /* Sent messages are empty now; closing them is always allowed. */
    rpc_pending_close(reply);
}

/* Sends the replies built so far, in order. */
static void rpc_flush_replies(struct rpc_server *server)
{
    for (int i = 0; i < server->pending_count; i++)
        rpc_send_pending(server, &server->pending[i]);
    server->pending_count = 0;
}

/* Whether two identity frames name the same peer. */
static bool rpc_same_peer(zmq_msg_t *a, zmq_msg_t *b)
{
    size_t len = zmq_msg_size(a);
    return len == zmq_msg_size(b) && memcmp(zmq_msg_data(a), zmq_msg_data(b), len) == 0;
}

/*
 * When a reply to identity's peer due at due_ns may leave: due_ns, or
 * later when a reply held for that peer is due later (its order kept);
 * INT64_MIN when none is held and due_ns has passed (send it now).
 */
static int64_t rpc_held_due(const struct rpc_server *server, zmq_msg_t *identity, int64_t due_ns)
{
    bool behind = false;
    for (size_t i = 0; i < server->held_count; i++) {
        /* zmq_msg_size() and zmq_msg_data() take no const: they only read here. */
        if (rpc_same_peer((zmq_msg_t *)&server->held[i].reply.identity, identity)) {
            behind = true;
            if (server->held[i].due_ns > due_ns)
                due_ns = server->held[i].due_ns;
        }
    }
    return behind || due_ns > util_monotonic_ns() ? due_ns : INT64_MIN;
}

/* Holds reply back until due_ns (moved in). false: no memory (the caller sends it now). */
static bool rpc_hold(struct rpc_server *server, struct rpc_pending_reply *reply, int64_t due_ns)
{
    if (server->held_count == server->held_cap) {
        size_t cap = server->held_cap ? 2 * server->held_cap : 16;
        struct rpc_held_reply *grown = realloc(server->held, cap * sizeof(*grown));
        if (!grown)
            return false;
        server->held = grown;
        server->held_cap = cap;
    }
    struct rpc_held_reply *held = &server->held[server->held_count++];
    held->due_ns = due_ns;
    held->reply.with_data = reply->with_data;
    zmq_msg_init(&held->reply.identity);
    zmq_msg_move(&held->reply.identity, &reply->identity);
    zmq_msg_init(&held->reply.frame);
    zmq_msg_move(&held->reply.frame, &reply->frame);
    if (reply->with_data) {
        zmq_msg_init(&held->reply.data);
        zmq_msg_move(&held->reply.data, &reply->data);
    }
    rpc_pending_close(reply);
    return true;
}

int rpc_server_send_due(struct rpc_server *server, int64_t now_ns)
{
    size_t kept = 0;
    int sent = 0;
    /* One peer's held replies are due in the order they came (rpc_held_due),
     * so sending every due one in list order keeps each peer's order. */
    for (size_t i = 0; i < server->held_count; i++) {
        if (server->held[i].due_ns <= now_ns) {
            rpc_send_pending(server, &server->held[i].reply);
            sent++;
        } else {
            if (kept != i)
                server->held[kept] = server->held[i];
            kept++;
        }
    }
    server->held_count = kept;
    return sent;
}

int64_t rpc_server_next_due_ns(const struct rpc_server *server)
{
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < server->held_count; i++) {
        if (server->held[i].due_ns < next)
            next = server->held[i].due_ns;
    }
    return next;
}

/* Builds the reply to `request` and queues it; the identity frame moves into the queue. */
static void rpc_send_reply(struct rpc_server *server, zmq_msg_t *identity,
                           const struct ts_header *request, int status,
                           struct rpc_response *response)
{
    size_t payload_len = response->payload_len;
    bool with_data = status == TS_OK && response->data != NULL;

    if (status != TS_OK) {
        struct ts_error error = {.text = ts_str_of(response->error_text[0]
                                                       ? response->error_text
                                                       : status_text(status))};
        int len = ts_error_encode(&error, server->reply_frame + TS_HEADER_BYTES,
                                  TS_MAX_FRAME_BYTES - TS_HEADER_BYTES);
        payload_len = len > 0 ? (size_t)len : 0;
    }
    struct ts_header header = {
        .magic = TS_PROTO_MAGIC,
        .version = TS_PROTO_VERSION,
        .type = request->type,
        .request_id = request->request_id,
        .flags = TS_FLAG_REPLY,
        .status = status,
        .payload_bytes = (uint32_t)payload_len,
        .data_bytes = with_data ? (uint32_t)response->data_len : 0,
    };
    ts_header_encode(&header, server->reply_frame);

    if (server->pending_count == RPC_SERVER_REPLY_BATCH)
        rpc_flush_replies(server);
    struct rpc_pending_reply *reply = &server->pending[server->pending_count];
    zmq_msg_init(&reply->identity);
    zmq_msg_move(&reply->identity, identity);
    if (zmq_msg_init_size(&reply->frame, TS_HEADER_BYTES + payload_len) != 0) {
        log_warn("reply to %s not sent: out of memory", ts_op_name(request->type));
        zmq_msg_close(&reply->identity);
        if (response->data_free)
            response->data_free(response->data, NULL);
        return;
    }
    memcpy(zmq_msg_data(&reply->frame), server->reply_frame, TS_HEADER_BYTES + payload_len);
    reply->with_data = with_data;
    if (with_data) {
        if (response->data_free) {
            zmq_msg_init_data(&reply->data, response->data, response->data_len, response->data_free,
                              NULL);
            response->data_free = NULL; /* ZeroMQ owns it now */
        } else {
            zmq_msg_init_size(&reply->data, response->data_len);
            memcpy(zmq_msg_data(&reply->data), response->data, response->data_len);
        }
    }
    int64_t due_ns = server->held_count > 0 || response->send_at_ns > 0
                         ? rpc_held_due(server, &reply->identity, response->send_at_ns)
                         : INT64_MIN;
    if (due_ns != INT64_MIN) {
        /* Not before due_ns: what was batched goes first (it came first);
         * reply's slot is past the batch, so the flush leaves it alone. */
        rpc_flush_replies(server);
        if (!rpc_hold(server, reply, due_ns))
            rpc_send_pending(server, reply);
    } else {
        if (server->pending_count++ == 0)
            server->pending_since_us = monotonic_us();
        if (with_data || monotonic_us() - server->pending_since_us >= RPC_SERVER_REPLY_HOLD_US)
            rpc_flush_replies(server);
    }
    if (response->data_free)
        response->data_free(response->data, NULL);
}

/*
 * A request the peer's role may not send (roles.h): TS_ERR_PERM, with the
 * op, the key and the peer's address in the log and the reply's text.
 */
static int rpc_refuse_role(const struct ts_header *header, const struct rpc_request *request,
                           zmq_msg_t *frame, struct rpc_response *response)
{
    char allowed[64];
    const char *address = zmq_msg_gets(frame, "Peer-Address");
    roles_describe(roles_allowed(header->type), allowed, sizeof(allowed));
    snprintf(response->error_text, sizeof(response->error_text),
             "key %s may not send %s (only %s keys may)", request->key_user,
             ts_op_name(header->type), allowed);
    log_warn("refused %s from key %s at %s: only %s keys may send it", ts_op_name(header->type),
             request->key_user, address && *address ? address : "a local peer", allowed);
    return TS_ERR_PERM;
}

/* Handles one message; frames[0] is the peer identity. */
static void rpc_server_dispatch(struct rpc_server *server, zmq_msg_t *frames, int count)
{
    struct ts_header header;
    struct rpc_response response = {
        .payload = server->reply_frame + TS_HEADER_BYTES,
        .payload_cap = TS_MAX_FRAME_BYTES - TS_HEADER_BYTES,
    };
    struct rpc_request request;
    int status;

    if (count < 2)
        return; /* no frame 0: nothing to answer */
    status = ts_header_decode(&header, zmq_msg_data(&frames[1]), zmq_msg_size(&frames[1]));
    if (status == TS_OK && (header.flags & TS_FLAG_REPLY))
        status = TS_ERR_BADMSG;
    if (status == TS_OK && count > 3)
        status = TS_ERR_BADMSG;
    if (status == TS_OK && (count == 3) != (header.data_bytes > 0))
        status = TS_ERR_BADMSG;
    if (status == TS_OK && count == 3 && zmq_msg_size(&frames[2]) != header.data_bytes)
        status = TS_ERR_BADMSG;
    if (status == TS_OK && (header.type >= TS_OP_MAX || !server->handlers[header.type])) {
        status = TS_ERR_PROTO;
        snprintf(response.error_text, sizeof(response.error_text),
                 "unknown message type %u for this daemon", header.type);
    }
    if (status == TS_OK) {
        request.peer = zmq_msg_data(&frames[0]);
        request.peer_len = zmq_msg_size(&frames[0]);
        /* The ZAP handler's answer for this connection (curve.c); none without CURVE. */
        request.key_user = zmq_msg_gets(&frames[1], "User-Id");
        if (!request.key_user)
            request.key_user = "";
        request.peer_address = zmq_msg_gets(&frames[1], "Peer-Address");
        request.header = header;
        request.payload = (const uint8_t *)zmq_msg_data(&frames[1]) + TS_HEADER_BYTES;
        request.payload_len = header.payload_bytes;
        request.data = count == 3 ? zmq_msg_data(&frames[2]) : NULL;
        request.data_len = count == 3 ? zmq_msg_size(&frames[2]) : 0;
        if (!curve_user_is_current(request.key_user)) {
            /* Revoked since its handshake: the connection stays, its requests do not. */
            status = TS_ERR_PERM;
            snprintf(response.error_text, sizeof(response.error_text),
                     "key %s is no longer known to this cluster", request.key_user);
            log_warn("refused %s from %s: key revoked since it connected", ts_op_name(header.type),
                     request.key_user);
        } else if (!roles_permit(header.type, request.key_user)) {
            status = rpc_refuse_role(&header, &request, &frames[1], &response);
        } else {
            int64_t started_ns = util_monotonic_ns();
            status = server->handlers[header.type](server->ctx, &request, &response);
            rpc_server_count(server, header.type, status, request.payload_len + request.data_len,
                             &response, util_monotonic_ns() - started_ns);
        }
    } else {
        log_warn("malformed message (%s), answering with an error", status_text(status));
    }
    if (status == TS_OK && response.payload_len > response.payload_cap)
        status = TS_ERR_INTERNAL;
    rpc_send_reply(server, &frames[0], &header, status, &response);
}

/* Messages handled per call, so the caller's timers still run under load. */
#define RPC_SERVER_BATCH 256

void rpc_server_set_gate(struct rpc_server *server, bool (*room)(void *arg), void *arg)
{
    server->room = room;
    server->room_arg = arg;
}

int rpc_server_handle_pending(struct rpc_server *server)
{
    int handled = 0;
    while (handled < RPC_SERVER_BATCH) {
        if (server->room && !server->room(server->room_arg))
            break;
        zmq_msg_t frames[4];
        int events = 0;
        size_t events_len = sizeof(events);
        zmq_getsockopt(server->socket, ZMQ_EVENTS, &events, &events_len);
        if (!(events & ZMQ_POLLIN))
            break;
        int count = rpc_receive_multipart(server->socket, frames, 4);
        if (server->pending_count > 0 && count > 0 &&
            !rpc_same_peer(&server->pending[server->pending_count - 1].identity, &frames[0]))
            rpc_flush_replies(server);
        rpc_server_dispatch(server, frames, count);
        for (int i = 0; i < count && i < 4; i++)
            zmq_msg_close(&frames[i]);
        handled++;
    }
    rpc_flush_replies(server);
    return handled;
}
