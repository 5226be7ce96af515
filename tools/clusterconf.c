/*
 * @file clusterconf.c
 * See clusterconf.h. Parsing is line by line with explicit checks of every
 * value, so a hand-edited file that is wrong fails with its line number
 * instead of starting a cluster on the wrong port.
 */
#include "clusterconf.h"

#include "fmt.h"
#include "log.h"
#include "util.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLUSTERCONF_MAX_IO_TIMEOUT_MS 3600000L

void clusterconf_defaults(struct clusterconf *conf)
{
    memset(conf, 0, sizeof(*conf));
    conf->nodes = CLUSTERCONF_DEFAULT_NODES;
    conf->port = CLUSTERCONF_DEFAULT_PORT;
    snprintf(conf->host, sizeof(conf->host), "%s", CLUSTERCONF_DEFAULT_HOST);
    conf->io_timeout_ms = CLUSTERCONF_DEFAULT_IO_TIMEOUT_MS;
    snprintf(conf->log_level, sizeof(conf->log_level), "%s", CLUSTERCONF_DEFAULT_LOG_LEVEL);
}

static const char *clusterconf_env(const char *name)
{
    const char *value = getenv(name);
    return value && *value ? value : NULL;
}

int clusterconf_default_state_dir(char *out, size_t cap)
{
    const char *state = clusterconf_env("TESSERA_STATE");
    const char *xdg = clusterconf_env("XDG_STATE_HOME");
    const char *home = clusterconf_env("HOME");

    if (state)
        return fmt_into(out, cap, "%s", state);
    if (xdg)
        return fmt_into(out, cap, "%s/tessera", xdg);
    if (home)
        return fmt_into(out, cap, "%s/.local/state/tessera", home);
    return -ENOENT;
}

/* Cuts leading and trailing white space in place; returns the new start. */
static char *clusterconf_trim(char *text)
{
    size_t len;
    while (isspace((unsigned char)*text))
        text++;
    len = strlen(text);
    while (len > 0 && isspace((unsigned char)text[len - 1]))
        text[--len] = '\0';
    return text;
}

/* True when value has no white space (hosts and levels are single words). */
static int clusterconf_is_word(const char *value)
{
    if (!*value)
        return 0;
    for (; *value; value++) {
        if (isspace((unsigned char)*value))
            return 0;
    }
    return 1;
}

/*
 * Applies one key=value to conf. Returns 0, 1 for an unknown key, or
 * -EINVAL for a bad value.
 */
static int clusterconf_apply(struct clusterconf *conf, const char *key, const char *value)
{
    enum log_level level;

    if (strcmp(key, "nodes") == 0)
        return util_parse_long(value, 1, CLUSTERCONF_MAX_NODES, &conf->nodes);
    if (strcmp(key, "port") == 0)
        return util_parse_long(value, 1, 65535, &conf->port);
    if (strcmp(key, "io_timeout_ms") == 0)
        return util_parse_long(value, 1, CLUSTERCONF_MAX_IO_TIMEOUT_MS, &conf->io_timeout_ms);
    if (strcmp(key, "host") == 0) {
        if (!clusterconf_is_word(value))
            return -EINVAL;
        return fmt_into(conf->host, sizeof(conf->host), "%s", value) == 0 ? 0 : -EINVAL;
    }
    if (strcmp(key, "mount") == 0) {
        if (value[0] != '/')
            return -EINVAL;
        return fmt_into(conf->mount, sizeof(conf->mount), "%s", value) == 0 ? 0 : -EINVAL;
    }
    if (strcmp(key, "log_level") == 0) {
        if (log_level_parse(value, &level) != 0)
            return -EINVAL;
        return fmt_into(conf->log_level, sizeof(conf->log_level), "%s", value);
    }
    return 1;
}

/* Parses one line (already without its newline). 0 or -EINVAL (printed). */
static int clusterconf_parse_line(struct clusterconf *conf, char *line, const char *path,
                                  long line_number)
{
    char *text = clusterconf_trim(line);
    char *equals;
    char *key;
    char *value;
    int result;

    if (*text == '\0' || *text == '#')
        return 0;
    equals = strchr(text, '=');
    if (!equals) {
        fprintf(stderr, "tessera: %s:%ld: expected key=value, got '%s'\n", path, line_number, text);
        return -EINVAL;
    }
    *equals = '\0';
    key = clusterconf_trim(text);
    value = clusterconf_trim(equals + 1);
    result = clusterconf_apply(conf, key, value);
    if (result == 1) {
        fprintf(stderr, "tessera: %s:%ld: unknown key '%s' (ignored)\n", path, line_number, key);
        return 0;
    }
    if (result != 0) {
        fprintf(stderr, "tessera: %s:%ld: bad value for %s: '%s' (fix or delete the line)\n", path,
                line_number, key, value);
        return -EINVAL;
    }
    return 0;
}

int clusterconf_load(struct clusterconf *conf, const char *state_dir)
{
    char path[PATH_MAX];
    char *line = NULL;
    size_t line_cap = 0;
    long line_number = 0;
    FILE *file;
    int result = fmt_into(path, sizeof(path), "%s/%s", state_dir, CLUSTERCONF_FILE);

    if (result != 0)
        return result;
    file = fopen(path, "re");
    if (!file)
        return -errno;
    while (getline(&line, &line_cap, file) >= 0) {
        line_number++;
        line[strcspn(line, "\r\n")] = '\0';
        result = clusterconf_parse_line(conf, line, path, line_number);
        if (result != 0)
            goto out;
    }
    if (ferror(file))
        result = -EIO;
out:
    free(line);
    fclose(file);
    return result;
}

/* Writes the key=value lines; returns 0 or -EIO. */
static int clusterconf_write(FILE *file, const struct clusterconf *conf)
{
    fprintf(file, "# tessera local cluster; written by `tessera up`.\n"
                  "# Flags given to `tessera up` override these values and are saved.\n");
    fprintf(file, "nodes=%ld\nport=%ld\nhost=%s\nmount=%s\nio_timeout_ms=%ld\nlog_level=%s\n",
            conf->nodes, conf->port, conf->host, conf->mount, conf->io_timeout_ms, conf->log_level);
    if (fflush(file) != 0 || ferror(file))
        return -EIO;
    if (fsync(fileno(file)) != 0)
        return -errno;
    return 0;
}

int clusterconf_save(const struct clusterconf *conf, const char *state_dir)
{
    char path[PATH_MAX];
    char temp_path[PATH_MAX];
    FILE *file;
    int result;

    if (fmt_into(path, sizeof(path), "%s/%s", state_dir, CLUSTERCONF_FILE) != 0 ||
        fmt_into(temp_path, sizeof(temp_path), "%s.tmp", path) != 0)
        return -ENAMETOOLONG;
    file = fopen(temp_path, "we");
    if (!file)
        return -errno;
    result = clusterconf_write(file, conf);
    if (fclose(file) != 0 && result == 0)
        result = -errno;
    if (result != 0)
        goto fail_unlink;
    if (rename(temp_path, path) != 0) {
        result = -errno;
        goto fail_unlink;
    }
    return util_fsync_dir(state_dir);

fail_unlink:
    unlink(temp_path);
    return result;
}

int clusterconf_check(const struct clusterconf *conf, const char *who)
{
    if (conf->port + conf->nodes > 65535) {
        fprintf(stderr,
                "%s: port %ld with %ld datanodes needs ports up to %ld, above 65535; "
                "pick a lower --port\n",
                who, conf->port, conf->nodes, conf->port + conf->nodes);
        return -EINVAL;
    }
    return 0;
}

int clusterconf_meta_endpoint(const struct clusterconf *conf, char *out, size_t cap)
{
    return fmt_into(out, cap, "tcp://%s:%ld", conf->host, conf->port);
}

int clusterconf_node_endpoint(const struct clusterconf *conf, long node, char *out, size_t cap)
{
    return fmt_into(out, cap, "tcp://%s:%ld", conf->host, conf->port + node);
}

int clusterconf_find_meta(const char *state_dir, char *endpoint, size_t cap, const char *who)
{
    struct clusterconf conf;
    char dir[PATH_MAX];
    bool explicit_state = state_dir[0] != '\0';
    int result;

    clusterconf_defaults(&conf);
    if (explicit_state)
        result = fmt_into(dir, sizeof(dir), "%s", state_dir);
    else
        result = clusterconf_default_state_dir(dir, sizeof(dir));
    if (result == 0)
        result = clusterconf_load(&conf, dir);
    if (result == -EINVAL)
        return 1;
    if (result != 0 && explicit_state) {
        fprintf(stderr,
                "%s: no cluster in %s (%s/%s: %s); start one with tessera up --state %s, or "
                "pass --meta ENDPOINT\n",
                who, dir, dir, CLUSTERCONF_FILE, strerror(-result), dir);
        return 1;
    }
    /* No state at all: the default local cluster's meta. */
    if (clusterconf_meta_endpoint(&conf, endpoint, cap) != 0)
        return 1;
    return 0;
}
