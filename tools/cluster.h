/*
 * @file cluster.h
 * A Tessera cluster on this machine, kept under one state directory:
 *
 *   STATE/cluster.conf         settings (clusterconf.h)
 *   STATE/meta/                tessera-meta --data
 *   STATE/node<i>/             datanode i's --data, i = 1..N
 *   STATE/logs/<name>.log      each daemon's stderr, appended (meta, node<i>, mount)
 *   STATE/run/<name>.pid       each daemon's pid
 *   STATE/run/lock             held (flock) while an up or down runs
 *   STATE/mnt                  the default mountpoint
 *
 * Meta listens on tcp://HOST:PORT and datanode i on tcp://HOST:(PORT+i).
 * This module is the model `up` (up.c) and `down` (down.c) share: the
 * table of daemons with their paths and addresses, which of them run, and
 * the lock on the state directory.
 */
#ifndef TESSERA_TOOLS_CLUSTER_H
#define TESSERA_TOOLS_CLUSTER_H

#include "clusterconf.h"
#include "rpc.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CLUSTER_ENDPOINT_MAX 320

enum cluster_role { CLUSTER_META, CLUSTER_NODE, CLUSTER_MOUNT };

struct cluster_daemon {
    enum cluster_role role;
    char label[32];          /* "meta", "node3", "mount": names its pid and log files */
    const char *binary_name; /* "tessera-meta", ... */
    char binary[PATH_MAX];   /* filled by `up` when it must start it */
    char address[PATH_MAX];  /* listen endpoint; the mountpoint for the mount */
    char data_dir[PATH_MAX]; /* "" for the mount */
    char pid_path[PATH_MAX];
    char log_path[PATH_MAX];
    pid_t pid;    /* the running process, 0 = none */
    bool started; /* by this run of `up` */
    bool ready;
    int64_t started_ms; /* monotonic time of the start */
    /* mount: a dead mount of this cluster is in the way; the new one goes
     * beneath it (tessera-mount --replace-dead) and is ready once the mount
     * on top is no longer this one (fusemount_mount_id) */
    bool replaces_dead;
    uint64_t dead_mount_id;
};

struct cluster {
    char state_dir[PATH_MAX]; /* absolute once resolved */
    bool default_state;       /* not given with --state: hints can omit it */
    struct clusterconf conf;
    char meta_endpoint[CLUSTER_ENDPOINT_MAX];
    struct cluster_daemon *daemons; /* [0] meta, [1..nodes] datanodes, [nodes+1] mount */
    size_t count;
    int lock_fd;                    /* -1 = not locked */
    struct rpc_client *meta_client; /* NULL until `up` needs it */
    char keys_dir[PATH_MAX];        /* STATE/keys when its daemons use keys, else "" */
};

/* A cluster with nothing in it yet (lock_fd -1); release with cluster_free(). */
void cluster_init(struct cluster *cluster);
/* Releases the table, the meta client and the lock. Safe to call twice. */
void cluster_free(struct cluster *cluster);

/* The mount's entry: the last of the table. */
struct cluster_daemon *cluster_mount(struct cluster *cluster);

/*
 * Sets state_dir from --state (`flag`, NULL if not given) or the default
 * directory. Returns 0 or -errno after printing why, prefixed by `who`.
 */
int cluster_pick_state_dir(struct cluster *cluster, const char *flag, const char *who);

/* Replaces state_dir by its absolute, resolved form (it must exist). 0 or -errno (printed). */
int cluster_resolve_state_dir(struct cluster *cluster, const char *who);

/*
 * Takes STATE/run/lock (which must exist as a directory) so that two
 * `up`/`down` never work on one cluster at once; waits up to a minute for
 * another one to finish. The lock ends with the process, so a crashed
 * `up` never leaves it held. Returns 0 or -errno (printed).
 */
int cluster_lock(struct cluster *cluster, const char *who);

/*
 * (Re)builds the daemon table from cluster->conf and state_dir. All pids
 * start at 0. Returns 0, -ENOMEM or -ENAMETOOLONG.
 */
int cluster_daemons_init(struct cluster *cluster);

/*
 * Sets each daemon's pid from its pid file when that process still runs
 * the daemon's binary, else to 0.
 */
void cluster_find_running(struct cluster *cluster);

/* True when some daemon of the table has a pid. */
bool cluster_any_running(const struct cluster *cluster);

#endif
