/*
 * @file rebalance.c
 * See rebalance.h. The plan is made from a fresh snapshot every time (the
 * planners are deterministic), so `apply` after an interruption or a
 * failure needs no saved plan: tiles already where the plan wants them
 * need nothing, and the journal holds the steps that were under way.
 *
 * The parts: rebalancefetch.c asks meta for the planner's input,
 * planview.c prints a plan, applyrun.c runs steps with progress and
 * signals; this file parses the command line and puts them together.
 */
#include "rebalance.h"

#include "applylease.h"
#include "applyrun.h"
#include "cliargs.h"
#include "clusterconf.h"
#include "fmt.h"
#include "toolmeta.h"
#include "metatarget.h"
#include "mountwalk.h"
#include "plan.h"
#include "planview.h"
#include "progress.h"
#include "proto.h"
#include "rebalancefetch.h"
#include "rebalanceinput.h"
#include "rebalancemodel.h"
#include "relocate.h"
#include "relocnet.h"
#include "topologyfile.h"
#include "rpc.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REBALANCE_DEFAULT_TIMEOUT_MS 2000
#define REBALANCE_DEFAULT_CONCURRENCY 4
#define REBALANCE_MAX_CONCURRENCY 256
#define REBALANCE_MB 1e6
#define REBALANCE_WHO "tessera rebalance"

enum rebalance_action { REBALANCE_PLAN, REBALANCE_APPLY, REBALANCE_STATUS, REBALANCE_ABORT };

struct rebalance_options {
    struct metatarget target; /* --state | --meta, --timeout-ms */
    enum rebalance_action action;
    const char *path;
    bool policy_given;
    enum plan_policy policy;
    long max_copies;            /* 0 = the planner's default */
    long groups;                /* lbm: roles per file, 0 = one per datanode machine */
    const char *topology_path;  /* lbm: --topology FILE, NULL = one subcluster */
    uint64_t network_bytes_per_sec; /* plan, apply; 0 = the planner's default */
    long concurrency;           /* apply */
    uint64_t max_bytes_per_sec; /* apply; 0 = unlimited */
    bool json;
};

static void rebalance_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera rebalance plan PATH --policy frequent|balanced|lbm [--max-copies N]\n"
            "                              [--network-mbps R] [--groups M] [--topology FILE]\n"
            "                              [--json]\n"
            "       tessera rebalance apply PATH --policy frequent|balanced|lbm [--max-copies N]\n"
            "                               [--network-mbps R] [--groups M] [--topology FILE]\n"
            "                               [--concurrency N] [--max-mbps R]\n"
            "       tessera rebalance status [--json]\n"
            "       tessera rebalance abort\n"
            "     (each also takes [--state DIR | --meta ENDPOINT] [--timeout-ms MS])\n"
            "\n"
            "Moves tiles to the machines that use them, from the access profiles of the files\n"
            "under PATH (tessera profile start PATH, then run the application).\n"
            "\n"
            "plan    lists the steps: copies (a reader gets its own copy), moves and drops,\n"
            "        each tile's predicted I/O time before and after, each datanode's\n"
            "        predicted busy time and the slowest one (makespan), the performance\n"
            "        model's time (tessera model: mounts, links, datanodes), and the bytes\n"
            "        to transfer. Changes nothing.\n"
            "apply   first finishes what an interrupted apply left in the journal, then plans\n"
            "        again and runs the steps: the target datanode pulls each tile from the\n"
            "        source, the copy is checked against the frozen source, and meta switches\n"
            "        the tile map. Files stay usable throughout; a tile written meanwhile is\n"
            "        pulled again or skipped, never rolled back. Copies are made only of\n"
            "        closed files: a copy of a file open on a client is skipped (not a\n"
            "        failure). Ctrl-C stops it cleanly; run it again to finish.\n"
            "        One apply or abort runs on a cluster at a time: it holds a lock in meta\n"
            "        (renewed every 3 s); a second one is refused and names the first. A run\n"
            "        killed with -9 keeps the lock until it lapses, 15 s after its last renewal.\n"
            "status  the apply or abort running anywhere on the cluster (who, since when,\n"
            "        steps done), and the steps in the journal (under way, or left by an\n"
            "        interrupted apply): begun, or committed (the map switched; the old file\n"
            "        is not retired yet)\n"
            "abort   undoes every begun step in the journal (lifts the source's freeze,\n"
            "        aborts) and finishes every committed one (retires the old file); refused\n"
            "        while an apply runs (stop that one instead: Ctrl-C, or kill its pid)\n"
            "\n"
            "  --policy P        frequent: each tile to the machine that uses it most, copies\n"
            "                    for tiles several machines read; balanced: also weighs the\n"
            "                    datanodes' speeds so no disk becomes the bottleneck; lbm:\n"
            "                    each file's tiles in groups, each group served from its own\n"
            "                    machine so the busiest server's network transfer is least\n"
            "                    (Load Balance Matching; see tessera place)\n"
            "  --groups M        lbm: groups per linear file, contiguous runs of tiles\n"
            "                    (default: one per machine with a datanode; never more); an\n"
            "                    array file's groups are its mesh's disk chunks\n"
            "  --topology FILE   lbm: subclusters, their machines and the links between them\n"
            "                    (format: tessera place --help); default: one switch\n"
            "  --max-copies N    holders a read-shared tile may have, 1..%d (default %d;\n"
            "                    1 = no copies)\n"
            "  --network-mbps R  the bandwidth between two machines the cost model counts,\n"
            "                    MB/s (default %llu: 1 Gbit/s); disks are the datanodes'\n"
            "                    measured speeds, capped by their throttles\n"
            "  --concurrency N   apply: tiles moved at once (default %d)\n"
            "  --max-mbps R      apply: cap on the bytes pulled, MB/s (10^6; default none)\n"
            "  --json            plan, status: one JSON object (status: {\"apply\": null or\n"
            "                    {holder, since_sec, steps_total, steps_done, lease_left_sec},\n"
            "                    \"entries\": [...], \"count\": N})\n"
            "  --state DIR       the local cluster in DIR (default: PATH's cluster, named by\n"
            "                    its mount's tessera.cluster attribute; without PATH\n"
            "                    $TESSERA_STATE, else $XDG_STATE_HOME/tessera, else\n"
            "                    ~/.local/state/tessera); with PATH, it must be PATH's\n"
            "  --meta ENDPOINT   ask this tessera-meta, e.g. tcp://10.0.0.1:7400\n"
            "  --timeout-ms MS   how long to wait for each reply (default %d)\n"
            "  -h, --help        this help\n"
            "\n"
            "Exit status: 0 done, 1 failed (or some steps failed: run apply again; or another\n"
            "apply runs), 2 usage error, 130 interrupted.\n",
            PLAN_MAX_COPIES, PLAN_DEFAULT_MAX_COPIES,
            (unsigned long long)(PLAN_DEFAULT_NETWORK_BYTES_PER_SEC / 1000000),
            REBALANCE_DEFAULT_CONCURRENCY,
            REBALANCE_DEFAULT_TIMEOUT_MS);
}

static int rebalance_usage_error(const char *message, const char *arg)
{
    return cliargs_usage_error(REBALANCE_WHO, message, arg);
}

/* MB/s above 0 into bytes per second; 0 or -EINVAL. */
static int rebalance_parse_mbps(const char *text, uint64_t *bytes_per_sec)
{
    char *end = NULL;
    double mbps;

    errno = 0;
    mbps = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(mbps) || mbps <= 0 || mbps > 1e6)
        return -EINVAL;
    *bytes_per_sec = (uint64_t)llround(mbps * REBALANCE_MB);
    return *bytes_per_sec > 0 ? 0 : -EINVAL;
}

/* Checks which options go with which action; CLIARGS_GO_ON, else exit code 2. */
static int rebalance_check(const struct rebalance_options *options, int positional,
                           bool apply_only_given, bool copies_given)
{
    bool planning = options->action == REBALANCE_PLAN || options->action == REBALANCE_APPLY;

    if (planning && positional != 1)
        return rebalance_usage_error("plan and apply want one PATH, e.g. tessera rebalance plan "
                                     "/mnt/tessera/app --policy frequent",
                                     NULL);
    if (!planning && positional != 0)
        return rebalance_usage_error("status and abort take no PATH", NULL);
    if (planning && !options->policy_given)
        return rebalance_usage_error("missing --policy frequent|balanced|lbm", NULL);
    if (!planning && (options->policy_given || copies_given))
        return rebalance_usage_error(
            "--policy, --max-copies and --network-mbps go with plan and apply", NULL);
    if ((options->groups || options->topology_path) && options->policy != PLAN_LBM)
        return rebalance_usage_error("--groups and --topology go with --policy lbm", NULL);
    if (apply_only_given && options->action != REBALANCE_APPLY)
        return rebalance_usage_error("--concurrency and --max-mbps go with apply", NULL);
    if (options->json && options->action != REBALANCE_PLAN && options->action != REBALANCE_STATUS)
        return rebalance_usage_error("--json goes with plan and status", NULL);
    return CLIARGS_GO_ON;
}

/* What the options handler fills: the options, and which kinds were given. */
struct rebalance_given {
    struct rebalance_options *options;
    bool apply_only; /* --concurrency, --max-mbps */
    bool copies;     /* --max-copies, --network-mbps */
};

static int rebalance_take(void *ctx, int option, const char *value)
{
    struct rebalance_given *given = ctx;
    struct rebalance_options *options = given->options;
    int taken = metatarget_option(&options->target, REBALANCE_WHO, option, value);
    if (taken != CLIARGS_NOT_MINE)
        return taken;
    switch (option) {
    case 'p':
        if (plan_policy_parse(value, &options->policy) != 0)
            return rebalance_usage_error("--policy wants frequent, balanced or lbm, got", value);
        options->policy_given = true;
        return CLIARGS_GO_ON;
    case 'c':
        if (util_parse_long(value, 1, PLAN_MAX_COPIES, &options->max_copies) != 0)
            return rebalance_usage_error("--max-copies wants 1..8, got", value);
        given->copies = true;
        return CLIARGS_GO_ON;
    case 'n':
        if (util_parse_long(value, 1, REBALANCE_MAX_CONCURRENCY, &options->concurrency) != 0)
            return rebalance_usage_error("--concurrency wants 1..256, got", value);
        given->apply_only = true;
        return CLIARGS_GO_ON;
    case 'r':
        if (rebalance_parse_mbps(value, &options->max_bytes_per_sec) != 0)
            return rebalance_usage_error("--max-mbps wants MB/s above 0 (e.g. 50 or 2.5), got",
                                         value);
        given->apply_only = true;
        return CLIARGS_GO_ON;
    case 'w':
        if (rebalance_parse_mbps(value, &options->network_bytes_per_sec) != 0)
            return rebalance_usage_error(
                "--network-mbps wants MB/s above 0 (e.g. 125 for 1 Gbit/s), got", value);
        given->copies = true; /* a planning option, as --max-copies */
        return CLIARGS_GO_ON;
    case 'g':
        if (util_parse_long(value, 1, 1000000, &options->groups) != 0)
            return rebalance_usage_error("--groups wants 1..1000000, got", value);
        return CLIARGS_GO_ON;
    case 'o': options->topology_path = value; return CLIARGS_GO_ON;
    case 'j': options->json = true; return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

/* Parses argv; returns CLIARGS_GO_ON, else the exit code (help or usage error). */
static int rebalance_parse(int argc, char **argv, struct rebalance_options *options)
{
    static const struct option long_options[] = {
        METATARGET_LONG_OPTIONS,
        {"policy", required_argument, NULL, 'p'},
        {"max-copies", required_argument, NULL, 'c'},
        {"concurrency", required_argument, NULL, 'n'},
        {"max-mbps", required_argument, NULL, 'r'},
        {"network-mbps", required_argument, NULL, 'w'},
        {"groups", required_argument, NULL, 'g'},
        {"topology", required_argument, NULL, 'o'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {REBALANCE_WHO, rebalance_usage, long_options,
                                                   rebalance_take};
    /* In the order of enum rebalance_action. */
    static const char *const actions[] = {"plan", "apply", "status", "abort"};
    struct rebalance_given given = {.options = options};
    size_t action = 0;
    int operands;
    int exit_code =
        metatarget_parse(&command, &options->target, argc, argv, &given, &operands);

    if (exit_code == CLIARGS_GO_ON)
        exit_code = cliargs_action(REBALANCE_WHO, actions, 4, argc, argv, operands, &action);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    options->action = (enum rebalance_action)action;
    if (argc - operands >= 2)
        options->path = argv[operands + 1];
    return rebalance_check(options, argc - operands - 1, given.apply_only, given.copies);
}

/* Prints a failed request to meta (what, for which subject); returns 1. */
static int rebalance_meta_failed(const struct rebalance_options *options, const char *what,
                                 int status, const char *peer)
{
    fprintf(stderr, "%s: %s: tessera-meta at %s answered: %s%s%s\n", REBALANCE_WHO, what,
            options->target.endpoint, status_text(status), peer && peer[0] ? ": " : "", peer ? peer : "");
    if (status == TS_ERR_TIMEDOUT)
        fprintf(stderr, "  is the cluster up (tessera status)? is %s the meta of this mount?\n",
                options->target.endpoint);
    else if (status == TS_ERR_PROTO || status == TS_ERR_NOTSUP)
        fprintf(stderr, "  this tessera-meta does not know profiles or relocations: upgrade "
                        "it\n");
    return 1;
}

/* NODE_LIST; returns 0 or exit code 1 after saying why. */
static int rebalance_nodes(const struct rebalance_options *options, struct rpc_client *meta,
                           struct toolmeta_node **nodes, size_t *count)
{
    char peer[256];
    int status =
        toolmeta_node_list(meta, (int)options->target.timeout_ms, nodes, count, peer, sizeof(peer));
    if (status != TS_OK)
        return rebalance_meta_failed(options, "NODE_LIST", status, peer);
    return 0;
}

/*
 * Runs the planner, with the performance model as its predictor when one
 * can be built from meta's nodes (rebalancemodel.h); 0 or exit code 1.
 */
static int rebalance_make_plan(const struct rebalance_options *options, struct rpc_client *meta,
                               const struct toolmeta_node *nodes, size_t node_count,
                               const struct rebalanceinput *input, struct plan *plan)
{
    struct plan_cluster cluster;
    struct plan_profile profile;
    struct plan_tilemap map;
    struct plan_options plan_options = {.max_copies = (uint32_t)options->max_copies,
                                        .groups = (uint32_t)options->groups};
    struct topology topology = {0};
    struct rebalancemodel *model = calloc(1, sizeof(*model));
    int rc;

    rebalanceinput_views(input, &cluster, &profile, &map);
    if (model && rebalancemodel_build(model, meta, (int)options->target.timeout_ms, nodes,
                                      node_count, &profile,
                                      options->network_bytes_per_sec) == 0)
        plan_options.predictor = &model->predictor;
    else
        fprintf(stderr, "%s: the performance model could not be built (no datanode up?): the "
                        "plan is predicted by disk and network time alone\n",
                REBALANCE_WHO);
    rebalanceinput_array_options(input, &plan_options);
    cluster.network_bytes_per_sec = options->network_bytes_per_sec;
    if (options->topology_path) {
        if (topologyfile_load(REBALANCE_WHO, options->topology_path, &topology) != 0)
            return 1;
        if (topologyfile_check(REBALANCE_WHO, options->topology_path, &topology, &cluster,
                               &profile) != 0) {
            topology_release(&topology);
            return 1;
        }
        plan_options.topology = &topology;
    }
    rc = plan_make(options->policy, &cluster, &profile, &map, &plan_options, plan);
    topology_release(&topology);
    free(model);
    if (rc != 0) {
        fprintf(stderr,
                "%s: the %s planner refused the snapshot (%s); this is a bug: please "
                "report it with `tessera status --json` and `tessera profile show "
                "PATH --json`\n",
                REBALANCE_WHO, plan_policy_name(options->policy), strerror(-rc));
        return 1;
    }
    return 0;
}

/* Journal entries as steps. */
static struct relocate_step *rebalance_journal_steps(const struct ts_move_rec *moves, size_t count)
{
    struct relocate_step *steps = calloc(count ? count : 1, sizeof(*steps));
    if (!steps)
        return NULL;
    for (size_t i = 0; i < count; i++)
        toolmeta_move_step(&moves[i], &steps[i]);
    return steps;
}

/* Finishes what the journal holds; returns -1 to go on, else the exit code. */
static int rebalance_resume(const struct rebalance_options *options, struct rpc_client *meta,
                            struct relocnet *net, struct applylease *lease)
{
    struct ts_move_rec *moves = NULL;
    struct relocate_step *steps = NULL;
    struct relocate_progress progress;
    size_t count = 0, valid = 0, committed = 0;
    char peer[256];
    int status, exit_code;

    status =
        toolmeta_move_list(meta, (int)options->target.timeout_ms, &moves, &count, peer, sizeof(peer));
    if (status != TS_OK)
        return rebalance_meta_failed(options, "MOVE_LIST", status, peer);
    if (count == 0)
        return -1;
    steps = rebalance_journal_steps(moves, count);
    free(moves);
    if (!steps) {
        fprintf(stderr, "%s: out of memory\n", REBALANCE_WHO);
        return 1;
    }
    /* An entry the executor cannot run (a kind this tool does not know) is left alone. */
    for (size_t i = 0; i < count; i++) {
        const struct relocate_step *step = &steps[i];
        bool known = step->kind == PLAN_DROP ||
                     ((step->kind == PLAN_COPY || step->kind == PLAN_MOVE) && step->to_node != 0);
        if (known && step->from_node != 0 && step->from_node != step->to_node) {
            committed += step->committed;
            steps[valid++] = *step;
        }
    }
    if (valid < count)
        fprintf(stderr,
                "%s: %zu journal entr%s of a kind this tool does not run (see `tessera "
                "rebalance status`; `abort` clears them)\n",
                REBALANCE_WHO, count - valid, count - valid == 1 ? "y" : "ies");
    printf("resuming %zu step%s an earlier apply left in the journal (%zu committed: their old "
           "files are retired first)\n",
           valid, valid == 1 ? "" : "s", committed);
    exit_code = applyrun_steps(net, NULL, steps, valid, (unsigned)options->concurrency,
                               options->max_bytes_per_sec, lease, &progress);
    free(steps);
    if (exit_code != 0)
        return exit_code;
    exit_code = applyrun_summary("journal", &progress);
    /* Failed journal steps do not stop the new plan: it routes around them. */
    return exit_code == APPLYRUN_EXIT_INTERRUPTED ? exit_code : -1;
}

static int rebalance_plan(const struct rebalance_options *options, struct rpc_client *meta)
{
    struct toolmeta_node *nodes = NULL;
    struct rebalanceinput input;
    struct plan plan = {0};
    size_t node_count = 0;
    int exit_code;

    rebalanceinput_init(&input);
    exit_code = rebalance_nodes(options, meta, &nodes, &node_count);
    if (exit_code == 0)
        exit_code = rebalancefetch_build(options->path, options->target.endpoint, meta,
                                         (int)options->target.timeout_ms, nodes, node_count, &input);
    if (exit_code == 0)
        exit_code = rebalance_make_plan(options, meta, nodes, node_count, &input, &plan);
    if (exit_code == 0) {
        if (options->json)
            planview_json(stdout, options->path, options->policy, &input, &plan);
        else
            planview_text(stdout, options->path, options->policy, &input, &plan);
    }
    plan_release(&plan);
    rebalanceinput_release(&input);
    free(nodes);
    return exit_code;
}

static int rebalance_apply(const struct rebalance_options *options, struct rpc_client *meta)
{
    struct toolmeta_node *nodes = NULL;
    struct relocnet *net = NULL;
    struct rebalanceinput input;
    struct plan plan = {0};
    struct relocate_step *steps = NULL;
    struct relocate_progress progress;
    struct applylease lease = {0};
    size_t node_count = 0, step_count = 0;
    char transfer[16];
    int exit_code;

    rebalanceinput_init(&input);
    applyrun_catch_signals();
    /* Before the journal is read: what another run does is not ours to resume. */
    exit_code = applylease_take(&lease, meta, options->target.endpoint,
                                (int)options->target.timeout_ms, "apply", REBALANCE_WHO);
    if (exit_code == 0)
        exit_code = rebalance_nodes(options, meta, &nodes, &node_count);
    if (exit_code != 0)
        goto out;
    net = relocnet_new(options->target.endpoint, nodes, node_count, (int)options->target.timeout_ms);
    if (!net) {
        fprintf(stderr, "%s: out of memory\n", REBALANCE_WHO);
        exit_code = 1;
        goto out;
    }
    exit_code = rebalance_resume(options, meta, net, &lease);
    if (exit_code >= 0)
        goto out;
    exit_code = rebalancefetch_build(options->path, options->target.endpoint, meta,
                                     (int)options->target.timeout_ms, nodes, node_count, &input);
    if (exit_code == 0)
        exit_code = rebalance_make_plan(options, meta, nodes, node_count, &input, &plan);
    if (exit_code == 0 && rebalanceinput_steps(&input, &plan, &steps, &step_count) != 0) {
        fprintf(stderr, "%s: out of memory\n", REBALANCE_WHO);
        exit_code = 1;
    }
    if (exit_code != 0)
        goto out;
    if (applyrun_interrupted()) {
        fprintf(stderr, "%s: interrupted before any step ran\n", REBALANCE_WHO);
        exit_code = APPLYRUN_EXIT_INTERRUPTED;
        goto out;
    }
    if (step_count == 0) {
        printf("nothing to do: %s\n", input.tile_count
                                          ? "the tiles are where the policy wants them"
                                          : "no profiled tiles under the path (tessera profile "
                                            "start PATH, then use the files)");
        goto out;
    }
    struct planview_counts counts = planview_count(&plan);
    fmt_size(plan.transfer_bytes, transfer, sizeof(transfer));
    printf("applying the %s plan: %zu step%s (%zu cop%s, %zu move%s, %zu drop%s), %s to "
           "transfer, %ld at once%s\n",
           plan_policy_name(options->policy), step_count, step_count == 1 ? "" : "s", counts.copies,
           counts.copies == 1 ? "y" : "ies", counts.moves, counts.moves == 1 ? "" : "s",
           counts.drops, counts.drops == 1 ? "" : "s", transfer, options->concurrency,
           options->max_bytes_per_sec ? ", paced" : "");
    exit_code = applyrun_steps(net, &input, steps, step_count, (unsigned)options->concurrency,
                               options->max_bytes_per_sec, &lease, &progress);
    if (exit_code == 0)
        exit_code = applyrun_summary("apply", &progress);
    if (exit_code == 0)
        planview_predictions(stdout, &plan);
out:
    applylease_release(&lease);
    free(steps);
    plan_release(&plan);
    rebalanceinput_release(&input);
    relocnet_destroy(&net);
    free(nodes);
    return exit_code;
}

/* ---- status and abort --------------------------------------------------------- */

static const char *rebalance_state_name(uint32_t state)
{
    switch (state) {
    case TS_MOVE_BEGUN: return "begun";
    case TS_MOVE_COMMITTED: return "committed";
    default: return "?";
    }
}

/* The apply lock as JSON: null when free. */
static json_t *rebalance_lock_json(const struct toolmeta_apply_lock *lock)
{
    if (!lock->held)
        return json_null();
    /* The holder is meta's cleaned text; json_string refuses only bad UTF-8. */
    json_t *holder = json_string(lock->holder);
    return json_pack("{s:o, s:I, s:I, s:I, s:f}", "holder", holder ? holder : json_string("?"),
                     "since_sec", (json_int_t)lock->since_sec, "steps_total",
                     (json_int_t)lock->steps_total, "steps_done", (json_int_t)lock->steps_done,
                     "lease_left_sec", lock->left_ms / 1000.0);
}

static int rebalance_status_json(const struct toolmeta_apply_lock *lock,
                                 const struct ts_move_rec *moves, size_t count, time_t now)
{
    json_t *entries = json_array();
    json_t *root;
    int rc;

    for (size_t i = 0; entries && i < count; i++) {
        const struct ts_move_rec *move = &moves[i];
        double seconds = move->started_sec > 0 ? difftime(now, (time_t)move->started_sec) : -1;
        json_array_append_new(
            entries,
            json_pack("{s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:s, s:I, s:f}", "ino",
                      (json_int_t)move->ino, "tile", (json_int_t)move->tile, "kind",
                      plan_action_kind_name((enum plan_action_kind)move->kind), "from",
                      (json_int_t)move->from_node, "to", (json_int_t)move->to_node, "version",
                      (json_int_t)move->version, "new_version", (json_int_t)move->new_version,
                      "state", rebalance_state_name(move->state), "started_sec",
                      (json_int_t)move->started_sec, "age_sec", seconds));
    }
    root = json_pack("{s:o, s:o, s:I}", "apply", rebalance_lock_json(lock), "entries",
                     entries ? entries : json_array(), "count", (json_int_t)count);
    rc = root && json_dumpf(root, stdout, JSON_INDENT(2)) == 0 ? 0 : 1;
    if (rc == 0)
        printf("\n");
    else
        fprintf(stderr, "%s: cannot write the JSON (out of memory?)\n", REBALANCE_WHO);
    json_decref(root);
    return rc;
}

static int rebalance_status(const struct rebalance_options *options, struct rpc_client *meta)
{
    struct ts_move_rec *moves = NULL;
    struct ts_apply_lock_req query = {.action = TS_APPLY_LOCK_QUERY, .holder = ts_str_of("")};
    struct toolmeta_apply_lock lock;
    size_t count = 0;
    char peer[256], age[16], running[512];
    time_t now = time(NULL);
    int status = toolmeta_apply_lock(meta, (int)options->target.timeout_ms, &query, &lock, peer,
                                     sizeof(peer));

    if (status == TS_ERR_NOTSUP || status == TS_ERR_PROTO)
        memset(&lock, 0, sizeof(lock)); /* an older meta: no lock to show */
    else if (status != TS_OK)
        return rebalance_meta_failed(options, "APPLY_LOCK", status, peer);
    status =
        toolmeta_move_list(meta, (int)options->target.timeout_ms, &moves, &count, peer, sizeof(peer));
    if (status != TS_OK)
        return rebalance_meta_failed(options, "MOVE_LIST", status, peer);
    if (options->json) {
        int rc = rebalance_status_json(&lock, moves, count, now);
        free(moves);
        return rc;
    }
    if (lock.held) {
        applylease_describe(&lock, running, sizeof(running));
        printf("running: %s\n", running);
    } else {
        printf("no rebalance apply or abort is running on this cluster\n");
    }
    if (count == 0)
        printf("the relocation journal is empty\n");
    else
        printf("%-12s %-8s %-5s %-6s    %-6s %-12s %-12s %-9s %s\n", "inode", "tile", "kind",
               "from", "to", "version", "new_version", "state", "age");
    for (size_t i = 0; i < count; i++) {
        const struct ts_move_rec *move = &moves[i];
        double seconds = move->started_sec > 0 ? difftime(now, (time_t)move->started_sec) : -1;
        progress_format_duration(seconds, age, sizeof(age));
        printf("%-12" PRIu64 " %-8" PRIu64 " %-5s %-6" PRIu32 " -> %-6" PRIu32 " %-12" PRIu64
               " %-12" PRIu64 " %-9s %s\n",
               move->ino, move->tile, plan_action_kind_name((enum plan_action_kind)move->kind),
               move->from_node, move->to_node, move->version, move->new_version,
               rebalance_state_name(move->state), age);
    }
    if (count > 0 && lock.held)
        printf("%zu entr%s: the running %s is working on them\n", count,
               count == 1 ? "y" : "ies", strstr(lock.holder, " abort ") ? "abort" : "apply");
    else if (count > 0)
        printf("%zu entr%s: `tessera rebalance apply PATH --policy P` finishes them; `tessera "
               "rebalance abort` undoes the begun ones and finishes the committed ones\n",
               count, count == 1 ? "y" : "ies");
    free(moves);
    return 0;
}

/*
 * Finishes a committed entry (RETIRE or LIFT on the old holder, then
 * MOVE_COMMIT) with the executor's own step; true when it is gone.
 */
static bool rebalance_finish_entry(const struct relocate_transport *transport, void *worker,
                                   const struct ts_move_rec *move)
{
    struct relocate_step step;
    struct relocate_result result;

    toolmeta_move_step(move, &step);
    relocate_run_step(transport, worker, &step, NULL, &result);
    if (result.outcome == RELOCATE_DONE)
        return true;
    fprintf(stderr,
            "%s: inode %" PRIu64 " tile %" PRIu64 ": the committed %s is not finished: %s\n",
            REBALANCE_WHO, move->ino, move->tile,
            plan_action_kind_name((enum plan_action_kind)move->kind), result.why);
    return false;
}

/* Aborts a begun entry (LIFT on the source, then MOVE_ABORT); true when it is gone. */
static bool rebalance_abort_entry(const struct relocate_transport *transport, void *worker,
                                  const struct ts_move_rec *move)
{
    char peer[256];
    uint64_t bytes;
    uint32_t checksum;
    /* The freeze first: once the entry is gone nothing names the source's file. */
    int status =
        transport->tile_fence(worker, move->from_node, move->ino, move->tile, move->version,
                              TS_FENCE_LIFT, 0, 0, &bytes, &checksum, peer, sizeof(peer));
    if (status != TS_OK)
        fprintf(stderr,
                "%s: inode %" PRIu64 " tile %" PRIu64 ": LIFT on datanode %" PRIu32
                " failed (%s%s%s); its freeze ends with its lease\n",
                REBALANCE_WHO, move->ino, move->tile, move->from_node, status_text(status),
                peer[0] ? ": " : "", peer);
    status = transport->move_abort(worker, move->ino, move->tile, peer, sizeof(peer));
    if (status == TS_OK || status == TS_ERR_NOENT)
        return true;
    fprintf(stderr, "%s: inode %" PRIu64 " tile %" PRIu64 ": MOVE_ABORT: %s%s%s\n", REBALANCE_WHO,
            move->ino, move->tile, status_text(status), peer[0] ? ": " : "", peer);
    return false;
}

static int rebalance_abort(const struct rebalance_options *options, struct rpc_client *meta)
{
    struct toolmeta_node *nodes = NULL;
    struct ts_move_rec *moves = NULL;
    struct relocnet *net = NULL;
    struct relocate_transport transport;
    void *worker = NULL;
    struct applylease lease = {0};
    size_t node_count = 0, count = 0, aborted = 0, finished = 0, failed = 0;
    char peer[256];
    /* Undoing the steps a running apply is working on would only fail them: abort waits. */
    int exit_code = applylease_take(&lease, meta, options->target.endpoint,
                                    (int)options->target.timeout_ms, "abort", REBALANCE_WHO);
    int status;

    if (exit_code == 0)
        exit_code = rebalance_nodes(options, meta, &nodes, &node_count);
    if (exit_code != 0)
        goto out;
    status =
        toolmeta_move_list(meta, (int)options->target.timeout_ms, &moves, &count, peer, sizeof(peer));
    if (status != TS_OK) {
        exit_code = rebalance_meta_failed(options, "MOVE_LIST", status, peer);
        goto out;
    }
    net = relocnet_new(options->target.endpoint, nodes, node_count, (int)options->target.timeout_ms);
    if (net) {
        relocnet_transport(net, &transport);
        worker = transport.worker_open(transport.ctx, 0);
    }
    if (!worker) {
        fprintf(stderr, "%s: out of memory\n", REBALANCE_WHO);
        exit_code = 1;
        goto out;
    }
    /* A committed step cannot be undone (the map switched): it is finished instead. */
    for (size_t i = 0; i < count; i++) {
        const struct ts_move_rec *move = &moves[i];
        bool committed = move->state == TS_MOVE_COMMITTED;
        bool gone = committed ? rebalance_finish_entry(&transport, worker, move)
                              : rebalance_abort_entry(&transport, worker, move);
        applylease_progress(&lease, count, i + 1);
        (void)applylease_tick(&lease);
        if (!gone)
            failed++;
        else if (committed)
            finished++;
        else
            aborted++;
    }
    printf("aborted %zu journal entr%s", aborted, aborted == 1 ? "y" : "ies");
    if (finished > 0)
        printf("; finished %zu committed entr%s (old files retired)", finished,
               finished == 1 ? "y" : "ies");
    printf("\n");
    if (failed > 0) {
        fprintf(stderr,
                "%s: %zu entr%s could not be aborted or finished; run `tessera rebalance abort` "
                "again (once the datanodes named above answer)\n",
                REBALANCE_WHO, failed, failed == 1 ? "y" : "ies");
        exit_code = 1;
    }
out:
    applylease_release(&lease);
    if (worker)
        transport.worker_close(worker);
    relocnet_destroy(&net);
    free(moves);
    free(nodes);
    return exit_code;
}

int rebalance_main(int argc, char **argv)
{
    struct rebalance_options options = {
        .target.timeout_ms = REBALANCE_DEFAULT_TIMEOUT_MS,
        .concurrency = REBALANCE_DEFAULT_CONCURRENCY,
    };
    struct rpc_client *meta;
    int exit_code = rebalance_parse(argc, argv, &options);

    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    /* A path names its cluster; status and abort act on --state or --meta's. */
    exit_code = options.path ? metatarget_resolve_path(&options.target, options.path, REBALANCE_WHO)
                             : metatarget_resolve(&options.target, REBALANCE_WHO);
    if (exit_code != 0)
        return exit_code;
    if (options.path) {
        exit_code = mountwalk_check(options.path, REBALANCE_WHO);
        if (exit_code != 0)
            return exit_code;
    }
    meta = rpc_client_new(options.target.endpoint);
    if (!meta) {
        fprintf(stderr, "%s: cannot use the meta endpoint %s (expected tcp://HOST:PORT)\n",
                REBALANCE_WHO, options.target.endpoint);
        return 1;
    }
    switch (options.action) {
    case REBALANCE_PLAN: exit_code = rebalance_plan(&options, meta); break;
    case REBALANCE_APPLY: exit_code = rebalance_apply(&options, meta); break;
    case REBALANCE_STATUS: exit_code = rebalance_status(&options, meta); break;
    case REBALANCE_ABORT: exit_code = rebalance_abort(&options, meta); break;
    }
    rpc_client_destroy(&meta);
    return exit_code;
}
