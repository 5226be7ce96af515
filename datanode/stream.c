/*
 * @file stream.c
 * See stream.h. Connections sit in an array in accept order; a request may
 * come in pieces, so each connection keeps the bytes of its next request
 * until all TS_STREAM_REQ_BYTES are there. Sockets are non-blocking for
 * receiving (a peer that sends half a request never stalls the loop) and
 * time out on sending.
 */
#include "stream.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Requests one connection may have served in one turn of the loop. */
#define STREAM_TURN_REQUESTS 8

struct stream_connection {
    int fd;
    size_t have; /* bytes of the next request received so far */
    uint8_t request[TS_STREAM_REQ_BYTES];
};

struct stream {
    int listen_fd;
    int pipe_fds[2]; /* writes go through it from a socket to a file */
    uint16_t port;
    size_t count;
    struct stream_connection connections[STREAM_MAX_CONNECTIONS];
};

/* A fresh pipe for writes: as large as this process may make it, up to a tile. */
static int stream_pipe(struct stream *stream)
{
    if (pipe2(stream->pipe_fds, O_CLOEXEC) != 0) {
        stream->pipe_fds[0] = stream->pipe_fds[1] = -1;
        return -errno;
    }
    (void)fcntl(stream->pipe_fds[0], F_SETPIPE_SZ, 1 << 20); /* else 64 KiB: more turns */
    return 0;
}

static void stream_pipe_close(struct stream *stream)
{
    for (int i = 0; i < 2; i++) {
        if (stream->pipe_fds[i] >= 0)
            close(stream->pipe_fds[i]);
        stream->pipe_fds[i] = -1;
    }
}

int stream_open(const char *endpoint, struct stream **streamp)
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
    stream->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (stream->listen_fd < 0 || stream_pipe(stream) != 0 ||
        setsockopt(stream->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(stream->listen_fd, (struct sockaddr *)&address, sizeof(address)) != 0 ||
        listen(stream->listen_fd, 64) != 0 ||
        getsockname(stream->listen_fd, (struct sockaddr *)&address, &address_len) != 0) {
        rc = -errno;
        if (stream->listen_fd >= 0)
            close(stream->listen_fd);
        stream_pipe_close(stream);
        free(stream);
        return rc;
    }
    stream->port = ntohs(address.sin_port);
    *streamp = stream;
    return 0;
}

static void stream_drop(struct stream *stream, size_t index)
{
    close(stream->connections[index].fd);
    stream->connections[index] = stream->connections[--stream->count];
}

void stream_close(struct stream **streamp)
{
    struct stream *stream = streamp ? *streamp : NULL;
    if (!stream)
        return;
    while (stream->count > 0)
        stream_drop(stream, stream->count - 1);
    close(stream->listen_fd);
    stream_pipe_close(stream);
    free(stream);
    *streamp = NULL;
}

uint16_t stream_port(const struct stream *stream) { return stream->port; }

size_t stream_poll_items(const struct stream *stream, zmq_pollitem_t *items, size_t cap)
{
    size_t used = 0;
    if (cap == 0)
        return 0;
    items[used++] = (zmq_pollitem_t){NULL, stream->listen_fd, ZMQ_POLLIN, 0};
    for (size_t i = 0; i < stream->count && used < cap; i++)
        items[used++] = (zmq_pollitem_t){NULL, stream->connections[i].fd, ZMQ_POLLIN, 0};
    return used;
}

static void stream_accept(struct stream *stream)
{
    struct timeval timeout = {.tv_sec = STREAM_TIMEOUT_MS / 1000,
                              .tv_usec = (STREAM_TIMEOUT_MS % 1000) * 1000};
    int one = 1;

    for (;;) {
        int fd = accept4(stream->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                log_warn("tile stream: accept failed: %s", strerror(errno));
            return;
        }
        if (stream->count == STREAM_MAX_CONNECTIONS) {
            log_warn("tile stream: %d connections already; refusing another (its mount "
                     "goes over ZeroMQ)",
                     STREAM_MAX_CONNECTIONS);
            close(fd);
            continue;
        }
        /* Answers go out, and a write's bytes come in, blocking for at most
         * the timeout; requests are taken without waiting (MSG_DONTWAIT). */
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout)) != 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0 ||
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
            close(fd);
            continue;
        }
        stream->connections[stream->count++] = (struct stream_connection){.fd = fd};
    }
}

/*
 * Serves what the connection sent, up to STREAM_TURN_REQUESTS requests (a
 * client that keeps sending waits for the next turn, so the loop's other
 * work goes on); false if it is to be closed.
 */
static bool stream_take(struct stream *stream, struct stream_connection *connection,
                        struct handlers_context *context)
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
        if (stream->pipe_fds[0] < 0 && stream_pipe(stream) != 0)
            return false;
        if (handlers_stream_request(context, connection->request, connection->fd,
                                    stream->pipe_fds) != 0) {
            stream_pipe_close(stream); /* it may hold a failed write's bytes */
            return false;
        }
        served++;
    }
    return true;
}

void stream_serve(struct stream *stream, const zmq_pollitem_t *items, size_t count,
                  struct handlers_context *context)
{
    if (count == 0)
        return;
    /* Item i is connection i - 1 (stream_poll_items). Last to first: a drop
     * moves the last connection, already served, into the dropped one's
     * place; new ones are accepted after. */
    for (size_t i = count - 1; i >= 1; i--) {
        if (items[i].revents & (ZMQ_POLLIN | ZMQ_POLLERR) &&
            !stream_take(stream, &stream->connections[i - 1], context))
            stream_drop(stream, i - 1);
    }
    if (items[0].revents & ZMQ_POLLIN)
        stream_accept(stream);
}
