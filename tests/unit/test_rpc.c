/*
 * @file test_rpc.c
 * Unit tests of common/rpc.c's pipelined calls (rpc_client_call_many and
 * rpc_pool_call_many) against a real rpc_server run by a thread over
 * loopback TCP: requests are handled in the order sent, each reply reaches the
 * call it answers (small replies included, which ZeroMQ keeps inside the
 * message), a server error is per call, and a timeout resets the socket so
 * the next call is not confused by late replies, and a full pipeline's
 * replies all arrive (a ROUTER drops replies its peer's queue cannot hold);
 * and a call's patience (rpc_pool_call_patient) with a slow server.
 */
#include "proto.h"
#include "rpc.h"
#include "status.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

/* TCP, as between the daemons: inproc:// has no queue a reply could overflow. */
static char endpoint[256];
#define ENDPOINT endpoint

/* The server's state: a counter that UNLINK bumps and GETATTR reports. */
static uint64_t changes;
static atomic_int stop_server;
static atomic_int server_ready;
static atomic_int slow_ms; /* GETATTR sleeps this long first */
static atomic_int gate_shut; /* the server takes no message while set */

static bool gate_open(void *arg)
{
    (void)arg;
    return !atomic_load(&gate_shut);
}

static int handle_unlink(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response)
{
    struct ts_name_req message;
    (void)ctx;
    (void)response;
    if (ts_name_req_decode(&message, request->payload, request->payload_len) != 0)
        return TS_ERR_BADMSG;
    if (message.name.len == 0)
        return TS_ERR_NOENT;
    changes++;
    return TS_OK;
}

static int handle_getattr(void *ctx, const struct rpc_request *request,
                          struct rpc_response *response)
{
    struct ts_getattr_req message;
    struct ts_attr_rep reply;
    (void)ctx;
    if (ts_getattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return TS_ERR_BADMSG;
    int pause_ms = atomic_load(&slow_ms);
    if (pause_ms > 0) {
        struct timespec pause = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
        nanosleep(&pause, NULL);
    }
    memset(&reply, 0, sizeof(reply));
    reply.attr.ino = message.ino;
    reply.attr.size = changes;
    int len = ts_attr_rep_encode(&reply, response->payload, response->payload_cap);
    if (len < 0)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    return TS_OK;
}

/* LOOKUP: refused with TS_ERR_LEASED while leased_left > 0 (counting down);
 * notes who sent it. */
static atomic_int leased_left;
static int lookups;
static uint8_t last_peer[64];
static size_t last_peer_len;

static int handle_lookup(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response)
{
    (void)ctx;
    (void)response;
    lookups++;
    last_peer_len = request->peer_len < sizeof(last_peer) ? request->peer_len : 0;
    memcpy(last_peer, request->peer, last_peer_len);
    if (atomic_load(&leased_left) > 0) {
        atomic_fetch_sub(&leased_left, 1);
        return TS_ERR_LEASED;
    }
    return TS_OK;
}

/* READLINK: answered at once, but its reply held back hold_ms (rpc_response.send_at_ns). */
static atomic_int hold_ms;

static int64_t monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static int handle_readlink(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    (void)ctx;
    (void)request;
    response->send_at_ns = monotonic_ns() + (int64_t)atomic_load(&hold_ms) * 1000000;
    return TS_OK;
}

static void *serve(void *arg)
{
    static rpc_handler_fn handlers[TS_OP_MAX];
    (void)arg;
    handlers[TS_OP_READLINK] = handle_readlink;
    handlers[TS_OP_UNLINK] = handle_unlink;
    handlers[TS_OP_GETATTR] = handle_getattr;
    handlers[TS_OP_LOOKUP] = handle_lookup;
    struct rpc_server *server = rpc_server_new("tcp://127.0.0.1:*", handlers, NULL);
    size_t len = sizeof(endpoint);
    if (server && zmq_getsockopt(rpc_server_socket(server), ZMQ_LAST_ENDPOINT, endpoint, &len) != 0)
        rpc_server_destroy(&server);
    atomic_store(&server_ready, server ? 1 : -1);
    if (server)
        rpc_server_set_gate(server, gate_open, NULL);
    while (server && !atomic_load(&stop_server)) {
        /* Like the datanode's loop: no POLLIN while the gate is shut. */
        short events = gate_open(NULL) ? ZMQ_POLLIN : 0;
        zmq_pollitem_t item = {rpc_server_socket(server), 0, events, 0};
        if (zmq_poll(&item, 1, 5) > 0)
            rpc_server_handle_pending(server);
        rpc_server_send_due(server, monotonic_ns());
    }
    rpc_server_destroy(&server);
    return NULL;
}

static pthread_t server_thread;

static int group_setup(void **state)
{
    (void)state;
    if (pthread_create(&server_thread, NULL, serve, NULL) != 0)
        return -1;
    while (atomic_load(&server_ready) == 0) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    return atomic_load(&server_ready) == 1 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    atomic_store(&stop_server, 1);
    pthread_join(server_thread, NULL);
    return 0;
}

struct encoded {
    uint8_t unlink[64];
    uint8_t getattr[2][32];
    struct rpc_call calls[3];
};

/* UNLINK("name") then GETATTR(dir_a), GETATTR(dir_b). */
static void encode(struct encoded *e, const char *name, uint64_t dir_a, uint64_t dir_b)
{
    struct ts_name_req unlink = {.parent = 1, .name = ts_str_of(name)};
    struct ts_getattr_req getattr_a = {.ino = dir_a};
    struct ts_getattr_req getattr_b = {.ino = dir_b};
    int len = ts_name_req_encode(&unlink, e->unlink, sizeof(e->unlink));
    e->calls[0] = (struct rpc_call){TS_OP_UNLINK, e->unlink, (size_t)len};
    len = ts_getattr_req_encode(&getattr_a, e->getattr[0], sizeof(e->getattr[0]));
    e->calls[1] = (struct rpc_call){TS_OP_GETATTR, e->getattr[0], (size_t)len};
    len = ts_getattr_req_encode(&getattr_b, e->getattr[1], sizeof(e->getattr[1]));
    e->calls[2] = (struct rpc_call){TS_OP_GETATTR, e->getattr[1], (size_t)len};
}

static uint64_t size_in(const struct rpc_reply *reply, uint64_t ino)
{
    struct ts_attr_rep decoded;
    assert_int_equal(ts_attr_rep_decode(&decoded, reply->payload, reply->payload_len), 0);
    assert_int_equal(decoded.attr.ino, ino);
    return decoded.attr.size;
}

/* The later requests see what the earlier ones did; replies land in order. */
static void test_pipeline_in_order(void **state)
{
    struct rpc_client *client = rpc_client_new(ENDPOINT);
    struct encoded e;
    struct rpc_reply replies[3];
    int statuses[3];
    (void)state;
    assert_non_null(client);
    for (int round = 0; round < 100; round++) {
        uint64_t before = 0;
        encode(&e, "x", 7, 8);
        assert_int_equal(rpc_client_call_many(client, &e.calls[1], 1, 5000, replies, statuses),
                         TS_OK);
        before = size_in(&replies[0], 7);
        rpc_reply_release(&replies[0]);
        assert_int_equal(rpc_client_call_many(client, e.calls, 3, 5000, replies, statuses), TS_OK);
        for (int i = 0; i < 3; i++)
            assert_int_equal(statuses[i], TS_OK);
        /* The UNLINK reply is the bare 32-byte header: kept inside the message. */
        assert_int_equal(replies[0].payload_len, 0);
        assert_int_equal(replies[0].header.type, TS_OP_UNLINK);
        assert_int_equal(size_in(&replies[1], 7), before + 1);
        assert_int_equal(size_in(&replies[2], 8), before + 1);
        for (int i = 0; i < 3; i++)
            rpc_reply_release(&replies[i]);
    }
    rpc_client_destroy(&client);
}

/* A failed call fails alone; the others are answered. */
static void test_pipeline_statuses(void **state)
{
    struct rpc_pool *pool = rpc_pool_new(ENDPOINT, 5000);
    struct encoded e;
    struct rpc_reply replies[RPC_MAX_PIPELINE + 1];
    int statuses[RPC_MAX_PIPELINE + 1];
    (void)state;
    encode(&e, "", 3, 4); /* an empty name: the UNLINK fails with NOENT */
    assert_int_equal(rpc_pool_call_many(pool, e.calls, 3, replies, statuses), TS_OK);
    assert_int_equal(statuses[0], TS_ERR_NOENT);
    assert_int_equal(statuses[1], TS_OK);
    assert_int_equal(statuses[2], TS_OK);
    size_in(&replies[2], 4);
    for (int i = 0; i < 3; i++)
        rpc_reply_release(&replies[i]);
    /* An op this server does not serve. */
    encode(&e, "y", 3, 4);
    e.calls[2] = (struct rpc_call){TS_OP_STATFS, NULL, 0};
    assert_int_equal(rpc_pool_call_many(pool, e.calls, 3, replies, statuses), TS_OK);
    assert_int_equal(statuses[0], TS_OK);
    assert_int_equal(statuses[1], TS_OK);
    assert_int_equal(statuses[2], TS_ERR_PROTO);
    for (int i = 0; i < 3; i++)
        rpc_reply_release(&replies[i]);
    /* Bad arguments. */
    assert_int_equal(rpc_pool_call_many(pool, e.calls, 0, replies, statuses), TS_ERR_INVAL);
    assert_int_equal(rpc_pool_call_many(pool, e.calls, RPC_MAX_PIPELINE + 1, replies, statuses),
                     TS_ERR_INVAL);
    rpc_pool_destroy(&pool);
}

/* Past the deadline: TIMEDOUT, and the late replies never reach later calls. */
static void test_pipeline_timeout(void **state)
{
    struct rpc_client *client = rpc_client_new(ENDPOINT);
    struct encoded e;
    struct rpc_reply replies[3];
    int statuses[3];
    (void)state;
    encode(&e, "z", 5, 6);
    atomic_store(&slow_ms, 150);
    assert_int_equal(rpc_client_call_many(client, e.calls, 3, 100, replies, statuses),
                     TS_ERR_TIMEDOUT);
    assert_int_equal(statuses[2], TS_ERR_TIMEDOUT);
    for (int i = 0; i < 3; i++)
        rpc_reply_release(&replies[i]);
    atomic_store(&slow_ms, 0);
    for (int round = 0; round < 5; round++) {
        encode(&e, "w", 9, 10);
        assert_int_equal(rpc_client_call_many(client, e.calls, 3, 5000, replies, statuses), TS_OK);
        size_in(&replies[1], 9);
        size_in(&replies[2], 10);
        for (int i = 0; i < 3; i++)
            rpc_reply_release(&replies[i]);
    }
    rpc_client_destroy(&client);
}

/* A shut gate leaves requests queued: they are answered once it opens. */
static void test_gate_holds_requests(void **state)
{
    struct rpc_client *client = rpc_client_new(ENDPOINT);
    struct encoded e;
    struct rpc_reply replies[3];
    int statuses[3];
    (void)state;
    uint64_t before = changes;
    atomic_store(&gate_shut, 1);
    encode(&e, "g", 7, 8);
    assert_int_equal(rpc_client_call_many(client, e.calls, 3, 100, replies, statuses),
                     TS_ERR_TIMEDOUT);
    for (int i = 0; i < 3; i++)
        rpc_reply_release(&replies[i]);
    assert_int_equal(changes, before); /* not even the first was taken */
    atomic_store(&gate_shut, 0);
    encode(&e, "h", 7, 8);
    assert_int_equal(rpc_client_call_many(client, e.calls, 3, 5000, replies, statuses), TS_OK);
    for (int i = 0; i < 3; i++)
        rpc_reply_release(&replies[i]);
    assert_int_equal(changes, before + 2); /* the held UNLINK, then this one */
    rpc_client_destroy(&client);
}

/* A full pipeline (RPC_MAX_PIPELINE calls), many times over: every reply arrives. */
static void test_pipeline_full(void **state)
{
    struct rpc_pool *pool = rpc_pool_new(ENDPOINT, 5000);
    struct rpc_call calls[RPC_MAX_PIPELINE];
    struct rpc_reply replies[RPC_MAX_PIPELINE];
    int statuses[RPC_MAX_PIPELINE];
    uint8_t requests[RPC_MAX_PIPELINE][64];
    (void)state;
    for (int round = 0; round < 500; round++) {
        uint64_t before = changes;
        for (int i = 0; i < RPC_MAX_PIPELINE; i++) {
            char name[16];
            snprintf(name, sizeof(name), "f%d", i);
            struct ts_name_req unlink = {.parent = 1, .name = ts_str_of(name)};
            int len = ts_name_req_encode(&unlink, requests[i], sizeof(requests[i]));
            calls[i] = (struct rpc_call){TS_OP_UNLINK, requests[i], (size_t)len};
        }
        assert_int_equal(rpc_pool_call_many(pool, calls, RPC_MAX_PIPELINE, replies, statuses),
                         TS_OK);
        for (int i = 0; i < RPC_MAX_PIPELINE; i++) {
            assert_int_equal(statuses[i], TS_OK);
            rpc_reply_release(&replies[i]);
        }
        assert_int_equal(changes, before + RPC_MAX_PIPELINE);
    }
    rpc_pool_destroy(&pool);
}

/*
 * A named pool's sockets carry its name; a refusal (here TS_ERR_LEASED) is
 * the caller's to retry: the request is sent once (fuse/metaclient.c
 * retries lease refusals).
 */
static void test_named_pool_and_refusal_sent_once(void **state)
{
    (void)state;
    struct rpc_pool *pool = rpc_pool_new(ENDPOINT, 300);
    struct rpc_reply reply;
    uint8_t request[64];
    const uint8_t name[9] = {'M', 1, 2, 3, 4, 5, 6, 7, 8};
    struct ts_lookup_req lookup = {.parent = 1, .name = ts_str_of("a")};
    int len = ts_lookup_req_encode(&lookup, request, sizeof(request));
    assert_int_equal(rpc_pool_set_name(pool, name, 0), TS_ERR_INVAL);
    assert_int_equal(rpc_pool_set_name(pool, "\0x", 2), TS_ERR_INVAL);
    assert_int_equal(rpc_pool_set_name(pool, name, sizeof(name)), TS_OK);

    lookups = 0;
    atomic_store(&leased_left, 3);
    assert_int_equal(rpc_pool_call(pool, TS_OP_LOOKUP, request, (size_t)len, NULL, 0, &reply),
                     TS_ERR_LEASED);
    rpc_reply_release(&reply);
    assert_int_equal(lookups, 1);
    assert_int_equal(last_peer_len, sizeof(name) + 4);
    assert_memory_equal(last_peer, name, sizeof(name));

    /* In a pipeline: each call's own status, nothing sent again. */
    struct rpc_call calls[2] = {{TS_OP_LOOKUP, request, (size_t)len},
                                {TS_OP_LOOKUP, request, (size_t)len}};
    struct rpc_reply replies[2];
    int statuses[2];
    lookups = 0;
    atomic_store(&leased_left, 1);
    assert_int_equal(rpc_pool_call_many_within(pool, calls, 2, 300, replies, statuses), TS_OK);
    assert_int_equal(statuses[0], TS_ERR_LEASED);
    assert_int_equal(statuses[1], TS_OK);
    rpc_reply_release(&replies[0]);
    rpc_reply_release(&replies[1]);
    assert_int_equal(lookups, 2);

    /* With a timeout of the caller's. */
    atomic_store(&leased_left, 0);
    assert_int_equal(rpc_pool_call_within(pool, TS_OP_LOOKUP, request, (size_t)len, 300, &reply),
                     TS_OK);
    rpc_reply_release(&reply);
    rpc_pool_destroy(&pool);
}

/* One held-back call: READLINK, its elapsed ms into *arg (an int64_t). */
static void *held_call(void *arg)
{
    struct rpc_client *client = rpc_client_new(ENDPOINT);
    struct rpc_reply reply;
    int64_t started = monotonic_ns();
    int status = rpc_client_call(client, TS_OP_READLINK, NULL, 0, NULL, 0, 5000, &reply);
    rpc_reply_release(&reply);
    rpc_client_destroy(&client);
    *(int64_t *)arg = status == TS_OK ? (monotonic_ns() - started) / 1000000 : -1;
    return NULL;
}

/*
 * A reply held back (a throttled datanode's pace) holds back no one else:
 * another peer's request is answered at once meanwhile; the held reply
 * comes when due; one peer's replies keep the order of its requests.
 */
static void test_held_reply(void **state)
{
    struct rpc_client *client = rpc_client_new(ENDPOINT);
    struct rpc_reply reply;
    pthread_t waiter;
    int64_t held_ms = 0;
    (void)state;
    atomic_store(&hold_ms, 600);
    assert_int_equal(pthread_create(&waiter, NULL, held_call, &held_ms), 0);
    struct timespec pause = {0, 100 * 1000000L}; /* the READLINK is in, held */
    nanosleep(&pause, NULL);
    uint8_t payload[32];
    struct ts_getattr_req getattr = {.ino = 1};
    int len = ts_getattr_req_encode(&getattr, payload, sizeof(payload));
    int64_t started = monotonic_ns();
    assert_int_equal(rpc_client_call(client, TS_OP_GETATTR, payload, (size_t)len, NULL, 0, 5000,
                                     &reply),
                     TS_OK);
    rpc_reply_release(&reply);
    assert_true((monotonic_ns() - started) / 1000000 < 300);
    pthread_join(waiter, NULL);
    assert_true(held_ms >= 600);
    assert_true(held_ms < 3000);

    /* Same peer: a GETATTR after a held READLINK is answered after it, in order. */
    struct rpc_call calls[2] = {{TS_OP_READLINK, NULL, 0}, {TS_OP_GETATTR, payload, (size_t)len}};
    struct rpc_reply replies[2];
    int statuses[2];
    atomic_store(&hold_ms, 300);
    started = monotonic_ns();
    assert_int_equal(rpc_client_call_many(client, calls, 2, 5000, replies, statuses), TS_OK);
    assert_true((monotonic_ns() - started) / 1000000 >= 300);
    assert_int_equal(statuses[0], TS_OK);
    assert_int_equal(statuses[1], TS_OK);
    assert_int_equal(replies[0].header.type, TS_OP_READLINK);
    assert_int_equal(replies[1].header.type, TS_OP_GETATTR);
    rpc_reply_release(&replies[0]);
    rpc_reply_release(&replies[1]);
    atomic_store(&hold_ms, 0);
    rpc_client_destroy(&client);
}

/* A patience that counts its questions and answers `answer` to each. */
struct counted_patience {
    bool answer;
    int asked;
    int64_t sent_ms;
};

static bool count_and_answer(void *arg, int64_t sent_ms)
{
    struct counted_patience *counted = arg;
    counted->asked++;
    counted->sent_ms = sent_ms;
    return counted->answer;
}

/* One GETATTR answered after 300 ms, with a 100 ms timeout and `patience`. */
static int slow_getattr(struct rpc_pool *pool, const struct rpc_patience *patience,
                        int64_t *took_ms)
{
    struct ts_getattr_req getattr = {.ino = 7};
    uint8_t payload[32];
    struct rpc_reply reply;
    int len = ts_getattr_req_encode(&getattr, payload, sizeof(payload));
    int64_t started = monotonic_ns();
    atomic_store(&slow_ms, 300);
    int status = rpc_pool_call_patient(pool, TS_OP_GETATTR, payload, (size_t)len, NULL, 0, NULL,
                                       patience, &reply);
    *took_ms = (monotonic_ns() - started) / 1000000;
    if (status == TS_OK)
        size_in(&reply, 7);
    rpc_reply_release(&reply);
    atomic_store(&slow_ms, 0);
    /* Let the server finish the late request before the next call. */
    struct timespec pause = {0, 400 * 1000000L};
    nanosleep(&pause, NULL);
    return status;
}

/*
 * Patience: a server slower than the timeout is waited for while
 * still_working says so (asked once per timeout, with the time the request
 * left), not past max_ms, and not at all when it says no.
 */
static void test_patience_waits_for_busy_server(void **state)
{
    struct rpc_pool *pool = rpc_pool_new(ENDPOINT, 100);
    struct counted_patience counted = {.answer = true};
    struct rpc_patience patience = {count_and_answer, &counted, 2000};
    int64_t took_ms;
    (void)state;

    int64_t before_ms = monotonic_ns() / 1000000;
    assert_int_equal(slow_getattr(pool, &patience, &took_ms), TS_OK);
    assert_true(took_ms >= 300);
    assert_in_range(counted.asked, 1, 20); /* every 100 ms until the reply */
    assert_in_range(counted.sent_ms, before_ms, before_ms + took_ms);

    /* (No upper bound on the times below: the TIMEDOUT itself shows the
     * call did not wait for the 300 ms reply, and a loaded machine may
     * run late.) */
    counted = (struct counted_patience){.answer = false};
    assert_int_equal(slow_getattr(pool, &patience, &took_ms), TS_ERR_TIMEDOUT);
    assert_int_equal(counted.asked, 1);

    /* Working, but past its limit: asked at 100 ms (not at all if that
     * came late, past the limit), then the limit ends the wait. */
    counted = (struct counted_patience){.answer = true};
    patience.max_ms = 150;
    assert_int_equal(slow_getattr(pool, &patience, &took_ms), TS_ERR_TIMEDOUT);
    assert_in_range(counted.asked, 0, 1);

    /* Without patience: the plain timeout. */
    assert_int_equal(slow_getattr(pool, NULL, &took_ms), TS_ERR_TIMEDOUT);
    rpc_pool_destroy(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_in_order), cmocka_unit_test(test_pipeline_statuses),
        cmocka_unit_test(test_pipeline_timeout),  cmocka_unit_test(test_gate_holds_requests),
        cmocka_unit_test(test_pipeline_full),
        cmocka_unit_test(test_named_pool_and_refusal_sent_once),
        cmocka_unit_test(test_held_reply),
        cmocka_unit_test(test_patience_waits_for_busy_server),
    };
    return cmocka_run_group_tests_name("rpc", tests, group_setup, group_teardown);
}
