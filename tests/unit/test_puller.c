/*
 * @file test_puller.c
 * Unit tests of what a pull stands on, without a network: the tile store's
 * install (staged, never overwriting), checksum and start-up cleanup of
 * staging files; and TILE_PULL through nodehandlers_table with a real puller
 * that has no threads (so queued jobs stay queued and the queue bound can
 * be reached). Pulls over real sockets between real datanodes are
 * tests/integration/test_tile_pull.c's.
 *
 * The cases with a source run a second store behind a real rpc_server on
 * an inproc:// endpoint, served by a thread of the test, so the puller's
 * thread does its real PING, TILE_READ and install; the source can be held
 * back (not served yet) to catch a pull while it runs. With the source
 * check on (puller_config.meta_endpoint) the source's server also plays
 * meta, answering NODE_LIST with one datanode at listed_address.
 */
#include "crc32c.h"
#include "nodehandlers.h"
#include "proto.h"
#include "rpc.h"
#include "puller.h"
#include "status.h"
#include "tilestore.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define TEST_QUEUE_LIMIT 3

/* A source datanode inside the test: a store served by a thread. */
struct source {
    char dir[PATH_MAX];
    char endpoint[64];
    struct tilestore *store;
    struct diskio *disk;
    struct nodehandlers_context context;
    struct rpc_server *server;
    pthread_t thread;
    bool serving;
    atomic_bool stop;
};

struct fixture {
    char dir[PATH_MAX];
    struct tilestore *store;
    struct diskio *disk;
    struct puller *puller;
    struct nodehandlers_context context;
    struct source *source; /* NULL unless set up with one */
    uint8_t payload[1024];
    uint8_t reply[4096];
};

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static const char *temp_root(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

static int setup_with(void **state, const struct puller_config *config)
{
    struct fixture *fixture = calloc(1, sizeof(*fixture));
    if (!fixture)
        return -1;
    snprintf(fixture->dir, sizeof(fixture->dir), "%s/test_puller.XXXXXX", temp_root());
    if (!mkdtemp(fixture->dir) || tilestore_open(fixture->dir, 0, &fixture->store) != 0 ||
        diskio_new(fixture->store, 0, &fixture->disk) != 0 ||
        puller_new(fixture->store, config, &fixture->puller) != 0) {
        diskio_destroy(&fixture->disk);
        tilestore_close(&fixture->store);
        free(fixture);
        return -1;
    }
    fixture->context.store = fixture->store;
    fixture->context.disk = fixture->disk;
    fixture->context.puller = fixture->puller;
    *state = fixture;
    return 0;
}

/* Jobs stay queued: no thread takes them. */
static int setup(void **state)
{
    struct puller_config config;
    puller_config_default(&config);
    config.threads = 0;
    config.queue_limit = TEST_QUEUE_LIMIT;
    return setup_with(state, &config);
}

static void *source_serve(void *arg)
{
    struct source *source = arg;
    while (!atomic_load(&source->stop)) {
        zmq_pollitem_t item = {rpc_server_socket(source->server), 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 20) > 0)
            rpc_server_handle_pending(source->server);
    }
    return NULL;
}

/* Serves the source from now on. */
static void source_start(struct source *source)
{
    assert_false(source->serving);
    assert_int_equal(pthread_create(&source->thread, NULL, source_serve, source), 0);
    source->serving = true;
}

/* The one datanode address NODE_LIST gives (the checked cases'). */
static const char *listed_address = "";

static int handle_node_list(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    uint8_t record[512];
    struct ts_writer writer;
    (void)ctx;
    (void)request;
    struct ts_node_list_rec node = {
        .id = 1, .machine = ts_str_of("here"), .address = ts_str_of(listed_address)};
    ts_writer_init(&writer, record, sizeof(record));
    ts_node_list_rec_write(&writer, &node);
    struct ts_node_list_rep reply = {.count = 1,
                                     .nodes = {(const char *)record, (uint32_t)writer.len}};
    int len = ts_node_list_rep_encode(&reply, response->payload, response->payload_cap);
    if (writer.failed || len < 0)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    return TS_OK;
}

/* One puller thread, and a source (not served until source_start()); with
 * check_sources, the source's server is meta too (see the file comment). */
static int setup_source_with(void **state, bool check_sources)
{
    static unsigned sources_made;
    static rpc_handler_fn handlers[TS_OP_MAX];
    struct puller_config config;
    struct source *source = calloc(1, sizeof(*source));

    if (!source)
        return -1;
    memcpy(handlers, nodehandlers_table, sizeof(handlers));
    handlers[TS_OP_NODE_LIST] = handle_node_list;
    puller_config_default(&config);
    config.threads = 1;
    if (check_sources)
        snprintf(config.meta_endpoint, sizeof(config.meta_endpoint),
                 "inproc://test-puller-source-%u", sources_made);
    if (setup_with(state, &config) != 0) {
        free(source);
        return -1;
    }
    struct fixture *fixture = *state;
    fixture->source = source;
    snprintf(source->dir, sizeof(source->dir), "%s/test_puller_source.XXXXXX", temp_root());
    snprintf(source->endpoint, sizeof(source->endpoint), "inproc://test-puller-source-%u",
             sources_made++);
    if (!mkdtemp(source->dir) || tilestore_open(source->dir, 0, &source->store) != 0 ||
        diskio_new(source->store, 0, &source->disk) != 0)
        return -1;
    source->context.store = source->store;
    source->context.disk = source->disk;
    source->server = rpc_server_new(source->endpoint, handlers, &source->context);
    return source->server ? 0 : -1;
}

static int setup_source(void **state)
{
    return setup_source_with(state, false);
}

static int setup_checked_source(void **state)
{
    return setup_source_with(state, true);
}

static void source_destroy(struct source *source)
{
    if (source->serving) {
        atomic_store(&source->stop, true);
        pthread_join(source->thread, NULL);
    }
    rpc_server_destroy(&source->server);
    nodehandlers_stats_fini(&source->context.stats);
    diskio_destroy(&source->disk);
    tilestore_close(&source->store);
    nftw(source->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(source);
}

static int teardown(void **state)
{
    struct fixture *fixture = *state;
    nodehandlers_stats_fini(&fixture->context.stats);
    puller_destroy(&fixture->puller);
    assert_null(fixture->puller);
    if (fixture->source)
        source_destroy(fixture->source);
    diskio_destroy(&fixture->disk);
    tilestore_close(&fixture->store);
    nftw(fixture->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fixture);
    return 0;
}

static void fill_pattern(uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

/* ---- tile store: install and checksum --------------------------------- */

static void test_install_and_checksum(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[70000], other[10], back[70000];
    uint64_t bytes = 1, tiles = 0, used = 0;
    uint32_t checksum = 1;
    size_t got = 0;

    fill_pattern(data, sizeof(data), 5);
    fill_pattern(other, sizeof(other), 9);
    assert_int_equal(tilestore_checksum(fixture->store, 300, 1, 2, &bytes, &checksum), -ENOENT);
    assert_int_equal(bytes, 0);
    assert_int_equal(checksum, 0);

    assert_int_equal(tilestore_install(fixture->store, 300, 1, 2, data, sizeof(data)), 0);
    assert_int_equal(tilestore_read(fixture->store, 300, 1, 2, 0, sizeof(back), back, &got), 0);
    assert_int_equal(got, sizeof(data));
    assert_memory_equal(back, data, sizeof(data));
    /* Read in several chunks, summed as one. */
    assert_int_equal(tilestore_checksum(fixture->store, 300, 1, 2, &bytes, &checksum), 0);
    assert_int_equal(bytes, sizeof(data));
    assert_int_equal(checksum, crc32c(0, data, sizeof(data)));
    assert_int_equal(tilestore_size(fixture->store, 300, 1, 2, &bytes), 0);
    assert_int_equal(bytes, sizeof(data));

    /* Never overwrites: the file stays as it was, and no staging file stays. */
    assert_int_equal(tilestore_install(fixture->store, 300, 1, 2, other, sizeof(other)), -EEXIST);
    assert_int_equal(tilestore_checksum(fixture->store, 300, 1, 2, &bytes, &checksum), 0);
    assert_int_equal(checksum, crc32c(0, data, sizeof(data)));
    char staging[PATH_MAX + 64];
    struct stat st;
    snprintf(staging, sizeof(staging), "%s/tiles/44/.300.1.2.pull", fixture->dir);
    assert_int_equal(stat(staging, &st), -1);

    /* Not counted until the loop thread says so. */
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 0);
    tilestore_count_installed(fixture->store, 300, 1, 2, sizeof(data));
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 1);
    assert_int_equal(used, sizeof(data));

    /* An empty tile is a file of 0 bytes. */
    assert_int_equal(tilestore_install(fixture->store, 300, 2, 2, NULL, 0), 0);
    assert_int_equal(tilestore_checksum(fixture->store, 300, 2, 2, &bytes, &checksum), 0);
    assert_int_equal(bytes, 0);
    assert_int_equal(checksum, 0);

    assert_int_equal(tilestore_install(fixture->store, 0, 1, 2, data, 1), -EINVAL);
    assert_int_equal(tilestore_checksum(fixture->store, 0, 1, 2, &bytes, &checksum), -EINVAL);
}

static void test_staging_removed_at_open(void **state)
{
    struct fixture *fixture = *state;
    char path[PATH_MAX + 64];
    struct stat st;
    uint64_t tiles = 0, used = 0;
    uint8_t data[100] = {0};

    assert_int_equal(tilestore_write(fixture->store, 301, 0, 1, 0, data, sizeof(data)), 0);
    /* What a crash in mid-pull leaves, and a dot file that is not ours. */
    snprintf(path, sizeof(path), "%s/tiles/45/.301.0.2.pull", fixture->dir);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, 50), 50);
    close(fd);
    char other[PATH_MAX + 64];
    snprintf(other, sizeof(other), "%s/tiles/45/.keep", fixture->dir);
    fd = open(other, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    close(fd);

    puller_destroy(&fixture->puller);
    diskio_destroy(&fixture->disk);
    tilestore_close(&fixture->store);
    assert_int_equal(tilestore_open(fixture->dir, 0, &fixture->store), 0);
    assert_int_equal(diskio_new(fixture->store, 0, &fixture->disk), 0);
    assert_int_equal(puller_new(fixture->store, NULL, &fixture->puller), 0);
    fixture->context.store = fixture->store;
    fixture->context.disk = fixture->disk;
    fixture->context.puller = fixture->puller;

    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(stat(other, &st), 0);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 1);
    assert_int_equal(used, sizeof(data));
}

/* ---- TILE_PULL handler ------------------------------------------------ */

static int tile_pull(struct fixture *fixture, uint64_t ino, uint64_t version, uint64_t new_version,
                     const char *source, struct ts_tile_pull_rep *reply,
                     struct rpc_response *response)
{
    struct ts_tile_pull_req req = {.ino = ino,
                                   .tile = 1,
                                   .version = version,
                                   .new_version = new_version,
                                   .source = ts_str_of(source)};
    int len = ts_tile_pull_req_encode(&req, fixture->payload, sizeof(fixture->payload));
    assert_true(len > 0);
    struct rpc_request request = {
        .header = {.magic = TS_PROTO_MAGIC,
                   .version = TS_PROTO_VERSION,
                   .type = TS_OP_TILE_PULL,
                   .request_id = 1,
                   .payload_bytes = (uint32_t)len},
        .payload = fixture->payload,
        .payload_len = (size_t)len,
    };
    memset(response, 0, sizeof(*response));
    response->payload = fixture->reply;
    response->payload_cap = sizeof(fixture->reply);
    int status = nodehandlers_table[TS_OP_TILE_PULL](&fixture->context, &request, response);
    memset(reply, 0, sizeof(*reply));
    if (status == TS_OK)
        assert_int_equal(ts_tile_pull_rep_decode(reply, response->payload, response->payload_len),
                         0);
    else
        assert_true(response->error_text[0] != '\0');
    return status;
}

static void test_pull_invalid(void **state)
{
    struct fixture *fixture = *state;
    struct ts_tile_pull_rep reply;
    struct rpc_response response;
    const char *good = "tcp://127.0.0.1:1";

    assert_int_equal(tile_pull(fixture, 500, 3, 3, good, &reply, &response), TS_ERR_INVAL);
    assert_non_null(strstr(response.error_text, "new_version"));
    assert_int_equal(tile_pull(fixture, 0, 3, 4, good, &reply, &response), TS_ERR_INVAL);
    const char *bad_sources[] = {"",
                                 "tcp://",
                                 "file:///etc/passwd",
                                 "inproc://x",
                                 "tcp://a b:1",
                                 "tcp://\x01:1",
                                 "127.0.0.1:7401"};
    for (size_t i = 0; i < sizeof(bad_sources) / sizeof(bad_sources[0]); i++) {
        assert_int_equal(tile_pull(fixture, 500, 3, 4, bad_sources[i], &reply, &response),
                         TS_ERR_INVAL);
        assert_non_null(strstr(response.error_text, "endpoint"));
    }
    char long_source[300];
    memset(long_source, 'a', sizeof(long_source));
    memcpy(long_source, "tcp://", 6);
    long_source[sizeof(long_source) - 1] = '\0';
    assert_int_equal(tile_pull(fixture, 500, 3, 4, long_source, &reply, &response), TS_ERR_INVAL);
    assert_int_equal(puller_active(fixture->puller), 0);

    /* Malformed: short, long, empty. */
    struct ts_tile_pull_req req = {
        .ino = 1, .version = 1, .new_version = 2, .source = ts_str_of(good)};
    int len = ts_tile_pull_req_encode(&req, fixture->payload, sizeof(fixture->payload));
    size_t lens[3] = {(size_t)len - 1, (size_t)len + 1, 0};
    fixture->payload[len] = 0;
    for (int i = 0; i < 3; i++) {
        struct rpc_request request = {.header = {.type = TS_OP_TILE_PULL},
                                      .payload = fixture->payload,
                                      .payload_len = lens[i]};
        memset(&response, 0, sizeof(response));
        response.payload = fixture->reply;
        response.payload_cap = sizeof(fixture->reply);
        assert_int_equal(nodehandlers_table[TS_OP_TILE_PULL](&fixture->context, &request, &response),
                         TS_ERR_BADMSG);
    }

    /* Without a puller. */
    fixture->context.puller = NULL;
    assert_int_equal(tile_pull(fixture, 500, 3, 4, good, &reply, &response), TS_ERR_NOTSUP);
    fixture->context.puller = fixture->puller;
}

static void test_pull_queue_is_bounded(void **state)
{
    struct fixture *fixture = *state;
    struct ts_tile_pull_rep reply;
    struct rpc_response response;
    const char *source = "tcp://127.0.0.1:1";

    for (uint64_t ino = 600; ino < 600 + TEST_QUEUE_LIMIT; ino++) {
        assert_int_equal(tile_pull(fixture, ino, 1, 2, source, &reply, &response), TS_OK);
        assert_int_equal(reply.state, TS_PULL_RUNNING);
    }
    assert_int_equal(puller_active(fixture->puller), TEST_QUEUE_LIMIT);
    /* Asking again is waiting, not a new job. */
    assert_int_equal(tile_pull(fixture, 600, 1, 2, source, &reply, &response), TS_OK);
    assert_int_equal(reply.state, TS_PULL_RUNNING);
    assert_int_equal(puller_active(fixture->puller), TEST_QUEUE_LIMIT);

    /* One more is refused, with a text that says why. */
    assert_int_equal(tile_pull(fixture, 700, 1, 2, source, &reply, &response), TS_ERR_BUSY);
    assert_non_null(strstr(response.error_text, "queued or running"));

    /* The same file from another source version conflicts with the job. */
    assert_int_equal(tile_pull(fixture, 600, 7, 2, source, &reply, &response), TS_ERR_BUSY);
    assert_non_null(strstr(response.error_text, "600.1.2"));
    assert_int_equal(puller_active(fixture->puller), TEST_QUEUE_LIMIT);
}

static void test_pull_of_existing_file_is_done(void **state)
{
    struct fixture *fixture = *state;
    struct ts_tile_pull_rep reply;
    struct rpc_response response;
    uint8_t data[3000];

    /* A pull that finished before a restart, or a file already here. */
    fill_pattern(data, sizeof(data), 11);
    assert_int_equal(tilestore_write(fixture->store, 800, 1, 9, 0, data, sizeof(data)), 0);
    assert_int_equal(tile_pull(fixture, 800, 8, 9, "tcp://127.0.0.1:1", &reply, &response), TS_OK);
    assert_int_equal(reply.state, TS_PULL_DONE);
    assert_int_equal(reply.bytes, sizeof(data));
    assert_int_equal(reply.checksum, crc32c(0, data, sizeof(data)));
    assert_int_equal(puller_active(fixture->puller), 0);
}

static void test_read_beyond_the_file_is_cut(void **state)
{
    struct fixture *fixture = *state;
    uint8_t data[5000];
    struct ts_tile_read_req req = {
        .ino = 801, .tile = 1, .version = 1, .offset = 100, .length = TS_MAX_DATA_BYTES};
    struct rpc_response response;

    fill_pattern(data, sizeof(data), 12);
    assert_int_equal(tilestore_write(fixture->store, 801, 1, 1, 0, data, sizeof(data)), 0);
    int len = ts_tile_read_req_encode(&req, fixture->payload, sizeof(fixture->payload));
    struct rpc_request request = {.header = {.type = TS_OP_TILE_READ},
                                  .payload = fixture->payload,
                                  .payload_len = (size_t)len};
    memset(&response, 0, sizeof(response));
    response.payload = fixture->reply;
    response.payload_cap = sizeof(fixture->reply);
    assert_int_equal(nodehandlers_table[TS_OP_TILE_READ](&fixture->context, &request, &response),
                     TS_OK);
    assert_int_equal(response.data_len, sizeof(data) - 100);
    assert_memory_equal(response.data, data + 100, sizeof(data) - 100);
    response.data_free(response.data, NULL);

    /* Past the end: a hole, no frame 1; a missing tile: NOENT (ask meta). */
    req.offset = 6000;
    len = ts_tile_read_req_encode(&req, fixture->payload, sizeof(fixture->payload));
    memset(&response, 0, sizeof(response));
    response.payload = fixture->reply;
    response.payload_cap = sizeof(fixture->reply);
    assert_int_equal(nodehandlers_table[TS_OP_TILE_READ](&fixture->context, &request, &response),
                     TS_OK);
    assert_null(response.data);
    req.ino = 802;
    len = ts_tile_read_req_encode(&req, fixture->payload, sizeof(fixture->payload));
    assert_int_equal(nodehandlers_table[TS_OP_TILE_READ](&fixture->context, &request, &response),
                     TS_ERR_NOENT);
    assert_null(response.data);
}

/* ---- pulls from a source in the test --------------------------------- */

/* Waits (deadline 10 s) until a job has finished: the eventfd is readable. */
static void wait_finished(struct fixture *fixture)
{
    struct pollfd item = {.fd = puller_event_fd(fixture->puller), .events = POLLIN};
    assert_int_equal(poll(&item, 1, 10000), 1);
}

static void test_pull_from_source(void **state)
{
    struct fixture *fixture = *state;
    struct source *source = fixture->source;
    const size_t len = (1u << 20) + 3;
    uint8_t *data = malloc(len);
    struct puller_result result;
    uint64_t tiles = 0, used = 0, bytes = 0;
    uint32_t checksum = 0;

    assert_non_null(data);
    fill_pattern(data, len, 21);
    assert_int_equal(tilestore_write(source->store, 900, 2, 1, 0, data, len), 0);
    source_start(source);
    struct puller_job job = {.ino = 900,
                             .tile = 2,
                             .version = 1,
                             .new_version = 2,
                             .source = source->endpoint,
                             .max_bytes = UINT64_MAX};
    assert_int_equal(puller_start(fixture->puller, &job), 0);
    /* The same file cannot be queued twice. */
    assert_int_equal(puller_start(fixture->puller, &job), -EINVAL);
    wait_finished(fixture);
    puller_collect(fixture->puller);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 1);
    assert_int_equal(used, len);

    puller_query(fixture->puller, &job, &result);
    assert_int_equal(result.state, PULLER_DONE);
    assert_int_equal(result.bytes, len);
    assert_int_equal(result.checksum, crc32c(0, data, len));
    assert_int_equal(tilestore_checksum(fixture->store, 900, 2, 2, &bytes, &checksum), 0);
    assert_int_equal(bytes, len);
    assert_int_equal(checksum, result.checksum);
    /* Collecting again counts nothing twice. */
    puller_collect(fixture->puller);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 1);

    /* A tile larger than the room given fails with the reason, and leaves nothing. */
    job.new_version = 3;
    job.max_bytes = 1000;
    assert_int_equal(puller_start(fixture->puller, &job), 0);
    wait_finished(fixture);
    puller_query(fixture->puller, &job, &result);
    assert_int_equal(result.state, PULLER_FAILED);
    assert_int_equal(result.status, TS_ERR_NOSPC);
    assert_non_null(strstr(result.text, "room"));
    assert_int_equal(tilestore_size(fixture->store, 900, 2, 3, &bytes), -ENOENT);
    puller_query(fixture->puller, &job, &result);
    assert_int_equal(result.state, PULLER_UNKNOWN);
    free(data);
}

/*
 * With the source check on, a pull copies only from an address in meta's
 * node list: another endpoint (here the same live store, unlisted) is
 * refused with TS_ERR_PERM before anything is read, and nothing is stored.
 */
static void test_pull_only_from_a_registered_datanode(void **state)
{
    struct fixture *fixture = *state;
    struct source *source = fixture->source;
    uint8_t data[4096];
    struct puller_result result;
    uint64_t bytes = 0;

    fill_pattern(data, sizeof(data), 5);
    assert_int_equal(tilestore_write(source->store, 910, 1, 1, 0, data, sizeof(data)), 0);
    source_start(source);
    struct puller_job job = {.ino = 910,
                             .tile = 1,
                             .version = 1,
                             .new_version = 2,
                             .source = source->endpoint,
                             .max_bytes = UINT64_MAX};
    listed_address = "tcp://192.0.2.1:7401"; /* the source is not a registered datanode */
    assert_int_equal(puller_start(fixture->puller, &job), 0);
    wait_finished(fixture);
    puller_collect(fixture->puller); /* takes the event, so the next wait waits */
    puller_query(fixture->puller, &job, &result);
    assert_int_equal(result.state, PULLER_FAILED);
    assert_int_equal(result.status, TS_ERR_PERM);
    assert_non_null(strstr(result.text, "not the address of a datanode"));
    assert_int_equal(tilestore_size(fixture->store, 910, 1, 2, &bytes), -ENOENT);

    listed_address = source->endpoint; /* now it is */
    assert_int_equal(puller_start(fixture->puller, &job), 0);
    wait_finished(fixture);
    puller_collect(fixture->puller);
    puller_query(fixture->puller, &job, &result);
    assert_int_equal(result.state, PULLER_DONE);
    assert_int_equal(tilestore_size(fixture->store, 910, 1, 2, &bytes), 0);
    assert_int_equal(bytes, sizeof(data));
    listed_address = "";
}

/*
 * A repair pulls many tiles from the same sources: meta's node list is
 * asked once for all of them (cached), and again for a source not in it
 * (which may have registered since): refused only after that.
 */
static void test_source_check_asks_meta_once(void **state)
{
    struct fixture *fixture = *state;
    struct source *source = fixture->source;
    uint8_t data[1000];
    struct puller_result result;
    const uint64_t pulls = 20;

    fill_pattern(data, sizeof(data), 9);
    for (uint64_t tile = 0; tile < pulls; tile++)
        assert_int_equal(tilestore_write(source->store, 920, tile, 1, 0, data, sizeof(data)), 0);
    source_start(source);
    listed_address = source->endpoint;
    for (uint64_t tile = 0; tile < pulls; tile++) {
        struct puller_job job = {.ino = 920,
                                 .tile = tile,
                                 .version = 1,
                                 .new_version = 2,
                                 .source = source->endpoint,
                                 .max_bytes = UINT64_MAX};
        assert_int_equal(puller_start(fixture->puller, &job), 0);
        wait_finished(fixture);
        puller_collect(fixture->puller);
        puller_query(fixture->puller, &job, &result);
        assert_int_equal(result.state, PULLER_DONE);
    }
    assert_int_equal(puller_node_list_calls(fixture->puller), 1);

    /* A source not in the list: meta is asked again, then it is refused. */
    struct puller_job stranger = {.ino = 920,
                                  .tile = 0,
                                  .version = 1,
                                  .new_version = 3,
                                  .source = "tcp://192.0.2.7:7401",
                                  .max_bytes = UINT64_MAX};
    assert_int_equal(puller_start(fixture->puller, &stranger), 0);
    wait_finished(fixture);
    puller_collect(fixture->puller);
    puller_query(fixture->puller, &stranger, &result);
    assert_int_equal(result.state, PULLER_FAILED);
    assert_int_equal(result.status, TS_ERR_PERM);
    assert_int_equal(puller_node_list_calls(fixture->puller), 2);
    listed_address = "";
}

/* Flips one byte of a stored tile file behind its store's back, as a bad disk would. */
static void flip_stored_byte(const char *data_dir, uint64_t ino, uint64_t tile, uint64_t version,
                             off_t at)
{
    char relative[TILESTORE_PATH_MAX];
    char path[PATH_MAX + TILESTORE_PATH_MAX];
    uint8_t byte = 0;
    assert_int_equal(tilestore_path(ino, tile, version, relative, sizeof(relative)), 0);
    snprintf(path, sizeof(path), "%s/%s", data_dir, relative);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &byte, 1, at), 1);
    byte ^= 0x20;
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    close(fd);
}

/*
 * A source whose tile file went bad: it refuses to send the bytes
 * (TS_ERR_CORRUPT), the pull fails with that status, and nothing is
 * stored or reported as made here.
 */
static void test_pull_of_corrupt_source_is_refused(void **state)
{
    struct fixture *fixture = *state;
    struct source *source = fixture->source;
    const size_t len = 300000;
    uint8_t *data = malloc(len);
    struct puller_result result;
    uint64_t tiles = 7, used = 7, bytes = 0;
    uint8_t records[4 * ts_tile_file_rec_bytes];

    assert_non_null(data);
    fill_pattern(data, len, 5);
    assert_int_equal(tilestore_write(source->store, 904, 1, 1, 0, data, len), 0);
    flip_stored_byte(source->dir, 904, 1, 1, 200001);
    source_start(source);
    struct puller_job job = {.ino = 904,
                             .tile = 1,
                             .version = 1,
                             .new_version = 2,
                             .source = source->endpoint,
                             .max_bytes = UINT64_MAX};
    assert_int_equal(puller_start(fixture->puller, &job), 0);
    wait_finished(fixture);
    puller_collect(fixture->puller);
    puller_query(fixture->puller, &job, &result);
    assert_int_equal(result.state, PULLER_FAILED);
    assert_int_equal(result.status, TS_ERR_CORRUPT);
    assert_int_equal(tilestore_size(fixture->store, 904, 1, 2, &bytes), -ENOENT);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 0);
    assert_int_equal(tilestore_take_created(fixture->store, records, 4), 0);
    free(data);
}

/*
 * A source without the file (a tile never written, or one it lost): the
 * pull is done with 0 bytes and checksum 0, as the source's fence says,
 * and stores nothing, since an empty file would read as a hole and hide
 * a loss (meta's record tells which it is).
 */
static void test_pull_of_missing_source_stores_nothing(void **state)
{
    struct fixture *fixture = *state;
    struct source *source = fixture->source;
    struct puller_result result;
    uint64_t tiles = 7, used = 7, bytes = 0;
    uint8_t records[4 * ts_tile_file_rec_bytes];

    source_start(source);
    struct puller_job job = {.ino = 903,
                             .tile = 4,
                             .version = 1,
                             .new_version = 2,
                             .source = source->endpoint,
                             .max_bytes = UINT64_MAX};
    assert_int_equal(puller_start(fixture->puller, &job), 0);
    wait_finished(fixture);
    puller_collect(fixture->puller);
    puller_query(fixture->puller, &job, &result);
    assert_int_equal(result.state, PULLER_DONE);
    assert_int_equal(result.bytes, 0);
    assert_int_equal(result.checksum, 0);
    assert_int_equal(tilestore_size(fixture->store, 903, 4, 2, &bytes), -ENOENT);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 0);
    assert_int_equal(used, 0);
    /* Nothing is reported to meta as written either. */
    assert_int_equal(tilestore_take_created(fixture->store, records, 4), 0);
}

static void test_garbage_while_queued(void **state)
{
    struct fixture *fixture = *state;
    struct puller_result result;
    struct puller_job job = {.ino = 901,
                             .tile = 0,
                             .version = 1,
                             .new_version = 2,
                             .source = "tcp://127.0.0.1:1",
                             .max_bytes = UINT64_MAX};

    assert_int_equal(puller_start(fixture->puller, &job), 0);
    assert_int_equal(tilestore_delete(fixture->store, 901, 0, 2), 0);
    assert_int_equal(puller_active(fixture->puller), 0);
    puller_query(fixture->puller, &job, &result);
    assert_int_equal(result.state, PULLER_FAILED);
    assert_int_equal(result.status, TS_ERR_NOENT);
    assert_non_null(strstr(result.text, "garbage"));
    puller_query(fixture->puller, &job, &result);
    assert_int_equal(result.state, PULLER_UNKNOWN);
}

static void test_garbage_while_running(void **state)
{
    struct fixture *fixture = *state;
    struct source *source = fixture->source;
    struct puller_result result;
    uint64_t tiles = 0, used = 0, bytes = 0;
    uint8_t data[5000];

    fill_pattern(data, sizeof(data), 22);
    assert_int_equal(tilestore_write(source->store, 902, 0, 1, 0, data, sizeof(data)), 0);
    assert_int_equal(tilestore_write(fixture->store, 903, 0, 1, 0, data, 10), 0);
    struct puller_job job = {.ino = 902,
                             .tile = 0,
                             .version = 1,
                             .new_version = 2,
                             .source = source->endpoint,
                             .max_bytes = UINT64_MAX};
    assert_int_equal(puller_start(fixture->puller, &job), 0);
    /* Give the thread time to take the job; it waits for the source's answer.
     * (Were it still queued, the garbage fails it all the same.) */
    struct timespec nap = {.tv_sec = 0, .tv_nsec = 100 * 1000000L};
    nanosleep(&nap, NULL);
    /* Meta's garbage deletion names the file before the pull has made it. */
    assert_int_equal(tilestore_delete(fixture->store, 902, 0, 2), 0);
    source_start(source);
    if (puller_active(fixture->puller) > 0)
        wait_finished(fixture);
    puller_collect(fixture->puller);

    /* The pulled file did not stay, and the counters are as before the pull. */
    assert_int_equal(tilestore_size(fixture->store, 902, 0, 2, &bytes), -ENOENT);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 1);
    assert_int_equal(used, 10);
    puller_query(fixture->puller, &job, &result);
    assert_int_equal(result.state, PULLER_FAILED);
    assert_int_equal(result.status, TS_ERR_NOENT);
    assert_non_null(strstr(result.text, "deleted"));
}

static void test_garbage_after_done(void **state)
{
    struct fixture *fixture = *state;
    struct source *source = fixture->source;
    struct puller_result result;
    uint64_t tiles = 0, used = 0, bytes = 0;
    uint8_t data[7000];

    fill_pattern(data, sizeof(data), 23);
    assert_int_equal(tilestore_write(source->store, 904, 0, 1, 0, data, sizeof(data)), 0);
    source_start(source);
    struct puller_job job = {.ino = 904,
                             .tile = 0,
                             .version = 1,
                             .new_version = 2,
                             .source = source->endpoint,
                             .max_bytes = UINT64_MAX};
    assert_int_equal(puller_start(fixture->puller, &job), 0);
    wait_finished(fixture);
    /* Deleted before the loop collected it: counted, then uncounted. */
    assert_int_equal(tilestore_size(fixture->store, 904, 0, 2, &bytes), 0);
    assert_int_equal(tilestore_delete(fixture->store, 904, 0, 2), 0);
    puller_collect(fixture->puller);
    tilestore_usage(fixture->store, &tiles, &used);
    assert_int_equal(tiles, 0);
    assert_int_equal(used, 0);
    assert_int_equal(tilestore_size(fixture->store, 904, 0, 2, &bytes), -ENOENT);
    /* Forgotten: a new ask would pull again. */
    puller_query(fixture->puller, &job, &result);
    assert_int_equal(result.state, PULLER_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_install_and_checksum, setup, teardown),
        cmocka_unit_test_setup_teardown(test_staging_removed_at_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pull_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pull_queue_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pull_of_existing_file_is_done, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_beyond_the_file_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pull_from_source, setup_source, teardown),
        cmocka_unit_test_setup_teardown(test_pull_only_from_a_registered_datanode,
                                        setup_checked_source, teardown),
        cmocka_unit_test_setup_teardown(test_source_check_asks_meta_once, setup_checked_source,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pull_of_missing_source_stores_nothing, setup_source,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pull_of_corrupt_source_is_refused, setup_source,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_garbage_while_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_while_running, setup_source, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_after_done, setup_source, teardown),
    };
    return cmocka_run_group_tests_name("puller", tests, NULL, NULL);
}
