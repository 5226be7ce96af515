/*
 * @file mountwalk.c
 * See mountwalk.h. nftw() passes no context to its callback, so the walk's
 * context lives in file-scope variables for the length of one walk.
 */
#include "mountwalk.h"

#include "arraylayout.h"
#include "arrayspec.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

/* An array file's layout (arrayspec.h), beside its user.tessera.layout. */
#define MOUNTWALK_ARRAY_XATTR "user.tessera.array"

#define MOUNTWALK_OPEN_DIRS 32

static mountwalk_fn mountwalk_callback;
static void *mountwalk_ctx;
static const char *mountwalk_who;

static int mountwalk_visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    switch (type) {
    case FTW_DNR:
        fprintf(stderr, "%s: %s: cannot read the directory (skipped)\n", mountwalk_who, path);
        return mountwalk_callback(mountwalk_ctx, path, st);
    case FTW_NS: fprintf(stderr, "%s: %s: cannot stat (skipped)\n", mountwalk_who, path); return 0;
    default: return mountwalk_callback(mountwalk_ctx, path, st);
    }
}

int mountwalk_run(const char *root, mountwalk_fn fn, void *ctx, const char *who)
{
    int rc;

    mountwalk_callback = fn;
    mountwalk_ctx = ctx;
    mountwalk_who = who;
    errno = 0;
    rc = nftw(root, mountwalk_visit, MOUNTWALK_OPEN_DIRS, FTW_PHYS | FTW_MOUNT);
    if (rc == -1)
        rc = errno ? -errno : -EIO;
    mountwalk_callback = NULL;
    mountwalk_ctx = NULL;
    return rc;
}

int mountwalk_check(const char *path, const char *who)
{
    char value[256];
    struct stat st;

    if (lstat(path, &st) != 0) {
        fprintf(stderr, "%s: %s: %s\n", who, path, strerror(errno));
        return 1;
    }
    if (getxattr(path, "user.tessera.layout", value, sizeof(value)) < 0 && errno != ERANGE) {
        fprintf(stderr,
                "%s: %s is not on a Tessera mount (it has no user.tessera.layout: %s); give a "
                "path under the mount point, e.g. the one `tessera up --mount DIR` made\n",
                who, path, strerror(errno));
        return 1;
    }
    return 0;
}

int mountwalk_tile_count(const char *path, uint64_t size, uint32_t tile_bytes, uint64_t *count)
{
    char text[1024];
    ssize_t len = getxattr(path, MOUNTWALK_ARRAY_XATTR, text, sizeof(text) - 1);
    if (len < 0) {
        if (errno != ENODATA)
            return -errno;
        *count = tile_bytes ? size / tile_bytes + (size % tile_bytes != 0) : 0;
        return 0;
    }
    text[len] = '\0';
    struct arrayspec spec;
    struct arraylayout *layout = malloc(sizeof(*layout));
    char why[ARRAYSPEC_MESSAGE_MAX];
    int rc = -EINVAL;
    if (layout && arrayspec_parse(text, (size_t)len, &spec, why, sizeof(why)) == 0 &&
        arraylayout_init(layout, &spec, why, sizeof(why)) == 0) {
        *count = arraylayout_tile_count(layout);
        rc = 0;
    }
    free(layout);
    return rc;
}
