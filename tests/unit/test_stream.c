/*
 * @file test_stream.c
 * Unit tests of the datanode's tile stream (stream.h, proto.h
 * TILE_STREAM): a real listener on loopback, real client sockets, real tile
 * files read and written, accepted by stream_serve() as the datanode's loop
 * does and served by the stream's threads, over TCP and over the local
 * (abstract Unix) socket, and the TILE_STREAM request through
 * nodehandlers_table. Also the stream's codecs and util_endpoint_ipv4(),
 * and who the stream serves: another uid on the local socket is refused
 * (a child of the test, as nobody, when the test runs as root), TCP once
 * refused, one process holds no more than its share of the slots, and a
 * silent connection is closed.
 * The test is the datanode's loop: it takes the handlers' lock to read the
 * counters or call a handler itself.
 */
#include "nodehandlers.h"
#include "crc32c.h"
#include "proto.h"
#include "status.h"
#include "stream.h"
#include "tilestore.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define TILE_BYTES (96u << 10)

struct fixture {
    char dir[PATH_MAX];
    struct tilestore *store;
    struct diskio *disk;
    struct fences *fences;
    struct stream *stream;
    struct nodehandlers_context context;
    uint8_t tile[TILE_BYTES];
};

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    struct fixture *fixture = calloc(1, sizeof(*fixture));
    const char *tmp = getenv("TMPDIR");
    if (!fixture)
        return -1;
    snprintf(fixture->dir, sizeof(fixture->dir), "%s/test_stream.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fixture->dir) || tilestore_open(fixture->dir, 0, &fixture->store) != 0 ||
        diskio_new(fixture->store, 0, &fixture->disk) != 0 ||
        fences_open(fixture->dir, &fixture->fences) != 0 ||
        pthread_mutex_init(&fixture->context.lock, NULL) != 0 ||
        stream_open("tcp://127.0.0.1:7777", &fixture->context, &fixture->stream) != 0)
        return -1;
    for (size_t i = 0; i < sizeof(fixture->tile); i++)
        fixture->tile[i] = (uint8_t)(i * 13 + (i >> 9));
    /* Tile (5, 1, 2): TILE_BYTES of a pattern. */
    if (tilestore_write(fixture->store, 5, 1, 2, 0, fixture->tile, sizeof(fixture->tile)) != 0)
        return -1;
    fixture->context.store = fixture->store;
    fixture->context.disk = fixture->disk;
    fixture->context.fences = fixture->fences;
    fixture->context.stream_port = stream_port(fixture->stream);
    fixture->context.stream_local = stream_local_name(fixture->stream);
    *state = fixture;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fixture = *state;
    stream_close(&fixture->stream);
    nodehandlers_stats_fini(&fixture->context.stats);
    pthread_mutex_destroy(&fixture->context.lock);
    fences_close(&fixture->fences);
    diskio_destroy(&fixture->disk);
    tilestore_close(&fixture->store);
    nftw(fixture->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fixture);
    return 0;
}

/* One turn of the datanode's loop: poll the stream's listeners, accept what waits. */
static void serve_once(struct fixture *fixture, int timeout_ms)
{
    zmq_pollitem_t items[STREAM_POLL_ITEMS];
    size_t count = stream_poll_items(fixture->stream, items, STREAM_POLL_ITEMS);
    assert_true(zmq_poll(items, (int)count, timeout_ms) >= 0);
    stream_serve(fixture->stream, items, count);
}

/* The counters as they stand, read under the handlers' lock. */
static struct nodehandlers_stats stats_of(struct fixture *fixture)
{
    pthread_mutex_lock(&fixture->context.lock);
    struct nodehandlers_stats stats = fixture->context.stats;
    pthread_mutex_unlock(&fixture->context.lock);
    return stats;
}

/* Calls handler `op` as the loop does: under the handlers' lock. */
static int call_handler(struct fixture *fixture, uint16_t op, const struct rpc_request *request,
                        struct rpc_response *response)
{
    pthread_mutex_lock(&fixture->context.lock);
    int status = nodehandlers_table[op](&fixture->context, request, response);
    pthread_mutex_unlock(&fixture->context.lock);
    return status;
}

/* A client connection, accepted by the stream. */
static int client_connect(struct fixture *fixture)
{
    struct sockaddr_in address = {.sin_family = AF_INET,
                                  .sin_port = htons(stream_port(fixture->stream))};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int buffer = 1 << 20; /* room for a whole answer: the test reads it after serving */
    assert_true(fd >= 0);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer)), 0);
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&address, sizeof(address)), 0);
    serve_once(fixture, 1000); /* accepts it */
    return fd;
}

static void send_head(int fd, enum ts_stream_kind kind, uint64_t ino, uint64_t tile,
                      uint64_t version, uint32_t offset, uint32_t length, uint32_t crc)
{
    struct ts_tile_read_req request = {
        .ino = ino, .tile = tile, .version = version, .offset = offset, .length = length};
    uint8_t bytes[TS_STREAM_REQ_BYTES];
    ts_stream_req_encode(&request, kind, crc, bytes);
    assert_int_equal(send(fd, bytes, sizeof(bytes), 0), (ssize_t)sizeof(bytes));
}

static void send_request(int fd, uint64_t ino, uint64_t tile, uint64_t version, uint32_t offset,
                         uint32_t length)
{
    send_head(fd, TS_STREAM_READ, ino, tile, version, offset, length, 0);
}

/* A write's head and its bytes (all sent before the datanode serves it). */
static void send_write(int fd, uint64_t ino, uint64_t tile, uint64_t version, uint32_t offset,
                       const uint8_t *data, uint32_t length)
{
    send_head(fd, TS_STREAM_WRITE, ino, tile, version, offset, length, crc32c(0, data, length));
    assert_int_equal(send(fd, data, length, 0), (ssize_t)length);
}

static void receive_exactly(int fd, uint8_t *buf, size_t len)
{
    size_t have = 0;
    while (have < len) {
        ssize_t got = recv(fd, buf + have, len - have, 0);
        assert_true(got > 0);
        have += (size_t)got;
    }
}

/* Serves and reads one answer: its status, and its bytes into data. */
static int32_t answer(struct fixture *fixture, int fd, uint8_t *data, uint32_t *data_bytes)
{
    uint8_t head[TS_STREAM_REP_BYTES];
    int32_t status = -1;
    (void)fixture; /* served by the stream's threads */
    receive_exactly(fd, head, sizeof(head));
    assert_int_equal(ts_stream_rep_decode(&status, data_bytes, head), TS_OK);
    if (*data_bytes > 0)
        receive_exactly(fd, data, *data_bytes);
    return status;
}

/* True when the datanode closed the connection. */
static bool closed_by_peer(int fd)
{
    struct pollfd item = {.fd = fd, .events = POLLIN};
    uint8_t byte;
    return poll(&item, 1, 1000) == 1 && recv(fd, &byte, 1, 0) == 0;
}

static void test_codecs(void **state)
{
    (void)state;
    struct ts_tile_read_req in = {.ino = 1, .tile = 2, .version = 3, .offset = 4, .length = 5};
    struct ts_tile_read_req out;
    uint8_t bytes[TS_STREAM_REQ_BYTES];
    enum ts_stream_kind kind;
    int32_t status;
    uint32_t data_bytes;

    const enum ts_stream_kind kinds[] = {TS_STREAM_READ, TS_STREAM_READ_KEPT, TS_STREAM_WRITE};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        kind = kinds[(i + 1) % 3]; /* something else: the decoder must set it */
        uint32_t crc = 0;
        ts_stream_req_encode(&in, kinds[i], 0xdeadbeef + (uint32_t)i, bytes);
        assert_int_equal(ts_stream_req_decode(&out, &kind, &crc, bytes), TS_OK);
        assert_memory_equal(&in, &out, sizeof(in));
        assert_int_equal(kind, kinds[i]);
        assert_int_equal(crc, 0xdeadbeef + (uint32_t)i);
    }
    /* A tile token travels whole; without one (expiry 0) none comes out. */
    static const char token[32] = "0123456789abcdef0123456789abcdef";
    in.token_expiry = 77;
    in.token = (struct ts_str){.ptr = token, .len = sizeof(token)};
    ts_stream_req_encode(&in, TS_STREAM_READ, 0, bytes);
    assert_int_equal(ts_stream_req_decode(&out, &kind, &(uint32_t){0}, bytes), TS_OK);
    assert_int_equal(out.token_expiry, 77);
    assert_int_equal(out.token.len, sizeof(token));
    assert_memory_equal(out.token.ptr, token, sizeof(token));
    in.token_expiry = 0;
    in.token.len = 0;
    ts_stream_req_encode(&in, TS_STREAM_READ, 0, bytes);
    assert_int_equal(ts_stream_req_decode(&out, &kind, &(uint32_t){0}, bytes), TS_OK);
    assert_int_equal(out.token.len, 0);
    bytes[TS_STREAM_REQ_BYTES - 1] = 1; /* token bytes without an expiry: two encodings of none */
    assert_int_equal(ts_stream_req_decode(&out, &kind, &(uint32_t){0}, bytes), TS_ERR_BADMSG);
    uint32_t crc = 0;
    bytes[0] ^= 1; /* the magic */
    assert_int_equal(ts_stream_req_decode(&out, &kind, &crc, bytes), TS_ERR_BADMSG);
    in.length = TS_MAX_DATA_BYTES + 1;
    ts_stream_req_encode(&in, TS_STREAM_WRITE, 0, bytes);
    assert_int_equal(ts_stream_req_decode(&out, &kind, &crc, bytes), TS_ERR_BADMSG);

    ts_stream_rep_encode(TS_OK, 4096, bytes);
    assert_int_equal(ts_stream_rep_decode(&status, &data_bytes, bytes), TS_OK);
    assert_int_equal(status, TS_OK);
    assert_int_equal(data_bytes, 4096);
    ts_stream_rep_encode(TS_ERR_STALE, 0, bytes);
    assert_int_equal(ts_stream_rep_decode(&status, &data_bytes, bytes), TS_OK);
    assert_int_equal(status, TS_ERR_STALE);
    /* A failure with bytes, too many bytes, a wrong magic: refused. */
    ts_stream_rep_encode(TS_ERR_STALE, 1, bytes);
    assert_int_equal(ts_stream_rep_decode(&status, &data_bytes, bytes), TS_ERR_BADMSG);
    ts_stream_rep_encode(TS_OK, TS_MAX_DATA_BYTES + 1, bytes);
    assert_int_equal(ts_stream_rep_decode(&status, &data_bytes, bytes), TS_ERR_BADMSG);
    ts_stream_rep_encode(TS_OK, 1, bytes);
    bytes[3] ^= 0x80;
    assert_int_equal(ts_stream_rep_decode(&status, &data_bytes, bytes), TS_ERR_BADMSG);
}

static void test_endpoint_address(void **state)
{
    (void)state;
    struct in_addr address;
    assert_int_equal(util_endpoint_ipv4("tcp://10.1.2.3:7601", &address), 0);
    assert_int_equal(ntohl(address.s_addr), 0x0a010203);
    assert_int_equal(util_endpoint_ipv4("tcp://localhost:1", &address), 0);
    assert_int_equal(ntohl(address.s_addr), INADDR_LOOPBACK);
    assert_int_equal(util_endpoint_ipv4("tcp://*:7601", &address), 0);
    assert_int_equal(address.s_addr, htonl(INADDR_ANY));
    assert_int_equal(util_endpoint_ipv4("ipc:///tmp/x", &address), -EINVAL);
    assert_int_equal(util_endpoint_ipv4("tcp://some.host:1", &address), -EINVAL);
    assert_int_equal(util_endpoint_ipv4("tcp://[::1]:1", &address), -EINVAL);
    assert_int_equal(util_endpoint_ipv4("tcp://:1", &address), -EINVAL);
    assert_int_equal(util_endpoint_ipv4("tcp://1.2.3.4", &address), -EINVAL);
}

/* A stream needs an IPv4 address to listen on. */
static void test_open_needs_ipv4(void **state)
{
    (void)state;
    struct stream *stream = NULL;
    struct nodehandlers_context context;
    memset(&context, 0, sizeof(context));
    assert_int_equal(stream_open("ipc:///tmp/tessera-test", &context, &stream), -EINVAL);
    assert_null(stream);
}

/* TILE_STREAM's answer, asked of the handler as a mount asks it. */
static struct ts_tile_stream_rep stream_answer(struct fixture *fixture, uint8_t *reply, size_t cap)
{
    struct rpc_request request = {
        .header = {.magic = TS_PROTO_MAGIC, .version = TS_PROTO_VERSION,
                   .type = TS_OP_TILE_STREAM}};
    struct rpc_response response = {.payload = reply, .payload_cap = cap};
    struct ts_tile_stream_rep port;
    assert_int_equal(call_handler(fixture, TS_OP_TILE_STREAM, &request, &response), TS_OK);
    assert_int_equal(ts_tile_stream_rep_decode(&port, response.payload, response.payload_len), 0);
    return port;
}

static void test_port_request(void **state)
{
    struct fixture *fixture = *state;
    uint8_t reply[256];

    assert_non_null(nodehandlers_table[TS_OP_TILE_STREAM]);
    struct ts_tile_stream_rep port = stream_answer(fixture, reply, sizeof(reply));
    assert_int_equal(port.port, stream_port(fixture->stream));
    assert_true(port.port > 0);
    /* The local socket's name: the prefix, this process's id, the port. */
    char expected[TS_STREAM_LOCAL_MAX];
    snprintf(expected, sizeof(expected), STREAM_LOCAL_PREFIX "%ld.%u", (long)getpid(),
             (unsigned)port.port);
    assert_int_equal(port.local.len, strlen(expected));
    assert_memory_equal(port.local.ptr, expected, port.local.len);
    assert_string_equal(stream_local_name(fixture->stream), expected);

    /* A payload where none belongs is refused. */
    struct rpc_request request = {
        .header = {.magic = TS_PROTO_MAGIC, .version = TS_PROTO_VERSION, .type = TS_OP_TILE_STREAM},
        .payload = reply,
        .payload_len = 1};
    struct rpc_response response = {.payload = reply, .payload_cap = sizeof(reply)};
    assert_int_equal(call_handler(fixture, TS_OP_TILE_STREAM, &request, &response), TS_ERR_BADMSG);
}

/* Whole, partial, past-the-end and missing reads, in a row on one connection. */
static void test_reads(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[TILE_BYTES];
    uint32_t data_bytes = 0;
    int fd = client_connect(fixture);

    send_request(fd, 5, 1, 2, 0, TILE_BYTES);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, TILE_BYTES);
    assert_memory_equal(data, fixture->tile, TILE_BYTES);

    /* A range that runs past the file's end: the bytes there are, the rest a hole. */
    send_request(fd, 5, 1, 2, TILE_BYTES - 100, 4096);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 100);
    assert_memory_equal(data, fixture->tile + TILE_BYTES - 100, 100);

    send_request(fd, 5, 1, 2, TILE_BYTES + 10, 4096);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 0);

    /* No such file (another version): NOENT, asked again over ZeroMQ. */
    send_request(fd, 5, 1, 3, 0, 4096);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_NOENT);
    assert_int_equal(data_bytes, 0);

    /* Counted as TILE_READs, with their bytes and tiles. */
    assert_int_equal(stats_of(fixture).requests[TS_OP_TILE_READ], 4);
    assert_int_equal(stats_of(fixture).failures, 1);
    assert_int_equal(stats_of(fixture).bytes_read, TILE_BYTES + 100);
    assert_non_null(stats_of(fixture).tiles_read);
    close(fd);
}

/* Pages of the file in the page cache (mincore over a mapping of it). */
static size_t resident_pages(int fd, size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = (bytes + (size_t)page - 1) / (size_t)page;
    unsigned char in_core[TILE_BYTES / 4096 + 1];
    void *map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(map != MAP_FAILED && pages <= sizeof(in_core));
    assert_int_equal(mincore(map, bytes, in_core), 0);
    munmap(map, bytes);
    size_t resident = 0;
    for (size_t i = 0; i < pages; i++)
        resident += in_core[i] & 1;
    return resident;
}

/* Waits up to 2 s for the tile's pages to leave the page cache. */
static bool dropped_within(int fd, size_t bytes)
{
    for (int i = 0; i < 200; i++) {
        if (resident_pages(fd, bytes) == 0)
            return true;
        usleep(10 * 1000);
    }
    return false;
}

/*
 * After a plain read the tile's pages stay cached: more than half of them,
 * as the kernel may reclaim one meanwhile on a loaded machine (a CI run saw
 * 23 of 24); a drop-behind would have left none.
 */
static bool kept_by_plain_read(int fd)
{
    return resident_pages(fd, TILE_BYTES) > TILE_BYTES / 4096 / 2;
}

/* Reads the tile's file whole through the page cache. */
static void warm_whole(int fd)
{
    static uint8_t bytes[TILE_BYTES];
    assert_int_equal(pread(fd, bytes, TILE_BYTES, 0), (ssize_t)TILE_BYTES);
}

/*
 * Runs every thread of the process (the stream's too) on the CPU this one
 * is on. A socket buffer the reader is done with goes back to the CPU that
 * made it, which frees it (and lets go of the file's pages in it) only
 * when it next handles network work: on an idle machine, maybe never
 * during the test.
 */
static void pin_threads_to_this_cpu(cpu_set_t *before)
{
    cpu_set_t one;
    assert_int_equal(sched_getaffinity(0, sizeof(*before), before), 0);
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    DIR *tasks = opendir("/proc/self/task");
    assert_non_null(tasks);
    struct dirent *entry;
    while ((entry = readdir(tasks)) != NULL) {
        if (entry->d_name[0] != '.')
            assert_int_equal(sched_setaffinity(atoi(entry->d_name), sizeof(one), &one), 0);
    }
    closedir(tasks);
}

/*
 * A read whose reader keeps the bytes (TS_STREAM_READ_KEPT) drops them from
 * the datanode's page cache once the reader has them: at the connection's
 * next request, or when the stream idles. A plain read leaves them.
 */
static void test_kept_reads_drop_behind(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[TILE_BYTES];
    uint32_t data_bytes = 0;
    uint64_t size = 0;
    int file_fd = -1;
    struct statfs fs;

    assert_int_equal(tilestore_write(fixture->store, 5, 2, 2, 0, fixture->tile, TILE_BYTES), 0);
    assert_int_equal(tilestore_open_tile(fixture->store, 5, 1, 2, &file_fd, &size), 0);
    assert_int_equal(fstatfs(file_fd, &fs), 0);
    if (fs.f_type == TMPFS_MAGIC) {
        close(file_fd);
        skip(); /* tmpfs pages are the file: nothing to drop */
    }
    /* Start with the pages cached, brought in by a read: a stream read of
     * cold bytes goes past the page cache (directread.h). */
    assert_int_equal(fdatasync(file_fd), 0);
    assert_int_equal(posix_fadvise(file_fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    assert_true(dropped_within(file_fd, TILE_BYTES));
    warm_whole(file_fd);
    cpu_set_t before;
    pin_threads_to_this_cpu(&before);
    int fd = client_connect(fixture);

    send_request(fd, 5, 1, 2, 0, TILE_BYTES);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    usleep(200 * 1000);
    assert_true(kept_by_plain_read(file_fd));

    /* Dropped when the stream goes idle. */
    send_head(fd, TS_STREAM_READ_KEPT, 5, 1, 2, 0, TILE_BYTES, 0);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, TILE_BYTES);
    assert_memory_equal(data, fixture->tile, TILE_BYTES);
    assert_true(dropped_within(file_fd, TILE_BYTES));

    /* Dropped at the next request, the reader's bytes the same. */
    warm_whole(file_fd);
    send_request(fd, 5, 1, 2, 0, TILE_BYTES);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_true(kept_by_plain_read(file_fd));
    send_head(fd, TS_STREAM_READ_KEPT, 5, 1, 2, 0, TILE_BYTES, 0);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_memory_equal(data, fixture->tile, TILE_BYTES);
    send_request(fd, 5, 2, 2, 0, 4096);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_true(dropped_within(file_fd, TILE_BYTES));
    close(file_fd);
    close(fd);
    /* The stream's threads end with the test. */
    assert_int_equal(sched_setaffinity(0, sizeof(before), &before), 0);
}

/* A request in pieces is answered once it is whole. */
/* A second small read of a tile warms it (warmer.h), over the stream and
 * over ZeroMQ alike; whole-tile reads do not. */
static void test_small_reads_warm(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[TILE_BYTES];
    uint32_t data_bytes = 0;
    int fd = client_connect(fixture);
    fixture->context.warmer = warmer_new();
    assert_non_null(fixture->context.warmer);

    send_request(fd, 5, 1, 2, 0, TILE_BYTES);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    send_request(fd, 5, 1, 2, 0, TILE_BYTES);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(stats_of(fixture).tiles_warmed, 0);
    for (int i = 0; i < 3; i++) {
        send_request(fd, 5, 1, 2, 8192u * (uint32_t)i, 4096);
        assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
        assert_int_equal(data_bytes, 4096);
        assert_memory_equal(data, fixture->tile + 8192 * i, 4096);
    }
    assert_int_equal(stats_of(fixture).tiles_warmed, 1);

    /* Over ZeroMQ: tile (5, 2, 2). */
    assert_int_equal(tilestore_write(fixture->store, 5, 2, 2, 0, fixture->tile, 65536), 0);
    for (int i = 0; i < 2; i++) {
        uint8_t payload[64];
        uint8_t reply[256];
        struct ts_tile_read_req read = {
            .ino = 5, .tile = 2, .version = 2, .offset = 4096, .length = 4096};
        int len = ts_tile_read_req_encode(&read, payload, sizeof(payload));
        struct rpc_request request = {.header = {.magic = TS_PROTO_MAGIC,
                                                 .version = TS_PROTO_VERSION,
                                                 .type = TS_OP_TILE_READ},
                                      .payload = payload,
                                      .payload_len = (size_t)len};
        struct rpc_response response = {.payload = reply, .payload_cap = sizeof(reply)};
        assert_int_equal(call_handler(fixture, TS_OP_TILE_READ, &request, &response), TS_OK);
        assert_int_equal(response.data_len, 4096);
        assert_memory_equal(response.data, fixture->tile + 4096, 4096);
        response.data_free(response.data, NULL);
    }
    assert_int_equal(stats_of(fixture).tiles_warmed, 2);
    warmer_destroy(&fixture->context.warmer);
    close(fd);
}

static void test_request_in_pieces(void **state)
{
    struct fixture *fixture = *state;
    struct ts_tile_read_req request = {.ino = 5, .tile = 1, .version = 2, .offset = 8, .length = 64};
    uint8_t bytes[TS_STREAM_REQ_BYTES];
    uint8_t data[64];
    uint32_t data_bytes = 0;
    int fd = client_connect(fixture);

    ts_stream_req_encode(&request, TS_STREAM_READ, 0, bytes);
    assert_int_equal(send(fd, bytes, 10, 0), 10);
    usleep(200 * 1000); /* time for the stream's thread to take the piece */
    assert_int_equal(stats_of(fixture).requests[TS_OP_TILE_READ], 0);
    assert_int_equal(send(fd, bytes + 10, sizeof(bytes) - 10, 0), (ssize_t)sizeof(bytes) - 10);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 64);
    assert_memory_equal(data, fixture->tile + 8, 64);
    close(fd);
}

/* A retired tile (moved away) is STALE; a frozen one still reads. */
static void test_fenced(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[64];
    uint32_t data_bytes = 0;
    int fd = client_connect(fixture);

    assert_int_equal(fences_freeze(fixture->fences, 5, 1, 2, 0, util_monotonic_ms()), 0);
    send_request(fd, 5, 1, 2, 0, 64);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 64);

    assert_int_equal(fences_retire(fixture->fences, 5, 1, 2), 0);
    send_request(fd, 5, 1, 2, 0, 64);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_STALE);
    assert_int_equal(data_bytes, 0);
    close(fd);
}

/* A throttled disk answers BUSY: a stream would not be timed as the throttle wants. */
static void test_throttled(void **state)
{
    struct fixture *fixture = *state;
    struct diskio *throttled = NULL;
    uint8_t data[64];
    uint32_t data_bytes = 0;
    int fd = client_connect(fixture);

    assert_int_equal(diskio_new(fixture->store, 1000000, &throttled), 0);
    pthread_mutex_lock(&fixture->context.lock);
    fixture->context.disk = throttled;
    pthread_mutex_unlock(&fixture->context.lock);
    send_request(fd, 5, 1, 2, 0, 64);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_BUSY);
    send_write(fd, 5, 1, 2, 0, fixture->tile + 1, 64);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_BUSY);

    /* And neither the port nor the local socket is offered meanwhile. */
    uint8_t reply[256];
    struct ts_tile_stream_rep port = stream_answer(fixture, reply, sizeof(reply));
    assert_int_equal(port.port, 0);
    assert_int_equal(port.local.len, 0);
    pthread_mutex_lock(&fixture->context.lock);
    fixture->context.disk = fixture->disk;
    pthread_mutex_unlock(&fixture->context.lock);
    diskio_destroy(&throttled);
    close(fd);
}

/* Bytes that are no request close that connection only; others go on. */
static void test_garbage_closes_connection(void **state)
{
    struct fixture *fixture = *state;
    uint8_t garbage[TS_STREAM_REQ_BYTES];
    uint8_t data[64];
    uint32_t data_bytes = 0;
    int good = client_connect(fixture);
    int bad = client_connect(fixture);

    memset(garbage, 0xA5, sizeof(garbage));
    assert_int_equal(send(bad, garbage, sizeof(garbage), 0), (ssize_t)sizeof(garbage));
    assert_true(closed_by_peer(bad));
    close(bad);

    /* A huge length is refused the same way, before anything is read. */
    bad = client_connect(fixture);
    struct ts_tile_read_req huge = {.ino = 5, .tile = 1, .version = 2, .length = UINT32_MAX};
    ts_stream_req_encode(&huge, TS_STREAM_READ, 0, garbage);
    assert_int_equal(send(bad, garbage, sizeof(garbage), 0), (ssize_t)sizeof(garbage));
    assert_true(closed_by_peer(bad));
    close(bad);

    send_request(good, 5, 1, 2, 0, 64);
    assert_int_equal(answer(fixture, good, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 64);
    assert_memory_equal(data, fixture->tile, 64);
    close(good);

    /* A client that goes away is dropped. */
    for (int i = 0; i < 100 && stream_connections(fixture->stream) > 0; i++)
        usleep(10 * 1000);
    assert_int_equal(stream_connections(fixture->stream), 0);
}

/* Writes: stored, counted, and readable over the stream and from the store. */
static void test_writes(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[TILE_BYTES];
    uint32_t data_bytes = 0;
    size_t got = 0;
    int fd = client_connect(fixture);

    send_write(fd, 9, 0, 1, 100, fixture->tile, 60000);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 0);
    assert_int_equal(tilestore_read(fixture->store, 9, 0, 1, 0, sizeof(data), data, &got), 0);
    assert_int_equal(got, 60100);
    for (int i = 0; i < 100; i++)
        assert_int_equal(data[i], 0);
    assert_memory_equal(data + 100, fixture->tile, 60000);
    assert_int_equal(stats_of(fixture).requests[TS_OP_TILE_WRITE], 1);
    assert_int_equal(stats_of(fixture).bytes_written, 60000);

    /* Over an existing tile's bytes, then read back over the stream. */
    send_write(fd, 5, 1, 2, 10, fixture->tile + 5000, 3000);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    send_request(fd, 5, 1, 2, 0, 20000);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 20000);
    assert_memory_equal(data, fixture->tile, 10);
    assert_memory_equal(data + 10, fixture->tile + 5000, 3000);
    assert_memory_equal(data + 3010, fixture->tile + 3010, 20000 - 3010);
    close(fd);
}

/* A connection to the local socket (abstract Unix, the name TILE_STREAM
 * gave), accepted by the stream. */
static int local_connect(struct fixture *fixture)
{
    uint8_t reply[256];
    struct ts_tile_stream_rep port = stream_answer(fixture, reply, sizeof(reply));
    char name[TS_STREAM_LOCAL_MAX];
    assert_true(port.local.len > 0 && port.local.len < sizeof(name));
    memcpy(name, port.local.ptr, port.local.len);
    name[port.local.len] = '\0';
    struct sockaddr_un address;
    socklen_t len = util_abstract_address(name, &address);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    int buffer = 1 << 20; /* room for a whole write: the test sends it before serving */
    assert_true(fd >= 0);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer)), 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&address, len), 0);
    serve_once(fixture, 1000); /* accepts it */
    return fd;
}

/* The local socket serves the stream as TCP does: a write, a read of it
 * back, a kept read, all counted; garbage closes that connection only. */
static void test_local_socket(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[TILE_BYTES];
    uint32_t data_bytes = 0;
    size_t got = 0;
    int fd = local_connect(fixture);

    send_write(fd, 11, 0, 1, 0, fixture->tile, TILE_BYTES);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 0);
    assert_int_equal(tilestore_read(fixture->store, 11, 0, 1, 0, sizeof(data), data, &got), 0);
    assert_int_equal(got, TILE_BYTES);
    assert_memory_equal(data, fixture->tile, TILE_BYTES);

    memset(data, 0, sizeof(data));
    send_request(fd, 11, 0, 1, 0, TILE_BYTES);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, TILE_BYTES);
    assert_memory_equal(data, fixture->tile, TILE_BYTES);
    send_head(fd, TS_STREAM_READ_KEPT, 5, 1, 2, 1000, 5000, 0);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 5000);
    assert_memory_equal(data, fixture->tile + 1000, 5000);
    assert_int_equal(stats_of(fixture).requests[TS_OP_TILE_WRITE], 1);
    assert_int_equal(stats_of(fixture).requests[TS_OP_TILE_READ], 2);
    assert_int_equal(stats_of(fixture).bytes_written, TILE_BYTES);

    /* Garbage closes the local connection; a TCP one goes on. */
    int tcp = client_connect(fixture);
    uint8_t garbage[TS_STREAM_REQ_BYTES];
    memset(garbage, 0xa5, sizeof(garbage));
    assert_int_equal(send(fd, garbage, sizeof(garbage), 0), (ssize_t)sizeof(garbage));
    assert_true(closed_by_peer(fd));
    send_request(tcp, 11, 0, 1, 0, 100);
    assert_int_equal(answer(fixture, tcp, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 100);
    close(tcp);
    close(fd);
}

/* The local socket's abstract address (the name TILE_STREAM gives). */
static socklen_t local_address(struct fixture *fixture, struct sockaddr_un *address)
{
    uint8_t reply[256];
    char name[TS_STREAM_LOCAL_MAX];
    struct ts_tile_stream_rep port = stream_answer(fixture, reply, sizeof(reply));
    assert_true(port.local.len > 0 && port.local.len < sizeof(name));
    memcpy(name, port.local.ptr, port.local.len);
    name[port.local.len] = '\0';
    return util_abstract_address(name, address);
}

/*
 * In a child process (as uid when uid >= 0): connects to the local socket,
 * asks for 100 bytes of tile (5, 1, 2) and exits 0 if they came, 3 if the
 * datanode closed the connection instead, 1 on anything else. The parent
 * accepts for it (serve_once) and returns the child's exit code.
 */
static int child_reads(struct fixture *fixture, int uid)
{
    struct sockaddr_un address;
    socklen_t len = local_address(fixture, &address);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint8_t head[TS_STREAM_REP_BYTES];
        if (uid >= 0 && (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0))
            _exit(1);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&address, len) != 0)
            _exit(1);
        struct ts_tile_read_req request = {.ino = 5, .tile = 1, .version = 2, .length = 100};
        uint8_t bytes[TS_STREAM_REQ_BYTES];
        ts_stream_req_encode(&request, TS_STREAM_READ, 0, bytes);
        (void)send(fd, bytes, sizeof(bytes), MSG_NOSIGNAL);
        struct pollfd item = {.fd = fd, .events = POLLIN};
        if (poll(&item, 1, 5000) != 1)
            _exit(1);
        ssize_t got = recv(fd, head, sizeof(head), MSG_WAITALL);
        _exit(got == (ssize_t)sizeof(head) ? 0 : got <= 0 ? 3 : 1);
    }
    int status = 0;
    pid_t done = 0;
    for (int turn = 0; turn < 50 && done == 0; turn++) {
        serve_once(fixture, 100);
        done = waitpid(pid, &status, WNOHANG);
    }
    if (done == 0)
        done = waitpid(pid, &status, 0);
    assert_int_equal(done, pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* Another user's process on the local socket is closed at accept, unserved. */
static void test_local_socket_checks_credentials(void **state)
{
    struct fixture *fixture = *state;
    /* This process's own uid is served. */
    assert_int_equal(child_reads(fixture, -1), 0);
    if (geteuid() != 0) {
        print_message("# not root: no other uid to try; only the own uid's case ran\n");
        return;
    }
    uint64_t reads = stats_of(fixture).requests[TS_OP_TILE_READ];
    assert_int_equal(child_reads(fixture, 65534), 3);
    assert_int_equal(stats_of(fixture).requests[TS_OP_TILE_READ], reads);
}

/* Once TCP is refused (a datanode with keys), TCP connections close unserved; the local socket goes
 * on. */
static void test_tcp_refused(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[128];
    uint32_t data_bytes = 0;

    stream_refuse_tcp(fixture->stream);
    int tcp = client_connect(fixture);
    assert_true(closed_by_peer(tcp));
    close(tcp);
    int fd = local_connect(fixture);
    send_request(fd, 5, 1, 2, 0, 100);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 100);
    close(fd);
}

/*
 * One process holds at most STREAM_MAX_PER_PEER connections: the ones past
 * it are closed, another process is still served, and a slot given back
 * can be taken again.
 */
static void test_one_peer_cannot_take_every_slot(void **state)
{
    struct fixture *fixture = *state;
    static int fds[STREAM_MAX_PER_PEER + 4];
    uint8_t data[128];
    uint32_t data_bytes = 0;

    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        fds[i] = local_connect(fixture);
    for (size_t i = STREAM_MAX_PER_PEER; i < sizeof(fds) / sizeof(fds[0]); i++)
        assert_true(closed_by_peer(fds[i]));
    assert_int_equal(stream_connections(fixture->stream), STREAM_MAX_PER_PEER);
    assert_int_equal(child_reads(fixture, -1), 0); /* another process */
    send_request(fds[0], 5, 1, 2, 0, 100);         /* the held ones still serve */
    assert_int_equal(answer(fixture, fds[0], data, &data_bytes), TS_OK);

    close(fds[1]);
    for (int turn = 0; turn < 100 && stream_connections(fixture->stream) >= STREAM_MAX_PER_PEER;
         turn++)
        usleep(10 * 1000);
    int again = local_connect(fixture);
    send_request(again, 5, 1, 2, 0, 100);
    assert_int_equal(answer(fixture, again, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 100);
    close(again);
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (i != 1)
            close(fds[i]);
}

/* A connection that sends nothing for the idle time is closed; a busy one is not. */
static void test_idle_connection_closed(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[128];
    uint32_t data_bytes = 0;

    stream_set_idle_ms(fixture->stream, 300);
    int idle = local_connect(fixture);
    int busy = local_connect(fixture);
    for (int i = 0; i < 8; i++) { /* 800 ms of a request every 100 ms */
        send_request(busy, 5, 1, 2, 0, 100);
        assert_int_equal(answer(fixture, busy, data, &data_bytes), TS_OK);
        usleep(100 * 1000);
    }
    struct pollfd item = {.fd = idle, .events = POLLIN};
    assert_int_equal(poll(&item, 1, 0), 1); /* closed by now */
    assert_true(closed_by_peer(idle));
    send_request(busy, 5, 1, 2, 0, 100);
    assert_int_equal(answer(fixture, busy, data, &data_bytes), TS_OK);
    close(idle);
    close(busy);
}

/* A write refused before its bytes are taken drops them: the connection goes on. */
static void test_write_refused(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[TILE_BYTES];
    uint32_t data_bytes = 0;
    uint64_t size = 0;
    int fd = client_connect(fixture);

    assert_int_equal(fences_freeze(fixture->fences, 5, 1, 2, 0, util_monotonic_ms()), 0);
    send_write(fd, 5, 1, 2, 0, fixture->tile + 1, 50000);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_STALE);
    send_request(fd, 5, 1, 2, 0, 100);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_memory_equal(data, fixture->tile, 100); /* unchanged */

    /* Past the data limit of a tile: refused the same way, nothing made. */
    send_write(fd, 9, 3, 1, TS_MAX_DATA_BYTES - 10, fixture->tile, 20);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_INVAL);
    assert_int_equal(tilestore_size(fixture->store, 9, 3, 1, &size), -ENOENT);
    send_request(fd, 5, 1, 2, 0, 100);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    close(fd);
}

/* A write whose bytes stop coming: the connection closes, the new file goes away. */
static void test_write_cut_short(void **state)
{
    struct fixture *fixture = *state;
    uint64_t size = 0;
    int fd = client_connect(fixture);

    send_head(fd, TS_STREAM_WRITE, 9, 4, 1, 0, 50000, crc32c(0, fixture->tile, 50000));
    assert_int_equal(send(fd, fixture->tile, 1000, 0), 1000);
    shutdown(fd, SHUT_WR);
    assert_true(closed_by_peer(fd));
    close(fd);
    assert_int_equal(tilestore_size(fixture->store, 9, 4, 1, &size), -ENOENT);

    /* The stream serves the next connection's write whole. */
    static uint8_t data[TILE_BYTES];
    uint32_t data_bytes = 0;
    fd = client_connect(fixture);
    send_write(fd, 9, 4, 1, 0, fixture->tile, 50000);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(tilestore_size(fixture->store, 9, 4, 1, &size), 0);
    assert_int_equal(size, 50000);
    close(fd);
}

/*
 * Checksums on the stream: a write whose bytes do not match its CRC is
 * answered TS_ERR_CORRUPT and changes nothing (the connection goes on), and
 * a read of a block whose bytes went bad on the disk sends no byte of it.
 */
static void test_stream_checks_crcs(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[TILE_BYTES];
    uint32_t data_bytes = 0;
    uint64_t size = 0;
    int fd = client_connect(fixture);

    send_head(fd, TS_STREAM_WRITE, 41, 0, 1, 0, 70000, crc32c(0, fixture->tile, 70000) ^ 8);
    assert_int_equal(send(fd, fixture->tile, 70000, 0), 70000);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_CORRUPT);
    assert_int_equal(data_bytes, 0);
    assert_int_equal(tilestore_size(fixture->store, 41, 0, 1, &size), -ENOENT);
    send_write(fd, 41, 0, 1, 0, fixture->tile, 70000);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);

    char relative[TILESTORE_PATH_MAX];
    char path[PATH_MAX + TILESTORE_PATH_MAX];
    uint8_t byte = 0;
    assert_int_equal(tilestore_path(41, 0, 1, relative, sizeof(relative)), 0);
    snprintf(path, sizeof(path), "%s/%s", fixture->dir, relative);
    int file = open(path, O_RDWR);
    assert_true(file >= 0);
    assert_int_equal(pread(file, &byte, 1, 66000), 1);
    byte ^= 1;
    assert_int_equal(pwrite(file, &byte, 1, 66000), 1);
    close(file);
    send_request(fd, 41, 0, 1, 65536, 100);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_CORRUPT);
    assert_int_equal(data_bytes, 0);
    /* The first block is good and still served. */
    send_request(fd, 41, 0, 1, 0, 65536);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 65536);
    assert_memory_equal(data, fixture->tile, 65536);
    close(fd);
}

/* The path of tile (ino, tile, version)'s file in the fixture's store. */
static void tile_path_of(struct fixture *fixture, uint64_t ino, uint64_t tile, uint64_t version,
                         char *path, size_t cap);

/*
 * Plain reads keep the tile's file open with its CRCs (tilehandles.h): a
 * write through the stream between two reads is seen by the second, short
 * and long reads alike, and a byte flipped on the disk under kept CRCs is
 * refused while the good block is still served.
 */
static void test_plain_reads_follow_writes(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[TILE_BYTES], want[70000];
    uint32_t data_bytes = 0;
    const uint32_t size = sizeof(want);
    int fd = client_connect(fixture);

    memcpy(want, fixture->tile, size);
    send_write(fd, 43, 0, 1, 0, want, size);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    for (int round = 0; round < 2; round++) {
        send_request(fd, 43, 0, 1, 1000, 4096);
        assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
        assert_int_equal(data_bytes, 4096);
        assert_memory_equal(data, want + 1000, 4096);
    }

    for (uint32_t i = 0; i < 5000; i++)
        want[1000 + i] = (uint8_t)(want[1000 + i] ^ 0xA5);
    send_write(fd, 43, 0, 1, 1000, want + 1000, 5000);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    send_request(fd, 43, 0, 1, 1000, 4096);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_memory_equal(data, want + 1000, 4096);
    send_request(fd, 43, 0, 1, 0, size); /* longer than a short read: checked, then sendfile */
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, size);
    assert_memory_equal(data, want, size);
    /* Grown by a write: the new end is read, not the size kept with the file. */
    send_write(fd, 43, 0, 1, size, fixture->tile, 3000);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    send_request(fd, 43, 0, 1, size - 1000, 8192);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 4000);
    assert_memory_equal(data, want + size - 1000, 1000);
    assert_memory_equal(data + 1000, fixture->tile, 3000);

    char path[PATH_MAX + TILESTORE_PATH_MAX];
    tile_path_of(fixture, 43, 0, 1, path, sizeof(path));
    int file = open(path, O_RDWR);
    assert_true(file >= 0);
    uint8_t byte = (uint8_t)(want[66000] ^ 0x10);
    assert_int_equal(pwrite(file, &byte, 1, 66000), 1);
    close(file);
    send_request(fd, 43, 0, 1, 65536, 100);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_CORRUPT);
    send_request(fd, 43, 0, 1, 63000, 4096); /* across both blocks */
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_CORRUPT);
    send_request(fd, 43, 0, 1, 0, 4096);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_memory_equal(data, want, 4096);
    close(fd);
}

static void tile_path_of(struct fixture *fixture, uint64_t ino, uint64_t tile, uint64_t version,
                         char *path, size_t cap)
{
    char relative[TILESTORE_PATH_MAX];
    assert_int_equal(tilestore_path(ino, tile, version, relative, sizeof(relative)), 0);
    snprintf(path, cap, "%s/%s", fixture->dir, relative);
}

/* Flushes the file at path and drops its pages from the page cache. */
static void make_cold(const char *path)
{
    int file = open(path, O_RDONLY);
    assert_true(file >= 0);
    assert_int_equal(fdatasync(file), 0);
    assert_int_equal(posix_fadvise(file, 0, 0, POSIX_FADV_DONTNEED), 0);
    close(file);
}

/* A read whose reader keeps the bytes (TS_STREAM_READ_KEPT). */
static void send_kept(int fd, uint64_t ino, uint32_t offset, uint32_t length)
{
    send_head(fd, TS_STREAM_READ_KEPT, ino, 0, 1, offset, length, 0);
}

/*
 * A kept read of bytes that are not in the page cache goes past it
 * (directread.h): the bytes are right, checked against their CRCs, and the
 * tile's pages are still not cached afterwards; a cached range, and any
 * plain read (an O_DIRECT reader's, whose only cache the datanode's is),
 * go through the cache as before; a flipped byte on the disk is never
 * served either way. Skipped where the kernel has no cachestat or TMPDIR's
 * filesystem no O_DIRECT (every read then goes through the cache).
 */
static void test_cold_reads_past_page_cache(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[TILE_BYTES];
    uint32_t data_bytes = 0;
    char path[PATH_MAX + TILESTORE_PATH_MAX];
    const uint32_t size = 70000; /* two CRC blocks, the second 4,464 bytes */
    int fd = client_connect(fixture);

    send_write(fd, 42, 0, 1, 0, fixture->tile, size);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    tile_path_of(fixture, 42, 0, 1, path, sizeof(path));
    make_cold(path);
    send_kept(fd, 42, 100, 69000);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 69000);
    assert_memory_equal(data, fixture->tile + 100, 69000);
    if (stats_of(fixture).reads_direct == 0) {
        close(fd);
        skip();
    }
    assert_int_equal(stats_of(fixture).reads_direct, 1);
    int file = open(path, O_RDONLY);
    assert_true(file >= 0);
    assert_int_equal(resident_pages(file, size), 0);

    /* The short last block, past the end: the bytes there are. */
    send_kept(fd, 42, 66000, 8192);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, size - 66000);
    assert_memory_equal(data, fixture->tile + 66000, size - 66000);
    assert_int_equal(stats_of(fixture).reads_direct, 2);

    /* A plain read leaves the bytes cached here. */
    send_request(fd, 42, 0, 1, 0, size);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, size);
    assert_memory_equal(data, fixture->tile, size);
    assert_int_equal(stats_of(fixture).reads_direct, 2);
    assert_true(resident_pages(file, size) > 0);
    close(file);

    /* Cached bytes come from the cache. */
    send_kept(fd, 42, 0, 4096);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_memory_equal(data, fixture->tile, 4096);
    assert_int_equal(stats_of(fixture).reads_direct, 2);

    /* A byte flipped on the disk: its block is refused cold and warm, the other served. */
    uint8_t byte = 0;
    file = open(path, O_RDWR);
    assert_true(file >= 0);
    assert_int_equal(pread(file, &byte, 1, 67000), 1);
    byte ^= 0x20;
    assert_int_equal(pwrite(file, &byte, 1, 67000), 1);
    close(file);
    make_cold(path);
    send_kept(fd, 42, 65536, 100);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_CORRUPT);
    assert_int_equal(data_bytes, 0);
    make_cold(path);
    send_kept(fd, 42, 0, size);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_ERR_CORRUPT);
    assert_int_equal(data_bytes, 0);
    make_cold(path);
    send_kept(fd, 42, 0, 65536);
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, 65536);
    assert_memory_equal(data, fixture->tile, 65536);
    assert_int_equal(stats_of(fixture).reads_direct, 3);
    close(fd);
}

/* len bytes of a pattern of its own per mul, malloc'd. */
static uint8_t *pattern_of(uint32_t len, uint32_t mul)
{
    uint8_t *bytes = malloc(len);
    assert_non_null(bytes);
    for (uint32_t i = 0; i < len; i++)
        bytes[i] = (uint8_t)(i * mul + (i >> 10));
    return bytes;
}

/* The store's tile (ino, 0, 1) holds exactly these len bytes. */
static void assert_stored(struct fixture *fixture, uint64_t ino, const uint8_t *expected,
                          uint32_t len)
{
    uint8_t *back = malloc(len);
    size_t got = 0;
    assert_non_null(back);
    assert_int_equal(tilestore_read(fixture->store, ino, 0, 1, 0, len, back, &got), 0);
    assert_int_equal(got, len);
    assert_memory_equal(back, expected, len);
    free(back);
}

/*
 * A client whose write's bytes come slowly holds up no other client's
 * write (they are taken off the socket before the handlers' lock), and
 * both land whole. So does a write bigger than the thread's first buffer.
 */
static void test_slow_writer_holds_up_no_other(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[TILE_BYTES];
    uint32_t data_bytes = 0;
    int slow = client_connect(fixture);
    int other = client_connect(fixture);

    send_head(slow, TS_STREAM_WRITE, 12, 0, 1, 0, 50000, crc32c(0, fixture->tile, 50000));
    assert_int_equal(send(slow, fixture->tile, 1000, 0), 1000);
    usleep(100 * 1000); /* its thread now waits for the rest */
    struct pollfd item = {.fd = other, .events = POLLIN};
    send_write(other, 13, 0, 1, 0, fixture->tile + 7, 40000);
    /* Well within STREAM_TIMEOUT_MS, after which the slow one would be cut. */
    assert_int_equal(poll(&item, 1, STREAM_TIMEOUT_MS / 2), 1);
    assert_int_equal(answer(fixture, other, data, &data_bytes), TS_OK);
    assert_int_equal(send(slow, fixture->tile + 1000, 49000, 0), 49000);
    assert_int_equal(answer(fixture, slow, data, &data_bytes), TS_OK);
    assert_stored(fixture, 12, fixture->tile, 50000);
    assert_stored(fixture, 13, fixture->tile + 7, 40000);

    const uint32_t big = 3u << 20; /* more than a stream thread's first write buffer */
    uint8_t *tile = pattern_of(big, 13);
    send_write(other, 14, 0, 1, 0, tile, big);
    assert_int_equal(answer(fixture, other, data, &data_bytes), TS_OK);
    assert_stored(fixture, 14, tile, big);
    free(tile);
    close(other);
    close(slow);
}

/*
 * A write whose bytes come in pieces smaller than a page (a Unix socket
 * keeps each send apart) lands whole.
 */
static void test_write_in_small_pieces(void **state)
{
    struct fixture *fixture = *state;
    static uint8_t data[TILE_BYTES];
    const uint32_t bytes = 1u << 20;
    const uint32_t piece = 1000;
    uint8_t *tile = pattern_of(bytes, 31);
    uint32_t data_bytes = 0;
    int fd = local_connect(fixture);

    send_head(fd, TS_STREAM_WRITE, 15, 0, 1, 0, bytes, crc32c(0, tile, bytes));
    for (uint32_t at = 0; at < bytes; at += piece) {
        size_t len = bytes - at < piece ? bytes - at : piece;
        assert_int_equal(send(fd, tile + at, len, MSG_NOSIGNAL), (ssize_t)len);
    }
    assert_int_equal(answer(fixture, fd, data, &data_bytes), TS_OK);
    assert_stored(fixture, 15, tile, bytes);
    close(fd);
    free(tile);
}

/*
 * A client that stops taking a long answer holds up its own connection
 * only: another client's reads are answered meanwhile (by another of the
 * stream's threads), and the stalled one still gets every byte once it
 * reads again.
 */
static void test_stalled_reader_holds_up_no_other(void **state)
{
    struct fixture *fixture = *state;
    const uint32_t big = TS_MAX_DATA_BYTES;
    uint8_t *tile = pattern_of(big, 7);
    uint8_t *data = malloc(big);
    uint32_t data_bytes = 0;
    assert_non_null(data);
    assert_int_equal(tilestore_write(fixture->store, 6, 0, 1, 0, tile, big), 0);

    int stalled = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096; /* the answer cannot fit the socket buffers */
    struct sockaddr_in address = {.sin_family = AF_INET,
                                  .sin_port = htons(stream_port(fixture->stream))};
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    assert_int_equal(setsockopt(stalled, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
    assert_int_equal(connect(stalled, (struct sockaddr *)&address, sizeof(address)), 0);
    serve_once(fixture, 1000);
    send_request(stalled, 6, 0, 1, 0, big);
    usleep(100 * 1000); /* its thread is now blocked sending */

    int other = client_connect(fixture);
    for (int i = 0; i < 3; i++) {
        struct pollfd item = {.fd = other, .events = POLLIN};
        send_request(other, 5, 1, 2, 1000u * (uint32_t)i, 4096);
        /* Well within STREAM_TIMEOUT_MS, after which the stalled one would be cut. */
        assert_int_equal(poll(&item, 1, STREAM_TIMEOUT_MS / 2), 1);
        assert_int_equal(answer(fixture, other, data, &data_bytes), TS_OK);
        assert_int_equal(data_bytes, 4096);
        assert_memory_equal(data, fixture->tile + 1000 * i, 4096);
    }

    assert_int_equal(answer(fixture, stalled, data, &data_bytes), TS_OK);
    assert_int_equal(data_bytes, big);
    assert_memory_equal(data, tile, big);
    close(other);
    close(stalled);
    free(data);
    free(tile);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codecs),
        cmocka_unit_test(test_endpoint_address),
        cmocka_unit_test(test_open_needs_ipv4),
        cmocka_unit_test_setup_teardown(test_port_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_reads_follow_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_reads_warm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kept_reads_drop_behind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_in_pieces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fenced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_throttled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_closes_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_local_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_local_socket_checks_credentials, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tcp_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_peer_cannot_take_every_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_connection_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_cut_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_checks_crcs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cold_reads_past_page_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stalled_reader_holds_up_no_other, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_writer_holds_up_no_other, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_in_small_pieces, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
