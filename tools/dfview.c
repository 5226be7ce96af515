/*
 * @file dfview.c
 * See dfview.h. One NODE_LIST: each datanode's row (its capacity, the
 * bytes of its tiles, its free space, its disk); then one row per machine
 * and the total, each summed with diskspace_sum() over the datanodes that
 * are up, so the total is what STATFS (and so `df` on a mount) gives.
 */
#include "dfview.h"

#include "cliargs.h"
#include "diskspace.h"
#include "fmt.h"
#include "jsonname.h"
#include "status.h"
#include "toolmeta.h"
#include "viewargs.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DFVIEW_WHO "tessera df"
#define DFVIEW_DEFAULT_TIMEOUT_MS 2000

/* A machine's or the cluster's sums. */
struct dfview_sum {
    const char *machine; /* NULL: the whole cluster */
    size_t datanodes;
    size_t up;
    uint64_t tiles;
    uint64_t used_bytes;
    struct diskspace_total space; /* of the datanodes up */
};

static void dfview_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera df [--state DIR | --meta ENDPOINT] [--json] [--timeout-ms MS]\n"
            "\n"
            "Shows the cluster's space: each datanode (its size, the bytes of its tiles, what\n"
            "is free, which disk it is on), each machine and the total. Datanodes of one\n"
            "machine whose data directories are on one filesystem share it: its space is\n"
            "counted once (as `df` on a mount counts it), not once per datanode. Machine and\n"
            "total sizes count the datanodes that are up.\n"
            "\n"
            "  --state DIR       the local cluster in DIR (default: $TESSERA_STATE, else\n"
            "                    $XDG_STATE_HOME/tessera, else ~/.local/state/tessera)\n"
            "  --meta ENDPOINT   ask this tessera-meta instead, e.g. tcp://10.0.0.1:7400\n"
            "  --json            print {\"datanodes\": [...], \"machines\": [...], \"total\": {...}}\n"
            "  --timeout-ms MS   how long to wait for meta (default %d)\n"
            "  -h, --help        this help\n"
            "\n"
            "Exit status: 0 ok, 1 meta unreachable or failing, 2 usage error.\n",
            DFVIEW_DEFAULT_TIMEOUT_MS);
}

/* Sums the datanodes of machine (NULL: all of them); false out of memory. */
static bool dfview_sum(const struct toolmeta_node *nodes, size_t count, const char *machine,
                       struct dfview_sum *sum)
{
    struct diskspace_node *space = calloc(count ? count : 1, sizeof(*space));
    if (!space)
        return false;
    memset(sum, 0, sizeof(*sum));
    sum->machine = machine;
    for (size_t i = 0; i < count; i++) {
        const struct toolmeta_node *node = &nodes[i];
        if (machine && strcmp(node->machine, machine) != 0)
            continue;
        sum->datanodes++;
        sum->tiles += node->tiles;
        sum->used_bytes += node->used_bytes;
        if (node->state != TS_NODE_UP)
            continue;
        space[sum->up++] = (struct diskspace_node){.machine = node->machine,
                                                   .disk_id = node->disk_id,
                                                   .disk_bytes = node->disk_bytes,
                                                   .disk_free = node->disk_free,
                                                   .capacity = node->capacity,
                                                   .free_bytes = node->free_bytes};
    }
    diskspace_sum(space, sum->up, &sum->space);
    free(space);
    return true;
}

/* The machines in the order their first datanode comes: indexes into nodes. */
static size_t dfview_machines(const struct toolmeta_node *nodes, size_t count, size_t *first)
{
    size_t machines = 0;
    for (size_t i = 0; i < count; i++) {
        bool seen = false;
        for (size_t m = 0; m < machines && !seen; m++)
            seen = strcmp(nodes[first[m]].machine, nodes[i].machine) == 0;
        if (!seen)
            first[machines++] = i;
    }
    return machines;
}

static int dfview_percent(uint64_t size, uint64_t free_bytes)
{
    if (size == 0)
        return 0;
    uint64_t taken = free_bytes < size ? size - free_bytes : 0;
    return (int)((taken * 100 + size - 1) / size);
}

static void dfview_print_sum_row(const struct dfview_sum *sum, int machine_width)
{
    char size[16], used[16], free_text[16];
    fmt_size(sum->space.capacity, size, sizeof(size));
    fmt_size(sum->used_bytes, used, sizeof(used));
    fmt_size(sum->space.free_bytes, free_text, sizeof(free_text));
    printf("%-*s %5zu %9zu/%-3zu %8s %8s %8s %4d%% %9" PRIu64 "\n", machine_width,
           sum->machine ? sum->machine : "total", sum->space.disks, sum->up, sum->datanodes, size,
           used, free_text, dfview_percent(sum->space.capacity, sum->space.free_bytes),
           sum->tiles);
}

static void dfview_print_table(const struct toolmeta_node *nodes, size_t count,
                               const struct dfview_sum *sums, size_t machines,
                               const struct dfview_sum *total)
{
    int machine_width = (int)strlen("MACHINE");
    for (size_t i = 0; i < count; i++)
        if ((int)strlen(nodes[i].machine) > machine_width)
            machine_width = (int)strlen(nodes[i].machine);
    printf("%-4s %-*s %-16s %8s %8s %8s %5s %9s %s\n", "ID", machine_width, "MACHINE", "DISK",
           "SIZE", "USED", "FREE", "USE%", "TILES", "STATE");
    for (size_t i = 0; i < count; i++) {
        const struct toolmeta_node *node = &nodes[i];
        char size[16], used[16], free_text[16], disk[20];
        fmt_size(node->capacity, size, sizeof(size));
        fmt_size(node->used_bytes, used, sizeof(used));
        fmt_size(node->free_bytes, free_text, sizeof(free_text));
        if (node->disk_id)
            snprintf(disk, sizeof(disk), "%016" PRIx64, node->disk_id);
        else
            snprintf(disk, sizeof(disk), "-");
        printf("%-4" PRIu32 " %-*s %-16s %8s %8s %8s %4d%% %9" PRIu64 " %s\n", node->id,
               machine_width, node->machine, disk, size, used, free_text,
               dfview_percent(node->capacity, node->free_bytes), node->tiles,
               node->state == TS_NODE_UP ? "up" : "down");
    }
    printf("\n%-*s %5s %13s %8s %8s %8s %5s %9s\n", machine_width, "MACHINE", "DISKS",
           "UP/DATANODES", "SIZE", "USED", "FREE", "USE%", "TILES");
    for (size_t m = 0; m < machines; m++)
        dfview_print_sum_row(&sums[m], machine_width);
    dfview_print_sum_row(total, machine_width);
    printf("USED: the bytes of the tiles a datanode holds (every replica counted); SIZE and FREE:\n"
           "its disk's, or its --capacity; a disk several datanodes share counts once.\n");
}

static json_t *dfview_json_sum(const struct dfview_sum *sum)
{
    json_t *object = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "disks",
                               (json_int_t)sum->space.disks, "datanodes", (json_int_t)sum->datanodes,
                               "up", (json_int_t)sum->up, "size", (json_int_t)sum->space.capacity,
                               "used", (json_int_t)sum->used_bytes, "free",
                               (json_int_t)sum->space.free_bytes, "tiles", (json_int_t)sum->tiles);
    if (object && sum->machine && jsonname_set(object, "machine", sum->machine) != 0) {
        json_decref(object);
        return NULL;
    }
    return object;
}

static int dfview_print_json(const struct toolmeta_node *nodes, size_t count,
                             const struct dfview_sum *sums, size_t machines,
                             const struct dfview_sum *total)
{
    json_t *datanodes = json_array();
    json_t *by_machine = json_array();
    char disk_id[17];

    for (size_t i = 0; datanodes && i < count; i++) {
        const struct toolmeta_node *node = &nodes[i];
        snprintf(disk_id, sizeof(disk_id), "%016" PRIx64, node->disk_id);
        json_t *row = json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "id",
                                (json_int_t)node->id, "state",
                                node->state == TS_NODE_UP ? "up" : "down", "disk_id", disk_id,
                                "disk_size", (json_int_t)node->disk_bytes, "disk_free",
                                (json_int_t)node->disk_free, "size", (json_int_t)node->capacity,
                                "used", (json_int_t)node->used_bytes, "free",
                                (json_int_t)node->free_bytes, "tiles", (json_int_t)node->tiles);
        if (!row || jsonname_set(row, "machine", node->machine) != 0 ||
            json_array_append_new(datanodes, row) != 0) {
            json_decref(datanodes);
            datanodes = NULL;
        }
    }
    for (size_t m = 0; by_machine && m < machines; m++) {
        if (json_array_append_new(by_machine, dfview_json_sum(&sums[m])) != 0) {
            json_decref(by_machine);
            by_machine = NULL;
        }
    }
    return jsonname_print(stdout, json_pack("{s:o, s:o, s:o}", "datanodes", datanodes,
                                            "machines", by_machine, "total",
                                            dfview_json_sum(total)));
}

static int dfview_query(const struct viewargs *options)
{
    struct rpc_client *client = rpc_client_new(options->target.endpoint);
    struct toolmeta_node *nodes = NULL;
    size_t *first = NULL;
    struct dfview_sum *sums = NULL;
    char error_text[256] = "";
    size_t count = 0;
    int exit_code = CLIARGS_EXIT_FAILED;

    if (!client) {
        fprintf(stderr, "%s: cannot use endpoint %s (expected tcp://HOST:PORT)\n", DFVIEW_WHO,
                options->target.endpoint);
        return CLIARGS_EXIT_FAILED;
    }
    int status = toolmeta_node_list(client, (int)options->target.timeout_ms, &nodes, &count,
                                    error_text, sizeof(error_text));
    if (status != TS_OK) {
        fprintf(stderr, "%s: tessera-meta at %s: %s%s%s%s\n", DFVIEW_WHO,
                options->target.endpoint, status_text(status), *error_text ? ": " : "",
                error_text,
                status == TS_ERR_TIMEDOUT ? " (is the cluster up? try: tessera status)" : "");
        goto out;
    }
    first = calloc(count ? count : 1, sizeof(*first));
    sums = calloc(count ? count : 1, sizeof(*sums));
    struct dfview_sum total;
    if (!first || !sums || !dfview_sum(nodes, count, NULL, &total)) {
        fprintf(stderr, "%s: out of memory\n", DFVIEW_WHO);
        goto out;
    }
    size_t machines = dfview_machines(nodes, count, first);
    for (size_t m = 0; m < machines; m++) {
        if (!dfview_sum(nodes, count, nodes[first[m]].machine, &sums[m])) {
            fprintf(stderr, "%s: out of memory\n", DFVIEW_WHO);
            goto out;
        }
    }
    if (options->json && dfview_print_json(nodes, count, sums, machines, &total) != 0) {
        fprintf(stderr, "%s: cannot write the JSON (out of memory?)\n", DFVIEW_WHO);
        goto out;
    }
    if (!options->json)
        dfview_print_table(nodes, count, sums, machines, &total);
    exit_code = CLIARGS_EXIT_OK;
out:
    free(sums);
    free(first);
    free(nodes);
    rpc_client_destroy(&client);
    return exit_code;
}

int dfview_main(int argc, char **argv)
{
    struct viewargs options;
    int exit_code =
        viewargs_parse(DFVIEW_WHO, dfview_usage, DFVIEW_DEFAULT_TIMEOUT_MS, argc, argv, &options);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    return dfview_query(&options);
}
