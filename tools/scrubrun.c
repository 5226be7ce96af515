/*
 * @file scrubrun.c
 * See scrubrun.h. Meta only tells where the datanodes are (NODE_LIST); each
 * is asked to start a pass (NODE_SCRUB start), which then runs on the
 * datanode whether or not this command waits, and is asked every
 * SCRUBRUN_POLL_MS how it stands until the pass it started has gone through
 * every tile (finished_pass reaches it). MB here is 10^6 bytes, as in
 * --scrub-mbps.
 */
#include "scrubrun.h"

#include "cliargs.h"
#include "fmt.h"
#include "fsck.h"
#include "metatarget.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"
#include "toolmeta.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SCRUBRUN_WHO "tessera scrub"
#define SCRUBRUN_DEFAULT_TIMEOUT_MS 5000
#define SCRUBRUN_POLL_MS 500
#define SCRUBRUN_MB 1000000.0
#define SCRUBRUN_MAX_MBPS 100000.0

struct scrubrun_options {
    struct metatarget target;
    uint64_t bytes_per_sec; /* 0: as fast as the disks go */
    long node_id;           /* 0: every datanode */
};

/* One datanode's pass as this command follows it. */
struct scrubrun_node {
    struct toolmeta_node node;
    struct rpc_client *client;
    uint64_t pass; /* the pass it started for us; 0: not started (failed) */
    bool done;
    bool failed;
    struct ts_node_scrub_rep last; /* strings point into last_reply */
    struct rpc_reply last_reply;
};

static void scrubrun_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera scrub [PATH] [--max-mbps R] [--node ID]\n"
            "                     [--state DIR | --meta ENDPOINT] [--timeout-ms MS]\n"
            "\n"
            "Has every datanode (or only --node ID) read all the tile files it stores and\n"
            "check them against their block checksums (CRC-32C per 4 KiB) now, shows the\n"
            "progress, and names each corrupt tile file found (inode, tile, version). The\n"
            "datanodes also scrub slowly in the background (tessera-datanode --scrub-mbps);\n"
            "a pass started here replaces the one running. Corrupt files are also reported\n"
            "to meta, whose repairer makes them again from good replicas, and `tessera\n"
            "status` counts them per node. Ctrl-C stops waiting, not the passes.\n"
            "\n"
            "With PATH (a file or directory on a Tessera mount), only the replicas of the\n"
            "files under it are read, from this command, and each corrupt one is named by\n"
            "its file's path and tile (\"corrupt: PATH: tile N: ...\").\n"
            "\n"
            "  --max-mbps R      each datanode reads at most R MB/s (10^6 bytes/s) for it\n"
            "                    (default: as fast as its disk goes)\n"
            "  --node ID         only this datanode (as tessera status lists it)\n"
            "  --state DIR       the local cluster in DIR (default: $TESSERA_STATE, else\n"
            "                    $XDG_STATE_HOME/tessera, else ~/.local/state/tessera)\n"
            "  --meta ENDPOINT   ask this tessera-meta where the datanodes are\n"
            "  --timeout-ms MS   how long to wait for each reply (default %d)\n"
            "  -h, --help        this help\n"
            "\n"
            "Exit status: 0 every tile checked is good, 1 corrupt tiles were found or a\n"
            "datanode could not be checked, 2 usage error.\n",
            SCRUBRUN_DEFAULT_TIMEOUT_MS);
}

static int scrubrun_take(void *ctx, int option, const char *value)
{
    struct scrubrun_options *options = ctx;
    int taken = metatarget_option(&options->target, SCRUBRUN_WHO, option, value);
    if (taken != CLIARGS_NOT_MINE)
        return taken;
    switch (option) {
    case 'r': {
        char *end = NULL;
        errno = 0;
        double mbps = strtod(value, &end);
        if (errno != 0 || end == value || *end != '\0' || !isfinite(mbps) || mbps <= 0 ||
            mbps > SCRUBRUN_MAX_MBPS)
            return cliargs_usage_error(SCRUBRUN_WHO, "--max-mbps must be MB/s above 0, got",
                                       value);
        options->bytes_per_sec = (uint64_t)llround(mbps * SCRUBRUN_MB);
        return CLIARGS_GO_ON;
    }
    case 'n':
        if (util_parse_long(value, 1, UINT32_MAX, &options->node_id) != 0)
            return cliargs_usage_error(SCRUBRUN_WHO,
                                       "--node must be a node id as tessera status shows, got",
                                       value);
        return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

/* One NODE_SCRUB call; the reply (kept in node->last) on TS_OK. */
static int scrubrun_ask(const struct scrubrun_options *options, struct scrubrun_node *node,
                        uint32_t action)
{
    struct ts_node_scrub_req request = {.action = action, .bytes_per_sec = options->bytes_per_sec};
    uint8_t payload[32];
    int len = ts_node_scrub_req_encode(&request, payload, sizeof(payload));
    rpc_reply_release(&node->last_reply);
    memset(&node->last_reply, 0, sizeof(node->last_reply));
    int status = len < 0 ? TS_ERR_INTERNAL
                         : rpc_client_call(node->client, TS_OP_NODE_SCRUB, payload, (size_t)len,
                                           NULL, 0, (int)options->target.timeout_ms,
                                           &node->last_reply);
    if (status == TS_OK &&
        (ts_node_scrub_rep_decode(&node->last, node->last_reply.payload,
                                  node->last_reply.payload_len) != 0 ||
         (uint64_t)node->last.corrupt_count * ts_tile_file_rec_bytes != node->last.corrupt.len))
        status = TS_ERR_BADMSG;
    if (status != TS_OK) {
        char error_text[256];
        rpc_reply_error_text(&node->last_reply, error_text, sizeof(error_text));
        fprintf(stderr, "%s: datanode %" PRIu32 " at %s: %s%s%s\n", SCRUBRUN_WHO, node->node.id,
                node->node.address, status_text(status), error_text[0] ? ": " : "", error_text);
        node->failed = true;
    }
    return status;
}

/* The progress line: nodes done, bytes checked of the total, rate, corrupt so far. */
static void scrubrun_progress(const struct scrubrun_node *nodes, size_t count, double seconds,
                              bool final)
{
    uint64_t bytes = 0, total = 0, corrupt = 0;
    size_t done = 0;
    char bytes_text[16], total_text[16];
    for (size_t i = 0; i < count; i++) {
        done += nodes[i].done || nodes[i].failed;
        bytes += nodes[i].last.scrub_bytes;
        total += nodes[i].last.total_bytes;
        corrupt += nodes[i].last.scrub_corrupt;
    }
    fmt_size(bytes, bytes_text, sizeof(bytes_text));
    fmt_size(total, total_text, sizeof(total_text));
    printf("%sscrub: %zu/%zu datanodes done, %s of %s checked, %.1f MB/s, %" PRIu64
           " corrupt%s",
           isatty(STDOUT_FILENO) ? "\r" : "", done, count, bytes_text, total_text,
           seconds > 0 ? (double)bytes / seconds / SCRUBRUN_MB : 0.0, corrupt,
           final || !isatty(STDOUT_FILENO) ? "\n" : "");
    fflush(stdout);
}

/* Prints a finished node's corrupt files; returns how many. */
static uint32_t scrubrun_report_node(const struct scrubrun_node *node)
{
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, node->last.corrupt.ptr, node->last.corrupt.len);
    for (uint32_t i = 0; i < node->last.corrupt_count; i++) {
        struct ts_tile_file_rec file;
        (void)ts_tile_file_rec_read(&cursor, &file); /* the length was checked */
        printf("corrupt: datanode %" PRIu32 " tile file %" PRIu64 ".%" PRIu64 ".%" PRIu64
               " (inode %" PRIu64 ", tile %" PRIu64 ", version %" PRIu64 ")\n",
               node->node.id, file.ino, file.tile, file.version, file.ino, file.tile,
               file.version);
    }
    return node->last.corrupt_count;
}

static int scrubrun_run(const struct scrubrun_options *options, struct scrubrun_node *nodes,
                        size_t count)
{
    int64_t start_ms = util_monotonic_ms();
    for (size_t i = 0; i < count; i++) {
        nodes[i].client = rpc_client_new(nodes[i].node.address);
        if (!nodes[i].client) {
            fprintf(stderr, "%s: datanode %" PRIu32 " has an unusable address '%s'\n",
                    SCRUBRUN_WHO, nodes[i].node.id, nodes[i].node.address);
            nodes[i].failed = true;
            continue;
        }
        if (scrubrun_ask(options, &nodes[i], TS_SCRUB_START) == TS_OK)
            nodes[i].pass = nodes[i].last.pass;
    }
    int64_t last_print_ms = 0;
    for (;;) {
        size_t waiting = 0;
        for (size_t i = 0; i < count; i++) {
            struct scrubrun_node *node = &nodes[i];
            if (node->done || node->failed)
                continue;
            if (scrubrun_ask(options, node, TS_SCRUB_REPORT) != TS_OK)
                continue;
            if (node->last.finished_pass >= node->pass) {
                node->done = true;
                /* The finished pass's figures, not a later background one's. */
                if (node->last.pass != node->pass || node->last.scrub_running)
                    node->last.scrub_bytes = node->last.total_bytes;
            } else {
                waiting++;
            }
        }
        int64_t now_ms = util_monotonic_ms();
        if (waiting == 0 || now_ms - last_print_ms >= (isatty(STDOUT_FILENO) ? 500 : 5000)) {
            scrubrun_progress(nodes, count, (double)(now_ms - start_ms) / 1000.0, waiting == 0);
            last_print_ms = now_ms;
        }
        if (waiting == 0)
            break;
        usleep(SCRUBRUN_POLL_MS * 1000);
    }
    uint64_t corrupt = 0;
    size_t failed = 0;
    for (size_t i = 0; i < count; i++) {
        if (nodes[i].done)
            corrupt += scrubrun_report_node(&nodes[i]);
        failed += nodes[i].failed;
    }
    if (failed > 0)
        printf("scrub: %zu datanode%s could not be checked (see above)\n", failed,
               failed == 1 ? "" : "s");
    printf("scrub: %" PRIu64 " corrupt tile file%s found\n", corrupt, corrupt == 1 ? "" : "s");
    return corrupt > 0 || failed > 0 ? 1 : 0;
}

int scrubrun_main(int argc, char **argv)
{
    static const struct option long_options[] = {
        METATARGET_LONG_OPTIONS,
        {"max-mbps", required_argument, NULL, 'r'},
        {"node", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {SCRUBRUN_WHO, scrubrun_usage, long_options,
                                                   scrubrun_take};
    struct scrubrun_options options = {.target.timeout_ms = SCRUBRUN_DEFAULT_TIMEOUT_MS};
    int operands = 0;
    int exit_code = metatarget_parse(&command, &options.target, argc, argv, &options, &operands);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    if (argc - operands > 1)
        return cliargs_usage_error(SCRUBRUN_WHO, "takes at most one PATH, got", argv[operands + 1]);
    if (argc - operands == 1) {
        if (options.node_id != 0)
            return cliargs_usage_error(SCRUBRUN_WHO, "takes a PATH or --node, not both:",
                                       argv[operands]);
        return fsck_scrub_path(argv[operands], &options.target, options.bytes_per_sec,
                               SCRUBRUN_WHO);
    }
    exit_code = metatarget_resolve(&options.target, SCRUBRUN_WHO);
    if (exit_code != 0)
        return exit_code;

    struct rpc_client *meta = rpc_client_new(options.target.endpoint);
    struct toolmeta_node *listed = NULL;
    struct scrubrun_node *nodes = NULL;
    char error_text[256];
    size_t listed_count = 0, count = 0;
    if (!meta) {
        fprintf(stderr, "%s: cannot use endpoint %s (expected tcp://HOST:PORT)\n", SCRUBRUN_WHO,
                options.target.endpoint);
        return 1;
    }
    int status = toolmeta_node_list(meta, (int)options.target.timeout_ms, &listed, &listed_count,
                                    error_text, sizeof(error_text));
    rpc_client_destroy(&meta);
    if (status != TS_OK) {
        fprintf(stderr, "%s: tessera-meta at %s answered: %s%s%s\n", SCRUBRUN_WHO,
                options.target.endpoint, status_text(status), error_text[0] ? ": " : "",
                error_text);
        return 1;
    }
    nodes = calloc(listed_count ? listed_count : 1, sizeof(*nodes));
    if (!nodes) {
        free(listed);
        fprintf(stderr, "%s: out of memory\n", SCRUBRUN_WHO);
        return 1;
    }
    for (size_t i = 0; i < listed_count; i++) {
        if (options.node_id != 0 && listed[i].id != (uint32_t)options.node_id)
            continue;
        if (options.node_id == 0 && listed[i].state != TS_NODE_UP) {
            fprintf(stderr, "%s: datanode %" PRIu32 " is down; its tiles are not checked\n",
                    SCRUBRUN_WHO, listed[i].id);
            exit_code = 1;
            continue;
        }
        nodes[count++].node = listed[i];
    }
    free(listed);
    if (count == 0 && options.node_id != 0) {
        fprintf(stderr, "%s: meta at %s knows no datanode %ld (see tessera status)\n",
                SCRUBRUN_WHO, options.target.endpoint, options.node_id);
        exit_code = 1;
    } else if (scrubrun_run(&options, nodes, count) != 0) {
        exit_code = 1;
    }
    for (size_t i = 0; i < count; i++) {
        rpc_reply_release(&nodes[i].last_reply);
        rpc_client_destroy(&nodes[i].client);
    }
    free(nodes);
    return exit_code;
}
