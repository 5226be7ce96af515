/*
 * @file test_tile_pull.c
 * Peer-to-peer tile relocation between real daemons: one tessera-meta and
 * two tessera-datanodes (A and B) started from the build directory
 * (TESSERA_META, TESSERA_DATANODE) in a fresh temporary directory, talking
 * over ipc:// endpoints in it, so the test needs no free port. Each daemon
 * is waited for by its "ready" log line with a deadline (never a blind
 * sleep), and must exit 0 when stopped (a sanitizer report makes it exit
 * non-zero). The test drives the wire protocol itself with rpc_client:
 * TILE_WRITE to A, TILE_PULL on B until it is done, the bytes compared
 * on disk, TILE_FENCE freeze/lift/retire on A (the retirement across a
 * restart), a pull from a dead source, and two nodes pulling from each
 * other while both keep answering. TEST_TILE_PULL_KEEP=1 keeps the directory.
 */
#include "crc32c.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define START_DEADLINE_MS 30000
#define STOP_DEADLINE_MS 10000
#define PULL_DEADLINE_MS 20000
#define CALL_TIMEOUT_MS 5000
/* The puller's PING timeout (puller.h) and some margin for a loaded machine. */
#define DEAD_SOURCE_DEADLINE_MS 15000
/* How long a node may take to answer while it pulls. */
#define RESPONSIVE_MS 1000

struct daemon {
    const char *name;
    char endpoint[PATH_MAX];
    char data_dir[PATH_MAX];
    char log_path[PATH_MAX];
    pid_t pid;
    struct rpc_client *client;
};

struct cluster {
    char dir[128];
    const char *meta_binary;
    const char *datanode_binary;
    struct daemon meta;
    struct daemon node_a;
    struct daemon node_b;
};

static int64_t now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static void nap_ms(long ms)
{
    struct timespec nap = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&nap, NULL);
}

/* Prints the last lines of each daemon's log, for a failure message. */
static void dump_logs(const struct cluster *cluster)
{
    const struct daemon *daemons[3] = {&cluster->meta, &cluster->node_a, &cluster->node_b};
    for (int i = 0; i < 3; i++) {
        char line[1024];
        long count = 0, skip;
        FILE *log = fopen(daemons[i]->log_path, "r");
        if (!log)
            continue;
        while (fgets(line, sizeof(line), log))
            count++;
        rewind(log);
        skip = count > 30 ? count - 30 : 0;
        fprintf(stderr, "---- %s (last 30 lines)\n", daemons[i]->log_path);
        for (long n = 0; fgets(line, sizeof(line), log); n++) {
            if (n >= skip)
                fputs(line, stderr);
        }
        fclose(log);
    }
}

static bool log_contains(const struct daemon *daemon, const char *text)
{
    char line[1024];
    bool found = false;
    FILE *log = fopen(daemon->log_path, "r");
    if (!log)
        return false;
    while (!found && fgets(line, sizeof(line), log))
        found = strstr(line, text) != NULL;
    fclose(log);
    return found;
}

/* Starts the daemon with argv (NULL-terminated), its output appended to its log. */
static void spawn(struct daemon *daemon, char *const argv[])
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(daemon->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        /* Never outlive the test, whatever becomes of it. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
            _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    daemon->pid = pid;
}

/* Waits (with a deadline) for the daemon's "ready" line; fails if it died. */
static void wait_ready(struct cluster *cluster, struct daemon *daemon)
{
    int64_t deadline = now_ms() + START_DEADLINE_MS;
    int status;
    while (!log_contains(daemon, "ready:")) {
        if (waitpid(daemon->pid, &status, WNOHANG) == daemon->pid) {
            daemon->pid = 0;
            dump_logs(cluster);
            fail_msg("%s exited before it was ready (status %d)", daemon->name, status);
        }
        if (now_ms() > deadline) {
            dump_logs(cluster);
            fail_msg("%s not ready within %d ms", daemon->name, START_DEADLINE_MS);
        }
        nap_ms(20);
    }
}

static void start_meta(struct cluster *cluster)
{
    char *argv[] = {(char *)cluster->meta_binary, "--listen", cluster->meta.endpoint, "--data",
                    cluster->meta.data_dir,       NULL};
    spawn(&cluster->meta, argv);
    wait_ready(cluster, &cluster->meta);
}

static void start_datanode(struct cluster *cluster, struct daemon *node)
{
    char *argv[] = {(char *)cluster->datanode_binary,
                    "--listen",
                    node->endpoint,
                    "--meta",
                    cluster->meta.endpoint,
                    "--data",
                    node->data_dir,
                    "--machine",
                    (char *)node->name,
                    NULL};
    /* "ready" must be this run's: start each run with a fresh log. */
    unlink(node->log_path);
    spawn(node, argv);
    wait_ready(cluster, node);
    rpc_client_destroy(&node->client);
    node->client = rpc_client_new(node->endpoint);
    assert_non_null(node->client);
}

/* SIGTERM, then waits for a clean exit (status 0) within the deadline. */
static void stop(struct cluster *cluster, struct daemon *daemon)
{
    int64_t deadline = now_ms() + STOP_DEADLINE_MS;
    int status = 0;

    rpc_client_destroy(&daemon->client);
    if (daemon->pid <= 0)
        return;
    kill(daemon->pid, SIGTERM);
    while (waitpid(daemon->pid, &status, WNOHANG) != daemon->pid) {
        if (now_ms() > deadline) {
            kill(daemon->pid, SIGKILL);
            waitpid(daemon->pid, &status, 0);
            daemon->pid = 0;
            dump_logs(cluster);
            fail_msg("%s did not stop within %d ms of SIGTERM", daemon->name, STOP_DEADLINE_MS);
        }
        nap_ms(10);
    }
    daemon->pid = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        dump_logs(cluster);
        fail_msg("%s ended with status %d, not a clean exit 0", daemon->name, status);
    }
}

static void daemon_init(struct cluster *cluster, struct daemon *daemon, const char *name)
{
    daemon->name = name;
    snprintf(daemon->endpoint, sizeof(daemon->endpoint), "ipc://%s/%s.sock", cluster->dir, name);
    snprintf(daemon->data_dir, sizeof(daemon->data_dir), "%s/%s", cluster->dir, name);
    snprintf(daemon->log_path, sizeof(daemon->log_path), "%s/%s.log", cluster->dir, name);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    struct cluster *cluster = calloc(1, sizeof(*cluster));
    const char *tmp = getenv("TMPDIR");

    assert_non_null(cluster);
    cluster->meta_binary = getenv("TESSERA_META");
    cluster->datanode_binary = getenv("TESSERA_DATANODE");
    if (!cluster->meta_binary || !cluster->datanode_binary) {
        fprintf(stderr, "set TESSERA_META and TESSERA_DATANODE to the built daemons "
                        "(meson test does)\n");
        free(cluster);
        return -1;
    }
    /* ipc:// paths must fit in a socket address (108 bytes): keep the directory short. */
    snprintf(cluster->dir, sizeof(cluster->dir), "%s/tpull.XXXXXX",
             tmp && *tmp && strlen(tmp) < 60 ? tmp : "/tmp");
    assert_non_null(mkdtemp(cluster->dir));
    daemon_init(cluster, &cluster->meta, "meta");
    daemon_init(cluster, &cluster->node_a, "a");
    daemon_init(cluster, &cluster->node_b, "b");
    start_meta(cluster);
    start_datanode(cluster, &cluster->node_a);
    start_datanode(cluster, &cluster->node_b);
    *state = cluster;
    return 0;
}

static int teardown(void **state)
{
    struct cluster *cluster = *state;
    stop(cluster, &cluster->node_a);
    stop(cluster, &cluster->node_b);
    stop(cluster, &cluster->meta);
    const char *keep = getenv("TEST_TILE_PULL_KEEP");
    if (keep && strcmp(keep, "1") == 0)
        fprintf(stderr, "kept %s\n", cluster->dir);
    else
        nftw(cluster->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(cluster);
    return 0;
}

/* ---- protocol helpers ------------------------------------------------- */

static void fill_random(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (uint8_t)(x >> 24);
    }
}

/* One call; *text gets the error text of a failure. */
static int call(struct daemon *node, uint16_t op, const uint8_t *payload, int payload_len,
                const void *data, size_t data_len, struct rpc_reply *reply, char *text,
                size_t text_cap)
{
    assert_true(payload_len >= 0);
    int status = rpc_client_call(node->client, op, payload, (size_t)payload_len, data, data_len,
                                 CALL_TIMEOUT_MS, reply);
    if (text)
        rpc_reply_error_text(reply, text, text_cap);
    return status;
}

static int tile_write(struct daemon *node, uint64_t ino, uint64_t tile, uint64_t version,
                      const void *data, size_t len, char *text, size_t text_cap)
{
    uint8_t payload[128];
    struct rpc_reply reply;
    struct ts_tile_write_req req = {
        .ino = ino, .tile = tile, .version = version, .offset = 0, .crc = crc32c(0, data, len)};
    int status = call(node, TS_OP_TILE_WRITE, payload,
                      ts_tile_write_req_encode(&req, payload, sizeof(payload)), data, len, &reply,
                      text, text_cap);
    rpc_reply_release(&reply);
    if (status == TS_OK) {
        /* Durable, as a client's close would make it. */
        struct ts_tile_sync_req sync = {.count = 1};
        uint8_t record[ts_tile_file_rec_bytes];
        struct ts_writer writer;
        struct ts_tile_file_rec file = {.ino = ino, .tile = tile, .version = version};
        ts_writer_init(&writer, record, sizeof(record));
        ts_tile_file_rec_write(&writer, &file);
        sync.tiles.ptr = (const char *)record;
        sync.tiles.len = sizeof(record);
        status = call(node, TS_OP_TILE_SYNC, payload,
                      ts_tile_sync_req_encode(&sync, payload, sizeof(payload)), NULL, 0, &reply,
                      text, text_cap);
        rpc_reply_release(&reply);
    }
    return status;
}

/* Reads the whole tile into buf (cap bytes); *got is its length. */
static int tile_read(struct daemon *node, uint64_t ino, uint64_t tile, uint64_t version,
                     uint8_t *buf, size_t cap, size_t *got, char *text, size_t text_cap)
{
    uint8_t payload[128];
    struct rpc_reply reply;
    struct ts_tile_read_req req = {
        .ino = ino, .tile = tile, .version = version, .offset = 0, .length = (uint32_t)cap};
    int status = call(node, TS_OP_TILE_READ, payload,
                      ts_tile_read_req_encode(&req, payload, sizeof(payload)), NULL, 0, &reply,
                      text, text_cap);
    *got = 0;
    if (status == TS_OK && reply.data) {
        assert_true(reply.data_len <= cap);
        memcpy(buf, reply.data, reply.data_len);
        *got = reply.data_len;
    }
    rpc_reply_release(&reply);
    return status;
}

/* TILE_FENCE action; new_version: a relink's new name, else 0. */
static int tile_fence_as(struct daemon *node, uint64_t ino, uint64_t tile, uint64_t version,
                         uint32_t action, uint64_t new_version, struct ts_tile_fence_rep *rep,
                         char *text, size_t text_cap)
{
    uint8_t payload[128];
    struct rpc_reply reply;
    struct ts_tile_fence_req req = {.ino = ino,
                                    .tile = tile,
                                    .version = version,
                                    .action = action,
                                    .lease_ms = 30000,
                                    .new_version = new_version};
    int status = call(node, TS_OP_TILE_FENCE, payload,
                      ts_tile_fence_req_encode(&req, payload, sizeof(payload)), NULL, 0, &reply,
                      text, text_cap);
    memset(rep, 0, sizeof(*rep));
    if (status == TS_OK)
        assert_int_equal(ts_tile_fence_rep_decode(rep, reply.payload, reply.payload_len), 0);
    rpc_reply_release(&reply);
    return status;
}

static int tile_fence(struct daemon *node, uint64_t ino, uint64_t tile, uint64_t version,
                      uint32_t action, struct ts_tile_fence_rep *rep, char *text, size_t text_cap)
{
    return tile_fence_as(node, ino, tile, version, action, 0, rep, text, text_cap);
}

static int tile_pull(struct daemon *node, uint64_t ino, uint64_t tile, uint64_t version,
                     uint64_t new_version, const char *source, struct ts_tile_pull_rep *rep,
                     char *text, size_t text_cap)
{
    uint8_t payload[512];
    struct rpc_reply reply;
    struct ts_tile_pull_req req = {.ino = ino,
                                   .tile = tile,
                                   .version = version,
                                   .new_version = new_version,
                                   .source = ts_str_of(source)};
    int status = call(node, TS_OP_TILE_PULL, payload,
                      ts_tile_pull_req_encode(&req, payload, sizeof(payload)), NULL, 0, &reply,
                      text, text_cap);
    memset(rep, 0, sizeof(*rep));
    if (status == TS_OK)
        assert_int_equal(ts_tile_pull_rep_decode(rep, reply.payload, reply.payload_len), 0);
    rpc_reply_release(&reply);
    return status;
}

/* Asks until the pull is no longer running; returns its status (reply in *rep). */
static int pull_until_done(struct cluster *cluster, struct daemon *node, uint64_t ino,
                           uint64_t tile, uint64_t version, uint64_t new_version,
                           const char *source, struct ts_tile_pull_rep *rep, char *text,
                           size_t text_cap)
{
    int64_t deadline = now_ms() + PULL_DEADLINE_MS;
    for (;;) {
        int status = tile_pull(node, ino, tile, version, new_version, source, rep, text, text_cap);
        if (status != TS_OK || rep->state == TS_PULL_DONE)
            return status;
        assert_int_equal(rep->state, TS_PULL_RUNNING);
        if (now_ms() > deadline) {
            dump_logs(cluster);
            fail_msg("pull of %" PRIu64 ".%" PRIu64 " on %s still running after %d ms", ino, tile,
                     node->name, PULL_DEADLINE_MS);
        }
        nap_ms(20);
    }
}

/* The tile file's bytes on the node's disk, read directly; NULL if missing. */
static uint8_t *read_tile_file(const struct daemon *node, uint64_t ino, uint64_t tile,
                               uint64_t version, size_t *len)
{
    char path[PATH_MAX + 100];
    struct stat st;
    snprintf(path, sizeof(path), "%s/tiles/%" PRIu64 "/%" PRIu64 ".%" PRIu64 ".%" PRIu64,
             node->data_dir, ino % 256, ino, tile, version);
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    assert_int_equal(fstat(fileno(file), &st), 0);
    uint8_t *bytes = malloc((size_t)st.st_size + 1);
    assert_non_null(bytes);
    *len = fread(bytes, 1, (size_t)st.st_size, file);
    fclose(file);
    assert_int_equal(*len, (size_t)st.st_size);
    return bytes;
}

/* A PING answered within RESPONSIVE_MS. */
static void assert_responsive(struct cluster *cluster, struct daemon *node)
{
    struct rpc_reply reply;
    int64_t started = now_ms();
    int status = rpc_client_call(node->client, TS_OP_PING, NULL, 0, NULL, 0, RESPONSIVE_MS, &reply);
    rpc_reply_release(&reply);
    if (status != TS_OK) {
        dump_logs(cluster);
        fail_msg("%s did not answer a PING within %d ms while pulling (status %d)", node->name,
                 RESPONSIVE_MS, status);
    }
    assert_true(now_ms() - started <= RESPONSIVE_MS);
}

/* ---- cases ------------------------------------------------------------ */

/* A tile written to A, pulled by B: same bytes on B's disk, same checksum as A reports. */
static void test_pull_copies_a_tile(void **state)
{
    struct cluster *cluster = *state;
    const size_t len = (1u << 20) + 12345;
    uint8_t *data = malloc(len);
    uint8_t *back = malloc(TS_MAX_DATA_BYTES);
    struct ts_tile_pull_rep pull;
    struct ts_tile_fence_rep fence;
    char text[256];
    size_t got = 0;

    assert_non_null(data);
    assert_non_null(back);
    fill_random(data, len, 1);
    assert_int_equal(tile_write(&cluster->node_a, 1000, 3, 1, data, len, text, sizeof(text)),
                     TS_OK);

    assert_int_equal(pull_until_done(cluster, &cluster->node_b, 1000, 3, 1, 2,
                                     cluster->node_a.endpoint, &pull, text, sizeof(text)),
                     TS_OK);
    assert_int_equal(pull.bytes, len);
    assert_int_equal(pull.checksum, crc32c(0, data, len));

    /* B's file holds exactly A's bytes. */
    size_t stored_len = 0;
    uint8_t *stored = read_tile_file(&cluster->node_b, 1000, 3, 2, &stored_len);
    assert_non_null(stored);
    assert_int_equal(stored_len, len);
    assert_memory_equal(stored, data, len);
    free(stored);
    /* No staging file is left behind. */
    char staging[PATH_MAX + 100];
    struct stat st;
    snprintf(staging, sizeof(staging), "%s/tiles/%d/.1000.3.2.pull", cluster->node_b.data_dir,
             1000 % 256);
    assert_int_equal(stat(staging, &st), -1);

    /* The source's fence reports the same checksum: what a mover compares. */
    assert_int_equal(
        tile_fence(&cluster->node_a, 1000, 3, 1, TS_FENCE_FREEZE, &fence, text, sizeof(text)),
        TS_OK);
    assert_int_equal(fence.bytes, pull.bytes);
    assert_int_equal(fence.checksum, pull.checksum);
    assert_int_equal(
        tile_fence(&cluster->node_a, 1000, 3, 1, TS_FENCE_LIFT, &fence, text, sizeof(text)), TS_OK);

    /* Asking again keeps answering DONE; B serves the new version. */
    assert_int_equal(tile_pull(&cluster->node_b, 1000, 3, 1, 2, cluster->node_a.endpoint, &pull,
                               text, sizeof(text)),
                     TS_OK);
    assert_int_equal(pull.state, TS_PULL_DONE);
    assert_int_equal(pull.checksum, crc32c(0, data, len));
    assert_int_equal(
        tile_read(&cluster->node_b, 1000, 3, 2, back, TS_MAX_DATA_BYTES, &got, text, sizeof(text)),
        TS_OK);
    assert_int_equal(got, len);
    assert_memory_equal(back, data, len);

    /* After a restart of B the job is forgotten, but the file says it is done. */
    stop(cluster, &cluster->node_b);
    start_datanode(cluster, &cluster->node_b);
    assert_int_equal(tile_pull(&cluster->node_b, 1000, 3, 1, 2, cluster->node_a.endpoint, &pull,
                               text, sizeof(text)),
                     TS_OK);
    assert_int_equal(pull.state, TS_PULL_DONE);
    assert_int_equal(pull.bytes, len);
    assert_int_equal(pull.checksum, crc32c(0, data, len));

    /* A source tile that has no file is a hole: an empty copy. */
    assert_int_equal(pull_until_done(cluster, &cluster->node_b, 1001, 0, 1, 2,
                                     cluster->node_a.endpoint, &pull, text, sizeof(text)),
                     TS_OK);
    assert_int_equal(pull.bytes, 0);
    assert_int_equal(pull.checksum, 0);
    free(back);
    free(data);
}

/* Freeze, lift and retire on A, the retirement across a restart. */
static void test_fences_on_the_source(void **state)
{
    struct cluster *cluster = *state;
    uint8_t data[5000], back[8192];
    struct ts_tile_fence_rep fence;
    struct ts_tile_pull_rep pull;
    char text[256];
    size_t got = 0;

    fill_random(data, sizeof(data), 2);
    assert_int_equal(
        tile_write(&cluster->node_a, 2000, 0, 4, data, sizeof(data), text, sizeof(text)), TS_OK);

    assert_int_equal(
        tile_fence(&cluster->node_a, 2000, 0, 4, TS_FENCE_FREEZE, &fence, text, sizeof(text)),
        TS_OK);
    assert_int_equal(fence.bytes, sizeof(data));
    assert_int_equal(fence.checksum, crc32c(0, data, sizeof(data)));
    assert_int_equal(tile_write(&cluster->node_a, 2000, 0, 4, data, 10, text, sizeof(text)),
                     TS_ERR_STALE);
    assert_non_null(strstr(text, "being moved"));
    assert_int_equal(
        tile_read(&cluster->node_a, 2000, 0, 4, back, sizeof(back), &got, text, sizeof(text)),
        TS_OK);
    assert_int_equal(got, sizeof(data));

    assert_int_equal(
        tile_fence(&cluster->node_a, 2000, 0, 4, TS_FENCE_LIFT, &fence, text, sizeof(text)), TS_OK);
    assert_int_equal(tile_write(&cluster->node_a, 2000, 0, 4, data, 10, text, sizeof(text)), TS_OK);

    assert_int_equal(
        tile_fence(&cluster->node_a, 2000, 0, 4, TS_FENCE_RETIRE, &fence, text, sizeof(text)),
        TS_OK);
    assert_int_equal(fence.bytes, sizeof(data));
    assert_int_equal(
        tile_read(&cluster->node_a, 2000, 0, 4, back, sizeof(back), &got, text, sizeof(text)),
        TS_ERR_STALE);
    assert_non_null(strstr(text, "ask meta"));

    /* A pull of a retired source file fails with the source's reason. */
    assert_int_equal(pull_until_done(cluster, &cluster->node_b, 2000, 0, 4, 5,
                                     cluster->node_a.endpoint, &pull, text, sizeof(text)),
                     TS_ERR_STALE);
    assert_non_null(strstr(text, cluster->node_a.endpoint));
    assert_non_null(strstr(text, "moved away"));

    stop(cluster, &cluster->node_a);
    start_datanode(cluster, &cluster->node_a);
    assert_int_equal(
        tile_read(&cluster->node_a, 2000, 0, 4, back, sizeof(back), &got, text, sizeof(text)),
        TS_ERR_STALE);
    assert_int_equal(tile_write(&cluster->node_a, 2000, 0, 4, data, 10, text, sizeof(text)),
                     TS_ERR_STALE);
    /* Other versions of the tile are not touched. */
    assert_int_equal(tile_write(&cluster->node_a, 2000, 0, 6, data, 10, text, sizeof(text)), TS_OK);
}

/*
 * The relink a copy of an open file makes on its source: only of a frozen
 * file; the new name serves the same bytes and takes writes, the old one
 * is retired afterwards; both names survive a restart.
 */
static void test_relink_on_the_source(void **state)
{
    struct cluster *cluster = *state;
    static uint8_t data[200000], back[300000];
    struct ts_tile_fence_rep fence;
    char text[256];
    size_t got = 0;

    fill_random(data, sizeof(data), 4);
    assert_int_equal(
        tile_write(&cluster->node_a, 2500, 1, 3, data, sizeof(data), text, sizeof(text)), TS_OK);
    /* Unfrozen, its bytes could change before meta names the new version: refused. */
    assert_int_equal(tile_fence_as(&cluster->node_a, 2500, 1, 3, TS_FENCE_RELINK, 9, &fence, text,
                                   sizeof(text)),
                     TS_ERR_STALE);
    assert_non_null(strstr(text, "not frozen"));
    /* A relink names a new version; no other action does. */
    assert_int_equal(tile_fence_as(&cluster->node_a, 2500, 1, 3, TS_FENCE_RELINK, 3, &fence, text,
                                   sizeof(text)),
                     TS_ERR_INVAL);
    assert_int_equal(tile_fence_as(&cluster->node_a, 2500, 1, 3, TS_FENCE_RETIRE, 9, &fence, text,
                                   sizeof(text)),
                     TS_ERR_INVAL);
    assert_int_equal(
        tile_read(&cluster->node_a, 2500, 1, 3, back, sizeof(back), &got, text, sizeof(text)),
        TS_OK);
    assert_int_equal(got, sizeof(data));

    assert_int_equal(
        tile_fence(&cluster->node_a, 2500, 1, 3, TS_FENCE_FREEZE, &fence, text, sizeof(text)),
        TS_OK);
    assert_int_equal(tile_fence_as(&cluster->node_a, 2500, 1, 3, TS_FENCE_RELINK, 9, &fence, text,
                                   sizeof(text)),
                     TS_OK);
    assert_int_equal(fence.bytes, sizeof(data));
    assert_int_equal(fence.checksum, crc32c(0, data, sizeof(data)));
    /* Asked again (an answer lost): the same file, fine. A name another file has: refused. */
    assert_int_equal(tile_fence_as(&cluster->node_a, 2500, 1, 3, TS_FENCE_RELINK, 9, &fence, text,
                                   sizeof(text)),
                     TS_OK);
    assert_int_equal(tile_write(&cluster->node_a, 2500, 1, 10, data, 10, text, sizeof(text)),
                     TS_OK);
    assert_int_equal(tile_fence_as(&cluster->node_a, 2500, 1, 3, TS_FENCE_RELINK, 10, &fence, text,
                                   sizeof(text)),
                     TS_ERR_EXIST);

    /* Retired, the old name sends its clients to meta; the new one reads and writes. */
    assert_int_equal(
        tile_fence(&cluster->node_a, 2500, 1, 3, TS_FENCE_RETIRE, &fence, text, sizeof(text)),
        TS_OK);
    assert_int_equal(tile_write(&cluster->node_a, 2500, 1, 3, data, 10, text, sizeof(text)),
                     TS_ERR_STALE);
    assert_int_equal(
        tile_read(&cluster->node_a, 2500, 1, 9, back, sizeof(back), &got, text, sizeof(text)),
        TS_OK);
    assert_int_equal(got, sizeof(data));
    assert_memory_equal(back, data, sizeof(data));
    memset(data + 1000, 0x5a, 100);
    assert_int_equal(
        tile_write(&cluster->node_a, 2500, 1, 9, data, sizeof(data), text, sizeof(text)), TS_OK);

    stop(cluster, &cluster->node_a);
    start_datanode(cluster, &cluster->node_a);
    assert_int_equal(
        tile_read(&cluster->node_a, 2500, 1, 9, back, sizeof(back), &got, text, sizeof(text)),
        TS_OK);
    assert_int_equal(got, sizeof(data));
    assert_memory_equal(back, data, sizeof(data));
    assert_int_equal(
        tile_read(&cluster->node_a, 2500, 1, 3, back, sizeof(back), &got, text, sizeof(text)),
        TS_ERR_STALE);
}

/* A dead source fails in the puller's PING timeout with a text naming it; nodes keep serving. */
static void test_pull_from_dead_source(void **state)
{
    struct cluster *cluster = *state;
    struct ts_tile_pull_rep pull;
    char dead[PATH_MAX + 32];
    char text[256];
    uint8_t data[3000], back[4096];
    size_t got = 0;
    int status;

    snprintf(dead, sizeof(dead), "ipc://%s/nobody.sock", cluster->dir);
    fill_random(data, sizeof(data), 3);
    int64_t started = now_ms();
    for (;;) {
        status = tile_pull(&cluster->node_b, 3000, 0, 1, 2, dead, &pull, text, sizeof(text));
        if (status != TS_OK)
            break;
        assert_int_equal(pull.state, TS_PULL_RUNNING);
        /* Both nodes go on serving meanwhile. */
        assert_responsive(cluster, &cluster->node_b);
        assert_responsive(cluster, &cluster->node_a);
        assert_int_equal(
            tile_write(&cluster->node_b, 3001, 0, 1, data, sizeof(data), text, sizeof(text)),
            TS_OK);
        assert_int_equal(
            tile_read(&cluster->node_b, 3001, 0, 1, back, sizeof(back), &got, text, sizeof(text)),
            TS_OK);
        assert_int_equal(got, sizeof(data));
        if (now_ms() - started > DEAD_SOURCE_DEADLINE_MS) {
            dump_logs(cluster);
            fail_msg("pull from a dead source still running after %d ms", DEAD_SOURCE_DEADLINE_MS);
        }
        nap_ms(100);
    }
    assert_int_equal(status, TS_ERR_TIMEDOUT);
    assert_non_null(strstr(text, dead));
    assert_non_null(strstr(text, "did not answer"));
    size_t stored_len = 0;
    assert_null(read_tile_file(&cluster->node_b, 3000, 0, 2, &stored_len));

    /* The failure is told once: asking again starts the pull again. */
    assert_int_equal(tile_pull(&cluster->node_b, 3000, 0, 1, 2, dead, &pull, text, sizeof(text)),
                     TS_OK);
    assert_int_equal(pull.state, TS_PULL_RUNNING);
    /* ... and stopping the node does not wait for it (teardown checks the exit). */
}

/* A and B pull from each other at the same time. */
static void test_mutual_pulls(void **state)
{
    struct cluster *cluster = *state;
    const size_t len = 3u << 20;
    uint8_t *data_a = malloc(len);
    uint8_t *data_b = malloc(len);
    struct ts_tile_pull_rep pull_a, pull_b;
    char text[256];

    assert_non_null(data_a);
    assert_non_null(data_b);
    fill_random(data_a, len, 4);
    fill_random(data_b, len, 5);
    /* Several tiles each way, so pulls overlap. */
    for (uint64_t tile = 0; tile < 4; tile++) {
        assert_int_equal(
            tile_write(&cluster->node_a, 4000, tile, 1, data_a, len - tile, text, sizeof(text)),
            TS_OK);
        assert_int_equal(
            tile_write(&cluster->node_b, 4001, tile, 1, data_b, len - tile, text, sizeof(text)),
            TS_OK);
    }
    for (uint64_t tile = 0; tile < 4; tile++) {
        assert_int_equal(tile_pull(&cluster->node_b, 4000, tile, 1, 2, cluster->node_a.endpoint,
                                   &pull_b, text, sizeof(text)),
                         TS_OK);
        assert_int_equal(tile_pull(&cluster->node_a, 4001, tile, 1, 2, cluster->node_b.endpoint,
                                   &pull_a, text, sizeof(text)),
                         TS_OK);
    }
    for (uint64_t tile = 0; tile < 4; tile++) {
        assert_int_equal(pull_until_done(cluster, &cluster->node_b, 4000, tile, 1, 2,
                                         cluster->node_a.endpoint, &pull_b, text, sizeof(text)),
                         TS_OK);
        assert_int_equal(pull_until_done(cluster, &cluster->node_a, 4001, tile, 1, 2,
                                         cluster->node_b.endpoint, &pull_a, text, sizeof(text)),
                         TS_OK);
        assert_int_equal(pull_b.bytes, len - tile);
        assert_int_equal(pull_b.checksum, crc32c(0, data_a, len - tile));
        assert_int_equal(pull_a.bytes, len - tile);
        assert_int_equal(pull_a.checksum, crc32c(0, data_b, len - tile));
    }
    free(data_a);
    free(data_b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pull_copies_a_tile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fences_on_the_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relink_on_the_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pull_from_dead_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mutual_pulls, setup, teardown),
    };
    return cmocka_run_group_tests_name("tile_pull", tests, NULL, NULL);
}
