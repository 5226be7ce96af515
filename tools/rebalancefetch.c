/*
 * @file rebalancefetch.c
 * See rebalancefetch.h. Per regular file: GETATTR (its layout), every
 * PROFILE_GET page, then TILE_MAP of the ranges holding profiled tiles
 * (primaries) and, only when some of them have further replicas,
 * TILE_HOLDERS of those ranges: every holder with its own version; for an
 * array file, its layout from the mount's user.tessera.array. The
 * first request meta refuses or does not answer ends the walk with a
 * message naming the file and the request.
 */
#include "rebalancefetch.h"

#include "mountwalk.h"
#include "proto.h"
#include "status.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#define REBALANCEFETCH_WHO "tessera rebalance"

/* Prints a failed request to meta; returns exit code 1. */
static int rebalancefetch_failed(const char *endpoint, const char *what, int status,
                                 const char *peer)
{
    fprintf(stderr, "%s: %s: tessera-meta at %s answered: %s%s%s\n", REBALANCEFETCH_WHO, what,
            endpoint, status_text(status), peer && peer[0] ? ": " : "", peer ? peer : "");
    if (status == TS_ERR_TIMEDOUT)
        fprintf(stderr, "  is the cluster up (tessera status)? is %s the meta of this mount?\n",
                endpoint);
    else if (status == TS_ERR_PROTO || status == TS_ERR_NOTSUP)
        fprintf(stderr, "  this tessera-meta does not know profiles: upgrade it\n");
    return 1;
}

struct rebalancefetch_walk {
    const char *endpoint;
    int timeout_ms;
    struct rpc_client *meta;
    struct rebalanceinput *input;
    struct ts_tile_map_rec *records; /* TS_MAX_TILES_PER_MAP */
};

/*
 * TILE_MAP of every range of file `index` (the primaries) or, with
 * `holders`, TILE_HOLDERS of them (every replica). 0, or 1 after a message.
 */
static int rebalancefetch_ranges(struct rebalancefetch_walk *walk, size_t index, const char *path,
                                 bool holders, bool *has_copies)
{
    const struct rebalanceinput_file *file = &walk->input->files[index];
    struct rebalanceinput_range *ranges = NULL;
    size_t count = 0;
    char peer[256], what[PATH_MAX + 32];
    int rc = rebalanceinput_ranges(walk->input, index, &ranges, &count);

    for (size_t r = 0; rc == 0 && r < count; r++) {
        struct toolmeta_holder *found = NULL;
        size_t found_count = 0;
        int status =
            holders
                ? toolmeta_tile_holders(walk->meta, walk->timeout_ms, file->ino, ranges[r].first,
                                        ranges[r].count, &found, &found_count, peer, sizeof(peer))
                : toolmeta_tile_records(walk->meta, walk->timeout_ms, file->ino, ranges[r].first,
                                        ranges[r].count, "", walk->records, peer, sizeof(peer));
        if (status != TS_OK) {
            snprintf(what, sizeof(what), "%s of %.*s", holders ? "TILE_HOLDERS" : "TILE_MAP",
                     PATH_MAX, path);
            free(ranges);
            return rebalancefetch_failed(walk->endpoint, what, status, peer);
        }
        if (holders)
            rc = rebalanceinput_add_holders(walk->input, index, found, found_count);
        else
            rc = rebalanceinput_add_tiles(walk->input, index, ranges[r].first, walk->records,
                                          ranges[r].count, has_copies);
        free(found);
    }
    free(ranges);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", REBALANCEFETCH_WHO, strerror(-rc));
        return 1;
    }
    return 0;
}

/*
 * An array file's layout, read from the mount as `tessera layout show`
 * reads it: lbm's roles are its disk chunks. 0 or exit code 1.
 */
static int rebalancefetch_array(const char *path, struct rebalanceinput *input, size_t index)
{
    char text[4096];
    ssize_t len = getxattr(path, "user.tessera.array", text, sizeof(text) - 1);
    int rc;

    if (len < 0) {
        fprintf(stderr, "%s: %s: reading its array layout (user.tessera.array): %s\n",
                REBALANCEFETCH_WHO, path, strerror(errno));
        return 1;
    }
    text[len] = '\0';
    rc = rebalanceinput_set_array(input, index, text);
    if (rc != 0) {
        fprintf(stderr, "%s: %s: its array layout \"%s\": %s\n", REBALANCEFETCH_WHO, path, text,
                strerror(-rc));
        return 1;
    }
    return 0;
}

static int rebalancefetch_visit(void *ctx, const char *path, const struct stat *st)
{
    struct rebalancefetch_walk *walk = ctx;
    struct toolmeta_access *records = NULL;
    size_t count = 0, index = 0;
    uint32_t profiling = 0;
    struct ts_attr attr;
    char peer[256], what[PATH_MAX + 32];
    bool has_copies = false;
    int status, rc;

    if (!S_ISREG(st->st_mode))
        return 0;
    status = toolmeta_getattr(walk->meta, walk->timeout_ms, (uint64_t)st->st_ino, &attr);
    if (status != TS_OK) {
        snprintf(what, sizeof(what), "GETATTR of %.*s", PATH_MAX, path);
        return rebalancefetch_failed(walk->endpoint, what, status, NULL);
    }
    if (!S_ISREG(attr.mode) || attr.tile_bytes == 0) {
        fprintf(stderr,
                "%s: %s: inode %" PRIu64 " in tessera-meta at %s is not this file (is it "
                "the meta of this mount?)\n",
                REBALANCEFETCH_WHO, path, (uint64_t)st->st_ino, walk->endpoint);
        return 1;
    }
    status = toolmeta_profile_all(walk->meta, walk->timeout_ms, attr.ino, &records, &count,
                                    &profiling, peer, sizeof(peer));
    if (status != TS_OK) {
        snprintf(what, sizeof(what), "PROFILE_GET of %.*s", PATH_MAX, path);
        return rebalancefetch_failed(walk->endpoint, what, status, peer);
    }
    rc = rebalanceinput_add_file(walk->input, path, &attr, records, count, &index);
    free(records);
    if (rc == -EEXIST)
        return 0; /* another name of a file already counted */
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", REBALANCEFETCH_WHO, strerror(-rc));
        return 1;
    }
    if (attr.flags & TS_ATTR_ARRAY) {
        rc = rebalancefetch_array(path, walk->input, index);
        if (rc != 0)
            return rc;
    }
    rc = rebalancefetch_ranges(walk, index, path, false, &has_copies);
    if (rc == 0 && has_copies)
        rc = rebalancefetch_ranges(walk, index, path, true, NULL);
    return rc;
}

int rebalancefetch_build(const char *root, const char *endpoint, struct rpc_client *meta,
                         int timeout_ms, const struct toolmeta_node *nodes, size_t node_count,
                         struct rebalanceinput *input)
{
    struct rebalancefetch_walk walk = {
        .endpoint = endpoint, .timeout_ms = timeout_ms, .meta = meta, .input = input};
    int rc = rebalanceinput_set_nodes(input, nodes, node_count);

    walk.records = malloc(TS_MAX_TILES_PER_MAP * sizeof(*walk.records));
    if (rc != 0 || !walk.records) {
        fprintf(stderr, "%s: out of memory\n", REBALANCEFETCH_WHO);
        rc = 1;
        goto out;
    }
    rc = mountwalk_run(root, rebalancefetch_visit, &walk, REBALANCEFETCH_WHO);
    if (rc < 0) {
        fprintf(stderr, "%s: %s: %s\n", REBALANCEFETCH_WHO, root, strerror(-rc));
        rc = 1;
    }
out:
    free(walk.records);
    return rc;
}
