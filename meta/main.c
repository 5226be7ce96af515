/*
 * @file main.c
 * tessera-meta: command line, signals, and the request loop.
 *
 * One request thread: a zmq_poll loop around rpc_server_handle_pending()
 * with a one-second timer for the housekeeping (notice datanodes that
 * stopped heartbeating, end the sessions of mounts that stopped renewing,
 * delete orphans; the store syncs itself on a thread of its own).
 * SIGTERM and SIGINT are blocked while ZeroMQ starts its I/O threads, so
 * they inherit the block and the signals always land on this thread,
 * interrupting zmq_poll.
 */
#include "conffile.h"
#include "tiletoken.h"
#include "curve.h"
#include "handlers.h"
#include "handlers_exports.h"
#include "layout.h"
#include "metametrics.h"
#include "log.h"
#include "readiness.h"
#include "repairer.h"
#include "rpc.h"
#include "service.h"
#include "util.h"
#include "version.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define META_DEFAULT_LISTEN "tcp://127.0.0.1:7400"
#define META_TICK_MS 1000
#define META_DEFAULT_CONFIG CONFFILE_DIR "/meta.conf"

struct meta_options {
    const char *listen;
    const char *data_dir;
    long node_timeout_ms;
    long mount_lease_ms;
    uint32_t placement; /* enum ts_placement: the cluster's default */
    long copies;        /* replicas per tile: the cluster's default */
    enum log_level log_level;
    int64_t replace_after_ms;
    uint64_t repair_bytes_per_sec; /* 0 = unlimited */
    bool repair;                   /* run the repairer (--no-repair: off) */
    const char *key_path;          /* --key FILE; NULL: no CURVE */
    bool insecure;                 /* --insecure: may listen beyond loopback without keys */
    const char *exports_path;      /* --exports FILE; NULL: DATA/exports (exports.h) */
    const char *tile_secret;       /* --tile-secret FILE; NULL: KEYDIR/tile.secret */
    const char *log_file;          /* --log-file FILE; NULL: stderr */
    const char *metrics;           /* --metrics [HOST:]PORT; NULL: no endpoint */
};

static volatile sig_atomic_t meta_stop_signal;

static void meta_on_signal(int signal_number)
{
    meta_stop_signal = signal_number;
}

static void meta_usage(FILE *out)
{
    fprintf(out,
            "usage: tessera-meta --data DIR [options]\n"
            "The Tessera metadata service: namespace, tile map and datanode registry,\n"
            "kept in an LMDB store in DIR.\n"
            "\n"
            "  --config FILE           read these options from FILE, an INI file with a\n"
            "                          [meta] section of `name = value` lines (flags win);\n"
            "                          default %s if it exists\n"
            "  --check-config          check the file and flags, then exit\n"
            "  --listen ENDPOINT       ZeroMQ endpoint to serve (default %s)\n"
            "  --data DIR              directory of the store (created if missing)\n"
            "  --node-timeout-ms MS    a datanode silent this long is down (default %d)\n"
            "  --mount-lease-ms MS     a mount that stops renewing its session for this long\n"
            "                          loses its opens, and unlinked files nobody else holds\n"
            "                          open are deleted; after a start, unlinked files are\n"
            "                          kept this long for mounts to announce their opens;\n"
            "                          keep it over twice the mounts' --meta-timeout-ms\n"
            "                          (default %d)\n"
            "  --placement POLICY      where new tiles go unless a file's layout says:\n"
            "                          dynamic (default), static or roundrobin\n"
            "  --copies N              replicas each tile keeps unless a file's layout says\n"
            "                          (user.tessera.layout copies=N): 1 to %d, on distinct\n"
            "                          machines, then distinct datanodes (default %d)\n"
            "  --replace-after TIME    a datanode down this long has its replicas made\n"
            "                          again elsewhere: seconds, or with s, m or h\n"
            "                          (default 10m)\n"
            "  --repair-mbps RATE      pace of that repair, in MB/s over the cluster;\n"
            "                          0 = unlimited (default %llu)\n"
            "  --no-repair             do not repair (replicas below their copies stay so)\n"
            "  --key FILE              this daemon's key pair (tessera keys); server.key,\n"
            "                          server.pub and known_keys are read from its directory\n"
            "                          and only peers with known keys are let in (CURVE)\n"
            "  --insecure              without --key, listen beyond loopback anyway\n"
            "  --tile-secret FILE      the secret tile write tokens are signed with (default\n"
            "                          tile.secret beside --key; none: no tokens)\n"
            "  --exports FILE          which mount keys may mount, read-only or not, root\n"
            "                          squashed or not (default DATA/exports if it exists;\n"
            "                          without it every mount key mounts / read-write)\n"
            "  --log-level LEVEL       error, warn, info or debug (default info)\n"
            "  --metrics [HOST:]PORT   serve Prometheus metrics at http://HOST:PORT/metrics\n"
            "                          (HOST defaults to 127.0.0.1; default: off)\n"
            "  --log-file FILE         append the log to FILE instead of stderr; SIGHUP\n"
            "                          reopens it (after logrotate moved it)\n"
            "  --help                  show this and exit\n"
            "  --version               print the version, git revision and protocol\n",
            META_DEFAULT_CONFIG, META_DEFAULT_LISTEN, SERVICE_DEFAULT_NODE_TIMEOUT_MS,
            SESSIONS_DEFAULT_LEASE_MS, LAYOUT_MAX_COPIES, SERVICE_DEFAULT_COPIES,
            (unsigned long long)(REPAIRER_DEFAULT_BYTES_PER_SEC / 1000000));
}

/* "90", "90s", "15m", "2h" into milliseconds, up to 30 days. 0 or -EINVAL. */
static int meta_parse_duration(const char *text, int64_t *ms)
{
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    long long unit = 1000;
    if (errno != 0 || end == text || value < 0)
        return -EINVAL;
    if (*end == 'm')
        unit = 60 * 1000;
    else if (*end == 'h')
        unit = 3600 * 1000;
    else if (*end != 's' && *end != '\0')
        return -EINVAL;
    if (*end != '\0' && end[1] != '\0')
        return -EINVAL;
    if (value > 30LL * 24 * 3600 * 1000 / unit)
        return -EINVAL;
    *ms = value * unit;
    return 0;
}

static const struct option meta_long_options[] = {
    {"listen", required_argument, NULL, 'l'},
    {"data", required_argument, NULL, 'd'},
    {"node-timeout-ms", required_argument, NULL, 't'},
    {"mount-lease-ms", required_argument, NULL, 'm'},
    {"placement", required_argument, NULL, 'p'},
    {"copies", required_argument, NULL, 'c'},
    {"log-level", required_argument, NULL, 'v'},
    {"log-file", required_argument, NULL, 'L'},
    {"metrics", required_argument, NULL, 'M'},
    {"replace-after", required_argument, NULL, 'r'},
    {"repair-mbps", required_argument, NULL, 'R'},
    {"no-repair", no_argument, NULL, 'N'},
    {"key", required_argument, NULL, 'k'},
    {"insecure", no_argument, NULL, 'I'},
    {"exports", required_argument, NULL, 'E'},
    {"tile-secret", required_argument, NULL, 'T'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {CONFFILE_FLAG, required_argument, NULL, 'C'},
    {CONFFILE_CHECK_FLAG, no_argument, NULL, 'K'},
    {NULL, 0, NULL, 0},
};

/*
 * A conffile_parse_fn: returns 0 to run, 1 to exit 0 (--help), 2 to exit 2
 * (message printed; *failed_arg the argument at fault, -1 if none is).
 */
static int meta_parse(int argc, char **argv, void *context, int *failed_arg)
{
    const struct option *long_options = meta_long_options;
    struct meta_options *options = context;
    int option;

    options->listen = META_DEFAULT_LISTEN;
    options->data_dir = NULL;
    options->key_path = NULL;
    options->log_file = NULL;
    options->metrics = NULL;
    options->insecure = false;
    options->exports_path = NULL;
    options->tile_secret = NULL;
    options->node_timeout_ms = SERVICE_DEFAULT_NODE_TIMEOUT_MS;
    options->mount_lease_ms = SESSIONS_DEFAULT_LEASE_MS;
    options->placement = SERVICE_DEFAULT_PLACEMENT;
    options->copies = SERVICE_DEFAULT_COPIES;
    options->log_level = LOG_LEVEL_INFO;
    options->replace_after_ms = REPAIRER_DEFAULT_REPLACE_AFTER_MS;
    options->repair_bytes_per_sec = REPAIRER_DEFAULT_BYTES_PER_SEC;
    options->repair = true;
    opterr = 0;
    /* The leading ':' makes a missing value return ':' instead of '?'. */
    while ((option = getopt_long(argc, argv, ":", long_options, NULL)) != -1) {
        *failed_arg = optind - 1; /* every return 2 in the switch blames it */
        switch (option) {
        case 'C':
        case 'K': break; /* conffile_load() took them */
        case 'l': options->listen = optarg; break;
        case 'd': options->data_dir = optarg; break;
        case 'r':
            if (meta_parse_duration(optarg, &options->replace_after_ms) < 0) {
                fprintf(stderr,
                        "tessera-meta: --replace-after '%s': want seconds (0..30 days), "
                        "optionally with s, m or h, e.g. 10m\n",
                        optarg);
                return 2;
            }
            break;
        case 'R': {
            long mbps;
            if (util_parse_long(optarg, 0, 1000000, &mbps) < 0) {
                fprintf(stderr, "tessera-meta: --repair-mbps '%s': want MB/s, 0..1000000\n",
                        optarg);
                return 2;
            }
            options->repair_bytes_per_sec = (uint64_t)mbps * 1000000;
            break;
        }
        case 'N': options->repair = false; break;
        case 't':
            if (util_parse_long(optarg, 100, 3600000, &options->node_timeout_ms) < 0) {
                fprintf(stderr,
                        "tessera-meta: --node-timeout-ms wants milliseconds between 100 and "
                        "3600000, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 'm':
            /* A mount renews every lease / 4: a lease under 400 ms would
             * have it renew more often than every 100 ms. */
            if (util_parse_long(optarg, 400, 3600000, &options->mount_lease_ms) < 0) {
                fprintf(stderr,
                        "tessera-meta: --mount-lease-ms wants milliseconds between 400 and "
                        "3600000, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 'p':
            if (layout_placement_parse(optarg, strlen(optarg), &options->placement) < 0 ||
                options->placement == TS_PLACEMENT_DEFAULT) {
                fprintf(stderr,
                        "tessera-meta: --placement wants dynamic, static or roundrobin, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 'c':
            if (util_parse_long(optarg, 1, LAYOUT_MAX_COPIES, &options->copies) < 0) {
                fprintf(stderr, "tessera-meta: --copies wants a number from 1 to %d, not '%s'\n",
                        LAYOUT_MAX_COPIES, optarg);
                return 2;
            }
            break;
        case 'v':
            if (log_level_parse(optarg, &options->log_level) < 0) {
                fprintf(stderr,
                        "tessera-meta: --log-level wants error, warn, info or debug, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 'k': options->key_path = optarg; break;
        case 'L': options->log_file = optarg; break;
        case 'M': {
            char host[64];
            uint16_t port;
            if (metrics_parse_address(optarg, host, sizeof(host), &port) != 0) {
                fprintf(stderr,
                        "tessera-meta: --metrics '%s': want [HOST:]PORT with an IPv4 HOST, "
                        "e.g. 9400\n",
                        optarg);
                return 2;
            }
            options->metrics = optarg;
            break;
        }
        case 'I': options->insecure = true; break;
        case 'E': options->exports_path = optarg; break;
        case 'T': options->tile_secret = optarg; break;
        case 'h': meta_usage(stdout); return 1;
        case 'V': version_print(stdout, "tessera-meta"); return 1;
        case ':':
            fprintf(stderr, "tessera-meta: option '%s' needs a value (see --help)\n",
                    argv[optind - 1]);
            return 2;
        default: {
            const char *guess = util_closest_long_option(long_options, argv[optind - 1]);
            fprintf(stderr, "tessera-meta: unknown option '%s'%s%s%s (see --help)\n",
                    argv[optind - 1], guess ? " (did you mean --" : "", guess ? guess : "",
                    guess ? "?)" : "");
            return 2;
        }
        }
    }
    *failed_arg = -1;
    if (optind < argc) {
        fprintf(stderr, "tessera-meta: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }
    if (!options->data_dir || !*options->data_dir) {
        fprintf(stderr, "tessera-meta: missing --data DIR, the directory of the metadata store "
                        "(see --help)\n");
        return 2;
    }
    if (!*options->listen) {
        fprintf(stderr, "tessera-meta: --listen wants an endpoint such as %s\n",
                META_DEFAULT_LISTEN);
        return 2;
    }
    return 0;
}

/* Serves until a stop signal; returns the exit code. metrics may be NULL. */
static int meta_serve(struct rpc_server *server, struct service *service,
                      struct metametrics *metrics)
{
    zmq_pollitem_t item = {rpc_server_socket(server), 0, ZMQ_POLLIN, 0};
    int64_t next_tick = util_monotonic_ms() + META_TICK_MS;

    while (!meta_stop_signal) {
        int64_t wait_ms = next_tick - util_monotonic_ms();
        int ready = zmq_poll(&item, 1, wait_ms > 0 ? (long)wait_ms : 0);
        if (ready < 0 && zmq_errno() != EINTR) {
            log_error("zmq_poll failed: %s", zmq_strerror(zmq_errno()));
            return 1;
        }
        if (ready > 0)
            rpc_server_handle_pending(server);
        if (util_monotonic_ms() >= next_tick) {
            service_tick(service);
            if (metrics)
                metametrics_update(metrics, service);
            next_tick = util_monotonic_ms() + META_TICK_MS;
        }
    }
    log_info("stopping on signal %d", (int)meta_stop_signal);
    readiness_stopping();
    return 0;
}

int main(int argc, char **argv)
{
    struct meta_options options;
    struct conffile config;
    struct service *service = NULL;
    struct rpc_server *server = NULL;
    struct repairer *repairer = NULL;
    struct metametrics *metrics = NULL;
    struct metrics_server *metrics_server = NULL;
    struct sigaction action;
    sigset_t stop_signals;
    int exit_code = 1;
    int parsed = conffile_load(argc, argv, "tessera-meta", "meta", meta_long_options,
                               META_DEFAULT_CONFIG, &config);

    if (parsed == 0)
        parsed = conffile_parse(&config, "tessera-meta", meta_parse, &options);
    if (parsed != 0 || config.checking) {
        conffile_free(&config);
        return parsed == 1 || parsed == 0 ? 0 : 2;
    }
    log_init("tessera-meta", options.log_level);
    if (options.log_file) {
        int err = log_set_file(options.log_file);
        if (err != 0) {
            fprintf(stderr, "tessera-meta: cannot open --log-file %s: %s\n", options.log_file,
                    strerror(-err));
            conffile_free(&config);
            return 1;
        }
    }
    readiness_reopen_log_on_sighup();

    memset(&action, 0, sizeof(action));
    action.sa_handler = meta_on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

    if (curve_setup(options.key_path, options.insecure, true) != 0)
        goto out;
    if (tiletoken_daemon_setup(options.tile_secret) != 0)
        goto out;
    if (service_open(options.data_dir, options.node_timeout_ms, &service) < 0)
        goto out;
    service->defaults.placement = options.placement;
    service->defaults.copies = (uint32_t)options.copies;
    service_set_mount_lease(service, options.mount_lease_ms);
    char why[256] = "";
    int written = options.exports_path
                      ? snprintf(service->exports_path, sizeof(service->exports_path), "%s",
                                 options.exports_path)
                      : snprintf(service->exports_path, sizeof(service->exports_path), "%s/%s",
                                 options.data_dir, EXPORTS_FILE);
    if (written < 0 || (size_t)written >= sizeof(service->exports_path) ||
        handlers_exports_refresh(service, 0, true, why, sizeof(why)) != 0) {
        log_error("not started: the exports file is unusable: %s", why[0] ? why : "path too long");
        goto out;
    }
    if (options.exports_path && !service->exports.present) {
        log_error("not started: no exports file %s", options.exports_path);
        goto out;
    }
    static rpc_handler_fn gated_handlers[TS_OP_MAX];
    handlers_exports_table(gated_handlers);
    server = rpc_server_new(options.listen, gated_handlers, service);
    if (!server)
        goto out;
    if (options.repair) {
        struct repairer_config repair = {.meta_endpoint = options.listen,
                                         .replace_after_ms = options.replace_after_ms,
                                         .max_bytes_per_sec = options.repair_bytes_per_sec};
        int err = repairer_start(&repair, &repairer);
        if (err < 0) {
            log_error("cannot start the repairer: %s", strerror(-err));
            goto out;
        }
        service->repair_progress = repairer_progress;
        service->repair_progress_ctx = repairer;
    }
    if (options.metrics) {
        int err = metametrics_new(server, &metrics);
        if (err == 0) {
            metametrics_update(metrics, service);
            err = metrics_server_start(options.metrics, metametrics_collect, metrics,
                                       &metrics_server);
        }
        if (err != 0) {
            log_error("cannot serve metrics on %s: %s", options.metrics, strerror(-err));
            goto out;
        }
        log_info("metrics: http://%s/metrics", options.metrics);
        /* For METRICS_LIST; a 0.0.0.0 left there means "the host the tool
         * reached meta at" (proto.h). */
        char listen_host[128];
        metrics_endpoint_host(options.listen, listen_host, sizeof(listen_host));
        if (metrics_announced_address(options.metrics, listen_host, service->metrics_address,
                                      sizeof(service->metrics_address)) != 0)
            service->metrics_address[0] = '\0';
    }
    pthread_sigmask(SIG_UNBLOCK, &stop_signals, NULL);
    log_info("ready: listening on %s (%s), store in %s, default placement %s, copies %ld, "
             "mount lease %ld ms",
             options.listen, curve_enabled() ? "CURVE, known keys only" : "no keys: insecure",
             options.data_dir, layout_placement_name(options.placement), options.copies,
             options.mount_lease_ms);
    readiness_ready("serving on %s, store in %s", options.listen, options.data_dir);
    exit_code = meta_serve(server, service, metrics);

out:
    metrics_server_stop(&metrics_server); /* reads the server's counters and metrics */
    metametrics_destroy(&metrics);
    if (repairer) {
        /* Ends the repairer's calls at once (they would wait for their deadlines). */
        zmq_ctx_shutdown(rpc_context());
        service->repair_progress = NULL;
        repairer_stop(&repairer);
    }
    rpc_server_destroy(&server);
    curve_stop();
    service_close(&service);
    conffile_free(&config); /* options point into its argv */
    return exit_code;
}
