/*
 * @file fuzzdatanode.c
 * The datanode fuzz targets' shared store (fuzzdatanode.h).
 */
#include "fuzzdatanode.h"

#include "log.h"

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static struct nodehandlers_context fuzzdatanode_ctx;
static bool fuzzdatanode_made;
static char fuzzdatanode_dir[PATH_MAX];

static int fuzzdatanode_remove(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static void fuzzdatanode_cleanup(void)
{
    nodehandlers_stats_fini(&fuzzdatanode_ctx.stats);
    warmer_destroy(&fuzzdatanode_ctx.warmer);
    fences_close(&fuzzdatanode_ctx.fences);
    diskio_destroy(&fuzzdatanode_ctx.disk);
    tilestore_close(&fuzzdatanode_ctx.store);
    pthread_mutex_destroy(&fuzzdatanode_ctx.lock);
    nftw(fuzzdatanode_dir, fuzzdatanode_remove, 16, FTW_DEPTH | FTW_PHYS);
}

struct nodehandlers_context *fuzzdatanode_context(const char *target_name)
{
    if (fuzzdatanode_made)
        return &fuzzdatanode_ctx;
    const char *tmp = getenv("TMPDIR");
    /* Errors only: a store error is worth seeing, chatter is not. */
    log_init(target_name, LOG_LEVEL_ERROR);
    snprintf(fuzzdatanode_dir, sizeof(fuzzdatanode_dir), "%s/%s.XXXXXX",
             tmp && *tmp ? tmp : "/tmp", target_name);
    /* A capacity, so that writes past it take the "disk full" paths too. */
    if (!mkdtemp(fuzzdatanode_dir) ||
        tilestore_open(fuzzdatanode_dir, 64u << 20, &fuzzdatanode_ctx.store) != 0 ||
        diskio_new(fuzzdatanode_ctx.store, 0, &fuzzdatanode_ctx.disk) != 0 ||
        fences_open(fuzzdatanode_dir, &fuzzdatanode_ctx.fences) != 0 ||
        pthread_mutex_init(&fuzzdatanode_ctx.lock, NULL) != 0) {
        fprintf(stderr, "%s: cannot make a tile store in %s\n", target_name, fuzzdatanode_dir);
        abort();
    }
    fuzzdatanode_ctx.warmer = warmer_new();
    fuzzdatanode_made = true;
    atexit(fuzzdatanode_cleanup);
    return &fuzzdatanode_ctx;
}
