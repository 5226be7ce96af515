/*
 * @file ops.h
 * The libfuse low-level operations of tessera-mount.
 */
#ifndef TESSERA_OPS_H
#define TESSERA_OPS_H

#include <fuse_lowlevel.h> /* FUSE_USE_VERSION comes from meson (fuse/meson.build) */

#include "attrguard.h"
#include "datapath.h"
#include "dentcache.h"
#include "dirlease.h"
#include "metaclient.h"
#include "nodedir.h"

/* Everything the operations share; set up by main before the session runs. */
struct mount_state {
    struct metaclient *meta;
    struct nodedir *nodes;
    struct datapath *datapath;
    struct workers *workers;
    struct dentcache *dentries;   /* statahead windows (dentcache.h) */
    struct dirlease *leases;      /* creates under directory leases; NULL: none */
    struct tilestream *streams;   /* the datanodes' tile streams; NULL: none */
    struct keepcache *kept_pages; /* files whose cached pages open keeps; NULL: none */
    struct fuse_session *session; /* for notifications to the kernel; NULL: none */
    struct attrguard *attr_guard; /* attributes handed out (attrguard.h) */
    const char *mountpoint;
    double attr_timeout;  /* seconds the kernel may cache attributes */
    double entry_timeout; /* seconds the kernel may cache names */
    const char *cluster;  /* TS_CLUSTER_XATTR's value, "ID ENDPOINT"; NULL: not known */
    bool array_direct;    /* --array-direct: array_reader_direct in ops.c */
};

extern const struct fuse_lowlevel_ops tessera_ops;

#endif
