/*
 * @file filelayout.c
 * See filelayout.h. What the tool prints about an array file's tiles is
 * computed here from the canonical text meta returns (arraylayout.h, the
 * same code the client and meta run), so that the boxes shown are the ones
 * the bytes are in; meta only says where each tile lives.
 */
#include "filelayout.h"

#include "arrayhome.h"
#include "arraylayout.h"
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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#define FILELAYOUT_DEFAULT_TIMEOUT_MS 2000
#define FILELAYOUT_WHO "tessera layout"
#define FILELAYOUT_ARRAY_XATTR "user.tessera.array"
#define FILELAYOUT_LAYOUT_XATTR "user.tessera.layout"
#define FILELAYOUT_TEXT_MAX 1024

enum filelayout_action { FILELAYOUT_SHOW, FILELAYOUT_SET, FILELAYOUT_UNSET };

struct filelayout_options {
    struct metatarget target; /* --state | --meta, --timeout-ms */
    bool json;
    enum filelayout_action action;
    const char *path;
    const char *spec; /* set */
};

static void filelayout_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera layout set FILE SPEC\n"
            "       tessera layout unset FILE\n"
            "       tessera layout [show] FILE [--json] [--state DIR | --meta ENDPOINT]\n"
            "                                  [--timeout-ms MS]\n"
            "\n"
            "set: declares how FILE (empty, before its first write) or a directory (for the\n"
            "files created in it later) is laid out. SPEC is either an array layout, stored\n"
            "as user.tessera.array:\n"
            "    TYPE SHAPE DIST [mesh=MxN..] [subchunk=same|first] [threshold=SIZE]\n"
            "    e.g. \"f32 512x512x512 BLOCK,BLOCK,BLOCK mesh=2x2x2\"\n"
            "  (TYPE i8 u8 i16 u16 i32 u32 f32 i64 u64 f64 c64 c128 or b1..b16; DIST BLOCK or\n"
            "  * per dimension; mesh= one count per BLOCK dimension; threshold = the largest\n"
            "  tile, default the file's tile size), or KEY=VALUE tokens, stored as\n"
            "  user.tessera.layout: tile=SIZE copies=1 placement=default|roundrobin|static|\n"
            "  dynamic.\n"
            "unset: makes FILE (empty) linear again, or stops a directory's inheritance.\n"
            "show (the default): the effective layout, the number of tiles and the tile map:\n"
            "  each tile's holders (the datanode of its primary first, then those with a read\n"
            "  copy from `tessera rebalance`; - = not written yet), the primary's version,\n"
            "  bytes, and its box of array indices (lower corner, shape) or, for a linear\n"
            "  file, its byte range. JSON gives each holder's node, version and kind.\n"
            "\n"
            "  --json            show as one JSON object\n"
            "  --state DIR       the local cluster in DIR, which must be FILE's (default: the\n"
            "                    cluster FILE's mount names in its tessera.cluster attribute)\n"
            "  --meta ENDPOINT   ask this tessera-meta for the tile map (FILE's cluster too)\n"
            "  --timeout-ms MS   how long to wait for meta (default %d)\n"
            "  -h, --help        this help\n"
            "\n"
            "Exit status: 0 done, 1 refused or meta unreachable, 2 usage error.\n",
            FILELAYOUT_DEFAULT_TIMEOUT_MS);
}

static int filelayout_usage_error(const char *message, const char *arg)
{
    return cliargs_usage_error(FILELAYOUT_WHO, message, arg);
}

static int filelayout_take(void *ctx, int option, const char *value)
{
    struct filelayout_options *options = ctx;
    int taken = metatarget_option(&options->target, FILELAYOUT_WHO, option, value);
    if (taken != CLIARGS_NOT_MINE)
        return taken;
    if (option != 'j')
        return CLIARGS_NOT_MINE;
    options->json = true;
    return CLIARGS_GO_ON;
}

/* Parses argv; returns CLIARGS_GO_ON, else the exit code (help or usage error). */
static int filelayout_parse(int argc, char **argv, struct filelayout_options *options)
{
    static const struct option long_options[] = {
        METATARGET_LONG_OPTIONS,
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {FILELAYOUT_WHO, filelayout_usage, long_options,
                                                   filelayout_take};
    int operands;
    int positional;
    int exit_code =
        metatarget_parse(&command, &options->target, argc, argv, options, &operands);

    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    positional = argc - operands;
    if (positional < 1)
        return filelayout_usage_error("missing FILE", NULL);
    const char *first = argv[operands];
    if (strcmp(first, "set") == 0) {
        if (positional != 3)
            return filelayout_usage_error(
                "set wants FILE and SPEC, e.g. tessera layout set data.f32 \"f32 512x512 "
                "BLOCK,BLOCK mesh=2x2\"",
                NULL);
        options->action = FILELAYOUT_SET;
        options->path = argv[operands + 1];
        options->spec = argv[operands + 2];
    } else if (strcmp(first, "unset") == 0) {
        if (positional != 2)
            return filelayout_usage_error("unset wants one FILE", NULL);
        options->action = FILELAYOUT_UNSET;
        options->path = argv[operands + 1];
    } else if (strcmp(first, "show") == 0) {
        if (positional != 2)
            return filelayout_usage_error("show wants one FILE", NULL);
        options->path = argv[operands + 1];
    } else {
        if (positional != 1)
            return filelayout_usage_error("unknown action (set, unset, show) or extra argument:",
                                          first);
        options->path = first;
    }
    if (options->json && options->action != FILELAYOUT_SHOW)
        return filelayout_usage_error("--json goes with show", NULL);
    return CLIARGS_GO_ON;
}

/* Whether SPEC is KEY=VALUE tokens (user.tessera.layout) rather than an array. */
static bool filelayout_is_layout_spec(const char *spec)
{
    size_t start = strspn(spec, " \t\n");
    size_t word = strcspn(spec + start, " \t\n");
    return memchr(spec + start, '=', word) != NULL;
}

/* Reads xattr name of path into text[cap]; returns its length or -errno. */
static int filelayout_getxattr(const char *path, const char *name, char *text, size_t cap)
{
    ssize_t len = getxattr(path, name, text, cap - 1);
    if (len < 0)
        return -errno;
    text[len] = '\0';
    return (int)len;
}

/* Explains why setting (or removing) a hint failed, in words; returns 1. */
static int filelayout_refused(const struct filelayout_options *options, const char *name, int err)
{
    const char *path = options->path;
    fprintf(stderr, "tessera layout: %s: cannot %s %s: %s\n", path,
            options->action == FILELAYOUT_UNSET ? "remove" : "set", name, strerror(err));
    switch (err) {
    case EINVAL:
        if (options->action == FILELAYOUT_SET && strcmp(name, FILELAYOUT_ARRAY_XATTR) == 0) {
            struct arrayspec spec;
            struct arraylayout *layout = malloc(sizeof(*layout));
            char why[ARRAYSPEC_MESSAGE_MAX];
            if (arrayspec_parse(options->spec, strlen(options->spec), &spec, why, sizeof(why)) !=
                    0 ||
                (layout && arraylayout_init(layout, &spec, why, sizeof(why)) != 0))
                fprintf(stderr, "  the array layout is not valid: %s\n", why);
            else
                fprintf(stderr,
                        "  tessera-meta refused it (a threshold above 16M, or FILE is not a "
                        "regular file or directory); its log says why\n");
            free(layout);
        } else if (options->action == FILELAYOUT_SET) {
            fprintf(stderr, "  expected KEY=VALUE tokens: tile=SIZE (4K..16M, a multiple of 4K), "
                            "copies=1, placement=default|roundrobin|static|dynamic; "
                            "tessera-meta's log says which part is wrong\n");
        }
        break;
    case EBUSY:
        fprintf(stderr, "  the file already holds data, so its layout is fixed. Set the layout "
                        "on an empty file\n  before its first write (or on its directory before "
                        "creating it), or truncate it to\n  0 bytes first\n");
        break;
    case ENODATA: fprintf(stderr, "  it has no array layout to remove\n"); break;
    case ENOTSUP: fprintf(stderr, "  %s is not on a Tessera mount\n", path); break;
    default: break;
    }
    return 1;
}

static int filelayout_set(const struct filelayout_options *options)
{
    bool layout = options->action == FILELAYOUT_SET && filelayout_is_layout_spec(options->spec);
    const char *name = layout ? FILELAYOUT_LAYOUT_XATTR : FILELAYOUT_ARRAY_XATTR;
    char text[FILELAYOUT_TEXT_MAX];
    int rc;

    if (options->action == FILELAYOUT_UNSET)
        rc = removexattr(options->path, name);
    else
        rc = setxattr(options->path, name, options->spec, strlen(options->spec), 0);
    if (rc != 0)
        return filelayout_refused(options, name, errno);
    if (options->action == FILELAYOUT_UNSET) {
        printf("%s: no array layout (linear)\n", options->path);
        return 0;
    }
    rc = filelayout_getxattr(options->path, name, text, sizeof(text));
    if (rc < 0) {
        fprintf(stderr, "tessera layout: %s: set, but reading it back failed: %s\n", options->path,
                strerror(-rc));
        return 1;
    }
    printf("%s: %s=\"%s\"\n", options->path, name, text);
    return 0;
}

/* text as a JSON string, through jansson (jsonname.h). */
static void filelayout_json_string(const char *text)
{
    if (jsonname_fprint_string(stdout, text) != 0)
        printf("null");
}

/* "a<sep>b<sep>c" of the first dims values, JSON list when json. */
static void filelayout_print_vector(const uint64_t *values, uint32_t dims, const char *sep,
                                    bool json, int width)
{
    char text[8 * 24];
    size_t len = 0;
    for (uint32_t d = 0; d < dims && len < sizeof(text); d++) {
        int n = snprintf(text + len, sizeof(text) - len, "%s%" PRIu64, d ? (json ? ", " : sep) : "",
                         values[d]);
        if (n < 0)
            break;
        len += (size_t)n;
    }
    if (json)
        printf("[%s]", text);
    else
        printf("%-*s", width, text);
}

/* What show needs about the file. */
struct filelayout_file {
    uint64_t ino;
    uint64_t size;
    uint32_t tile_bytes;
    char layout_text[FILELAYOUT_TEXT_MAX];
    char array_text[FILELAYOUT_TEXT_MAX]; /* "" = linear */
    struct arraylayout *array;            /* NULL = linear */
    uint64_t tile_count;
};

/* The holders of one tile: the primary first, then its other replicas. */
struct filelayout_holders {
    const struct toolmeta_holder *list;
    size_t count;
};

/* One tile's line (text) or object (JSON). */
static void filelayout_print_tile(const struct filelayout_options *options,
                                  const struct filelayout_file *file, uint64_t tile, uint32_t node,
                                  uint64_t version, uint32_t flags,
                                  const struct filelayout_holders *holders, bool first)
{
    bool json = options->json;
    uint64_t bytes;

    /* "stored": a datanode reported the tile's file (TS_TILE_STORED). */
    if (json) {
        printf("%s\n    {\"tile\": %" PRIu64 ", \"node\": %" PRIu32 ", \"version\": %" PRIu64
               ", \"stored\": %s, \"holders\": [",
               first ? "" : ",", tile, node, version, (flags & TS_TILE_STORED) ? "true" : "false");
        /* "datanode", not "node": a holder is not the tile's primary. */
        for (size_t i = 0; i < holders->count; i++)
            printf("%s{\"datanode\": %" PRIu32 ", \"version\": %" PRIu64 ", \"kind\": \"%s\"}",
                   i ? ", " : "", holders->list[i].node, holders->list[i].version,
                   holders->list[i].kind == TS_HOLDER_PRIMARY ? "primary" : "copy");
        printf("]");
    } else if (node) {
        char text[FILELAYOUT_TEXT_MAX] = "";
        size_t len = 0;
        for (size_t i = 0; i < holders->count && len < sizeof(text); i++) {
            int n = snprintf(text + len, sizeof(text) - len, "%s%" PRIu32, i ? "," : "",
                             holders->list[i].node);
            if (n < 0)
                break;
            len += (size_t)n;
        }
        printf("%-8" PRIu64 " %-12s %-10" PRIu64 " ", tile, text, version);
    } else {
        printf("%-8" PRIu64 " %-12s %-10s ", tile, "-", "-");
    }
    if (file->array) {
        struct arraylayout_tile info;
        arraylayout_tile_info(file->array, tile, &info);
        uint32_t dims = file->array->spec.ndims;
        bytes = info.bytes;
        if (json) {
            uint64_t chunk = 0;
            arrayhome_chunk_of(file->array, tile, &chunk);
            printf(", \"bytes\": %" PRIu64 ", \"chunk\": %" PRIu64 ", \"lower\": ", bytes, chunk);
            filelayout_print_vector(info.lower, dims, ",", true, 0);
            printf(", \"shape\": ");
            filelayout_print_vector(info.shape, dims, "x", true, 0);
            printf("}");
        } else {
            filelayout_print_vector(info.lower, dims, ",", false, 20);
            putchar(' ');
            filelayout_print_vector(info.shape, dims, "x", false, 20);
            printf(" %" PRIu64 "\n", bytes);
        }
        return;
    }
    uint64_t offset = tile * file->tile_bytes;
    bytes = file->size - offset < file->tile_bytes ? file->size - offset : file->tile_bytes;
    if (json)
        printf(", \"bytes\": %" PRIu64 ", \"offset\": %" PRIu64 "}", bytes, offset);
    else
        printf("%-20" PRIu64 " %" PRIu64 "\n", offset, bytes);
}

/* A chunk whose tiles are not all on one datanode (some moved off its home). */
#define FILELAYOUT_HOME_MIXED UINT32_MAX

/*
 * Notes tile `tile`'s primary as its disk chunk's home: homes[chunk] is 0
 * until a placed tile is seen, then that node, or FILELAYOUT_HOME_MIXED
 * once the chunk's tiles disagree.
 */
static void filelayout_note_home(const struct filelayout_file *file, uint32_t *homes,
                                 uint64_t tile, uint32_t node)
{
    uint64_t chunk;
    if (node == 0 || arrayhome_chunk_of(file->array, tile, &chunk) < 0)
        return;
    if (homes[chunk] == 0)
        homes[chunk] = node;
    else if (homes[chunk] != node)
        homes[chunk] = FILELAYOUT_HOME_MIXED;
}

/* The text form's last lines for an array: each disk chunk's home datanode. */
static void filelayout_print_homes(const struct filelayout_file *file, const uint32_t *homes)
{
    uint64_t chunks = arrayhome_chunk_count(file->array);
    printf("\nchunk homes (disk chunks in mesh order: the datanode holding their tiles):\n");
    for (uint64_t chunk = 0; chunk < chunks; chunk++) {
        if (homes[chunk] == 0)
            printf("chunk %-6" PRIu64 " -\n", chunk);
        else if (homes[chunk] == FILELAYOUT_HOME_MIXED)
            printf("chunk %-6" PRIu64 " several datanodes (tiles moved off its home)\n", chunk);
        else
            printf("chunk %-6" PRIu64 " datanode %" PRIu32 "\n", chunk, homes[chunk]);
    }
}

/* Prints the head of show: what the layout is. */
static void filelayout_print_head(const struct filelayout_options *options,
                                  const struct filelayout_file *file)
{
    if (options->json) {
        printf("{");
        jsonname_fprint_member(stdout, "path", options->path);
        printf(", \"ino\": %" PRIu64 ", \"size\": %" PRIu64 ", \"layout\": ", file->ino,
               file->size);
        filelayout_json_string(file->layout_text);
        printf(", \"array\": ");
        if (file->array)
            filelayout_json_string(file->array_text);
        else
            printf("null");
        printf(", \"tile_count\": %" PRIu64 ", \"tiles\": [", file->tile_count);
        return;
    }
    printf("%s: %s file, inode %" PRIu64 ", %" PRIu64 " bytes\n", options->path,
           file->array ? "array" : "linear", file->ino, file->size);
    printf("layout: %s\n", file->layout_text);
    if (file->array) {
        printf("array:  %s\n", file->array_text);
        printf("tiles:  %" PRIu64 " (FIND_submesh cut each disk chunk ", file->tile_count);
        filelayout_print_vector(file->array->submesh, file->array->spec.ndims, "x", false, 0);
        printf("; the largest tile holds %" PRIu32 " bytes)\n", file->array->max_tile_bytes);
        printf("%-8s %-12s %-10s %-20s %-20s %s\n", "tile", "holders", "version", "lower", "shape",
               "bytes");
    } else {
        printf("tiles:  %" PRIu64 " of %" PRIu32 " bytes\n", file->tile_count, file->tile_bytes);
        printf("%-8s %-12s %-10s %-20s %s\n", "tile", "holders", "version", "offset", "bytes");
    }
}

/* Fills *file from the mount and meta; returns 0 or the exit code. */
static int filelayout_load(const struct filelayout_options *options, struct rpc_client *meta,
                           struct filelayout_file *file)
{
    struct ts_attr attr;
    struct stat st;
    char why[ARRAYSPEC_MESSAGE_MAX];
    int rc;

    if (stat(options->path, &st) != 0) {
        fprintf(stderr, "tessera layout: %s: %s\n", options->path, strerror(errno));
        return 1;
    }
    rc = filelayout_getxattr(options->path, FILELAYOUT_LAYOUT_XATTR, file->layout_text,
                             sizeof(file->layout_text));
    if (rc < 0) {
        fprintf(stderr, "tessera layout: %s: no Tessera layout (%s): is it on a Tessera mount?\n",
                options->path, strerror(-rc));
        return 1;
    }
    rc = filelayout_getxattr(options->path, FILELAYOUT_ARRAY_XATTR, file->array_text,
                             sizeof(file->array_text));
    if (rc == -ENODATA)
        file->array_text[0] = '\0';
    else if (rc < 0) {
        fprintf(stderr, "tessera layout: %s: reading %s: %s\n", options->path,
                FILELAYOUT_ARRAY_XATTR, strerror(-rc));
        return 1;
    }
    if (S_ISDIR(st.st_mode)) {
        /* A directory has no tiles: show what its new files get. */
        if (options->json) {
            printf("{");
            jsonname_fprint_member(stdout, "path", options->path);
            printf(", \"ino\": %" PRIu64 ", \"directory\": true, \"layout\": ",
                   (uint64_t)st.st_ino);
            filelayout_json_string(file->layout_text);
            printf(", \"array\": ");
            if (file->array_text[0])
                filelayout_json_string(file->array_text);
            else
                printf("null");
            printf("}\n");
        } else {
            printf("%s: directory; new files get\nlayout: %s\narray:  %s\n", options->path,
                   file->layout_text, file->array_text[0] ? file->array_text : "(none: linear)");
        }
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "tessera layout: %s: not a regular file or directory\n", options->path);
        return 1;
    }
    file->ino = st.st_ino;
    file->size = (uint64_t)st.st_size;
    rc = toolmeta_getattr(meta, (int)options->target.timeout_ms, file->ino, &attr);
    if (rc != TS_OK) {
        fprintf(stderr, "tessera layout: tessera-meta at %s: inode %" PRIu64 ": %s%s\n",
                options->target.endpoint, file->ino, status_text(rc),
                rc == TS_ERR_TIMEDOUT ? " (is the cluster up? is it the mount's meta?)" : "");
        return 1;
    }
    if (!S_ISREG(attr.mode) || attr.tile_bytes == 0) {
        fprintf(stderr,
                "tessera layout: inode %" PRIu64 " in tessera-meta at %s is not this file "
                "(another cluster's meta?)\n",
                file->ino, options->target.endpoint);
        return 1;
    }
    file->tile_bytes = attr.tile_bytes;
    if (file->array_text[0]) {
        struct arrayspec spec;
        file->array = malloc(sizeof(*file->array));
        if (!file->array) {
            fprintf(stderr, "tessera layout: out of memory\n");
            return 1;
        }
        if (arrayspec_parse(file->array_text, strlen(file->array_text), &spec, why, sizeof(why)) !=
                0 ||
            arraylayout_init(file->array, &spec, why, sizeof(why)) != 0) {
            fprintf(stderr, "tessera layout: %s: its array layout does not parse: %s\n",
                    options->path, why);
            return 1;
        }
        file->tile_count = arraylayout_tile_count(file->array);
    } else {
        file->tile_count = file->size / file->tile_bytes + (file->size % file->tile_bytes != 0);
    }
    return 0;
}

static int filelayout_show(const struct filelayout_options *options)
{
    struct filelayout_file *file = calloc(1, sizeof(*file));
    struct rpc_client *meta = NULL;
    uint32_t *nodes = NULL;
    uint64_t *versions = NULL;
    uint32_t *flags = NULL;
    uint32_t *chunk_homes = NULL; /* array files: per disk chunk, see filelayout_note_home() */
    char error_text[256];
    bool copies_unknown = false; /* meta does not answer TILE_HOLDERS */
    int exit_code = 1;

    meta = rpc_client_new(options->target.endpoint);
    nodes = malloc(TS_MAX_TILES_PER_MAP * sizeof(*nodes));
    versions = malloc(TS_MAX_TILES_PER_MAP * sizeof(*versions));
    flags = malloc(TS_MAX_TILES_PER_MAP * sizeof(*flags));
    if (!file || !meta || !nodes || !versions || !flags) {
        fprintf(stderr, "tessera layout: %s\n",
                meta ? "out of memory" : "cannot use the meta endpoint (expected tcp://HOST:PORT)");
        goto out;
    }
    exit_code = filelayout_load(options, meta, file);
    if (exit_code != 0) {
        exit_code = exit_code < 0 ? 0 : exit_code; /* a directory is shown already */
        goto out;
    }
    if (file->array) {
        uint64_t chunks = arrayhome_chunk_count(file->array);
        chunk_homes = calloc(chunks ? chunks : 1, sizeof(*chunk_homes));
        if (!chunk_homes) {
            fprintf(stderr, "tessera layout: out of memory\n");
            exit_code = 1;
            goto out;
        }
    }
    filelayout_print_head(options, file);
    for (uint64_t first = 0; first < file->tile_count; first += TS_MAX_TILES_PER_MAP) {
        uint64_t left = file->tile_count - first;
        uint32_t count = left < TS_MAX_TILES_PER_MAP ? (uint32_t)left : TS_MAX_TILES_PER_MAP;
        int status =
            toolmeta_tile_map(meta, (int)options->target.timeout_ms, file->ino, first, count,
                                nodes, versions, flags, error_text, sizeof(error_text));
        if (status != TS_OK) {
            fflush(stdout);
            fprintf(stderr,
                    "\ntessera layout: tessera-meta at %s: tile map of inode %" PRIu64 ": %s%s%s\n",
                    options->target.endpoint, file->ino, status_text(status), error_text[0] ? ": " : "",
                    error_text);
            exit_code = 1;
            goto out;
        }
        struct toolmeta_holder *holders = NULL;
        size_t holder_count = 0;
        status =
            toolmeta_tile_holders(meta, (int)options->target.timeout_ms, file->ino, first, count,
                                    &holders, &holder_count, error_text, sizeof(error_text));
        if (status == TS_ERR_PROTO && !copies_unknown) {
            fprintf(stderr,
                    "tessera layout: tessera-meta at %s does not list replicas "
                    "(TILE_HOLDERS): showing each tile's primary only\n",
                    options->target.endpoint);
            copies_unknown = true;
        } else if (status != TS_OK && status != TS_ERR_PROTO) {
            fflush(stdout);
            fprintf(stderr,
                    "\ntessera layout: tessera-meta at %s: holders of inode %" PRIu64 ": %s%s%s\n",
                    options->target.endpoint, file->ino, status_text(status),
                    error_text[0] ? ": " : "", error_text);
            exit_code = 1;
            goto out;
        }
        size_t next = 0;
        for (uint32_t i = 0; i < count; i++) {
            struct filelayout_holders tile_holders = {holders + next, 0};
            while (next < holder_count && holders[next].tile == first + i) {
                tile_holders.count++;
                next++;
            }
            /* Without the list (an older meta, or the map changed between
             * the two requests): the primary the map names. */
            struct toolmeta_holder primary = {first + i, nodes[i], versions[i],
                                                TS_HOLDER_PRIMARY};
            if (nodes[i] != 0 && (tile_holders.count == 0 || tile_holders.list[0].node != nodes[i]))
                tile_holders = (struct filelayout_holders){&primary, 1};
            filelayout_print_tile(options, file, first + i, nodes[i], versions[i], flags[i],
                                  &tile_holders, first + i == 0);
            if (chunk_homes)
                filelayout_note_home(file, chunk_homes, first + i, nodes[i]);
        }
        free(holders);
    }
    if (options->json)
        printf("%s]}\n", file->tile_count ? "\n  " : "");
    else if (chunk_homes)
        filelayout_print_homes(file, chunk_homes);
    exit_code = 0;
out:
    free(chunk_homes);
    free(flags);
    free(versions);
    free(nodes);
    rpc_client_destroy(&meta);
    if (file)
        free(file->array);
    free(file);
    return exit_code;
}

int filelayout_main(int argc, char **argv)
{
    struct filelayout_options options = {.target.timeout_ms = FILELAYOUT_DEFAULT_TIMEOUT_MS};
    int exit_code = filelayout_parse(argc, argv, &options);

    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    if (options.action != FILELAYOUT_SHOW)
        return filelayout_set(&options);
    exit_code = metatarget_resolve_path(&options.target, options.path, FILELAYOUT_WHO);
    if (exit_code != 0)
        return exit_code;
    return filelayout_show(&options);
}
