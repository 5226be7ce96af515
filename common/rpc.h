/*
 * @file rpc.h
 * Request/reply over ZeroMQ with deadlines, for every Tessera process.
 *
 * Client side: an rpc_client is one DEALER socket to one endpoint (not
 * thread-safe: one thread at a time). A call that times out destroys its
 * socket and the next call opens a new one (the "Lazy Pirate" pattern), so a
 * stale reply can never be taken for a new one. An rpc_pool hands clients to
 * threads, so any thread can call any endpoint.
 *
 * Server side: rpc_server_handle() takes one message from a ROUTER socket,
 * checks the frame layout and header, calls the opcode's handler and sends
 * exactly one reply. A malformed or unknown message gets an error reply and
 * the server keeps serving.
 */
#ifndef TESSERA_RPC_H
#define TESSERA_RPC_H

#include "proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

/* The process's ZeroMQ context, created on first use. */
void *rpc_context(void);

/* A received reply; release it with rpc_reply_release() in every case. */
struct rpc_reply {
    struct ts_header header;
    zmq_msg_t frame;
    zmq_msg_t data_frame;
    const uint8_t *payload; /* frame 0 after the header */
    size_t payload_len;
    const uint8_t *data; /* frame 1, NULL if none */
    size_t data_len;
    int frames_held;
};

void rpc_reply_release(struct rpc_reply *reply);
/* The error text of a failed reply ("" if none). */
void rpc_reply_error_text(const struct rpc_reply *reply, char *out, size_t cap);

struct rpc_client;

struct rpc_client *rpc_client_new(const char *endpoint);
void rpc_client_destroy(struct rpc_client **clientp);

/*
 * Sends op with payload (frame 0 after the header) and optional data
 * (frame 1), waits up to timeout_ms for the reply. Sent once: a caller
 * that retries a refusal (the mount's meta client, a server's "not now")
 * does so itself, with rpc_pool_call_within() to keep one deadline.
 * Returns TS_OK, the server's status, TS_ERR_TIMEDOUT, or
 * TS_ERR_BADMSG/TS_ERR_PROTO if the reply itself is malformed. `reply` is
 * filled whenever the server answered; the caller releases it in every
 * case.
 */
int rpc_client_call(struct rpc_client *client, uint16_t op, const void *payload,
                    size_t payload_len, const void *data, size_t data_len, int timeout_ms,
                    struct rpc_reply *reply);

/*
 * Ownership of a request's data frame handed to ZeroMQ (no copy): it calls
 * free_fn(data, hint) once, from its own thread, when the bytes are sent or
 * dropped — possibly after the call has returned. The caller must not touch
 * the data after the call, but may keep it alive itself until the call
 * returns: then hold_fn (may be NULL) gives ZeroMQ one more reference, for
 * a second send of the same request, released by free_fn in its turn.
 */
struct rpc_data_owner {
    void (*free_fn)(void *data, void *hint);
    void *hint;
    void (*hold_fn)(void *hint);
};

/* As rpc_client_call(); with owner, data is given away as described above. */
int rpc_client_call_owned(struct rpc_client *client, uint16_t op, const void *payload,
                          size_t payload_len, const void *data, size_t data_len,
                          const struct rpc_data_owner *owner, int timeout_ms,
                          struct rpc_reply *reply);

/*
 * How long to wait for a busy server. When a reply's timeout passes,
 * still_working(arg, sent_ms) is asked (sent_ms: when the request left,
 * monotonic): true, and the wait goes on for one more timeout, again and
 * again, until max_ms after the request left; false, and the call times
 * out as without patience. For a server that is alive but slow (a queue
 * of big writes ahead of the request, a saturated link or CPU), which a
 * fixed deadline would take for a dead one. still_working runs on the
 * caller's thread and may itself wait (a PING, say).
 */
struct rpc_patience {
    bool (*still_working)(void *arg, int64_t sent_ms);
    void *arg;
    int max_ms;
};

/* As rpc_client_call_owned(), waiting longer for a busy server (patience may be NULL). */
int rpc_client_call_patient(struct rpc_client *client, uint16_t op, const void *payload,
                            size_t payload_len, const void *data, size_t data_len,
                            const struct rpc_data_owner *owner, int timeout_ms,
                            const struct rpc_patience *patience, struct rpc_reply *reply);

/* One request of a pipeline (rpc_client_call_many): no data frame. */
struct rpc_call {
    uint16_t op;
    const void *payload;
    size_t payload_len;
};
#define RPC_MAX_PIPELINE 16

/*
 * Sends count (1..RPC_MAX_PIPELINE) requests back to back on the client's
 * socket and waits up to timeout_ms for all their replies. The server
 * takes one peer's requests in the order sent (every Tessera daemon
 * serves them one at a time from one socket), so a later request sees
 * what an earlier one did, and the whole costs about one round trip.
 * statuses[i] gets what rpc_client_call() would have returned for
 * calls[i]; replies[i] is filled when it answered and is released by the
 * caller in every case. Returns TS_OK when every reply came, else why not
 * (TS_ERR_TIMEDOUT, TS_ERR_TOOBIG, TS_ERR_IO without a socket...);
 * TS_ERR_INVAL for a count out of range, with nothing touched.
 */
int rpc_client_call_many(struct rpc_client *client, const struct rpc_call *calls, size_t count,
                         int timeout_ms, struct rpc_reply *replies, int *statuses);

struct rpc_pool;

/* A pool of clients for one endpoint; every call has timeout_ms. */
struct rpc_pool *rpc_pool_new(const char *endpoint, int timeout_ms);
/*
 * Names the pool's sockets from now on: each one's ZeroMQ routing id is
 * `name` (1..RPC_MAX_NAME bytes, the first not 0) followed by a 4-byte
 * serial number, so the server can tell which process sent a request
 * (struct rpc_request's peer). Call before the pool is shared. TS_OK or
 * TS_ERR_INVAL.
 */
#define RPC_MAX_NAME 32
int rpc_pool_set_name(struct rpc_pool *pool, const void *name, size_t name_len);
void rpc_pool_destroy(struct rpc_pool **poolp);
const char *rpc_pool_endpoint(const struct rpc_pool *pool);
/* As rpc_client_call(), from any thread. */
int rpc_pool_call(struct rpc_pool *pool, uint16_t op, const void *payload, size_t payload_len,
                  const void *data, size_t data_len, struct rpc_reply *reply);
/* As rpc_client_call_many(), from any thread. */
int rpc_pool_call_many(struct rpc_pool *pool, const struct rpc_call *calls, size_t count,
                       struct rpc_reply *replies, int *statuses);
/*
 * As rpc_pool_call() without data and rpc_pool_call_many(), but waiting up
 * to timeout_ms instead of the pool's timeout: for a caller that spreads
 * one deadline over several tries.
 */
int rpc_pool_call_within(struct rpc_pool *pool, uint16_t op, const void *payload,
                         size_t payload_len, int timeout_ms, struct rpc_reply *reply);
int rpc_pool_call_many_within(struct rpc_pool *pool, const struct rpc_call *calls, size_t count,
                              int timeout_ms, struct rpc_reply *replies, int *statuses);
/* As rpc_client_call_owned(), from any thread. */
int rpc_pool_call_owned(struct rpc_pool *pool, uint16_t op, const void *payload,
                        size_t payload_len, const void *data, size_t data_len,
                        const struct rpc_data_owner *owner, struct rpc_reply *reply);
/* As rpc_client_call_patient(), from any thread, with the pool's timeout. */
int rpc_pool_call_patient(struct rpc_pool *pool, uint16_t op, const void *payload,
                          size_t payload_len, const void *data, size_t data_len,
                          const struct rpc_data_owner *owner, const struct rpc_patience *patience,
                          struct rpc_reply *reply);

/* ---- server ----------------------------------------------------------- */

struct rpc_request {
    const uint8_t *peer; /* the sender's ZeroMQ routing id (rpc_pool_set_name) */
    size_t peer_len;
    /* "ROLE:NAME" of the peer's key (known_keys), given by the ZAP handler
     * at the handshake (curve.h); "" on a link without CURVE. Never NULL. */
    const char *key_user;
    /* The peer's address as ZeroMQ gives it ("Peer-Address"), for logs;
     * NULL when unknown (a local peer, a test). */
    const char *peer_address;
    struct ts_header header;
    const uint8_t *payload;
    size_t payload_len;
    const uint8_t *data; /* NULL if no frame 1 */
    size_t data_len;
};

/*
 * What a handler fills in. `payload` is a server-owned buffer of
 * payload_cap bytes; the handler writes its reply fields there and sets
 * payload_len. Bulk data: set data/data_len; if data_free is set, ZeroMQ
 * takes the buffer without copying and calls data_free(data, NULL) later.
 * On failure the handler returns a status and may write error_text.
 */
struct rpc_response {
    uint8_t *payload;
    size_t payload_cap;
    size_t payload_len;
    void *data;
    size_t data_len;
    void (*data_free)(void *data, void *hint);
    char error_text[256];
    /* CLOCK_MONOTONIC ns before which the reply must not leave (a
     * throttled datanode's pace, diskio.h); 0: at once. The server holds
     * it back meanwhile (rpc_server_send_due()) and keeps serving. */
    int64_t send_at_ns;
};

typedef int (*rpc_handler_fn)(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response);

struct rpc_server;

/*
 * A ROUTER socket bound to endpoint, with handlers[op] for each opcode
 * below TS_OP_MAX (NULL = unknown). Returns NULL and logs why on failure.
 */
struct rpc_server *rpc_server_new(const char *endpoint, const rpc_handler_fn *handlers,
                                  void *ctx);
void rpc_server_destroy(struct rpc_server **serverp);
/* The socket, for zmq_poll. */
void *rpc_server_socket(struct rpc_server *server);
/*
 * Handles the messages waiting on the socket (without blocking), at most a
 * few hundred so the caller's timers keep running under load. Returns the
 * number handled.
 */
int rpc_server_handle_pending(struct rpc_server *server);
/*
 * Makes rpc_server_handle_pending() ask room(arg) before it takes each
 * message and stop when the answer is false, leaving the rest queued
 * (room NULL: takes them all). The datanode's memory cap.
 */
void rpc_server_set_gate(struct rpc_server *server, bool (*room)(void *arg), void *arg);
/*
 * Replies held back (rpc_response.send_at_ns): rpc_server_send_due() sends
 * those due by now_ns (CLOCK_MONOTONIC), and returns how many it sent;
 * rpc_server_next_due_ns() says when the next one is due (INT64_MAX: none),
 * for the caller's poll timeout. One peer's replies leave in the order its
 * requests came: a reply to a peer with one held back waits behind it.
 */
int rpc_server_send_due(struct rpc_server *server, int64_t now_ns);
int64_t rpc_server_next_due_ns(const struct rpc_server *server);

/* What a server has handled of one opcode since it started (metrics.h). */
struct rpc_op_counters {
    uint64_t requests;   /* handled, failed ones included */
    uint64_t failures;   /* answered with a non-zero status */
    uint64_t bytes_in;   /* payload and data bytes of the requests */
    uint64_t bytes_out;  /* payload and data bytes of the replies */
    uint64_t latency_ns; /* time in the handler, summed */
};
/* Copies the counters of op (zeros for op >= TS_OP_MAX). Any thread may call it. */
void rpc_server_op_counters(const struct rpc_server *server, uint16_t op,
                            struct rpc_op_counters *out);

/*
 * Receives one multipart message (blocking): its first max frames into
 * frames, the rest read and dropped. Returns the number of frames it had
 * (all counted); the caller closes frames[0 .. min(count, max)).
 */
int rpc_receive_multipart(void *socket, zmq_msg_t *frames, int max);

/*
 * Frames one request or reply into frame 0: header + payload. Used by the
 * client and server above and by tests that craft messages.
 * Returns the frame length, or 0 if it would exceed TS_MAX_FRAME_BYTES.
 */
size_t rpc_frame_build(uint8_t *out, size_t cap, uint16_t op, uint64_t request_id,
                       uint32_t flags, int status, const void *payload, size_t payload_len,
                       size_t data_len);

#endif
