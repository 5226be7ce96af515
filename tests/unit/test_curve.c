/*
 * @file test_curve.c
 * Unit tests of CURVE on rpc links and the ZAP handler (common/curve.h)
 * against a real rpc_server over loopback TCP, run by a thread of this
 * process, with keys made by the real key directory code: a known key is
 * let in and its "ROLE:NAME" reaches the handler; no key and an unknown
 * key get no answer at all (refused at the handshake); a key revoked in
 * known_keys is refused on its next connection and its live connection
 * gets TS_ERR_PERM; a secret file others may read is not loaded; a known
 * key whose role may not send a request (roles.h) gets TS_ERR_PERM and
 * its handler never runs.
 */
#include "curve.h"
#include "keys.h"
#include "keysdir.h"
#include "proto.h"
#include "roles.h"
#include "rpc.h"
#include "status.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[PATH_MAX];
static char keys_dir[PATH_MAX + 16];
static char endpoint[256];
static struct rpc_server *server;
static pthread_t server_thread;
static atomic_int stop_server;

/* PING answers with the caller's key user, so a test sees what the handler sees. */
static int handle_ping(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    (void)ctx;
    size_t len = strlen(request->key_user);
    memcpy(response->payload, request->key_user, len);
    response->payload_len = len;
    return TS_OK;
}

/* NODE_THROTTLE (an admin-only op) counts the requests that reached it. */
static atomic_int throttles_handled;

static int handle_throttle(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    (void)ctx;
    (void)request;
    (void)response;
    atomic_fetch_add(&throttles_handled, 1);
    return TS_OK;
}

static void *serve(void *arg)
{
    (void)arg;
    zmq_pollitem_t item = {rpc_server_socket(server), 0, ZMQ_POLLIN, 0};
    while (!atomic_load(&stop_server)) {
        if (zmq_poll(&item, 1, 50) > 0)
            rpc_server_handle_pending(server);
    }
    return NULL;
}

/* A key pair file of the key directory. */
static void read_pair(const char *name, struct keys_pair *pair)
{
    char path[PATH_MAX + 64];
    char why[512];
    snprintf(path, sizeof(path), "%s/%s.key", keys_dir, name);
    assert_int_equal(keys_pair_read(path, pair, why, sizeof(why)), 0);
}

/* An outsider's DEALER socket: CURVE with pair (NULL: plain ZeroMQ). */
static void *outsider_socket(const struct keys_pair *pair)
{
    void *socket = zmq_socket(rpc_context(), ZMQ_DEALER);
    char server_public[KEYS_Z85_LEN + 1];
    char path[PATH_MAX + 64];
    char why[512];
    int zero = 0;
    assert_non_null(socket);
    zmq_setsockopt(socket, ZMQ_LINGER, &zero, sizeof(zero));
    if (pair) {
        snprintf(path, sizeof(path), "%s/server.pub", keys_dir);
        assert_int_equal(keys_public_read(path, server_public, why, sizeof(why)), 0);
        assert_int_equal(zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, server_public, 40), 0);
        assert_int_equal(zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, pair->public_z85, 40), 0);
        assert_int_equal(zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, pair->secret_z85, 40), 0);
    }
    assert_int_equal(zmq_connect(socket, endpoint), 0);
    return socket;
}

/*
 * Sends an op request (empty payload) on socket and waits up to timeout_ms:
 * 1 with the reply's status and payload (NUL-terminated) when one came, 0
 * when none did.
 */
static int send_op(void *socket, uint16_t op, int timeout_ms, int *status, char *payload,
                   size_t cap)
{
    uint8_t frame[TS_HEADER_BYTES];
    static uint64_t request_id = 1;
    size_t len = rpc_frame_build(frame, sizeof(frame), op, request_id++, 0, TS_OK, NULL, 0, 0);
    zmq_pollitem_t item = {socket, 0, ZMQ_POLLIN, 0};
    uint8_t reply[512];
    struct ts_header header;
    assert_int_equal(zmq_send(socket, frame, len, 0), (int)len);
    if (zmq_poll(&item, 1, timeout_ms) <= 0)
        return 0;
    int got = zmq_recv(socket, reply, sizeof(reply), 0);
    assert_true(got >= TS_HEADER_BYTES);
    assert_int_equal(ts_header_decode(&header, reply, (size_t)got), TS_OK);
    *status = header.status;
    size_t payload_len = header.payload_bytes < cap ? header.payload_bytes : cap - 1;
    memcpy(payload, reply + TS_HEADER_BYTES, payload_len);
    payload[payload_len] = '\0';
    return 1;
}

static int ping(void *socket, int timeout_ms, int *status, char *payload, size_t cap)
{
    return send_op(socket, TS_OP_PING, timeout_ms, status, payload, cap);
}

static int group_setup(void **state)
{
    static const rpc_handler_fn handlers[TS_OP_MAX] = {
        [TS_OP_PING] = handle_ping, [TS_OP_NODE_THROTTLE] = handle_throttle};
    char path[PATH_MAX + 64];
    char why[512];
    const char *tmp = getenv("TMPDIR");
    size_t len = sizeof(endpoint);
    (void)state;
    snprintf(dir, sizeof(dir), "%s/test_curve.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return -1;
    snprintf(keys_dir, sizeof(keys_dir), "%s/keys", dir);
    if (keysdir_init(keys_dir, "test") != 0 || keysdir_add(keys_dir, "mount", "m1", "test") != 0 ||
        keysdir_add(keys_dir, "mount", "m2", "test") != 0)
        return -1;
    snprintf(path, sizeof(path), "%s/meta.key", keys_dir);
    if (curve_use_key(path, why, sizeof(why)) != 0 || curve_serve(why, sizeof(why)) != 0) {
        fprintf(stderr, "# %s\n", why);
        return -1;
    }
    server = rpc_server_new("tcp://127.0.0.1:*", handlers, NULL);
    if (!server ||
        zmq_getsockopt(rpc_server_socket(server), ZMQ_LAST_ENDPOINT, endpoint, &len) != 0)
        return -1;
    return pthread_create(&server_thread, NULL, serve, NULL) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    char command[PATH_MAX + 16];
    (void)state;
    atomic_store(&stop_server, 1);
    pthread_join(server_thread, NULL);
    rpc_server_destroy(&server);
    curve_stop();
    snprintf(command, sizeof(command), "rm -rf '%s'", dir);
    return system(command) == 0 ? 0 : -1;
}

static void test_known_key_is_let_in_with_its_role(void **state)
{
    (void)state;
    struct keys_pair pair;
    char payload[128];
    int status = -1;
    read_pair("m1", &pair);
    void *socket = outsider_socket(&pair);
    assert_int_equal(ping(socket, 5000, &status, payload, sizeof(payload)), 1);
    assert_int_equal(status, TS_OK);
    assert_string_equal(payload, "mount:m1");
    zmq_close(socket);

    /* This process's own clients (rpc.c) use its key: meta's. */
    struct rpc_client *client = rpc_client_new(endpoint);
    struct rpc_reply reply;
    assert_non_null(client);
    assert_int_equal(rpc_client_call(client, TS_OP_PING, NULL, 0, NULL, 0, 5000, &reply), TS_OK);
    assert_int_equal(reply.payload_len, strlen("meta:meta"));
    assert_memory_equal(reply.payload, "meta:meta", reply.payload_len);
    rpc_reply_release(&reply);
    rpc_client_destroy(&client);
}

static void test_no_key_and_unknown_key_get_no_answer(void **state)
{
    (void)state;
    struct keys_pair stranger;
    char payload[128];
    int status = -1;
    void *plain = outsider_socket(NULL);
    assert_int_equal(ping(plain, 1500, &status, payload, sizeof(payload)), 0);
    zmq_close(plain);

    assert_int_equal(keys_pair_generate(&stranger), 0);
    void *unknown = outsider_socket(&stranger);
    assert_int_equal(ping(unknown, 1500, &status, payload, sizeof(payload)), 0);
    zmq_close(unknown);

    /* A known public key without its secret cannot pass either. */
    struct keys_pair forged;
    read_pair("m1", &forged);
    memcpy(forged.secret_z85, stranger.secret_z85, sizeof(forged.secret_z85));
    void *impostor = outsider_socket(&forged);
    assert_int_equal(ping(impostor, 1500, &status, payload, sizeof(payload)), 0);
    zmq_close(impostor);
}

static void test_revoked_key_is_refused_live_and_on_reconnect(void **state)
{
    (void)state;
    struct keys_pair pair;
    char payload[128];
    int status = -1;
    read_pair("m2", &pair);
    void *live = outsider_socket(&pair);
    assert_int_equal(ping(live, 5000, &status, payload, sizeof(payload)), 1);
    assert_int_equal(status, TS_OK);

    assert_int_equal(keysdir_revoke(keys_dir, "m2", "test"), 0);
    /* The ZAP thread looks at known_keys twice a second. */
    int answered = 0;
    for (int attempt = 0; attempt < 40; attempt++) {
        usleep(100 * 1000);
        answered = ping(live, 5000, &status, payload, sizeof(payload));
        if (!answered || status != TS_OK)
            break;
    }
    assert_int_equal(answered, 1);
    assert_int_equal(status, TS_ERR_PERM);
    zmq_close(live);

    void *again = outsider_socket(&pair);
    assert_int_equal(ping(again, 1500, &status, payload, sizeof(payload)), 0);
    zmq_close(again);

    /* Others are untouched. */
    read_pair("m1", &pair);
    void *other = outsider_socket(&pair);
    assert_int_equal(ping(other, 5000, &status, payload, sizeof(payload)), 1);
    assert_int_equal(status, TS_OK);
    zmq_close(other);
}

static void test_role_may_not_send_op_is_refused_before_its_handler(void **state)
{
    (void)state;
    struct keys_pair pair;
    char payload[256];
    int status = -1;
    int before = atomic_load(&throttles_handled);

    read_pair("m1", &pair);
    void *mount = outsider_socket(&pair);
    assert_int_equal(send_op(mount, TS_OP_NODE_THROTTLE, 5000, &status, payload, sizeof(payload)),
                     1);
    assert_int_equal(status, TS_ERR_PERM);
    assert_int_equal(atomic_load(&throttles_handled), before);
    /* The refusal says what and who (the reply's error text is a string field). */
    assert_non_null(strstr(payload + 2, "mount:m1 may not send NODE_THROTTLE"));
    /* The connection stays usable for what the role may do. */
    assert_int_equal(ping(mount, 5000, &status, payload, sizeof(payload)), 1);
    assert_int_equal(status, TS_OK);
    zmq_close(mount);

    read_pair("admin", &pair);
    void *admin = outsider_socket(&pair);
    assert_int_equal(send_op(admin, TS_OP_NODE_THROTTLE, 5000, &status, payload, sizeof(payload)),
                     1);
    assert_int_equal(status, TS_OK);
    assert_int_equal(atomic_load(&throttles_handled), before + 1);
    zmq_close(admin);
}

static void test_roles_table(void **state)
{
    (void)state;
    char text[64];
    /* No key (no CURVE): everything, as before keys. */
    assert_true(roles_permit(TS_OP_NODE_THROTTLE, ""));
    assert_true(roles_permit(TS_OP_SETATTR, ""));
    /* Each role's own work, and not the others'. */
    assert_true(roles_permit(TS_OP_SETATTR, "mount:m1"));
    assert_false(roles_permit(TS_OP_SETATTR, "admin:admin"));
    assert_false(roles_permit(TS_OP_SETATTR, "datanode:n1"));
    assert_true(roles_permit(TS_OP_HEARTBEAT, "datanode:n1"));
    assert_false(roles_permit(TS_OP_HEARTBEAT, "mount:m1"));
    assert_false(roles_permit(TS_OP_HEARTBEAT, "admin:admin"));
    assert_true(roles_permit(TS_OP_TILE_FENCE, "meta:meta"));
    assert_true(roles_permit(TS_OP_TILE_FENCE, "admin:admin"));
    assert_false(roles_permit(TS_OP_TILE_FENCE, "mount:m1"));
    assert_false(roles_permit(TS_OP_TILE_FENCE, "datanode:n1"));
    assert_true(roles_permit(TS_OP_TILE_WRITE, "mount:m1"));
    assert_true(roles_permit(TS_OP_TILE_WRITE, "datanode:n1"));
    assert_false(roles_permit(TS_OP_TILE_WRITE, "admin:admin"));
    assert_false(roles_permit(TS_OP_TILE_PULL, "datanode:n1"));
    assert_false(roles_permit(TS_OP_NODE_ADMIN, "mount:m1"));
    /* An unknown role, a user id without a role, an op out of range: nothing. */
    assert_false(roles_permit(TS_OP_PING, "root:x"));
    assert_false(roles_permit(TS_OP_PING, "mount"));
    assert_false(roles_permit(TS_OP_MAX, "admin:admin"));
    assert_int_equal(roles_of_user("mounts:x"), 0);
    /* Every op this build knows someone may send: a new op needs a row. */
    for (uint16_t op = 1; op < TS_OP_MAX; op++)
        if (strcmp(ts_op_name(op), "?") != 0)
            assert_true(roles_allowed(op) != 0);
    roles_describe(ROLES_META | ROLES_ADMIN, text, sizeof(text));
    assert_string_equal(text, "meta, admin");
    roles_describe(0, text, sizeof(text));
    assert_string_equal(text, "none");
}

static void test_loopback_endpoints(void **state)
{
    (void)state;
    assert_true(curve_endpoint_is_loopback("tcp://127.0.0.1:7400"));
    assert_true(curve_endpoint_is_loopback("tcp://localhost:7400"));
    assert_true(curve_endpoint_is_loopback("ipc:///tmp/x"));
    assert_false(curve_endpoint_is_loopback("tcp://10.0.0.1:7400"));
    assert_false(curve_endpoint_is_loopback("tcp://*:7400"));
    assert_false(curve_endpoint_is_loopback("tcp://0.0.0.0:7400"));
    assert_false(curve_endpoint_is_loopback("tcp://localhost.example.com:7400"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_key_is_let_in_with_its_role),
        cmocka_unit_test(test_no_key_and_unknown_key_get_no_answer),
        cmocka_unit_test(test_revoked_key_is_refused_live_and_on_reconnect),
        cmocka_unit_test(test_role_may_not_send_op_is_refused_before_its_handler),
        cmocka_unit_test(test_roles_table),
        cmocka_unit_test(test_loopback_endpoints),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
