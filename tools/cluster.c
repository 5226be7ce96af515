/*
 * @file cluster.c
 * See cluster.h. A pid file is trusted only while its pid runs the
 * daemon's binary (proc_is_running()), so stale pid files left by a crash
 * or a reboot simply count as "not running".
 */
#include "cluster.h"

#include "fmt.h"
#include "proc.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define CLUSTER_LOCK_TIMEOUT_MS 60000
#define CLUSTER_LOCK_POLL_MS 100

void cluster_init(struct cluster *cluster)
{
    memset(cluster, 0, sizeof(*cluster));
    cluster->lock_fd = -1;
}

struct cluster_daemon *cluster_mount(struct cluster *cluster)
{
    return &cluster->daemons[cluster->count - 1];
}

void cluster_free(struct cluster *cluster)
{
    rpc_client_destroy(&cluster->meta_client);
    free(cluster->daemons);
    cluster->daemons = NULL;
    if (cluster->lock_fd >= 0)
        close(cluster->lock_fd);
    cluster->lock_fd = -1;
}

int cluster_pick_state_dir(struct cluster *cluster, const char *flag, const char *who)
{
    int result;

    cluster->default_state = !(flag && *flag);
    if (cluster->default_state)
        result = clusterconf_default_state_dir(cluster->state_dir, sizeof(cluster->state_dir));
    else
        result = fmt_into(cluster->state_dir, sizeof(cluster->state_dir), "%s", flag);
    if (result == -ENOENT)
        fprintf(stderr, "%s: no state directory: set TESSERA_STATE or HOME, or pass --state DIR\n",
                who);
    else if (result != 0)
        fprintf(stderr, "%s: state directory name too long\n", who);
    return result;
}

int cluster_resolve_state_dir(struct cluster *cluster, const char *who)
{
    char resolved[PATH_MAX];

    if (!realpath(cluster->state_dir, resolved)) {
        int saved = errno;
        fprintf(stderr, "%s: %s: %s\n", who, cluster->state_dir, strerror(saved));
        return -saved;
    }
    return fmt_into(cluster->state_dir, sizeof(cluster->state_dir), "%s", resolved);
}

int cluster_lock(struct cluster *cluster, const char *who)
{
    char path[PATH_MAX];
    int64_t deadline = util_monotonic_ms() + CLUSTER_LOCK_TIMEOUT_MS;
    bool said_waiting = false;

    if (fmt_into(path, sizeof(path), "%s/run/lock", cluster->state_dir) != 0)
        return -ENAMETOOLONG;
    cluster->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (cluster->lock_fd < 0) {
        int saved = errno;
        fprintf(stderr, "%s: cannot open %s: %s\n", who, path, strerror(saved));
        return -saved;
    }
    while (flock(cluster->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            fprintf(stderr, "%s: cannot lock %s: %s\n", who, path, strerror(errno));
            return -EIO;
        }
        if (util_monotonic_ms() >= deadline) {
            fprintf(stderr, "%s: another tessera up or down still holds %s; try again later\n", who,
                    path);
            return -EBUSY;
        }
        if (!said_waiting)
            fprintf(stderr, "%s: waiting for another tessera up or down on %s\n", who,
                    cluster->state_dir);
        said_waiting = true;
        proc_sleep_ms(CLUSTER_LOCK_POLL_MS);
    }
    return 0;
}

/* Fills a daemon's paths and address from the state dir and conf. */
static int cluster_daemon_paths(struct cluster *cluster, struct cluster_daemon *daemon, long node)
{
    const char *state = cluster->state_dir;
    int result = 0;

    if (fmt_into(daemon->pid_path, sizeof(daemon->pid_path), "%s/run/%s.pid", state,
                 daemon->label) != 0 ||
        fmt_into(daemon->log_path, sizeof(daemon->log_path), "%s/logs/%s.log", state,
                 daemon->label) != 0)
        return -ENAMETOOLONG;
    switch (daemon->role) {
    case CLUSTER_META:
        result = fmt_into(daemon->data_dir, sizeof(daemon->data_dir), "%s/meta", state);
        if (result == 0)
            result =
                fmt_into(daemon->address, sizeof(daemon->address), "%s", cluster->meta_endpoint);
        break;
    case CLUSTER_NODE:
        result =
            fmt_into(daemon->data_dir, sizeof(daemon->data_dir), "%s/%s", state, daemon->label);
        if (result == 0)
            result = clusterconf_node_endpoint(&cluster->conf, node, daemon->address,
                                               sizeof(daemon->address));
        break;
    case CLUSTER_MOUNT:
        result = fmt_into(daemon->address, sizeof(daemon->address), "%s", cluster->conf.mount);
        break;
    }
    return result;
}

/* Names daemon i of the table: meta, node<i>, mount. */
static void cluster_daemon_identity(struct cluster_daemon *daemon, size_t index, size_t count)
{
    if (index == 0) {
        daemon->role = CLUSTER_META;
        daemon->binary_name = "tessera-meta";
        snprintf(daemon->label, sizeof(daemon->label), "meta");
    } else if (index == count - 1) {
        daemon->role = CLUSTER_MOUNT;
        daemon->binary_name = "tessera-mount";
        snprintf(daemon->label, sizeof(daemon->label), "mount");
    } else {
        daemon->role = CLUSTER_NODE;
        daemon->binary_name = "tessera-datanode";
        snprintf(daemon->label, sizeof(daemon->label), "node%zu", index);
    }
}

int cluster_daemons_init(struct cluster *cluster)
{
    size_t count = (size_t)cluster->conf.nodes + 2;
    int result;

    free(cluster->daemons);
    cluster->count = 0;
    cluster->daemons = calloc(count, sizeof(*cluster->daemons));
    if (!cluster->daemons)
        return -ENOMEM;
    cluster->count = count;
    result = clusterconf_meta_endpoint(&cluster->conf, cluster->meta_endpoint,
                                       sizeof(cluster->meta_endpoint));
    for (size_t i = 0; i < count && result == 0; i++) {
        cluster_daemon_identity(&cluster->daemons[i], i, count);
        result = cluster_daemon_paths(cluster, &cluster->daemons[i], (long)i);
    }
    return result;
}

void cluster_find_running(struct cluster *cluster)
{
    for (size_t i = 0; i < cluster->count; i++) {
        struct cluster_daemon *daemon = &cluster->daemons[i];
        pid_t pid = 0;
        if (proc_pidfile_read(daemon->pid_path, &pid) != 0)
            pid = 0;
        daemon->pid = proc_is_running(pid, daemon->binary_name) ? pid : 0;
    }
}

bool cluster_any_running(const struct cluster *cluster)
{
    for (size_t i = 0; i < cluster->count; i++) {
        if (cluster->daemons[i].pid > 0)
            return true;
    }
    return false;
}
