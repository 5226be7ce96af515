/*
 * @file infoview.c
 * See infoview.h. The walk (mountwalk.h) counts every entry under PATH by
 * kind; for each regular file meta gives its attributes (GETATTR: size,
 * tile size, copies) and every holder of its tiles (TILE_HOLDERS), from
 * which the tiles, replicas and each datanode's share are summed. A tile's
 * bytes are its part of the file's size (a linear file's last tile is
 * short; an array file's tiles are counted at the tile size, an upper
 * bound), so "stored" is what the replicas hold at most: a tile not yet
 * written has holders but no bytes, which the datanodes, not meta, know.
 * JSON through jansson, which escapes any file name (names that are not
 * UTF-8 are written as jsonname.h says, as jansson refuses them).
 */
#include "infoview.h"

#include "cliargs.h"
#include "fmt.h"
#include "jsonname.h"
#include "metatarget.h"
#include "mountwalk.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"
#include "toolmeta.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INFOVIEW_WHO "tessera info"
#define INFOVIEW_DEFAULT_TIMEOUT_MS 10000

struct infoview_options {
    struct metatarget target;
    bool json;
};

/* One datanode's share. */
struct infoview_node {
    uint32_t id;
    uint64_t replicas;
    uint64_t bytes;
};

struct infoview_totals {
    uint64_t files, directories, symlinks, others;
    uint64_t bytes;         /* the files' sizes */
    uint64_t tiles;         /* tiles with at least one holder */
    uint64_t replicas;      /* holders of those tiles */
    uint64_t stored_bytes;  /* bytes the replicas hold at most */
    uint64_t under_copies;  /* tiles with fewer holders than their file's copies */
    uint32_t min_copies, max_copies;
    struct infoview_node *nodes;
    size_t node_count;
    bool failed; /* meta could not be asked about a file: totals are short */
};

struct infoview_run {
    const struct infoview_options *options;
    struct rpc_client *meta;
    struct infoview_totals totals;
};

static void infoview_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera info PATH [--json] [--state DIR | --meta ENDPOINT] [--timeout-ms MS]\n"
            "\n"
            "What PATH (a file or a directory on a Tessera mount) holds and where: its\n"
            "files, directories and symbolic links, their bytes and tiles, the replicas of\n"
            "those tiles against the files' copies (tiles with fewer are counted), and how\n"
            "many replicas and bytes each datanode holds. A directory is summed over its\n"
            "whole tree. `tessera layout show FILE` lists a file's tiles one by one.\n"
            "\n"
            "  --json            one JSON object\n"
            "  --state DIR, --meta ENDPOINT   which meta (default: the one PATH's mount uses)\n"
            "  --timeout-ms MS   how long to wait for each reply (default %d)\n"
            "  -h, --help        this help\n"
            "\n"
            "Exit status: 0, 1 when meta could not be asked about some file (the totals\n"
            "are then short) or PATH is not on a Tessera mount, 2 usage error.\n",
            INFOVIEW_DEFAULT_TIMEOUT_MS);
}

static int infoview_take(void *ctx, int option, const char *value)
{
    struct infoview_options *options = ctx;
    int taken = metatarget_option(&options->target, INFOVIEW_WHO, option, value);
    if (taken != CLIARGS_NOT_MINE)
        return taken;
    if (option == 'j') {
        options->json = true;
        return CLIARGS_GO_ON;
    }
    return CLIARGS_NOT_MINE;
}

static struct infoview_node *infoview_node_of(struct infoview_totals *totals, uint32_t id)
{
    for (size_t i = 0; i < totals->node_count; i++) {
        if (totals->nodes[i].id == id)
            return &totals->nodes[i];
    }
    struct infoview_node *grown =
        realloc(totals->nodes, (totals->node_count + 1) * sizeof(*totals->nodes));
    if (!grown)
        return NULL;
    totals->nodes = grown;
    grown[totals->node_count] = (struct infoview_node){.id = id};
    return &grown[totals->node_count++];
}

/* Adds the holders of one file's tiles; -1 (said why) when meta failed. */
static int infoview_add_file(struct infoview_run *run, const char *path, uint64_t ino)
{
    struct infoview_totals *totals = &run->totals;
    int timeout = (int)run->options->target.timeout_ms;
    struct ts_attr attr;
    char why[256] = "";
    int status = toolmeta_getattr(run->meta, timeout, ino, &attr);
    if (status != TS_OK) {
        fprintf(stderr, "%s: %s: GETATTR: %s\n", INFOVIEW_WHO, path, status_text(status));
        return -1;
    }
    uint32_t copies = attr.copies ? attr.copies : 1;
    if (totals->files == 1 || copies < totals->min_copies)
        totals->min_copies = copies;
    if (copies > totals->max_copies)
        totals->max_copies = copies;
    totals->bytes += attr.size;
    uint64_t tile_bytes = attr.tile_bytes ? attr.tile_bytes : 1;
    uint64_t linear_tiles = attr.size / tile_bytes + (attr.size % tile_bytes != 0);
    uint64_t tile_count = 0;
    if (mountwalk_tile_count(path, attr.size, attr.tile_bytes, &tile_count) != 0) {
        fprintf(stderr, "%s: %s: its array layout does not parse\n", INFOVIEW_WHO, path);
        return -1;
    }
    /* A linear file's last tile holds only the rest of its bytes. */
    bool linear = tile_count == linear_tiles;
    for (uint64_t first = 0; first < tile_count; first += TS_MAX_TILES_PER_MAP) {
        uint64_t left = tile_count - first;
        uint32_t count = left < TS_MAX_TILES_PER_MAP ? (uint32_t)left : TS_MAX_TILES_PER_MAP;
        struct toolmeta_holder *holders = NULL;
        size_t holder_count = 0;
        status = toolmeta_tile_holders(run->meta, timeout, ino, first, count, &holders,
                                       &holder_count, why, sizeof(why));
        if (status != TS_OK) {
            fprintf(stderr, "%s: %s: TILE_HOLDERS: %s%s%s\n", INFOVIEW_WHO, path,
                    status_text(status), why[0] ? ": " : "", why);
            free(holders);
            return -1;
        }
        uint64_t tile = UINT64_MAX;
        uint32_t on_tile = 0;
        for (size_t i = 0; i <= holder_count; i++) {
            if (i == holder_count || holders[i].tile != tile) {
                if (tile != UINT64_MAX) {
                    totals->tiles++;
                    totals->under_copies += on_tile < copies;
                }
                if (i == holder_count)
                    break;
                tile = holders[i].tile;
                on_tile = 0;
            }
            on_tile++;
            uint64_t bytes = tile_bytes;
            if (linear && holders[i].tile == tile_count - 1 && attr.size % tile_bytes != 0)
                bytes = attr.size % tile_bytes;
            totals->replicas++;
            totals->stored_bytes += bytes;
            struct infoview_node *node = infoview_node_of(totals, holders[i].node);
            if (node) {
                node->replicas++;
                node->bytes += bytes;
            }
        }
        free(holders);
    }
    return 0;
}

static int infoview_visit(void *ctx, const char *path, const struct stat *st)
{
    struct infoview_run *run = ctx;
    struct infoview_totals *totals = &run->totals;
    if (S_ISDIR(st->st_mode)) {
        totals->directories++;
    } else if (S_ISLNK(st->st_mode)) {
        totals->symlinks++;
    } else if (S_ISREG(st->st_mode)) {
        totals->files++;
        if (infoview_add_file(run, path, st->st_ino) != 0)
            totals->failed = true;
    } else {
        totals->others++;
    }
    return 0;
}

static int infoview_by_id(const void *a, const void *b)
{
    const struct infoview_node *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int infoview_print_json(const char *path, const struct infoview_totals *totals)
{
    json_t *nodes = json_array();
    json_t *root = json_object();
    if (!nodes || !root) {
        json_decref(nodes);
        json_decref(root);
        return -1;
    }
    for (size_t i = 0; i < totals->node_count; i++) {
        json_array_append_new(nodes, json_pack("{s:I, s:I, s:I}", "id",
                                               (json_int_t)totals->nodes[i].id, "replicas",
                                               (json_int_t)totals->nodes[i].replicas, "bytes",
                                               (json_int_t)totals->nodes[i].bytes));
    }
    if (jsonname_set(root, "path", path) != 0) {
        json_decref(nodes);
        json_decref(root);
        return -1;
    }
    json_object_set_new(root, "files", json_integer((json_int_t)totals->files));
    json_object_set_new(root, "directories", json_integer((json_int_t)totals->directories));
    json_object_set_new(root, "symlinks", json_integer((json_int_t)totals->symlinks));
    json_object_set_new(root, "others", json_integer((json_int_t)totals->others));
    json_object_set_new(root, "bytes", json_integer((json_int_t)totals->bytes));
    json_object_set_new(root, "tiles", json_integer((json_int_t)totals->tiles));
    json_object_set_new(root, "replicas", json_integer((json_int_t)totals->replicas));
    json_object_set_new(root, "stored_bytes", json_integer((json_int_t)totals->stored_bytes));
    json_object_set_new(root, "tiles_under_copies", json_integer((json_int_t)totals->under_copies));
    json_object_set_new(root, "min_copies", json_integer(totals->min_copies));
    json_object_set_new(root, "max_copies", json_integer(totals->max_copies));
    json_object_set_new(root, "complete", json_boolean(!totals->failed));
    json_object_set_new(root, "nodes", nodes);
    int rc = json_dumpf(root, stdout, JSON_INDENT(2)) == 0 ? 0 : -1;
    putchar('\n');
    json_decref(root);
    return rc;
}

static void infoview_print_text(const char *path, const struct infoview_totals *totals)
{
    char bytes[32], stored[32];
    fmt_size(totals->bytes, bytes, sizeof(bytes));
    fmt_size(totals->stored_bytes, stored, sizeof(stored));
    printf("%s\n", path);
    printf("  entries:   %" PRIu64 " files, %" PRIu64 " directories, %" PRIu64
           " symbolic links%s\n",
           totals->files, totals->directories, totals->symlinks, totals->others ? ", others" : "");
    printf("  size:      %s (%" PRIu64 " bytes) in %" PRIu64 " tiles\n", bytes, totals->bytes,
           totals->tiles);
    if (totals->files > 0) {
        if (totals->min_copies == totals->max_copies)
            printf("  copies:    %u", totals->min_copies);
        else
            printf("  copies:    %u to %u", totals->min_copies, totals->max_copies);
        printf(", %" PRIu64 " replicas holding at most %s; %" PRIu64
               " tiles with fewer replicas than their copies\n",
               totals->replicas, stored, totals->under_copies);
    }
    for (size_t i = 0; i < totals->node_count; i++) {
        char node_bytes[32];
        fmt_size(totals->nodes[i].bytes, node_bytes, sizeof(node_bytes));
        printf("  datanode %-4u %8" PRIu64 " replicas %10s\n", totals->nodes[i].id,
               totals->nodes[i].replicas, node_bytes);
    }
    if (totals->failed)
        printf("  (incomplete: meta could not be asked about some files; see above)\n");
}

int infoview_main(int argc, char **argv)
{
    static const struct option long_options[] = {
        METATARGET_LONG_OPTIONS,
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {INFOVIEW_WHO, infoview_usage, long_options,
                                                   infoview_take};
    struct infoview_options options = {.target.timeout_ms = INFOVIEW_DEFAULT_TIMEOUT_MS};
    struct infoview_run run = {.options = &options};
    int operands;
    int exit_code = metatarget_parse(&command, &options.target, argc, argv, &options, &operands);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    if (argc - operands != 1)
        return cliargs_usage_error(INFOVIEW_WHO, "wants one PATH on a Tessera mount", NULL);
    const char *path = argv[operands];
    if (mountwalk_check(path, INFOVIEW_WHO) != 0 ||
        metatarget_resolve_path(&options.target, path, INFOVIEW_WHO) != 0)
        return 1;
    run.meta = rpc_client_new(options.target.endpoint);
    if (!run.meta) {
        fprintf(stderr, "%s: cannot use endpoint %s\n", INFOVIEW_WHO, options.target.endpoint);
        return 1;
    }
    int walked = mountwalk_run(path, infoview_visit, &run, INFOVIEW_WHO);
    rpc_client_destroy(&run.meta);
    if (walked != 0) {
        fprintf(stderr, "%s: %s: the walk stopped: %s\n", INFOVIEW_WHO, path,
                strerror(walked < 0 ? -walked : EIO));
        free(run.totals.nodes);
        return 1;
    }
    qsort(run.totals.nodes, run.totals.node_count, sizeof(*run.totals.nodes), infoview_by_id);
    if (options.json) {
        if (infoview_print_json(path, &run.totals) != 0) {
            fprintf(stderr, "%s: out of memory\n", INFOVIEW_WHO);
            run.totals.failed = true;
        }
    } else {
        infoview_print_text(path, &run.totals);
    }
    free(run.totals.nodes);
    return run.totals.failed ? 1 : 0;
}
