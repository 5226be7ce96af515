/*
 * @file curve.c
 * See curve.h. One process-wide state, set once by main() before any
 * socket exists and read-only afterwards, except the known-keys set,
 * which the ZAP thread replaces when the file changes (under
 * curve_known_lock, also taken by curve_user_is_current()).
 *
 * Why one server key for every server socket: a client must know the
 * server's public key before it connects, and clients learn datanode
 * endpoints from meta at run time; one cluster server key needs no wire
 * change. Every member still authenticates with its own pair, which is
 * what the ZAP handler checks. The cost: a holder of server.key (meta and
 * the datanodes) could pose as another server to a client.
 */
#include "curve.h"

#include "keys.h"
#include "log.h"
#include "rpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <zmq.h>

#define CURVE_ZAP_ENDPOINT "inproc://zeromq.zap.01"
/* How often the ZAP thread looks at known_keys (and at its stop flag). */
#define CURVE_RELOAD_CHECK_MS 500

static struct keys_pair curve_own;
static char curve_server_public[KEYS_Z85_LEN + 1];
static char curve_own_path[PATH_MAX];
static char curve_dir[PATH_MAX];
static bool curve_client_on;
static bool curve_insecure_allowed;

static struct keys_pair curve_server_pair;
static bool curve_serving;
static pthread_mutex_t curve_known_lock = PTHREAD_MUTEX_INITIALIZER;
static struct keys_known curve_known; /* under curve_known_lock */
static struct stat curve_known_stat;  /* of the file last loaded (ZAP thread only) */
static pthread_t curve_zap_thread;
static void *curve_zap_socket;
static atomic_bool curve_zap_stop;

/*
 * A peer without a key (or speaking another mechanism) fails the handshake
 * before ZAP is asked, so only a socket monitor sees it. Its events name
 * the listening endpoint, not the peer: the peer's address is taken from
 * the connection's fd when it is accepted, and a failed handshake is
 * reported at the disconnection that follows it. Under many concurrent
 * handshakes an address may be logged for its neighbour's failure; the
 * refusal itself never depends on this.
 */
#define CURVE_MAX_MONITORS 4
#define CURVE_MONITOR_EVENTS                                                                       \
    (ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |           \
     ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
#define CURVE_PEERS_TRACKED 64
struct curve_monitor {
    void *socket; /* PAIR, read by the ZAP thread */
    char endpoint[128];
    int failed_handshakes; /* not yet matched to a disconnection */
};
static pthread_mutex_t curve_monitor_lock = PTHREAD_MUTEX_INITIALIZER;
static struct curve_monitor curve_monitors[CURVE_MAX_MONITORS]; /* under curve_monitor_lock */
static int curve_monitor_count;
static struct {
    int fd;
    char address[64];
} curve_peers[CURVE_PEERS_TRACKED]; /* ZAP thread only; fd 0: free */

int curve_use_key(const char *key_path, char *why, size_t why_cap)
{
    char server_public_path[PATH_MAX + 16];
    const char *slash = strrchr(key_path, '/');
    int rc;

    if (snprintf(curve_own_path, sizeof(curve_own_path), "%s", key_path) >=
        (int)sizeof(curve_own_path)) {
        snprintf(why, why_cap, "key path too long: %s", key_path);
        return -ENAMETOOLONG;
    }
    if (slash)
        snprintf(curve_dir, sizeof(curve_dir), "%.*s", (int)(slash - key_path), key_path);
    else
        snprintf(curve_dir, sizeof(curve_dir), ".");
    if (!curve_dir[0]) /* a key file in / */
        snprintf(curve_dir, sizeof(curve_dir), "/");
    /* Absolute: a daemon may change its directory, and the mount shows it (TS_KEYS_XATTR). */
    char absolute[PATH_MAX];
    if (realpath(curve_dir, absolute))
        snprintf(curve_dir, sizeof(curve_dir), "%s", absolute);
    rc = keys_pair_read(key_path, &curve_own, why, why_cap);
    if (rc != 0)
        return rc;
    snprintf(server_public_path, sizeof(server_public_path), "%s/%s", curve_dir,
             KEYS_SERVER_PUBLIC_FILE);
    rc = keys_public_read(server_public_path, curve_server_public, why, why_cap);
    if (rc != 0)
        return rc;
    curve_client_on = true;
    return 0;
}

bool curve_enabled(void)
{
    return curve_client_on;
}

const char *curve_key_path(void)
{
    return curve_client_on ? curve_own_path : "";
}

const char *curve_key_dir(void)
{
    return curve_client_on ? curve_dir : "";
}

void curve_allow_insecure(bool allow)
{
    curve_insecure_allowed = allow;
}

int curve_apply_client(void *socket)
{
    if (!curve_client_on)
        return 0;
    if (zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, curve_server_public, KEYS_Z85_LEN) != 0 ||
        zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, curve_own.public_z85, KEYS_Z85_LEN) != 0 ||
        zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, curve_own.secret_z85, KEYS_Z85_LEN) != 0) {
        log_error("cannot set the CURVE keys of a socket: %s", zmq_strerror(zmq_errno()));
        return -1;
    }
    return 0;
}

bool curve_endpoint_is_loopback(const char *endpoint)
{
    if (strncmp(endpoint, "ipc://", 6) == 0 || strncmp(endpoint, "inproc://", 9) == 0)
        return true;
    return strncmp(endpoint, "tcp://127.", 10) == 0 ||
           strncmp(endpoint, "tcp://localhost:", 16) == 0;
}

/* Starts watching a server socket's failed handshakes (see curve_monitors). */
static void curve_watch(void *socket, const char *endpoint)
{
    char monitor_endpoint[64];
    void *pair;
    pthread_mutex_lock(&curve_monitor_lock);
    if (curve_monitor_count == CURVE_MAX_MONITORS)
        goto out;
    snprintf(monitor_endpoint, sizeof(monitor_endpoint), "inproc://tessera-curve-monitor.%d",
             curve_monitor_count);
    if (zmq_socket_monitor(socket, monitor_endpoint, CURVE_MONITOR_EVENTS) != 0)
        goto out;
    pair = zmq_socket(rpc_context(), ZMQ_PAIR);
    if (!pair)
        goto out;
    if (zmq_connect(pair, monitor_endpoint) != 0) {
        zmq_close(pair);
        goto out;
    }
    curve_monitors[curve_monitor_count].socket = pair;
    snprintf(curve_monitors[curve_monitor_count].endpoint,
             sizeof(curve_monitors[curve_monitor_count].endpoint), "%s", endpoint);
    curve_monitor_count++;
out:
    pthread_mutex_unlock(&curve_monitor_lock);
}

int curve_apply_server(void *socket, const char *endpoint)
{
    int on = 1;
    if (curve_serving) {
        curve_watch(socket, endpoint);
        if (zmq_setsockopt(socket, ZMQ_CURVE_SERVER, &on, sizeof(on)) != 0 ||
            zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, curve_server_pair.secret_z85,
                           KEYS_Z85_LEN) != 0 ||
            zmq_setsockopt(socket, ZMQ_ZAP_DOMAIN, "tessera", 7) != 0) {
            log_error("cannot make %s a CURVE server: %s", endpoint, zmq_strerror(zmq_errno()));
            return -EIO;
        }
        return 0;
    }
    if (!curve_endpoint_is_loopback(endpoint) && !curve_insecure_allowed) {
        log_error("refusing to listen on %s without keys: anyone who can reach it could read "
                  "and change the filesystem; give --key FILE (tessera keys), or --insecure",
                  endpoint);
        return -EPERM;
    }
    if (!curve_endpoint_is_loopback(endpoint))
        log_warn("INSECURE: listening on %s without keys (--insecure): anyone who can reach it "
                 "can read and change the filesystem",
                 endpoint);
    else
        log_info("no keys: listening on %s (loopback) without CURVE", endpoint);
    return 0;
}

/* Rereads known_keys if it changed since the last load (ZAP thread and curve_serve). */
static void curve_known_refresh(bool first)
{
    char path[PATH_MAX + 16];
    char why[512];
    struct keys_known fresh = {0};
    struct stat st;
    size_t revoked = 0;

    snprintf(path, sizeof(path), "%s/%s", curve_dir, KEYS_KNOWN_FILE);
    if (stat(path, &st) != 0) {
        if (!first && curve_known_stat.st_ino != 0)
            log_warn("%s is gone: keeping the %zu keys last read", path, curve_known.count);
        curve_known_stat.st_ino = 0;
        return;
    }
    if (!first && st.st_ino == curve_known_stat.st_ino &&
        st.st_mtim.tv_sec == curve_known_stat.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == curve_known_stat.st_mtim.tv_nsec &&
        st.st_size == curve_known_stat.st_size)
        return;
    curve_known_stat = st;
    if (keys_known_read(path, &fresh, why, sizeof(why)) != 0) {
        log_error("known keys not reloaded, the %zu last read stay in force: %s", curve_known.count,
                  why);
        return;
    }
    for (size_t i = 0; i < fresh.count; i++)
        revoked += fresh.entries[i].revoked;
    pthread_mutex_lock(&curve_known_lock);
    keys_known_clear(&curve_known);
    curve_known = fresh;
    pthread_mutex_unlock(&curve_known_lock);
    log_info("known keys %s: %zu keys, %zu of them revoked", first ? "loaded" : "reloaded",
             fresh.count, revoked);
}

/*
 * A refused peer's ZeroMQ socket reconnects every 100 ms or so: one line
 * per host and reason every CURVE_REFUSAL_LOG_MS, with the count of those
 * left out, keeps the log readable. ZAP thread only.
 */
#define CURVE_REFUSAL_LOG_MS 10000
#define CURVE_REFUSAL_HOSTS 16
static struct {
    char key[128]; /* host + reason */
    int64_t last_ms;
    unsigned suppressed;
} curve_refusals[CURVE_REFUSAL_HOSTS];

static int64_t curve_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Logs "refused a connection from HOST...: message" unless HOST was logged for it lately. */
static void curve_log_refusal(const char *host, const char *peer, const char *message)
{
    char key[128];
    int64_t now = curve_now_ms();
    int slot = 0;
    snprintf(key, sizeof(key), "%s %.60s", host, message);
    for (int i = 0; i < CURVE_REFUSAL_HOSTS; i++) {
        if (strcmp(curve_refusals[i].key, key) == 0) {
            slot = i;
            break;
        }
        if (curve_refusals[i].last_ms < curve_refusals[slot].last_ms)
            slot = i; /* else the least recent one goes */
    }
    if (strcmp(curve_refusals[slot].key, key) == 0 &&
        now - curve_refusals[slot].last_ms < CURVE_REFUSAL_LOG_MS) {
        curve_refusals[slot].suppressed++;
        return;
    }
    if (strcmp(curve_refusals[slot].key, key) == 0 && curve_refusals[slot].suppressed > 0)
        log_warn("refused a connection from %s: %s (and %u more from %s since the last line)", peer,
                 message, curve_refusals[slot].suppressed, host);
    else
        log_warn("refused a connection from %s: %s", peer, message);
    snprintf(curve_refusals[slot].key, sizeof(curve_refusals[slot].key), "%s", key);
    curve_refusals[slot].last_ms = now;
    curve_refusals[slot].suppressed = 0;
}

/* Answers one ZAP request: 200 with "ROLE:NAME" as user id for a current key, else 400. */
static void curve_zap_answer(void *socket)
{
    zmq_msg_t frames[8];
    int count = rpc_receive_multipart(socket, frames, 8); /* RFC 27: 7 frames for CURVE */
    if (count > 8)
        count = 8; /* not a ZAP request; answered 400 below */
    char address[128] = "?";
    char public_z85[KEYS_Z85_LEN + 1] = "";
    char user_id[KEYS_ROLE_MAX + KEYS_NAME_MAX + 2] = "";
    const char *status = "400";
    const char *text = "unknown key";

    if (count < 2)
        goto out; /* not even a request id to answer */
    /* A key added a moment ago (tessera keys add, then the member starts) is known now. */
    curve_known_refresh(false);
    if (count >= 4)
        snprintf(address, sizeof(address), "%.*s", (int)zmq_msg_size(&frames[3]),
                 (const char *)zmq_msg_data(&frames[3]));
    if (count == 7 && zmq_msg_size(&frames[5]) == 5 &&
        memcmp(zmq_msg_data(&frames[5]), "CURVE", 5) == 0 && zmq_msg_size(&frames[6]) == 32) {
        zmq_z85_encode(public_z85, zmq_msg_data(&frames[6]), 32);
        pthread_mutex_lock(&curve_known_lock);
        const struct keys_entry *entry = keys_known_find_key(&curve_known, public_z85);
        if (entry && !entry->revoked) {
            status = "200";
            text = "OK";
            snprintf(user_id, sizeof(user_id), "%s:%s", entry->role, entry->name);
        } else if (entry) {
            char message[256];
            text = "revoked key";
            snprintf(message, sizeof(message), "key %s (%s %s) is revoked", public_z85, entry->role,
                     entry->name);
            curve_log_refusal(address, address, message);
        } else {
            char message[256];
            snprintf(message, sizeof(message), "key %s is unknown to this cluster", public_z85);
            curve_log_refusal(address, address, message);
        }
        pthread_mutex_unlock(&curve_known_lock);
    } else {
        text = "not a CURVE handshake";
        curve_log_refusal(address, address, "not a CURVE handshake");
    }
    zmq_send(socket, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(socket, zmq_msg_data(&frames[1]), zmq_msg_size(&frames[1]), ZMQ_SNDMORE);
    zmq_send(socket, status, 3, ZMQ_SNDMORE);
    zmq_send(socket, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(socket, user_id, strlen(user_id), ZMQ_SNDMORE);
    zmq_send(socket, "", 0, 0);
out:
    for (int i = 0; i < count; i++)
        zmq_msg_close(&frames[i]);
}

/* The tracked peer address of fd (taken off the table when forget), or "an unknown address". */
static const char *curve_peer_of(int fd, bool forget, char *out, size_t cap)
{
    snprintf(out, cap, "an unknown address");
    for (int i = 0; i < CURVE_PEERS_TRACKED; i++) {
        if (curve_peers[i].fd != fd || fd <= 0)
            continue;
        snprintf(out, cap, "%s", curve_peers[i].address);
        if (forget)
            curve_peers[i].fd = 0;
        break;
    }
    return out;
}

/* Notes a new connection's peer address (overwriting the oldest slot when full). */
static void curve_peer_track(int fd)
{
    static int next_slot;
    struct sockaddr_storage address;
    socklen_t len = sizeof(address);
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (getpeername(fd, (struct sockaddr *)&address, &len) != 0)
        return;
    if (address.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&address;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (address.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&address;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    int slot = next_slot;
    for (int i = 0; i < CURVE_PEERS_TRACKED; i++)
        if (curve_peers[i].fd == 0 || curve_peers[i].fd == fd) {
            slot = i;
            break;
        }
    if (slot == next_slot)
        next_slot = (next_slot + 1) % CURVE_PEERS_TRACKED;
    curve_peers[slot].fd = fd;
    snprintf(curve_peers[slot].address, sizeof(curve_peers[slot].address), "%s:%d", host, port);
}

/* Reads one monitor event (two frames) of monitor and logs a refused handshake. */
static void curve_monitor_event(struct curve_monitor *monitor)
{
    zmq_msg_t frames[2];
    int count = rpc_receive_multipart(monitor->socket, frames, 2);
    if (count > 2)
        count = 2;
    uint16_t event;
    uint32_t value;
    char peer[64];
    if (count == 2 && zmq_msg_size(&frames[0]) == 6) {
        memcpy(&event, zmq_msg_data(&frames[0]), sizeof(event));
        memcpy(&value, (const uint8_t *)zmq_msg_data(&frames[0]) + 2, sizeof(value));
        if (event == ZMQ_EVENT_ACCEPTED) {
            curve_peer_track((int)value);
        } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
                   event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
            monitor->failed_handshakes++;
        } else if (event == ZMQ_EVENT_DISCONNECTED) {
            curve_peer_of((int)value, true, peer, sizeof(peer));
            if (monitor->failed_handshakes > 0) {
                char host[64];
                char message[256];
                const char *colon = strrchr(peer, ':');
                monitor->failed_handshakes--;
                snprintf(host, sizeof(host), "%.*s",
                         colon ? (int)(colon - peer) : (int)strlen(peer), peer);
                snprintf(message, sizeof(message),
                         "its handshake on %s failed (a peer without keys, or with a key it "
                         "does not hold the secret of, or one that hung up midway)",
                         monitor->endpoint);
                curve_log_refusal(host, peer, message);
            }
        }
    }
    for (int i = 0; i < count; i++)
        zmq_msg_close(&frames[i]);
}

static void *curve_zap_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&curve_zap_stop)) {
        zmq_pollitem_t items[1 + CURVE_MAX_MONITORS] = {{curve_zap_socket, 0, ZMQ_POLLIN, 0}};
        int count;
        pthread_mutex_lock(&curve_monitor_lock);
        count = curve_monitor_count;
        for (int i = 0; i < count; i++)
            items[1 + i] = (zmq_pollitem_t){curve_monitors[i].socket, 0, ZMQ_POLLIN, 0};
        pthread_mutex_unlock(&curve_monitor_lock);
        int ready = zmq_poll(items, 1 + count, CURVE_RELOAD_CHECK_MS);
        if (ready < 0 && zmq_errno() == ETERM)
            break;
        if (ready > 0 && (items[0].revents & ZMQ_POLLIN))
            curve_zap_answer(curve_zap_socket);
        for (int i = 0; ready > 0 && i < count; i++)
            if (items[1 + i].revents & ZMQ_POLLIN)
                curve_monitor_event(&curve_monitors[i]);
        curve_known_refresh(false);
    }
    zmq_close(curve_zap_socket);
    curve_zap_socket = NULL;
    pthread_mutex_lock(&curve_monitor_lock);
    for (int i = 0; i < curve_monitor_count; i++)
        zmq_close(curve_monitors[i].socket);
    curve_monitor_count = 0;
    pthread_mutex_unlock(&curve_monitor_lock);
    return NULL;
}

int curve_serve(char *why, size_t why_cap)
{
    char path[PATH_MAX + 16];
    int zero = 0;
    int rc;

    if (!curve_client_on) {
        snprintf(why, why_cap, "no key given");
        return -EINVAL;
    }
    snprintf(path, sizeof(path), "%s/%s", curve_dir, KEYS_SERVER_PAIR_FILE);
    rc = keys_pair_read(path, &curve_server_pair, why, why_cap);
    if (rc != 0)
        return rc;
    if (strcmp(curve_server_pair.public_z85, curve_server_public) != 0) {
        snprintf(why, why_cap, "%s/%s and %s do not match", curve_dir, KEYS_SERVER_PUBLIC_FILE,
                 path);
        return -EINVAL;
    }
    snprintf(path, sizeof(path), "%s/%s", curve_dir, KEYS_KNOWN_FILE);
    rc = keys_known_read(path, &curve_known, why, why_cap);
    if (rc != 0)
        return rc;
    stat(path, &curve_known_stat);
    curve_zap_socket = zmq_socket(rpc_context(), ZMQ_REP);
    if (!curve_zap_socket) {
        snprintf(why, why_cap, "no ZAP socket: %s", zmq_strerror(zmq_errno()));
        return -EIO;
    }
    zmq_setsockopt(curve_zap_socket, ZMQ_LINGER, &zero, sizeof(zero));
    if (zmq_bind(curve_zap_socket, CURVE_ZAP_ENDPOINT) != 0) {
        snprintf(why, why_cap, "cannot bind the ZAP handler: %s", zmq_strerror(zmq_errno()));
        zmq_close(curve_zap_socket);
        curve_zap_socket = NULL;
        return -EIO;
    }
    atomic_store(&curve_zap_stop, false);
    rc = pthread_create(&curve_zap_thread, NULL, curve_zap_main, NULL);
    if (rc != 0) {
        snprintf(why, why_cap, "cannot start the ZAP thread: %s", strerror(rc));
        zmq_close(curve_zap_socket);
        curve_zap_socket = NULL;
        return -rc;
    }
    curve_serving = true;
    log_info("CURVE on: key %s, %zu known keys in %s", curve_own_path, curve_known.count, path);
    return 0;
}

void curve_stop(void)
{
    if (!curve_serving)
        return;
    atomic_store(&curve_zap_stop, true);
    pthread_join(curve_zap_thread, NULL);
    curve_serving = false;
    pthread_mutex_lock(&curve_known_lock);
    keys_known_clear(&curve_known);
    pthread_mutex_unlock(&curve_known_lock);
}

bool curve_user_is_current(const char *user_id)
{
    const char *colon = user_id ? strchr(user_id, ':') : NULL;
    bool current = false;
    if (!curve_serving)
        return true;
    if (!colon)
        return false;
    pthread_mutex_lock(&curve_known_lock);
    struct keys_entry *entry = keys_known_find_name(&curve_known, colon + 1);
    current = entry && !entry->revoked &&
              strncmp(entry->role, user_id, (size_t)(colon - user_id)) == 0 &&
              entry->role[colon - user_id] == '\0';
    pthread_mutex_unlock(&curve_known_lock);
    return current;
}

int curve_setup(const char *key_path, bool insecure, bool serve)
{
    char why[512];
    curve_allow_insecure(insecure);
    if (!key_path || !*key_path)
        return 0;
    if (curve_use_key(key_path, why, sizeof(why)) != 0 ||
        (serve && curve_serve(why, sizeof(why)) != 0)) {
        log_error("keys: %s", why);
        return -1;
    }
    return 0;
}
