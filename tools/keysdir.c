/*
 * @file keysdir.c
 * See keysdir.h. known_keys is rewritten whole through a temporary file
 * and rename (keys_known_write), so meta and the datanodes, which reread
 * it when it changes, never see half of it.
 */
#include "keysdir.h"

#include "keys.h"
#include "tiletoken.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool keysdir_exists(const char *dir)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/%s", dir, KEYS_KNOWN_FILE);
    return access(path, F_OK) == 0;
}

static int keysdir_read_known(const char *dir, struct keys_known *known, const char *who)
{
    char path[PATH_MAX + 16];
    char why[512];
    int rc;
    snprintf(path, sizeof(path), "%s/%s", dir, KEYS_KNOWN_FILE);
    rc = keys_known_read(path, known, why, sizeof(why));
    if (rc == -ENOENT)
        fprintf(stderr, "%s: no keys in %s (make them with: tessera keys init %s)\n", who, dir,
                dir);
    else if (rc != 0)
        fprintf(stderr, "%s: %s\n", who, why);
    return rc;
}

static int keysdir_write_known(const char *dir, const struct keys_known *known, const char *who)
{
    int rc = keys_known_write(dir, known);
    if (rc != 0)
        fprintf(stderr, "%s: cannot write %s/%s: %s\n", who, dir, KEYS_KNOWN_FILE, strerror(-rc));
    return rc;
}

/* Makes dir/NAME.key; its public key in *pair. */
static int keysdir_new_pair(const char *dir, const char *name, struct keys_pair *pair,
                            const char *who)
{
    char path[PATH_MAX + 80];
    int rc = keys_pair_generate(pair);
    if (rc != 0) {
        fprintf(stderr, "%s: this libzmq cannot make CURVE keys (built without libsodium?)\n", who);
        return rc;
    }
    snprintf(path, sizeof(path), "%s/%s.key", dir, name);
    rc = keys_pair_write(path, pair);
    if (rc != 0)
        fprintf(stderr, "%s: cannot write %s: %s\n", who, path, strerror(-rc));
    return rc;
}

int keysdir_tile_secret(const char *dir, bool rotate, const char *who)
{
    char path[PATH_MAX + 16];
    char why[512];
    snprintf(path, sizeof(path), "%s/%s", dir, TILETOKEN_FILE);
    if (!rotate && access(path, F_OK) == 0)
        return 0;
    int rc = tiletoken_write_secret(path, rotate, why, sizeof(why));
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", who, why);
    return rc;
}

int keysdir_init(const char *dir, const char *who)
{
    static const char *const members[][2] = {{"meta", "meta"}, {"admin", "admin"}};
    struct keys_known known = {0};
    struct keys_pair pair;
    char path[PATH_MAX + 16];
    int rc;

    if (keysdir_exists(dir)) {
        fprintf(stderr,
                "%s: %s already holds a cluster's keys (%s); add members with "
                "tessera keys add\n",
                who, dir, KEYS_KNOWN_FILE);
        return -EEXIST;
    }
    rc = util_mkdir_p(dir, 0700);
    if (rc != 0) {
        fprintf(stderr, "%s: cannot make %s: %s\n", who, dir, strerror(-rc));
        return rc;
    }
    rc = keysdir_new_pair(dir, "server", &pair, who);
    if (rc != 0)
        return rc;
    snprintf(path, sizeof(path), "%s/%s", dir, KEYS_SERVER_PUBLIC_FILE);
    rc = keys_public_write(path, pair.public_z85);
    if (rc != 0) {
        fprintf(stderr, "%s: cannot write %s: %s\n", who, path, strerror(-rc));
        return rc;
    }
    for (size_t i = 0; i < sizeof(members) / sizeof(members[0]) && rc == 0; i++) {
        rc = keysdir_new_pair(dir, members[i][1], &pair, who);
        if (rc == 0)
            rc = keys_known_add(&known, members[i][0], members[i][1], pair.public_z85);
    }
    if (rc == 0)
        rc = keysdir_write_known(dir, &known, who);
    if (rc == 0)
        rc = keysdir_tile_secret(dir, false, who);
    explicit_bzero(&pair, sizeof(pair));
    keys_known_clear(&known);
    return rc;
}

int keysdir_add(const char *dir, const char *role, const char *name, const char *who)
{
    struct keys_known known = {0};
    struct keys_pair pair;
    int rc;

    if (!keys_role_valid(role)) {
        fprintf(stderr, "%s: role %s is not one of meta, datanode, mount, admin\n", who, role);
        return -EINVAL;
    }
    if (!keys_name_valid(name) || strcmp(name, "server") == 0) {
        fprintf(stderr,
                "%s: name %s is not 1-63 of A-Z a-z 0-9 . _ - (not starting with ., "
                "not \"server\")\n",
                who, name);
        return -EINVAL;
    }
    rc = keysdir_read_known(dir, &known, who);
    if (rc != 0)
        return rc;
    if (keys_known_find_name(&known, name)) {
        fprintf(stderr,
                "%s: %s is already a key of this cluster (names stay taken after a "
                "revoke)\n",
                who, name);
        rc = -EEXIST;
        goto out;
    }
    rc = keysdir_new_pair(dir, name, &pair, who);
    if (rc == 0)
        rc = keys_known_add(&known, role, name, pair.public_z85);
    if (rc == 0)
        rc = keysdir_write_known(dir, &known, who);
    if (rc == 0)
        rc = keysdir_tile_secret(dir, false, who);
    explicit_bzero(&pair, sizeof(pair));
out:
    keys_known_clear(&known);
    return rc;
}

int keysdir_revoke(const char *dir, const char *name, const char *who)
{
    struct keys_known known = {0};
    struct keys_entry *entry;
    int rc = keysdir_read_known(dir, &known, who);
    if (rc != 0)
        return rc;
    entry = keys_known_find_name(&known, name);
    if (!entry) {
        fprintf(stderr, "%s: no key named %s in %s/%s\n", who, name, dir, KEYS_KNOWN_FILE);
        rc = -ENOENT;
    } else {
        entry->revoked = true;
        rc = keysdir_write_known(dir, &known, who);
    }
    keys_known_clear(&known);
    return rc;
}

int keysdir_list(const char *dir, const char *who)
{
    struct keys_known known = {0};
    int rc = keysdir_read_known(dir, &known, who);
    if (rc != 0)
        return rc;
    printf("%-9s %-20s %-40s %s\n", "ROLE", "NAME", "PUBLIC KEY", "STATE");
    for (size_t i = 0; i < known.count; i++)
        printf("%-9s %-20s %-40s %s\n", known.entries[i].role, known.entries[i].name,
               known.entries[i].public_z85, known.entries[i].revoked ? "revoked" : "active");
    keys_known_clear(&known);
    return 0;
}
