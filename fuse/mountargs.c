/*
 * @file mountargs.c
 * See mountargs.h. Every option with a value has four templates, all
 * storing its text in given[]: "--name VALUE", "--name=VALUE", and -o
 * "name_with_underscores=VALUE" or "name-with-dashes=VALUE"; the values are
 * checked once parsing is done, the same way whichever form set them.
 * --meta is the exception: libfuse matches a "--meta VALUE" template as a
 * prefix, so it would take "--meta-timeout-ms" too; its handler ignores a
 * "value" that starts with a dash (an option's remainder, never an
 * endpoint).
 */
#include "mountargs.h"

#include "conffile.h"
#include "metrics.h"
#include "util.h"

#include <fuse_lowlevel.h>
#include <fuse_opt.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum mountargs_value {
    MOUNTARGS_META,
    MOUNTARGS_IO_TIMEOUT,
    MOUNTARGS_META_TIMEOUT,
    MOUNTARGS_ATTR_TIMEOUT,
    MOUNTARGS_MEMORY,
    MOUNTARGS_READAHEAD,
    MOUNTARGS_IO_THREADS,
    MOUNTARGS_STATAHEAD,
    MOUNTARGS_ASYNC_UNLINKS,
    MOUNTARGS_ASYNC_CREATES,
    MOUNTARGS_TILE_STREAMS,
    MOUNTARGS_ARRAY_DIRECT,
    MOUNTARGS_MACHINE,
    MOUNTARGS_LOG_LEVEL,
    MOUNTARGS_KEY,
    MOUNTARGS_MOUNTPOINT,
    MOUNTARGS_FUSE_OPTIONS,
    MOUNTARGS_LOG_FILE,
    MOUNTARGS_METRICS,
    MOUNTARGS_VALUES
};

/* Each value option's name as a flag; its -o name has underscores for dashes. */
static const char *const mountargs_names[MOUNTARGS_VALUES] = {
    [MOUNTARGS_META] = "meta",
    [MOUNTARGS_IO_TIMEOUT] = "io-timeout-ms",
    [MOUNTARGS_META_TIMEOUT] = "meta-timeout-ms",
    [MOUNTARGS_ATTR_TIMEOUT] = "attr-timeout",
    [MOUNTARGS_MEMORY] = "memory",
    [MOUNTARGS_READAHEAD] = "readahead-tiles",
    [MOUNTARGS_IO_THREADS] = "io-threads",
    [MOUNTARGS_STATAHEAD] = "statahead",
    [MOUNTARGS_ASYNC_UNLINKS] = "async-unlinks",
    [MOUNTARGS_ASYNC_CREATES] = "async-creates",
    [MOUNTARGS_TILE_STREAMS] = "tile-streams",
    [MOUNTARGS_ARRAY_DIRECT] = "array-direct",
    [MOUNTARGS_MACHINE] = "machine",
    [MOUNTARGS_LOG_LEVEL] = "log-level",
    [MOUNTARGS_KEY] = "key",
    [MOUNTARGS_MOUNTPOINT] = "mountpoint",
    [MOUNTARGS_FUSE_OPTIONS] = "fuse-options",
    [MOUNTARGS_LOG_FILE] = "log-file",
    [MOUNTARGS_METRICS] = "metrics",
};

enum mountargs_key {
    MOUNTARGS_KEY_META = 100,
    MOUNTARGS_KEY_FOREGROUND,
    MOUNTARGS_KEY_SINGLE,
    MOUNTARGS_KEY_DEBUG,
    MOUNTARGS_KEY_REPLACE_DEAD,
    MOUNTARGS_KEY_HELP,
    MOUNTARGS_KEY_VERSION,
    MOUNTARGS_KEY_IGNORED, /* mount(8)'s -n and -v, fstab-only -o options */
};

#define MOUNTARGS_AT(value) (offsetof(struct mount_options, given) + (value) * sizeof(char *))
#define MOUNTARGS_VALUE(flag, o_name, value)                                                       \
    {"--" flag " %s", MOUNTARGS_AT(value), 0}, {"--" flag "=%s", MOUNTARGS_AT(value), 0},         \
        {o_name "=%s", MOUNTARGS_AT(value), 0}, {flag "=%s", MOUNTARGS_AT(value), 0}

static const struct fuse_opt mountargs_templates[] = {
    FUSE_OPT_KEY("--meta ", MOUNTARGS_KEY_META),
    FUSE_OPT_KEY("--meta=", MOUNTARGS_KEY_META),
    FUSE_OPT_KEY("meta=", MOUNTARGS_KEY_META),
    MOUNTARGS_VALUE("io-timeout-ms", "io_timeout_ms", MOUNTARGS_IO_TIMEOUT),
    MOUNTARGS_VALUE("meta-timeout-ms", "meta_timeout_ms", MOUNTARGS_META_TIMEOUT),
    MOUNTARGS_VALUE("attr-timeout", "attr_timeout", MOUNTARGS_ATTR_TIMEOUT),
    MOUNTARGS_VALUE("memory", "memory", MOUNTARGS_MEMORY),
    MOUNTARGS_VALUE("readahead-tiles", "readahead_tiles", MOUNTARGS_READAHEAD),
    MOUNTARGS_VALUE("io-threads", "io_threads", MOUNTARGS_IO_THREADS),
    MOUNTARGS_VALUE("statahead", "statahead", MOUNTARGS_STATAHEAD),
    MOUNTARGS_VALUE("async-unlinks", "async_unlinks", MOUNTARGS_ASYNC_UNLINKS),
    MOUNTARGS_VALUE("async-creates", "async_creates", MOUNTARGS_ASYNC_CREATES),
    MOUNTARGS_VALUE("tile-streams", "tile_streams", MOUNTARGS_TILE_STREAMS),
    MOUNTARGS_VALUE("array-direct", "array_direct", MOUNTARGS_ARRAY_DIRECT),
    MOUNTARGS_VALUE("machine", "machine", MOUNTARGS_MACHINE),
    MOUNTARGS_VALUE("log-level", "log_level", MOUNTARGS_LOG_LEVEL),
    MOUNTARGS_VALUE("key", "key", MOUNTARGS_KEY),
    MOUNTARGS_VALUE("mountpoint", "mountpoint", MOUNTARGS_MOUNTPOINT),
    MOUNTARGS_VALUE("fuse-options", "fuse_options", MOUNTARGS_FUSE_OPTIONS),
    MOUNTARGS_VALUE("log-file", "log_file", MOUNTARGS_LOG_FILE),
    MOUNTARGS_VALUE("metrics", "metrics", MOUNTARGS_METRICS),
    /* Read before parsing (conffile.h); the check ends the run after it. */
    FUSE_OPT_KEY("--" CONFFILE_FLAG " ", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("--" CONFFILE_FLAG "=", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("--" CONFFILE_CHECK_FLAG, MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("-f", MOUNTARGS_KEY_FOREGROUND),
    FUSE_OPT_KEY("-s", MOUNTARGS_KEY_SINGLE),
    FUSE_OPT_KEY("-d", MOUNTARGS_KEY_DEBUG),
    FUSE_OPT_KEY("--replace-dead", MOUNTARGS_KEY_REPLACE_DEAD),
    FUSE_OPT_KEY("-h", MOUNTARGS_KEY_HELP),
    FUSE_OPT_KEY("--help", MOUNTARGS_KEY_HELP),
    FUSE_OPT_KEY("-V", MOUNTARGS_KEY_VERSION),
    FUSE_OPT_KEY("--version", MOUNTARGS_KEY_VERSION),
    /* What mount(8) adds for a helper: -t TYPE.SUBTYPE, -N NAMESPACE, -n, -v. */
    FUSE_OPT_KEY("-t ", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("-N ", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("-n", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("-v", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("_netdev", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("nofail", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("noauto", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("auto", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("user", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("users", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("nouser", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_KEY("defaults", MOUNTARGS_KEY_IGNORED),
    FUSE_OPT_END,
};

int mountargs_add_fuse_option(struct mount_options *options, const char *option)
{
    size_t used = strlen(options->fuse_options);
    int written = snprintf(options->fuse_options + used, sizeof(options->fuse_options) - used,
                           "%s%s", used ? "," : "", option);
    if (written < 0 || (size_t)written >= sizeof(options->fuse_options) - used) {
        fprintf(stderr, "tessera-mount: -o options too long (at most %zu bytes)\n",
                sizeof(options->fuse_options) - 1);
        return -1;
    }
    return 0;
}

static int mountargs_unknown(const char *arg)
{
    const char *guess = strncmp(arg, "--", 2) == 0
                            ? util_closest_name(arg + 2, mountargs_names, MOUNTARGS_VALUES)
                            : NULL;
    fprintf(stderr, "tessera-mount: unknown option %s%s%s%s (see --help)\n", arg,
            guess ? " (did you mean --" : "", guess ? guess : "", guess ? "?)" : "");
    return -1;
}

static int mountargs_take(void *data, const char *arg, int key, struct fuse_args *outargs)
{
    struct mount_options *options = data; /* also the base of the templates' offsets */
    (void)outargs;
    switch (key) {
    case MOUNTARGS_KEY_META: {
        const char *value = strncmp(arg, "--meta=", 7) == 0 ? arg + 7
                            : strncmp(arg, "meta=", 5) == 0 ? arg + 5
                                                              : arg + strlen("--meta");
        if (value[0] == '-')
            return 0; /* --meta-timeout-ms and the like: their own template takes them */
        char *copy = strdup(value);
        if (!copy)
            return -1;
        free(options->given[MOUNTARGS_META]);
        options->given[MOUNTARGS_META] = copy;
        return 0;
    }
    case MOUNTARGS_KEY_FOREGROUND: options->foreground = 1; return 0;
    case MOUNTARGS_KEY_SINGLE: options->single_thread = 1; return 0;
    case MOUNTARGS_KEY_DEBUG: options->debug = options->foreground = 1; return 0;
    case MOUNTARGS_KEY_REPLACE_DEAD: options->replace_dead = 1; return 0;
    case MOUNTARGS_KEY_HELP: options->mode = MOUNTARGS_HELP; return 0;
    case MOUNTARGS_KEY_VERSION: options->mode = MOUNTARGS_VERSION; return 0;
    case MOUNTARGS_KEY_IGNORED: return 0;
    case FUSE_OPT_KEY_NONOPT:
        if (options->positionals >= 2) {
            fprintf(stderr,
                    "tessera-mount: too many arguments at %s: want MOUNTPOINT, or SOURCE "
                    "MOUNTPOINT as mount(8) gives them (see --help)\n",
                    arg);
            return -1;
        }
        options->positional[options->positionals] = strdup(arg);
        return options->positional[options->positionals++] ? 0 : -1;
    case FUSE_OPT_KEY_OPT:
        if (arg[0] == '-')
            return mountargs_unknown(arg);
        if (strncmp(arg, "x-", 2) == 0 || strncmp(arg, "comment=", 8) == 0)
            return 0; /* for fstab's readers (systemd, mount), not for the filesystem */
        return mountargs_add_fuse_option(options, arg);
    default: return -1;
    }
}

/* "tcp://HOST:PORT", "tessera:tcp://HOST:PORT" or "tessera" (NULL: keep meta=). */
static int mountargs_source(const char *source, const char **endpoint)
{
    *endpoint = NULL;
    if (strcmp(source, "tessera") == 0 || strcmp(source, "none") == 0)
        return 0;
    if (strncmp(source, "tessera:", 8) == 0)
        source += 8;
    if (!strstr(source, "://")) {
        fprintf(stderr,
                "tessera-mount: SOURCE '%s' is not a meta endpoint: give tcp://HOST:PORT (or "
                "tessera and -o meta=tcp://HOST:PORT)\n",
                source);
        return -1;
    }
    *endpoint = source;
    return 0;
}

static int mountargs_bad(struct mount_options *options, enum mountargs_value value,
                         const char *wants, const char *given)
{
    char o_name[32];
    snprintf(o_name, sizeof(o_name), "%s", mountargs_names[value]);
    for (char *c = o_name; *c; c++)
        if (*c == '-')
            *c = '_';
    fprintf(stderr, "tessera-mount: --%s (-o %s=) wants %s, not '%s'\n", mountargs_names[value],
            o_name, wants, given);
    options->bad_option = mountargs_names[value];
    return 2;
}

/* The options whose value is a whole number in a range. */
static const struct {
    enum mountargs_value value;
    long low, high;
    const char *wants;
    size_t field; /* offset of its long in struct mount_options */
} mountargs_ranges[] = {
    {MOUNTARGS_IO_TIMEOUT, 100, 3600000, "milliseconds in 100..3600000",
     offsetof(struct mount_options, io_timeout_ms)},
    {MOUNTARGS_META_TIMEOUT, 100, 3600000, "milliseconds in 100..3600000",
     offsetof(struct mount_options, meta_timeout_ms)},
    {MOUNTARGS_READAHEAD, 0, 14, "0..14", offsetof(struct mount_options, readahead_tiles)},
    {MOUNTARGS_IO_THREADS, 1, 256, "1..256", offsetof(struct mount_options, io_threads)},
    {MOUNTARGS_STATAHEAD, 0, 4096, "0..4096", offsetof(struct mount_options, statahead)},
    {MOUNTARGS_ASYNC_UNLINKS, 0, 65536, "0..65536", offsetof(struct mount_options, async_unlinks)},
    {MOUNTARGS_ASYNC_CREATES, 0, 1, "0 or 1", offsetof(struct mount_options, async_creates)},
    {MOUNTARGS_TILE_STREAMS, 0, 1, "0 or 1", offsetof(struct mount_options, tile_streams)},
    {MOUNTARGS_ARRAY_DIRECT, 0, 1, "0 or 1", offsetof(struct mount_options, array_direct)},
};

/* Checks and converts every value given. */
static int mountargs_convert(struct mount_options *options)
{
    char **given = options->given;
    for (size_t i = 0; i < sizeof(mountargs_ranges) / sizeof(mountargs_ranges[0]); i++) {
        const char *text = given[mountargs_ranges[i].value];
        long *into = (long *)((char *)options + mountargs_ranges[i].field);
        if (text &&
            util_parse_long(text, mountargs_ranges[i].low, mountargs_ranges[i].high, into) != 0)
            return mountargs_bad(options, mountargs_ranges[i].value, mountargs_ranges[i].wants,
                                 text);
    }
    if (given[MOUNTARGS_MEMORY] &&
        (util_parse_size(given[MOUNTARGS_MEMORY], &options->memory_bytes) != 0 ||
         options->memory_bytes < options->memory_min_bytes)) {
        char wants[64];
        snprintf(wants, sizeof(wants), "a size of at least %lluM",
                 (unsigned long long)(options->memory_min_bytes >> 20));
        return mountargs_bad(options, MOUNTARGS_MEMORY, wants, given[MOUNTARGS_MEMORY]);
    }
    if (given[MOUNTARGS_ATTR_TIMEOUT]) {
        char *end = NULL;
        options->attr_timeout = strtod(given[MOUNTARGS_ATTR_TIMEOUT], &end);
        if (end == given[MOUNTARGS_ATTR_TIMEOUT] || *end != '\0' || !(options->attr_timeout >= 0) ||
            options->attr_timeout > 3600)
            return mountargs_bad(options, MOUNTARGS_ATTR_TIMEOUT, "seconds in 0..3600",
                                 given[MOUNTARGS_ATTR_TIMEOUT]);
    }
    if (given[MOUNTARGS_MACHINE]) {
        size_t len = strlen(given[MOUNTARGS_MACHINE]);
        if (len == 0 || len >= sizeof(options->machine))
            return mountargs_bad(options, MOUNTARGS_MACHINE, "a name of 1 to 255 bytes",
                                 given[MOUNTARGS_MACHINE]);
        memcpy(options->machine, given[MOUNTARGS_MACHINE], len + 1);
    }
    if (given[MOUNTARGS_LOG_LEVEL] &&
        log_level_parse(given[MOUNTARGS_LOG_LEVEL], &options->log_level) != 0)
        return mountargs_bad(options, MOUNTARGS_LOG_LEVEL, "error, warn, info or debug",
                             given[MOUNTARGS_LOG_LEVEL]);
    options->key_path = given[MOUNTARGS_KEY]; /* read (and checked) by curve_setup() */
    options->log_file = given[MOUNTARGS_LOG_FILE];
    if (given[MOUNTARGS_METRICS]) {
        char host[64];
        uint16_t port;
        if (metrics_parse_address(given[MOUNTARGS_METRICS], host, sizeof(host), &port) != 0)
            return mountargs_bad(options, MOUNTARGS_METRICS, "[HOST:]PORT with an IPv4 HOST",
                                 given[MOUNTARGS_METRICS]);
        options->metrics = given[MOUNTARGS_METRICS];
    }
    if (given[MOUNTARGS_FUSE_OPTIONS] &&
        mountargs_add_fuse_option(options, given[MOUNTARGS_FUSE_OPTIONS]) != 0) {
        options->bad_option = mountargs_names[MOUNTARGS_FUSE_OPTIONS];
        return 2;
    }
    return 0;
}

/* MOUNTPOINT, or SOURCE MOUNTPOINT; the endpoint from SOURCE or meta=. */
static int mountargs_place(struct mount_options *options, size_t positionals)
{
    const char *meta = options->given[MOUNTARGS_META];
    if (positionals == 0 && !options->given[MOUNTARGS_MOUNTPOINT]) {
        fprintf(stderr, "tessera-mount: no MOUNTPOINT given (see --help)\n");
        return 2;
    }
    /* One given on the command line wins over --mountpoint (a file's, say). */
    options->mountpoint = positionals > 0 ? options->positional[positionals - 1]
                                          : options->given[MOUNTARGS_MOUNTPOINT];
    if (positionals == 2) {
        const char *source;
        if (mountargs_source(options->positional[0], &source) != 0)
            return 2;
        if (source && meta && strcmp(source, meta) != 0) {
            fprintf(stderr,
                    "tessera-mount: SOURCE %s and meta=%s name different metas: give one\n",
                    source, meta);
            return 2;
        }
        if (source)
            meta = source;
    }
    options->meta = meta ? meta : MOUNTARGS_DEFAULT_META;
    return 0;
}

/* libfuse logs nothing while it probes: the caller says what was wrong. */
static void mountargs_quiet_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
    (void)level, (void)fmt, (void)ap;
}

/* Whether libfuse takes the option list: its own parser, the one
 * fuse_session_new runs for the real mount, on a session never mounted. */
static bool mountargs_fuse_takes(const char *option_list)
{
    static const struct fuse_lowlevel_ops no_ops;
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    if (fuse_opt_add_arg(&args, "tessera-mount") != 0 ||
        (option_list[0] && (fuse_opt_add_arg(&args, "-o") != 0 ||
                            fuse_opt_add_arg(&args, option_list) != 0))) {
        fuse_opt_free_args(&args);
        return false;
    }
    fuse_set_log_func(mountargs_quiet_log);
    struct fuse_session *probe = fuse_session_new(&args, &no_ops, sizeof(no_ops), NULL);
    fuse_set_log_func(NULL);
    fuse_opt_free_args(&args);
    if (probe)
        fuse_session_destroy(probe);
    return probe != NULL;
}

int mountargs_check_fuse_options(const struct mount_options *options)
{
    /* Before the mount forks and waits for meta: a typo used to fail only
     * after meta's timeout, or never when meta was up. */
    if (mountargs_fuse_takes(options->fuse_options))
        return 0;
    char list[sizeof(options->fuse_options)];
    memcpy(list, options->fuse_options, sizeof(list));
    char *save = NULL;
    for (char *option = strtok_r(list, ",", &save); option; option = strtok_r(NULL, ",", &save)) {
        if (mountargs_fuse_takes(option))
            continue;
        /* A near miss of one of ours, as -o spells it (io_timeout for io_timeout_ms). */
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)strcspn(option, "="), option);
        for (char *c = name; *c; c++)
            if (*c == '_')
                *c = '-';
        const char *guess = util_closest_name(name, mountargs_names, MOUNTARGS_VALUES);
        char guess_o[64] = "";
        if (guess) {
            snprintf(guess_o, sizeof(guess_o), "%s", guess);
            for (char *c = guess_o; *c; c++)
                if (*c == '-')
                    *c = '_';
        }
        fprintf(stderr,
                "tessera-mount: unknown mount option -o %s: neither tessera's (see --help) nor "
                "one FUSE or mount(8) takes%s%s%s\n",
                option, guess ? " (did you mean " : "", guess_o, guess ? "?)" : "");
    }
    return -1;
}

int mountargs_parse(int argc, char **argv, struct mount_options *options)
{
    uint64_t memory_min = options->memory_min_bytes;
    memset(options, 0, sizeof(*options));
    options->memory_min_bytes = memory_min;
    util_machine_name(options->machine, sizeof(options->machine));
    options->meta = MOUNTARGS_DEFAULT_META;
    options->io_timeout_ms = 5000;
    options->meta_timeout_ms = 5000;
    options->attr_timeout = 1.0;
    options->memory_bytes = 256u << 20;
    options->readahead_tiles = 6;
    options->io_threads = 16;
    options->statahead = 1024;
    options->async_unlinks = 256;
    options->async_creates = 1;
    options->tile_streams = 1;
    options->array_direct = 1;
    options->log_level = LOG_LEVEL_INFO;

    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    int rc = fuse_opt_parse(&args, options, mountargs_templates, mountargs_take);
    fuse_opt_free_args(&args);
    if (rc != 0)
        return 2; /* said why (our handler), or libfuse did (a value missing) */
    if (options->mode != 0)
        return options->mode;
    rc = mountargs_convert(options);
    if (rc == 0)
        rc = mountargs_place(options, options->positionals);
    return rc != 0 || mountargs_check_fuse_options(options) == 0 ? rc : 2;
}

const struct option *mountargs_long_options(void)
{
    /* Built once from mountargs_names: the one list of tessera-mount's options. */
    static struct option table[MOUNTARGS_VALUES + 6];
    if (!table[0].name) {
        size_t at = 0;
        for (size_t i = 0; i < MOUNTARGS_VALUES; i++)
            table[at++] = (struct option){mountargs_names[i], required_argument, NULL, 0};
        table[at++] = (struct option){"replace-dead", no_argument, NULL, 0};
        table[at++] = (struct option){CONFFILE_FLAG, required_argument, NULL, 0};
        table[at++] = (struct option){CONFFILE_CHECK_FLAG, no_argument, NULL, 0};
        table[at++] = (struct option){"help", no_argument, NULL, 0};
        table[at++] = (struct option){"version", no_argument, NULL, 0};
    }
    return table;
}

void mountargs_free(struct mount_options *options)
{
    for (size_t i = 0; i < sizeof(options->given) / sizeof(options->given[0]); i++) {
        free(options->given[i]);
        options->given[i] = NULL;
    }
    for (size_t i = 0; i < sizeof(options->positional) / sizeof(options->positional[0]); i++) {
        free(options->positional[i]);
        options->positional[i] = NULL;
    }
}
