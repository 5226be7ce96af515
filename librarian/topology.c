/*
 * @file topology.c
 * The topology file's parser (topology.h). Line by line, into arrays
 * that grow by doubling; every error names its line. The "parent declared
 * earlier" rule makes cycles impossible, so the result is always one tree
 * once a root is present.
 */
#include "topology.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 6

static void set_error(char *error, size_t size, const char *format, ...)
{
    va_list args;
    if (!error || size == 0)
        return;
    va_start(args, format);
    vsnprintf(error, size, format, args);
    va_end(args);
}

void topology_release(struct topology *topology)
{
    if (!topology)
        return;
    for (size_t v = 0; v < topology->subcluster_count; v++)
        free(topology->subcluster_names[v]);
    for (size_t m = 0; m < topology->machine_count; m++)
        free(topology->machine_names[m]);
    free(topology->subcluster_names);
    free(topology->parent);
    free(topology->link_bytes_per_sec);
    free(topology->machine_names);
    free(topology->subcluster_of_machine);
    memset(topology, 0, sizeof(*topology));
}

static int find_name(char *const *names, size_t count, const char *name, size_t *out)
{
    for (size_t k = 0; k < count; k++) {
        if (strcmp(names[k], name) == 0) {
            *out = k;
            return 0;
        }
    }
    return -ENOENT;
}

int topology_subcluster_index(const struct topology *topology, const char *name, size_t *out)
{
    return find_name(topology->subcluster_names, topology->subcluster_count, name, out);
}

int topology_subcluster_of(const struct topology *topology, const char *machine, size_t *out)
{
    size_t m;
    int rc = find_name(topology->machine_names, topology->machine_count, machine, &m);
    if (rc == 0)
        *out = topology->subcluster_of_machine[m];
    return rc;
}

/* "125M" -> 125e6. Returns false for anything but a positive whole number and suffix. */
static bool parse_rate(const char *word, double *out)
{
    char *end;
    unsigned long long value;
    double scale = 1;

    if (*word < '0' || *word > '9')
        return false;
    errno = 0;
    value = strtoull(word, &end, 10);
    if (errno || value == 0)
        return false;
    if (*end == 'k')
        scale = 1e3;
    else if (*end == 'M')
        scale = 1e6;
    else if (*end == 'G')
        scale = 1e9;
    else if (*end != '\0')
        return false;
    if (*end && end[1] != '\0')
        return false;
    *out = (double)value * scale;
    return true;
}

/* Grows the per-subcluster or per-machine arrays to hold one more. */
static int grow(void **array, size_t element, size_t count, size_t *capacity)
{
    if (count < *capacity)
        return 0;
    size_t wanted = *capacity ? *capacity * 2 : 8;
    void *bigger = realloc(*array, wanted * element);
    if (!bigger)
        return -ENOMEM;
    *array = bigger;
    *capacity = wanted;
    return 0;
}

struct parser {
    struct topology *t;
    size_t subcluster_capacity[3]; /* names, parent, link */
    size_t machine_capacity[2];    /* names, subcluster */
    bool has_root;
    char *error;
    size_t error_size;
};

static int add_subcluster(struct parser *p, size_t line, char **words, size_t count)
{
    struct topology *t = p->t;
    size_t parent = TOPOLOGY_ROOT, existing;
    double rate = TOPOLOGY_DEFAULT_LINK_BYTES_PER_SEC;
    bool has_rate = false;
    int rc;

    if (count < 2 || count % 2 != 0) {
        set_error(p->error, p->error_size,
                  "line %zu: expected 'subcluster NAME [parent NAME] [link RATE]'", line);
        return -EINVAL;
    }
    if (topology_subcluster_index(t, words[1], &existing) == 0) {
        set_error(p->error, p->error_size, "line %zu: subcluster '%s' declared twice", line,
                  words[1]);
        return -EINVAL;
    }
    for (size_t k = 2; k < count; k += 2) {
        if (strcmp(words[k], "parent") == 0 && parent == TOPOLOGY_ROOT) {
            if (topology_subcluster_index(t, words[k + 1], &parent) < 0) {
                set_error(p->error, p->error_size,
                          "line %zu: parent '%s' is not a subcluster declared above", line,
                          words[k + 1]);
                return -EINVAL;
            }
        } else if (strcmp(words[k], "link") == 0 && !has_rate) {
            if (!parse_rate(words[k + 1], &rate)) {
                set_error(p->error, p->error_size,
                          "line %zu: link rate '%s' is not bytes/s like 125000000 or 125M", line,
                          words[k + 1]);
                return -EINVAL;
            }
            has_rate = true;
        } else {
            set_error(p->error, p->error_size, "line %zu: unexpected '%s'", line, words[k]);
            return -EINVAL;
        }
    }
    if (parent == TOPOLOGY_ROOT) {
        if (p->has_root) {
            set_error(p->error, p->error_size,
                      "line %zu: subcluster '%s' has no parent but '%s' is already the root", line,
                      words[1], t->subcluster_names[0]);
            return -EINVAL;
        }
        if (has_rate) {
            set_error(p->error, p->error_size, "line %zu: the root '%s' has no link to give a rate",
                      line, words[1]);
            return -EINVAL;
        }
    }
    size_t n = t->subcluster_count;
    rc = grow((void **)&t->subcluster_names, sizeof(char *), n, &p->subcluster_capacity[0]);
    if (rc == 0)
        rc = grow((void **)&t->parent, sizeof(size_t), n, &p->subcluster_capacity[1]);
    if (rc == 0)
        rc = grow((void **)&t->link_bytes_per_sec, sizeof(double), n, &p->subcluster_capacity[2]);
    if (rc < 0)
        return rc;
    t->subcluster_names[n] = strdup(words[1]);
    if (!t->subcluster_names[n])
        return -ENOMEM;
    t->parent[n] = parent;
    t->link_bytes_per_sec[n] = rate;
    t->subcluster_count++;
    p->has_root = p->has_root || parent == TOPOLOGY_ROOT;
    return 0;
}

static int add_machine(struct parser *p, size_t line, char **words, size_t count)
{
    struct topology *t = p->t;
    size_t subcluster, existing;
    int rc;

    if (count != 3) {
        set_error(p->error, p->error_size, "line %zu: expected 'machine NAME SUBCLUSTER'", line);
        return -EINVAL;
    }
    if (find_name(t->machine_names, t->machine_count, words[1], &existing) == 0) {
        set_error(p->error, p->error_size, "line %zu: machine '%s' declared twice", line, words[1]);
        return -EINVAL;
    }
    if (topology_subcluster_index(t, words[2], &subcluster) < 0) {
        set_error(p->error, p->error_size, "line %zu: '%s' is not a subcluster declared above",
                  line, words[2]);
        return -EINVAL;
    }
    size_t n = t->machine_count;
    rc = grow((void **)&t->machine_names, sizeof(char *), n, &p->machine_capacity[0]);
    if (rc == 0)
        rc = grow((void **)&t->subcluster_of_machine, sizeof(size_t), n, &p->machine_capacity[1]);
    if (rc < 0)
        return rc;
    t->machine_names[n] = strdup(words[1]);
    if (!t->machine_names[n])
        return -ENOMEM;
    t->subcluster_of_machine[n] = subcluster;
    t->machine_count++;
    return 0;
}

/* Splits line[] in place into words; a '#' starts a comment. Returns -E2BIG past MAX_WORDS. */
static int split_words(char *line, char **words, size_t *count)
{
    char *at = line;
    *count = 0;
    for (;;) {
        while (*at == ' ' || *at == '\t' || *at == '\r')
            at++;
        if (*at == '\0' || *at == '#')
            return 0;
        if (*count == MAX_WORDS)
            return -E2BIG;
        words[(*count)++] = at;
        while (*at && *at != ' ' && *at != '\t' && *at != '\r' && *at != '#')
            at++;
        if (*at == '#') {
            *at = '\0';
            return 0;
        }
        if (*at)
            *at++ = '\0';
    }
}

int topology_parse(const char *text, struct topology *out, char *error, size_t error_size)
{
    struct parser p = {.t = out, .error = error, .error_size = error_size};
    char *copy, *line;
    size_t line_number = 0;
    int rc = 0;

    if (!out)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    if (!text) {
        set_error(error, error_size, "no topology text");
        return -EINVAL;
    }
    copy = strdup(text);
    if (!copy)
        return -ENOMEM;
    line = copy;
    while (line && rc == 0) {
        char *next = strchr(line, '\n');
        char *words[MAX_WORDS];
        size_t count;

        if (next)
            *next++ = '\0';
        line_number++;
        if (split_words(line, words, &count) < 0) {
            set_error(error, error_size, "line %zu: too many words", line_number);
            rc = -EINVAL;
            break;
        }
        for (size_t k = 0; k < count && rc == 0; k++) {
            if (strlen(words[k]) > TOPOLOGY_MAX_NAME) {
                set_error(error, error_size, "line %zu: a name longer than %d bytes", line_number,
                          TOPOLOGY_MAX_NAME);
                rc = -EINVAL;
            }
        }
        if (rc < 0 || count == 0) {
            line = next;
            continue;
        }
        if (strcmp(words[0], "subcluster") == 0) {
            rc = add_subcluster(&p, line_number, words, count);
        } else if (strcmp(words[0], "machine") == 0) {
            rc = add_machine(&p, line_number, words, count);
        } else {
            set_error(error, error_size,
                      "line %zu: unknown statement '%s' (expected subcluster or machine)",
                      line_number, words[0]);
            rc = -EINVAL;
        }
        line = next;
    }
    free(copy);
    if (rc == 0 && !p.has_root) {
        set_error(error, error_size, "no subcluster: a topology needs at least a root");
        rc = -EINVAL;
    }
    if (rc < 0)
        topology_release(out);
    return rc;
}
