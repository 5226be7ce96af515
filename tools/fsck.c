/*
 * @file fsck.c
 * See fsck.h. The walk collects every replica meta maps for the files
 * under PATH (TILE_MAP for each tile's flags, TILE_HOLDERS for its
 * holders), then asks each datanode about the files it should hold,
 * TS_MAX_CHECK_FILES per TILE_CHECK, and judges each tile:
 *  - a replica is missing when the tile was stored (TS_TILE_STORED) and
 *    its node, up, has no file; corrupt when a deep check failed;
 *  - the tile is under-replicated with fewer good replicas than the file's
 *    copies, unavailable with none good but some on a node that is down
 *    (it may come back), lost with none at all.
 * --repair has meta drop each missing or corrupt replica of a tile that
 * still has a good one (REPLICA_DROP): meta's repairer then makes it
 * again from a good replica. A lost tile cannot be repaired; fsck names
 * its file. Tile files a datanode holds that meta maps nowhere are the
 * reclaimer's (tessera-datanode --reclaim-grace), not listed here.
 */
#include "fsck.h"

#include "cliargs.h"
#include "metatarget.h"
#include "mountwalk.h"
#include "progress.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"
#include "toolmeta.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#define FSCK_WHO "tessera fsck"
#define FSCK_DEFAULT_TIMEOUT_MS 10000
/* A deep TILE_CHECK reads at most this much (but one tile) on the datanode's loop. */
#define FSCK_DEEP_BATCH_BYTES (32u << 20)

struct fsck_options {
    struct metatarget target;
    const char *path;
    bool deep;
    bool repair;
    /* `tessera scrub PATH` (fsck_scrub_path()): deep, corrupt replicas
     * named, the rest of fsck's findings left to fsck, the pace held to
     * bytes_per_sec (0: as fast as the datanodes go), progress shown. */
    bool scrub;
    uint64_t bytes_per_sec;
    const char *who; /* FSCK_WHO or scrub's, first in every message */
};

/* One replica to check: where it should be and what the datanode said. */
struct fsck_replica {
    size_t file;  /* index in fsck_run.files */
    uint64_t tile;
    uint32_t node;
    uint64_t version;
    bool stored;  /* the tile has bytes somewhere (TS_TILE_STORED) */
    int verdict;  /* enum ts_check_state, or -1: its node is down or did not answer */
};

struct fsck_file {
    char *path;
    uint64_t ino;
    uint32_t copies;
    uint32_t tile_bytes;
};

struct fsck_run {
    const struct fsck_options *options;
    struct rpc_client *meta;
    struct toolmeta_node *nodes;
    size_t node_count;
    struct fsck_file *files;
    size_t file_count, file_cap;
    struct fsck_replica *replicas;
    size_t replica_count, replica_cap;
    uint64_t tiles;
    uint64_t replica_bytes;  /* what a deep check reads: every replica's tile size */
    uint64_t checked_bytes;  /* ... of which checked so far (as the datanodes count them) */
    size_t checked_replicas;
    int failed; /* an operational error (exit 8) */
};

static void fsck_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera fsck PATH [--deep] [--repair] [--state DIR | --meta ENDPOINT]\n"
            "                         [--timeout-ms MS]\n"
            "\n"
            "Checks meta's tile map against the datanodes for every file under PATH (a file\n"
            "or directory on a Tessera mount): each replica meta maps must be on its\n"
            "datanode (--deep: and its bytes must match their checksums, which reads them\n"
            "all on the datanodes), and each tile must have its file's copies. Names each\n"
            "file with a missing or corrupt replica, an under-replicated tile, or a tile no\n"
            "replica is left of.\n"
            "\n"
            "  --deep            also read every replica on its datanode and check it\n"
            "  --repair          have meta drop each missing or corrupt replica of a tile\n"
            "                    that has a good one; meta's repairer then makes it again\n"
            "                    (tessera health shows the progress)\n"
            "  --state DIR, --meta ENDPOINT, --timeout-ms MS   which meta (default: the\n"
            "                    one PATH's mount uses), how long to wait (default %d)\n"
            "  -h, --help        this help\n"
            "\n"
            "Exit status (as fsck(8)): 0 clean, 1 problems found and all repaired, 4\n"
            "problems left, 8 an operational error, 2 usage error.\n",
            FSCK_DEFAULT_TIMEOUT_MS);
}

static int fsck_take(void *ctx, int option, const char *value)
{
    struct fsck_options *options = ctx;
    int taken = metatarget_option(&options->target, FSCK_WHO, option, value);
    if (taken != CLIARGS_NOT_MINE)
        return taken;
    switch (option) {
    case 'd': options->deep = true; return CLIARGS_GO_ON;
    case 'r': options->repair = true; return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

static const struct toolmeta_node *fsck_node(const struct fsck_run *run, uint32_t id)
{
    for (size_t i = 0; i < run->node_count; i++) {
        if (run->nodes[i].id == id)
            return &run->nodes[i];
    }
    return NULL;
}

static int fsck_add_replica(struct fsck_run *run, const struct fsck_replica *replica)
{
    if (run->replica_count == run->replica_cap) {
        size_t cap = run->replica_cap ? run->replica_cap * 2 : 1024;
        struct fsck_replica *grown = realloc(run->replicas, cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        run->replicas = grown;
        run->replica_cap = cap;
    }
    run->replicas[run->replica_count++] = *replica;
    return 0;
}

/* The replicas of tiles [first, first + count) of file index f. 0 or -1 (said why). */
static int fsck_collect_range(struct fsck_run *run, size_t f, uint64_t first, uint32_t count)
{
    const struct fsck_file *file = &run->files[f];
    int timeout = (int)run->options->target.timeout_ms;
    struct ts_tile_map_rec *records = calloc(count, sizeof(*records));
    struct toolmeta_holder *holders = NULL;
    size_t holder_count = 0;
    char why[256] = "";
    int rc = -1;

    if (!records)
        goto out;
    int status = toolmeta_tile_records(run->meta, timeout, file->ino, first, count, "", records,
                                       why, sizeof(why));
    if (status == TS_OK)
        status = toolmeta_tile_holders(run->meta, timeout, file->ino, first, count, &holders,
                                       &holder_count, why, sizeof(why));
    if (status != TS_OK) {
        fprintf(stderr, "%s: %s: tessera-meta answered %s%s%s\n", run->options->who, file->path,
                status_text(status), why[0] ? ": " : "", why);
        goto out;
    }
    for (size_t i = 0; i < holder_count; i++) {
        const struct toolmeta_holder *holder = &holders[i];
        if (holder->tile < first || holder->tile >= first + count)
            continue;
        struct fsck_replica replica = {
            .file = f,
            .tile = holder->tile,
            .node = holder->node,
            .version = holder->version,
            .stored = (records[holder->tile - first].flags & TS_TILE_STORED) != 0,
            .verdict = -1,
        };
        if (fsck_add_replica(run, &replica) < 0)
            goto out;
        run->replica_bytes += file->tile_bytes;
    }
    rc = 0;
out:
    free(records);
    free(holders);
    return rc;
}

static int fsck_visit(void *ctx, const char *path, const struct stat *st)
{
    struct fsck_run *run = ctx;
    struct ts_attr attr;
    uint64_t tiles;

    if (!S_ISREG(st->st_mode))
        return 0;
    int status = toolmeta_getattr(run->meta, (int)run->options->target.timeout_ms, st->st_ino,
                                  &attr);
    if (status != TS_OK) {
        fprintf(stderr, "%s: %s: GETATTR of inode %llu: %s\n", run->options->who, path,
                (unsigned long long)st->st_ino, status_text(status));
        run->failed = 1;
        return 0;
    }
    if (mountwalk_tile_count(path, attr.size, attr.tile_bytes, &tiles) < 0) {
        fprintf(stderr, "%s: %s: its array layout does not parse; skipped\n", run->options->who, path);
        run->failed = 1;
        return 0;
    }
    if (run->file_count == run->file_cap) {
        size_t cap = run->file_cap ? run->file_cap * 2 : 64;
        struct fsck_file *grown = realloc(run->files, cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        run->files = grown;
        run->file_cap = cap;
    }
    struct fsck_file *file = &run->files[run->file_count];
    file->path = strdup(path);
    file->ino = st->st_ino;
    file->copies = attr.copies ? attr.copies : 1;
    file->tile_bytes = attr.tile_bytes;
    if (!file->path)
        return -ENOMEM;
    run->file_count++;
    run->tiles += tiles;
    for (uint64_t first = 0; first < tiles; first += TS_MAX_TILES_PER_MAP) {
        uint64_t left = tiles - first;
        uint32_t count = left < TS_MAX_TILES_PER_MAP ? (uint32_t)left : TS_MAX_TILES_PER_MAP;
        if (fsck_collect_range(run, run->file_count - 1, first, count) < 0) {
            run->failed = 1;
            return 0;
        }
    }
    return 0;
}

static int fsck_by_node(const void *a, const void *b)
{
    const struct fsck_replica *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int fsck_by_tile(const void *a, const void *b)
{
    const struct fsck_replica *x = a, *y = b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    if (x->tile != y->tile)
        return x->tile < y->tile ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* One TILE_CHECK of replicas[0..count) (all on node): fills their verdicts. */
static void fsck_check_batch(struct fsck_run *run, const struct toolmeta_node *node,
                             struct fsck_replica *replicas, size_t count)
{
    size_t records_len = count * ts_tile_file_rec_bytes;
    uint8_t *records = malloc(records_len + 1);
    uint8_t *payload = malloc(records_len + 64);
    struct rpc_client *client = rpc_client_new(node->address);
    struct ts_writer writer;
    struct rpc_reply reply;
    memset(&reply, 0, sizeof(reply));

    if (!records || !payload || !client) {
        fprintf(stderr, "%s: datanode %u at %s: cannot ask it (%s)\n", run->options->who, node->id,
                node->address, client ? "out of memory" : "bad address");
        run->failed = 1;
        goto out;
    }
    ts_writer_init(&writer, records, records_len);
    for (size_t i = 0; i < count; i++) {
        struct ts_tile_file_rec file = {run->files[replicas[i].file].ino, replicas[i].tile,
                                        replicas[i].version};
        ts_tile_file_rec_write(&writer, &file);
    }
    struct ts_tile_check_req request = {.deep = run->options->deep ? 1 : 0,
                                        .count = (uint32_t)count,
                                        .files = {(const char *)records, (uint32_t)writer.len}};
    int len = ts_tile_check_req_encode(&request, payload, records_len + 64);
    int status = len < 0 ? TS_ERR_INTERNAL
                         : rpc_client_call(client, TS_OP_TILE_CHECK, payload, (size_t)len, NULL,
                                           0, (int)run->options->target.timeout_ms, &reply);
    struct ts_tile_check_rep answer;
    if (status == TS_OK &&
        (ts_tile_check_rep_decode(&answer, reply.payload, reply.payload_len) != 0 ||
         answer.count != count || answer.verdicts.len != count * ts_tile_check_rec_bytes))
        status = TS_ERR_BADMSG;
    if (status != TS_OK) {
        char why[256];
        rpc_reply_error_text(&reply, why, sizeof(why));
        fprintf(stderr, "%s: datanode %u at %s did not check its %zu replicas: %s%s%s\n",
                run->options->who, node->id, node->address, count, status_text(status),
                why[0] ? ": " : "", why);
        run->failed = 1;
        goto out;
    }
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, answer.verdicts.ptr, answer.verdicts.len);
    for (size_t i = 0; i < count; i++) {
        struct ts_tile_check_rec verdict;
        (void)ts_tile_check_rec_read(&cursor, &verdict);
        replicas[i].verdict = (int)verdict.state;
        run->checked_bytes += verdict.bytes;
    }
    run->checked_replicas += count;
out:
    rpc_reply_release(&reply);
    rpc_client_destroy(&client);
    free(records);
    free(payload);
}

/* The scrub's progress line on stderr, redrawn in place on a terminal. */
static void fsck_show_progress(const struct fsck_run *run, double elapsed_sec, bool last)
{
    if (!run->options->scrub || !isatty(STDERR_FILENO))
        return;
    struct progress_view view = {.tiles_done = run->checked_replicas,
                                 .tiles_total = run->replica_count,
                                 .bytes_done = run->checked_bytes,
                                 .bytes_total = run->replica_bytes,
                                 .elapsed_sec = elapsed_sec};
    char line[160];
    progress_format(&view, line, sizeof(line));
    fprintf(stderr, "\r%s: replicas %s\033[K%s", run->options->who, line + strlen("tiles "),
            last ? "\n" : "");
}

/* Sleeps as long as keeps the bytes checked since started_ms at the pace asked. */
static void fsck_keep_pace(const struct fsck_run *run, int64_t started_ms)
{
    if (run->options->bytes_per_sec == 0)
        return;
    int64_t due_ms = started_ms + (int64_t)(run->checked_bytes * 1000 / run->options->bytes_per_sec);
    int64_t now_ms = util_monotonic_ms();
    if (due_ms > now_ms)
        util_sleep_ms(due_ms - now_ms);
}

/*
 * Asks every datanode about the replicas meta maps to it. A deep batch is
 * also cut at FSCK_DEEP_BATCH_BYTES of tiles: the datanode reads them on
 * its loop, so a batch bounds how long it serves nothing else, and the
 * pace (scrub --max-mbps) is kept batch by batch.
 */
static void fsck_check_all(struct fsck_run *run)
{
    int64_t started_ms = util_monotonic_ms();
    qsort(run->replicas, run->replica_count, sizeof(*run->replicas), fsck_by_node);
    size_t i = 0;
    while (i < run->replica_count) {
        size_t j = i;
        uint64_t batch_bytes = 0;
        while (j < run->replica_count && run->replicas[j].node == run->replicas[i].node &&
               j - i < TS_MAX_CHECK_FILES) {
            uint64_t tile_bytes = run->files[run->replicas[j].file].tile_bytes;
            if (run->options->deep && j > i && batch_bytes + tile_bytes > FSCK_DEEP_BATCH_BYTES)
                break;
            batch_bytes += tile_bytes;
            j++;
        }
        const struct toolmeta_node *node = fsck_node(run, run->replicas[i].node);
        if (node && node->state == TS_NODE_UP)
            fsck_check_batch(run, node, &run->replicas[i], j - i);
        else
            run->checked_replicas += j - i;
        i = j;
        fsck_show_progress(run, (double)(util_monotonic_ms() - started_ms) / 1000.0, false);
        fsck_keep_pace(run, started_ms);
    }
    fsck_show_progress(run, (double)(util_monotonic_ms() - started_ms) / 1000.0, true);
    qsort(run->replicas, run->replica_count, sizeof(*run->replicas), fsck_by_tile);
}

struct fsck_counts {
    uint64_t missing, corrupt, under, unavailable, lost, dropped, drop_failed;
};

/* REPLICA_DROP of a bad replica. True when meta dropped it (or it was gone already). */
static bool fsck_drop(struct fsck_run *run, const struct fsck_replica *replica)
{
    uint8_t payload[128];
    struct rpc_reply reply;
    struct ts_replica_drop_req request = {.ino = run->files[replica->file].ino,
                                          .tile = replica->tile,
                                          .node = replica->node,
                                          .version = replica->version,
                                          .machine = ts_str_of("")};
    int len = ts_replica_drop_req_encode(&request, payload, sizeof(payload));
    int status = len < 0 ? TS_ERR_INTERNAL
                         : rpc_client_call(run->meta, TS_OP_REPLICA_DROP, payload, (size_t)len,
                                           NULL, 0, (int)run->options->target.timeout_ms, &reply);
    if (status != TS_OK) {
        char why[256];
        rpc_reply_error_text(&reply, why, sizeof(why));
        fprintf(stderr, "%s: meta did not drop the replica on node %u: %s%s%s\n", run->options->who,
                replica->node, status_text(status), why[0] ? ": " : "", why);
    }
    if (len >= 0)
        rpc_reply_release(&reply);
    return status == TS_OK;
}

/* Judges tile replicas[0..count) (one tile) and prints its problems. */
static void fsck_judge_tile(struct fsck_run *run, const struct fsck_replica *replicas, size_t count,
                            struct fsck_counts *counts)
{
    const struct fsck_file *file = &run->files[replicas[0].file];
    uint64_t tile = replicas[0].tile;
    size_t good = 0, bad = 0, down = 0;
    /* The tile has bytes when meta knows a holder stored it, or when a
     * holder has its file (its heartbeat may not have said so yet). */
    bool written = replicas[0].stored;
    for (size_t i = 0; i < count; i++)
        written = written || replicas[i].verdict == TS_CHECK_OK;

    for (size_t i = 0; i < count; i++) {
        const struct fsck_replica *r = &replicas[i];
        if (r->verdict == TS_CHECK_OK)
            good++;
        else if (r->verdict < 0)
            down++;
        else if (r->verdict == TS_CHECK_MISSING && !written)
            good++; /* allocated, never written: a hole on every holder */
        else
            bad++;
    }
    for (size_t i = 0; i < count; i++) {
        const struct fsck_replica *r = &replicas[i];
        if (r->verdict != TS_CHECK_CORRUPT && !(r->verdict == TS_CHECK_MISSING && written))
            continue;
        bool corrupt = r->verdict == TS_CHECK_CORRUPT;
        counts->corrupt += corrupt;
        counts->missing += !corrupt;
        printf("%s%s: tile %" PRIu64 ": the replica on datanode %u (version %" PRIu64 ") is %s",
               run->options->scrub && corrupt ? "corrupt: " : "", file->path, tile, r->node,
               r->version, corrupt ? "corrupt" : "missing");
        if (run->options->repair && good > 0) {
            if (fsck_drop(run, r)) {
                counts->dropped++;
                printf(": dropped, meta's repairer makes it again\n");
                continue;
            }
            counts->drop_failed++;
        }
        printf("\n");
    }
    if (good == 0 && down == 0) {
        counts->lost++;
        printf("%s: tile %" PRIu64 ": LOST: no replica is left (%zu bad); restore the file "
               "from a backup\n",
               file->path, tile, bad);
    } else if (good == 0) {
        counts->unavailable++;
        printf("%s: tile %" PRIu64 ": unavailable: its only good replicas may be on the %zu "
               "datanodes that are down\n",
               file->path, tile, down);
    } else if (good < file->copies) {
        counts->under++;
        printf("%s: tile %" PRIu64 ": %zu of %u copies\n", file->path, tile, good, file->copies);
    }
}

/* Scrub's summary and exit code: 0 every replica checked is good, 1 not. */
static int fsck_scrub_summary(const struct fsck_run *run, const struct fsck_counts *counts,
                              double elapsed_sec)
{
    size_t unchecked = 0;
    for (size_t i = 0; i < run->replica_count; i++)
        unchecked += run->replicas[i].verdict < 0;
    printf("scrub: %zu files, %" PRIu64 " tiles, %zu replicas, %.1f MB checked in %.1f s: %" PRIu64
           " corrupt replicas found",
           run->file_count, run->tiles, run->replica_count - unchecked,
           (double)run->checked_bytes / 1e6, elapsed_sec, counts->corrupt);
    if (unchecked > 0)
        printf(", %zu not checked (their datanodes are down or did not answer)", unchecked);
    printf("\n");
    if (counts->corrupt > 0)
        printf("scrub: their datanodes have reported them to meta, whose repairer makes them "
               "again from good replicas (tessera health shows the progress)\n");
    return run->failed || unchecked > 0 || counts->corrupt > 0 ? 1 : 0;
}

static int fsck_report(struct fsck_run *run, double elapsed_sec)
{
    struct fsck_counts counts = {0};
    size_t i = 0;
    while (i < run->replica_count) {
        size_t j = i;
        while (j < run->replica_count && run->replicas[j].file == run->replicas[i].file &&
               run->replicas[j].tile == run->replicas[i].tile)
            j++;
        fsck_judge_tile(run, &run->replicas[i], j - i, &counts);
        i = j;
    }
    if (run->options->scrub)
        return fsck_scrub_summary(run, &counts, elapsed_sec);
    printf("fsck: %zu files, %" PRIu64 " tiles, %zu replicas%s: %" PRIu64 " missing, %" PRIu64
           " corrupt, %" PRIu64 " tiles under-replicated, %" PRIu64 " unavailable, %" PRIu64
           " lost",
           run->file_count, run->tiles, run->replica_count, run->options->deep ? " (deep)" : "",
           counts.missing, counts.corrupt, counts.under, counts.unavailable, counts.lost);
    if (run->options->repair)
        printf("; %" PRIu64 " bad replicas dropped for repair", counts.dropped);
    printf("\n");
    if (run->failed)
        return 8;
    uint64_t problems = counts.missing + counts.corrupt + counts.under + counts.unavailable +
                        counts.lost;
    if (problems == 0)
        return 0;
    /* Dropped replicas are made again by the repairer; under-replicated tiles it fills. */
    if (run->options->repair && counts.lost == 0 && counts.unavailable == 0 &&
        counts.drop_failed == 0)
        return FSCK_EXIT_FIXED;
    return FSCK_EXIT_LEFT;
}

/* The check of every file under options->path; the exit code. */
static int fsck_path_run(const struct fsck_options *options)
{
    struct fsck_run run = {.options = options};
    struct metatarget target = options->target;
    const char *who = options->who;
    char why[256];
    int exit_code = mountwalk_check(options->path, who);
    if (exit_code == 0)
        exit_code = metatarget_resolve_path(&target, options->path, who);
    if (exit_code != 0)
        return options->scrub ? 1 : 8;
    int failure_code = options->scrub ? 1 : 8;
    run.meta = rpc_client_new(target.endpoint);
    if (!run.meta) {
        fprintf(stderr, "%s: cannot use endpoint %s\n", who, target.endpoint);
        return failure_code;
    }
    int status = toolmeta_node_list(run.meta, (int)target.timeout_ms, &run.nodes,
                                    &run.node_count, why, sizeof(why));
    if (status != TS_OK) {
        fprintf(stderr, "%s: tessera-meta at %s: NODE_LIST: %s (is the cluster up?)\n", who,
                target.endpoint, status_text(status));
        exit_code = failure_code;
        goto out;
    }
    int walked = mountwalk_run(options->path, fsck_visit, &run, who);
    if (walked != 0) {
        fprintf(stderr, "%s: %s: the walk stopped: %s\n", who, options->path,
                strerror(walked < 0 ? -walked : EIO));
        exit_code = failure_code;
        goto out;
    }
    int64_t started_ms = util_monotonic_ms();
    fsck_check_all(&run);
    exit_code = fsck_report(&run, (double)(util_monotonic_ms() - started_ms) / 1000.0);
out:
    for (size_t i = 0; i < run.file_count; i++)
        free(run.files[i].path);
    free(run.files);
    free(run.replicas);
    free(run.nodes);
    rpc_client_destroy(&run.meta);
    return exit_code;
}

int fsck_scrub_path(const char *path, const struct metatarget *target, uint64_t bytes_per_sec,
                    const char *who)
{
    struct fsck_options options = {.target = *target,
                                   .path = path,
                                   .deep = true,
                                   .scrub = true,
                                   .bytes_per_sec = bytes_per_sec,
                                   .who = who};
    return fsck_path_run(&options);
}

int fsck_main(int argc, char **argv)
{
    static const struct option long_options[] = {
        METATARGET_LONG_OPTIONS,
        {"deep", no_argument, NULL, 'd'},
        {"repair", no_argument, NULL, 'r'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {FSCK_WHO, fsck_usage, long_options, fsck_take};
    struct fsck_options options = {.target.timeout_ms = FSCK_DEFAULT_TIMEOUT_MS, .who = FSCK_WHO};
    int operands;
    int exit_code = metatarget_parse(&command, &options.target, argc, argv, &options, &operands);

    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    if (argc - operands != 1)
        return cliargs_usage_error(FSCK_WHO, "wants one PATH on a Tessera mount", NULL);
    options.path = argv[operands];
    return fsck_path_run(&options);
}
