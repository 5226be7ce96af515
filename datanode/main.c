/*
 * @file main.c
 * tessera-datanode: keeps tiles as files on this machine's disk, serves
 * tile reads and writes to clients, and heartbeats to meta.
 *
 * One thread runs one zmq_poll loop over the server's ROUTER socket, the
 * heartbeat's DEALER socket and the tile stream's listener; the poll
 * timeout is the time until the heartbeat next has work, so no request
 * waits behind a timer and no heartbeat waits behind an idle socket. The
 * tile stream's connections are served by its own threads (stream.h); the
 * loop holds the handlers' lock (nodehandlers.h) but while it polls, so they
 * serve between its turns. SIGTERM and SIGINT set a flag that the loop
 * checks around every poll (a signal also interrupts the poll).
 *
 * The "ready" line is logged once meta has acknowledged the first
 * heartbeat: from then on meta knows this node and can place tiles on it.
 * The line after binding ("listening on ...") only says the socket is up.
 *
 * Before serving, the datanode measures its disk (diskio_probe(): the
 * paper's three 1 MiB tiles written and synced). While a request waits out
 * the disk throttle (--throttle-mbps, NODE_THROTTLE), the loop's wait hook
 * keeps the heartbeat going, so a slow node is never taken for a dead one.
 *
 * Relocation: the fences (TILE_FENCE) are loaded from the data directory
 * before serving; TILE_PULL work runs on the puller's threads, and the loop
 * also polls the puller's eventfd so a finished pull's new tile is counted
 * at once. On the way out the ZeroMQ context is shut down first, which ends
 * any pull in flight, and the pullers are joined before the sockets go.
 *
 * Exit codes: 0 after a clean stop, 1 when it cannot start or the loop
 * fails, 2 for bad arguments.
 */
#include "conffile.h"
#include "diskio.h"
#include "fences.h"
#include "nodehandlers.h"
#include "curve.h"
#include "tiletoken.h"
#include "heartbeat.h"
#include "identity.h"
#include "log.h"
#include "metrics.h"
#include "nodemetrics.h"
#include "puller.h"
#include "readiness.h"
#include "reclaim.h"
#include "scrub.h"
#include "replymem.h"
#include "rpc.h"
#include "stream.h"
#include "tilestore.h"
#include "util.h"
#include "version.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <zmq.h>

#define EXIT_USAGE 2
#define DATANODE_DEFAULT_CONFIG CONFFILE_DIR "/datanode.conf"

struct datanode_options {
    const char *listen;
    const char *meta;
    const char *data_dir;
    const char *advertise;
    char machine[TS_MAX_NAME + 1];
    uint64_t capacity;               /* 0 = the disk's */
    uint64_t throttle_bytes_per_sec; /* 0 = none */
    uint64_t memory_bytes;           /* --memory */
    long reclaim_grace_s;            /* --reclaim-grace */
    long reclaim_every_s;            /* --reclaim-every; 0 = never */
    long scrub_mbps;                 /* --scrub-mbps; 0 = no background scrub */
    enum log_level log_level;
    const char *key_path; /* --key FILE; NULL: no CURVE */
    bool insecure;        /* --insecure: may listen beyond loopback without keys */
    const char *tile_secret; /* --tile-secret FILE; NULL: KEYDIR/tile.secret */
    const char *log_file; /* --log-file FILE; NULL: stderr */
    const char *metrics;  /* --metrics [HOST:]PORT; NULL: no endpoint */
};

/* What the wait hook and the heartbeat's load callback need. */
struct datanode_loop {
    struct rpc_server *server;
    struct heartbeat *heartbeat;
    struct diskio *disk;
    struct scrub *scrub;
};

/* MB as in MB/s: 10^6 bytes, as dd and the paper count. */
#define DATANODE_MB 1000000.0
#define DATANODE_MAX_THROTTLE_MBPS 1000000.0
/* HANDLERS_MIN_THROTTLE_BYTES_PER_SEC in MB/s: slower would hold the loop up. */
#define DATANODE_MIN_THROTTLE_MBPS 1.0

/* --memory: what it keeps for everything but read replies waiting to be
 * sent (code, the tile store's tables, ZeroMQ's queues of requests, the
 * stream and puller threads: 15-20 MiB measured under load), the least
 * it accepts, and its default. */
#define DATANODE_MEMORY_RESERVE_BYTES (24ull << 20)
#define DATANODE_MEMORY_MIN_BYTES (32ull << 20)
#define DATANODE_MEMORY_DEFAULT_BYTES (256ull << 20)
/* --memory from which the stream threads' buffers are huge pages (nodehandlers.h). */
#define DATANODE_HUGE_BUFFERS_MIN_BYTES (64ull << 20)
/* --scrub-mbps: up to 100 GB/s. */
#define DATANODE_MAX_SCRUB_MBPS 100000
/* --reclaim-grace and --reclaim-every: up to 30 days. */
#define DATANODE_RECLAIM_MAX_S (30 * 24 * 3600)

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int signal_number)
{
    (void)signal_number;
    stop_requested = 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tessera-datanode --listen ENDPOINT --meta ENDPOINT --data DIR [options]\n"
            "\n"
            "Stores Tessera tiles under DIR/tiles and serves them to clients.\n"
            "\n"
            "  --config FILE         read these options from FILE, an INI file with a\n"
            "                        [datanode] section of `name = value` lines (flags\n"
            "                        win); default %s if it exists\n"
            "  --check-config        check the file and flags, then exit\n"
            "  --listen ENDPOINT     where to serve, e.g. tcp://127.0.0.1:7401\n"
            "  --meta ENDPOINT       the metadata service, e.g. tcp://127.0.0.1:7400\n"
            "  --data DIR            the data directory (created if missing)\n"
            "  --advertise ENDPOINT  the address clients should use (default: --listen)\n"
            "  --machine NAME        this machine's name (default: the hostname)\n"
            "  --capacity SIZE       report and enforce this capacity, e.g. 10G\n"
            "                        (default: the size of the disk)\n"
            "  --throttle-mbps R     cap disk I/O at R MB/s (10^6 bytes/s), to make this\n"
            "                        node slow on purpose; change it at run time with\n"
            "                        `tessera node throttle ID R|off` (default: none)\n"
            "  --memory SIZE         cap on the datanode's resident memory, at least 32M\n"
            "                        (default 256M): read replies waiting to be sent get\n"
            "                        all but 24 MiB of it; over that, requests wait\n"
            "  --reclaim-grace S     delete tile files meta maps nowhere only once they\n"
            "                        are S seconds old (default %d): younger ones may\n"
            "                        belong to a write or pull still to be committed\n"
            "  --reclaim-every S     seconds from one pass over the tile files, asking\n"
            "                        meta which it maps, to the next (default %d;\n"
            "                        0 = never)\n"
            "  --scrub-mbps R        check every stored tile against its checksums in the\n"
            "                        background at R MB/s (default %d; 0 = only when\n"
            "                        `tessera scrub` asks)\n"
            "  --key FILE            this datanode's key pair (tessera keys); server.key,\n"
            "                        server.pub and known_keys are read from its directory\n"
            "                        and only peers with known keys are let in (CURVE)\n"
            "  --insecure            without --key, listen beyond loopback anyway\n"
            "  --tile-secret FILE    the secret meta signs tile write tokens with (default\n"
            "                        tile.secret beside --key; none: writes need no token)\n"
            "  --log-level LEVEL     error, warn, info (default) or debug\n"
            "  --metrics [HOST:]PORT serve Prometheus metrics at http://HOST:PORT/metrics\n"
            "                        (HOST defaults to 127.0.0.1; default: off)\n"
            "  --log-file FILE       append the log to FILE instead of stderr; SIGHUP\n"
            "                        reopens it (after logrotate moved it)\n"
            "  --help                show this help\n"
            "  --version             print the version, git revision and protocol\n",
            DATANODE_DEFAULT_CONFIG, RECLAIM_GRACE_DEFAULT_S, RECLAIM_EVERY_DEFAULT_S,
            SCRUB_DEFAULT_MBPS);
}

/* Prints why the arguments are wrong and how to fix them; returns exit code 2. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *format, ...)
{
    va_list args;
    fprintf(stderr, "tessera-datanode: ");
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fprintf(stderr, "\n(see tessera-datanode --help)\n");
    return EXIT_USAGE;
}

/* A wildcard bind address means nothing to a client that must connect to it. */
static bool endpoint_is_wildcard(const char *endpoint)
{
    return strstr(endpoint, "://*") != NULL || strstr(endpoint, "://0.0.0.0") != NULL ||
           strstr(endpoint, "://[::]") != NULL;
}

/* Parses MB/s ("40", "2.5") into bytes per second; 0 or -EINVAL. */
static int parse_mbps(const char *text, uint64_t *bytes_per_sec)
{
    char *end = NULL;
    double mbps;

    errno = 0;
    mbps = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(mbps) ||
        mbps < DATANODE_MIN_THROTTLE_MBPS || mbps > DATANODE_MAX_THROTTLE_MBPS)
        return -EINVAL;
    *bytes_per_sec = (uint64_t)llround(mbps * DATANODE_MB);
    return *bytes_per_sec > 0 ? 0 : -EINVAL;
}

enum datanode_option {
    OPT_LISTEN = 256,
    OPT_META,
    OPT_DATA,
    OPT_ADVERTISE,
    OPT_MACHINE,
    OPT_CAPACITY,
    OPT_THROTTLE,
    OPT_MEMORY,
    OPT_RECLAIM_GRACE,
    OPT_RECLAIM_EVERY,
    OPT_SCRUB_MBPS,
    OPT_LOG_LEVEL,
    OPT_LOG_FILE,
    OPT_METRICS,
    OPT_KEY,
    OPT_INSECURE,
    OPT_TILE_SECRET,
    OPT_HELP,
    OPT_VERSION,
    OPT_CONFIG,
    OPT_CHECK_CONFIG
};
static const struct option datanode_long_options[] = {
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"meta", required_argument, NULL, OPT_META},
    {"data", required_argument, NULL, OPT_DATA},
    {"advertise", required_argument, NULL, OPT_ADVERTISE},
    {"machine", required_argument, NULL, OPT_MACHINE},
    {"capacity", required_argument, NULL, OPT_CAPACITY},
    {"throttle-mbps", required_argument, NULL, OPT_THROTTLE},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"reclaim-grace", required_argument, NULL, OPT_RECLAIM_GRACE},
    {"reclaim-every", required_argument, NULL, OPT_RECLAIM_EVERY},
    {"scrub-mbps", required_argument, NULL, OPT_SCRUB_MBPS},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"log-file", required_argument, NULL, OPT_LOG_FILE},
    {"metrics", required_argument, NULL, OPT_METRICS},
    {"key", required_argument, NULL, OPT_KEY},
    {"insecure", no_argument, NULL, OPT_INSECURE},
    {"tile-secret", required_argument, NULL, OPT_TILE_SECRET},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {CONFFILE_FLAG, required_argument, NULL, OPT_CONFIG},
    {CONFFILE_CHECK_FLAG, no_argument, NULL, OPT_CHECK_CONFIG},
    {NULL, 0, NULL, 0},
};

/*
 * A conffile_parse_fn: fills options (the context) from argv; returns 0,
 * or the exit code (help: -1 for exit 0); on a usage error *failed_arg is
 * the argument at fault (-1: none is).
 */
static int parse_options(int argc, char **argv, void *context, int *failed_arg)
{
    const struct option *long_options = datanode_long_options;
    struct datanode_options *options = context;
    const char *machine = NULL;
    int option;

    memset(options, 0, sizeof(*options));
    options->log_level = LOG_LEVEL_INFO;
    options->memory_bytes = DATANODE_MEMORY_DEFAULT_BYTES;
    options->reclaim_grace_s = RECLAIM_GRACE_DEFAULT_S;
    options->reclaim_every_s = RECLAIM_EVERY_DEFAULT_S;
    options->scrub_mbps = SCRUB_DEFAULT_MBPS;
    opterr = 0; /* the messages below say more than getopt's */
    for (;;) {
        option = getopt_long(argc, argv, ":h", long_options, NULL);
        if (option == -1)
            break;
        *failed_arg = optind - 1; /* every usage error in the switch blames it */
        switch (option) {
        case OPT_CONFIG:
        case OPT_CHECK_CONFIG: break; /* conffile_load() took them */
        case OPT_LISTEN: options->listen = optarg; break;
        case OPT_META: options->meta = optarg; break;
        case OPT_DATA: options->data_dir = optarg; break;
        case OPT_ADVERTISE: options->advertise = optarg; break;
        case OPT_MACHINE: machine = optarg; break;
        case OPT_CAPACITY:
            if (util_parse_size(optarg, &options->capacity) != 0)
                return usage_error("--capacity '%s' is not a size; give bytes or a number "
                                   "with K, M, G or T, e.g. --capacity 10G",
                                   optarg);
            if (options->capacity == 0)
                return usage_error("--capacity must be more than 0 (leave it out to use the "
                                   "whole disk)");
            break;
        case OPT_THROTTLE:
            if (parse_mbps(optarg, &options->throttle_bytes_per_sec) != 0)
                return usage_error("--throttle-mbps '%s' is not a rate; give MB/s (10^6 bytes/s) "
                                   "from %.0f to %.0f, e.g. --throttle-mbps 40",
                                   optarg, DATANODE_MIN_THROTTLE_MBPS, DATANODE_MAX_THROTTLE_MBPS);
            break;
        case OPT_MEMORY:
            if (util_parse_size(optarg, &options->memory_bytes) != 0 ||
                options->memory_bytes < DATANODE_MEMORY_MIN_BYTES)
                return usage_error("--memory '%s' is not a size of at least %lluM, e.g. --memory "
                                   "256M",
                                   optarg, (unsigned long long)(DATANODE_MEMORY_MIN_BYTES >> 20));
            break;
        case OPT_RECLAIM_GRACE:
            if (util_parse_long(optarg, 1, DATANODE_RECLAIM_MAX_S, &options->reclaim_grace_s) != 0)
                return usage_error("--reclaim-grace '%s' is not a number of seconds from 1 to %d, "
                                   "e.g. --reclaim-grace 600",
                                   optarg, DATANODE_RECLAIM_MAX_S);
            break;
        case OPT_RECLAIM_EVERY:
            if (util_parse_long(optarg, 0, DATANODE_RECLAIM_MAX_S, &options->reclaim_every_s) != 0)
                return usage_error("--reclaim-every '%s' is not a number of seconds from 0 (never) "
                                   "to %d, e.g. --reclaim-every 3600",
                                   optarg, DATANODE_RECLAIM_MAX_S);
            break;
        case OPT_SCRUB_MBPS:
            if (util_parse_long(optarg, 0, DATANODE_MAX_SCRUB_MBPS, &options->scrub_mbps) != 0)
                return usage_error("--scrub-mbps '%s' is not a whole number of MB/s from 0 (no "
                                   "background scrub) to %d, e.g. --scrub-mbps 8",
                                   optarg, DATANODE_MAX_SCRUB_MBPS);
            break;
        case OPT_LOG_LEVEL:
            if (log_level_parse(optarg, &options->log_level) != 0)
                return usage_error("--log-level '%s' is unknown; use error, warn, info or debug",
                                   optarg);
            break;
        case OPT_KEY: options->key_path = optarg; break;
        case OPT_LOG_FILE: options->log_file = optarg; break;
        case OPT_METRICS: {
            char host[64];
            uint16_t port;
            if (metrics_parse_address(optarg, host, sizeof(host), &port) != 0)
                return usage_error("--metrics '%s' is not [HOST:]PORT with an IPv4 HOST, e.g. "
                                   "--metrics 9401",
                                   optarg);
            options->metrics = optarg;
            break;
        }
        case OPT_INSECURE: options->insecure = true; break;
        case OPT_TILE_SECRET: options->tile_secret = optarg; break;
        case 'h':
        case OPT_HELP: usage(stdout); return -1;
        case OPT_VERSION: version_print(stdout, "tessera-datanode"); return -1;
        case ':': return usage_error("%s needs a value", argv[optind - 1]);
        default: {
            const char *guess = util_closest_long_option(long_options, argv[optind - 1]);
            return usage_error("unknown option '%s'%s%s%s", argv[optind - 1],
                               guess ? " (did you mean --" : "", guess ? guess : "",
                               guess ? "?)" : "");
        }
        }
    }
    *failed_arg = -1;
    if (optind < argc)
        return usage_error("unexpected argument '%s'; every setting is an --option", argv[optind]);
    if (!options->listen)
        return usage_error("missing --listen ENDPOINT (e.g. --listen tcp://127.0.0.1:7401)");
    if (!options->meta)
        return usage_error("missing --meta ENDPOINT (e.g. --meta tcp://127.0.0.1:7400)");
    if (!options->data_dir || !*options->data_dir)
        return usage_error("missing --data DIR (where this datanode keeps its tiles)");
    if (!options->advertise) {
        if (endpoint_is_wildcard(options->listen))
            return usage_error("--listen %s binds every interface, which clients cannot "
                               "connect to; add --advertise tcp://THIS_HOST:PORT",
                               options->listen);
        options->advertise = options->listen;
    }
    if (!*options->advertise || strlen(options->advertise) >= 256)
        return usage_error("--advertise '%s' must be an endpoint of 1 to 255 characters",
                           options->advertise);
    if (strlen(options->meta) >= 256 || strlen(options->listen) >= 256)
        return usage_error("endpoints must be shorter than 256 characters");
    if (machine) {
        if (!*machine || strlen(machine) > TS_MAX_NAME)
            return usage_error("--machine '%s' must be a name of 1 to 255 characters", machine);
        snprintf(options->machine, sizeof(options->machine), "%s", machine);
    } else {
        util_machine_name(options->machine, sizeof(options->machine));
    }
    return 0;
}

static void install_signal_handlers(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    /* No SA_RESTART: the signal must interrupt zmq_poll. */
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/*
 * The diskio wait hook: passes the time until until_ns (a throttled
 * request's end) doing the heartbeat's work, so that heartbeats leave on
 * time however long the requests wait. Returns early on a stop signal.
 */
static void datanode_wait(void *arg, int64_t until_ns)
{
    struct datanode_loop *loop = arg;

    for (;;) {
        int64_t now_ns = diskio_now_ns();
        int64_t now_ms = now_ns / 1000000;
        heartbeat_tick(loop->heartbeat, now_ms);
        if (now_ns >= until_ns || stop_requested)
            return;
        int64_t left_ns = until_ns - now_ns;
        int64_t beat_ns = (int64_t)heartbeat_wait_ms(loop->heartbeat, now_ms) * 1000000;
        void *socket = heartbeat_socket(loop->heartbeat);
        if (beat_ns < left_ns)
            left_ns = beat_ns > 0 ? beat_ns : 1000000;
        if (socket && left_ns >= 1000000) {
            /* A heartbeat reply may come while we wait: take it when it does. */
            zmq_pollitem_t item = {socket, 0, ZMQ_POLLIN, 0};
            zmq_poll(&item, 1, (long)(left_ns / 1000000));
        } else {
            struct timespec nap = {.tv_sec = left_ns / 1000000000, .tv_nsec = left_ns % 1000000000};
            nanosleep(&nap, NULL);
        }
    }
}

/*
 * The heartbeat's load: the measured averages and throttle, and the queue
 * depth as far as ZeroMQ lets us see it: the request in service (if the
 * heartbeat leaves during one) plus 1 if another is waiting on the socket.
 */
static void datanode_load(void *arg, struct heartbeat_load *load)
{
    struct datanode_loop *loop = arg;
    struct diskio_report report;
    int events = 0;
    size_t events_len = sizeof(events);

    diskio_report(loop->disk, &report);
    load->read_bytes_per_sec = report.read_bytes_per_sec;
    load->write_bytes_per_sec = report.write_bytes_per_sec;
    load->throttle_bytes_per_sec = report.throttle_bytes_per_sec;
    load->queue_depth = report.in_service;
    if (loop->server &&
        zmq_getsockopt(rpc_server_socket(loop->server), ZMQ_EVENTS, &events, &events_len) == 0 &&
        (events & ZMQ_POLLIN))
        load->queue_depth++;
    if (loop->scrub) {
        struct scrub_report scrub;
        scrub_report(loop->scrub, &scrub, false);
        load->scrub_running = scrub.running;
        load->scrub_files = scrub.files;
        load->scrub_bytes = scrub.bytes;
        load->scrub_corrupt = scrub.corrupt;
        load->scrub_rate = scrub.bytes_per_sec;
        load->scrub_passes = scrub.passes;
    }
}

/* The server's gate: another request only while replies are under the cap. */
static bool datanode_room(void *arg)
{
    return replymem_room(arg);
}

/* Whether the poll found requests: on the server's socket (items[0]) or a
 * tile stream (the `streams` items from `fixed` on). */
static bool requests_arrived(const zmq_pollitem_t *items, size_t fixed, size_t streams)
{
    if (items[0].revents != 0)
        return true;
    for (size_t i = fixed; i < fixed + streams; i++) {
        if (items[i].revents != 0)
            return true;
    }
    return false;
}

/*
 * The poll loop; returns 0 when stopped by a signal, 1 if polling fails.
 * Holds the handlers' lock but while it polls; returns without it.
 */
static int serve(struct rpc_server *server, struct heartbeat *heartbeat, struct puller *puller,
                 struct stream *stream, struct nodehandlers_context *context,
                 const struct datanode_options *options)
{
    zmq_pollitem_t items[4 + STREAM_POLL_ITEMS];
    bool ready_logged = false;
    int exit_code = 0;

    pthread_mutex_lock(&context->lock);
    while (!stop_requested) {
        /* Over the memory cap: no new request until replies have gone. */
        short requests = replymem_room(context->replies) ? ZMQ_POLLIN : 0;
        items[0] = (zmq_pollitem_t){rpc_server_socket(server), 0, requests, 0};
        items[1] = (zmq_pollitem_t){NULL, puller_event_fd(puller), ZMQ_POLLIN, 0};
        items[2] = (zmq_pollitem_t){NULL, replymem_event_fd(context->replies), ZMQ_POLLIN, 0};
        items[3] = (zmq_pollitem_t){heartbeat_socket(heartbeat), 0, ZMQ_POLLIN, 0};
        size_t fixed = items[3].socket ? 4 : 3;
        size_t streams = stream ? stream_poll_items(stream, items + fixed,
                                                    sizeof(items) / sizeof(items[0]) - fixed)
                                : 0;
        long timeout_ms = heartbeat_wait_ms(heartbeat, util_monotonic_ms());
        /* Replies held back for a throttle's pace leave on time (diskio.h). */
        int64_t due_ns = rpc_server_next_due_ns(server);
        if (due_ns != INT64_MAX) {
            int64_t due_ms = (due_ns - util_monotonic_ns() + 999999) / 1000000;
            if (due_ms < timeout_ms || timeout_ms < 0)
                timeout_ms = due_ms > 0 ? (long)due_ms : 0;
        }

        pthread_mutex_unlock(&context->lock);
        int polled = zmq_poll(items, (int)(fixed + streams), timeout_ms);
        int poll_errno = zmq_errno();
        pthread_mutex_lock(&context->lock);
        if (polled < 0) {
            if (poll_errno == EINTR)
                continue;
            log_error("zmq_poll failed: %s", zmq_strerror(poll_errno));
            exit_code = 1;
            break;
        }
        if (stop_requested)
            break;
        if (items[2].revents & ZMQ_POLLIN)
            replymem_collect(context->replies);
        if (requests_arrived(items, fixed, streams))
            heartbeat_note_busy(heartbeat, util_monotonic_ms());
        /* Both check ZMQ_EVENTS (and the server its gate) themselves, so
         * calling them spuriously is harmless. */
        rpc_server_handle_pending(server);
        rpc_server_send_due(server, util_monotonic_ns());
        if (items[1].revents & ZMQ_POLLIN)
            puller_collect(puller);
        if (stream)
            stream_serve(stream, items + fixed, streams);
        heartbeat_tick(heartbeat, util_monotonic_ms());
        context->node_id = heartbeat_node_id(heartbeat);
        if (heartbeat_refused(heartbeat)) {
            log_error("stopping: meta does not take data directory %s for node %" PRIu32
                      " (see above)",
                      options->data_dir, heartbeat_node_id(heartbeat));
            exit_code = 1;
            break;
        }
        if (!ready_logged && heartbeat_acknowledged(heartbeat) > 0) {
            log_info("ready: listening on %s (%s, node %" PRIu32 ", data %s)", options->listen,
                     curve_enabled() ? "CURVE, known keys only" : "no keys: insecure",
                     heartbeat_node_id(heartbeat), options->data_dir);
            readiness_ready("serving on %s as node %" PRIu32 ", data %s", options->listen,
                            heartbeat_node_id(heartbeat), options->data_dir);
            ready_logged = true;
        }
    }
    pthread_mutex_unlock(&context->lock);
    if (exit_code == 0)
        log_info("stopping on signal");
    readiness_stopping();
    return exit_code;
}

/* Most descriptors the datanode asks for: its connections and up to
 * TILEHANDLES_MAX kept tile files (an eighth of the limit) with room to
 * spare, without making a loop over every descriptor slow. */
#define DATANODE_OPEN_FILES_WANTED 65536

/*
 * Raises the soft limit on open descriptors towards the hard one, as
 * servers do: the usual soft 1024 would keep 128 tile files open
 * (tilestore.c), fewer than the tiles one file of a few GiB puts on a
 * datanode. The hard limit stays the operator's.
 */
static void datanode_raise_open_files(void)
{
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= DATANODE_OPEN_FILES_WANTED)
        return;
    rlim_t wanted = files.rlim_max == RLIM_INFINITY || files.rlim_max > DATANODE_OPEN_FILES_WANTED
                        ? DATANODE_OPEN_FILES_WANTED
                        : files.rlim_max;
    if (wanted <= files.rlim_cur)
        return;
    files.rlim_cur = wanted;
    if (setrlimit(RLIMIT_NOFILE, &files) != 0)
        log_warn("cannot raise the open file limit to %llu: %s (fewer tile files are kept open)",
                 (unsigned long long)wanted, strerror(errno));
}

int main(int argc, char **argv)
{
    struct datanode_options options;
    struct conffile config;
    struct nodehandlers_context context;
    struct datanode_loop loop = {NULL, NULL, NULL, NULL};
    struct scrub *scrub = NULL;
    struct tilestore *store = NULL;
    struct diskio *disk = NULL;
    struct heartbeat *heartbeat = NULL;
    struct rpc_server *server = NULL;
    struct fences *fences = NULL;
    struct puller *puller = NULL;
    struct stream *stream = NULL;
    struct warmer *warmer = NULL;
    struct replymem *replies = NULL;
    struct reclaim *reclaim = NULL;
    struct metrics_server *metrics = NULL;
    uint64_t tiles, used_bytes;
    int exit_code = 1;
    int rc;

    rc = conffile_load(argc, argv, "tessera-datanode", "datanode", datanode_long_options,
                       DATANODE_DEFAULT_CONFIG, &config);
    if (rc == 0)
        rc = conffile_parse(&config, "tessera-datanode", parse_options, &options);
    if (rc != 0 || config.checking) {
        conffile_free(&config);
        return rc < 0 ? 0 : rc;
    }
    log_init("tessera-datanode", options.log_level);
    if (options.log_file) {
        rc = log_set_file(options.log_file);
        if (rc != 0) {
            fprintf(stderr, "tessera-datanode: cannot open --log-file %s: %s\n", options.log_file,
                    strerror(-rc));
            conffile_free(&config);
            return 1;
        }
    }
    /* Tile buffers are up to 16 MiB: keep them in the heap instead of a
     * fresh mmap (page faults and zeroing) per request. Freed memory above
     * 8 MiB goes back to the system (the cap, --memory, counts what is
     * resident), and glibc gets at most 2 heaps: buffers freed by
     * ZeroMQ's thread into one are reused by the loop, not kept twice. */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 8 << 20);
    mallopt(M_ARENA_MAX, 2);
    datanode_raise_open_files();
    install_signal_handlers();
    readiness_reopen_log_on_sighup();
    if (curve_setup(options.key_path, options.insecure, true) != 0)
        goto out;
    if (tiletoken_daemon_setup(options.tile_secret) != 0)
        goto out;

    /* Before the store makes DATA/tiles anew: a directory that lost its tiles stays refused. */
    rc = identity_check_tiles(options.data_dir);
    if (rc != 0) {
        if (rc != -ESTALE) /* -ESTALE is logged where it is found */
            log_error("cannot check data directory %s: %s", options.data_dir, strerror(-rc));
        goto out;
    }
    rc = tilestore_open(options.data_dir, options.capacity, &store);
    if (rc == -EBUSY) {
        log_error("data directory %s is in use by another datanode (its datanode.lock is held); "
                  "stop that one or choose another --data",
                  options.data_dir);
        goto out;
    }
    if (rc != 0) {
        log_error("cannot open data directory %s: %s", options.data_dir, strerror(-rc));
        goto out;
    }
    tilestore_usage(store, &tiles, &used_bytes);
    log_info("data %s: %" PRIu64 " tiles, %" PRIu64 " bytes", options.data_dir, tiles, used_bytes);

    rc = fences_open(options.data_dir, &fences);
    if (rc != 0) {
        log_error("cannot load the tile fences from %s/%s: %s", options.data_dir,
                  FENCES_RETIRED_FILE, strerror(-rc));
        goto out;
    }
    if (fences_retired_count(fences) > 0)
        log_info("%" PRIu64 " retired tile files (moved away)", fences_retired_count(fences));

    if (diskio_new(store, options.throttle_bytes_per_sec, &disk) != 0) {
        log_error("out of memory");
        goto out;
    }
    rc = diskio_probe(disk, options.data_dir);
    if (rc != 0) {
        log_warn("disk test in %s failed (%s); throughput is unknown until real work measures it",
                 options.data_dir, strerror(-rc));
    } else {
        struct diskio_report report;
        diskio_report(disk, &report);
        log_info("disk test: write %.1f MB/s, read %.1f MB/s (3 x 1 MiB, synced)%s",
                 (double)report.write_bytes_per_sec / DATANODE_MB,
                 (double)report.read_bytes_per_sec / DATANODE_MB,
                 report.throttle_bytes_per_sec ? ", throttled" : "");
    }
    if (options.throttle_bytes_per_sec)
        log_info("disk throttle: %.1f MB/s", (double)options.throttle_bytes_per_sec / DATANODE_MB);

    /* Meta lists it for `tessera stats` (METRICS_LIST); 0.0.0.0 is no
     * address to scrape from elsewhere, the advertised host is. */
    char metrics_announced[256] = "";
    if (options.metrics) {
        char advertised_host[128];
        metrics_endpoint_host(options.advertise, advertised_host, sizeof(advertised_host));
        if (metrics_announced_address(options.metrics, advertised_host, metrics_announced,
                                      sizeof(metrics_announced)) != 0)
            metrics_announced[0] = '\0';
    }
    struct heartbeat_config heartbeat_config = {
        .meta_endpoint = options.meta,
        .data_dir = options.data_dir,
        .machine = options.machine,
        .address = options.advertise,
        .metrics = metrics_announced,
        .load = datanode_load,
        .load_arg = &loop,
    };
    rc = heartbeat_new(&heartbeat_config, store, &heartbeat);
    if (rc != 0) {
        if (rc != -EINVAL) /* node.id problems are logged where they are found */
            log_error("cannot set up the heartbeat: %s", strerror(-rc));
        goto out;
    }

    struct puller_config puller_config;
    puller_config_default(&puller_config);
    /* With keys, pulls come only from registered datanodes (puller.h). */
    if (curve_enabled())
        snprintf(puller_config.meta_endpoint, sizeof(puller_config.meta_endpoint), "%s",
                 options.meta);
    rc = puller_new(store, &puller_config, &puller);
    if (rc != 0) {
        log_error("cannot start the puller threads: %s", strerror(-rc));
        goto out;
    }

    memset(&context, 0, sizeof(context));
    pthread_mutex_init(&context.lock, NULL);
    context.store = store;
    context.disk = disk;
    /* Four 2 MiB stream buffers fit what the reserve leaves a bigger node. */
    context.stream_huge_pages = options.memory_bytes >= DATANODE_HUGE_BUFFERS_MIN_BYTES;
    context.fences = fences;
    context.puller = puller;
    warmer = warmer_new(); /* NULL: no warming, the rest works */
    context.warmer = warmer;
    rc = replymem_new(options.memory_bytes - DATANODE_MEMORY_RESERVE_BYTES, &replies);
    if (rc != 0) {
        log_error("cannot set up the memory cap: %s", strerror(-rc));
        goto out;
    }
    context.replies = replies;
    context.node_id = heartbeat_node_id(heartbeat); /* from node.id; the loop keeps it current */
    server = rpc_server_new(options.listen, nodehandlers_table, &context);
    if (!server) {
        log_error("not started: no socket listening on %s", options.listen);
        goto out;
    }
    rpc_server_set_gate(server, datanode_room, replies);
    rc = stream_open(options.listen, &context, &stream);
    if (rc == 0) {
        context.stream_port = stream_port(stream);
        context.stream_local = stream_local_name(stream);
        /* TCP carries no credentials: with keys (or tile tokens, which a stream
         * write does not carry) only the local socket serves (stream.h). */
        if (curve_enabled() || tiletoken_enabled()) {
            stream_refuse_tcp(stream);
            if (context.stream_local[0] == '\0')
                context.stream_port = 0; /* no stream to offer: mounts use ZeroMQ */
        }
    } else
        log_warn("no tile stream on %s (%s): mounts use ZeroMQ only", options.listen,
                 strerror(-rc));
    loop.server = server;
    loop.heartbeat = heartbeat;
    loop.disk = disk;
    diskio_set_wait(disk, datanode_wait, &loop);
    /* A throttle paces replies, not the loop: heartbeats, other clients and
     * admin requests are answered while a throttled reply waits. */
    diskio_set_defer(disk, true);
    log_info("listening on %s (advertised as %s, tile stream on TCP port %u and local socket "
             "@%s, machine %s, data %s); registering with meta at %s",
             options.listen, options.advertise, (unsigned)context.stream_port,
             context.stream_local && *context.stream_local ? context.stream_local : "(none)",
             options.machine, options.data_dir, options.meta);

    if (options.reclaim_every_s > 0) {
        struct reclaim_config reclaim_config = {
            .meta_endpoint = options.meta,
            .data_dir = options.data_dir,
            .grace_ms = (int64_t)options.reclaim_grace_s * 1000,
            .every_ms = (int64_t)options.reclaim_every_s * 1000,
        };
        rc = reclaim_start(&reclaim_config, &context, heartbeat, &reclaim);
        if (rc != 0) {
            log_error("cannot start reclaiming unmapped tile files: %s", strerror(-rc));
            goto out;
        }
        log_info("reclaim: tile files meta maps nowhere are deleted once %ld s old, a pass "
                 "every %ld s",
                 options.reclaim_grace_s, options.reclaim_every_s);
    }

    rc = scrub_start(store, &context.lock, (uint64_t)options.scrub_mbps * 1000000u, &scrub);
    if (rc != 0) {
        log_error("cannot start the scrub thread: %s", strerror(-rc));
        goto out;
    }
    context.scrub = scrub;
    loop.scrub = scrub;
    if (options.scrub_mbps > 0)
        log_info("scrub: every stored tile is checked against its checksums at %ld MB/s, a "
                 "pass every %d s at most",
                 options.scrub_mbps, SCRUB_PAUSE_MS / 1000);

    if (options.metrics) {
        rc = metrics_server_start(options.metrics, nodemetrics_collect, &context, &metrics);
        if (rc != 0) {
            log_error("cannot serve metrics on %s: %s", options.metrics, strerror(-rc));
            goto out;
        }
        log_info("metrics: http://%s/metrics", options.metrics);
    }

    exit_code = serve(server, heartbeat, puller, stream, &context, &options);
    stream_close(&stream); /* no request is served after the counts are logged */
    nodehandlers_log_stats(&context.stats);
    nodehandlers_stats_fini(&context.stats);
    log_info("read replies waiting to be sent peaked at %.1f of their %.1f MiB (--memory); "
             "requests held back for them %llu times",
             replymem_peak(replies) / 1048576.0,
             (options.memory_bytes - DATANODE_MEMORY_RESERVE_BYTES) / 1048576.0,
             (unsigned long long)replymem_full_count(replies));
out:
    metrics_server_stop(&metrics); /* it reads the handlers' state too */
    stream_close(&stream);         /* its threads use the handlers' state: first to go */
    loop.scrub = NULL;
    context.scrub = NULL;
    scrub_stop(&scrub);
    warmer_destroy(&warmer);
    if (puller || reclaim) {
        /* A pull waiting on its source, or a question to meta, ends now, not
         * at its deadline. */
        zmq_ctx_shutdown(rpc_context());
        reclaim_stop(&reclaim);
        puller_destroy(&puller);
    }
    rpc_server_destroy(&server);
    heartbeat_destroy(&heartbeat);
    diskio_destroy(&disk);
    fences_close(&fences);
    tilestore_close(&store);
    curve_stop();                /* its socket too must be closed before zmq_ctx_term() */
    zmq_ctx_term(rpc_context()); /* every socket is closed: returns at once */
    replymem_destroy(&replies);  /* ZeroMQ has freed every reply it held */
    if (exit_code == 0)
        log_info("stopped");
    conffile_free(&config); /* options point into its argv */
    return exit_code;
}
