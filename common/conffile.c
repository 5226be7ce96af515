/*
 * @file conffile.c
 * See conffile.h. libinih does the reading; this file checks each key
 * against the daemon's option table and turns the entries into arguments.
 *
 * Line numbers: Debian's libinih is built without INI_HANDLER_LINENO, so
 * the file is fed through ini_parse_stream() by a reader of our own that
 * counts the lines it hands over (inih asks for one line per call). A line
 * longer than inih's buffer is reported and handed over as a blank line,
 * never in pieces that could parse as keys of their own. Multi-line values
 * are turned off: a value continued on an indented line is not something
 * a command-line flag can say.
 *
 * Debian's libinih takes its limits as run-time settings: a line buffer on
 * the heap of CONFFILE_MAX_LINE bytes instead of its 200 on the stack, so a
 * path as long as PATH_MAX fits on a line.
 */
#include "conffile.h"

#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* inih's line buffer: PATH_MAX and a key, plus '\r', '\n' and '\0'. */
#define CONFFILE_MAX_LINE (PATH_MAX + 104)

/* Keys that name no setting: a file cannot set them. */
static const char *const conffile_reserved[] = {CONFFILE_FLAG, CONFFILE_CHECK_FLAG, "help",
                                                "version"};

struct conffile_entry {
    char *arg; /* "--name=value" or "--name" */
    int line;
};

struct conffile_reader {
    FILE *file;
    int line; /* of the line last handed to inih */
    const char *path;
    const char *who;
    const char *section;
    const struct option *options;
    struct conffile_entry *entries;
    size_t count;
    int errors;
    bool out_of_memory;
    char bad_section[64]; /* the last wrong section told, so it is told once */
};

__attribute__((format(printf, 3, 4))) static void conffile_error(struct conffile_reader *reader,
                                                                 int line, const char *format, ...)
{
    va_list args;
    if (line > 0)
        fprintf(stderr, "%s: %s:%d: ", reader->who, reader->path, line);
    else
        fprintf(stderr, "%s: %s: ", reader->who, reader->path);
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    reader->errors++;
}

/* inih's fgets: one line per call, counted; an overlong line read whole and replaced by "\n". */
static char *conffile_read_line(char *buffer, int size, void *stream)
{
    struct conffile_reader *reader = stream;
    if (!fgets(buffer, size, reader->file))
        return NULL;
    reader->line++;
    size_t len = strlen(buffer);
    if (len > 0 && buffer[len - 1] != '\n' && !feof(reader->file)) {
        int c;
        while ((c = fgetc(reader->file)) != EOF && c != '\n')
            ;
        conffile_error(reader, reader->line, "line longer than %d characters", size - 3);
        snprintf(buffer, (size_t)size, "\n");
    }
    return buffer;
}

/* "true", "yes", "on", "1" -> 1; "false", "no", "off", "0" -> 0; else -1. */
static int conffile_switch_value(const char *value)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(value, yes[i]) == 0)
            return 1;
        if (strcasecmp(value, no[i]) == 0)
            return 0;
    }
    return -1;
}

static const struct option *conffile_option(const struct option *options, const char *name)
{
    for (const struct option *option = options; option->name; option++) {
        if (strcmp(option->name, name) == 0)
            return option;
    }
    return NULL;
}

static bool conffile_is_reserved(const char *name)
{
    for (size_t i = 0; i < sizeof(conffile_reserved) / sizeof(conffile_reserved[0]); i++) {
        if (strcmp(conffile_reserved[i], name) == 0)
            return true;
    }
    return false;
}

/* The "did you mean" for an unknown key: among the table's names but the reserved. */
static const char *conffile_closest(const struct option *options, const char *name)
{
    const char *names[128];
    size_t count = 0;
    for (const struct option *option = options; option->name && count < 128; option++) {
        if (!conffile_is_reserved(option->name))
            names[count++] = option->name;
    }
    return util_closest_name(name, names, count);
}

static int conffile_add(struct conffile_reader *reader, char *arg, int line)
{
    struct conffile_entry *grown =
        realloc(reader->entries, (reader->count + 1) * sizeof(*reader->entries));
    if (!grown) {
        free(arg);
        reader->out_of_memory = true;
        return 0;
    }
    reader->entries = grown;
    reader->entries[reader->count].arg = arg;
    reader->entries[reader->count].line = line;
    reader->count++;
    return 1;
}

/* inih's handler: one key. Always goes on (returns 1) so every error is told. */
static int conffile_take(void *user, const char *section, const char *key, const char *value)
{
    struct conffile_reader *reader = user;
    int line = reader->line;
    char name[64];

    if (!section[0]) {
        conffile_error(reader, line, "'%s' comes before any section: begin the file with [%s]", key,
                       reader->section);
        return 1;
    }
    if (strcmp(section, reader->section) != 0) {
        if (strcmp(section, reader->bad_section) != 0)
            conffile_error(reader, line, "section [%s] is not for %s: its section is [%s]", section,
                           reader->who, reader->section);
        snprintf(reader->bad_section, sizeof(reader->bad_section), "%s", section);
        return 1;
    }
    /* -o style names (underscores) are the same keys. */
    snprintf(name, sizeof(name), "%s", key);
    for (char *c = name; *c; c++) {
        if (*c == '_')
            *c = '-';
    }
    const struct option *option = conffile_option(reader->options, name);
    if (!option || conffile_is_reserved(name)) {
        const char *guess = option ? NULL : conffile_closest(reader->options, name);
        if (option)
            conffile_error(reader, line, "'%s' cannot be set in a file", key);
        else
            conffile_error(reader, line, "unknown key '%s'%s%s%s", key,
                           guess ? " (did you mean '" : "", guess ? guess : "", guess ? "'?)" : "");
        return 1;
    }
    for (size_t i = 0; i < reader->count; i++) {
        const char *arg = reader->entries[i].arg + 2;
        size_t len = strlen(name);
        if (strncmp(arg, name, len) == 0 && (arg[len] == '=' || arg[len] == '\0')) {
            conffile_error(reader, line, "'%s' is set again (first on line %d)", key,
                           reader->entries[i].line);
            return 1;
        }
    }
    char *arg = NULL;
    if (option->has_arg == no_argument) {
        int on = conffile_switch_value(value);
        if (on < 0) {
            conffile_error(reader, line, "'%s' is a switch: true or false, not '%s'", key, value);
            return 1;
        }
        if (!on)
            return 1;
        if (asprintf(&arg, "--%s", name) < 0)
            arg = NULL;
    } else {
        if (!value[0]) {
            conffile_error(reader, line, "'%s' needs a value", key);
            return 1;
        }
        if (asprintf(&arg, "--%s=%s", name, value) < 0)
            arg = NULL;
    }
    if (!arg) {
        reader->out_of_memory = true;
        return 1;
    }
    conffile_add(reader, arg, line);
    return 1;
}

/* Finds --config FILE / --config=FILE and --check-config in argv. */
static void conffile_scan_argv(int argc, char **argv, const char **path, bool *checking)
{
    const size_t flag_len = strlen("--" CONFFILE_FLAG);
    *path = NULL;
    *checking = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--" CONFFILE_CHECK_FLAG) == 0)
            *checking = true;
        else if (strcmp(argv[i], "--" CONFFILE_FLAG) == 0 && i + 1 < argc)
            *path = argv[++i];
        else if (strncmp(argv[i], "--" CONFFILE_FLAG "=", flag_len + 1) == 0)
            *path = argv[i] + flag_len + 1;
    }
}

static void conffile_free_entries(struct conffile_reader *reader)
{
    for (size_t i = 0; i < reader->count; i++)
        free(reader->entries[i].arg);
    free(reader->entries);
    reader->entries = NULL;
    reader->count = 0;
}

/* Reads and checks the file into reader->entries. 0, or 2 (errors printed). */
static int conffile_read(struct conffile_reader *reader)
{
    reader->file = fopen(reader->path, "re");
    if (!reader->file) {
        fprintf(stderr, "%s: cannot read the configuration file %s: %s\n", reader->who,
                reader->path, strerror(errno));
        return 2;
    }
    ini_allow_multiline = false;
    ini_use_stack = false;
    ini_allow_realloc = false;
    ini_initial_alloc = CONFFILE_MAX_LINE;
    ini_max_line = CONFFILE_MAX_LINE;
    int rc = ini_parse_stream(conffile_read_line, reader, conffile_take, reader);
    fclose(reader->file);
    reader->file = NULL;
    if (rc > 0)
        conffile_error(reader, rc, "not a 'key = value' line, a [section] or a comment");
    if (rc < 0 || reader->out_of_memory) {
        fprintf(stderr, "%s: out of memory reading %s\n", reader->who, reader->path);
        reader->errors++;
    }
    return reader->errors > 0 ? 2 : 0;
}

int conffile_load(int argc, char **argv, const char *who, const char *section,
                  const struct option *options, const char *default_path, struct conffile *config)
{
    struct conffile_reader reader = {.who = who, .section = section, .options = options};
    const char *path;
    int rc;

    memset(config, 0, sizeof(*config));
    conffile_scan_argv(argc, argv, &path, &config->checking);
    if (!path && default_path && access(default_path, F_OK) == 0)
        path = default_path;
    if (path) {
        reader.path = path;
        rc = conffile_read(&reader);
        if (rc != 0) {
            conffile_free_entries(&reader);
            return rc;
        }
    }
    size_t total = (size_t)argc + reader.count;
    config->argv = calloc(total + 1, sizeof(*config->argv));
    config->lines = calloc(total + 1, sizeof(*config->lines));
    config->path = path ? strdup(path) : NULL;
    if (!config->argv || !config->lines || (path && !config->path)) {
        fprintf(stderr, "%s: out of memory\n", who);
        conffile_free_entries(&reader);
        conffile_free(config);
        return 2;
    }
    /* Every element is owned: the command line's are copied too. */
    size_t at = 0;
    config->argv[at++] = strdup(argv[0]);
    for (size_t i = 0; i < reader.count; i++) {
        config->lines[at] = reader.entries[i].line;
        config->argv[at++] = reader.entries[i].arg;
        reader.entries[i].arg = NULL;
    }
    for (int i = 1; i < argc; i++)
        config->argv[at++] = strdup(argv[i]);
    config->argc = (int)at;
    conffile_free_entries(&reader);
    for (size_t i = 0; i < at; i++) {
        if (!config->argv[i]) {
            fprintf(stderr, "%s: out of memory\n", who);
            conffile_free(config);
            return 2;
        }
    }
    return 0;
}

/* Removes argv[index] (and its line), keeping the rest in order. */
static void conffile_drop(struct conffile *config, int index)
{
    free(config->argv[index]);
    for (int i = index; i < config->argc; i++) {
        config->argv[i] = config->argv[i + 1];
        config->lines[i] = config->lines[i + 1];
    }
    config->argc--;
}

int conffile_parse(struct conffile *config, const char *who, conffile_parse_fn *parse,
                   void *context)
{
    int first = 0;

    for (;;) {
        int failed_arg = -1;
        /* getopt keeps its place between calls: 0 starts it afresh. */
        optind = 0;
        int rc = parse(config->argc, config->argv, context, &failed_arg);
        if (rc == 0)
            break;
        if (first == 0)
            first = rc;
        if (rc != 2 || failed_arg <= 0 || failed_arg >= config->argc ||
            config->lines[failed_arg] == 0)
            break;
        fprintf(stderr, "%s: (%s is set on line %d of %s)\n", who, config->argv[failed_arg],
                config->lines[failed_arg], config->path);
        if (!config->checking)
            break;
        conffile_drop(config, failed_arg);
    }
    if (config->checking && first == 0) {
        printf("%s: %s: the configuration is valid\n", who,
               config->path ? config->path : "no file, the command line");
        fflush(stdout);
    }
    return first;
}

int conffile_find(const struct conffile *config, const char *name)
{
    size_t len = strlen(name);
    for (int i = config->argc - 1; i > 0; i--) {
        const char *arg = config->argv[i];
        if (strncmp(arg, "--", 2) == 0 && strncmp(arg + 2, name, len) == 0 &&
            (arg[2 + len] == '=' || arg[2 + len] == '\0'))
            return i;
    }
    return -1;
}

void conffile_free(struct conffile *config)
{
    if (config->argv) {
        for (int i = 0; i < config->argc; i++)
            free(config->argv[i]);
    }
    free(config->argv);
    free(config->lines);
    free(config->path);
    memset(config, 0, sizeof(*config));
}

int conffile_section(const char *path, char *section, size_t cap)
{
    FILE *file = fopen(path, "re");
    char *line = NULL;
    size_t line_cap = 0;
    int rc = -ENOENT;

    if (!file)
        return -errno;
    /* The first "[name]" line: a section header needs no key under it. */
    while (getline(&line, &line_cap, file) > 0) {
        char *start = line + strspn(line, " \t");
        char *end = strchr(start, ']');
        if (*start == '[' && end) {
            *end = '\0';
            snprintf(section, cap, "%s", start + 1);
            rc = 0;
            break;
        }
    }
    free(line);
    fclose(file);
    return rc;
}

int conffile_write_key(FILE *out, const char *key, const char *value)
{
    size_t len = strlen(value);
    if (len == 0 || len + strlen(key) + 3 > CONFFILE_MAX_LINE - 3 || strpbrk(value, "\r\n") ||
        strchr(" \t", value[0]) || strchr(" \t", value[len - 1]) || strstr(value, " ;") ||
        strstr(value, "\t;"))
        return -EINVAL;
    return fprintf(out, "%s = %s\n", key, value) < 0 ? -EIO : 0;
}
