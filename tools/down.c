/*
 * @file down.c
 * `tessera down`: unmount, then stop the mount process, the datanodes and
 * meta, in that order, so that no daemon loses a peer while it still has
 * work from it. The daemons are found by the pid files in STATE/run (every
 * node<i>.pid there, whatever cluster.conf says today), and a pid is only
 * signalled while it still runs the daemon's binary.
 */
#include "down.h"

#include "cliargs.h"
#include "cluster.h"
#include "clusterconf.h"
#include "fmt.h"
#include "fusemount.h"
#include "proc.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DOWN_STOP_TIMEOUT_MS 10000
#define DOWN_UNMOUNT_TIMEOUT_MS 5000
#define DOWN_WHO "tessera down"

/* Stop order: the mount, then the datanodes, then meta. */
enum down_group { DOWN_MOUNT, DOWN_NODES, DOWN_META, DOWN_GROUPS };

/* A daemon found by its pid file in STATE/run. */
struct down_entry {
    enum down_group group;
    long node; /* sorts node2 before node10 */
    char label[32];
    char pid_path[PATH_MAX];
    struct proc_target target;
    bool was_running; /* when down began, before unmounting */
};

struct down_list {
    struct down_entry *entries;
    size_t count;
    size_t cap;
};

static void down_usage(FILE *out)
{
    fprintf(out, "Usage: tessera down [--state DIR]\n"
                 "\n"
                 "Stops the local cluster in DIR: unmounts it (fusermount3 -u, retried for 5 s,\n"
                 "then -uz), then stops the mount, the datanodes and meta with SIGTERM (SIGKILL\n"
                 "after 10 s). Data stays in DIR; `tessera up --state DIR` brings it back.\n"
                 "\n"
                 "  --state DIR   state directory (default: $TESSERA_STATE, else\n"
                 "                $XDG_STATE_HOME/tessera, else ~/.local/state/tessera)\n"
                 "  -h, --help    this help\n"
                 "\n"
                 "Exit status: 0 nothing left running (also if nothing was), 1 something could\n"
                 "not be stopped or unmounted, 2 usage error.\n");
}

static int down_take(void *ctx, int option, const char *value)
{
    const char **state = ctx;
    if (option != 's')
        return CLIARGS_NOT_MINE;
    *state = value;
    return CLIARGS_GO_ON;
}

/* Parses argv; returns CLIARGS_GO_ON, else the exit code. */
static int down_parse(int argc, char **argv, const char **state)
{
    static const struct option long_options[] = {
        {"state", required_argument, NULL, 's'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {DOWN_WHO, down_usage, long_options,
                                                   down_take};
    int operands;
    int exit_code;

    *state = NULL;
    exit_code = cliargs_parse(&command, argc, argv, (void *)state, &operands);
    if (exit_code == CLIARGS_GO_ON)
        exit_code = cliargs_no_operands(DOWN_WHO, argc, argv, operands);
    return exit_code;
}

/* Which daemon a pid file name belongs to; false if it is not one. */
static bool down_classify(const char *file_name, enum down_group *group, long *node)
{
    char number[32];
    size_t len = strlen(file_name);

    *node = 0;
    if (strcmp(file_name, "meta.pid") == 0) {
        *group = DOWN_META;
        return true;
    }
    if (strcmp(file_name, "mount.pid") == 0) {
        *group = DOWN_MOUNT;
        return true;
    }
    if (len <= 8 || strncmp(file_name, "node", 4) != 0 || strcmp(file_name + len - 4, ".pid"))
        return false;
    if (fmt_into(number, sizeof(number), "%.*s", (int)(len - 8), file_name + 4) != 0)
        return false;
    *group = DOWN_NODES;
    return util_parse_long(number, 1, INT_MAX, node) == 0;
}

static const char *down_binary(enum down_group group)
{
    static const char *const names[] = {"tessera-mount", "tessera-datanode", "tessera-meta"};
    return names[group];
}

/* Appends one pid file's daemon to the list. 0 or -errno. */
static int down_add(struct down_list *list, const char *run_dir, const char *file_name,
                    enum down_group group, long node)
{
    struct down_entry *entry;

    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 16;
        struct down_entry *grown = realloc(list->entries, cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        list->entries = grown;
        list->cap = cap;
    }
    entry = &list->entries[list->count];
    memset(entry, 0, sizeof(*entry));
    entry->group = group;
    entry->node = node;
    snprintf(entry->label, sizeof(entry->label), "%.*s", (int)(strlen(file_name) - 4), file_name);
    if (fmt_into(entry->pid_path, sizeof(entry->pid_path), "%s/%s", run_dir, file_name) != 0)
        return -ENAMETOOLONG;
    if (proc_pidfile_read(entry->pid_path, &entry->target.pid) != 0)
        entry->target.pid = 0;
    entry->target.name = down_binary(group);
    entry->was_running = proc_is_running(entry->target.pid, entry->target.name);
    list->count++;
    return 0;
}

static int down_compare(const void *left, const void *right)
{
    const struct down_entry *a = left;
    const struct down_entry *b = right;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    return (a->node > b->node) - (a->node < b->node);
}

/* Lists every daemon pid file in STATE/run, in stop order. 0 or -errno. */
static int down_collect(const char *state_dir, struct down_list *list)
{
    char run_dir[PATH_MAX];
    struct dirent *entry;
    DIR *dir;
    int result = 0;

    if (fmt_into(run_dir, sizeof(run_dir), "%s/run", state_dir) != 0)
        return -ENAMETOOLONG;
    dir = opendir(run_dir);
    if (!dir)
        return errno == ENOENT ? 0 : -errno;
    while (result == 0 && (entry = readdir(dir)) != NULL) {
        enum down_group group;
        long node;
        if (down_classify(entry->d_name, &group, &node))
            result = down_add(list, run_dir, entry->d_name, group, node);
    }
    closedir(dir);
    if (list->count > 1)
        qsort(list->entries, list->count, sizeof(list->entries[0]), down_compare);
    /* Only now do the entries stay put (realloc and qsort move them). */
    for (size_t i = 0; i < list->count; i++)
        list->entries[i].target.label = list->entries[i].label;
    return result;
}

/*
 * Unmounts the cluster's mountpoint if a FUSE filesystem is mounted there.
 * Returns 1 if it unmounted, 0 if nothing was mounted, -1 on failure.
 */
static int down_unmount(const char *mountpoint)
{
    if (fusemount_is_mounted(mountpoint) != 1)
        return 0;
    if (fusemount_unmount(mountpoint, DOWN_UNMOUNT_TIMEOUT_MS) != 0) {
        fprintf(stderr,
                "tessera down: %s is still mounted; close what uses it (see: fuser -m "
                "%s) and run tessera down again\n",
                mountpoint, mountpoint);
        return -1;
    }
    printf("unmounted %s\n", mountpoint);
    return 1;
}

/*
 * Reports what a stopped group did and drops the pid files of the gone.
 * A mount process that ended by itself when its filesystem was unmounted
 * counts as stopped too.
 */
static int down_report(struct down_entry *entries, size_t count, size_t *stopped)
{
    int exit_code = 0;

    for (size_t i = 0; i < count; i++) {
        struct proc_target *target = &entries[i].target;
        if (target->killed && !target->stopped) {
            fprintf(stderr, "tessera down: %s (pid %d) survived SIGKILL\n", target->label,
                    (int)target->pid);
            exit_code = 1;
            continue;
        }
        if (target->killed)
            printf("killed %s (pid %d): it did not stop within %d s of SIGTERM\n", target->label,
                   (int)target->pid, DOWN_STOP_TIMEOUT_MS / 1000);
        else if (entries[i].was_running)
            printf("stopped %s (pid %d)\n", target->label, (int)target->pid);
        *stopped += entries[i].was_running;
        if (unlink(entries[i].pid_path) != 0 && errno != ENOENT)
            fprintf(stderr, "tessera down: cannot remove %s: %s\n", entries[i].pid_path,
                    strerror(errno));
    }
    return exit_code;
}

/* Stops the listed daemons group by group. Exit code; *stopped counts them. */
static int down_stop_all(struct down_list *list, size_t *stopped)
{
    int exit_code = 0;
    size_t first = 0;

    for (int group = 0; group < DOWN_GROUPS; group++) {
        size_t end = first;
        struct proc_target *targets;
        while (end < list->count && list->entries[end].group == (enum down_group)group)
            end++;
        if (end == first)
            continue;
        targets = calloc(end - first, sizeof(*targets));
        if (!targets)
            return 1;
        for (size_t i = first; i < end; i++)
            targets[i - first] = list->entries[i].target;
        proc_stop(targets, end - first, DOWN_STOP_TIMEOUT_MS);
        for (size_t i = first; i < end; i++)
            list->entries[i].target = targets[i - first];
        free(targets);
        if (down_report(list->entries + first, end - first, stopped) != 0)
            exit_code = 1;
        first = end;
    }
    return exit_code;
}

/* Opens an existing state directory for down; 1 = there is none. */
static int down_open_state(struct cluster *cluster, const char *state)
{
    char run_dir[PATH_MAX];
    struct stat st;
    int result = cluster_pick_state_dir(cluster, state, DOWN_WHO);

    if (result != 0)
        return -1;
    if (stat(cluster->state_dir, &st) != 0 && errno == ENOENT)
        return 1;
    if (cluster_resolve_state_dir(cluster, DOWN_WHO) != 0 ||
        fmt_into(run_dir, sizeof(run_dir), "%s/run", cluster->state_dir) != 0)
        return -1;
    result = util_mkdir_p(run_dir, 0755);
    if (result != 0) {
        fprintf(stderr, "tessera down: cannot create %s: %s\n", run_dir, strerror(-result));
        return -1;
    }
    return cluster_lock(cluster, DOWN_WHO) == 0 ? 0 : -1;
}

/*
 * The mountpoint from cluster.conf (STATE/mnt if it names none). A broken
 * cluster.conf must not keep `down` from stopping the daemons, so its
 * errors are only reported.
 */
static int down_mountpoint(struct cluster *cluster)
{
    int result;

    clusterconf_defaults(&cluster->conf);
    result = clusterconf_load(&cluster->conf, cluster->state_dir);
    if (result != 0 && result != -ENOENT && result != -EINVAL)
        fprintf(stderr, "tessera down: cannot read %s/%s: %s\n", cluster->state_dir,
                CLUSTERCONF_FILE, strerror(-result));
    if (cluster->conf.mount[0] == '\0')
        return fmt_into(cluster->conf.mount, sizeof(cluster->conf.mount), "%s/mnt",
                        cluster->state_dir);
    return 0;
}

int down_main(int argc, char **argv)
{
    struct cluster cluster;
    struct down_list list = {NULL, 0, 0};
    const char *state = NULL;
    size_t stopped = 0;
    int unmounted = 0;
    int result;
    int exit_code = down_parse(argc, argv, &state);

    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    cluster_init(&cluster);
    exit_code = down_open_state(&cluster, state);
    if (exit_code == 1) {
        printf("no tessera cluster in %s; nothing to stop\n", cluster.state_dir);
        exit_code = 0;
        goto out;
    }
    if (exit_code != 0 || down_mountpoint(&cluster) != 0) {
        exit_code = 1;
        goto out;
    }
    result = down_collect(cluster.state_dir, &list);
    if (result != 0) {
        fprintf(stderr, "tessera down: cannot list %s/run: %s\n", cluster.state_dir,
                strerror(-result));
        exit_code = 1;
        goto out;
    }
    unmounted = down_unmount(cluster.conf.mount);
    exit_code = down_stop_all(&list, &stopped);
    if (unmounted < 0)
        exit_code = 1;
    if (stopped == 0 && unmounted == 0 && exit_code == 0)
        printf("nothing was running in %s\n", cluster.state_dir);
out:
    free(list.entries);
    cluster_free(&cluster);
    return exit_code;
}
