/*
 * @file promtext.c
 * See promtext.h. One pass over the text, line by line; each sample's
 * name and labels are copied out, so the text may be freed after the
 * parse. The label text is checked for its syntax (names, quotes,
 * escapes, commas) and kept as written, which is how the lookups match it.
 */
#include "promtext.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct promtext_line {
    const char *pos;
    const char *end;
    size_t number;
};

static void promtext_error(char *error, size_t error_cap, size_t line, const char *format, ...)
{
    if (!error || error_cap == 0)
        return;
    int used = snprintf(error, error_cap, "line %zu: ", line);
    if (used < 0 || (size_t)used >= error_cap)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(error + used, error_cap - (size_t)used, format, args);
    va_end(args);
}

static bool promtext_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool promtext_name_char(char c)
{
    return promtext_name_start(c) || (c >= '0' && c <= '9');
}

/* Skips blanks (spaces and tabs); returns how many. */
static size_t promtext_skip_blanks(struct promtext_line *line)
{
    size_t skipped = 0;
    while (line->pos < line->end && (*line->pos == ' ' || *line->pos == '\t')) {
        line->pos++;
        skipped++;
    }
    return skipped;
}

/* A label name (no ':' allowed), '=', then a quoted value with escapes. NULL or why not. */
static const char *promtext_label(struct promtext_line *line)
{
    if (line->pos >= line->end || !promtext_name_start(*line->pos) || *line->pos == ':')
        return "a label name expected";
    while (line->pos < line->end && promtext_name_char(*line->pos) && *line->pos != ':')
        line->pos++;
    promtext_skip_blanks(line);
    if (line->pos >= line->end || *line->pos != '=')
        return "'=' expected after a label name";
    line->pos++;
    promtext_skip_blanks(line);
    if (line->pos >= line->end || *line->pos != '"')
        return "a quoted label value expected";
    line->pos++;
    while (line->pos < line->end && *line->pos != '"') {
        if (*line->pos == '\\') {
            line->pos++;
            if (line->pos >= line->end ||
                (*line->pos != '\\' && *line->pos != '"' && *line->pos != 'n'))
                return "a label value has a bad escape (only \\\\, \\\" and \\n)";
        }
        line->pos++;
    }
    if (line->pos >= line->end)
        return "a label value is not closed";
    line->pos++;
    return NULL;
}

/* The labels after '{' up to and past '}': [label {, label} [,]]. NULL or why not. */
static const char *promtext_labels(struct promtext_line *line)
{
    promtext_skip_blanks(line);
    while (line->pos < line->end && *line->pos != '}') {
        const char *why = promtext_label(line);
        if (why)
            return why;
        promtext_skip_blanks(line);
        if (line->pos < line->end && *line->pos == ',') {
            line->pos++;
            promtext_skip_blanks(line);
        } else if (line->pos < line->end && *line->pos != '}') {
            return "',' or '}' expected after a label";
        }
    }
    if (line->pos >= line->end)
        return "the labels are not closed with '}'";
    line->pos++;
    return NULL;
}

/* The value (and an optional integer timestamp) up to the end of the line. */
static const char *promtext_value(struct promtext_line *line, double *value)
{
    char number[64];
    const char *start = line->pos;
    while (line->pos < line->end && *line->pos != ' ' && *line->pos != '\t')
        line->pos++;
    size_t len = (size_t)(line->pos - start);
    if (len == 0)
        return "a value expected";
    if (len >= sizeof(number))
        return "the value is too long";
    memcpy(number, start, len);
    number[len] = '\0';
    if (strcmp(number, "NaN") == 0) {
        *value = NAN;
    } else if (strcmp(number, "+Inf") == 0 || strcmp(number, "Inf") == 0) {
        *value = INFINITY;
    } else if (strcmp(number, "-Inf") == 0) {
        *value = -INFINITY;
    } else {
        /* strtod would take "inf", "nan" and hex too; the format has none of them. */
        for (size_t i = 0; i < len; i++)
            if (!strchr("0123456789+-.eE", number[i]))
                return "the value is not a number";
        char *end;
        errno = 0;
        *value = strtod(number, &end);
        if (end != number + len || errno == ERANGE)
            return "the value is not a number";
    }
    promtext_skip_blanks(line);
    if (line->pos < line->end) {
        const char *stamp = line->pos;
        if (*line->pos == '-')
            line->pos++;
        while (line->pos < line->end && *line->pos >= '0' && *line->pos <= '9')
            line->pos++;
        if (line->pos == stamp || (line->pos == stamp + 1 && *stamp == '-'))
            return "only a timestamp may follow the value";
        promtext_skip_blanks(line);
        if (line->pos < line->end)
            return "unexpected text after the timestamp";
    }
    return NULL;
}

static char *promtext_copy(const char *start, size_t len)
{
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, start, len);
        copy[len] = '\0';
    }
    return copy;
}

/* Parses one sample line into sample. 0, -EINVAL (why set) or -ENOMEM. */
static int promtext_sample_line(struct promtext_line *line, struct promtext_sample *sample,
                                const char **why)
{
    const char *name = line->pos;
    if (!promtext_name_start(*line->pos)) {
        *why = "a metric name or '#' expected";
        return -EINVAL;
    }
    while (line->pos < line->end && promtext_name_char(*line->pos))
        line->pos++;
    size_t name_len = (size_t)(line->pos - name);
    const char *labels = "";
    size_t labels_len = 0;
    promtext_skip_blanks(line);
    if (line->pos < line->end && *line->pos == '{') {
        line->pos++;
        labels = line->pos;
        *why = promtext_labels(line);
        if (*why)
            return -EINVAL;
        labels_len = (size_t)(line->pos - 1 - labels);
        if (promtext_skip_blanks(line) == 0 && line->pos < line->end) {
            *why = "a blank expected before the value";
            return -EINVAL;
        }
    } else if (line->pos == name + name_len && line->pos < line->end) {
        *why = "a metric name has a character it may not have";
        return -EINVAL;
    }
    *why = promtext_value(line, &sample->value);
    if (*why)
        return -EINVAL;
    sample->name = promtext_copy(name, name_len);
    sample->labels = promtext_copy(labels, labels_len);
    if (!sample->name || !sample->labels) {
        free(sample->name);
        free(sample->labels);
        return -ENOMEM;
    }
    return 0;
}

int promtext_parse(const char *text, size_t len, struct promtext *parsed, char *error,
                   size_t error_cap)
{
    size_t cap = 0;
    const char *pos = text;
    const char *end = text + len;
    size_t number = 0;
    int rc = 0;

    *parsed = (struct promtext){0};
    if (error && error_cap > 0)
        error[0] = '\0';
    while (pos < end) {
        const char *newline = memchr(pos, '\n', (size_t)(end - pos));
        struct promtext_line line = {pos, newline ? newline : end, ++number};
        pos = newline ? newline + 1 : end;
        if (memchr(line.pos, '\0', (size_t)(line.end - line.pos))) {
            promtext_error(error, error_cap, line.number, "a NUL byte");
            rc = -EINVAL;
            break;
        }
        promtext_skip_blanks(&line);
        if (line.pos == line.end || *line.pos == '#')
            continue;
        if (parsed->count == PROMTEXT_MAX_SAMPLES) {
            promtext_error(error, error_cap, line.number, "more than %d samples",
                           PROMTEXT_MAX_SAMPLES);
            rc = -E2BIG;
            break;
        }
        if (parsed->count == cap) {
            size_t grown_cap = cap ? cap * 2 : 64;
            struct promtext_sample *grown = realloc(parsed->samples, grown_cap * sizeof(*grown));
            if (!grown) {
                rc = -ENOMEM;
                break;
            }
            parsed->samples = grown;
            cap = grown_cap;
        }
        const char *why = NULL;
        rc = promtext_sample_line(&line, &parsed->samples[parsed->count], &why);
        if (rc != 0) {
            if (why)
                promtext_error(error, error_cap, line.number, "%s", why);
            break;
        }
        parsed->count++;
    }
    if (rc != 0)
        promtext_clear(parsed);
    return rc;
}

void promtext_clear(struct promtext *parsed)
{
    for (size_t i = 0; i < parsed->count; i++) {
        free(parsed->samples[i].name);
        free(parsed->samples[i].labels);
    }
    free(parsed->samples);
    *parsed = (struct promtext){0};
}

double promtext_sum(const struct promtext *parsed, const char *name, const char *label_match,
                    bool *found)
{
    double sum = 0;
    *found = false;
    for (size_t i = 0; i < parsed->count; i++) {
        const struct promtext_sample *sample = &parsed->samples[i];
        if (strcmp(sample->name, name) != 0)
            continue;
        if (label_match && *label_match && !strstr(sample->labels, label_match))
            continue;
        sum += sample->value;
        *found = true;
    }
    return sum;
}
