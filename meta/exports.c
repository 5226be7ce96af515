/*
 * @file exports.c
 * See exports.h. Lines are split into words as key files are
 * (keys_line_words()), and every error names its line.
 */
#include "exports.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct exports_rule exports_default = {.name = "*", .path = "/"};

bool exports_rule_subtree(const struct exports_rule *rule)
{
    return strcmp(rule->path, "/") != 0;
}

/*
 * Copies absolute path into out, normalised (one '/' between components,
 * none at the end); false when it is not absolute, too long, or has a "."
 * or ".." component (a path that escapes or aliases is not exported).
 */
static bool exports_path(const char *path, char out[EXPORTS_PATH_MAX])
{
    size_t len = 0;
    if (path[0] != '/')
        return false;
    for (const char *at = path; *at;) {
        while (*at == '/')
            at++;
        size_t part = strcspn(at, "/");
        if (part == 0)
            break;
        if ((part == 1 && at[0] == '.') || (part == 2 && at[0] == '.' && at[1] == '.'))
            return false;
        if (len + 1 + part + 1 > EXPORTS_PATH_MAX)
            return false;
        out[len++] = '/';
        memcpy(out + len, at, part);
        len += part;
        at += part;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    return true;
}

void exports_clear(struct exports *exports)
{
    free(exports->rules);
    memset(exports, 0, sizeof(*exports));
}

/* Applies one comma-separated option list to rule; false (the option in bad) on an unknown one. */
static bool exports_options(struct exports_rule *rule, char *options, char *bad, size_t bad_cap)
{
    for (char *option = options; option;) {
        char *comma = strchr(option, ',');
        if (comma)
            *comma = '\0';
        if (strcmp(option, "ro") == 0)
            rule->read_only = true;
        else if (strcmp(option, "rw") == 0)
            rule->read_only = false;
        else if (strcmp(option, "root_squash") == 0)
            rule->root_squash = true;
        else if (strcmp(option, "no_root_squash") == 0)
            rule->root_squash = false;
        else {
            snprintf(bad, bad_cap, "%.60s", option);
            return false;
        }
        option = comma ? comma + 1 : NULL;
    }
    return true;
}

/* One line's words as a rule into exports. 0, -EINVAL (why written), -ENOMEM. */
static int exports_add(struct exports *exports, char **words, int count, int number, char *why,
                       size_t why_cap)
{
    struct exports_rule rule = {0};
    char bad[64];
    if (count < 2 || count > 3) {
        snprintf(why, why_cap, "exports line %d: want NAME PATH [OPTIONS]", number);
        return -EINVAL;
    }
    if (strcmp(words[0], "*") != 0 && !keys_name_valid(words[0])) {
        snprintf(why, why_cap, "exports line %d: '%.64s' is not a key name or *", number, words[0]);
        return -EINVAL;
    }
    if (!exports_path(words[1], rule.path)) {
        snprintf(why, why_cap,
                 "exports line %d: '%.64s' is not an absolute path without . or .. components",
                 number, words[1]);
        return -EINVAL;
    }
    if (count == 3 && !exports_options(&rule, words[2], bad, sizeof(bad))) {
        snprintf(why, why_cap,
                 "exports line %d: unknown option '%s' (ro, rw, root_squash, no_root_squash)",
                 number, bad);
        return -EINVAL;
    }
    snprintf(rule.name, sizeof(rule.name), "%s", words[0]);
    for (size_t i = 0; i < exports->count; i++) {
        if (strcmp(exports->rules[i].name, rule.name) == 0) {
            snprintf(why, why_cap, "exports line %d: %s has a rule already", number, rule.name);
            return -EINVAL;
        }
    }
    struct exports_rule *grown =
        realloc(exports->rules, (exports->count + 1) * sizeof(*exports->rules));
    if (!grown)
        return -ENOMEM;
    exports->rules = grown;
    exports->rules[exports->count++] = rule;
    return 0;
}

int exports_parse(struct exports *exports, const char *text, size_t len, char *why, size_t why_cap)
{
    char *copy = malloc(len + 1);
    char *cursor = copy;
    int number = 0;
    int rc = 0;

    exports_clear(exports);
    exports->present = true;
    if (!copy)
        return -ENOMEM;
    memcpy(copy, text, len);
    copy[len] = '\0';
    while (rc == 0 && cursor < copy + len) {
        char *words[KEYS_LINE_WORDS];
        int count = keys_line_words(&cursor, copy + len, words);
        number++;
        if (count != 0)
            rc = exports_add(exports, words, count < 0 ? KEYS_LINE_WORDS : count, number, why,
                             why_cap);
    }
    free(copy);
    return rc;
}

int exports_read(const char *path, struct exports *exports, char *why, size_t why_cap)
{
    exports_clear(exports);
    FILE *file = fopen(path, "re");
    if (!file) {
        int err = errno;
        snprintf(why, why_cap, "%s: %s", path, strerror(err));
        return -err;
    }
    char *text = NULL;
    size_t cap = 0;
    size_t len = 0;
    int rc = 0;
    for (;;) {
        if (len + 4096 > cap) {
            char *grown = realloc(text, cap + 65536);
            if (!grown) {
                rc = -ENOMEM;
                break;
            }
            text = grown;
            cap += 65536;
        }
        size_t got = fread(text + len, 1, cap - len, file);
        len += got;
        if (got == 0)
            break;
    }
    if (rc == 0 && ferror(file)) {
        rc = -EIO;
        snprintf(why, why_cap, "%s: read error", path);
    }
    fclose(file);
    if (rc == 0)
        rc = exports_parse(exports, text ? text : "", len, why, why_cap);
    free(text);
    return rc;
}

const struct exports_rule *exports_find(const struct exports *exports, const char *key_user)
{
    const struct exports_rule *any = NULL;
    const char *colon = strchr(key_user, ':');
    const char *name = colon ? colon + 1 : key_user;
    if (!exports->present)
        return &exports_default;
    for (size_t i = 0; i < exports->count; i++) {
        if (strcmp(exports->rules[i].name, name) == 0)
            return &exports->rules[i];
        if (strcmp(exports->rules[i].name, "*") == 0)
            any = &exports->rules[i];
    }
    return any;
}
