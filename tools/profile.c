/*
 * @file profile.c
 * See profile.h. The walk stops at the first request meta refuses or does
 * not answer: a half-started profile is reported with how far it got, and
 * running the same command again finishes it (PROFILE_SET is idempotent).
 */
#include "profile.h"

#include "cliargs.h"
#include "clusterconf.h"
#include "fmt.h"
#include "toolmeta.h"
#include "metatarget.h"
#include "mountwalk.h"
#include "profileview.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define PROFILE_DEFAULT_TIMEOUT_MS 2000
#define PROFILE_WHO "tessera profile"

enum profile_action { PROFILE_START, PROFILE_STOP, PROFILE_RESET, PROFILE_SHOW };

struct profile_options {
    struct metatarget target; /* --state | --meta, --timeout-ms */
    bool json;
    const char *svg_path; /* NULL = no heat map */
    enum profile_action action;
    const char *path;
};

static void profile_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera profile start|stop|reset PATH [--state DIR | --meta ENDPOINT]\n"
            "                                          [--timeout-ms MS]\n"
            "       tessera profile show PATH [--json] [--svg FILE] [--state DIR | --meta "
            "ENDPOINT]\n"
            "                                 [--timeout-ms MS]\n"
            "\n"
            "Access profiles: every mount counts, per tile and per machine, the reads and\n"
            "writes of profiled files and the bytes they moved, and sends the counts to\n"
            "tessera-meta every second. `tessera rebalance` plans from them.\n"
            "\n"
            "start PATH   profile PATH (a file or a directory in a Tessera mount) and every\n"
            "             file and directory below it; files created later in those\n"
            "             directories are profiled too\n"
            "stop PATH    stop counting (the counts are kept)\n"
            "reset PATH   clear the counts (profiling stays on or off as it was)\n"
            "show PATH    per file: tiles with counts, machines, reads, writes, bytes read\n"
            "             and written, local bytes (served by a datanode on the reading\n"
            "             machine) and remote bytes; then a line per machine and per\n"
            "             (tile, machine)\n"
            "\n"
            "  --json            show: one JSON object with every record\n"
            "  --svg FILE        show: also write a heat map of tiles x machines (SVG)\n"
            "  --state DIR       the local cluster in DIR, which must be PATH's (default: the\n"
            "                    cluster PATH's mount names in its tessera.cluster attribute)\n"
            "  --meta ENDPOINT   ask this tessera-meta, e.g. tcp://10.0.0.1:7400 (PATH's\n"
            "                    cluster too)\n"
            "  --timeout-ms MS   how long to wait for meta (default %d)\n"
            "  -h, --help        this help\n"
            "\n"
            "Exit status: 0 done, 1 refused or meta unreachable, 2 usage error.\n",
            PROFILE_DEFAULT_TIMEOUT_MS);
}

static int profile_take(void *ctx, int option, const char *value)
{
    struct profile_options *options = ctx;
    int taken = metatarget_option(&options->target, PROFILE_WHO, option, value);
    if (taken != CLIARGS_NOT_MINE)
        return taken;
    switch (option) {
    case 'j': options->json = true; return CLIARGS_GO_ON;
    case 'g': options->svg_path = value; return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

/* Parses argv; returns CLIARGS_GO_ON, else the exit code (help or usage error). */
static int profile_parse(int argc, char **argv, struct profile_options *options)
{
    static const struct option long_options[] = {
        METATARGET_LONG_OPTIONS,
        {"json", no_argument, NULL, 'j'},
        {"svg", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {PROFILE_WHO, profile_usage, long_options,
                                                   profile_take};
    /* In the order of enum profile_action. */
    static const char *const actions[] = {"start", "stop", "reset", "show"};
    size_t action = 0;
    int operands;
    int exit_code =
        metatarget_parse(&command, &options->target, argc, argv, options, &operands);

    if (exit_code == CLIARGS_GO_ON)
        exit_code = cliargs_action(PROFILE_WHO, actions, 4, argc, argv, operands, &action);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    options->action = (enum profile_action)action;
    if (argc - operands != 2)
        return cliargs_usage_error(PROFILE_WHO,
                                   "the action wants one PATH, e.g. tessera profile start "
                                   "/mnt/tessera/app",
                                   NULL);
    options->path = argv[operands + 1];
    if ((options->json || options->svg_path) && options->action != PROFILE_SHOW)
        return cliargs_usage_error(PROFILE_WHO, "--json and --svg go with show", NULL);
    return CLIARGS_GO_ON;
}

/* Prints a failed request to meta; returns exit code 1. */
static int profile_meta_failed(const struct profile_options *options, const char *what,
                               const char *path, int status, const char *peer)
{
    fprintf(stderr, "%s: %s: %s: tessera-meta at %s answered: %s%s%s\n", PROFILE_WHO, path, what,
            options->target.endpoint, status_text(status), peer && peer[0] ? ": " : "", peer ? peer : "");
    if (status == TS_ERR_TIMEDOUT)
        fprintf(stderr, "  is the cluster up (tessera status)? is %s the meta of this mount?\n",
                options->target.endpoint);
    else if (status == TS_ERR_PROTO || status == TS_ERR_NOTSUP)
        fprintf(stderr, "  this tessera-meta does not know profiles: upgrade it\n");
    else if (status == TS_ERR_NOENT)
        fprintf(stderr, "  meta has no such inode: is %s the meta of the mount %s is on?\n",
                options->target.endpoint, path);
    return 1;
}

/* ---- start, stop, reset ------------------------------------------------- */

struct profile_set_walk {
    const struct profile_options *options;
    struct rpc_client *meta;
    uint32_t action;
    size_t files;
    size_t directories;
};

/*
 * PROFILE_SET of a directory a mount holds the lease on is refused
 * (TS_ERR_LEASED) until that mount gives the lease back, which meta has
 * asked it to do and which takes milliseconds. So it is sent again every
 * PROFILE_LEASED_RETRY_US within the one timeout, but not with less than
 * PROFILE_LEASED_LAST_TRY_MS left: a last try with too little time to be
 * answered would turn the refusal, which names the cause, into a timeout.
 * The mount's meta client keeps the same rule (fuse/metaclient.c).
 */
#define PROFILE_LEASED_RETRY_US 1000
#define PROFILE_LEASED_LAST_TRY_MS 100

/* toolmeta_profile_set(), sent again while refused for a lease. */
static int profile_set_leased_retried(struct rpc_client *meta, int timeout_ms, uint64_t ino,
                                      uint32_t action, uint32_t *profiling, char *error_text,
                                      size_t error_cap)
{
    int64_t deadline_ms = util_monotonic_ms() + timeout_ms;
    for (;;) {
        int status = toolmeta_profile_set(meta, timeout_ms, ino, action, profiling, error_text,
                                          error_cap);
        int64_t left = deadline_ms - util_monotonic_ms();
        if (status != TS_ERR_LEASED || left < PROFILE_LEASED_LAST_TRY_MS)
            return status;
        timeout_ms = (int)left;
        nanosleep(&(struct timespec){0, PROFILE_LEASED_RETRY_US * 1000}, NULL);
    }
}

static int profile_set_visit(void *ctx, const char *path, const struct stat *st)
{
    struct profile_set_walk *walk = ctx;
    char peer[256];
    uint32_t profiling = 0;
    int status;

    if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
        return 0; /* links, devices, sockets: nothing to count */
    status =
        profile_set_leased_retried(walk->meta, (int)walk->options->target.timeout_ms,
                                   (uint64_t)st->st_ino, walk->action, &profiling, peer,
                                   sizeof(peer));
    if (status != TS_OK)
        return profile_meta_failed(walk->options, "PROFILE_SET", path, status, peer);
    if (S_ISDIR(st->st_mode))
        walk->directories++;
    else
        walk->files++;
    return 0;
}

static int profile_set(const struct profile_options *options, struct rpc_client *meta)
{
    static const uint32_t wire_actions[] = {
        [PROFILE_START] = TS_PROFILE_START,
        [PROFILE_STOP] = TS_PROFILE_STOP,
        [PROFILE_RESET] = TS_PROFILE_RESET,
    };
    struct profile_set_walk walk = {
        .options = options, .meta = meta, .action = wire_actions[options->action]};
    int rc = mountwalk_run(options->path, profile_set_visit, &walk, PROFILE_WHO);

    if (rc < 0) {
        fprintf(stderr, "%s: %s: %s\n", PROFILE_WHO, options->path, strerror(-rc));
        return 1;
    }
    if (rc != 0) {
        fprintf(stderr,
                "  %zu files and %zu directories were done before; run the command "
                "again to finish\n",
                walk.files, walk.directories);
        return 1;
    }
    switch (options->action) {
    case PROFILE_START:
        printf("profiling started on %zu file%s and %zu director%s under %s%s\n", walk.files,
               walk.files == 1 ? "" : "s", walk.directories, walk.directories == 1 ? "y" : "ies",
               options->path,
               walk.directories ? " (files created in them later are profiled too)" : "");
        break;
    case PROFILE_STOP:
        printf("profiling stopped on %zu file%s and %zu director%s under %s (counts kept: "
               "tessera profile show %s)\n",
               walk.files, walk.files == 1 ? "" : "s", walk.directories,
               walk.directories == 1 ? "y" : "ies", options->path, options->path);
        break;
    default:
        printf("counts cleared on %zu file%s and %zu director%s under %s\n", walk.files,
               walk.files == 1 ? "" : "s", walk.directories, walk.directories == 1 ? "y" : "ies",
               options->path);
        break;
    }
    return 0;
}

/* ---- show ----------------------------------------------------------------- */

struct profile_show_walk {
    const struct profile_options *options;
    struct rpc_client *meta;
    struct profileview_file *files;
    struct toolmeta_access **records; /* owned, parallel to files */
    size_t count;
    size_t cap;
};

static int profile_show_visit(void *ctx, const char *path, const struct stat *st)
{
    struct profile_show_walk *walk = ctx;
    struct toolmeta_access *records = NULL;
    size_t count = 0;
    uint32_t profiling = 0;
    char peer[256];
    int status;

    if (!S_ISREG(st->st_mode))
        return 0;
    status =
        toolmeta_profile_all(walk->meta, (int)walk->options->target.timeout_ms, (uint64_t)st->st_ino,
                               &records, &count, &profiling, peer, sizeof(peer));
    if (status != TS_OK)
        return profile_meta_failed(walk->options, "PROFILE_GET", path, status, peer);
    if (walk->count == walk->cap) {
        size_t cap = walk->cap ? walk->cap * 2 : 64;
        struct profileview_file *files = realloc(walk->files, cap * sizeof(*files));
        struct toolmeta_access **owned =
            files ? realloc(walk->records, cap * sizeof(*owned)) : NULL;
        if (files)
            walk->files = files;
        if (!files || !owned) {
            free(records);
            fprintf(stderr, "%s: out of memory\n", PROFILE_WHO);
            return 1;
        }
        walk->records = owned;
        walk->cap = cap;
    }
    char *name = strdup(path);
    if (!name) {
        free(records);
        fprintf(stderr, "%s: out of memory\n", PROFILE_WHO);
        return 1;
    }
    walk->files[walk->count] = (struct profileview_file){
        .path = name,
        .ino = (uint64_t)st->st_ino,
        .profiling = profiling != 0,
        .records = records,
        .count = count,
    };
    walk->records[walk->count] = records;
    walk->count++;
    return 0;
}

/* Writes the heat map to options->svg_path; returns the exit code. */
static int profile_write_svg(const struct profile_options *options,
                             const struct profile_show_walk *walk)
{
    FILE *out = fopen(options->svg_path, "w");
    int rc;

    if (!out) {
        fprintf(stderr, "%s: cannot write the heat map to %s: %s\n", PROFILE_WHO, options->svg_path,
                strerror(errno));
        return 1;
    }
    rc = profileview_svg(out, options->path, walk->files, walk->count);
    if (ferror(out))
        rc = -EIO;
    if (fclose(out) != 0 && rc == 0)
        rc = -errno;
    if (rc != 0) {
        fprintf(stderr, "%s: writing the heat map to %s failed: %s\n", PROFILE_WHO,
                options->svg_path, strerror(-rc));
        return 1;
    }
    fprintf(stderr, "heat map of %zu file%s written to %s\n", walk->count,
            walk->count == 1 ? "" : "s", options->svg_path);
    return 0;
}

static int profile_show(const struct profile_options *options, struct rpc_client *meta)
{
    struct profile_show_walk walk = {.options = options, .meta = meta};
    int exit_code = 1;
    int rc = mountwalk_run(options->path, profile_show_visit, &walk, PROFILE_WHO);

    if (rc < 0)
        fprintf(stderr, "%s: %s: %s\n", PROFILE_WHO, options->path, strerror(-rc));
    if (rc != 0)
        goto out;
    if (walk.count == 0 && !options->json) {
        printf("%s: no regular files\n", options->path);
    } else {
        rc = options->json ? profileview_json(stdout, options->path, walk.files, walk.count)
                           : profileview_text(stdout, walk.files, walk.count);
        if (rc != 0) {
            fprintf(stderr, "%s: %s\n", PROFILE_WHO, strerror(-rc));
            goto out;
        }
    }
    if (!options->json) {
        bool any_on = false, any_counts = false;
        for (size_t i = 0; i < walk.count; i++) {
            any_on = any_on || walk.files[i].profiling;
            any_counts = any_counts || walk.files[i].count > 0;
        }
        if (walk.count > 0 && !any_counts)
            printf("no counts yet: %s\n",
                   any_on ? "use the files (mounts send their counts every second)"
                          : "start profiling first: tessera profile start PATH");
    }
    exit_code = options->svg_path ? profile_write_svg(options, &walk) : 0;
out:
    for (size_t i = 0; i < walk.count; i++) {
        free((char *)walk.files[i].path);
        free(walk.records[i]);
    }
    free(walk.files);
    free(walk.records);
    return exit_code;
}

int profile_main(int argc, char **argv)
{
    struct profile_options options = {.target.timeout_ms = PROFILE_DEFAULT_TIMEOUT_MS};
    struct rpc_client *meta;
    int exit_code = profile_parse(argc, argv, &options);

    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    exit_code = metatarget_resolve_path(&options.target, options.path, PROFILE_WHO);
    if (exit_code != 0)
        return exit_code;
    exit_code = mountwalk_check(options.path, PROFILE_WHO);
    if (exit_code != 0)
        return exit_code;
    meta = rpc_client_new(options.target.endpoint);
    if (!meta) {
        fprintf(stderr, "%s: cannot use the meta endpoint %s (expected tcp://HOST:PORT)\n",
                PROFILE_WHO, options.target.endpoint);
        return 1;
    }
    exit_code =
        options.action == PROFILE_SHOW ? profile_show(&options, meta) : profile_set(&options, meta);
    rpc_client_destroy(&meta);
    return exit_code;
}
