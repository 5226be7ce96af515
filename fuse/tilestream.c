/*
 * @file tilestream.c
 * See tilestream.h. Ports: a small table under a lock, each entry with an
 * epoch that grows when the port is asked again, so a thread's connection
 * made to an older port is closed rather than reused. Thread state: a
 * pthread key whose destructor closes the thread's pipe and connections;
 * the states also sit in a list, so tilestream_destroy() frees those of
 * threads still alive (the main thread's).
 */
#include "tilestream.h"

#include "log.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TILESTREAM_MAX_NODES 256

struct stream_port {
    uint32_t node;
    uint16_t port; /* 0: none (or not asked yet) */
    uint32_t epoch;
    struct in_addr address;
    char local[TS_STREAM_LOCAL_MAX]; /* the node's local socket, "": none */
    int64_t ask_after_ms; /* with port 0: when to ask again */
    bool unsplicable;     /* its replies do not fit a pipe: never asked again */
};

struct stream_connection {
    uint32_t node;
    uint32_t epoch;
    int fd;
    bool local; /* a Unix socket, not TCP */
};

struct stream_thread {
    struct tilestream *owner;
    struct stream_thread *prev, *next;
    int pipe_fds[2];  /* a read reply's bytes, for libfuse */
    int send_pipe[2]; /* a write's bytes on their way to a socket */
    size_t count;
    struct stream_connection connections[TILESTREAM_THREAD_NODES];
};

struct tilestream {
    struct nodedir *nodes;
    int timeout_ms;
    pthread_key_t key;
    /* Counted for the log at the end: reads (those spliced into a pipe
     * among them) and writes that went over a stream, their bytes,
     * requests sent to ZeroMQ instead, and reads broken mid-answer. */
    atomic_uint_fast64_t reads, spliced, bytes_read, writes, bytes_written, declined, broken;
    /* Connections made to local sockets and over TCP. */
    atomic_uint_fast64_t local_connections, tcp_connections;
    pthread_mutex_t lock; /* protects everything below */
    struct stream_port ports[TILESTREAM_MAX_NODES];
    size_t port_count;
    struct stream_thread *threads;
};

/* A pipe of TILESTREAM_PIPE_BYTES: 0, or a negative errno (fds both -1). */
static int make_pipe(int fds[2])
{
    return util_pipe_open(fds, (int)TILESTREAM_PIPE_BYTES, true);
}

static bool can_make_pipe(void)
{
    int fds[2];
    if (make_pipe(fds) != 0)
        return false;
    close(fds[0]);
    close(fds[1]);
    return true;
}

#define PIPE_MAX_SIZE_FILE "/proc/sys/fs/pipe-max-size"

bool tilestream_setup(void)
{
    unsigned long limit = 0;
    if (can_make_pipe())
        return true;
    FILE *file = fopen(PIPE_MAX_SIZE_FILE, "r");
    if (file) {
        if (fscanf(file, "%lu", &limit) != 1)
            limit = 0;
        fclose(file);
    }
    if (geteuid() == 0 && limit > 0 && limit < TILESTREAM_PIPE_BYTES) {
        file = fopen(PIPE_MAX_SIZE_FILE, "w");
        bool written = file && fprintf(file, "%u\n", TILESTREAM_PIPE_BYTES) > 0;
        if (file && fclose(file) != 0)
            written = false;
        if (written && can_make_pipe()) {
            log_info("raised %s from %lu to %u bytes for the tile streams "
                     "(--tile-streams 0 leaves it alone)",
                     PIPE_MAX_SIZE_FILE, limit, TILESTREAM_PIPE_BYTES);
            return true;
        }
    }
    log_info("tile streams off: they need pipes of %u bytes (%s is %lu; raise it as root, "
             "or run the mount as root); tiles go over ZeroMQ",
             TILESTREAM_PIPE_BYTES, PIPE_MAX_SIZE_FILE, limit);
    return false;
}

static void thread_free(struct stream_thread *thread)
{
    util_pipe_close(thread->pipe_fds);
    util_pipe_close(thread->send_pipe);
    for (size_t i = 0; i < thread->count; i++)
        close(thread->connections[i].fd);
    free(thread);
}

/* The key's destructor: a thread that read ends. */
static void thread_exit(void *arg)
{
    struct stream_thread *thread = arg;
    struct tilestream *streams = thread->owner;
    pthread_mutex_lock(&streams->lock);
    if (thread->prev)
        thread->prev->next = thread->next;
    else
        streams->threads = thread->next;
    if (thread->next)
        thread->next->prev = thread->prev;
    pthread_mutex_unlock(&streams->lock);
    thread_free(thread);
}

struct tilestream *tilestream_new(struct nodedir *nodes, int timeout_ms)
{
    struct tilestream *streams = calloc(1, sizeof(*streams));
    if (!streams)
        return NULL;
    if (pthread_key_create(&streams->key, thread_exit) != 0) {
        free(streams);
        return NULL;
    }
    streams->nodes = nodes;
    streams->timeout_ms = timeout_ms;
    pthread_mutex_init(&streams->lock, NULL);
    return streams;
}

void tilestream_destroy(struct tilestream **streamsp)
{
    struct tilestream *streams = streamsp ? *streamsp : NULL;
    if (!streams)
        return;
    log_info("tile streams: %llu reads (%llu spliced, %llu bytes), %llu writes (%llu bytes), "
             "%llu sent over ZeroMQ instead, %llu reads broken mid-answer; connections: "
             "%llu local, %llu TCP",
             (unsigned long long)streams->reads, (unsigned long long)streams->spliced,
             (unsigned long long)streams->bytes_read, (unsigned long long)streams->writes,
             (unsigned long long)streams->bytes_written, (unsigned long long)streams->declined,
             (unsigned long long)streams->broken, (unsigned long long)streams->local_connections,
             (unsigned long long)streams->tcp_connections);
    pthread_key_delete(streams->key);
    while (streams->threads) {
        struct stream_thread *thread = streams->threads;
        streams->threads = thread->next;
        thread_free(thread);
    }
    pthread_mutex_destroy(&streams->lock);
    free(streams);
    *streamsp = NULL;
}

static struct stream_thread *thread_state(struct tilestream *streams)
{
    struct stream_thread *thread = pthread_getspecific(streams->key);
    if (thread)
        return thread;
    thread = calloc(1, sizeof(*thread));
    if (!thread)
        return NULL;
    thread->owner = streams;
    thread->pipe_fds[0] = thread->pipe_fds[1] = -1;
    thread->send_pipe[0] = thread->send_pipe[1] = -1;
    if (pthread_setspecific(streams->key, thread) != 0) {
        free(thread);
        return NULL;
    }
    pthread_mutex_lock(&streams->lock);
    thread->next = streams->threads;
    if (thread->next)
        thread->next->prev = thread;
    streams->threads = thread;
    pthread_mutex_unlock(&streams->lock);
    return thread;
}

int tilestream_pipe(struct tilestream *streams, int *read_fd, int *write_fd)
{
    struct stream_thread *thread = thread_state(streams);
    if (!thread)
        return -ENOMEM;
    if (thread->pipe_fds[0] < 0) {
        int error = make_pipe(thread->pipe_fds);
        if (error != 0)
            return error;
    }
    *read_fd = thread->pipe_fds[0];
    *write_fd = thread->pipe_fds[1];
    return 0;
}

void tilestream_pipe_reset(struct tilestream *streams)
{
    struct stream_thread *thread = pthread_getspecific(streams->key);
    if (thread)
        util_pipe_close(thread->pipe_fds);
}

/* The node's entry (made when missing); NULL if the table is full. Lock held. */
static struct stream_port *port_entry(struct tilestream *streams, uint32_t node)
{
    for (size_t i = 0; i < streams->port_count; i++)
        if (streams->ports[i].node == node)
            return &streams->ports[i];
    if (streams->port_count == TILESTREAM_MAX_NODES)
        return NULL;
    struct stream_port *entry = &streams->ports[streams->port_count++];
    *entry = (struct stream_port){.node = node};
    return entry;
}

/*
 * Asks datanode `node` for its stream's port (0 when it has none) and the
 * name of its local socket (local, TS_STREAM_LOCAL_MAX bytes; "" when none).
 */
static uint16_t port_ask(struct tilestream *streams, uint32_t node, struct in_addr *address,
                         char *local)
{
    struct ts_tile_stream_rep answer;
    struct rpc_reply reply;
    uint16_t port = 0;

    local[0] = '\0';
    if (nodedir_address(streams->nodes, node, address) != 0)
        return 0;
    int status = nodedir_call(streams->nodes, node, TS_OP_TILE_STREAM, NULL, 0, NULL, 0, &reply);
    if (status == TS_OK &&
        ts_tile_stream_rep_decode(&answer, reply.payload, reply.payload_len) == 0 &&
        answer.port > 0 && answer.port <= UINT16_MAX) {
        port = (uint16_t)answer.port;
        /* A name with a NUL in it, or too long, is not used: TCP then. */
        if (answer.local.len < TS_STREAM_LOCAL_MAX &&
            !memchr(answer.local.ptr, '\0', answer.local.len)) {
            memcpy(local, answer.local.ptr, answer.local.len);
            local[answer.local.len] = '\0';
        }
    }
    rpc_reply_release(&reply);
    return port;
}

/*
 * The node's port, address and epoch, asking the node when it is time;
 * false when it has no stream to use now.
 */
static bool port_get(struct tilestream *streams, uint32_t node, struct stream_port *out)
{
    int64_t now = util_monotonic_ms();
    pthread_mutex_lock(&streams->lock);
    struct stream_port *entry = port_entry(streams, node);
    bool ask = entry && entry->port == 0 && !entry->unsplicable && now >= entry->ask_after_ms;
    if (ask)
        entry->ask_after_ms = now + TILESTREAM_RETRY_MS; /* one thread asks */
    if (entry)
        *out = *entry;
    pthread_mutex_unlock(&streams->lock);
    if (!entry)
        return false;
    if (!ask)
        return out->port != 0;

    struct in_addr address;
    char local[TS_STREAM_LOCAL_MAX];
    uint16_t port = port_ask(streams, node, &address, local);
    pthread_mutex_lock(&streams->lock);
    entry = port_entry(streams, node);
    if (entry && port != 0) {
        entry->port = port;
        entry->address = address;
        memcpy(entry->local, local, sizeof(entry->local));
        entry->epoch++;
        *out = *entry;
    }
    pthread_mutex_unlock(&streams->lock);
    return entry && port != 0;
}

/* The stream of `node` failed: ask for its port again a while later. */
static void port_failed(struct tilestream *streams, uint32_t node, uint32_t epoch)
{
    pthread_mutex_lock(&streams->lock);
    struct stream_port *entry = port_entry(streams, node);
    if (entry && entry->epoch == epoch && entry->port != 0) {
        entry->port = 0;
        entry->ask_after_ms = util_monotonic_ms() + TILESTREAM_RETRY_MS;
    }
    pthread_mutex_unlock(&streams->lock);
}

/*
 * A reply from `node` did not fit the pipe: its bytes come in pieces too
 * small (a network link without receive offloads). Streams from it would
 * keep failing so: it is read over ZeroMQ from now on.
 */
static void port_unsplicable(struct tilestream *streams, uint32_t node)
{
    pthread_mutex_lock(&streams->lock);
    struct stream_port *entry = port_entry(streams, node);
    bool first = entry && !entry->unsplicable;
    if (entry) {
        entry->unsplicable = true;
        entry->port = 0;
    }
    pthread_mutex_unlock(&streams->lock);
    if (first)
        log_warn("datanode %u's tile stream delivers its bytes in pieces too small to "
                 "splice a tile through a pipe; reading it over ZeroMQ from now on",
                 node);
}

static void connection_close(struct stream_thread *thread, size_t index)
{
    close(thread->connections[index].fd);
    thread->connections[index] = thread->connections[--thread->count];
}

/* A connected socket of `family` with the timeouts set, or -1. */
static int connect_socket(int family, const struct sockaddr *address, socklen_t len, int timeout_ms)
{
    struct timeval timeout = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    int one = 1;
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* The send timeout bounds connect() too. */
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0 ||
        (family == AF_INET && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) ||
        connect(fd, address, len) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/*
 * Connects to the node's stream: its local socket when it has one (the
 * kernel hands pages across a Unix socket for about half the CPU of
 * loopback TCP), else, or when that fails, its TCP port. *local says which.
 */
static int connect_to(const struct stream_port *port, int timeout_ms, bool *local)
{
    *local = false;
    if (port->local[0] != '\0') {
        struct sockaddr_un address;
        socklen_t len = util_abstract_address(port->local, &address);
        int fd = connect_socket(AF_UNIX, (struct sockaddr *)&address, len, timeout_ms);
        if (fd >= 0) {
            *local = true;
            return fd;
        }
    }
    struct sockaddr_in address = {
        .sin_family = AF_INET, .sin_port = htons(port->port), .sin_addr = port->address};
    return connect_socket(AF_INET, (struct sockaddr *)&address, sizeof(address), timeout_ms);
}

/* The thread's connection to the node's stream (index into connections), or -1. */
static int connection_get(struct tilestream *streams, struct stream_thread *thread,
                          const struct stream_port *port, bool *reused)
{
    for (size_t i = 0; i < thread->count; i++) {
        if (thread->connections[i].node != port->node)
            continue;
        if (thread->connections[i].epoch == port->epoch) {
            *reused = true;
            return (int)i;
        }
        connection_close(thread, i);
        break;
    }
    *reused = false;
    if (thread->count == TILESTREAM_THREAD_NODES)
        connection_close(thread, 0);
    bool local = false;
    int fd = connect_to(port, streams->timeout_ms, &local);
    if (fd < 0)
        return -1;
    atomic_fetch_add(local ? &streams->local_connections : &streams->tcp_connections, 1);
    thread->connections[thread->count] = (struct stream_connection){
        .node = port->node, .epoch = port->epoch, .fd = fd, .local = local};
    return (int)thread->count++;
}

/* Receives exactly len bytes; false on a failure, a timeout or the end. */
static bool receive_all(int fd, uint8_t *buf, size_t len)
{
    size_t have = 0;
    while (have < len) {
        ssize_t got = recv(fd, buf + have, len - have, MSG_WAITALL);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        have += (size_t)got;
    }
    return true;
}

/*
 * Moves len bytes from the socket into the pipe: 0, -EAGAIN when the pipe
 * is full (a reply must fit whole), -EIO on a failure, a timeout or the
 * end. A Unix socket (`local`) does not wait for bytes by itself.
 */
static int splice_all(int fd, int pipe_fd, size_t len, bool local, int timeout_ms)
{
    ssize_t moved = util_splice_from_socket(fd, pipe_fd, len, local, timeout_ms);
    return moved < 0 ? -EIO : (size_t)moved < len ? -EAGAIN : 0;
}

/*
 * Sends len bytes of memory to the socket without copying them: vmsplice()
 * puts references to their pages in the thread's send pipe, splice() moves
 * them on. The caller keeps the bytes unchanged until the answer comes (the
 * datanode copies them into its file before it answers). 0, or -EIO (the
 * send pipe may hold some then: it is thrown away).
 */
static int send_spliced(struct stream_thread *thread, int fd, const uint8_t *data, size_t len)
{
    if (thread->send_pipe[0] < 0 && make_pipe(thread->send_pipe) != 0)
        return -EIO;
    while (len > 0) {
        struct iovec piece = {.iov_base = (void *)data, .iov_len = len};
        ssize_t in = vmsplice(thread->send_pipe[1], &piece, 1, 0);
        if (in < 0 && errno == EINTR)
            continue;
        if (in <= 0)
            goto failed;
        for (size_t left = (size_t)in; left > 0;) {
            ssize_t out = splice(thread->send_pipe[0], NULL, fd, NULL, left,
                                 (size_t)in < len ? SPLICE_F_MORE : 0);
            if (out < 0 && errno == EINTR)
                continue;
            if (out <= 0)
                goto failed;
            left -= (size_t)out;
        }
        data += in;
        len -= (size_t)in;
    }
    return 0;
failed:
    util_pipe_close(thread->send_pipe);
    return -EIO;
}

/*
 * One request over the stream of `node`: a read, its bytes received into
 * `into` or (NULL) spliced into the thread's pipe, or a write
 * (TS_STREAM_WRITE) of request->length bytes of `data`. As
 * tilestream_read() for all.
 */
static int stream_call(struct tilestream *streams, uint32_t node,
                       const struct ts_tile_read_req *request, enum ts_stream_kind kind,
                       const uint8_t *data, uint32_t crc, uint8_t *into, int32_t *status,
                       uint32_t *got)
{
    struct stream_thread *thread = thread_state(streams);
    uint8_t head[TS_STREAM_REQ_BYTES > TS_STREAM_REP_BYTES ? TS_STREAM_REQ_BYTES
                                                           : TS_STREAM_REP_BYTES];
    struct stream_port port;
    bool write = kind == TS_STREAM_WRITE;

    *status = TS_OK;
    *got = 0;
    /* Only a datanode on this machine: over loopback a tile comes in a few
     * big pieces, across a network link in one piece per packet, too many
     * for a pipe (and a network card's copy is the one copy anyway). */
    if (!thread || (!write && !into && thread->pipe_fds[1] < 0) ||
        !nodedir_is_local(streams->nodes, node) || !port_get(streams, node, &port))
        return -EAGAIN;
    /* A kept connection may have been closed by a datanode that restarted
     * or dropped it: one more try on a new one. */
    for (int attempt = 0; attempt < 2; attempt++) {
        bool reused = false;
        int index = connection_get(streams, thread, &port, &reused);
        if (index < 0)
            break;
        int fd = thread->connections[index].fd;
        ts_stream_req_encode(request, kind, crc, head);
        if (send(fd, head, TS_STREAM_REQ_BYTES, MSG_NOSIGNAL | (write ? MSG_MORE : 0)) !=
                TS_STREAM_REQ_BYTES ||
            (write && send_spliced(thread, fd, data, request->length) != 0) ||
            !receive_all(fd, head, TS_STREAM_REP_BYTES)) {
            connection_close(thread, (size_t)index);
            if (reused)
                continue;
            break;
        }
        uint32_t data_bytes = 0;
        if (ts_stream_rep_decode(status, &data_bytes, head) != TS_OK ||
            data_bytes > (write ? 0 : request->length)) {
            log_warn("tile stream of datanode %u sent a malformed answer; going over ZeroMQ "
                     "for a while",
                     node);
            connection_close(thread, (size_t)index);
            break;
        }
        /* A throttled datanode's disk is timed over ZeroMQ only: rest its stream. */
        if (*status == TS_ERR_BUSY)
            port_failed(streams, node, port.epoch);
        int error = 0;
        if (into && !receive_all(fd, into, data_bytes))
            error = -EIO;
        else if (!write && !into)
            error = splice_all(fd, thread->pipe_fds[1], data_bytes,
                               thread->connections[index].local, streams->timeout_ms);
        if (error != 0) {
            connection_close(thread, (size_t)index);
            if (error == -EAGAIN)
                port_unsplicable(streams, node);
            else
                port_failed(streams, node, port.epoch);
            return -EPIPE;
        }
        *got = data_bytes;
        return 0;
    }
    port_failed(streams, node, port.epoch);
    return -EAGAIN;
}

/* Counts a read for the log at the end. */
static int count_read(struct tilestream *streams, int error, int32_t status, uint32_t got)
{
    if (error == 0 && status == TS_OK) {
        atomic_fetch_add(&streams->reads, 1);
        atomic_fetch_add(&streams->bytes_read, got);
    } else if (error == -EPIPE) {
        atomic_fetch_add(&streams->broken, 1);
    } else {
        atomic_fetch_add(&streams->declined, 1);
    }
    return error;
}

static enum ts_stream_kind read_kind(bool reader_keeps)
{
    return reader_keeps ? TS_STREAM_READ_KEPT : TS_STREAM_READ;
}

int tilestream_read(struct tilestream *streams, uint32_t node,
                    const struct ts_tile_read_req *request, bool reader_keeps, int32_t *status,
                    uint32_t *got)
{
    int error =
        stream_call(streams, node, request, read_kind(reader_keeps), NULL, 0, NULL, status, got);
    if (error == 0 && *status == TS_OK)
        atomic_fetch_add(&streams->spliced, 1);
    return count_read(streams, error, *status, *got);
}

int tilestream_read_into(struct tilestream *streams, uint32_t node,
                         const struct ts_tile_read_req *request, bool reader_keeps, void *buf,
                         int32_t *status, uint32_t *got)
{
    int error =
        stream_call(streams, node, request, read_kind(reader_keeps), NULL, 0, buf, status, got);
    /* Nothing of a reply in memory outlives a failure: ZeroMQ reads it again. */
    return count_read(streams, error == -EPIPE ? -EAGAIN : error, *status, *got);
}

int tilestream_write(struct tilestream *streams, uint32_t node,
                     const struct ts_tile_write_req *request, const void *data, uint32_t length,
                     int32_t *status)
{
    struct ts_tile_read_req range = {.ino = request->ino,
                                     .tile = request->tile,
                                     .version = request->version,
                                     .offset = request->offset,
                                     .length = length,
                                     .token_expiry = request->token_expiry,
                                     .token = request->token};
    uint32_t got = 0;
    if (length == 0)
        return -EAGAIN; /* nothing to splice: ZeroMQ validates */
    int error = stream_call(streams, node, &range, TS_STREAM_WRITE, data, request->crc, NULL,
                            status, &got);
    if (error == 0 && *status == TS_OK) {
        atomic_fetch_add(&streams->writes, 1);
        atomic_fetch_add(&streams->bytes_written, length);
    } else {
        atomic_fetch_add(&streams->declined, 1);
    }
    return error == -EPIPE ? -EAGAIN : error;
}
