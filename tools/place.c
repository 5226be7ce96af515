/*
 * @file place.c
 * See place.h. The planner input is fetched as `tessera rebalance plan`
 * fetches it (rebalancefetch.c); the three policies then run on the same
 * snapshot. A machine's "remote transfer" under a placement is what it
 * serves over the network: for every profiled access by a machine that
 * holds no copy of the tile, the bytes are charged to the machine of the
 * tile's primary (the paper's T_i, summed over a machine's roles).
 */
#include "place.h"

#include "cliargs.h"
#include "fmt.h"
#include "metatarget.h"
#include "mountwalk.h"
#include "plan.h"
#include "plan_lbm.h"
#include "rebalancefetch.h"
#include "rebalanceinput.h"
#include "rebalancemodel.h"
#include "rpc.h"
#include "status.h"
#include "toolmeta.h"
#include "topologyfile.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLACE_WHO "tessera place"
#define PLACE_DEFAULT_TIMEOUT_MS 2000
/* The placements compared: now, then the three policies. */
#define PLACE_COLUMNS 4

struct place_options {
    struct metatarget target;
    const char *path;
    long groups;
    long max_copies; /* 0 = the planners' default */
    const char *topology_path;
};

static void place_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera place PATH [--groups M] [--topology FILE] [--max-copies N]\n"
            "                     [--state DIR | --meta ENDPOINT] [--timeout-ms MS]\n"
            "\n"
            "Shows where Load Balance Matching (tessera rebalance --policy lbm) would serve\n"
            "the files under PATH, from their access profiles (tessera profile start PATH):\n"
            "each file's tiles in groups, each group on its own machine, chosen so that the\n"
            "busiest server's remote transfer (bytes other machines read or write through\n"
            "it) is least. With a topology, Load Balance Traversing first picks each\n"
            "group's subcluster so the busiest link between subclusters carries least.\n"
            "Then every machine's predicted remote transfer now and under frequent,\n"
            "balanced and lbm. Changes nothing.\n"
            "\n"
            "  --groups M       groups per linear file, contiguous runs of tiles (default:\n"
            "                   one per machine with a datanode; never more); an array\n"
            "                   file's groups are its mesh's disk chunks\n"
            "  --topology FILE  the cluster's subclusters and links, one statement a line:\n"
            "                     subcluster NAME [parent NAME] [link RATE]\n"
            "                     machine NAME SUBCLUSTER\n"
            "                   one subcluster has no parent (the root), a parent is declared\n"
            "                   above its children, RATE is bytes/s with k, M or G (default\n"
            "                   125M), machines are the names datanodes and mounts report;\n"
            "                   '#' starts a comment. Default: one same-cost switch\n"
            "  --max-copies N   holders per tile frequent and balanced may give a tile read\n"
            "                   by several machines, as for tessera rebalance (default %d;\n"
            "                   1 compares them with lbm's one holder per tile)\n"
            "  --state DIR      the local cluster in DIR (default: PATH's cluster)\n"
            "  --meta ENDPOINT  ask this tessera-meta, e.g. tcp://10.0.0.1:7400\n"
            "  --timeout-ms MS  how long to wait for each reply (default %d)\n"
            "  -h, --help       this help\n"
            "\n"
            "Exit status: 0 done, 1 failed, 2 usage error.\n",
            PLAN_DEFAULT_MAX_COPIES, PLACE_DEFAULT_TIMEOUT_MS);
}

static int place_take(void *ctx, int option, const char *value)
{
    struct place_options *options = ctx;
    int taken = metatarget_option(&options->target, PLACE_WHO, option, value);
    if (taken != CLIARGS_NOT_MINE)
        return taken;
    switch (option) {
    case 'g':
        if (util_parse_long(value, 1, 1000000, &options->groups) != 0)
            return cliargs_usage_error(PLACE_WHO, "--groups wants 1..1000000, got", value);
        return CLIARGS_GO_ON;
    case 'o': options->topology_path = value; return CLIARGS_GO_ON;
    case 'c':
        if (util_parse_long(value, 1, PLAN_MAX_COPIES, &options->max_copies) != 0)
            return cliargs_usage_error(PLACE_WHO, "--max-copies wants 1..8, got", value);
        return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

static int place_parse(int argc, char **argv, struct place_options *options)
{
    static const struct option long_options[] = {
        METATARGET_LONG_OPTIONS,
        {"groups", required_argument, NULL, 'g'},
        {"topology", required_argument, NULL, 'o'},
        {"max-copies", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {PLACE_WHO, place_usage, long_options,
                                                   place_take};
    int operands;
    int exit_code = metatarget_parse(&command, &options->target, argc, argv, options, &operands);

    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    if (argc - operands != 1)
        return cliargs_usage_error(PLACE_WHO, "wants one PATH, e.g. tessera place /mnt/tessera/app",
                                   NULL);
    options->path = argv[operands];
    return CLIARGS_GO_ON;
}

/* The file a role's ino names, or "?" (every profiled ino has one). */
static const char *place_file_path(const struct rebalanceinput *input, uint64_t ino)
{
    for (size_t f = 0; f < input->file_count; f++) {
        if (input->files[f].ino == ino)
            return input->files[f].path;
    }
    return "?";
}

static const char *place_node_machine(const struct plan_cluster *cluster, uint32_t id)
{
    for (size_t n = 0; n < cluster->node_count; n++) {
        if (cluster->nodes[n].id == id)
            return cluster->nodes[n].machine;
    }
    return NULL;
}

static bool same_name(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* (ino, tile) order, as plan.h keeps a plan's changed entries. */
static int place_compare_tiles(const void *a, const void *b)
{
    const struct plan_tile *x = a, *y = b;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x->tile < y->tile ? -1 : x->tile > y->tile;
}

static int place_compare_tile_pointers(const void *a, const void *b)
{
    return place_compare_tiles(*(const struct plan_tile *const *)a,
                               *(const struct plan_tile *const *)b);
}

/*
 * The holders a tile has after the plan (its changed entry), or now (plan
 * NULL, or the plan leaves it): by binary search, so a comparison over a
 * profile of many tiles stays O(n log n). sorted_map is the map's entries
 * in (ino, tile) order.
 */
static const struct plan_tile *place_tile_after(const struct plan_tile *const *sorted_map,
                                                size_t map_count, const struct plan *plan,
                                                uint64_t ino, uint64_t tile)
{
    struct plan_tile key = {.ino = ino, .tile = tile};
    const struct plan_tile *key_pointer = &key;
    const struct plan_tile *const *found;

    if (plan && plan->changed_count) {
        const struct plan_tile *changed = bsearch(&key, plan->changed, plan->changed_count,
                                                  sizeof(*plan->changed), place_compare_tiles);
        if (changed)
            return changed;
    }
    found = map_count ? bsearch(&key_pointer, sorted_map, map_count, sizeof(*sorted_map),
                                place_compare_tile_pointers)
                      : NULL;
    return found ? *found : NULL;
}

/*
 * Adds each access's remote bytes to its serving machine's entry in
 * remote[] (indexed like machines[]).
 */
static void place_remote(const struct plan_cluster *cluster, const struct plan_profile *profile,
                         const struct plan_tile *const *sorted_map, size_t map_count,
                         const struct plan *plan, const char *const *machines, size_t machine_count,
                         uint64_t *remote)
{
    for (size_t a = 0; a < profile->count; a++) {
        const struct plan_access *access = &profile->accesses[a];
        const struct plan_tile *tile =
            place_tile_after(sorted_map, map_count, plan, access->ino, access->tile);
        const char *server;
        bool local = false;

        if (!tile || tile->node_count == 0)
            continue;
        for (uint32_t h = 0; h < tile->node_count && !local; h++)
            local = same_name(place_node_machine(cluster, tile->nodes[h]), access->machine);
        if (local)
            continue;
        server = place_node_machine(cluster, tile->nodes[0]);
        for (size_t m = 0; m < machine_count; m++) {
            if (same_name(machines[m], server))
                remote[m] += access->bytes_read + access->bytes_written;
        }
    }
}

/* The distinct machines of the datanodes, in snapshot order; returns how many. */
static size_t place_machines(const struct plan_cluster *cluster, const char **machines)
{
    size_t count = 0;
    for (size_t n = 0; n < cluster->node_count; n++) {
        const char *machine = cluster->nodes[n].machine;
        bool seen = !machine;
        for (size_t m = 0; m < count && !seen; m++)
            seen = strcmp(machines[m], machine) == 0;
        if (!seen)
            machines[count++] = machine;
    }
    return count;
}

static void place_print_roles(const struct rebalanceinput *input,
                              const struct plan_lbm_assignment *assignment,
                              const struct topology *topology)
{
    uint64_t busiest = 0;
    const char *busiest_machine = NULL;
    char bytes[16], remote[16];

    printf("%-32s %-15s %-20s %-12s %10s %10s\n", "FILE", "TILES", "MACHINE",
           topology ? "SUBCLUSTER" : "", "BYTES", "REMOTE");
    for (size_t r = 0; r < assignment->role_count; r++) {
        const struct plan_lbm_role *role = &assignment->roles[r];
        char tiles[48];
        snprintf(tiles, sizeof(tiles), "%" PRIu64 "-%" PRIu64, role->first_tile, role->last_tile);
        fmt_size(role->bytes, bytes, sizeof(bytes));
        fmt_size(role->remote_bytes, remote, sizeof(remote));
        printf("%-32s %-15s %-20s %-12s %10s %10s\n", place_file_path(input, role->ino), tiles,
               role->machine, topology ? topology->subcluster_names[role->subcluster] : "", bytes,
               remote);
        if (!busiest_machine || role->remote_bytes > busiest) {
            busiest = role->remote_bytes;
            busiest_machine = role->machine;
        }
    }
    if (busiest_machine) {
        fmt_size(busiest, remote, sizeof(remote));
        printf("busiest server: %s, %s remote (%" PRIu64 " bytes)\n", busiest_machine, remote,
               busiest);
    }
}

static void place_print_links(const struct plan_lbm_assignment *assignment,
                              const struct topology *topology)
{
    char down[16], up[16];

    printf("\n%-20s %-20s %10s %10s %12s\n", "LINK", "TO PARENT", "DOWN", "UP", "SECONDS");
    for (size_t v = 0; v < assignment->subcluster_count; v++) {
        uint64_t load;
        if (topology->parent[v] == TOPOLOGY_ROOT)
            continue;
        load = assignment->link_down_bytes[v] > assignment->link_up_bytes[v]
                   ? assignment->link_down_bytes[v]
                   : assignment->link_up_bytes[v];
        fmt_size(assignment->link_down_bytes[v], down, sizeof(down));
        fmt_size(assignment->link_up_bytes[v], up, sizeof(up));
        printf("%-20s %-20s %10s %10s %12.6f\n", topology->subcluster_names[v],
               topology->subcluster_names[topology->parent[v]], down, up,
               (double)load / topology->link_bytes_per_sec[v]);
    }
}

/* The comparison table: every datanode machine's remote transfer now and under each policy. */
static int place_compare(const struct rebalanceinput *input, const struct plan_options *options)
{
    static const enum plan_policy policies[PLACE_COLUMNS - 1] = {PLAN_FREQUENT, PLAN_BALANCED,
                                                                 PLAN_LBM};
    struct plan_cluster cluster;
    struct plan_profile profile;
    struct plan_tilemap map;
    struct plan plans[PLACE_COLUMNS - 1] = {{0}};
    const char **machines = NULL;
    const struct plan_tile **sorted_map = NULL;
    uint64_t *remote = NULL, worst[PLACE_COLUMNS] = {0};
    size_t machine_count;
    int exit_code = 1;
    char text[16];

    rebalanceinput_views(input, &cluster, &profile, &map);
    machines = calloc(cluster.node_count ? cluster.node_count : 1, sizeof(*machines));
    remote = calloc((cluster.node_count ? cluster.node_count : 1) * PLACE_COLUMNS, sizeof(*remote));
    sorted_map = calloc(map.count ? map.count : 1, sizeof(*sorted_map));
    if (!machines || !remote || !sorted_map) {
        fprintf(stderr, "%s: out of memory\n", PLACE_WHO);
        goto out;
    }
    machine_count = place_machines(&cluster, machines);
    for (size_t k = 0; k < map.count; k++)
        sorted_map[k] = &map.tiles[k];
    qsort(sorted_map, map.count, sizeof(*sorted_map), place_compare_tile_pointers);
    for (size_t p = 0; p < PLACE_COLUMNS - 1; p++) {
        int rc = plan_make(policies[p], &cluster, &profile, &map, options, &plans[p]);
        if (rc != 0) {
            fprintf(stderr, "%s: the %s planner refused the snapshot (%s)\n", PLACE_WHO,
                    plan_policy_name(policies[p]), strerror(-rc));
            goto out;
        }
    }
    for (size_t column = 0; column < PLACE_COLUMNS; column++)
        place_remote(&cluster, &profile, sorted_map, map.count, column ? &plans[column - 1] : NULL,
                     machines, machine_count, remote + column * machine_count);

    uint32_t holders = options->max_copies ? options->max_copies : PLAN_DEFAULT_MAX_COPIES;
    printf("\npredicted remote transfer per server (what it serves to other machines;\n"
           "frequent and balanced with at most %u holder%s per tile, lbm with one):\n",
           holders, holders == 1 ? "" : "s");
    printf("%-20s %10s %10s %10s %10s\n", "MACHINE", "NOW", "FREQUENT", "BALANCED", "LBM");
    for (size_t m = 0; m < machine_count; m++) {
        printf("%-20s", machines[m]);
        for (size_t column = 0; column < PLACE_COLUMNS; column++) {
            uint64_t value = remote[column * machine_count + m];
            if (value > worst[column])
                worst[column] = value;
            fmt_size(value, text, sizeof(text));
            printf(" %10s", text);
        }
        printf("\n");
    }
    printf("%-20s", "busiest");
    for (size_t column = 0; column < PLACE_COLUMNS; column++) {
        fmt_size(worst[column], text, sizeof(text));
        printf(" %10s", text);
    }
    printf("\n");
    if (plans[0].model_seconds_before > 0) {
        printf("%-20s %9.3fs", "model time", plans[0].model_seconds_before);
        for (size_t p = 0; p < PLACE_COLUMNS - 1; p++)
            printf(" %9.3fs", plans[p].model_seconds_after);
        printf("\n(the performance model's time of the profiled I/O: mounts, links, datanodes)\n");
    }
    exit_code = 0;
out:
    for (size_t p = 0; p < PLACE_COLUMNS - 1; p++)
        plan_release(&plans[p]);
    free(machines);
    free(remote);
    free(sorted_map);
    return exit_code;
}

static int place_run(const struct place_options *options, struct rpc_client *meta)
{
    struct toolmeta_node *nodes = NULL;
    struct rebalanceinput input;
    struct plan_lbm_assignment assignment = {0};
    struct topology topology = {0};
    struct plan_options plan_options = {.groups = (uint32_t)options->groups,
                                        .max_copies = (uint32_t)options->max_copies};
    struct plan_cluster cluster;
    struct plan_profile profile;
    struct plan_tilemap map;
    struct rebalancemodel *model = NULL;
    size_t node_count = 0;
    char peer[256];
    int exit_code = 1, status, rc;

    rebalanceinput_init(&input);
    status = toolmeta_node_list(meta, (int)options->target.timeout_ms, &nodes, &node_count, peer,
                                sizeof(peer));
    if (status != TS_OK) {
        fprintf(stderr, "%s: NODE_LIST: tessera-meta at %s answered: %s%s%s\n", PLACE_WHO,
                options->target.endpoint, status_text(status), peer[0] ? ": " : "", peer);
        goto out;
    }
    exit_code = rebalancefetch_build(options->path, options->target.endpoint, meta,
                                     (int)options->target.timeout_ms, nodes, node_count, &input);
    if (exit_code != 0)
        goto out;
    rebalanceinput_views(&input, &cluster, &profile, &map);
    rebalanceinput_array_options(&input, &plan_options);
    exit_code = 1;
    model = calloc(1, sizeof(*model));
    if (model && rebalancemodel_build(model, meta, (int)options->target.timeout_ms, nodes,
                                      node_count, &profile, 0) == 0)
        plan_options.predictor = &model->predictor;
    if (options->topology_path) {
        if (topologyfile_load(PLACE_WHO, options->topology_path, &topology) != 0 ||
            topologyfile_check(PLACE_WHO, options->topology_path, &topology, &cluster, &profile) !=
                0)
            goto out;
        plan_options.topology = &topology;
    }
    rc = plan_lbm_place(&cluster, &profile, &map, &plan_options, &assignment);
    if (rc != 0) {
        fprintf(stderr, "%s: the lbm placement failed (%s)\n", PLACE_WHO, strerror(-rc));
        goto out;
    }
    if (assignment.role_count == 0) {
        printf("nothing to place: %s\n",
               input.tile_count ? "no machine runs an up datanode"
                                : "no profiled tiles under the path (tessera profile start PATH, "
                                  "then use the files)");
        exit_code = 0;
        goto out;
    }
    printf("lbm placement of %s: %s\n\n", options->path,
           options->topology_path ? "Load Balance Traversing over the topology, then Load "
                                    "Balance Matching in each subcluster"
                                  : "Load Balance Matching, one same-cost subcluster");
    place_print_roles(&input, &assignment, options->topology_path ? &topology : NULL);
    if (options->topology_path)
        place_print_links(&assignment, &topology);
    exit_code = place_compare(&input, &plan_options);
out:
    plan_lbm_assignment_release(&assignment);
    topology_release(&topology);
    rebalanceinput_release(&input);
    free(model);
    free(nodes);
    return exit_code;
}

int place_main(int argc, char **argv)
{
    struct place_options options = {.target.timeout_ms = PLACE_DEFAULT_TIMEOUT_MS};
    struct rpc_client *meta;
    int exit_code = place_parse(argc, argv, &options);

    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    exit_code = metatarget_resolve_path(&options.target, options.path, PLACE_WHO);
    if (exit_code != 0)
        return exit_code;
    exit_code = mountwalk_check(options.path, PLACE_WHO);
    if (exit_code != 0)
        return exit_code;
    meta = rpc_client_new(options.target.endpoint);
    if (!meta) {
        fprintf(stderr, "%s: cannot use the meta endpoint %s (expected tcp://HOST:PORT)\n",
                PLACE_WHO, options.target.endpoint);
        return 1;
    }
    exit_code = place_run(&options, meta);
    rpc_client_destroy(&meta);
    return exit_code;
}
