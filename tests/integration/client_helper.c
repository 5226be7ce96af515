/*
 * @file client_helper.c
 * The FUSE client's integration tests (test_relocation.sh) drive meta and
 * the datanodes with this small program, so that they depend on the wire
 * protocol only, not on the `tessera` command's output:
 *
 *   client_helper map META INO TILE MACHINE
 *       prints "node version copies read_node read_version"
 *   client_helper move META INO TILE TO_NODE copy|move [unfinished]
 *       relocates one tile as `tessera rebalance` does (MOVE_BEGIN,
 *       TILE_PULL, TILE_FENCE freeze, checksums compared, MOVE_COMMIT,
 *       TILE_FENCE retire or lift, MOVE_COMMIT again to finish); exit 3
 *       when a write changed the tile during the move (the move is
 *       aborted: try again). A copy of a file that is open is refused
 *       (TS_ERR_BUSY): a file closed just before may still be open in meta
 *       for a moment (a mount sends its releases in the background), so
 *       MOVE_BEGIN of a copy is asked again for up to 5 s. `unfinished`
 *       stops after the first MOVE_COMMIT, as a tool killed there would:
 *       the source stays frozen (until its lease ends) and the entry stays
 *       in the journal, COMMITTED
 *   client_helper freeze META INO TILE MS
 *       freezes the tile's primary file for MS ms (writes get TS_ERR_STALE)
 *   client_helper profile META INO start|stop|reset
 *   client_helper profile-get META INO
 *       prints one line per record: "tile machine reads writes bytes_read
 *       bytes_written local_bytes first_access_ns"
 *   client_helper node-reads META NODE
 *       prints the bytes datanode NODE served with TILE_READ (NODE_STATS)
 *   client_helper rewrite FILE TILES SECONDS
 *       keeps FILE open and rewrites its TILES tiles (of st_blksize bytes)
 *       one after another, each with fsync and a 20 ms pause, for SECONDS;
 *       prints the number of tile writes (steps) done
 *   client_helper verify FILE TILES STEPS
 *       checks that every tile of FILE holds what the last of STEPS steps
 *       of `rewrite` wrote to it: no write lost, none applied out of order
 *   client_helper probe ENDPOINT none|fresh=SERVER_PUB|KEYFILE OP...
 *       as an outsider (test_security.sh): for each OP (a message name
 *       such as LOOKUP), a new DEALER socket with no key, a freshly made
 *       key (checking the server against the server.pub file given) or
 *       the pair in KEYFILE (server.pub beside it) sends one OP
 *       request (empty payload) and waits 1 s; prints "OP answered" or
 *       "OP silent" per line. The TESSERA_KEY environment variable is
 *       not used for it
 *   client_helper attack ATTACK ENDPOINT ARGS...
 *       sends one real request of issue 30's attacks with the key in
 *       TESSERA_KEY (test_roles.sh), and prints "ATTACK STATUS-NUMBER
 *       status text" (or "ATTACK silent" when nothing came back):
 *         chmod META INO MODE UID      SETATTR mode and owner
 *         write NODE INO TILE VERSION  TILE_WRITE of 4096 bytes of 'X'
 *         read NODE INO TILE VERSION   TILE_READ of 4096 bytes
 *         throttle NODE BYTES_PER_SEC  NODE_THROTTLE
 *         retire NODE INO TILE VERSION TILE_FENCE retire
 *         pull NODE INO TILE VERSION SOURCE  TILE_PULL into VERSION + 1000
 *         remove META NODE_ID          NODE_ADMIN remove
 *         heartbeat META NODE_ID ADDRESS     HEARTBEAT with 1 PiB free
 *         forged NODE INO TILE VERSION TILE_WRITE as `write`, with a made-up
 *                                      tile token (32 bytes of 'A')
 *         tokenwrite META MAP_INO TILE NODE WRITE_INO WRITE_VERSION
 *                                      asks META for tile TILE of MAP_INO
 *                                      (TILE_MAP), takes its first holder's
 *                                      tile token and sends NODE a TILE_WRITE
 *                                      of (WRITE_INO, TILE, WRITE_VERSION)
 *                                      with it; WRITE_VERSION `=`: the
 *                                      holder's version. Prints the holder
 *                                      as "(holder N version V)" before the
 *                                      outcome
 *         tokenread META MAP_INO TILE NODE READ_INO READ_VERSION
 *                                      as tokenwrite, a TILE_READ of 4096
 *                                      bytes with the holder's token
 *         getattr META INO             GETATTR
 *         lookup META PARENT NAME      LOOKUP
 *         tilemap META INO TILE        TILE_MAP of one tile, no allocation
 *         drop META INO TILE NODE VERSION  REPLICA_DROP of that holder
 *         hexwrite NODE INO TILE VERSION EXPIRY HEX
 *                                      TILE_WRITE as `write`, with the tile
 *                                      token HEX (64 hex digits, as `token`
 *                                      prints) and its EXPIRY
 *   client_helper token META INO TILE
 *       prints the first holder of the tile and its tile token, as meta
 *       gives them to TESSERA_KEY: "node version expiry hex" (hex "-" when
 *       meta gave none), for a replay after the tile changed
 *   client_helper stream NODE UID INO TILE VERSION [EXPIRY HEX]
 *       as uid UID (a child process), connects to the datanode's local tile
 *       stream socket (its name from TILE_STREAM, asked with TESSERA_KEY)
 *       and asks for 4096 bytes of the tile, with the tile token HEX and
 *       its EXPIRY (as `token` prints them) if given; prints "served",
 *       "answered STATUS-NUMBER status text" (refused) or "closed"
 *   client_helper hog NODE COUNT SECONDS
 *       opens COUNT connections to the datanode's local tile stream socket,
 *       prints how many of them it still holds a second later ("held N")
 *       and keeps them for SECONDS
 *
 * A step s writes tile s % TILES with round s / TILES: every 4 KiB block
 * starts with the round (u64) and goes on with bytes of (round, offset).
 *
 * Exit 0 on success, 1 on failure (with a message), 2 on bad arguments.
 */
#include "crc32c.h"
#include "curve.h"
#include "keys.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"
#include "tiletoken.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sodium.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 10000

static int call(const char *endpoint, uint16_t op, const uint8_t *payload, int len,
                struct rpc_reply *reply)
{
    struct rpc_client *client = rpc_client_new(endpoint);
    memset(reply, 0, sizeof(*reply));
    if (!client || len < 0) {
        rpc_client_destroy(&client);
        return TS_ERR_INVAL;
    }
    int status = rpc_client_call(client, op, payload, (size_t)len, NULL, 0, TIMEOUT_MS, reply);
    if (status != TS_OK) {
        char text[256];
        rpc_reply_error_text(reply, text, sizeof(text));
        fprintf(stderr, "client_helper: %s to %s: %s %s\n", ts_op_name(op), endpoint,
                status_text(status), text);
    }
    rpc_client_destroy(&client);
    return status;
}

/* The address of datanode `node`, from meta's NODE_LIST. */
static int node_address(const char *meta, uint32_t node, char *out, size_t cap)
{
    struct rpc_reply reply;
    struct ts_node_list_rep list;
    struct ts_cursor cursor;
    int status = call(meta, TS_OP_NODE_LIST, NULL, 0, &reply);
    if (status == TS_OK && ts_node_list_rep_decode(&list, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    if (status == TS_OK) {
        status = TS_ERR_NOENT;
        ts_cursor_init(&cursor, list.nodes.ptr, list.nodes.len);
        for (uint32_t i = 0; i < list.count && !cursor.failed; i++) {
            struct ts_node_list_rec record;
            if (ts_node_list_rec_read(&cursor, &record) == 0 && record.id == node &&
                ts_str_copy(record.address, out, cap) == 0)
                status = TS_OK;
        }
    }
    rpc_reply_release(&reply);
    if (status != TS_OK)
        fprintf(stderr, "client_helper: no address for datanode %u\n", node);
    return status;
}

static int tile_map(const char *meta, uint64_t ino, uint64_t tile, const char *machine,
                    struct ts_tile_map_rec *record)
{
    uint8_t buf[512];
    struct ts_tile_map_req request = {
        .ino = ino, .first = tile, .count = 1, .machine = ts_str_of(machine)};
    struct ts_tile_map_rep map;
    struct rpc_reply reply;
    struct ts_cursor cursor;
    int status =
        call(meta, TS_OP_TILE_MAP, buf, ts_tile_map_req_encode(&request, buf, sizeof(buf)), &reply);
    if (status == TS_OK &&
        (ts_tile_map_rep_decode(&map, reply.payload, reply.payload_len) != 0 || map.count != 1))
        status = TS_ERR_BADMSG;
    if (status == TS_OK) {
        ts_cursor_init(&cursor, map.tiles.ptr, map.tiles.len);
        struct ts_replica_rec holder;
        bool bad = ts_tile_map_rec_read(&cursor, record) != 0;
        for (uint32_t h = 0; !bad && h < record->holders; h++)
            bad = ts_replica_rec_read(&cursor, &holder) != 0;
        if (bad || cursor.left != 0)
            status = TS_ERR_BADMSG;
    }
    rpc_reply_release(&reply);
    return status;
}

/* TILE_FENCE action; new_version: a relink's new name (a copy's source), else 0. */
static int fence_as(const char *address, uint64_t ino, uint64_t tile, uint64_t version,
                    uint32_t action, uint32_t lease_ms, uint64_t new_version,
                    struct ts_tile_fence_rep *out)
{
    uint8_t buf[128];
    struct ts_tile_fence_req request = {.ino = ino,
                                        .tile = tile,
                                        .version = version,
                                        .action = action,
                                        .lease_ms = lease_ms,
                                        .new_version = new_version};
    struct rpc_reply reply;
    int status = call(address, TS_OP_TILE_FENCE, buf,
                      ts_tile_fence_req_encode(&request, buf, sizeof(buf)), &reply);
    if (status == TS_OK && ts_tile_fence_rep_decode(out, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    rpc_reply_release(&reply);
    return status;
}

static int fence(const char *address, uint64_t ino, uint64_t tile, uint64_t version,
                 uint32_t action, uint32_t lease_ms, struct ts_tile_fence_rep *out)
{
    return fence_as(address, ino, tile, version, action, lease_ms, 0, out);
}

static int move_tile_op(const char *meta, uint16_t op, uint64_t ino, uint64_t tile)
{
    uint8_t buf[64];
    struct ts_move_tile_req request = {.ino = ino, .tile = tile};
    struct rpc_reply reply;
    int status = call(meta, op, buf, ts_move_tile_req_encode(&request, buf, sizeof(buf)), &reply);
    rpc_reply_release(&reply);
    return status;
}

static int do_move(const char *meta, uint64_t ino, uint64_t tile, uint32_t to_node, bool copy,
                   bool unfinished)
{
    struct ts_tile_map_rec record;
    char source[256], target[256];
    uint8_t buf[512];
    struct rpc_reply reply;
    struct ts_move_begin_rep begun;
    struct ts_tile_pull_rep pulled = {0};
    struct ts_tile_fence_rep fenced;

    if (tile_map(meta, ino, tile, "", &record) != TS_OK || record.node == 0 ||
        node_address(meta, record.node, source, sizeof(source)) != TS_OK ||
        node_address(meta, to_node, target, sizeof(target)) != TS_OK)
        return 1;
    struct ts_move_begin_req begin = {.ino = ino,
                                      .tile = tile,
                                      .version = record.version,
                                      .kind = copy ? TS_MOVE_COPY : TS_MOVE_MOVE,
                                      .from_node = record.node,
                                      .to_node = to_node};
    int status;
    for (int i = 0;; i++) {
        status = call(meta, TS_OP_MOVE_BEGIN, buf,
                      ts_move_begin_req_encode(&begin, buf, sizeof(buf)), &reply);
        if (status == TS_OK &&
            ts_move_begin_rep_decode(&begun, reply.payload, reply.payload_len) != 0)
            status = TS_ERR_BADMSG;
        rpc_reply_release(&reply);
        if (status != TS_ERR_BUSY || !copy || i >= 100)
            break;
        struct timespec pause = {0, 50 * 1000000L};
        nanosleep(&pause, NULL);
    }
    if (status != TS_OK)
        return 1;
    /* Pull until done; the target copies from the source by itself. */
    struct ts_tile_pull_req pull = {.ino = ino,
                                    .tile = tile,
                                    .version = record.version,
                                    .new_version = begun.new_version,
                                    .source = ts_str_of(source)};
    for (int i = 0; i < 1000; i++) {
        status = call(target, TS_OP_TILE_PULL, buf,
                      ts_tile_pull_req_encode(&pull, buf, sizeof(buf)), &reply);
        if (status == TS_OK &&
            ts_tile_pull_rep_decode(&pulled, reply.payload, reply.payload_len) != 0)
            status = TS_ERR_BADMSG;
        rpc_reply_release(&reply);
        if (status != TS_OK || pulled.state == TS_PULL_DONE)
            break;
        struct timespec pause = {0, 10 * 1000000L};
        nanosleep(&pause, NULL);
    }
    if (status != TS_OK || pulled.state != TS_PULL_DONE)
        goto abort;
    if (fence(source, ino, tile, record.version, TS_FENCE_FREEZE, 5000, &fenced) != TS_OK)
        goto abort;
    if (fenced.bytes != pulled.bytes || fenced.checksum != pulled.checksum) {
        fprintf(stderr,
                "client_helper: tile changed during the move (%" PRIu64 "/%u pulled, %" PRIu64
                "/%u now); aborted\n",
                pulled.bytes, pulled.checksum, fenced.bytes, fenced.checksum);
        fence(source, ino, tile, record.version, TS_FENCE_LIFT, 0, &fenced);
        move_tile_op(meta, TS_OP_MOVE_ABORT, ino, tile);
        return 3;
    }
    /* A copy's source takes the copy's version too, before the commit names it (proto.h). */
    if (copy && fence_as(source, ino, tile, record.version, TS_FENCE_RELINK, 0, begun.new_version,
                         &fenced) != TS_OK) {
        fence(source, ino, tile, record.version, TS_FENCE_LIFT, 0, &fenced);
        goto abort;
    }
    status = move_tile_op(meta, TS_OP_MOVE_COMMIT, ino, tile);
    if (status != TS_OK) {
        /* STALE: meta aborted the entry itself; otherwise abort it. */
        if (status != TS_ERR_STALE)
            move_tile_op(meta, TS_OP_MOVE_ABORT, ino, tile);
        fence(source, ino, tile, record.version, TS_FENCE_LIFT, 0, &fenced);
        return status == TS_ERR_STALE ? 3 : 1;
    }
    if (unfinished) {
        printf("committed %" PRIu64 ".%" PRIu64 " from %u to %u, unfinished\n", ino, tile,
               record.node, to_node);
        return 0;
    }
    status = fence(source, ino, tile, record.version, TS_FENCE_RETIRE, 0, &fenced);
    if (status == TS_OK)
        status = move_tile_op(meta, TS_OP_MOVE_COMMIT, ino, tile); /* finish */
    if (status != TS_OK)
        return 1;
    printf("moved %" PRIu64 ".%" PRIu64 " from %u to %u (%" PRIu64 " bytes)\n", ino, tile,
           record.node, to_node, pulled.bytes);
    return 0;
abort:
    move_tile_op(meta, TS_OP_MOVE_ABORT, ino, tile);
    return 1;
}

static int do_profile_get(const char *meta, uint64_t ino)
{
    uint64_t first = 0;
    for (;;) {
        uint8_t buf[128];
        struct ts_profile_get_req request = {.ino = ino, .first_tile = first, .max_records = 1000};
        struct ts_profile_get_rep got;
        struct rpc_reply reply;
        struct ts_cursor cursor;
        int status = call(meta, TS_OP_PROFILE_GET, buf,
                          ts_profile_get_req_encode(&request, buf, sizeof(buf)), &reply);
        if (status == TS_OK &&
            ts_profile_get_rep_decode(&got, reply.payload, reply.payload_len) != 0)
            status = TS_ERR_BADMSG;
        if (status != TS_OK) {
            rpc_reply_release(&reply);
            return 1;
        }
        ts_cursor_init(&cursor, got.records.ptr, got.records.len);
        for (uint32_t i = 0; i < got.count; i++) {
            struct ts_profile_get_rec record;
            if (ts_profile_get_rec_read(&cursor, &record) != 0)
                break;
            printf("%" PRIu64 " %.*s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                   " %" PRIu64 "\n",
                   record.tile, (int)record.machine.len, record.machine.ptr, record.reads,
                   record.writes, record.bytes_read, record.bytes_written, record.local_bytes,
                   record.first_access_ns);
        }
        bool done = got.done || got.count == 0;
        first = got.next_tile;
        rpc_reply_release(&reply);
        if (cursor.failed) {
            fprintf(stderr, "client_helper: PROFILE_GET records do not decode\n");
            return 1;
        }
        if (done)
            return 0;
    }
}

static int do_node_reads(const char *meta, uint32_t node)
{
    char address[256];
    uint8_t buf[64];
    struct ts_node_stats_req request = {.reset = 0};
    struct ts_node_stats_rep stats;
    struct rpc_reply reply;
    if (node_address(meta, node, address, sizeof(address)) != TS_OK)
        return 1;
    int status = call(address, TS_OP_NODE_STATS, buf,
                      ts_node_stats_req_encode(&request, buf, sizeof(buf)), &reply);
    if (status == TS_OK && ts_node_stats_rep_decode(&stats, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    if (status == TS_OK)
        printf("%" PRIu64 "\n", stats.bytes_read);
    rpc_reply_release(&reply);
    return status == TS_OK ? 0 : 1;
}

#define BLOCK 4096

static void fill_block(uint8_t *block, uint64_t round, uint64_t offset)
{
    memcpy(block, &round, sizeof(round));
    for (size_t i = sizeof(round); i < BLOCK; i++)
        block[i] = (uint8_t)(round * 7 + (offset / BLOCK) * 31 + i);
}

static int64_t now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static int do_rewrite(const char *path, uint64_t tiles, uint64_t seconds)
{
    struct stat st;
    int fd = open(path, O_RDWR);
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        return 1;
    }
    size_t tile_bytes = (size_t)st.st_blksize;
    uint8_t *buffer = malloc(tile_bytes);
    int64_t deadline = now_ms() + (int64_t)seconds * 1000;
    uint64_t step = 0;
    int result = 0;
    while (buffer && now_ms() < deadline) {
        uint64_t tile = step % tiles, round = step / tiles;
        uint64_t base = tile * tile_bytes;
        for (size_t block = 0; block < tile_bytes; block += BLOCK)
            fill_block(buffer + block, round, base + block);
        /* In 64 KiB pieces, as an application would write. */
        for (size_t done = 0; done < tile_bytes && result == 0; done += 65536) {
            if (pwrite(fd, buffer + done, 65536, (off_t)(base + done)) != 65536) {
                fprintf(stderr,
                        "client_helper: write of tile %" PRIu64 " (step %" PRIu64 ") failed: %s\n",
                        tile, step, strerror(errno));
                result = 1;
            }
        }
        if (result == 0 && fsync(fd) != 0) {
            fprintf(stderr, "client_helper: fsync after step %" PRIu64 " failed: %s\n", step,
                    strerror(errno));
            result = 1;
        }
        if (result != 0)
            break;
        step++;
        struct timespec pause = {0, 20 * 1000000L};
        nanosleep(&pause, NULL);
    }
    if (close(fd) != 0) {
        perror("client_helper: close");
        result = 1;
    }
    free(buffer);
    printf("%" PRIu64 "\n", step);
    return result;
}

static int do_verify(const char *path, uint64_t tiles, uint64_t steps)
{
    struct stat st;
    int fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        return 1;
    }
    size_t tile_bytes = (size_t)st.st_blksize;
    uint8_t expected[BLOCK], actual[BLOCK];
    int bad = 0;
    for (uint64_t tile = 0; tile < tiles && bad < 10; tile++) {
        /* The last step that wrote this tile (none: it holds round 0 of
         * whatever the test wrote first, not checked). */
        if (steps <= tile)
            continue;
        uint64_t round = (steps - 1 - tile) / tiles;
        for (size_t block = 0; block < tile_bytes && bad < 10; block += BLOCK) {
            uint64_t offset = tile * tile_bytes + block;
            fill_block(expected, round, offset);
            if (pread(fd, actual, BLOCK, (off_t)offset) != BLOCK ||
                memcmp(actual, expected, BLOCK) != 0) {
                uint64_t found;
                memcpy(&found, actual, sizeof(found));
                fprintf(stderr,
                        "client_helper: tile %" PRIu64 " block at %" PRIu64 ": round %" PRIu64
                        " expected, found %" PRIu64 "\n",
                        tile, offset, round, found);
                bad++;
            }
        }
    }
    close(fd);
    return bad ? 1 : 0;
}

/* The opcode named `name` (ts_op_name), or TS_OP_MAX. */
static uint16_t op_named(const char *name)
{
    for (uint16_t op = 0; op < TS_OP_MAX; op++)
        if (strcmp(ts_op_name(op), name) == 0)
            return op;
    return TS_OP_MAX;
}

/* See the file comment. Exit 0 when every probe was sent, 1 or 2 otherwise. */
static int probe(const char *endpoint, const char *key, char **ops, int op_count)
{
    struct keys_pair pair;
    char server_public[KEYS_Z85_LEN + 1] = "";
    char why[512];
    bool with_key = strcmp(key, "none") != 0;

    if (strncmp(key, "fresh=", 6) == 0) {
        /* A key the cluster never saw, against its real server key. */
        if (keys_pair_generate(&pair) != 0 ||
            keys_public_read(key + 6, server_public, why, sizeof(why)) != 0) {
            fprintf(stderr, "client_helper: no fresh key, or %s\n", why);
            return 1;
        }
    } else if (with_key) {
        char path[PATH_MAX + 16];
        const char *slash = strrchr(key, '/');
        if (keys_pair_read(key, &pair, why, sizeof(why)) != 0) {
            fprintf(stderr, "client_helper: %s\n", why);
            return 1;
        }
        snprintf(path, sizeof(path), "%.*s/server.pub", slash ? (int)(slash - key) : 1,
                 slash ? key : ".");
        if (keys_public_read(path, server_public, why, sizeof(why)) != 0) {
            fprintf(stderr, "client_helper: %s\n", why);
            return 1;
        }
    }
    for (int i = 0; i < op_count; i++) {
        uint16_t op = op_named(ops[i]);
        uint8_t frame[TS_HEADER_BYTES];
        uint8_t reply[4096];
        int zero = 0;
        if (op == TS_OP_MAX) {
            fprintf(stderr, "client_helper: no message named %s\n", ops[i]);
            return 2;
        }
        void *socket = zmq_socket(rpc_context(), ZMQ_DEALER);
        zmq_setsockopt(socket, ZMQ_LINGER, &zero, sizeof(zero));
        if (with_key) {
            zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, server_public, KEYS_Z85_LEN);
            zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, pair.public_z85, KEYS_Z85_LEN);
            zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, pair.secret_z85, KEYS_Z85_LEN);
        }
        size_t len =
            rpc_frame_build(frame, sizeof(frame), op, 1000 + (uint64_t)i, 0, TS_OK, NULL, 0, 0);
        if (zmq_connect(socket, endpoint) != 0 || zmq_send(socket, frame, len, 0) < 0) {
            fprintf(stderr, "client_helper: cannot send to %s: %s\n", endpoint,
                    zmq_strerror(zmq_errno()));
            zmq_close(socket);
            return 1;
        }
        zmq_pollitem_t item = {socket, 0, ZMQ_POLLIN, 0};
        bool answered =
            zmq_poll(&item, 1, 1000) > 0 && zmq_recv(socket, reply, sizeof(reply), 0) >= 0;
        printf("%s %s\n", ops[i], answered ? "answered" : "silent");
        zmq_close(socket);
    }
    return 0;
}

static uint64_t number(const char *text);

/*
 * The first holder of (ino, tile) as meta's TILE_MAP names it, with its
 * tile token copied into token (holder->token.len 0: none). A status.
 */
static int first_holder(const char *meta, uint64_t ino, uint64_t tile,
                        struct ts_replica_rec *holder, uint8_t token[TILETOKEN_MAC_BYTES])
{
    uint8_t buf[512];
    struct ts_tile_map_req request = {.ino = ino, .first = tile, .count = 1};
    struct ts_tile_map_rep map;
    struct ts_tile_map_rec record;
    struct rpc_reply reply;
    struct ts_cursor cursor;
    int status =
        call(meta, TS_OP_TILE_MAP, buf, ts_tile_map_req_encode(&request, buf, sizeof(buf)), &reply);
    if (status == TS_OK &&
        (ts_tile_map_rep_decode(&map, reply.payload, reply.payload_len) != 0 || map.count != 1))
        status = TS_ERR_BADMSG;
    if (status == TS_OK) {
        ts_cursor_init(&cursor, map.tiles.ptr, map.tiles.len);
        if (ts_tile_map_rec_read(&cursor, &record) != 0 || record.holders == 0 ||
            ts_replica_rec_read(&cursor, holder) != 0 || holder->token.len > TILETOKEN_MAC_BYTES)
            status = TS_ERR_BADMSG;
        else
            memcpy(token, holder->token.ptr, holder->token.len);
    }
    rpc_reply_release(&reply);
    if (status != TS_OK)
        fprintf(stderr, "client_helper: no holder of inode %llu tile %llu: %s\n",
                (unsigned long long)ino, (unsigned long long)tile, status_text(status));
    return status;
}

/* See the file comment: one attack, its outcome printed. Exit 0 when it was sent, 2 on bad usage.
 */
static int attack(int argc, char **argv)
{
    static uint8_t block[4096];
    uint8_t buf[512];
    const char *name = argv[2];
    const char *endpoint = argv[3];
    const void *data = NULL;
    size_t data_len = 0;
    uint16_t op;
    int len;

    memset(block, 'X', sizeof(block));
    if (strcmp(name, "chmod") == 0 && argc == 7) {
        struct ts_setattr_req m = {.ino = number(argv[4]),
                                   .valid = TS_SET_MODE | TS_SET_UID,
                                   .mode = (uint32_t)strtoul(argv[5], NULL, 8),
                                   .uid = (uint32_t)number(argv[6])};
        op = TS_OP_SETATTR;
        len = ts_setattr_req_encode(&m, buf, sizeof(buf));
    } else if ((strcmp(name, "write") == 0 || strcmp(name, "read") == 0) && argc == 7) {
        bool write = strcmp(name, "write") == 0;
        struct ts_tile_write_req w = {.ino = number(argv[4]),
                                      .tile = number(argv[5]),
                                      .version = number(argv[6]),
                                      .crc = crc32c(0, block, sizeof(block))};
        struct ts_tile_read_req r = {.ino = number(argv[4]),
                                     .tile = number(argv[5]),
                                     .version = number(argv[6]),
                                     .length = sizeof(block)};
        op = write ? TS_OP_TILE_WRITE : TS_OP_TILE_READ;
        len = write ? ts_tile_write_req_encode(&w, buf, sizeof(buf))
                    : ts_tile_read_req_encode(&r, buf, sizeof(buf));
        data = write ? block : NULL;
        data_len = write ? sizeof(block) : 0;
    } else if (strcmp(name, "forged") == 0 && argc == 7) {
        static uint8_t forged[TILETOKEN_MAC_BYTES];
        memset(forged, 'A', sizeof(forged));
        struct ts_tile_write_req w = {
            .ino = number(argv[4]),
            .tile = number(argv[5]),
            .version = number(argv[6]),
            .crc = crc32c(0, block, sizeof(block)),
            .token_expiry = tiletoken_now_ms() + 60000,
            .token = {.ptr = (const char *)forged, .len = sizeof(forged)}};
        op = TS_OP_TILE_WRITE;
        len = ts_tile_write_req_encode(&w, buf, sizeof(buf));
        data = block;
        data_len = sizeof(block);
    } else if (strcmp(name, "tokenread") == 0 && argc == 9) {
        static uint8_t token[TILETOKEN_MAC_BYTES];
        struct ts_replica_rec holder;
        if (first_holder(endpoint, number(argv[4]), number(argv[5]), &holder, token) != TS_OK)
            return 1;
        printf("(holder %u version %llu) ", holder.node, (unsigned long long)holder.version);
        struct ts_tile_read_req r = {
            .ino = number(argv[7]),
            .tile = number(argv[5]),
            .version = strcmp(argv[8], "=") == 0 ? holder.version : number(argv[8]),
            .length = sizeof(block),
            .token_expiry = holder.token_expiry,
            .token = {.ptr = (const char *)token, .len = holder.token.len}};
        endpoint = argv[6];
        op = TS_OP_TILE_READ;
        len = ts_tile_read_req_encode(&r, buf, sizeof(buf));
    } else if (strcmp(name, "tokenwrite") == 0 && argc == 9) {
        static uint8_t token[TILETOKEN_MAC_BYTES];
        struct ts_replica_rec holder;
        if (first_holder(endpoint, number(argv[4]), number(argv[5]), &holder, token) != TS_OK)
            return 1;
        printf("(holder %u version %llu) ", holder.node, (unsigned long long)holder.version);
        struct ts_tile_write_req w = {
            .ino = number(argv[7]),
            .tile = number(argv[5]),
            .version = strcmp(argv[8], "=") == 0 ? holder.version : number(argv[8]),
            .crc = crc32c(0, block, sizeof(block)),
            .token_expiry = holder.token_expiry,
            .token = {.ptr = (const char *)token, .len = holder.token.len}};
        endpoint = argv[6];
        op = TS_OP_TILE_WRITE;
        len = ts_tile_write_req_encode(&w, buf, sizeof(buf));
        data = block;
        data_len = sizeof(block);
    } else if (strcmp(name, "hexwrite") == 0 && argc == 9) {
        static uint8_t token[TILETOKEN_MAC_BYTES];
        size_t token_len = 0;
        if (sodium_hex2bin(token, sizeof(token), argv[8], strlen(argv[8]), NULL, &token_len,
                           NULL) != 0)
            return 2;
        struct ts_tile_write_req w = {.ino = number(argv[4]),
                                      .tile = number(argv[5]),
                                      .version = number(argv[6]),
                                      .crc = crc32c(0, block, sizeof(block)),
                                      .token_expiry = number(argv[7]),
                                      .token = {.ptr = (const char *)token, .len = token_len}};
        op = TS_OP_TILE_WRITE;
        len = ts_tile_write_req_encode(&w, buf, sizeof(buf));
        data = block;
        data_len = sizeof(block);
    } else if (strcmp(name, "getattr") == 0 && argc == 5) {
        struct ts_getattr_req m = {.ino = number(argv[4])};
        op = TS_OP_GETATTR;
        len = ts_getattr_req_encode(&m, buf, sizeof(buf));
    } else if (strcmp(name, "lookup") == 0 && argc == 6) {
        struct ts_lookup_req m = {.parent = number(argv[4]), .name = ts_str_of(argv[5])};
        op = TS_OP_LOOKUP;
        len = ts_lookup_req_encode(&m, buf, sizeof(buf));
    } else if (strcmp(name, "tilemap") == 0 && argc == 6) {
        struct ts_tile_map_req m = {
            .ino = number(argv[4]), .first = number(argv[5]), .count = 1, .machine = ts_str_of("x")};
        op = TS_OP_TILE_MAP;
        len = ts_tile_map_req_encode(&m, buf, sizeof(buf));
    } else if (strcmp(name, "drop") == 0 && argc == 8) {
        struct ts_replica_drop_req m = {.ino = number(argv[4]),
                                        .tile = number(argv[5]),
                                        .node = (uint32_t)number(argv[6]),
                                        .version = number(argv[7]),
                                        .machine = ts_str_of("x")};
        op = TS_OP_REPLICA_DROP;
        len = ts_replica_drop_req_encode(&m, buf, sizeof(buf));
    } else if (strcmp(name, "throttle") == 0 && argc == 5) {
        struct ts_node_throttle m = {.bytes_per_sec = number(argv[4])};
        op = TS_OP_NODE_THROTTLE;
        len = ts_node_throttle_encode(&m, buf, sizeof(buf));
    } else if (strcmp(name, "retire") == 0 && argc == 7) {
        struct ts_tile_fence_req m = {.ino = number(argv[4]),
                                      .tile = number(argv[5]),
                                      .version = number(argv[6]),
                                      .action = TS_FENCE_RETIRE};
        op = TS_OP_TILE_FENCE;
        len = ts_tile_fence_req_encode(&m, buf, sizeof(buf));
    } else if (strcmp(name, "pull") == 0 && argc == 8) {
        struct ts_tile_pull_req m = {.ino = number(argv[4]),
                                     .tile = number(argv[5]),
                                     .version = number(argv[6]),
                                     .new_version = number(argv[6]) + 1000,
                                     .source = ts_str_of(argv[7])};
        op = TS_OP_TILE_PULL;
        len = ts_tile_pull_req_encode(&m, buf, sizeof(buf));
    } else if (strcmp(name, "remove") == 0 && argc == 5) {
        struct ts_node_admin_req m = {.node_id = (uint32_t)number(argv[4]),
                                      .admin = TS_NODE_REMOVED};
        op = TS_OP_NODE_ADMIN;
        len = ts_node_admin_req_encode(&m, buf, sizeof(buf));
    } else if (strcmp(name, "heartbeat") == 0 && argc == 6) {
        struct ts_heartbeat_req m = {.node_id = (uint32_t)number(argv[4]),
                                     .machine = ts_str_of("attacker"),
                                     .address = ts_str_of(argv[5]),
                                     .capacity = 1ull << 50,
                                     .free_bytes = 1ull << 50,
                                     .incarnation = 0x5eed};
        op = TS_OP_HEARTBEAT;
        len = ts_heartbeat_req_encode(&m, buf, sizeof(buf));
    } else {
        fprintf(stderr, "client_helper: attack %s: unknown, or wrong arguments\n", name);
        return 2;
    }
    if (len < 0)
        return 2;
    struct rpc_client *client = rpc_client_new(endpoint);
    struct rpc_reply reply;
    if (!client)
        return 2;
    int status = rpc_client_call(client, op, buf, (size_t)len, data, data_len, 3000, &reply);
    if (status == TS_ERR_TIMEDOUT) {
        printf("%s silent\n", name);
    } else {
        char text[256];
        rpc_reply_error_text(&reply, text, sizeof(text));
        printf("%s %d %s%s%s\n", name, status, status_text(status), text[0] ? ": " : "", text);
    }
    rpc_reply_release(&reply);
    rpc_client_destroy(&client);
    return 0;
}

/* The abstract address of datanode node's local tile stream socket (TILE_STREAM). */
static int stream_address(const char *node, struct sockaddr_un *address, socklen_t *len)
{
    struct rpc_reply reply;
    struct ts_tile_stream_rep answer;
    char name[TS_STREAM_LOCAL_MAX];
    int status = call(node, TS_OP_TILE_STREAM, NULL, 0, &reply);
    if (status == TS_OK &&
        (ts_tile_stream_rep_decode(&answer, reply.payload, reply.payload_len) != 0 ||
         answer.local.len == 0 || answer.local.len >= sizeof(name)))
        status = TS_ERR_BADMSG;
    if (status == TS_OK) {
        memcpy(name, answer.local.ptr, answer.local.len);
        name[answer.local.len] = '\0';
        *len = util_abstract_address(name, address);
    }
    rpc_reply_release(&reply);
    return status;
}

/* See the file comment (stream). */
static int stream_as(const char *node, uid_t uid, uint64_t ino, uint64_t tile, uint64_t version,
                     uint64_t expiry, const char *hex)
{
    uint8_t token[TILETOKEN_MAC_BYTES];
    size_t token_len = 0;
    if (hex && sodium_hex2bin(token, sizeof(token), hex, strlen(hex), NULL, &token_len, NULL) != 0)
        return 2;
    struct sockaddr_un address;
    socklen_t len = 0;
    if (stream_address(node, &address, &len) != TS_OK)
        return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        uint8_t bytes[TS_STREAM_REQ_BYTES];
        uint8_t head[TS_STREAM_REP_BYTES];
        struct ts_tile_read_req request = {
            .ino = ino,
            .tile = tile,
            .version = version,
            .length = 4096,
            .token_expiry = token_len ? expiry : 0,
            .token = {.ptr = (const char *)token, .len = token_len}};
        if (setgid((gid_t)uid) != 0 || setuid(uid) != 0)
            _exit(1);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&address, len) != 0)
            _exit(1);
        ts_stream_req_encode(&request, TS_STREAM_READ, 0, bytes);
        (void)send(fd, bytes, sizeof(bytes), MSG_NOSIGNAL);
        struct pollfd item = {.fd = fd, .events = POLLIN};
        if (poll(&item, 1, 5000) != 1) {
            printf("no answer\n");
            fflush(stdout);
            _exit(0);
        }
        /* Closed with our request unread: end of stream, or ECONNRESET. */
        ssize_t got = recv(fd, head, sizeof(head), MSG_WAITALL);
        int32_t status = TS_OK;
        uint32_t data_bytes = 0;
        if (got == (ssize_t)sizeof(head) && ts_stream_rep_decode(&status, &data_bytes, head) == TS_OK &&
            status != TS_OK)
            printf("answered %d %s\n", status, status_text(status));
        else
            printf("%s\n", got == (ssize_t)sizeof(head) ? "served" : got <= 0 ? "closed" : "cut short");
        fflush(stdout); /* _exit() does not */
        _exit(0);
    }
    int status = 0;
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* See the file comment (hog). */
static int hog(const char *node, unsigned count, unsigned seconds)
{
    struct sockaddr_un address;
    socklen_t len = 0;
    int *fds = calloc(count, sizeof(*fds));
    unsigned held = 0;
    if (!fds || stream_address(node, &address, &len) != TS_OK) {
        free(fds);
        return 1;
    }
    for (unsigned i = 0; i < count; i++) {
        fds[i] = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fds[i] >= 0 && connect(fds[i], (struct sockaddr *)&address, len) != 0) {
            close(fds[i]);
            fds[i] = -1;
        }
    }
    sleep(1);
    for (unsigned i = 0; i < count; i++) {
        struct pollfd item = {.fd = fds[i], .events = POLLIN};
        uint8_t byte;
        if (fds[i] >= 0 && !(poll(&item, 1, 0) == 1 && recv(fds[i], &byte, 1, 0) == 0))
            held++;
    }
    printf("held %u\n", held);
    fflush(stdout);
    sleep(seconds);
    for (unsigned i = 0; i < count; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
    return 0;
}

static uint64_t number(const char *text)
{
    char *end = NULL;
    unsigned long long value = strtoull(text, &end, 10);
    if (!end || *end != '\0') {
        fprintf(stderr, "client_helper: not a number: %s\n", text);
        exit(2);
    }
    return value;
}

int main(int argc, char **argv)
{
    /* A cluster with keys: its admin key (lib.sh admin_key), for the calls to meta. */
    const char *key = getenv("TESSERA_KEY");
    char why[512];
    if (key && *key && curve_use_key(key, why, sizeof(why)) != 0) {
        fprintf(stderr, "client_helper: %s\n", why);
        return 2;
    }
    if (argc >= 5 && strcmp(argv[1], "probe") == 0)
        return probe(argv[2], argv[3], argv + 4, argc - 4);
    if (argc >= 5 && strcmp(argv[1], "attack") == 0)
        return attack(argc, argv);
    if ((argc == 7 || argc == 9) && strcmp(argv[1], "stream") == 0)
        return stream_as(argv[2], (uid_t)number(argv[3]), number(argv[4]), number(argv[5]),
                         number(argv[6]), argc == 9 ? number(argv[7]) : 0,
                         argc == 9 ? argv[8] : NULL);
    if (argc == 5 && strcmp(argv[1], "hog") == 0)
        return hog(argv[2], (unsigned)number(argv[3]), (unsigned)number(argv[4]));
    if (argc == 6 && strcmp(argv[1], "map") == 0) {
        struct ts_tile_map_rec record;
        if (tile_map(argv[2], number(argv[3]), number(argv[4]), argv[5], &record) != TS_OK)
            return 1;
        /* Third: the holders besides the primary. */
        printf("%u %" PRIu64 " %u %u %" PRIu64 "\n", record.node, record.version,
               record.holders > 0 ? record.holders - 1 : 0, record.read_node, record.read_version);
        return 0;
    }
    if ((argc == 7 || (argc == 8 && strcmp(argv[7], "unfinished") == 0)) &&
        strcmp(argv[1], "move") == 0 &&
        (strcmp(argv[6], "copy") == 0 || strcmp(argv[6], "move") == 0))
        return do_move(argv[2], number(argv[3]), number(argv[4]), (uint32_t)number(argv[5]),
                       strcmp(argv[6], "copy") == 0, argc == 8);
    if (argc == 5 && strcmp(argv[1], "token") == 0) {
        uint8_t token[TILETOKEN_MAC_BYTES];
        char hex[2 * TILETOKEN_MAC_BYTES + 1] = "-";
        struct ts_replica_rec holder;
        if (first_holder(argv[2], number(argv[3]), number(argv[4]), &holder, token) != TS_OK)
            return 1;
        if (holder.token.len == TILETOKEN_MAC_BYTES)
            sodium_bin2hex(hex, sizeof(hex), token, sizeof(token));
        printf("%u %" PRIu64 " %" PRIu64 " %s\n", holder.node, holder.version, holder.token_expiry,
               hex);
        return 0;
    }
    if (argc == 6 && strcmp(argv[1], "freeze") == 0) {
        struct ts_tile_map_rec record;
        char address[256];
        struct ts_tile_fence_rep fenced;
        uint64_t ino = number(argv[3]), tile = number(argv[4]);
        if (tile_map(argv[2], ino, tile, "", &record) != TS_OK ||
            node_address(argv[2], record.node, address, sizeof(address)) != TS_OK)
            return 1;
        return fence(address, ino, tile, record.version, TS_FENCE_FREEZE, (uint32_t)number(argv[5]),
                     &fenced) == TS_OK
                   ? 0
                   : 1;
    }
    if (argc == 5 && strcmp(argv[1], "profile") == 0) {
        uint8_t buf[64];
        struct rpc_reply reply;
        uint32_t action = strcmp(argv[4], "start") == 0  ? TS_PROFILE_START
                          : strcmp(argv[4], "stop") == 0 ? TS_PROFILE_STOP
                                                         : TS_PROFILE_RESET;
        struct ts_profile_set_req request = {.ino = number(argv[3]), .action = action};
        int status = call(argv[2], TS_OP_PROFILE_SET, buf,
                          ts_profile_set_req_encode(&request, buf, sizeof(buf)), &reply);
        rpc_reply_release(&reply);
        return status == TS_OK ? 0 : 1;
    }
    if (argc == 4 && strcmp(argv[1], "profile-get") == 0)
        return do_profile_get(argv[2], number(argv[3]));
    if (argc == 4 && strcmp(argv[1], "node-reads") == 0)
        return do_node_reads(argv[2], (uint32_t)number(argv[3]));
    if (argc == 5 && strcmp(argv[1], "rewrite") == 0)
        return do_rewrite(argv[2], number(argv[3]), number(argv[4]));
    if (argc == 5 && strcmp(argv[1], "verify") == 0)
        return do_verify(argv[2], number(argv[3]), number(argv[4]));
    fprintf(stderr, "usage: client_helper map|move|freeze|profile|profile-get|node-reads|"
                    "rewrite|verify ... "
                    "(see the top of tests/integration/client_helper.c)\n");
    return 2;
}
