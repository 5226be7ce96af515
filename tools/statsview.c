/*
 * @file statsview.c
 * See statsview.h. Finds the endpoints once (METRICS_LIST, or the
 * addresses given), scrapes each one, then every interval scrapes them all
 * again and prints each daemon's figures over the time between its own
 * two scrapes (measured, not assumed to be the interval). On a terminal
 * each sample replaces the last (clear screen, as top does); otherwise,
 * and with --json (one JSON object per sample and line), samples follow
 * each other with nothing but text.
 */
#include "statsview.h"

#include "cliargs.h"
#include "jsonname.h"
#include "metatarget.h"
#include "metrics.h"
#include "metricsfetch.h"
#include "promtext.h"
#include "proto.h"
#include "rpc.h"
#include "statsfigures.h"
#include "status.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STATSVIEW_WHO "tessera stats"
#define STATSVIEW_DEFAULT_TIMEOUT_MS 2000
#define STATSVIEW_MB 1e6

struct statsview_options {
    struct metatarget target;
    double interval_seconds;
    long count; /* samples to print; 0: until interrupted */
    bool json;
};

/* One daemon and its last scrape. */
struct statsview_daemon {
    enum statsfigures_kind kind; /* UNKNOWN until a scrape says, for an address given */
    char id[32];                 /* node id, mount id, "" for meta and addresses given */
    char machine[TS_MAX_NAME + 1];
    char address[300];
    struct promtext scrape; /* the last good one */
    int64_t scraped_ns;     /* monotonic; 0: no good scrape yet */
    char error[256];        /* the last scrape's failure, "" when it worked */
};

struct statsview_list {
    struct statsview_daemon *daemons;
    size_t count;
};

static volatile sig_atomic_t statsview_stop;

static void statsview_on_signal(int signal_number)
{
    (void)signal_number;
    statsview_stop = 1;
}

static void statsview_usage(FILE *out)
{
    fprintf(
        out,
        "Usage: tessera stats [--state DIR | --meta ENDPOINT] [--interval S] [--count N]\n"
        "                     [--json] [--timeout-ms MS] [HOST:PORT...]\n"
        "\n"
        "Shows live figures of every daemon, like top: meta, each datanode and each mount\n"
        "that meta knows of (those started with --metrics), or the metrics endpoints given\n"
        "as HOST:PORT. Per second over each interval: operations (reads and writes apart),\n"
        "MB read and written, mean latency, errors; meta's datanodes up, degraded tiles and\n"
        "repair queue and rate; each datanode's disk, tiles and scrub progress. Rates come\n"
        "from the Prometheus counters each daemon exports (see `--metrics`).\n"
        "\n"
        "  --state DIR       the local cluster in DIR (default: $TESSERA_STATE, else\n"
        "                    $XDG_STATE_HOME/tessera, else ~/.local/state/tessera)\n"
        "  --meta ENDPOINT   ask this tessera-meta instead, e.g. tcp://10.0.0.1:7400\n"
        "  --interval S      seconds between samples (default 1; 0.1 to 3600)\n"
        "  --count N         print N samples and exit (default: until interrupted)\n"
        "  --json            one JSON object per sample and line: {\"time\", \"daemons\": [...]}\n"
        "  --timeout-ms MS   how long to wait for meta and for each endpoint (default %d)\n"
        "  -h, --help        this help\n"
        "\n"
        "On a terminal each sample replaces the last; otherwise (a pipe, a file) samples\n"
        "follow each other as plain lines.\n"
        "\n"
        "Exit status: 0 ok, 1 meta unreachable or no endpoint to show, 2 usage error.\n",
        STATSVIEW_DEFAULT_TIMEOUT_MS);
}

static int statsview_take(void *ctx, int option, const char *value)
{
    struct statsview_options *options = ctx;
    int taken = metatarget_option(&options->target, STATSVIEW_WHO, option, value);
    if (taken != CLIARGS_NOT_MINE)
        return taken;
    char *end;
    switch (option) {
    case 'i':
        errno = 0;
        options->interval_seconds = strtod(value, &end);
        if (errno != 0 || end == value || *end != '\0' || !(options->interval_seconds >= 0.1) ||
            options->interval_seconds > 3600)
            return cliargs_usage_error(STATSVIEW_WHO,
                                       "--interval wants seconds from 0.1 to 3600, not", value);
        return CLIARGS_GO_ON;
    case 'c':
        errno = 0;
        options->count = strtol(value, &end, 10);
        if (errno != 0 || end == value || *end != '\0' || options->count < 1)
            return cliargs_usage_error(STATSVIEW_WHO, "--count wants a number of samples >= 1, not",
                                       value);
        return CLIARGS_GO_ON;
    case 'j': options->json = true; return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

static int statsview_add(struct statsview_list *list, enum statsfigures_kind kind, const char *id,
                         const char *machine, const char *address)
{
    struct statsview_daemon *grown =
        realloc(list->daemons, (list->count + 1) * sizeof(*list->daemons));
    if (!grown)
        return -ENOMEM;
    list->daemons = grown;
    struct statsview_daemon *daemon = &list->daemons[list->count++];
    *daemon = (struct statsview_daemon){.kind = kind};
    snprintf(daemon->id, sizeof(daemon->id), "%s", id);
    snprintf(daemon->machine, sizeof(daemon->machine), "%s", machine);
    snprintf(daemon->address, sizeof(daemon->address), "%s", address);
    return 0;
}

static void statsview_list_clear(struct statsview_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        promtext_clear(&list->daemons[i].scrape);
    free(list->daemons);
    *list = (struct statsview_list){0};
}

/*
 * An announced address whose host is 0.0.0.0 (every interface) is
 * reachable at the host we reached meta at; anything else is as given.
 * False when the result does not fit in cap bytes.
 */
static bool statsview_reachable(const char *announced, const char *meta_host, char *out, size_t cap)
{
    static const char any[] = "0.0.0.0:";
    int len;
    if (*meta_host && strncmp(announced, any, sizeof(any) - 1) == 0)
        len = snprintf(out, cap, "%s:%s", meta_host, announced + sizeof(any) - 1);
    else
        len = snprintf(out, cap, "%s", announced);
    return len >= 0 && (size_t)len < cap;
}

/* Decodes METRICS_LIST's records into list. TS_OK or TS_ERR_BADMSG / TS_ERR_NOMEM. */
static int statsview_decode(const struct ts_metrics_list_rep *reply, const char *meta_host,
                            struct statsview_list *list)
{
    char text[300];
    char address[300];
    char machine[TS_MAX_NAME + 1];
    char id[32];

    if (reply->meta.len > 0) {
        if (ts_str_copy(reply->meta, text, sizeof(text)) != 0)
            return TS_ERR_BADMSG;
        if (!statsview_reachable(text, meta_host, address, sizeof(address)))
            return TS_ERR_BADMSG;
        if (statsview_add(list, STATSFIGURES_META, "", "", address) != 0)
            return TS_ERR_NOMEM;
    }
    if (!ts_records_fit(reply->count, reply->endpoints.len, ts_metrics_endpoint_rec_bytes))
        return TS_ERR_BADMSG;
    struct ts_cursor cursor;
    ts_cursor_init(&cursor, reply->endpoints.ptr, reply->endpoints.len);
    for (uint32_t i = 0; i < reply->count; i++) {
        struct ts_metrics_endpoint_rec record;
        if (ts_metrics_endpoint_rec_read(&cursor, &record) != 0 ||
            (record.kind != TS_METRICS_DATANODE && record.kind != TS_METRICS_MOUNT) ||
            ts_str_copy(record.machine, machine, sizeof(machine)) != 0 ||
            ts_str_copy(record.address, text, sizeof(text)) != 0 || text[0] == '\0')
            return TS_ERR_BADMSG;
        if (!statsview_reachable(text, meta_host, address, sizeof(address)))
            return TS_ERR_BADMSG;
        bool datanode = record.kind == TS_METRICS_DATANODE;
        if (datanode)
            snprintf(id, sizeof(id), "%llu", (unsigned long long)record.id);
        else
            snprintf(id, sizeof(id), "%016llx", (unsigned long long)record.id);
        if (statsview_add(list, datanode ? STATSFIGURES_DATANODE : STATSFIGURES_MOUNT, id, machine,
                          address) != 0)
            return TS_ERR_NOMEM;
    }
    return cursor.left == 0 ? TS_OK : TS_ERR_BADMSG;
}

/* Asks meta where the daemons serve their figures. An exit code, CLIARGS_GO_ON when listed. */
static int statsview_discover(const struct statsview_options *options, struct statsview_list *list)
{
    char meta_host[128];
    char error_text[256] = "";
    struct rpc_reply reply;
    struct ts_metrics_list_rep decoded;

    struct rpc_client *client = rpc_client_new(options->target.endpoint);
    if (!client) {
        fprintf(stderr, "%s: cannot use endpoint %s (expected tcp://HOST:PORT)\n", STATSVIEW_WHO,
                options->target.endpoint);
        return CLIARGS_EXIT_FAILED;
    }
    int status = rpc_client_call(client, TS_OP_METRICS_LIST, NULL, 0, NULL, 0,
                                 (int)options->target.timeout_ms, &reply);
    if (status != TS_OK)
        rpc_reply_error_text(&reply, error_text, sizeof(error_text));
    else if (ts_metrics_list_rep_decode(&decoded, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    if (status == TS_OK) {
        metrics_endpoint_host(options->target.endpoint, meta_host, sizeof(meta_host));
        status = statsview_decode(&decoded, meta_host, list);
    }
    rpc_reply_release(&reply);
    rpc_client_destroy(&client);
    if (status != TS_OK) {
        fprintf(stderr, "%s: tessera-meta at %s: %s%s%s%s\n", STATSVIEW_WHO,
                options->target.endpoint, status_text(status), *error_text ? ": " : "", error_text,
                status == TS_ERR_TIMEDOUT ? " (is the cluster up? try: tessera status)" : "");
        return CLIARGS_EXIT_FAILED;
    }
    if (list->count == 0) {
        fprintf(stderr,
                "%s: no daemon of the cluster at %s serves metrics: start them with --metrics "
                "(or `metrics =` in their configuration), or name endpoints as HOST:PORT\n",
                STATSVIEW_WHO, options->target.endpoint);
        return CLIARGS_EXIT_FAILED;
    }
    return CLIARGS_GO_ON;
}

/*
 * Scrapes one daemon: on success its scrape becomes *previous (the old
 * one handed to the caller to compute rates from, then clear) and true.
 */
static bool statsview_scrape(struct statsview_daemon *daemon, long timeout_ms,
                             struct promtext *previous, int64_t *previous_ns)
{
    char *body = NULL;
    size_t len = 0;
    struct promtext scrape;
    char why[200];

    *previous = (struct promtext){0};
    *previous_ns = 0;
    if (metricsfetch_get(daemon->address, timeout_ms, &body, &len, why, sizeof(why)) != 0) {
        snprintf(daemon->error, sizeof(daemon->error), "%s", why);
        return false;
    }
    int64_t now_ns = util_monotonic_ns();
    int rc = promtext_parse(body, len, &scrape, why, sizeof(why));
    free(body);
    if (rc != 0) {
        snprintf(daemon->error, sizeof(daemon->error), "not Prometheus text: %s",
                 rc == -EINVAL ? why : strerror(-rc));
        return false;
    }
    if (daemon->kind == STATSFIGURES_UNKNOWN)
        daemon->kind = statsfigures_kind_of(&scrape);
    daemon->error[0] = '\0';
    *previous = daemon->scrape;
    *previous_ns = daemon->scraped_ns;
    daemon->scrape = scrape;
    daemon->scraped_ns = now_ns;
    return true;
}

/* A figure for the table: "-" when unknown. */
static const char *statsview_cell(char *out, size_t cap, double value, double scale, int decimals)
{
    if (isnan(value))
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, "%.*f", decimals, value / scale);
    return out;
}

/* The kind's extra figures, as one short text. */
static void statsview_extra(enum statsfigures_kind kind, const struct statsfigures *figures,
                            char *out, size_t cap)
{
    char a[32], b[32], c[32], d[32], e[32];
    out[0] = '\0';
    if (kind == STATSFIGURES_META)
        snprintf(out, cap, "up %s, degraded %s, unavailable %s, repair %s MB/s, queue %s",
                 statsview_cell(a, sizeof(a), figures->datanodes_up, 1, 0),
                 statsview_cell(b, sizeof(b), figures->degraded_tiles, 1, 0),
                 statsview_cell(c, sizeof(c), figures->unavailable_tiles, 1, 0),
                 statsview_cell(d, sizeof(d), figures->repair_bytes_per_second, STATSVIEW_MB, 1),
                 statsview_cell(e, sizeof(e), figures->repair_steps_waiting, 1, 0));
    if (kind == STATSFIGURES_DATANODE)
        snprintf(out, cap, "busy %s, tiles %s, free %s GB, scrub %s%%%s",
                 statsview_cell(a, sizeof(a), figures->disk_busy, 1, 0),
                 statsview_cell(b, sizeof(b), figures->tiles, 1, 0),
                 statsview_cell(c, sizeof(c), figures->free_bytes, 1e9, 1),
                 statsview_cell(d, sizeof(d), figures->scrub_percent, 1, 0),
                 figures->scrub_running == 1 ? " (running)" : "");
}

static void statsview_print_row(const struct statsview_daemon *daemon,
                                const struct statsfigures *figures, bool have_figures)
{
    char ops[32], rd_ops[32], wr_ops[32], rd[32], wr[32], lat[32], err[32], extra[320];
    printf("%-8s %-16s %-12s %-21s ", statsfigures_kind_name(daemon->kind),
           *daemon->id ? daemon->id : "-", *daemon->machine ? daemon->machine : "-",
           daemon->address);
    if (!have_figures) {
        printf("%s\n", *daemon->error ? daemon->error : "(first sample: wait one interval)");
        return;
    }
    statsview_extra(daemon->kind, figures, extra, sizeof(extra));
    printf("%8s %7s %7s %9s %9s %8s %6s  %s\n",
           statsview_cell(ops, sizeof(ops), figures->ops_per_second, 1, 1),
           statsview_cell(rd_ops, sizeof(rd_ops), figures->read_ops_per_second, 1, 1),
           statsview_cell(wr_ops, sizeof(wr_ops), figures->write_ops_per_second, 1, 1),
           statsview_cell(rd, sizeof(rd), figures->read_bytes_per_second, STATSVIEW_MB, 2),
           statsview_cell(wr, sizeof(wr), figures->write_bytes_per_second, STATSVIEW_MB, 2),
           statsview_cell(lat, sizeof(lat), figures->latency_ms, 1, 3),
           statsview_cell(err, sizeof(err), figures->errors_per_second, 1, 1), extra);
}

/* A number, or null for an unknown figure. */
static json_t *statsview_json_number(double value)
{
    return isnan(value) || isinf(value) ? json_null() : json_real(value);
}

static json_t *statsview_json_daemon(const struct statsview_daemon *daemon,
                                     const struct statsfigures *figures, bool have_figures,
                                     double seconds)
{
    json_t *object = json_object();
    if (!object)
        return NULL;
    json_object_set_new(object, "kind", json_string(statsfigures_kind_name(daemon->kind)));
    json_object_set_new(object, "id", *daemon->id ? json_string(daemon->id) : json_null());
    jsonname_set(object, "machine", daemon->machine);
    json_object_set_new(object, "address", json_string(daemon->address));
    json_object_set_new(object, "up", json_boolean(daemon->error[0] == '\0'));
    json_object_set_new(object, "error",
                        daemon->error[0] ? json_string(daemon->error) : json_null());
    json_object_set_new(object, "seconds", have_figures ? json_real(seconds) : json_null());
    if (!have_figures)
        return object;
    const struct {
        const char *name;
        double value;
    } fields[] = {
        {"ops_per_second", figures->ops_per_second},
        {"read_ops_per_second", figures->read_ops_per_second},
        {"write_ops_per_second", figures->write_ops_per_second},
        {"read_bytes_per_second", figures->read_bytes_per_second},
        {"write_bytes_per_second", figures->write_bytes_per_second},
        {"latency_ms", figures->latency_ms},
        {"read_latency_ms", figures->read_latency_ms},
        {"write_latency_ms", figures->write_latency_ms},
        {"errors_per_second", figures->errors_per_second},
        {"datanodes_up", figures->datanodes_up},
        {"degraded_tiles", figures->degraded_tiles},
        {"unavailable_tiles", figures->unavailable_tiles},
        {"repair_bytes_per_second", figures->repair_bytes_per_second},
        {"repair_steps_waiting", figures->repair_steps_waiting},
        {"repair_bytes_waiting", figures->repair_bytes_waiting},
        {"disk_busy", figures->disk_busy},
        {"tiles", figures->tiles},
        {"free_bytes", figures->free_bytes},
        {"scrub_running", figures->scrub_running},
        {"scrub_percent", figures->scrub_percent},
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        json_object_set_new(object, fields[i].name, statsview_json_number(fields[i].value));
    return object;
}

/* Now as ISO 8601 UTC, for the sample's heading. */
static void statsview_now(char *out, size_t cap)
{
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

/* Scrapes every daemon and prints one sample; false when out of memory. */
static bool statsview_sample(const struct statsview_options *options, struct statsview_list *list,
                             bool first, bool first_shown, bool terminal)
{
    char now[32];
    json_t *daemons = options->json ? json_array() : NULL;
    if (options->json && !daemons)
        return false;
    statsview_now(now, sizeof(now));
    if (!options->json && !first) { /* the first scrape is the baseline: nothing to show */
        if (terminal)
            printf("\033[H\033[2J"); /* as top: each sample in place of the last */
        else if (!first_shown)
            printf("\n");
        printf("%s  every %.1f s\n", now, options->interval_seconds);
        printf("%-8s %-16s %-12s %-21s %8s %7s %7s %9s %9s %8s %6s  %s\n", "KIND", "ID", "MACHINE",
               "ADDRESS", "OPS/s", "RD/s", "WR/s", "RD MB/s", "WR MB/s", "LAT ms", "ERR/s", "MORE");
    }
    for (size_t i = 0; i < list->count; i++) {
        struct statsview_daemon *daemon = &list->daemons[i];
        struct promtext previous;
        int64_t previous_ns;
        struct statsfigures figures;
        bool have_figures = false;
        double seconds = 0;
        if (statsview_scrape(daemon, options->target.timeout_ms, &previous, &previous_ns) &&
            previous_ns != 0) {
            seconds = (double)(daemon->scraped_ns - previous_ns) / 1e9;
            statsfigures_compute(daemon->kind, &previous, &daemon->scrape, seconds, &figures);
            have_figures = seconds > 0;
        }
        promtext_clear(&previous);
        if (first)
            continue; /* the baseline: nothing to show yet */
        if (options->json) {
            json_t *object = statsview_json_daemon(daemon, &figures, have_figures, seconds);
            if (!object || json_array_append_new(daemons, object) != 0) {
                json_decref(daemons);
                return false;
            }
        } else {
            statsview_print_row(daemon, &figures, have_figures);
        }
    }
    if (options->json && !first) {
        json_t *root = json_pack("{s:s, s:f, s:o}", "time", now, "interval",
                                 options->interval_seconds, "daemons", daemons);
        if (!root || jsonname_print(stdout, root) != 0)
            return false;
    } else if (options->json) {
        json_decref(daemons);
    }
    fflush(stdout);
    return true;
}

/* Sleeps until deadline_ns (monotonic) unless a signal stops the command. */
static void statsview_sleep_until(int64_t deadline_ns)
{
    while (!statsview_stop) {
        int64_t left = deadline_ns - util_monotonic_ns();
        if (left <= 0)
            return;
        struct timespec pause = {.tv_sec = left / 1000000000, .tv_nsec = left % 1000000000};
        nanosleep(&pause, NULL);
    }
}

static int statsview_run(const struct statsview_options *options, struct statsview_list *list)
{
    bool terminal = !options->json && isatty(STDOUT_FILENO);
    int64_t interval_ns = (int64_t)(options->interval_seconds * 1e9);
    int64_t next_ns = util_monotonic_ns();
    struct sigaction action = {.sa_handler = statsview_on_signal};
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);

    for (long sample = 0; !statsview_stop && (options->count == 0 || sample <= options->count);
         sample++) {
        if (!statsview_sample(options, list, sample == 0, sample == 1, terminal)) {
            fprintf(stderr, "%s: out of memory\n", STATSVIEW_WHO);
            return CLIARGS_EXIT_FAILED;
        }
        if (options->count != 0 && sample == options->count)
            break;
        next_ns += interval_ns;
        statsview_sleep_until(next_ns);
    }
    return CLIARGS_EXIT_OK;
}

int statsview_main(int argc, char **argv)
{
    static const struct option long_options[] = {
        METATARGET_LONG_OPTIONS,
        {"interval", required_argument, NULL, 'i'},
        {"count", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    const struct cliargs_command command = {STATSVIEW_WHO, statsview_usage, long_options,
                                            statsview_take};
    struct statsview_options options = {.target.timeout_ms = STATSVIEW_DEFAULT_TIMEOUT_MS,
                                        .interval_seconds = 1.0};
    struct statsview_list list = {0};
    int operands;

    int exit_code = metatarget_parse(&command, &options.target, argc, argv, &options, &operands);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    for (int i = operands; i < argc; i++) {
        char host[64];
        uint16_t port;
        if (metrics_parse_address(argv[i], host, sizeof(host), &port) != 0) {
            statsview_list_clear(&list);
            return cliargs_usage_error(STATSVIEW_WHO,
                                       "an endpoint is HOST:PORT with an IPv4 HOST, not", argv[i]);
        }
        char address[96];
        snprintf(address, sizeof(address), "%s:%u", host, (unsigned)port);
        if (statsview_add(&list, STATSFIGURES_UNKNOWN, "", "", address) != 0) {
            statsview_list_clear(&list);
            fprintf(stderr, "%s: out of memory\n", STATSVIEW_WHO);
            return CLIARGS_EXIT_FAILED;
        }
    }
    if (list.count == 0) {
        exit_code = metatarget_resolve(&options.target, STATSVIEW_WHO);
        if (exit_code != 0)
            return exit_code;
        exit_code = statsview_discover(&options, &list);
        if (exit_code != CLIARGS_GO_ON) {
            statsview_list_clear(&list);
            return exit_code;
        }
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "%s: cannot start libcurl\n", STATSVIEW_WHO);
        statsview_list_clear(&list);
        return CLIARGS_EXIT_FAILED;
    }
    exit_code = statsview_run(&options, &list);
    curl_global_cleanup();
    statsview_list_clear(&list);
    return exit_code;
}
