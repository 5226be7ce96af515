/*
 * @file stream.c
 * See stream.h. The loop accepts; a connection is then one thread's alone:
 * the loop hands its descriptor over through the thread's `incoming` list
 * (under the thread's lock) and wakes it with its eventfd. A thread keeps
 * its connections in an array in arrival order; a request may come in
 * pieces, so each connection keeps the bytes of its next request until all
 * TS_STREAM_REQ_BYTES are there. Requests are taken without waiting
 * (MSG_DONTWAIT: a peer that sends half a request stalls nothing), while
 * answers, and a write's bytes, block for at most STREAM_TIMEOUT_MS.
 *
 * Invariant: a thread's `count` is the number of connections it holds or
 * has been handed and not yet taken up; the loop adds to it as it hands
 * one over, the thread takes from it as it closes one. Likewise each
 * peer's count in `peers` (under peers_lock): the loop adds as it accepts,
 * the thread that closes the connection takes away.
 *
 * Who may connect: on the local socket, a process of the datanode's own
 * user or root (SO_PEERCRED, checked at accept: an abstract socket has no
 * file mode to guard it); over TCP anyone who reaches the port, unless
 * stream_refuse_tcp() was called (a datanode with keys: TCP carries no
 * credentials, so only the local socket serves there). A peer (a process
 * on the local socket, an address over TCP) holds at most
 * STREAM_MAX_PER_PEER connections, and a connection that sends nothing
 * for the idle time is closed, so idle or greedy clients cannot hold every
 * slot.
 */
#include "stream.h"

#include "log.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Requests one connection may have served before its thread's others get a turn. */
#define STREAM_TURN_REQUESTS 8
#define STREAM_THREAD_CONNECTIONS (STREAM_MAX_CONNECTIONS / STREAM_THREADS)
/* A kept read's bytes are dropped at the connection's next request, or once
 * the thread has had nothing to do for this long (nodehandlers.h). */
#define STREAM_DROP_IDLE_MS 50

/* A connection's peer: the process (local socket) or the address (TCP). */
#define STREAM_PEER_LOCAL (1ull << 32)
#define STREAM_PEER_TCP (2ull << 32)

struct stream_incoming {
    int fd;
    uint64_t peer;
};

struct stream_connection {
    int fd;
    uint64_t peer;
    int64_t last_ms; /* when it last sent something (or was taken up) */
    size_t have;     /* bytes of the next request received so far */
    uint8_t request[TS_STREAM_REQ_BYTES];
    struct nodehandlers_drop_behind drop; /* the last kept read's bytes */
};

struct stream_thread {
    struct stream *stream;
    pthread_t thread;
    bool started;
    int wake_fd;     /* eventfd: connections handed over, or the stream stops */
    /* The thread's connections and wake_fd: epoll, not poll(), whose every
     * call walked all of them (15 % of a datanode's CPU serving 4 KiB reads). */
    int epoll_fd;
    struct nodehandlers_write_buffer write_buffer; /* a write's bytes, before they are checked */
    atomic_size_t count;
    pthread_mutex_t lock; /* protects incoming and incoming_count */
    struct stream_incoming incoming[STREAM_THREAD_CONNECTIONS];
    size_t incoming_count;
    /* The thread's own from here on. */
    size_t served;
    struct stream_connection connections[STREAM_THREAD_CONNECTIONS];
};

struct stream {
    int listen_fd;
    int local_fd; /* the abstract Unix socket's listener, -1: none */
    char local_name[TS_STREAM_LOCAL_MAX];
    uint16_t port;
    struct nodehandlers_context *context;
    atomic_bool stopping;
    atomic_int idle_ms;         /* a connection silent this long is closed */
    bool tcp_refused;           /* stream_refuse_tcp(): the loop's */
    uint64_t refusals;          /* connections refused, for the log: the loop's */
    pthread_mutex_t peers_lock; /* protects peers and peer_count */
    struct {
        uint64_t id;
        unsigned count;
    } peers[STREAM_MAX_CONNECTIONS];
    size_t peer_count;
    struct stream_thread threads[STREAM_THREADS];
};

/* Counts one more connection of peer; false (nothing counted) when it has its share. */
static bool peer_take(struct stream *stream, uint64_t peer)
{
    bool taken = false;
    pthread_mutex_lock(&stream->peers_lock);
    size_t i = 0;
    while (i < stream->peer_count && stream->peers[i].id != peer)
        i++;
    if (i == stream->peer_count && i < STREAM_MAX_CONNECTIONS) {
        stream->peers[i].id = peer;
        stream->peers[i].count = 0;
        stream->peer_count++;
    }
    if (i < stream->peer_count && stream->peers[i].count < STREAM_MAX_PER_PEER) {
        stream->peers[i].count++;
        taken = true;
    }
    pthread_mutex_unlock(&stream->peers_lock);
    return taken;
}

static void peer_release(struct stream *stream, uint64_t peer)
{
    pthread_mutex_lock(&stream->peers_lock);
    for (size_t i = 0; i < stream->peer_count; i++) {
        if (stream->peers[i].id != peer)
            continue;
        if (--stream->peers[i].count == 0)
            stream->peers[i] = stream->peers[--stream->peer_count];
        break;
    }
    pthread_mutex_unlock(&stream->peers_lock);
}

static void connection_drop(struct stream_thread *thread, size_t index)
{
    nodehandlers_drop_behind(&thread->connections[index].drop, -1);
    close(thread->connections[index].fd);
    peer_release(thread->stream, thread->connections[index].peer);
    thread->connections[index] = thread->connections[--thread->served];
    atomic_fetch_sub(&thread->count, 1);
}

/*
 * Serves what the connection sent, up to STREAM_TURN_REQUESTS requests (a
 * client that keeps sending waits for the next turn, so the thread's other
 * connections get theirs); false if it is to be closed.
 */
static bool connection_take(struct stream_thread *thread, struct stream_connection *connection)
{
    for (int served = 0; served < STREAM_TURN_REQUESTS;) {
        ssize_t got = recv(connection->fd, connection->request + connection->have,
                           sizeof(connection->request) - connection->have, MSG_DONTWAIT);
        if (got < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        if (got == 0)
            return false; /* the mount closed it */
        connection->have += (size_t)got;
        if (connection->have < sizeof(connection->request))
            continue;
        connection->have = 0;
        if (nodehandlers_stream_request(thread->stream->context, connection->request,
                                        connection->fd, &thread->write_buffer,
                                        &connection->drop) != 0)
            return false;
        served++;
    }
    return true;
}

/* Takes up the connections the loop handed over. */
static void thread_take_incoming(struct stream_thread *thread)
{
    uint64_t wakes;
    if (thread->wake_fd >= 0 && read(thread->wake_fd, &wakes, sizeof(wakes)) < 0 && errno != EAGAIN)
        log_warn("tile stream: reading a thread's eventfd failed: %s", strerror(errno));
    int64_t now_ms = util_monotonic_ms();
    pthread_mutex_lock(&thread->lock);
    for (size_t i = 0; i < thread->incoming_count; i++) {
        struct epoll_event event = {.events = EPOLLIN, .data.fd = thread->incoming[i].fd};
        thread->connections[thread->served++] =
            (struct stream_connection){.fd = thread->incoming[i].fd,
                                       .peer = thread->incoming[i].peer,
                                       .last_ms = now_ms,
                                       .drop = {.fd = -1}};
        /* Not watched, it is never served: closed at once. */
        if (thread->epoll_fd < 0 ||
            epoll_ctl(thread->epoll_fd, EPOLL_CTL_ADD, event.data.fd, &event) != 0) {
            log_warn("tile stream: cannot watch a connection: %s; it is closed",
                     strerror(errno));
            connection_drop(thread, thread->served - 1);
        }
    }
    thread->incoming_count = 0;
    pthread_mutex_unlock(&thread->lock);
}

/*
 * How long the thread may sleep in poll: until its first connection turns
 * idle, and at most STREAM_DROP_IDLE_MS while kept reads wait to be dropped.
 */
static int thread_poll_timeout(const struct stream_thread *thread, int64_t now_ms)
{
    int64_t idle_ms = atomic_load(&thread->stream->idle_ms);
    int64_t wait_ms = -1;
    for (size_t i = 0; i < thread->served; i++) {
        int64_t left = thread->connections[i].last_ms + idle_ms - now_ms;
        if (left < 0)
            left = 0;
        if (thread->connections[i].drop.fd >= 0 && left > STREAM_DROP_IDLE_MS)
            left = STREAM_DROP_IDLE_MS;
        if (wait_ms < 0 || left < wait_ms)
            wait_ms = left;
    }
    return wait_ms < 0 ? -1 : (int)(wait_ms + 1);
}

/* Closes the connections that sent nothing for the idle time. */
static void thread_close_idle(struct stream_thread *thread, int64_t now_ms)
{
    int64_t idle_ms = atomic_load(&thread->stream->idle_ms);
    for (size_t i = thread->served; i >= 1; i--) {
        if (now_ms - thread->connections[i - 1].last_ms >= idle_ms) {
            log_debug("tile stream: closing a connection silent for %lld ms",
                      (long long)(now_ms - thread->connections[i - 1].last_ms));
            connection_drop(thread, i - 1);
        }
    }
}

/* The index of the connection whose socket is fd, or served when none is. */
static size_t thread_connection_of(const struct stream_thread *thread, int fd)
{
    size_t i = 0;
    while (i < thread->served && thread->connections[i].fd != fd)
        i++;
    return i;
}

static void *thread_main(void *arg)
{
    struct stream_thread *thread = arg;
    struct epoll_event events[1 + STREAM_THREAD_CONNECTIONS];

    while (!atomic_load(&thread->stream->stopping)) {
        int ready = epoll_wait(thread->epoll_fd, events, (int)(1 + STREAM_THREAD_CONNECTIONS),
                               thread_poll_timeout(thread, util_monotonic_ms()));
        if (ready < 0) {
            if (errno == EINTR)
                continue;
            log_error("tile stream: epoll_wait failed: %s; this thread's connections close",
                      strerror(errno));
            break;
        }
        int64_t now_ms = util_monotonic_ms();
        if (ready == 0) { /* idle: drop what the readers have acknowledged */
            for (size_t i = 0; i < thread->served; i++)
                nodehandlers_drop_behind(&thread->connections[i].drop, thread->connections[i].fd);
        }
        bool woken = false;
        for (int e = 0; e < ready; e++) {
            if (events[e].data.fd == thread->wake_fd) {
                woken = true;
                continue;
            }
            /* Found by its socket: a drop moves the last connection into the
             * dropped one's place, and closing it takes it out of the epoll set. */
            size_t i = thread_connection_of(thread, events[e].data.fd);
            if (i == thread->served)
                continue;
            thread->connections[i].last_ms = now_ms;
            if (!connection_take(thread, &thread->connections[i]))
                connection_drop(thread, i);
        }
        thread_close_idle(thread, now_ms);
        if (woken)
            thread_take_incoming(thread);
    }
    return NULL;
}

/* Stops and joins the threads that were started, and frees every thread's resources. */
static void threads_stop(struct stream *stream)
{
    atomic_store(&stream->stopping, true);
    for (int i = 0; i < STREAM_THREADS; i++) {
        struct stream_thread *thread = &stream->threads[i];
        uint64_t one = 1;
        if (thread->started) {
            if (write(thread->wake_fd, &one, sizeof(one)) < 0)
                log_warn("tile stream: cannot wake a thread: %s", strerror(errno));
            pthread_join(thread->thread, NULL);
        }
        thread_take_incoming(thread); /* what was handed over but not taken up */
        while (thread->served > 0)
            connection_drop(thread, thread->served - 1);
        if (thread->wake_fd >= 0)
            close(thread->wake_fd);
        if (thread->epoll_fd >= 0)
            close(thread->epoll_fd);
        free(thread->write_buffer.bytes);
        thread->write_buffer.bytes = NULL;
        thread->write_buffer.cap = 0;
        pthread_mutex_destroy(&thread->lock);
    }
}

/* Starts the threads with every signal blocked: signals are the loop's. */
static int threads_start(struct stream *stream)
{
    sigset_t all, old;
    int rc = 0;

    for (int i = 0; i < STREAM_THREADS; i++) {
        struct stream_thread *thread = &stream->threads[i];
        thread->stream = stream;
        thread->write_buffer.huge_pages = stream->context->stream_huge_pages;
        pthread_mutex_init(&thread->lock, NULL);
        thread->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        thread->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event wake = {.events = EPOLLIN, .data.fd = thread->wake_fd};
        if ((thread->wake_fd < 0 || thread->epoll_fd < 0 ||
             epoll_ctl(thread->epoll_fd, EPOLL_CTL_ADD, thread->wake_fd, &wake) != 0) &&
            rc == 0)
            rc = -errno;
    }
    if (rc != 0)
        return rc;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (int i = 0; i < STREAM_THREADS && rc == 0; i++) {
        struct stream_thread *thread = &stream->threads[i];
        rc = -pthread_create(&thread->thread, NULL, thread_main, thread);
        thread->started = rc == 0;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* Listens on the local Unix socket; without it (logged) mounts here use TCP. */
static void local_listen(struct stream *stream)
{
    struct sockaddr_un address;
    snprintf(stream->local_name, sizeof(stream->local_name), STREAM_LOCAL_PREFIX "%ld.%u",
             (long)getpid(), (unsigned)stream->port);
    socklen_t len = util_abstract_address(stream->local_name, &address);
    stream->local_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (stream->local_fd >= 0 && bind(stream->local_fd, (struct sockaddr *)&address, len) == 0 &&
        listen(stream->local_fd, 64) == 0)
        return;
    log_warn("tile stream: no local socket @%s (%s); mounts on this machine use TCP",
             stream->local_name, strerror(errno));
    if (stream->local_fd >= 0)
        close(stream->local_fd);
    stream->local_fd = -1;
    stream->local_name[0] = '\0';
}

int stream_open(const char *endpoint, struct nodehandlers_context *context, struct stream **streamp)
{
    struct sockaddr_in address = {.sin_family = AF_INET};
    socklen_t address_len = sizeof(address);
    int one = 1;
    int rc;

    *streamp = NULL;
    rc = util_endpoint_ipv4(endpoint, &address.sin_addr);
    if (rc != 0)
        return rc;
    struct stream *stream = calloc(1, sizeof(*stream));
    if (!stream)
        return -ENOMEM;
    stream->context = context;
    stream->local_fd = -1;
    atomic_store(&stream->idle_ms, STREAM_IDLE_MS);
    pthread_mutex_init(&stream->peers_lock, NULL);
    for (int i = 0; i < STREAM_THREADS; i++)
        stream->threads[i].wake_fd = stream->threads[i].epoll_fd = -1;
    stream->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (stream->listen_fd < 0 ||
        setsockopt(stream->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(stream->listen_fd, (struct sockaddr *)&address, sizeof(address)) != 0 ||
        listen(stream->listen_fd, 64) != 0 ||
        getsockname(stream->listen_fd, (struct sockaddr *)&address, &address_len) != 0) {
        rc = -errno;
        if (stream->listen_fd >= 0)
            close(stream->listen_fd);
        pthread_mutex_destroy(&stream->peers_lock);
        free(stream);
        return rc;
    }
    stream->port = ntohs(address.sin_port);
    local_listen(stream);
    rc = threads_start(stream);
    if (rc != 0) {
        threads_stop(stream);
        close(stream->listen_fd);
        if (stream->local_fd >= 0)
            close(stream->local_fd);
        pthread_mutex_destroy(&stream->peers_lock);
        free(stream);
        return rc;
    }
    *streamp = stream;
    return 0;
}

void stream_close(struct stream **streamp)
{
    struct stream *stream = streamp ? *streamp : NULL;
    if (!stream)
        return;
    threads_stop(stream);
    close(stream->listen_fd);
    if (stream->local_fd >= 0)
        close(stream->local_fd);
    pthread_mutex_destroy(&stream->peers_lock);
    free(stream);
    *streamp = NULL;
}

uint16_t stream_port(const struct stream *stream) { return stream->port; }

const char *stream_local_name(const struct stream *stream)
{
    return stream->local_name;
}

size_t stream_poll_items(const struct stream *stream, zmq_pollitem_t *items, size_t cap)
{
    size_t count = 0;
    if (count < cap)
        items[count++] = (zmq_pollitem_t){NULL, stream->listen_fd, ZMQ_POLLIN, 0};
    if (count < cap && stream->local_fd >= 0)
        items[count++] = (zmq_pollitem_t){NULL, stream->local_fd, ZMQ_POLLIN, 0};
    return count;
}

size_t stream_connections(const struct stream *stream)
{
    size_t total = 0;
    for (int i = 0; i < STREAM_THREADS; i++)
        total += atomic_load(&stream->threads[i].count);
    return total;
}

/* The thread with the fewest connections, or NULL when every one is full. */
static struct stream_thread *least_busy_thread(struct stream *stream)
{
    struct stream_thread *best = NULL;
    size_t best_count = STREAM_THREAD_CONNECTIONS;
    for (int i = 0; i < STREAM_THREADS; i++) {
        size_t count = atomic_load(&stream->threads[i].count);
        if (count < best_count) {
            best = &stream->threads[i];
            best_count = count;
        }
    }
    return best;
}

/* Hands connection fd of peer to a thread; false (fd still the caller's) when all are full. */
static bool hand_over(struct stream *stream, int fd, uint64_t peer)
{
    struct stream_thread *thread = least_busy_thread(stream);
    uint64_t one = 1;
    if (!thread)
        return false;
    atomic_fetch_add(&thread->count, 1);
    pthread_mutex_lock(&thread->lock);
    thread->incoming[thread->incoming_count++] = (struct stream_incoming){.fd = fd, .peer = peer};
    pthread_mutex_unlock(&thread->lock);
    if (write(thread->wake_fd, &one, sizeof(one)) < 0)
        log_warn("tile stream: cannot wake a thread: %s", strerror(errno));
    return true;
}

/*
 * Logs a refused connection: the first ones, then at each power of two, so
 * a client that keeps knocking cannot flood the log.
 */
__attribute__((format(printf, 2, 3))) static void refusal_log(struct stream *stream,
                                                              const char *format, ...)
{
    char text[256];
    va_list args;
    stream->refusals++;
    if (stream->refusals > 8 && (stream->refusals & (stream->refusals - 1)) != 0)
        return;
    va_start(args, format);
    vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    log_warn("tile stream: refused %s (%llu refused so far)", text,
             (unsigned long long)stream->refusals);
}

/*
 * Who is on the other end of accepted connection fd, into *peer; false
 * (logged) when this datanode does not serve it: see the file comment.
 */
static bool peer_trusted(struct stream *stream, int fd, bool tcp, const struct sockaddr_in *address,
                         uint64_t *peer)
{
    if (tcp) {
        char text[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &address->sin_addr, text, sizeof(text));
        *peer = STREAM_PEER_TCP | ntohl(address->sin_addr.s_addr);
        if (stream->tcp_refused) {
            refusal_log(stream,
                        "a TCP connection from %s:%u: with keys, only the local socket serves "
                        "streams (its mount goes over ZeroMQ)",
                        text, (unsigned)ntohs(address->sin_port));
            return false;
        }
        return true;
    }
    struct ucred credentials;
    socklen_t len = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &len) != 0) {
        refusal_log(stream, "a local connection whose credentials are unknown (%s)",
                    strerror(errno));
        return false;
    }
    if (credentials.uid != geteuid() && credentials.uid != 0) {
        refusal_log(stream,
                    "a local connection from process %ld of uid %u: only uid %u (this "
                    "datanode's) or root may use its tile stream",
                    (long)credentials.pid, (unsigned)credentials.uid, (unsigned)geteuid());
        return false;
    }
    *peer = STREAM_PEER_LOCAL | (uint32_t)credentials.pid;
    return true;
}

/* Accepts every connection waiting on listener listen_fd (tcp: TCP's). */
static void accept_all(struct stream *stream, int listen_fd, bool tcp)
{
    struct timeval timeout = {.tv_sec = STREAM_TIMEOUT_MS / 1000,
                              .tv_usec = (STREAM_TIMEOUT_MS % 1000) * 1000};
    int one = 1;

    for (;;) {
        struct sockaddr_in address = {.sin_family = AF_INET};
        socklen_t address_len = sizeof(address);
        uint64_t peer = 0;
        int fd = accept4(listen_fd, tcp ? (struct sockaddr *)&address : NULL,
                         tcp ? &address_len : NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                log_warn("tile stream: accept failed: %s", strerror(errno));
            return;
        }
        if (!peer_trusted(stream, fd, tcp, &address, &peer)) {
            close(fd);
            continue;
        }
        /* Answers go out, and a write's bytes come in, blocking for at most
         * the timeout; requests are taken without waiting (MSG_DONTWAIT). */
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout)) != 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0 ||
            (tcp && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)) {
            close(fd);
            continue;
        }
        if (!peer_take(stream, peer)) {
            refusal_log(stream,
                        "a connection: its %s already holds %d (the rest stay free for others; "
                        "it goes over ZeroMQ)",
                        tcp ? "address" : "process", STREAM_MAX_PER_PEER);
            close(fd);
            continue;
        }
        if (!hand_over(stream, fd, peer)) {
            peer_release(stream, peer);
            refusal_log(stream, "a connection: %d connections already (its mount goes over ZeroMQ)",
                        STREAM_MAX_CONNECTIONS);
            close(fd);
        }
    }
}

void stream_refuse_tcp(struct stream *stream)
{
    stream->tcp_refused = true;
}

void stream_set_idle_ms(struct stream *stream, int idle_ms)
{
    atomic_store(&stream->idle_ms, idle_ms > 0 ? idle_ms : STREAM_IDLE_MS);
}

void stream_serve(struct stream *stream, const zmq_pollitem_t *items, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (items[i].revents & ZMQ_POLLIN)
            accept_all(stream, items[i].fd, items[i].fd == stream->listen_fd);
    }
}
