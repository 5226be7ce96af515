/*
 * @file identity.c
 * See identity.h.
 */
#include "identity.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define IDENTITY_DIGITS 16
#define IDENTITY_PATH_MAX 4200

int identity_parse(const char *text, size_t len, uint64_t *incarnation)
{
    uint64_t value = 0;
    if (len == IDENTITY_DIGITS + 1 && text[IDENTITY_DIGITS] == '\n')
        len = IDENTITY_DIGITS;
    if (len != IDENTITY_DIGITS)
        return -EINVAL;
    for (size_t i = 0; i < IDENTITY_DIGITS; i++) {
        char c = text[i];
        unsigned digit;
        if (c >= '0' && c <= '9')
            digit = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            digit = (unsigned)(c - 'a' + 10);
        else
            return -EINVAL;
        value = value << 4 | digit;
    }
    if (value == 0)
        return -EINVAL; /* 0 on the wire means "no identity" */
    *incarnation = value;
    return 0;
}

/* A random non-zero incarnation. 0 or a negative errno. */
static int identity_make(uint64_t *incarnation)
{
    uint64_t value = 0;
    while (value == 0) {
        ssize_t got = getrandom(&value, sizeof(value), 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got != (ssize_t)sizeof(value))
            return got < 0 ? -errno : -EIO;
    }
    *incarnation = value;
    return 0;
}

int identity_load(const char *data_dir, uint64_t *incarnation, bool *created)
{
    char path[IDENTITY_PATH_MAX];
    char text[IDENTITY_TEXT_BYTES + 2];
    ssize_t len;
    int rc;

    *created = false;
    if ((size_t)snprintf(path, sizeof(path), "%s/identity", data_dir) >= sizeof(path))
        return -ENAMETOOLONG;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        len = read(fd, text, sizeof(text));
        rc = len < 0 ? -errno : 0;
        close(fd);
        if (rc != 0) {
            log_error("cannot read %s: %s", path, strerror(-rc));
            return rc;
        }
        if (identity_parse(text, (size_t)len, incarnation) != 0) {
            log_error("%s does not hold a data directory identity (16 hex digits); restore it "
                      "from a backup, or remove it together with node.id and the tiles to "
                      "start this datanode as a new node",
                      path);
            return -EINVAL;
        }
        return 0;
    }
    if (errno != ENOENT) {
        rc = -errno;
        log_error("cannot read %s: %s", path, strerror(-rc));
        return rc;
    }
    rc = identity_make(incarnation);
    if (rc == 0) {
        int text_len = snprintf(text, sizeof(text), "%016" PRIx64 "\n", *incarnation);
        rc = util_write_file_durably(data_dir, "identity", text, (size_t)text_len);
    }
    if (rc != 0) {
        log_error("cannot make %s: %s", path, strerror(-rc));
        return rc;
    }
    *created = true;
    return 0;
}

int identity_check_tiles(const char *data_dir)
{
    char path[IDENTITY_PATH_MAX];
    struct stat st;
    bool claims = false;
    static const char *const claims_of[] = {"identity", "node.id"};

    if ((size_t)snprintf(path, sizeof(path), "%s/tiles", data_dir) >= sizeof(path))
        return -ENAMETOOLONG;
    if (stat(path, &st) == 0)
        return 0;
    if (errno != ENOENT)
        return -errno;
    for (size_t i = 0; i < sizeof(claims_of) / sizeof(claims_of[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", data_dir, claims_of[i]);
        if (stat(path, &st) == 0)
            claims = true;
    }
    if (!claims)
        return 0; /* a new directory */
    log_error("%s/tiles is missing, but %s has the node.id or identity of a datanode that "
              "held tiles there: they are all lost; not starting as that node. Restore the "
              "directory from a backup, or remove node.id and identity from it to start as a "
              "new node",
              data_dir, data_dir);
    return -ESTALE;
}
