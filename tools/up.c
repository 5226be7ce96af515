/*
 * @file up.c
 * `tessera up`. It works in three phases, meta, then the datanodes, then
 * the mount; each phase starts what is not running and waits, with a
 * deadline, until every daemon of the phase is ready, checking all along
 * that the ones it started are still alive. Readiness is observed, never
 * assumed: meta answers PING; meta's NODE_LIST shows the datanode's address
 * up, with a heartbeat newer than the start of the process (so a dead
 * node's last heartbeat does not count); the mountpoint is in
 * /proc/self/mountinfo as a fuse filesystem. If a phase fails, the daemons
 * this run started are stopped again, so a failed `up` leaves the cluster
 * as it found it.
 */
#include "up.h"

#include "bindir.h"
#include "cliargs.h"
#include "cluster.h"
#include "curve.h"
#include "clusterconf.h"
#include "conffile.h"
#include "fmt.h"
#include "fusemount.h"
#include "keysdir.h"
#include "log.h"
#include "toolkey.h"
#include "toolmeta.h"
#include "proc.h"
#include "status.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define UP_READY_TIMEOUT_MS 20000
#define UP_STOP_TIMEOUT_MS 10000
#define UP_POLL_MS 50
#define UP_PROBE_TIMEOUT_MS 500
#define UP_LOG_TAIL_LINES 20
#define UP_WHO "tessera up"

struct up_options {
    const char *state;        /* --state, NULL = the default */
    struct clusterconf given; /* the values of the flags below */
    bool has_nodes, has_port, has_host, has_mount, has_io_timeout, has_log_level;
    bool no_mount;
    bool allow_other;
    long ready_timeout_ms;
    const char *replace_after; /* tessera-meta --replace-after, NULL = its default */
    bool insecure;             /* --insecure: no keys, plain ZeroMQ */
};

enum up_option {
    UP_NODES = 256,
    UP_MOUNT,
    UP_STATE,
    UP_PORT,
    UP_HOST,
    UP_IO_TIMEOUT,
    UP_NO_MOUNT,
    UP_ALLOW_OTHER,
    UP_LOG_LEVEL,
    UP_READY_TIMEOUT,
    UP_REPLACE_AFTER,
    UP_INSECURE,
};

static void up_usage(FILE *out)
{
    fprintf(out,
            "Usage: tessera up [--nodes N] [--mount DIR] [--state DIR] [--port BASE]\n"
            "                  [--host ADDR] [--io-timeout-ms MS] [--no-mount] [--allow-other]\n"
            "                  [--log-level L] [--ready-timeout-ms MS] [--replace-after T]\n"
            "                  [--insecure]\n"
            "\n"
            "Starts a Tessera cluster on this machine: tessera-meta, N tessera-datanode and a\n"
            "tessera-mount, and waits until each one serves. Daemons already running are left\n"
            "alone, so after a crash `tessera up --state DIR` restarts only what is missing.\n"
            "Settings are saved in STATE/cluster.conf; flags override them and are saved.\n"
            "\n"
            "  --nodes N              datanodes (default %d)\n"
            "  --mount DIR            mountpoint, created if missing (default STATE/mnt)\n"
            "  --state DIR            state directory (default: $TESSERA_STATE, else\n"
            "                         $XDG_STATE_HOME/tessera, else ~/.local/state/tessera)\n"
            "  --port BASE            meta's port; datanode i uses BASE+i (default %d)\n"
            "  --host ADDR            address to listen on (default %s)\n"
            "  --io-timeout-ms MS     the mount's datanode I/O timeout (default %d)\n"
            "  --no-mount             start meta and datanodes only\n"
            "  --allow-other          let other users use the mount (always on for root)\n"
            "  --log-level L          error, warn, info or debug for meta and datanodes\n"
            "  --ready-timeout-ms MS  how long each daemon may take to get ready (default %d)\n"
            "  --replace-after T      tessera-meta --replace-after for the meta this run\n"
            "                         starts (not saved): a datanode down this long has its\n"
            "                         replicas made again elsewhere (default 10m)\n"
            "  --insecure             no keys: plain ZeroMQ, anyone who reaches a port owns\n"
            "                         the filesystem (default: CURVE with the keys in\n"
            "                         STATE/keys, made on the first start; see tessera keys)\n"
            "  -h, --help             this help\n"
            "\n"
            "Logs are appended to STATE/logs/<daemon>.log, pids kept in STATE/run/; each\n"
            "daemon starts with --config STATE/conf/<daemon>.conf, written at each start.\n"
            "Exit status: 0 all ready, 1 a daemon failed (what this run started is stopped\n"
            "again), 2 usage error.\n",
            CLUSTERCONF_DEFAULT_NODES, CLUSTERCONF_DEFAULT_PORT, CLUSTERCONF_DEFAULT_HOST,
            CLUSTERCONF_DEFAULT_IO_TIMEOUT_MS, UP_READY_TIMEOUT_MS);
}

static int up_usage_error(const char *message, const char *arg)
{
    return cliargs_usage_error(UP_WHO, message, arg);
}

/* Stores one numeric flag; returns CLIARGS_GO_ON, or 2 after a usage error. */
static int up_parse_number(const char *flag, const char *text, long min, long max, long *value,
                           bool *has)
{
    char message[128];
    if (util_parse_long(text, min, max, value) != 0) {
        snprintf(message, sizeof(message), "%s wants a number in %ld..%ld, got", flag, min, max);
        return up_usage_error(message, text);
    }
    *has = true;
    return CLIARGS_GO_ON;
}

/*
 * True when text can be saved as one cluster.conf value: no control
 * characters (a newline would end the line), and no spaces if `word`.
 */
static bool up_text_savable(const char *text, bool word)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (iscntrl(*c) || (word && isspace(*c)))
            return false;
    }
    return true;
}

/* Stores one text flag; returns CLIARGS_GO_ON, or 2 after a usage error. */
static int up_parse_text(const char *flag, const char *text, char *out, size_t cap, bool *has)
{
    char message[128];
    if (!up_text_savable(text, strcmp(flag, "--mount") != 0)) {
        snprintf(message, sizeof(message), "%s cannot contain %s, got", flag,
                 strcmp(flag, "--mount") != 0 ? "spaces or control characters"
                                              : "control characters");
        return up_usage_error(message, text);
    }
    if (!*text || fmt_into(out, cap, "%s", text) != 0) {
        snprintf(message, sizeof(message),
                 "%s wants a non-empty value shorter than %zu bytes,"
                 " got",
                 flag, cap);
        return up_usage_error(message, text);
    }
    *has = true;
    return CLIARGS_GO_ON;
}

static int up_parse_log_level(const char *text, struct up_options *options)
{
    enum log_level level;
    if (log_level_parse(text, &level) != 0)
        return up_usage_error("--log-level wants error, warn, info or debug, got", text);
    return up_parse_text("--log-level", text, options->given.log_level,
                         sizeof(options->given.log_level), &options->has_log_level);
}

/* Takes one option (cliargs.h): CLIARGS_GO_ON, CLIARGS_NOT_MINE or an exit code. */
static int up_take(void *ctx, int option, const char *value)
{
    struct up_options *options = ctx;
    struct clusterconf *given = &options->given;
    bool ignored;

    switch (option) {
    case UP_NODES:
        return up_parse_number("--nodes", value, 1, CLUSTERCONF_MAX_NODES, &given->nodes,
                               &options->has_nodes);
    case UP_PORT:
        return up_parse_number("--port", value, 1, 65535, &given->port, &options->has_port);
    case UP_IO_TIMEOUT:
        return up_parse_number("--io-timeout-ms", value, 1, 3600000, &given->io_timeout_ms,
                               &options->has_io_timeout);
    case UP_REPLACE_AFTER: options->replace_after = value; return CLIARGS_GO_ON;
    case UP_READY_TIMEOUT:
        return up_parse_number("--ready-timeout-ms", value, 100, 3600000,
                               &options->ready_timeout_ms, &ignored);
    case UP_MOUNT:
        return up_parse_text("--mount", value, given->mount, sizeof(given->mount),
                             &options->has_mount);
    case UP_HOST:
        return up_parse_text("--host", value, given->host, sizeof(given->host),
                             &options->has_host);
    case UP_STATE: options->state = value; return CLIARGS_GO_ON;
    case UP_LOG_LEVEL: return up_parse_log_level(value, options);
    case UP_NO_MOUNT: options->no_mount = true; return CLIARGS_GO_ON;
    case UP_ALLOW_OTHER: options->allow_other = true; return CLIARGS_GO_ON;
    case UP_INSECURE: options->insecure = true; return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

/* Parses argv; returns CLIARGS_GO_ON, else the exit code. */
static int up_parse(int argc, char **argv, struct up_options *options)
{
    static const struct option long_options[] = {
        {"nodes", required_argument, NULL, UP_NODES},
        {"mount", required_argument, NULL, UP_MOUNT},
        {"state", required_argument, NULL, UP_STATE},
        {"port", required_argument, NULL, UP_PORT},
        {"host", required_argument, NULL, UP_HOST},
        {"io-timeout-ms", required_argument, NULL, UP_IO_TIMEOUT},
        {"no-mount", no_argument, NULL, UP_NO_MOUNT},
        {"allow-other", no_argument, NULL, UP_ALLOW_OTHER},
        {"log-level", required_argument, NULL, UP_LOG_LEVEL},
        {"ready-timeout-ms", required_argument, NULL, UP_READY_TIMEOUT},
        {"replace-after", required_argument, NULL, UP_REPLACE_AFTER},
        {"insecure", no_argument, NULL, UP_INSECURE},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {UP_WHO, up_usage, long_options, up_take};
    int operands;
    int exit_code;

    memset(options, 0, sizeof(*options));
    options->ready_timeout_ms = UP_READY_TIMEOUT_MS;
    exit_code = cliargs_parse(&command, argc, argv, options, &operands);
    if (exit_code == CLIARGS_GO_ON)
        exit_code = cliargs_no_operands(UP_WHO, argc, argv, operands);
    return exit_code;
}

/* ---- configuration -------------------------------------------------- */

/* Creates STATE, STATE/run, STATE/logs and STATE/conf, resolves STATE, locks it. */
static int up_open_state(struct cluster *cluster, const struct up_options *options)
{
    static const char *const subdirs[] = {"run", "logs", "conf"};
    char path[PATH_MAX];
    int result = cluster_pick_state_dir(cluster, options->state, UP_WHO);

    if (result != 0)
        return result;
    result = util_mkdir_p(cluster->state_dir, 0755);
    if (result == 0)
        result = cluster_resolve_state_dir(cluster, UP_WHO);
    for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]) && result == 0; i++) {
        result = fmt_into(path, sizeof(path), "%s/%s", cluster->state_dir, subdirs[i]);
        if (result == 0)
            result = util_mkdir_p(path, 0755);
    }
    if (result != 0) {
        fprintf(stderr, "tessera up: cannot create the state directory %s: %s\n",
                cluster->state_dir, strerror(-result));
        return result;
    }
    return cluster_lock(cluster, UP_WHO);
}

/* Reads cluster.conf (or the defaults); the mount defaults to STATE/mnt. */
static int up_load_conf(struct cluster *cluster)
{
    int result;

    clusterconf_defaults(&cluster->conf);
    result = clusterconf_load(&cluster->conf, cluster->state_dir);
    if (result == -EINVAL)
        return result;
    if (result != 0 && result != -ENOENT) {
        fprintf(stderr, "tessera up: cannot read %s/%s: %s\n", cluster->state_dir, CLUSTERCONF_FILE,
                strerror(-result));
        return result;
    }
    if (cluster->conf.mount[0] == '\0')
        return fmt_into(cluster->conf.mount, sizeof(cluster->conf.mount), "%s/mnt",
                        cluster->state_dir);
    return 0;
}

/* Creates the --mount directory and stores its absolute path in conf. */
static int up_given_mount(const char *given, struct clusterconf *conf)
{
    int result = util_mkdir_p(given, 0755);

    if (result == -EEXIST || result == -ENOTCONN)
        result = 0; /* a stale FUSE mount is dealt with before mounting */
    if (result == 0)
        result = fusemount_canonical_path(given, conf->mount, sizeof(conf->mount));
    if (result != 0)
        fprintf(stderr, "tessera up: cannot create the mountpoint %s: %s\n", given,
                strerror(-result));
    return result;
}

/* The saved settings with the given flags applied over them. */
static int up_apply_flags(const struct up_options *options, struct clusterconf *conf)
{
    const struct clusterconf *given = &options->given;

    if (options->has_nodes)
        conf->nodes = given->nodes;
    if (options->has_port)
        conf->port = given->port;
    if (options->has_io_timeout)
        conf->io_timeout_ms = given->io_timeout_ms;
    if (options->has_host)
        snprintf(conf->host, sizeof(conf->host), "%s", given->host);
    if (options->has_log_level)
        snprintf(conf->log_level, sizeof(conf->log_level), "%s", given->log_level);
    if (options->has_mount)
        return up_given_mount(given->mount, conf);
    return 0;
}

/*
 * A running cluster cannot move: refuses new settings that would orphan a
 * running daemon (another port or host, another mountpoint, fewer nodes).
 * `cluster` still describes the saved settings. 0 or -EINVAL (printed).
 */
static int up_check_running(struct cluster *cluster, const struct clusterconf *wanted)
{
    const struct clusterconf *saved = &cluster->conf;
    const char *state = cluster->state_dir;

    if (saved->port != wanted->port || strcmp(saved->host, wanted->host) != 0) {
        fprintf(stderr,
                "tessera up: the cluster in %s is running on %s port %ld; stop it with "
                "tessera down --state %s before changing --host or --port\n",
                state, saved->host, saved->port, state);
        return -EINVAL;
    }
    if (cluster_mount(cluster)->pid > 0 && strcmp(saved->mount, wanted->mount) != 0) {
        fprintf(stderr,
                "tessera up: the cluster in %s is mounted at %s; stop it with "
                "tessera down --state %s before changing --mount\n",
                state, saved->mount, state);
        return -EINVAL;
    }
    for (long node = wanted->nodes + 1; node <= saved->nodes; node++) {
        if (cluster->daemons[node].pid > 0) {
            fprintf(stderr,
                    "tessera up: node%ld of the cluster in %s is running; stop it with "
                    "tessera down --state %s before lowering --nodes\n",
                    node, state, state);
            return -EINVAL;
        }
    }
    return 0;
}

/*
 * Settles the cluster's settings: saved ones, flags over them, checked
 * against what runs, and builds the daemon table. Returns the exit code
 * (0 to go on).
 */
static int up_configure(const struct up_options *options, struct cluster *cluster)
{
    struct clusterconf wanted;
    int result = up_open_state(cluster, options);

    if (result == 0)
        result = up_load_conf(cluster);
    if (result != 0)
        return 1;
    wanted = cluster->conf;
    if (up_apply_flags(options, &wanted) != 0 || clusterconf_check(&wanted, UP_WHO) != 0)
        return 1;
    if (cluster_daemons_init(cluster) != 0)
        goto too_long;
    cluster_find_running(cluster);
    if (cluster_any_running(cluster) && up_check_running(cluster, &wanted) != 0)
        return 1;
    cluster->conf = wanted;
    if (cluster_daemons_init(cluster) != 0)
        goto too_long;
    cluster_find_running(cluster);
    return 0;

too_long:
    fprintf(stderr, "tessera up: a path under %s is too long\n", cluster->state_dir);
    return 1;
}

/* Finds the binary of every daemon that must be started. Exit code. */
static int up_find_binaries(struct cluster *cluster, const struct up_options *options)
{
    for (size_t i = 0; i < cluster->count; i++) {
        struct cluster_daemon *daemon = &cluster->daemons[i];
        if (daemon->pid > 0 || (daemon->role == CLUSTER_MOUNT && options->no_mount))
            continue;
        if (bindir_find(daemon->binary_name, daemon->binary, sizeof(daemon->binary)) != 0)
            return 1;
    }
    return 0;
}

/*
 * 0 when HOST:PORT can be bound now, -EADDRINUSE when another process
 * listens there. Anything else (a host that does not resolve, "*") is left
 * for the daemon itself to report.
 */
static int up_port_free(const char *host, long port)
{
    struct addrinfo hints;
    struct addrinfo *info = NULL;
    char service[16];
    int result = 0;
    int one = 1;
    int fd;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(service, sizeof(service), "%ld", port);
    if (getaddrinfo(host, service, &hints, &info) != 0)
        return 0;
    fd = socket(info->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        /* As ZeroMQ does, so a port in TIME_WAIT counts as free. */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, info->ai_addr, info->ai_addrlen) != 0 && errno == EADDRINUSE)
            result = -EADDRINUSE;
        close(fd);
    }
    freeaddrinfo(info);
    return result;
}

/*
 * Before starting anything: every port a daemon to start will listen on
 * must be free. Without this, a meta that cannot bind might look ready
 * because another cluster's meta answers the PING. Exit code.
 */
static int up_check_ports(struct cluster *cluster)
{
    const struct clusterconf *conf = &cluster->conf;

    for (size_t i = 0; i + 1 < cluster->count; i++) {
        const struct cluster_daemon *daemon = &cluster->daemons[i];
        long port = conf->port + (long)i;
        if (daemon->pid > 0 || up_port_free(conf->host, port) == 0)
            continue;
        fprintf(stderr,
                "tessera up: port %ld on %s (for %s) is in use by another process; pick "
                "another --port or stop that process (see: ss -ltnp 'sport = :%ld')\n",
                port, conf->host, daemon->label, port);
        return 1;
    }
    return 0;
}

/* Saves the settings, so a later `up --state S` alone restarts this cluster. */
static int up_save_conf(struct cluster *cluster)
{
    int result = clusterconf_save(&cluster->conf, cluster->state_dir);
    if (result != 0) {
        fprintf(stderr, "tessera up: cannot write %s/%s: %s\n", cluster->state_dir,
                CLUSTERCONF_FILE, strerror(-result));
        return 1;
    }
    return 0;
}

/* Creates each daemon's data directory. Exit code. */
static int up_make_data_dirs(struct cluster *cluster)
{
    for (size_t i = 0; i < cluster->count; i++) {
        const char *dir = cluster->daemons[i].data_dir;
        int result = dir[0] ? util_mkdir_p(dir, 0755) : 0;
        if (result != 0) {
            fprintf(stderr, "tessera up: cannot create %s: %s\n", dir, strerror(-result));
            return 1;
        }
    }
    return 0;
}

/* ---- starting ------------------------------------------------------- */

static volatile sig_atomic_t up_interrupted;

static void up_on_signal(int signal_number)
{
    (void)signal_number;
    up_interrupted = 1;
}

/* Ctrl-C during `up` stops what it started instead of leaving it half up. */
static void up_catch_signals(void)
{
    struct sigaction action;

    memset(&action, 0, sizeof(action));
    action.sa_handler = up_on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGHUP, &action, NULL);
}

/*
 * The mount's -o options. default_permissions lets the kernel check modes;
 * allow_other lets other users in, which also makes sense whenever root
 * mounts (root's mount would otherwise be closed to every user).
 */
static void up_mount_options(const struct up_options *options, char *out, size_t cap)
{
    bool allow_other = options->allow_other || geteuid() == 0;
    snprintf(out, cap, "default_permissions%s", allow_other ? ",allow_other" : "");
}

/* Writes "key = value"; false (said so) when the value cannot be written in a file. */
static bool up_key(FILE *out, const char *path, const char *key, const char *value)
{
    if (conffile_write_key(out, key, value) == 0)
        return true;
    fprintf(stderr,
            "%s: cannot write %s = '%s' into %s (spaces at its ends, ' ;' or a line break)\n",
            UP_WHO, key, value, path);
    return false;
}

/*
 * Writes a daemon's configuration file, STATE/conf/LABEL.conf, the same
 * kind an operator writes for /etc/tessera (conffile.h): what the cluster
 * conventions fix. The datanode's machine is left to its default, the
 * hostname, so that a local cluster's nodes and mount all count as this
 * one machine. Rewritten at every start. 0 or -errno (printed).
 */
static int up_write_config(const struct cluster *cluster, const struct cluster_daemon *daemon,
                           const struct up_options *options, char *path, size_t cap)
{
    static const char *const sections[] = {
        [CLUSTER_META] = "meta", [CLUSTER_NODE] = "datanode", [CLUSTER_MOUNT] = "mount"};
    char key_path[PATH_MAX + 64];
    char text[64];
    FILE *out;
    bool ok;

    if (fmt_into(path, cap, "%s/conf/%s.conf", cluster->state_dir, daemon->label) != 0)
        return -ENAMETOOLONG;
    out = fopen(path, "we");
    if (!out) {
        int err = errno;
        fprintf(stderr, "%s: cannot write %s: %s\n", UP_WHO, path, strerror(err));
        return -err;
    }
    ok = fprintf(out, "# %s's configuration, written by tessera up at every start.\n[%s]\n",
                 daemon->label, sections[daemon->role]) > 0;
    if (cluster->keys_dir[0]) {
        snprintf(key_path, sizeof(key_path), "%s/%s.key", cluster->keys_dir, daemon->label);
        ok = ok && up_key(out, path, "key", key_path);
    } else if (daemon->role != CLUSTER_MOUNT && options->insecure) {
        ok = ok && up_key(out, path, "insecure", "true");
    }
    if (daemon->role == CLUSTER_MOUNT) {
        snprintf(text, sizeof(text), "%ld", cluster->conf.io_timeout_ms);
        ok = ok && up_key(out, path, "meta", cluster->meta_endpoint) &&
             up_key(out, path, "io-timeout-ms", text);
        up_mount_options(options, text, sizeof(text));
        ok = ok && up_key(out, path, "fuse-options", text) &&
             (!daemon->replaces_dead || up_key(out, path, "replace-dead", "true")) &&
             up_key(out, path, "mountpoint", daemon->address);
    } else {
        ok = ok && up_key(out, path, "listen", daemon->address) &&
             (daemon->role != CLUSTER_NODE || up_key(out, path, "meta", cluster->meta_endpoint)) &&
             up_key(out, path, "data", daemon->data_dir) &&
             up_key(out, path, "log-level", cluster->conf.log_level) &&
             (daemon->role != CLUSTER_META || !options->replace_after ||
              up_key(out, path, "replace-after", options->replace_after));
    }
    if (fclose(out) != 0 && ok) {
        fprintf(stderr, "%s: cannot write %s: %s\n", UP_WHO, path, strerror(errno));
        ok = false;
    }
    return ok ? 0 : -EINVAL;
}

/* Starts one daemon from its configuration file and writes its pid file. 0 or -errno (printed). */
static int up_start(struct cluster *cluster, struct cluster_daemon *daemon,
                    const struct up_options *options)
{
    char config_path[PATH_MAX];
    int result;

    /* up_find_binaries() skipped it if it was running then: it may have died since
     * (a killed mount that `up` replaces at once). */
    if (!daemon->binary[0] &&
        bindir_find(daemon->binary_name, daemon->binary, sizeof(daemon->binary)) != 0)
        return -ENOENT;
    result = up_write_config(cluster, daemon, options, config_path, sizeof(config_path));
    if (result != 0)
        return result;
    /* The mount stays in the foreground (this pid is the one to stop); its
     * mountpoint, in the file too, is also named where ps shows it. */
    char *argv[] = {daemon->binary, "--" CONFFILE_FLAG, config_path, NULL, NULL, NULL};
    if (daemon->role == CLUSTER_MOUNT) {
        argv[3] = "-f";
        argv[4] = daemon->address;
    }
    result = proc_spawn(argv, daemon->log_path, &daemon->pid);
    if (result != 0) {
        fprintf(stderr, "tessera up: cannot start %s: %s\n", daemon->label, strerror(-result));
        return result;
    }
    daemon->started = true;
    daemon->started_ms = util_monotonic_ms();
    result = proc_pidfile_write(daemon->pid_path, daemon->pid);
    if (result != 0)
        fprintf(stderr, "tessera up: cannot write %s: %s\n", daemon->pid_path, strerror(-result));
    return result;
}

/* ---- readiness ------------------------------------------------------ */

static void up_probe_meta(struct cluster *cluster, struct cluster_daemon *meta)
{
    if (toolmeta_ping(cluster->meta_client, UP_PROBE_TIMEOUT_MS) == TS_OK)
        meta->ready = true;
}

/*
 * A datanode is ready when meta lists its address as up. For one started
 * by this run, the last heartbeat must also be younger than the process,
 * or the entry might still be the dead predecessor's.
 */
static bool up_node_listed(const struct cluster_daemon *daemon, const struct toolmeta_node *node,
                           int64_t now_ms)
{
    if (node->state != TS_NODE_UP || strcmp(node->address, daemon->address) != 0)
        return false;
    return !daemon->started || (int64_t)node->heartbeat_age_ms < now_ms - daemon->started_ms;
}

static void up_probe_nodes(struct cluster *cluster, size_t first, size_t last)
{
    struct toolmeta_node *nodes = NULL;
    size_t count = 0;
    int64_t now_ms = util_monotonic_ms();

    if (toolmeta_node_list(cluster->meta_client, UP_PROBE_TIMEOUT_MS, &nodes, &count, NULL, 0) !=
        TS_OK)
        return;
    for (size_t i = first; i <= last; i++) {
        struct cluster_daemon *daemon = &cluster->daemons[i];
        for (size_t n = 0; n < count && !daemon->ready; n++)
            daemon->ready = up_node_listed(daemon, &nodes[n], now_ms);
    }
    free(nodes);
}

/* Mounted, and not (still) the dead mount the new one replaces. */
static void up_probe_mount(struct cluster_daemon *mount)
{
    uint64_t id;

    mount->ready = fusemount_is_mounted(mount->address) == 1;
    if (mount->ready && mount->replaces_dead)
        mount->ready = fusemount_mount_id(mount->address, &id) == 0 && id != mount->dead_mount_id;
}

static void up_probe(struct cluster *cluster, size_t first, size_t last)
{
    struct cluster_daemon *daemon = &cluster->daemons[first];

    if (daemon->role == CLUSTER_META)
        up_probe_meta(cluster, daemon);
    else if (daemon->role == CLUSTER_NODE)
        up_probe_nodes(cluster, first, last);
    else
        up_probe_mount(daemon);
}

/* What readiness means for a daemon, for the timeout message. */
static void up_ready_condition(const struct cluster_daemon *daemon, char *out, size_t cap)
{
    if (daemon->role == CLUSTER_META)
        snprintf(out, cap, "no reply to PING at %s", daemon->address);
    else if (daemon->role == CLUSTER_NODE)
        snprintf(out, cap, "tessera-meta does not list %s as up", daemon->address);
    else
        snprintf(out, cap, "%s is not a fuse mount in /proc/self/mountinfo", daemon->address);
}

static void up_show_log(const struct cluster_daemon *daemon)
{
    fprintf(stderr, "last lines of %s:\n", daemon->log_path);
    if (proc_log_tail(daemon->log_path, UP_LOG_TAIL_LINES, "    ", stderr) != 0)
        fprintf(stderr, "    (no log)\n");
}

/* Returns the first daemon of the range that died, NULL if none. */
static struct cluster_daemon *up_find_dead(struct cluster *cluster, size_t first, size_t last,
                                           int *wait_status)
{
    for (size_t i = first; i <= last; i++) {
        struct cluster_daemon *daemon = &cluster->daemons[i];
        if (proc_has_exited(daemon->pid, daemon->binary_name, wait_status))
            return daemon;
    }
    return NULL;
}

static void up_report_dead(struct cluster_daemon *daemon, int wait_status)
{
    char how[128];

    proc_describe_exit(wait_status, how, sizeof(how));
    fprintf(stderr, "tessera up: %s (%s, pid %d) %s before it was ready\n", daemon->label,
            daemon->binary_name, (int)daemon->pid, how);
    up_show_log(daemon);
    daemon->pid = 0; /* gone: nothing left to stop */
}

static void up_report_timeout(struct cluster *cluster, size_t first, size_t last, long timeout_ms)
{
    char condition[PATH_MAX + 64];

    for (size_t i = first; i <= last; i++) {
        struct cluster_daemon *daemon = &cluster->daemons[i];
        if (daemon->ready)
            continue;
        up_ready_condition(daemon, condition, sizeof(condition));
        fprintf(stderr, "tessera up: %s (%s, pid %d) is not ready after %ld ms: %s\n",
                daemon->label, daemon->binary_name, (int)daemon->pid, timeout_ms, condition);
        up_show_log(daemon);
    }
}

static bool up_all_ready(const struct cluster *cluster, size_t first, size_t last)
{
    for (size_t i = first; i <= last; i++) {
        if (!cluster->daemons[i].ready)
            return false;
    }
    return true;
}

/*
 * Waits until daemons[first..last] are all ready, for at most timeout_ms.
 * Returns 0, or -1 after saying which daemon failed and showing its log.
 */
static int up_wait_ready(struct cluster *cluster, size_t first, size_t last, long timeout_ms)
{
    int64_t deadline = util_monotonic_ms() + timeout_ms;
    struct cluster_daemon *dead;
    int wait_status;

    for (;;) {
        if (up_interrupted) {
            fprintf(stderr, "tessera up: interrupted\n");
            return -1;
        }
        dead = up_find_dead(cluster, first, last, &wait_status);
        if (dead) {
            up_report_dead(dead, wait_status);
            return -1;
        }
        up_probe(cluster, first, last);
        if (up_all_ready(cluster, first, last))
            return 0;
        if (util_monotonic_ms() >= deadline) {
            up_report_timeout(cluster, first, last, timeout_ms);
            return -1;
        }
        proc_sleep_ms(UP_POLL_MS);
    }
}

/* Starts what is not running in daemons[first..last], then waits for all. */
static int up_phase(struct cluster *cluster, size_t first, size_t last,
                    const struct up_options *options)
{
    for (size_t i = first; i <= last; i++) {
        if (cluster->daemons[i].pid == 0 && up_start(cluster, &cluster->daemons[i], options) != 0)
            return -1;
    }
    return up_wait_ready(cluster, first, last, options->ready_timeout_ms);
}

/*
 * Whether the FUSE mount on top of the mountpoint, whose source is
 * `source`, is a dead one: this cluster's own (its source names this meta
 * and this cluster's mount process is gone, so it is dead even while the
 * kernel still answers stat from its cache, or the dying process has not
 * closed its connection yet), or any mount whose process is gone (stat
 * fails with ENOTCONN).
 */
static bool up_mount_is_dead(const struct cluster *cluster, const char *path, const char *source)
{
    char own_source[CLUSTER_ENDPOINT_MAX + 16];

    snprintf(own_source, sizeof(own_source), "tessera:%s", cluster->meta_endpoint);
    return strcmp(source, own_source) == 0 || fusemount_is_stale(path);
}

/*
 * Clears the way for a new mount (this cluster's mount process is not
 * running). A dead FUSE mount is never detached before the new mount
 * exists, as a writer would write into the bare directory in between: as
 * root, the new mount goes beneath it and tessera-mount detaches it
 * (--replace-dead, see fuse/beneath.h). fusermount3, which a normal user
 * mounts with, cannot mount on a dead mount (it stats the mountpoint) nor
 * beneath one, so for a normal user it is detached first, as before. A live
 * foreign mount is an error.
 */
static int up_prepare_mountpoint(struct cluster *cluster, struct cluster_daemon *mount)
{
    const char *path = mount->address;
    char source[PATH_MAX];
    int result;

    mount->replaces_dead = false;
    if (fusemount_source(path, source, sizeof(source)) == 1) {
        if (!up_mount_is_dead(cluster, path, source)) {
            fprintf(stderr,
                    "tessera up: %s is already a FUSE mount (%s) that this cluster did not "
                    "start; unmount it first: fusermount3 -u %s\n",
                    path, source, path);
            return -EBUSY;
        }
        if (geteuid() == 0 && fusemount_mount_id(path, &mount->dead_mount_id) == 0) {
            fprintf(stderr, "tessera up: %s is a dead FUSE mount; mounting beneath it\n", path);
            mount->replaces_dead = true;
            return 0;
        }
        fprintf(stderr, "tessera up: %s is a dead FUSE mount; detaching it\n", path);
        if (fusemount_detach(path) != 0)
            return -EIO;
    }
    result = util_mkdir_p(path, 0755);
    if (result != 0)
        fprintf(stderr, "tessera up: cannot create the mountpoint %s: %s\n", path,
                strerror(-result));
    return result;
}

/*
 * A mount process killed a moment ago may still look alive: waits (up to
 * UP_STOP_TIMEOUT_MS) until it is gone, so that its mount counts as dead.
 */
static void up_forget_dying_mount(struct cluster_daemon *mount)
{
    int64_t deadline = util_monotonic_ms() + UP_STOP_TIMEOUT_MS;

    if (mount->pid <= 0 || !proc_is_dying(mount->pid))
        return;
    while (proc_is_running(mount->pid, mount->binary_name) && util_monotonic_ms() < deadline)
        proc_sleep_ms(UP_POLL_MS / 5);
    if (!proc_is_running(mount->pid, mount->binary_name))
        mount->pid = 0;
}

static int up_mount_phase(struct cluster *cluster, const struct up_options *options)
{
    struct cluster_daemon *mount = cluster_mount(cluster);
    size_t index = cluster->count - 1;

    up_forget_dying_mount(mount);

    if (mount->pid == 0 && up_prepare_mountpoint(cluster, mount) != 0)
        return -1;
    return up_phase(cluster, index, index, options);
}

/* ---- undo and summary ----------------------------------------------- */

static struct proc_target up_target(const struct cluster_daemon *daemon)
{
    return (struct proc_target){
        .pid = daemon->pid, .name = daemon->binary_name, .label = daemon->label};
}

/* Stops the daemons this run started (the mount first). */
static void up_stop_started(struct cluster *cluster)
{
    struct proc_target *targets = calloc(cluster->count, sizeof(*targets));
    struct cluster_daemon *mount = cluster_mount(cluster);
    size_t count = 0;

    if (!targets)
        return;
    if (mount->started && mount->pid > 0) {
        targets[0] = up_target(mount);
        proc_stop(targets, 1, UP_STOP_TIMEOUT_MS);
    }
    if (mount->started && fusemount_is_mounted(mount->address) == 1)
        fusemount_detach(mount->address);
    for (size_t i = cluster->count - 1; i-- > 0;) {
        struct cluster_daemon *daemon = &cluster->daemons[i];
        if (daemon->started && daemon->pid > 0)
            targets[count++] = up_target(daemon);
    }
    proc_stop(targets, count, UP_STOP_TIMEOUT_MS);
    free(targets);
}

static void up_abort(struct cluster *cluster)
{
    bool any = false;

    up_stop_started(cluster);
    for (size_t i = 0; i < cluster->count; i++) {
        struct cluster_daemon *daemon = &cluster->daemons[i];
        if (!daemon->started)
            continue;
        unlink(daemon->pid_path);
        fprintf(stderr, "%s%s",
                any ? ", " : "tessera up: stopped what this run started: ", daemon->label);
        any = true;
    }
    fprintf(stderr, any ? "\n" : "tessera up: nothing was started\n");
}

static const char *up_daemon_state(const struct cluster_daemon *daemon)
{
    return daemon->started ? "started" : "already running";
}

static void up_print_summary(struct cluster *cluster, const struct up_options *options)
{
    struct cluster_daemon *mount = cluster_mount(cluster);
    const char *state_flag = cluster->default_state ? "" : " --state ";
    const char *state_arg = cluster->default_state ? "" : cluster->state_dir;

    printf("tessera cluster in %s\n", cluster->state_dir);
    for (size_t i = 0; i + 1 < cluster->count; i++) {
        struct cluster_daemon *daemon = &cluster->daemons[i];
        printf("  %-7s %-24s %s (pid %d)\n", daemon->label, daemon->address,
               up_daemon_state(daemon), (int)daemon->pid);
    }
    if (mount->pid > 0)
        printf("  %-7s %-24s %s (pid %d)\n", mount->label, mount->address, up_daemon_state(mount),
               (int)mount->pid);
    else if (options->no_mount)
        printf("  %-7s %-24s not mounted (--no-mount)\n", mount->label, mount->address);
    printf("logs in %s/logs\n", cluster->state_dir);
    printf("next: tessera status%s%s\n", state_flag, state_arg);
    printf("      tessera down%s%s\n", state_flag, state_arg);
}

/*
 * The keys of this cluster in STATE/keys: made on its first start (the
 * server's, meta's, admin's, then one per datanode and for the mount, each
 * registered with its role), and admin's used by this process from here
 * on (not $TESSERA_KEY, which may be another cluster's). A cluster whose meta runs without keys is
 * left so (its daemons must agree), as is one started with --insecure. 0 or -errno (printed).
 */
static int up_keys(struct cluster *cluster, const struct up_options *options)
{
    char dir[PATH_MAX];
    char path[PATH_MAX + 64];
    char why[512];
    int result;

    cluster->keys_dir[0] = '\0';
    if (options->insecure)
        return 0;
    result = fmt_into(dir, sizeof(dir), "%s/keys", cluster->state_dir);
    if (result != 0)
        return result;
    if (!keysdir_exists(dir)) {
        if (cluster->daemons[0].pid > 0) {
            fprintf(stderr,
                    "tessera up: meta runs without keys (started before %s existed); "
                    "the cluster stays insecure until restarted with tessera down; "
                    "tessera up\n",
                    dir);
            return 0;
        }
        result = keysdir_init(dir, UP_WHO);
        if (result != 0)
            return result;
    }
    /* Keys made before tile tokens: add the secret, but only while meta is
     * down (datanodes with it would refuse writes meta did not sign). */
    if (cluster->daemons[0].pid <= 0) {
        result = keysdir_tile_secret(dir, false, UP_WHO);
        if (result != 0)
            return result;
    }
    for (size_t i = 0; i < cluster->count; i++) {
        const struct cluster_daemon *daemon = &cluster->daemons[i];
        const char *role = daemon->role == CLUSTER_META   ? "meta"
                           : daemon->role == CLUSTER_NODE ? "datanode"
                                                          : "mount";
        snprintf(path, sizeof(path), "%s/%s.key", dir, daemon->label);
        if (access(path, F_OK) == 0)
            continue;
        result = keysdir_add(dir, role, daemon->label, UP_WHO);
        if (result != 0)
            return result;
    }
    snprintf(cluster->keys_dir, sizeof(cluster->keys_dir), "%s", dir);
    if (toolkey_named())
        return 0; /* tessera --key FILE up: that key, or --state's admin key already */
    snprintf(path, sizeof(path), "%s/admin.key", dir);
    result = curve_use_key(path, why, sizeof(why));
    if (result != 0)
        fprintf(stderr, "tessera up: %s\n", why);
    return result;
}

/* The three phases; on failure, undoes what it started. Exit code. */
static int up_run(struct cluster *cluster, const struct up_options *options)
{
    size_t last_node = (size_t)cluster->conf.nodes;

    up_catch_signals();
    cluster->meta_client = rpc_client_new(cluster->meta_endpoint);
    if (!cluster->meta_client) {
        fprintf(stderr, "tessera up: cannot use endpoint %s\n", cluster->meta_endpoint);
        return 1;
    }
    if (up_phase(cluster, 0, 0, options) != 0)
        goto abort;
    if (up_phase(cluster, 1, last_node, options) != 0)
        goto abort;
    if (!options->no_mount && up_mount_phase(cluster, options) != 0)
        goto abort;
    up_print_summary(cluster, options);
    return 0;

abort:
    up_abort(cluster);
    return 1;
}

int up_main(int argc, char **argv)
{
    struct up_options options;
    struct cluster cluster;
    int exit_code = up_parse(argc, argv, &options);

    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    cluster_init(&cluster);
    exit_code = up_configure(&options, &cluster);
    if (exit_code == 0)
        exit_code = up_find_binaries(&cluster, &options);
    if (exit_code == 0)
        exit_code = up_check_ports(&cluster);
    if (exit_code == 0)
        exit_code = up_save_conf(&cluster);
    if (exit_code == 0)
        exit_code = up_make_data_dirs(&cluster);
    if (exit_code == 0)
        exit_code = up_keys(&cluster, &options) == 0 ? 0 : 1;
    if (exit_code == 0)
        exit_code = up_run(&cluster, &options);
    cluster_free(&cluster);
    return exit_code;
}
