/*
 * @file bdi.c
 * See bdi.h.
 */
#include "bdi.h"

#include "log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The kernel reads ahead at most the mount's bdi read_ahead_kb (128 KiB by
 * default), which would cut sequential reads into 128 KiB requests. Raise it
 * to a few tiles. The bdi is named by the mount's device number, read from
 * mountinfo: stat() on the mountpoint would wait for our own loop. It must
 * happen after the kernel has processed FUSE_INIT, which only ever lowers
 * the value, so ops.c calls it on the first request after init.
 */
void bdi_raise_readahead(const char *mountpoint, unsigned kib)
{
    char real[PATH_MAX];
    char line[4096];
    char device[64] = "";
    FILE *mountinfo;

    if (!realpath(mountpoint, real))
        return;
    mountinfo = fopen("/proc/self/mountinfo", "r");
    if (!mountinfo)
        return;
    while (fgets(line, sizeof(line), mountinfo)) {
        char dev[64];
        char point[PATH_MAX];
        /* id parent major:minor root mountpoint ... */
        if (sscanf(line, "%*s %*s %63s %*s %4095s", dev, point) == 2 &&
            strcmp(point, real) == 0)
            snprintf(device, sizeof(device), "%s", dev);
    }
    fclose(mountinfo);
    if (!device[0])
        return;
    char path[128];
    snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", device);
    FILE *bdi = fopen(path, "w");
    if (!bdi) {
        log_info("cannot raise %s (not root?): sequential reads use 128 KiB requests", path);
        return;
    }
    fprintf(bdi, "%u\n", kib);
    if (fclose(bdi) != 0)
        log_warn("cannot write %s", path);
}
