/*
 * @file nodeadmin.c
 * See nodeadmin.h. The throttle travels as NODE_THROTTLE, the counters as
 * NODE_STATS, straight to the datanode (meta only tells where it is): the datanode applies it at
 * once and reports it in its next heartbeat, so `tessera status` shows it within a second. MB here
 * is 10^6 bytes, as in --throttle-mbps.
 */
#include "nodeadmin.h"

#include "cliargs.h"
#include "clusterconf.h"
#include "fmt.h"
#include "jsonname.h"
#include "toolmeta.h"
#include "metatarget.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODEADMIN_DEFAULT_TIMEOUT_MS 2000
#define NODEADMIN_WHO "tessera node"
#define NODEADMIN_MB 1000000.0
#define NODEADMIN_MAX_MBPS 1000000.0
/* The slowest a datanode accepts (HANDLERS_MIN_THROTTLE_BYTES_PER_SEC). */
#define NODEADMIN_MIN_MBPS 1.0

enum nodeadmin_action {
    NODEADMIN_THROTTLE,
    NODEADMIN_STATS,
    NODEADMIN_DRAIN,
    NODEADMIN_REMOVE,
    NODEADMIN_ACTIVATE,
};

struct nodeadmin_options {
    struct metatarget target; /* --state | --meta, --timeout-ms */
    enum nodeadmin_action action;
    long node_id;
    uint64_t bytes_per_sec; /* throttle: 0 = off */
    bool json;              /* stats */
    bool reset;             /* stats */
};

static void nodeadmin_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera node throttle ID R|off [--state DIR | --meta ENDPOINT]\n"
            "                                    [--timeout-ms MS]\n"
            "       tessera node stats ID [--json] [--reset] [--state DIR | --meta ENDPOINT]\n"
            "                                    [--timeout-ms MS]\n"
            "       tessera node drain|remove|activate ID [--state DIR | --meta ENDPOINT]\n"
            "                                    [--timeout-ms MS]\n"
            "\n"
            "drain: online decommission of datanode ID: it takes no new tiles, and meta's\n"
            "repairer copies each of its replicas to another node (from it, while it is up)\n"
            "before dropping it; `tessera health` shows the progress. remove: the same for a\n"
            "node that is gone for good: its replicas are made again from the others at\n"
            "once, without waiting for tessera-meta --replace-after. activate: undoes either.\n"
            "The decision is kept by meta across restarts.\n"
            "\n"
            "throttle: caps the disk I/O of datanode ID (as `tessera status` lists it) at\n"
            "R MB/s (10^6 bytes/s, at least 1; fractions allowed), or lifts the cap with `off`.\n"
            "It takes effect at once and lasts until changed or the datanode restarts (its\n"
            "--throttle-mbps applies again then). Used to make a node slow on purpose.\n"
            "\n"
            "stats: what datanode ID served since it started or since the last --reset:\n"
            "requests per kind, failures, tile bytes read and written, the tile files that\n"
            "meta mapped nowhere it deleted (its reclaimer: tessera-datanode --reclaim-grace),\n"
            "and each distinct tile it read (inode, tile, reads, bytes; at most %d are\n"
            "listed).\n"
            "\n"
            "  --json            stats as one JSON object\n"
            "  --reset           stats: zero the counters after reading them\n"
            "  --state DIR       the local cluster in DIR (default: $TESSERA_STATE, else\n"
            "                    $XDG_STATE_HOME/tessera, else ~/.local/state/tessera)\n"
            "  --meta ENDPOINT   ask this tessera-meta where the node is\n"
            "  --timeout-ms MS   how long to wait for meta and the node (default %d)\n"
            "  -h, --help        this help\n"
            "\n"
            "Exit status: 0 done, 1 meta or the node unreachable or refusing, 2 usage error.\n",
            TS_MAX_STATS_TILES, NODEADMIN_DEFAULT_TIMEOUT_MS);
}

static int nodeadmin_usage_error(const char *message, const char *arg)
{
    return cliargs_usage_error(NODEADMIN_WHO, message, arg);
}

/* "off", or MB/s from 1 to NODEADMIN_MAX_MBPS: into bytes per second (0 = off). 0 or -EINVAL. */
static int nodeadmin_parse_rate(const char *text, uint64_t *bytes_per_sec)
{
    char *end = NULL;
    double mbps;

    if (strcmp(text, "off") == 0) {
        *bytes_per_sec = 0;
        return 0;
    }
    errno = 0;
    mbps = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(mbps) || mbps < NODEADMIN_MIN_MBPS ||
        mbps > NODEADMIN_MAX_MBPS)
        return -EINVAL;
    *bytes_per_sec = (uint64_t)llround(mbps * NODEADMIN_MB);
    return *bytes_per_sec > 0 ? 0 : -EINVAL;
}

static int nodeadmin_take(void *ctx, int option, const char *value)
{
    struct nodeadmin_options *options = ctx;
    int taken = metatarget_option(&options->target, NODEADMIN_WHO, option, value);
    if (taken != CLIARGS_NOT_MINE)
        return taken;
    switch (option) {
    case 'j': options->json = true; return CLIARGS_GO_ON;
    case 'r': options->reset = true; return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

/* Parses argv; returns CLIARGS_GO_ON, else the exit code (help or usage error). */
static int nodeadmin_parse(int argc, char **argv, struct nodeadmin_options *options)
{
    static const struct option long_options[] = {
        METATARGET_LONG_OPTIONS,
        {"json", no_argument, NULL, 'j'},
        {"reset", no_argument, NULL, 'r'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {NODEADMIN_WHO, nodeadmin_usage, long_options,
                                                   nodeadmin_take};
    /* In the order of enum nodeadmin_action. */
    static const char *const actions[] = {"throttle", "stats", "drain", "remove", "activate"};
    size_t action = 0;
    int operands;
    int exit_code =
        metatarget_parse(&command, &options->target, argc, argv, options, &operands);

    if (exit_code == CLIARGS_GO_ON)
        exit_code = cliargs_action(NODEADMIN_WHO, actions, sizeof(actions) / sizeof(actions[0]),
                                   argc, argv, operands, &action);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    options->action = (enum nodeadmin_action)action;
    if (options->action >= NODEADMIN_DRAIN) {
        if (options->json || options->reset)
            return nodeadmin_usage_error("--json and --reset go with stats", NULL);
        if (argc - operands != 2)
            return nodeadmin_usage_error("wants a node id, e.g. tessera node drain 2", NULL);
        if (util_parse_long(argv[operands + 1], 1, UINT32_MAX, &options->node_id) != 0)
            return nodeadmin_usage_error("node id must be a number as tessera status shows, got",
                                         argv[operands + 1]);
        return CLIARGS_GO_ON;
    }
    if (options->action == NODEADMIN_STATS) {
        if (argc - operands != 2)
            return nodeadmin_usage_error("stats wants a node id, e.g. tessera node stats 2", NULL);
        if (util_parse_long(argv[operands + 1], 1, UINT32_MAX, &options->node_id) != 0)
            return nodeadmin_usage_error("node id must be a number as tessera status shows, got",
                                         argv[operands + 1]);
        return CLIARGS_GO_ON;
    }
    if (options->json || options->reset)
        return nodeadmin_usage_error("--json and --reset go with stats, not throttle", NULL);
    if (argc - operands != 3)
        return nodeadmin_usage_error("throttle wants a node id and a rate, e.g. "
                                     "tessera node throttle 2 20 (or: ... 2 off)",
                                     NULL);
    if (util_parse_long(argv[operands + 1], 1, UINT32_MAX, &options->node_id) != 0)
        return nodeadmin_usage_error("node id must be a number as tessera status shows, got",
                                     argv[operands + 1]);
    if (nodeadmin_parse_rate(argv[operands + 2], &options->bytes_per_sec) != 0)
        return nodeadmin_usage_error("rate must be MB/s from 1 up (e.g. 20 or 2.5) or off, got",
                                     argv[operands + 2]);
    return CLIARGS_GO_ON;
}

/* The node's entry in NODE_LIST into *node; returns 0 or the exit code. */
static int nodeadmin_find(const struct nodeadmin_options *options, struct toolmeta_node *node)
{
    struct rpc_client *client = rpc_client_new(options->target.endpoint);
    struct toolmeta_node *nodes = NULL;
    char error_text[256];
    size_t count = 0;
    int exit_code = 1;
    int status;

    if (!client) {
        fprintf(stderr, "tessera node: cannot use endpoint %s (expected tcp://HOST:PORT)\n",
                options->target.endpoint);
        return 1;
    }
    status = toolmeta_node_list(client, (int)options->target.timeout_ms, &nodes, &count, error_text,
                                  sizeof(error_text));
    if (status == TS_ERR_TIMEDOUT) {
        fprintf(stderr,
                "tessera node: cannot reach tessera-meta at %s: no reply within %ld ms (is the "
                "cluster up? try: tessera up)\n",
                options->target.endpoint, options->target.timeout_ms);
        goto out;
    }
    if (status != TS_OK) {
        fprintf(stderr, "tessera node: tessera-meta at %s answered: %s%s%s\n", options->target.endpoint,
                status_text(status), error_text[0] ? ": " : "", error_text);
        goto out;
    }
    for (size_t i = 0; i < count; i++) {
        if (nodes[i].id == (uint32_t)options->node_id) {
            *node = nodes[i];
            exit_code = 0;
        }
    }
    if (exit_code != 0)
        fprintf(stderr, "tessera node: meta at %s knows no datanode %ld (see tessera status)\n",
                options->target.endpoint, options->node_id);
out:
    free(nodes);
    rpc_client_destroy(&client);
    return exit_code;
}

/*
 * Sends op with payload (len < 0: its encoder failed) to the node and
 * waits for the reply: returns 0 with *status the call's (reply released
 * by the caller in every case), or exit code 1 after saying the node's
 * address is unusable.
 */
static int nodeadmin_call(const struct nodeadmin_options *options,
                          const struct toolmeta_node *node, uint16_t op, const uint8_t *payload,
                          int len, struct rpc_reply *reply, int *status)
{
    struct rpc_client *client = len < 0 ? NULL : rpc_client_new(node->address);

    memset(reply, 0, sizeof(*reply));
    if (!client) {
        fprintf(stderr, "tessera node: datanode %" PRIu32 " has an unusable address '%s'\n",
                node->id, node->address);
        return 1;
    }
    *status = rpc_client_call(client, op, payload, (size_t)len, NULL, 0,
                              (int)options->target.timeout_ms, reply);
    rpc_client_destroy(&client); /* the reply's frames are its own */
    return 0;
}

/* Prints a failed call to the node; returns exit code 1. */
static int nodeadmin_call_failed(const struct nodeadmin_options *options,
                                 const struct toolmeta_node *node, int status,
                                 struct rpc_reply *reply)
{
    char error_text[256];
    rpc_reply_error_text(reply, error_text, sizeof(error_text));
    if (status == TS_ERR_TIMEDOUT)
        fprintf(stderr, "tessera node: datanode %" PRIu32 " at %s did not answer within %ld ms%s\n",
                node->id, node->address, options->target.timeout_ms,
                node->state == TS_NODE_UP ? "" : " (meta lists it as down)");
    else
        fprintf(stderr, "tessera node: datanode %" PRIu32 " at %s answered: %s%s%s\n", node->id,
                node->address, status_text(status), error_text[0] ? ": " : "", error_text);
    return 1;
}

/* Sends NODE_THROTTLE to the node; returns the exit code. */
static int nodeadmin_throttle(const struct nodeadmin_options *options,
                              const struct toolmeta_node *node)
{
    struct ts_node_throttle request = {.bytes_per_sec = options->bytes_per_sec};
    struct ts_node_throttle answer;
    struct rpc_reply reply;
    uint8_t payload[16];
    int len = ts_node_throttle_encode(&request, payload, sizeof(payload));
    int status;

    if (nodeadmin_call(options, node, TS_OP_NODE_THROTTLE, payload, len, &reply, &status) != 0)
        return 1;
    if (status == TS_OK && ts_node_throttle_decode(&answer, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    if (status != TS_OK) {
        nodeadmin_call_failed(options, node, status, &reply);
        rpc_reply_release(&reply);
        return 1;
    }
    if (answer.bytes_per_sec == 0)
        printf("datanode %" PRIu32 " (%s): throttle off\n", node->id, node->address);
    else
        printf("datanode %" PRIu32 " (%s): throttle %.1f MB/s\n", node->id, node->address,
               (double)answer.bytes_per_sec / NODEADMIN_MB);
    rpc_reply_release(&reply);
    return 0;
}

/* A NODE_STATS reply whose blobs were checked, as JSON (jansson); 0 or -1. */
static int nodeadmin_print_stats_json(const struct toolmeta_node *node,
                                      const struct ts_node_stats_rep *stats)
{
    struct ts_cursor cursor;
    json_t *ops = json_object();
    json_t *tiles = json_array();
    bool ok = ops && tiles;

    ts_cursor_init(&cursor, stats->ops.ptr, stats->ops.len);
    for (uint32_t i = 0; ok && i < stats->op_count; i++) {
        struct ts_stats_op_rec op;
        (void)ts_stats_op_rec_read(&cursor, &op); /* nodeadmin_stats checked the blob */
        ok = json_object_set_new(ops, ts_op_name((uint16_t)op.opcode),
                                 json_integer((json_int_t)op.count)) == 0;
    }
    ts_cursor_init(&cursor, stats->tiles.ptr, stats->tiles.len);
    for (uint32_t i = 0; ok && i < stats->tile_count; i++) {
        struct ts_stats_tile_rec tile;
        (void)ts_stats_tile_rec_read(&cursor, &tile); /* nodeadmin_stats checked the blob */
        ok = json_array_append_new(tiles, json_pack("{s:I, s:I, s:I, s:I}", "ino",
                                                    (json_int_t)tile.ino, "tile",
                                                    (json_int_t)tile.tile, "reads",
                                                    (json_int_t)tile.reads, "bytes",
                                                    (json_int_t)tile.bytes)) == 0;
    }
    if (!ok) {
        json_decref(ops);
        json_decref(tiles);
        return -1;
    }
    return jsonname_print(
        stdout, json_pack("{s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:o}", "id",
                          (json_int_t)node->id, "requests", (json_int_t)stats->requests,
                          "failures", (json_int_t)stats->failures, "bytes_read",
                          (json_int_t)stats->bytes_read, "bytes_written",
                          (json_int_t)stats->bytes_written, "ops", ops, "tiles_reclaimed",
                          (json_int_t)stats->tiles_reclaimed, "bytes_reclaimed",
                          (json_int_t)stats->bytes_reclaimed, "reclaim_passes",
                          (json_int_t)stats->reclaim_passes, "tiles_dropped",
                          (json_int_t)stats->tiles_dropped, "tiles_read", tiles));
}

/* Prints a NODE_STATS reply whose blobs were checked as text. */
static void nodeadmin_print_stats(const struct toolmeta_node *node,
                                  const struct ts_node_stats_rep *stats)
{
    struct ts_cursor cursor;

    printf("datanode %" PRIu32 " (%s): %" PRIu64 " requests, %" PRIu64 " failed, %" PRIu64
           " bytes read, %" PRIu64 " bytes written\n",
           node->id, node->address, stats->requests, stats->failures, stats->bytes_read,
           stats->bytes_written);
    ts_cursor_init(&cursor, stats->ops.ptr, stats->ops.len);
    for (uint32_t i = 0; i < stats->op_count; i++) {
        struct ts_stats_op_rec op;
        (void)ts_stats_op_rec_read(&cursor, &op); /* nodeadmin_stats checked the blob */
        printf("  %-14s %" PRIu64 "\n", ts_op_name((uint16_t)op.opcode), op.count);
    }
    printf("reclaimed: %" PRIu64 " tile files meta mapped nowhere (%" PRIu64
           " bytes) in %" PRIu64 " passes over the tile directory\n"
           "tiles read: %" PRIu32 "%s\n",
           stats->tiles_reclaimed, stats->bytes_reclaimed, stats->reclaim_passes,
           stats->tile_count, stats->tiles_dropped ? " (more were read than listed)" : "");
    if (stats->tile_count > 0)
        printf("  %-12s %-10s %-8s %s\n", "ino", "tile", "reads", "bytes");
    ts_cursor_init(&cursor, stats->tiles.ptr, stats->tiles.len);
    for (uint32_t i = 0; i < stats->tile_count; i++) {
        struct ts_stats_tile_rec tile;
        (void)ts_stats_tile_rec_read(&cursor, &tile); /* nodeadmin_stats checked the blob */
        printf("  %-12" PRIu64 " %-10" PRIu64 " %-8" PRIu64 " %" PRIu64 "\n", tile.ino,
               tile.tile, tile.reads, tile.bytes);
    }
}

/* Sends NODE_STATS to the node and prints the answer; returns the exit code. */
static int nodeadmin_stats(const struct nodeadmin_options *options,
                           const struct toolmeta_node *node)
{
    struct ts_node_stats_req request = {.reset = options->reset ? 1 : 0};
    struct ts_node_stats_rep stats;
    struct rpc_reply reply;
    uint8_t payload[16];
    int len = ts_node_stats_req_encode(&request, payload, sizeof(payload));
    int exit_code = 0;
    int status;

    if (nodeadmin_call(options, node, TS_OP_NODE_STATS, payload, len, &reply, &status) != 0)
        return 1;
    if (status == TS_OK &&
        (ts_node_stats_rep_decode(&stats, reply.payload, reply.payload_len) != 0 ||
         (uint64_t)stats.op_count * ts_stats_op_rec_bytes != stats.ops.len ||
         (uint64_t)stats.tile_count * ts_stats_tile_rec_bytes != stats.tiles.len))
        status = TS_ERR_BADMSG;
    if (status != TS_OK)
        exit_code = nodeadmin_call_failed(options, node, status, &reply);
    else if (!options->json)
        nodeadmin_print_stats(node, &stats);
    else if (nodeadmin_print_stats_json(node, &stats) != 0) {
        fprintf(stderr, "tessera node stats: cannot write the JSON (out of memory?)\n");
        exit_code = 1;
    }
    rpc_reply_release(&reply);
    return exit_code;
}

/* NODE_ADMIN to meta: drain, remove or activate the node. Returns the exit code. */
static int nodeadmin_admin(const struct nodeadmin_options *options,
                           const struct toolmeta_node *node)
{
    static const uint32_t admin_of[] = {[NODEADMIN_DRAIN] = TS_NODE_DRAINING,
                                        [NODEADMIN_REMOVE] = TS_NODE_REMOVED,
                                        [NODEADMIN_ACTIVATE] = TS_NODE_ACTIVE};
    static const char *const done_text[] = {
        [NODEADMIN_DRAIN] = "is draining: its replicas are being copied elsewhere "
                            "(tessera health shows the progress)",
        [NODEADMIN_REMOVE] = "is removed: its replicas are being made again from the others",
        [NODEADMIN_ACTIVATE] = "is active again: it takes new tiles and its replicas count"};
    struct ts_node_admin_req request = {.node_id = node->id, .admin = admin_of[options->action]};
    uint8_t payload[16];
    struct rpc_reply reply;
    char error_text[256];
    int len = ts_node_admin_req_encode(&request, payload, sizeof(payload));
    struct rpc_client *client = rpc_client_new(options->target.endpoint);

    if (!client || len < 0) {
        rpc_client_destroy(&client);
        fprintf(stderr, "tessera node: cannot use endpoint %s\n", options->target.endpoint);
        return 1;
    }
    int status = rpc_client_call(client, TS_OP_NODE_ADMIN, payload, (size_t)len, NULL, 0,
                                 (int)options->target.timeout_ms, &reply);
    rpc_reply_error_text(&reply, error_text, sizeof(error_text));
    rpc_reply_release(&reply);
    rpc_client_destroy(&client);
    if (status != TS_OK) {
        fprintf(stderr, "tessera node: tessera-meta at %s answered: %s%s%s\n",
                options->target.endpoint, status_text(status), error_text[0] ? ": " : "",
                error_text);
        return 1;
    }
    printf("datanode %" PRIu32 " (%s) %s\n", node->id, node->machine, done_text[options->action]);
    return 0;
}

int nodeadmin_main(int argc, char **argv)
{
    struct nodeadmin_options options = {.target.timeout_ms = NODEADMIN_DEFAULT_TIMEOUT_MS};
    struct toolmeta_node node;
    int exit_code = nodeadmin_parse(argc, argv, &options);

    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    exit_code = metatarget_resolve(&options.target, "tessera node");
    if (exit_code != 0)
        return exit_code;
    exit_code = nodeadmin_find(&options, &node);
    if (exit_code != 0)
        return exit_code;
    if (options.action == NODEADMIN_STATS)
        return nodeadmin_stats(&options, &node);
    if (options.action >= NODEADMIN_DRAIN)
        return nodeadmin_admin(&options, &node);
    return nodeadmin_throttle(&options, &node);
}
