/*
 * @file clusterstatus.c
 * See clusterstatus.h. Which meta to ask: --meta ENDPOINT; else the
 * cluster.conf of --state DIR (an error if it has none); else the
 * cluster.conf of the default state directory, falling back to
 * tcp://127.0.0.1:7400 when there is none.
 */
#include "clusterstatus.h"

#include "cliargs.h"
#include "clusterconf.h"
#include "curve.h"
#include "fmt.h"
#include "healthview.h"
#include "jsonname.h"
#include "toolmeta.h"
#include "status.h"
#include "util.h"
#include "viewargs.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLUSTERSTATUS_DEFAULT_TIMEOUT_MS 2000
#define CLUSTERSTATUS_WHO "tessera status"


static void clusterstatus_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera status [--state DIR | --meta ENDPOINT] [--json] [--timeout-ms MS]\n"
            "\n"
            "Shows the datanodes tessera-meta knows (NODE_LIST) and the filesystem totals.\n"
            "\n"
            "  --state DIR       the local cluster in DIR (default: $TESSERA_STATE, else\n"
            "                    $XDG_STATE_HOME/tessera, else ~/.local/state/tessera)\n"
            "  --meta ENDPOINT   ask this tessera-meta instead, e.g. tcp://10.0.0.1:7400\n"
            "  --json            print a JSON array of the datanodes\n"
            "  --timeout-ms MS   how long to wait for meta (default %d)\n"
            "  -h, --help        this help\n"
            "\n"
            "Exit status: 0 ok, 1 meta unreachable or failing, 2 usage error.\n",
            CLUSTERSTATUS_DEFAULT_TIMEOUT_MS);
}

static const char *clusterstatus_state_name(const struct toolmeta_node *node)
{
    bool up = node->state == TS_NODE_UP;
    switch (node->admin) {
    case TS_NODE_DRAINING: return up ? "up,draining" : "down,draining";
    case TS_NODE_REMOVED: return up ? "up,removed" : "down,removed";
    default: return up ? "up" : "down";
    }
}

/* "0.4s", "12s", "3m", "2h": how long ago meta heard from a node. */
static void clusterstatus_age(uint64_t age_ms, char *out, size_t cap)
{
    if (age_ms < 10000)
        snprintf(out, cap, "%.1fs", (double)age_ms / 1000.0);
    else if (age_ms < 600000)
        snprintf(out, cap, "%" PRIu64 "s", age_ms / 1000);
    else if (age_ms < 36000000)
        snprintf(out, cap, "%" PRIu64 "m", age_ms / 60000);
    else
        snprintf(out, cap, "%" PRIu64 "h", age_ms / 3600000);
}

static int clusterstatus_max(int a, size_t b)
{
    return (size_t)a > b ? a : (int)b;
}

/* Column widths: MACHINE and ADDRESS grow with the longest value. */
static void clusterstatus_widths(const struct toolmeta_node *nodes, size_t count,
                                 int *machine_width, int *address_width)
{
    *machine_width = (int)strlen("MACHINE");
    *address_width = (int)strlen("ADDRESS");
    for (size_t i = 0; i < count; i++) {
        *machine_width = clusterstatus_max(*machine_width, strlen(nodes[i].machine));
        *address_width = clusterstatus_max(*address_width, strlen(nodes[i].address));
    }
}

/* A rate in MB/s (10^6 bytes, as dd counts), or "-" for none. */
static void clusterstatus_rate(uint64_t bytes_per_sec, char *out, size_t cap)
{
    if (bytes_per_sec == 0)
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, "%.1f", (double)bytes_per_sec / 1e6);
}

static void clusterstatus_print_row(const struct toolmeta_node *node, int machine_width,
                                    int address_width)
{
    char used[16];
    char free_text[16];
    char age[16];
    char read_rate[24];
    char write_rate[24];
    char throttle[24];

    fmt_size(node->used_bytes, used, sizeof(used));
    fmt_size(node->free_bytes, free_text, sizeof(free_text));
    clusterstatus_age(node->heartbeat_age_ms, age, sizeof(age));
    clusterstatus_rate(node->read_bytes_per_sec, read_rate, sizeof(read_rate));
    clusterstatus_rate(node->write_bytes_per_sec, write_rate, sizeof(write_rate));
    if (node->throttle_bytes_per_sec == 0)
        snprintf(throttle, sizeof(throttle), "off");
    else
        clusterstatus_rate(node->throttle_bytes_per_sec, throttle, sizeof(throttle));
    printf("%-4" PRIu32 " %-*s %-*s %-13s %8" PRIu64 " %7s %7s %9s %8s %8s %8" PRIu32 " %8s\n",
           node->id, machine_width, node->machine, address_width, node->address,
           clusterstatus_state_name(node), node->tiles, used, free_text, age, read_rate,
           write_rate, node->queue_depth, throttle);
}

/* One line per node: corrupt tile files reported, and where its scrub stands. */
static void clusterstatus_print_integrity(const struct toolmeta_node *node)
{
    char checked[16];
    fmt_size(node->scrub_bytes, checked, sizeof(checked));
    printf("node %" PRIu32 " integrity: %" PRIu64 " corrupt tile files reported; scrub %s, %" PRIu64
           " files (%s) checked at %.1f MB/s, %" PRIu64 " corrupt, %" PRIu64 " passes done\n",
           node->id, node->corrupt_files, node->scrub_running ? "running" : "idle",
           node->scrub_files, checked, (double)node->scrub_rate / 1e6, node->scrub_corrupt,
           node->scrub_passes);
}

static void clusterstatus_print_table(const struct toolmeta_node *nodes, size_t count,
                                      const struct ts_statfs_rep *totals, bool have_totals)
{
    int machine_width;
    int address_width;
    uint64_t tiles = 0;
    uint64_t used = 0;
    uint64_t free_bytes = 0;
    size_t up = 0;
    char used_text[16];
    char free_text[16];
    char total_text[16];

    clusterstatus_widths(nodes, count, &machine_width, &address_width);
    printf("%-4s %-*s %-*s %-13s %8s %7s %7s %9s %8s %8s %8s %8s\n", "ID", machine_width, "MACHINE",
           address_width, "ADDRESS", "STATE", "TILES", "USED", "FREE", "HEARTBEAT", "READ", "WRITE",
           "INFLIGHT", "THROTTLE");
    for (size_t i = 0; i < count; i++) {
        clusterstatus_print_row(&nodes[i], machine_width, address_width);
        tiles += nodes[i].tiles;
        used += nodes[i].used_bytes;
        free_bytes += nodes[i].free_bytes;
        up += nodes[i].state == TS_NODE_UP;
    }
    fmt_size(used, used_text, sizeof(used_text));
    fmt_size(free_bytes, free_text, sizeof(free_text));
    printf("total: %zu datanodes (%zu up, %zu down), %" PRIu64 " tiles, %s used, %s free\n", count,
           up, count - up, tiles, used_text, free_text);
    printf("READ, WRITE: measured disk throughput in MB/s (10^6 bytes/s of busy time); "
           "THROTTLE: the node's disk cap in MB/s\n");
    for (size_t i = 0; i < count; i++)
        clusterstatus_print_integrity(&nodes[i]);
    if (!have_totals)
        return;
    fmt_size(totals->total_bytes, total_text, sizeof(total_text));
    fmt_size(totals->free_bytes, free_text, sizeof(free_text));
    printf("filesystem: %s total, %s free, %" PRIu64 " files, %" PRIu64 " datanodes up\n",
           total_text, free_text, totals->files, totals->nodes_up);
}

static int clusterstatus_print_json(const struct toolmeta_node *nodes, size_t count)
{
    json_t *array = json_array();

    for (size_t i = 0; array && i < count; i++) {
        const struct toolmeta_node *node = &nodes[i];
        json_t *row = json_pack("{s:I}", "id", (json_int_t)node->id);
        json_t *rest = json_pack(
            "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I, "
            "s:{s:b, s:I, s:I, s:I, s:I, s:I}}",
            "state", node->state == TS_NODE_UP ? "up" : "down", "capacity",
            (json_int_t)node->capacity, "free", (json_int_t)node->free_bytes, "used",
            (json_int_t)node->used_bytes, "tiles", (json_int_t)node->tiles, "heartbeat_age_ms",
            (json_int_t)node->heartbeat_age_ms, "read_bytes_per_sec",
            (json_int_t)node->read_bytes_per_sec, "write_bytes_per_sec",
            (json_int_t)node->write_bytes_per_sec, "queue_depth", (json_int_t)node->queue_depth,
            "throttle_bytes_per_sec", (json_int_t)node->throttle_bytes_per_sec, "admin",
            node->admin == TS_NODE_DRAINING  ? "draining"
            : node->admin == TS_NODE_REMOVED ? "removed"
                                             : "active",
            "corrupt_files", (json_int_t)node->corrupt_files, "scrub", "running",
            node->scrub_running ? 1 : 0, "files", (json_int_t)node->scrub_files, "bytes",
            (json_int_t)node->scrub_bytes, "corrupt", (json_int_t)node->scrub_corrupt,
            "bytes_per_sec", (json_int_t)node->scrub_rate, "passes",
            (json_int_t)node->scrub_passes);
        /* Key order as before: id, machine, address, then the figures. */
        if (!row || !rest || jsonname_set(row, "machine", node->machine) != 0 ||
            jsonname_set(row, "address", node->address) != 0 || json_object_update(row, rest) != 0 ||
            json_array_append_new(array, row) != 0) {
            json_decref(row);
            json_decref(array);
            array = NULL;
        }
        json_decref(rest);
    }
    return jsonname_print(stdout, array);
}

/* How the link to meta is protected: it answered, so it speaks what this process speaks. */
static void clusterstatus_print_security(void)
{
    if (curve_enabled())
        printf("security: CURVE: meta lets in known keys only (this command used %s)\n",
               curve_key_path());
    else
        printf("security: NONE: meta answered without keys; anyone who can reach it can read and "
               "change the filesystem (tessera up makes keys for a new cluster)\n");
}

/* Explains a failed call; returns exit code 1. */
static int clusterstatus_call_failed(const char *endpoint, int status, const char *error_text,
                                     long timeout_ms)
{
    if (status == TS_ERR_TIMEDOUT) {
        fprintf(stderr,
                "cannot reach tessera-meta at %s: no reply within %ld ms (is the cluster up? "
                "try: tessera up)%s%s%s\n",
                endpoint, timeout_ms, curve_enabled() ? "; or it does not know key " : "",
                curve_key_path(), curve_enabled() ? ", or runs without keys" : "");
        return 1;
    }
    fprintf(stderr, "tessera status: tessera-meta at %s answered: %s%s%s\n", endpoint,
            status_text(status), error_text && *error_text ? ": " : "",
            error_text ? error_text : "");
    return 1;
}

/* Asks meta and prints; returns the exit code. */
static int clusterstatus_query(const struct viewargs *options)
{
    struct rpc_client *client = rpc_client_new(options->target.endpoint);
    struct toolmeta_node *nodes = NULL;
    struct ts_statfs_rep totals;
    char error_text[256];
    size_t count = 0;
    int exit_code = 0;
    int status;

    if (!client) {
        fprintf(stderr, "tessera status: cannot use endpoint %s (expected tcp://HOST:PORT)\n",
                options->target.endpoint);
        return 1;
    }
    status = toolmeta_node_list(client, (int)options->target.timeout_ms, &nodes, &count, error_text,
                                  sizeof(error_text));
    if (status != TS_OK) {
        exit_code =
            clusterstatus_call_failed(options->target.endpoint, status, error_text, options->target.timeout_ms);
        goto out;
    }
    if (options->json) {
        if (clusterstatus_print_json(nodes, count) != 0) {
            fprintf(stderr, "tessera status: cannot write the JSON (out of memory?)\n");
            exit_code = 1;
        }
        goto out;
    }
    struct healthview health;
    status = healthview_fetch(client, (int)options->target.timeout_ms, &health, error_text,
                              sizeof(error_text));
    if (status == TS_OK)
        healthview_print(stdout, &health);
    else
        fprintf(stderr, "tessera status: HEALTH failed: %s\n", status_text(status));
    clusterstatus_print_security();
    status = toolmeta_statfs(client, (int)options->target.timeout_ms, &totals);
    clusterstatus_print_table(nodes, count, &totals, status == TS_OK);
    if (status != TS_OK)
        fprintf(stderr, "tessera status: STATFS failed: %s\n", status_text(status));
out:
    free(nodes);
    rpc_client_destroy(&client);
    return exit_code;
}

int clusterstatus_main(int argc, char **argv)
{
    struct viewargs options;
    int exit_code = viewargs_parse(CLUSTERSTATUS_WHO, clusterstatus_usage,
                                   CLUSTERSTATUS_DEFAULT_TIMEOUT_MS, argc, argv, &options);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    return clusterstatus_query(&options);
}
