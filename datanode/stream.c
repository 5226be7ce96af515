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
 * one over, the thread takes from it as it closes one.
 */
#include "stream.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Requests one connection may have served before its thread's others get a turn. */
#define STREAM_TURN_REQUESTS 8
#define STREAM_THREAD_CONNECTIONS (STREAM_MAX_CONNECTIONS / STREAM_THREADS)
/* A kept read's bytes are dropped at the connection's next request, or once
 * the thread has had nothing to do for this long (nodehandlers.h). */
#define STREAM_DROP_IDLE_MS 50

struct stream_connection {
    int fd;
    size_t have; /* bytes of the next request received so far */
    uint8_t request[TS_STREAM_REQ_BYTES];
    struct nodehandlers_drop_behind drop; /* the last kept read's bytes */
};

struct stream_thread {
    struct stream *stream;
    pthread_t thread;
    bool started;
    int wake_fd;     /* eventfd: connections handed over, or the stream stops */
    struct nodehandlers_write_buffer write_buffer; /* a write's bytes, before they are checked */
    atomic_size_t count;
    pthread_mutex_t lock; /* protects incoming and incoming_count */
    int incoming[STREAM_THREAD_CONNECTIONS];
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
    struct stream_thread threads[STREAM_THREADS];
};

static void connection_drop(struct stream_thread *thread, size_t index)
{
    nodehandlers_drop_behind(&thread->connections[index].drop, -1);
    close(thread->connections[index].fd);
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
    pthread_mutex_lock(&thread->lock);
    for (size_t i = 0; i < thread->incoming_count; i++)
        thread->connections[thread->served++] =
            (struct stream_connection){.fd = thread->incoming[i], .drop = {.fd = -1}};
    thread->incoming_count = 0;
    pthread_mutex_unlock(&thread->lock);
}

static void *thread_main(void *arg)
{
    struct stream_thread *thread = arg;
    struct pollfd items[1 + STREAM_THREAD_CONNECTIONS];

    while (!atomic_load(&thread->stream->stopping)) {
        bool drops_waiting = false;
        items[0] = (struct pollfd){.fd = thread->wake_fd, .events = POLLIN};
        for (size_t i = 0; i < thread->served; i++) {
            items[1 + i] = (struct pollfd){.fd = thread->connections[i].fd, .events = POLLIN};
            drops_waiting = drops_waiting || thread->connections[i].drop.fd >= 0;
        }
        size_t polled = thread->served;
        int ready = poll(items, 1 + polled, drops_waiting ? STREAM_DROP_IDLE_MS : -1);
        if (ready < 0) {
            if (errno == EINTR)
                continue;
            log_error("tile stream: poll failed: %s; this thread's connections close",
                      strerror(errno));
            break;
        }
        if (ready == 0) { /* idle: drop what the readers have acknowledged */
            for (size_t i = 0; i < polled; i++)
                nodehandlers_drop_behind(&thread->connections[i].drop, thread->connections[i].fd);
            continue;
        }
        /* Item i is connection i - 1. Last to first: a drop moves the last
         * connection, already served, into the dropped one's place. */
        for (size_t i = polled; i >= 1; i--) {
            if (items[i].revents & (POLLIN | POLLERR | POLLHUP) &&
                !connection_take(thread, &thread->connections[i - 1]))
                connection_drop(thread, i - 1);
        }
        if (items[0].revents & POLLIN)
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
        pthread_mutex_init(&thread->lock, NULL);
        thread->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (thread->wake_fd < 0 && rc == 0)
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
    for (int i = 0; i < STREAM_THREADS; i++)
        stream->threads[i].wake_fd = -1;
    stream->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (stream->listen_fd < 0 ||
        setsockopt(stream->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(stream->listen_fd, (struct sockaddr *)&address, sizeof(address)) != 0 ||
        listen(stream->listen_fd, 64) != 0 ||
        getsockname(stream->listen_fd, (struct sockaddr *)&address, &address_len) != 0) {
        rc = -errno;
        if (stream->listen_fd >= 0)
            close(stream->listen_fd);
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

/* Hands connection fd to a thread; false (fd still the caller's) when all are full. */
static bool hand_over(struct stream *stream, int fd)
{
    struct stream_thread *thread = least_busy_thread(stream);
    uint64_t one = 1;
    if (!thread)
        return false;
    atomic_fetch_add(&thread->count, 1);
    pthread_mutex_lock(&thread->lock);
    thread->incoming[thread->incoming_count++] = fd;
    pthread_mutex_unlock(&thread->lock);
    if (write(thread->wake_fd, &one, sizeof(one)) < 0)
        log_warn("tile stream: cannot wake a thread: %s", strerror(errno));
    return true;
}

/* Accepts every connection waiting on listener listen_fd (tcp: TCP's). */
static void accept_all(struct stream *stream, int listen_fd, bool tcp)
{
    struct timeval timeout = {.tv_sec = STREAM_TIMEOUT_MS / 1000,
                              .tv_usec = (STREAM_TIMEOUT_MS % 1000) * 1000};
    int one = 1;

    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                log_warn("tile stream: accept failed: %s", strerror(errno));
            return;
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
        if (!hand_over(stream, fd)) {
            log_warn("tile stream: %d connections already; refusing another (its mount "
                     "goes over ZeroMQ)",
                     STREAM_MAX_CONNECTIONS);
            close(fd);
        }
    }
}

void stream_serve(struct stream *stream, const zmq_pollitem_t *items, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (items[i].revents & ZMQ_POLLIN)
            accept_all(stream, items[i].fd, items[i].fd == stream->listen_fd);
    }
}
