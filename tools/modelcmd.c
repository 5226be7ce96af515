/*
 * @file modelcmd.c
 * See modelcmd.h.  Every prediction is built the same way: meta's up
 * datanodes and the stored calibration make the cluster (modelcluster.h),
 * the workload and its placement the work (modelworkload.h), and
 * perfmodel_predict() the answer; --what-if and advise only change the
 * workload or the what-if flags and predict again.
 */
#include "modelcmd.h"

#include "cliargs.h"
#include "fmt.h"
#include "jsonname.h"
#include "metatarget.h"
#include "modelcluster.h"
#include "modelprobe.h"
#include "modelworkload.h"
#include "status.h"
#include "toolmeta.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MODELCMD_WHO "tessera model"
#define MODELCMD_DEFAULT_TIMEOUT_MS 5000

enum modelcmd_action {
    MODELCMD_PREDICT, MODELCMD_ADVISE, MODELCMD_CALIBRATE, MODELCMD_SHOW, MODELCMD_EXPLAIN
};

struct modelcmd_options {
    struct metatarget target;
    enum modelcmd_action action;
    bool json;
    const char *what_if;
    const char *mount;
    const char *machine; /* where the clients run: --machine, else this host's name */
    uint64_t probe_bytes;
    int n_words;
    char **words;
};

static void modelcmd_usage(FILE *out)
{
    fprintf(
        out,
        "Usage: tessera model predict [--what-if LIST] [--json] WORKLOAD | FILE\n"
        "       tessera model advise [--json] WORKLOAD | FILE\n"
        "       tessera model calibrate --mount DIR [--probe-size SIZE]\n"
        "       tessera model show [--json]\n"
        "       tessera model explain [--json] PATH\n"
        "       (each also takes --state DIR | --meta ENDPOINT, --timeout-ms MS and\n"
        "       --machine NAME: the machine the clients run on, as the mount's --machine;\n"
        "       default this host's name)\n"
        "\n"
        "Predicts how long a read or write takes on this cluster (Chen et al.'s Panda\n"
        "model: start-up + the busiest resource + closing, every mount, link, datanode\n"
        "CPU and disk a queue), names the bottleneck, and suggests a better layout.\n"
        "\n"
        "WORKLOAD: KEY=VALUE words, or a FILE with a [workload] section of the same keys:\n"
        "  op=read|write  size=1G  tile=1M  clients=N  mounts=N  machines=A,B  nodes=N  copies=N\n"
        "  layout=linear | layout=array:SHAPE:TYPE[:mesh=AxB] (e.g. "
        "array:16384x4096:f32:mesh=2x2)\n"
        "  --what-if LIST   predict again with disk=inf,net=inf,cpu=inf,nodes=N,tile=SIZE\n"
        "  --json           print JSON\n"
        "calibrate: times PINGs to meta and every datanode, writes and reads probe\n"
        "  files in the mount DIR (--probe-size, default 64M, whole 4M), measuring the\n"
        "  time and this machine's busy CPU, and reads the tiles other machines hold\n"
        "  (this machine's network link), then stores the figures in meta, as the\n"
        "  attribute " MODELCALIB_XATTR " of the mount's root.\n"
        "explain: predicts a profiled file's recorded reads and writes (tessera profile)\n"
        "  as they were spread over its tiles and machines, with the disk/net/cpu=inf\n"
        "  what-ifs that name what held it back.\n"
        "Without a calibration the model uses the datanodes' heartbeat disk rates and\n"
        "stated defaults (tessera model show lists where each figure comes from).\n"
        "\n"
        "Exit status: 0 ok, 1 meta unreachable or the workload cannot be placed, 2 usage error.\n");
}

static int modelcmd_take(void *ctx, int option, const char *value)
{
    struct modelcmd_options *options = ctx;
    int taken = metatarget_option(&options->target, MODELCMD_WHO, option, value);
    if (taken != CLIARGS_NOT_MINE)
        return taken;
    switch (option) {
    case 'j': options->json = true; return CLIARGS_GO_ON;
    case 'w': options->what_if = value; return CLIARGS_GO_ON;
    case 'M': options->mount = value; return CLIARGS_GO_ON;
    case 'H':
        if (!*value || strlen(value) >= MODELCALIB_MACHINE_MAX || strpbrk(value, " \t\n"))
            return cliargs_usage_error(MODELCMD_WHO,
                                       "--machine wants a name of 1 to 63 characters without "
                                       "spaces, as the mount's --machine:",
                                       value);
        options->machine = value;
        return CLIARGS_GO_ON;
    case 'p':
        if (util_parse_size(value, &options->probe_bytes) != 0 || options->probe_bytes < (1u << 20))
            return cliargs_usage_error(MODELCMD_WHO, "--probe-size wants a size of 1M or more:",
                                       value);
        return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

static int modelcmd_parse(int argc, char **argv, struct modelcmd_options *options)
{
    static const struct option long_options[] = {
        METATARGET_LONG_OPTIONS,
        {"json", no_argument, NULL, 'j'},
        {"what-if", required_argument, NULL, 'w'},
        {"mount", required_argument, NULL, 'M'},
        {"machine", required_argument, NULL, 'H'},
        {"probe-size", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {MODELCMD_WHO, modelcmd_usage, long_options,
                                                   modelcmd_take};
    static const char *const actions[] = {"predict", "advise", "calibrate", "show", "explain"};
    size_t action = 0;
    int operands;
    int exit_code = metatarget_parse(&command, &options->target, argc, argv, options, &operands);
    if (exit_code == CLIARGS_GO_ON)
        exit_code = cliargs_action(MODELCMD_WHO, actions, 5, argc, argv, operands, &action);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    options->action = (enum modelcmd_action)action;
    options->words = argv + operands + 1;
    options->n_words = argc - operands - 1;
    bool wants_workload = action == MODELCMD_PREDICT || action == MODELCMD_ADVISE;
    if (wants_workload && options->n_words == 0)
        return cliargs_usage_error(MODELCMD_WHO, "the action wants a WORKLOAD, e.g. tessera model "
                                   "predict op=read size=1G tile=1M clients=4", NULL);
    if (action == MODELCMD_EXPLAIN && options->n_words != 1)
        return cliargs_usage_error(MODELCMD_WHO, "explain wants one PATH, a profiled file", NULL);
    if (!wants_workload && action != MODELCMD_EXPLAIN && options->n_words > 0)
        return cliargs_usage_error(MODELCMD_WHO, "unexpected operand", options->words[0]);
    if (options->what_if && action != MODELCMD_PREDICT)
        return cliargs_usage_error(MODELCMD_WHO, "--what-if goes with predict", NULL);
    if ((options->mount || options->probe_bytes) && action != MODELCMD_CALIBRATE)
        return cliargs_usage_error(MODELCMD_WHO, "--mount and --probe-size go with calibrate",
                                   NULL);
    if (action == MODELCMD_CALIBRATE && !options->mount)
        return cliargs_usage_error(MODELCMD_WHO, "calibrate wants --mount DIR, the mount it "
                                   "probes and stores the figures through", NULL);
    if (options->json && action == MODELCMD_CALIBRATE)
        return cliargs_usage_error(MODELCMD_WHO, "--json goes with predict, advise and show",
                                   NULL);
    return CLIARGS_GO_ON;
}

/* The workload from the words, or from the file one word names. */
static int modelcmd_workload(const struct modelcmd_options *options, struct modelworkload *work)
{
    char err[512];
    modelworkload_init(work);
    struct stat st;
    int rc = options->n_words == 1 && !strchr(options->words[0], '=') &&
                     stat(options->words[0], &st) == 0
                 ? modelworkload_read_file(work, options->words[0], err, sizeof(err))
                 : modelworkload_parse_words(work, options->n_words, options->words, err,
                                             sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", MODELCMD_WHO, err);
        return CLIARGS_EXIT_USAGE;
    }
    return 0;
}

/* What the model needs from meta: its up datanodes and the calibration. */
struct modelcmd_live {
    struct toolmeta_node *nodes;
    size_t count;
    struct modelcalib calib; /* when 0: none stored */
    char host[256];
    unsigned cores;
};

static int modelcmd_fetch(struct rpc_client *meta, const struct modelcmd_options *options,
                          struct modelcmd_live *live)
{
    char error_text[256];
    int status = toolmeta_node_list(meta, (int)options->target.timeout_ms, &live->nodes,
                                    &live->count, error_text, sizeof(error_text));
    if (status != TS_OK) {
        fprintf(stderr, "%s: NODE_LIST from %s failed: %s%s%s\n", MODELCMD_WHO,
                options->target.endpoint, status_text(status), error_text[0] ? ": " : "",
                error_text);
        return 1;
    }
    status = modelprobe_load(meta, (int)options->target.timeout_ms, &live->calib);
    if (status != TS_OK && status != TS_ERR_NODATA)
        fprintf(stderr, "%s: the stored calibration is unreadable (%s); using defaults\n",
                MODELCMD_WHO, status_text(status));
    /* As a mount names its machine when not told (its --machine). */
    if (options->machine)
        snprintf(live->host, sizeof(live->host), "%s", options->machine);
    else
        util_machine_name(live->host, sizeof(live->host));
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    live->cores = cores > 0 ? (unsigned)cores : 0;
    return 0;
}

/* One prediction of work under inf on the live cluster. */
struct modelcmd_run {
    struct modelcluster cluster;
    struct perfmodel_result result;
};

/*
 * Puts the workload's mounts on their machines: --machine's, or mount i on
 * machines= entry i mod count, a machine without a datanode added (with
 * the measured link and this machine's cores: cabled and built alike);
 * each mount then reads or writes its own contiguous part of the tiles
 * (*parts, w->tile_clients; free it). 0, or -1 with err.
 */
static int modelcmd_place_mounts(struct modelcmd_run *run, const struct modelworkload *work,
                                 size_t mounts, struct perfmodel_workload *w, uint32_t **parts,
                                 char *err, size_t cap)
{
    struct perfmodel_cluster *c = &run->cluster.model;
    *parts = NULL;
    for (size_t i = 0; i < mounts; i++) {
        int machine = run->cluster.client_machine;
        if (work->n_machines > 0) {
            machine =
                modelcluster_machine_index(&run->cluster, work->machines[i % work->n_machines]);
            if (machine < 0) {
                snprintf(err, cap, "machines=: more machines than the model holds (%d)",
                         PERFMODEL_MAX_MACHINES);
                return -1;
            }
            if (c->machine_cores[machine] == 0)
                c->machine_cores[machine] = c->machine_cores[run->cluster.client_machine];
        }
        w->client_machine[i] = machine;
    }
    if (work->n_machines == 0)
        return 0;
    size_t n_tiles =
        w->n_tiles ? w->n_tiles : (size_t)((w->bytes + w->tile_bytes - 1) / w->tile_bytes);
    *parts = malloc((n_tiles ? n_tiles : 1) * sizeof(**parts));
    if (!*parts) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    for (size_t t = 0; t < n_tiles; t++)
        (*parts)[t] = (uint32_t)(t * mounts / n_tiles);
    w->n_tiles = n_tiles;
    w->tile_clients = *parts;
    return 0;
}

static int modelcmd_predict_one(const struct modelcmd_live *live, const struct modelworkload *work,
                                const struct perfmodel_whatif *inf, struct modelcmd_run *run,
                                char *err, size_t cap)
{
    if (modelcluster_build(live->nodes, live->count, &live->calib, live->host, live->cores,
                           work->nodes, &run->cluster) != 0) {
        snprintf(err, cap, "no datanode is up");
        return -1;
    }
    const struct perfmodel_cluster *c = &run->cluster.model;
    if (work->copies > c->n_nodes) {
        snprintf(err, cap, "copies=%u but only %zu datanodes", work->copies, c->n_nodes);
        return -1;
    }
    int machines[PERFMODEL_MAX_NODES];
    modelcluster_machines(&run->cluster, machines);
    struct modelplacement placement;
    if (modelworkload_place(work, machines, c->n_nodes, &placement, err, cap) != 0)
        return -1;
    if (work->n_machines > work->clients) {
        snprintf(err, cap, "machines= names %zu machines but clients=%zu: each needs a client",
                 work->n_machines, work->clients);
        modelplacement_free(&placement);
        return -1;
    }
    /* The model's queues are the mounts: clients on one mount share it. */
    size_t mounts = modelworkload_mounts(work);
    struct perfmodel_workload w = {
        .op = work->op,
        .bytes = work->bytes,
        .tile_bytes = work->tile_bytes,
        .n_clients = mounts,
        .copies = work->copies,
        .n_tiles = placement.n_tiles,
        .tile_nodes = placement.tile_nodes,
        .tile_lens = placement.tile_lens,
        /* Array files are read ahead along the reader's block (fuse/readpath.c,
         * array_read_ahead), so their tiles overlap as a linear file's do. */
        .serial = 0,
        .array = work->is_array,
        /* The workload's clients write the files they read. */
        .writer_copies = 1};
    uint32_t *parts = NULL;
    int rc = modelcmd_place_mounts(run, work, mounts, &w, &parts, err, cap);
    if (rc == 0 && (rc = perfmodel_predict(c, &w, inf, &run->result)) != 0)
        snprintf(err, cap, "the model cannot take this workload");
    free(parts);
    modelplacement_free(&placement);
    return rc;
}

/* "disk[node 3]", "mount-cpu[client 0]", "machine-cpu[m0]" ... */
static void modelcmd_resource_name(const struct modelcmd_run *run,
                                   const struct perfmodel_resource *res, char *buf, size_t cap)
{
    static const char *const kinds[] = {
        [PERFMODEL_RES_MOUNT_CPU] = "mount-cpu", [PERFMODEL_RES_LINK_OUT] = "link-out",
        [PERFMODEL_RES_LINK_IN] = "link-in", [PERFMODEL_RES_NODE_CPU] = "node-cpu",
        [PERFMODEL_RES_DISK] = "disk", [PERFMODEL_RES_META] = "meta",
        [PERFMODEL_RES_MACHINE_CPU] = "machine-cpu", [PERFMODEL_RES_CHAIN] = "chain",
    };
    switch (res->kind) {
    case PERFMODEL_RES_NODE_CPU:
    case PERFMODEL_RES_DISK: {
        uint32_t id = run->cluster.node_ids[res->index];
        if (id)
            snprintf(buf, cap, "%s[node %" PRIu32 "]", kinds[res->kind], id);
        else
            snprintf(buf, cap, "%s[extra node %d]", kinds[res->kind], res->index);
        break;
    }
    case PERFMODEL_RES_MOUNT_CPU:
    case PERFMODEL_RES_CHAIN:
        snprintf(buf, cap, "%s[mount %d]", kinds[res->kind], res->index);
        break;
    default:
        snprintf(buf, cap, "%s[machine %d]", kinds[res->kind], res->index);
    }
}

static int modelcmd_by_busy(const void *a, const void *b)
{
    double x = ((const struct perfmodel_resource *)a)->busy_s;
    double y = ((const struct perfmodel_resource *)b)->busy_s;
    return x < y ? 1 : x > y ? -1 : 0;
}

static const char *modelcmd_source(enum modelcluster_source source)
{
    return source == MODELCLUSTER_CALIBRATED ? "calibrated"
           : source == MODELCLUSTER_HEARTBEAT ? "heartbeats"
                                              : "defaults";
}

static void modelcmd_print_run(const struct modelcmd_run *run, bool breakdown)
{
    const struct perfmodel_result *r = &run->result;
    char name[64];
    modelcmd_resource_name(run, &r->resources[r->bottleneck], name, sizeof(name));
    printf("predicted: %.3f s, %.1f MB/s (start-up %.4f s, closing %.4f s), bottleneck %s\n",
           r->total_s, r->mbps, r->startup_s, r->closing_s, name);
    if (!breakdown)
        return;
    struct perfmodel_resource sorted[PERFMODEL_MAX_RESOURCES];
    memcpy(sorted, r->resources, r->n_resources * sizeof(sorted[0]));
    qsort(sorted, r->n_resources, sizeof(sorted[0]), modelcmd_by_busy);
    double top = sorted[0].busy_s > 0 ? sorted[0].busy_s : 1;
    printf("%-26s %10s %6s\n", "RESOURCE", "BUSY(s)", "LOAD");
    for (size_t i = 0; i < r->n_resources; i++) {
        modelcmd_resource_name(run, &sorted[i], name, sizeof(name));
        printf("%-26s %10.4f %5.0f%%\n", name, sorted[i].busy_s, 100.0 * sorted[i].busy_s / top);
    }
}

static json_t *modelcmd_run_json(const struct modelcmd_run *run)
{
    const struct perfmodel_result *r = &run->result;
    char name[64];
    json_t *resources = json_array();
    for (size_t i = 0; resources && i < r->n_resources; i++) {
        modelcmd_resource_name(run, &r->resources[i], name, sizeof(name));
        json_array_append_new(resources,
                              json_pack("{s:s, s:f}", "name", name, "busy_s", r->resources[i].busy_s));
    }
    modelcmd_resource_name(run, &r->resources[r->bottleneck], name, sizeof(name));
    return json_pack("{s:f, s:f, s:f, s:f, s:s, s:o}", "seconds", r->total_s, "mbps", r->mbps,
                     "startup_s", r->startup_s, "closing_s", r->closing_s, "bottleneck", name,
                     "resources", resources ? resources : json_null());
}

static int modelcmd_predict(const struct modelcmd_options *options, const struct modelcmd_live *live,
                            const struct modelworkload *work)
{
    static struct modelcmd_run run, alt;
    char err[512];
    char text[ARRAYSPEC_TEXT_MAX + 128];
    struct modelwhatif whatif = { 0 };
    if (options->what_if && modelwhatif_parse(options->what_if, &whatif, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", MODELCMD_WHO, err);
        return CLIARGS_EXIT_USAGE;
    }
    if (modelcmd_predict_one(live, work, NULL, &run, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", MODELCMD_WHO, err);
        return 1;
    }
    struct modelworkload changed = *work;
    modelwhatif_apply(&whatif, &changed);
    if (options->what_if &&
        modelcmd_predict_one(live, &changed, &whatif.inf, &alt, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: --what-if %s: %s\n", MODELCMD_WHO, options->what_if, err);
        return 1;
    }
    modelworkload_describe(work, text, sizeof(text));
    if (options->json) {
        json_t *root = modelcmd_run_json(&run);
        if (root) {
            json_object_set_new(root, "workload", json_string(text));
            json_object_set_new(root, "datanodes", json_integer((json_int_t)run.cluster.model.n_nodes));
            json_object_set_new(root, "figures",
                                json_pack("{s:s, s:s, s:s}", "disk",
                                          modelcmd_source(run.cluster.disk_source), "datanode_cpu",
                                          modelcmd_source(run.cluster.cpu_source), "mount",
                                          modelcmd_source(run.cluster.mount_source)));
            if (options->what_if) {
                json_t *w = modelcmd_run_json(&alt);
                if (w)
                    json_object_set_new(w, "conditions", json_string(options->what_if));
                json_object_set_new(root, "what_if", w ? w : json_null());
            }
        }
        return jsonname_print(stdout, root) == 0 ? 0 : 1;
    }
    printf("workload: %s; %zu datanodes\n", text, run.cluster.model.n_nodes);
    printf("figures: disk from %s, datanode CPU from %s, mount and meta from %s\n",
           modelcmd_source(run.cluster.disk_source), modelcmd_source(run.cluster.cpu_source),
           modelcmd_source(run.cluster.mount_source));
    modelcmd_print_run(&run, true);
    if (options->what_if) {
        printf("what-if %s:\n  ", options->what_if);
        modelcmd_print_run(&alt, false);
        printf("  %.2fx the speed\n", run.result.total_s / alt.result.total_s);
    }
    return 0;
}

/* advise: every tile size, mesh (arrays) and datanode count up to the
 * cluster's, best first. */
struct modelcmd_choice {
    struct modelworkload work;
    double seconds;
};

static int modelcmd_by_seconds(const void *a, const void *b)
{
    const struct modelcmd_choice *x = a, *y = b;
    /* Within 1 %, the one with more datanodes (headroom), then larger tiles. */
    if (fabs(x->seconds - y->seconds) > 0.01 * (x->seconds < y->seconds ? x->seconds : y->seconds))
        return x->seconds < y->seconds ? -1 : 1;
    if (x->work.nodes != y->work.nodes)
        return x->work.nodes > y->work.nodes ? -1 : 1;
    return x->work.tile_bytes > y->work.tile_bytes ? -1 : x->work.tile_bytes < y->work.tile_bytes;
}

/* The meshes over the array's dimensions with mesh product <= max_chunks. */
static size_t modelcmd_meshes(const struct modelworkload *work, size_t max_chunks,
                              uint64_t (*out)[ARRAYSPEC_MAX_DIMS], size_t cap)
{
    size_t n = 0;
    uint32_t dims = work->array.ndims > 3 ? 3 : work->array.ndims;
    for (uint64_t a = 1; a <= max_chunks; a++)
        for (uint64_t b = 1; a * b <= max_chunks && (dims >= 2 || b == 1); b++)
            for (uint64_t c = 1; a * b * c <= max_chunks && (dims >= 3 || c == 1); c++) {
                if (n >= cap)
                    return n;
                uint64_t m[3] = { a, b, c };
                for (uint32_t d = 0; d < ARRAYSPEC_MAX_DIMS; d++)
                    out[n][d] = d < dims ? m[d] : 1;
                n++;
            }
    return n;
}

static int modelcmd_advise(const struct modelcmd_options *options, const struct modelcmd_live *live,
                           const struct modelworkload *work)
{
    static struct modelcmd_run run;
    static struct modelcmd_choice choices[4096];
    static uint64_t meshes[512][ARRAYSPEC_MAX_DIMS];
    static const uint64_t tiles[] = { 256u << 10, 512u << 10, 1u << 20, 2u << 20, 4u << 20 };
    char err[512], text[ARRAYSPEC_TEXT_MAX + 128];
    if (modelcmd_predict_one(live, work, NULL, &run, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", MODELCMD_WHO, err);
        return 1;
    }
    double now = run.result.total_s;
    size_t up = run.cluster.model.n_nodes;
    if (work->nodes == 0 || work->nodes < up) {
        struct modelcluster all;
        if (modelcluster_build(live->nodes, live->count, &live->calib, live->host, live->cores, 0,
                               &all) == 0)
            up = all.model.n_nodes;
    }
    size_t n_meshes = 1;
    meshes[0][0] = 0; /* the workload's own */
    bool array_blocked = work->is_array && work->array.dist[0] == ARRAYSPEC_BLOCK;
    if (array_blocked)
        n_meshes = modelcmd_meshes(work, 2 * up, meshes, 512);
    size_t n = 0;
    for (size_t t = 0; t < sizeof(tiles) / sizeof(tiles[0]); t++)
        for (size_t nodes = work->copies; nodes <= up; nodes++)
            for (size_t m = 0; m < n_meshes && n < 4096; m++) {
                struct modelcmd_choice *choice = &choices[n];
                choice->work = *work;
                choice->work.tile_bytes = tiles[t];
                choice->work.nodes = nodes;
                if (array_blocked) {
                    uint32_t dims = work->array.ndims > 3 ? 3 : work->array.ndims;
                    for (uint32_t d = 0; d < dims; d++)
                        choice->work.array.mesh[d] = meshes[m][d];
                }
                if (modelcmd_predict_one(live, &choice->work, NULL, &run, err, sizeof(err)) == 0) {
                    choice->seconds = run.result.total_s;
                    n++;
                }
            }
    if (n == 0) {
        fprintf(stderr, "%s: no variant of the workload could be placed\n", MODELCMD_WHO);
        return 1;
    }
    qsort(choices, n, sizeof(choices[0]), modelcmd_by_seconds);
    size_t shown = n < 5 ? n : 5;
    if (options->json) {
        json_t *list = json_array();
        for (size_t i = 0; list && i < shown; i++) {
            modelworkload_describe(&choices[i].work, text, sizeof(text));
            json_array_append_new(list, json_pack("{s:s, s:I, s:I, s:f, s:f}", "workload", text,
                "tile", (json_int_t)choices[i].work.tile_bytes, "datanodes",
                (json_int_t)choices[i].work.nodes, "seconds", choices[i].seconds, "gain",
                now / choices[i].seconds));
        }
        json_t *root = json_pack("{s:f, s:o}", "current_seconds", now, "best",
                                 list ? list : json_null());
        return jsonname_print(stdout, root) == 0 ? 0 : 1;
    }
    modelworkload_describe(work, text, sizeof(text));
    printf("now: %s on %zu datanodes: %.3f s\n", text, run.cluster.model.n_nodes, now);
    printf("best of %zu variants (tile sizes 256K-4M, %s1-%zu datanodes):\n", n,
           array_blocked ? "meshes, " : "", up);
    for (size_t i = 0; i < shown; i++) {
        modelworkload_describe(&choices[i].work, text, sizeof(text));
        printf("  %.3f s  %.2fx  %zu datanodes  %s\n", choices[i].seconds, now / choices[i].seconds,
               choices[i].work.nodes, text);
    }
    return 0;
}

/* Whether machine m's link is one calibrate measured from it. */
static bool modelcmd_link_measured(const struct modelcmd_live *live,
                                   const struct modelcluster *cluster, size_t m)
{
    for (size_t i = 0; i < live->calib.n_links; i++)
        if (strcmp(live->calib.links[i].machine, cluster->machines[m]) == 0)
            return true;
    return false;
}

static int modelcmd_show(const struct modelcmd_options *options, const struct modelcmd_live *live)
{
    static struct modelcluster cluster;
    char when[64] = "never";
    if (modelcluster_build(live->nodes, live->count, &live->calib, live->host, live->cores, 0,
                           &cluster) != 0) {
        fprintf(stderr, "%s: no datanode is up\n", MODELCMD_WHO);
        return 1;
    }
    const struct perfmodel_cluster *c = &cluster.model;
    if (live->calib.when > 0) {
        time_t t = (time_t)live->calib.when;
        struct tm tm;
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
    }
    if (options->json) {
        json_t *nodes = json_array();
        for (size_t i = 0; nodes && i < c->n_nodes; i++) {
            const struct perfmodel_node *n = &c->nodes[i];
            json_array_append_new(nodes, json_pack("{s:I, s:f, s:f, s:f, s:f, s:f}", "id",
                (json_int_t)cluster.node_ids[i], "disk_read_mbps", n->disk_read_mbps,
                "disk_write_mbps", n->disk_write_mbps, "sync_s", n->sync_seconds,
                "cpu_per_request_s", n->cpu_per_request_s, "cpu_per_byte_s", n->cpu_per_byte_s));
        }
        json_t *root = json_pack("{s:s, s:f, s:f, s:f, s:f, s:I, s:o}", "calibrated", when,
            "mount_cpu_per_request_s", c->mount_cpu_per_request_s, "mount_cpu_per_byte_s",
            c->mount_cpu_per_byte_s, "mount_write_cpu_per_byte_s",
            c->mount_write_cpu_per_byte_s > 0 ? c->mount_write_cpu_per_byte_s : c->mount_cpu_per_byte_s,
            "meta_rtt_s", c->meta_rtt_s, "client_cores", (json_int_t)live->cores, "datanodes",
            nodes ? nodes : json_null());
        const struct perfmodel_client_cpu *cc = &c->client_cpu;
        if (root && cc->read_per_byte_s > 0)
            json_object_set_new(
                root, "client_cpu",
                json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "read_per_byte_s",
                          cc->read_per_byte_s, "write_per_byte_s", cc->write_per_byte_s,
                          "read_per_request_s", cc->read_per_request_s, "write_per_request_s",
                          cc->write_per_request_s, "copy_per_byte_s", cc->copy_per_byte_s,
                          "array_read_per_byte_s", cc->array_read_per_byte_s,
                          "array_write_per_byte_s", cc->array_write_per_byte_s,
                          "remote_read_per_byte_s", cc->remote_read_per_byte_s));
        json_t *links = json_array();
        for (size_t m = 0; links && m < c->n_machines; m++) {
            json_t *link = json_pack("{s:f, s:b}", "mbps", c->links[m].mbps, "measured",
                                     modelcmd_link_measured(live, &cluster, m));
            /* A machine is named as a mount's --machine: any bytes. */
            if (link && jsonname_set(link, "machine", cluster.machines[m]) != 0) {
                json_decref(link);
                link = NULL;
            }
            json_array_append_new(links, link);
        }
        if (root)
            json_object_set_new(root, "links", links ? links : json_null());
        if (root && (c->mount_array_read_per_byte_s > 0 || c->mount_array_write_per_byte_s > 0))
            json_object_set_new(root, "mount_array",
                                json_pack("{s:f, s:f}", "read_per_byte_s",
                                          c->mount_array_read_per_byte_s, "write_per_byte_s",
                                          c->mount_array_write_per_byte_s));
        return jsonname_print(stdout, root) == 0 ? 0 : 1;
    }
    printf("calibrated: %s\n", when);
    printf("mount: %.1f us per request, read %.3f ns/byte, write %.3f ns/byte (%s)\n",
           c->mount_cpu_per_request_s * 1e6, c->mount_cpu_per_byte_s * 1e9,
           (c->mount_write_cpu_per_byte_s > 0 ? c->mount_write_cpu_per_byte_s
                                             : c->mount_cpu_per_byte_s) * 1e9,
           modelcmd_source(cluster.mount_source));
    if (c->mount_array_read_per_byte_s > 0 || c->mount_array_write_per_byte_s > 0)
        printf("mount, array files: read %.3f ns/byte, write %.3f ns/byte (calibrated)\n",
               c->mount_array_read_per_byte_s * 1e9, c->mount_array_write_per_byte_s * 1e9);
    printf("meta: %.1f us per round trip; clients on %s, %u cores\n", c->meta_rtt_s * 1e6,
           live->host, live->cores);
    if (c->client_cpu.read_per_byte_s > 0)
        modelprobe_print_client_cpu("client machine's CPU", &c->client_cpu, "(calibrated)");
    printf("%-4s %10s %10s %9s %12s %12s\n", "ID", "READ MB/s", "WRITE MB/s", "SYNC ms",
           "us/REQUEST", "ns/BYTE");
    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct perfmodel_node *n = &c->nodes[i];
        printf("%-4" PRIu32 " %10.1f %10.1f %9.2f %12.1f %12.3f\n", cluster.node_ids[i],
               n->disk_read_mbps, n->disk_write_mbps, n->sync_seconds * 1e3,
               n->cpu_per_request_s * 1e6, n->cpu_per_byte_s * 1e9);
    }
    printf("disk from %s, datanode CPU from %s\n", modelcmd_source(cluster.disk_source),
           modelcmd_source(cluster.cpu_source));
    for (size_t m = 0; m < c->n_machines; m++)
        printf("link of %s: %.1f MB/s (%s)\n", cluster.machines[m], c->links[m].mbps,
               modelcmd_link_measured(live, &cluster, m) ? "calibrated"
               : live->calib.n_links > 0                 ? "as one calibrated"
                                                         : "default");
    return 0;
}

/* explain: one direction (op) of a profiled file's accesses as the model's workload. */
struct modelcmd_accesses {
    size_t n;
    uint32_t *nodes, *lens, *clients;
    uint64_t bytes;
    size_t skipped; /* records of holes or of nodes not up */
};

static int modelcmd_explain_op(const struct modelcmd_options *options,
                               const struct modelcmd_live *live, const struct toolmeta_access *rec,
                               size_t count, const uint32_t *primary, uint64_t n_tiles,
                               unsigned copies, enum perfmodel_op op, struct modelcmd_run *run,
                               bool *any)
{
    struct modelcmd_accesses a = { 0 };
    int rc = 1;
    *any = false;
    if (modelcluster_build(live->nodes, live->count, &live->calib, live->host, live->cores, 0,
                           &run->cluster) != 0) {
        fprintf(stderr, "%s: no datanode is up\n", MODELCMD_WHO);
        return 1;
    }
    struct perfmodel_workload w = { .op = op, .tile_bytes = 1, .copies = copies };
    a.nodes = malloc((count ? count : 1) * sizeof(uint32_t));
    a.lens = malloc((count ? count : 1) * sizeof(uint32_t));
    a.clients = malloc((count ? count : 1) * sizeof(uint32_t));
    if (!a.nodes || !a.lens || !a.clients) {
        fprintf(stderr, "%s: out of memory\n", MODELCMD_WHO);
        goto out;
    }
    const struct perfmodel_cluster *c = &run->cluster.model;
    for (size_t i = 0; i < count; i++) {
        uint64_t bytes = op == PERFMODEL_READ ? rec[i].bytes_read : rec[i].bytes_written;
        if (bytes == 0)
            continue;
        size_t node = c->n_nodes;
        if (rec[i].tile < n_tiles)
            for (size_t k = 0; k < c->n_nodes; k++)
                if (run->cluster.node_ids[k] == primary[rec[i].tile] && primary[rec[i].tile])
                    node = k;
        int machine = modelcluster_machine_index(&run->cluster, rec[i].machine);
        size_t client = w.n_clients;
        for (size_t k = 0; k < w.n_clients; k++)
            if (w.client_machine[k] == machine)
                client = k;
        if (client == w.n_clients && machine >= 0 && w.n_clients < PERFMODEL_MAX_CLIENTS)
            w.client_machine[w.n_clients++] = machine;
        if (node == c->n_nodes || machine < 0 || client >= w.n_clients || bytes > UINT32_MAX) {
            a.skipped++;
            continue;
        }
        a.nodes[a.n] = (uint32_t)node;
        a.lens[a.n] = (uint32_t)bytes;
        a.clients[a.n++] = (uint32_t)client;
        a.bytes += bytes;
    }
    if (a.skipped)
        fprintf(stderr, "%s: %zu %s records left out (a hole, a datanode not up, or too many "
                "machines)\n", MODELCMD_WHO, a.skipped, op == PERFMODEL_READ ? "read" : "write");
    rc = 0;
    if (a.n == 0)
        goto out;
    if (copies > c->n_nodes)
        w.copies = (unsigned)c->n_nodes;
    w.bytes = a.bytes;
    w.n_tiles = a.n;
    w.tile_nodes = a.nodes;
    w.tile_lens = a.lens;
    w.tile_clients = a.clients;
    if (perfmodel_predict(c, &w, NULL, &run->result) != 0) {
        fprintf(stderr, "%s: the model cannot take these accesses\n", MODELCMD_WHO);
        rc = 1;
        goto out;
    }
    *any = true;
    if (!options->json) {
        char size[16];
        fmt_size(a.bytes, size, sizeof(size));
        printf("%s: %s in %zu accesses by %zu machine%s over %zu datanodes\n",
               op == PERFMODEL_READ ? "reads" : "writes", size, a.n, w.n_clients,
               w.n_clients == 1 ? "" : "s", c->n_nodes);
        modelcmd_print_run(run, true);
        static const char *const names[3] = { "disk=inf", "net=inf", "cpu=inf" };
        for (int k = 0; k < 3; k++) {
            struct perfmodel_whatif inf = { .disk_inf = k == 0, .net_inf = k == 1,
                                            .cpu_inf = k == 2 };
            struct perfmodel_result r;
            if (perfmodel_predict(c, &w, &inf, &r) == 0)
                printf("  what-if %s: %.3f s (%.2fx)\n", names[k], r.total_s,
                       run->result.total_s / r.total_s);
        }
    }
out:
    free(a.nodes);
    free(a.lens);
    free(a.clients);
    return rc;
}

static int modelcmd_explain(const struct modelcmd_options *options,
                            const struct modelcmd_live *live, struct rpc_client *meta)
{
    static struct modelcmd_run runs[2];
    const char *path = options->words[0];
    int timeout = (int)options->target.timeout_ms;
    char error_text[256] = "";
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "%s: %s: not a regular file\n", MODELCMD_WHO, path);
        return 1;
    }
    struct ts_attr attr;
    struct toolmeta_access *records = NULL;
    size_t count = 0;
    uint32_t profiling = 0;
    uint32_t *primary = NULL;
    int rc = 1;
    int status = toolmeta_getattr(meta, timeout, (uint64_t)st.st_ino, &attr);
    if (status == TS_OK)
        status = toolmeta_profile_all(meta, timeout, (uint64_t)st.st_ino, &records, &count,
                                      &profiling, error_text, sizeof(error_text));
    if (status != TS_OK) {
        fprintf(stderr, "%s: %s: %s%s%s\n", MODELCMD_WHO, path, status_text(status),
                error_text[0] ? ": " : "", error_text);
        return 1;
    }
    if (count == 0) {
        fprintf(stderr, "%s: %s has no recorded accesses (tessera profile start %s, then run "
                "the application)\n", MODELCMD_WHO, path, path);
        goto out;
    }
    uint64_t n_tiles = 0;
    for (size_t i = 0; i < count; i++)
        if (records[i].tile + 1 > n_tiles)
            n_tiles = records[i].tile + 1;
    primary = calloc(n_tiles, sizeof(uint32_t));
    if (!primary) {
        fprintf(stderr, "%s: out of memory\n", MODELCMD_WHO);
        goto out;
    }
    for (uint64_t first = 0; first < n_tiles; first += TS_MAX_TILES_PER_MAP) {
        uint32_t n = (uint32_t)(n_tiles - first < TS_MAX_TILES_PER_MAP ? n_tiles - first
                                                                        : TS_MAX_TILES_PER_MAP);
        static uint64_t versions[TS_MAX_TILES_PER_MAP]; /* asked for, not used */
        status = toolmeta_tile_map(meta, timeout, (uint64_t)st.st_ino, first, n, primary + first,
                                   versions, NULL, error_text, sizeof(error_text));
        if (status != TS_OK) {
            fprintf(stderr, "%s: TILE_MAP of %s: %s\n", MODELCMD_WHO, path, status_text(status));
            goto out;
        }
    }
    if (!options->json)
        printf("%s: %zu access records, as the file is placed now\n", path, count);
    bool any[2];
    for (int k = 0; k < 2; k++)
        if (modelcmd_explain_op(options, live, records, count, primary, n_tiles,
                                attr.copies ? attr.copies : 1,
                                k == 0 ? PERFMODEL_READ : PERFMODEL_WRITE, &runs[k], &any[k]) != 0)
            goto out;
    rc = 0;
    if (options->json) {
        json_t *root = json_object();
        for (int k = 0; root && k < 2; k++)
            json_object_set_new(root, k == 0 ? "read" : "write",
                                any[k] ? modelcmd_run_json(&runs[k]) : json_null());
        if (root && jsonname_set(root, "path", path) != 0) {
            json_decref(root);
            root = NULL;
        }
        rc = jsonname_print(stdout, root) == 0 ? 0 : 1;
    }
out:
    free(primary);
    free(records);
    return rc;
}

int modelcmd_main(int argc, char **argv)
{
    struct modelcmd_options options = {.target.timeout_ms = MODELCMD_DEFAULT_TIMEOUT_MS};
    int exit_code = modelcmd_parse(argc, argv, &options);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    struct modelworkload work;
    if ((options.action == MODELCMD_PREDICT || options.action == MODELCMD_ADVISE) &&
        (exit_code = modelcmd_workload(&options, &work)) != 0)
        return exit_code;
    exit_code = options.action == MODELCMD_CALIBRATE
                    ? metatarget_resolve_path(&options.target, options.mount, MODELCMD_WHO)
                : options.action == MODELCMD_EXPLAIN
                    ? metatarget_resolve_path(&options.target, options.words[0], MODELCMD_WHO)
                    : metatarget_resolve(&options.target, MODELCMD_WHO);
    if (exit_code != 0)
        return exit_code;
    struct rpc_client *meta = rpc_client_new(options.target.endpoint);
    if (!meta) {
        fprintf(stderr, "%s: cannot use the meta endpoint %s (expected tcp://HOST:PORT)\n",
                MODELCMD_WHO, options.target.endpoint);
        return 1;
    }
    struct modelcmd_live live = { 0 };
    exit_code = modelcmd_fetch(meta, &options, &live);
    if (exit_code == 0) {
        switch (options.action) {
        case MODELCMD_PREDICT: exit_code = modelcmd_predict(&options, &live, &work); break;
        case MODELCMD_ADVISE: exit_code = modelcmd_advise(&options, &live, &work); break;
        case MODELCMD_SHOW: exit_code = modelcmd_show(&options, &live); break;
        case MODELCMD_EXPLAIN: exit_code = modelcmd_explain(&options, &live, meta); break;
        case MODELCMD_CALIBRATE:
            exit_code = modelprobe_calibrate(meta, (int)options.target.timeout_ms, live.nodes,
                                             live.count, options.mount, live.host,
                                             options.probe_bytes ? options.probe_bytes : 64u << 20);
            break;
        }
    }
    free(live.nodes);
    rpc_client_destroy(&meta);
    return exit_code;
}
