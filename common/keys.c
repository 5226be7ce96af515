/*
 * @file keys.c
 * See keys.h. Every file is a few short lines of words, read whole (they
 * are at most a few hundred bytes per member); a malformed line is an
 * error naming its number, never skipped, so a typo cannot silently drop
 * a key or a revocation.
 */
#include "keys.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

/* A key or known-keys file is never this large; a bigger one is not ours. */
#define KEYS_FILE_MAX (1 << 20)

static const char *const keys_roles[] = {"meta", "datanode", "mount", "admin"};

bool keys_role_valid(const char *role)
{
    for (size_t i = 0; i < sizeof(keys_roles) / sizeof(keys_roles[0]); i++)
        if (strcmp(role, keys_roles[i]) == 0)
            return true;
    return false;
}

bool keys_name_valid(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > KEYS_NAME_MAX || name[0] == '.')
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

bool keys_z85_valid(const char *text)
{
    uint8_t binary[32];
    if (strlen(text) != KEYS_Z85_LEN)
        return false;
    return zmq_z85_decode(binary, text) != NULL;
}

int keys_pair_generate(struct keys_pair *pair)
{
    memset(pair, 0, sizeof(*pair));
    if (zmq_curve_keypair(pair->public_z85, pair->secret_z85) != 0)
        return -ENOTSUP;
    return 0;
}

int keys_write_new(const char *path, const char *text, mode_t mode)
{
    size_t len = strlen(text);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    int rc = 0;
    if (fd < 0)
        return -errno;
    /* The umask may have taken bits away; never added any. Set exactly. */
    if (fchmod(fd, mode) != 0)
        rc = -errno;
    ssize_t written = rc == 0 ? write(fd, text, len) : 0;
    if (rc == 0 && written < 0)
        rc = -errno;
    else if (rc == 0 && (size_t)written != len)
        rc = -EIO;
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    close(fd);
    if (rc != 0)
        unlink(path);
    return rc;
}

int keys_pair_write(const char *path, const struct keys_pair *pair)
{
    char text[256];
    snprintf(text, sizeof(text),
             "# tessera key pair: the secret line must stay secret (mode 0600)\n"
             "public %s\nsecret %s\n",
             pair->public_z85, pair->secret_z85);
    return keys_write_new(path, text, 0600);
}

int keys_public_write(const char *path, const char *public_z85)
{
    char text[128];
    snprintf(text, sizeof(text), "public %s\n", public_z85);
    return keys_write_new(path, text, 0644);
}

int keys_slurp(const char *path, bool secret, char **text, size_t *len, char *why,
                      size_t why_cap)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc = 0;
    *text = NULL;
    if (fd < 0) {
        rc = -errno;
        snprintf(why, why_cap, "cannot open %s: %s", path, strerror(-rc));
        return rc;
    }
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        snprintf(why, why_cap, "cannot stat %s: %s", path, strerror(-rc));
        goto out;
    }
    if (secret && (st.st_mode & 077) != 0) {
        rc = -EPERM;
        snprintf(why, why_cap,
                 "%s holds a secret key but group or others may access it (mode %04o); "
                 "run: chmod 600 %s",
                 path, (unsigned)(st.st_mode & 07777), path);
        goto out;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > KEYS_FILE_MAX) {
        rc = -EINVAL;
        snprintf(why, why_cap, "%s is not a key file (not a regular file, or over 1 MiB)", path);
        goto out;
    }
    *text = malloc((size_t)st.st_size + 1);
    if (!*text) {
        rc = -ENOMEM;
        snprintf(why, why_cap, "out of memory reading %s", path);
        goto out;
    }
    ssize_t got = pread(fd, *text, (size_t)st.st_size, 0);
    if (got < 0) {
        rc = -errno;
        snprintf(why, why_cap, "cannot read %s: %s", path, strerror(-rc));
        goto out;
    }
    (*text)[got] = '\0';
    *len = (size_t)got;
out:
    close(fd);
    if (rc != 0) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

int keys_line_words(char **cursor, char *end, char **words)
{
    char *line = *cursor;
    char *line_end = memchr(line, '\n', (size_t)(end - line));
    int count = 0;
    if (!line_end)
        line_end = end;
    *cursor = line_end < end ? line_end + 1 : end;
    *line_end = '\0';
    for (char *p = line; p < line_end;) {
        while (p < line_end && (*p == ' ' || *p == '\t' || *p == '\r'))
            *p++ = '\0';
        if (p >= line_end || (count == 0 && *p == '#'))
            break;
        if (count == KEYS_LINE_WORDS)
            return -1;
        words[count++] = p;
        while (p < line_end && *p != ' ' && *p != '\t' && *p != '\r')
            p++;
    }
    return count;
}

/* Reads the "public"/"secret" lines of a pair or public file's text. */
static int keys_parse_pair(const char *path, char *text, size_t len, bool want_secret,
                           struct keys_pair *pair, char *why, size_t why_cap)
{
    char *cursor = text;
    char *end = text + len;
    int line_number = 0;
    memset(pair, 0, sizeof(*pair));
    while (cursor < end) {
        char *words[KEYS_LINE_WORDS];
        int count = keys_line_words(&cursor, end, words);
        line_number++;
        if (count == 0)
            continue;
        char *target = NULL;
        if (count == 2 && strcmp(words[0], "public") == 0)
            target = pair->public_z85;
        else if (count == 2 && strcmp(words[0], "secret") == 0)
            target = pair->secret_z85;
        if (!target || !keys_z85_valid(words[1])) {
            snprintf(why, why_cap, "%s line %d: expected \"public Z85\" or \"secret Z85\"", path,
                     line_number);
            return -EINVAL;
        }
        memcpy(target, words[1], KEYS_Z85_LEN + 1);
    }
    if (!pair->public_z85[0] || (want_secret && !pair->secret_z85[0])) {
        snprintf(why, why_cap, "%s has no %s line", path,
                 pair->public_z85[0] ? "secret" : "public");
        return -EINVAL;
    }
    return 0;
}

int keys_pair_read(const char *path, struct keys_pair *pair, char *why, size_t why_cap)
{
    char *text;
    size_t len = 0;
    int rc = keys_slurp(path, true, &text, &len, why, why_cap);
    if (rc == 0)
        rc = keys_parse_pair(path, text, len, true, pair, why, why_cap);
    free(text);
    return rc;
}

int keys_public_read(const char *path, char public_z85[KEYS_Z85_LEN + 1], char *why, size_t why_cap)
{
    struct keys_pair pair;
    char *text;
    size_t len = 0;
    int rc = keys_slurp(path, false, &text, &len, why, why_cap);
    if (rc == 0)
        rc = keys_parse_pair(path, text, len, false, &pair, why, why_cap);
    free(text);
    if (rc == 0)
        memcpy(public_z85, pair.public_z85, KEYS_Z85_LEN + 1);
    explicit_bzero(&pair, sizeof(pair));
    return rc;
}

void keys_known_clear(struct keys_known *known)
{
    free(known->entries);
    memset(known, 0, sizeof(*known));
}

const struct keys_entry *keys_known_find_key(const struct keys_known *known, const char *public_z85)
{
    for (size_t i = 0; i < known->count; i++)
        if (strcmp(known->entries[i].public_z85, public_z85) == 0)
            return &known->entries[i];
    return NULL;
}

struct keys_entry *keys_known_find_name(struct keys_known *known, const char *name)
{
    for (size_t i = 0; i < known->count; i++)
        if (strcmp(known->entries[i].name, name) == 0)
            return &known->entries[i];
    return NULL;
}

int keys_known_add(struct keys_known *known, const char *role, const char *name,
                   const char *public_z85)
{
    if (!keys_role_valid(role) || !keys_name_valid(name) || !keys_z85_valid(public_z85))
        return -EINVAL;
    if (keys_known_find_name(known, name) || keys_known_find_key(known, public_z85))
        return -EEXIST;
    if (known->count == known->cap) {
        size_t new_cap = known->cap ? known->cap * 2 : 16;
        struct keys_entry *grown = realloc(known->entries, new_cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        known->entries = grown;
        known->cap = new_cap;
    }
    struct keys_entry *entry = &known->entries[known->count++];
    memset(entry, 0, sizeof(*entry));
    memcpy(entry->role, role, strlen(role) + 1);
    memcpy(entry->name, name, strlen(name) + 1);
    memcpy(entry->public_z85, public_z85, KEYS_Z85_LEN + 1);
    return 0;
}

int keys_known_parse(struct keys_known *known, const char *text, size_t len, char *why,
                     size_t why_cap)
{
    char *copy = malloc(len + 1);
    char *cursor = copy;
    int line_number = 0;
    int rc = 0;
    keys_known_clear(known);
    if (!copy) {
        snprintf(why, why_cap, "out of memory");
        return -ENOMEM;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    while (cursor < copy + len) {
        char *words[KEYS_LINE_WORDS];
        int count = keys_line_words(&cursor, copy + len, words);
        line_number++;
        if (count == 0)
            continue;
        bool revoked = count == 4 && strcmp(words[3], "revoked") == 0;
        if (count < 3 || (count == 4 && !revoked)) {
            snprintf(why, why_cap, "line %d: expected \"ROLE NAME KEY [revoked]\"", line_number);
            rc = -EINVAL;
            break;
        }
        rc = keys_known_add(known, words[0], words[1], words[2]);
        if (rc == -EINVAL) {
            snprintf(why, why_cap, "line %d: %s", line_number,
                     !keys_role_valid(words[0])
                         ? "the role is not one of meta, datanode, mount, admin"
                     : !keys_name_valid(words[1])
                         ? "the name is not 1-63 of A-Z a-z 0-9 . _ - (not starting with .)"
                         : "the key is not 40 characters of Z85");
            break;
        }
        if (rc == -EEXIST) {
            snprintf(why, why_cap, "line %d: name %s or its key is listed twice", line_number,
                     words[1]);
            rc = -EINVAL;
            break;
        }
        if (rc != 0) {
            snprintf(why, why_cap, "out of memory");
            break;
        }
        known->entries[known->count - 1].revoked = revoked;
    }
    free(copy);
    if (rc != 0)
        keys_known_clear(known);
    return rc;
}

int keys_known_read(const char *path, struct keys_known *known, char *why, size_t why_cap)
{
    char *text;
    size_t len = 0;
    char detail[256];
    int rc = keys_slurp(path, false, &text, &len, why, why_cap);
    if (rc != 0)
        return rc;
    rc = keys_known_parse(known, text, len, detail, sizeof(detail));
    if (rc != 0)
        snprintf(why, why_cap, "%s %s", path, detail);
    free(text);
    return rc;
}

int keys_known_write(const char *dir, const struct keys_known *known)
{
    size_t cap = 256 + known->count * (KEYS_ROLE_MAX + KEYS_NAME_MAX + KEYS_Z85_LEN + 16);
    char *text = malloc(cap);
    size_t len;
    int rc;
    if (!text)
        return -ENOMEM;
    len = (size_t)snprintf(text, cap,
                           "# tessera known keys: ROLE NAME PUBLIC-KEY [revoked]\n"
                           "# (tessera keys add|revoke edit this file; meta and the datanodes "
                           "reread it when it changes)\n");
    for (size_t i = 0; i < known->count; i++) {
        const struct keys_entry *entry = &known->entries[i];
        len += (size_t)snprintf(text + len, cap - len, "%s %s %s%s\n", entry->role, entry->name,
                                entry->public_z85, entry->revoked ? " revoked" : "");
    }
    rc = util_write_file_durably(dir, KEYS_KNOWN_FILE, text, len);
    free(text);
    return rc;
}
