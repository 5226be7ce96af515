/*
 * @file metatarget.c
 * See metatarget.h. A path names its cluster through the attribute its
 * mount answers (TS_CLUSTER_XATTR): the inode numbers stat(2) shows are
 * that cluster's, and mean other files in any other cluster.
 */
#include "metatarget.h"

#include "cliargs.h"
#include "clusterconf.h"
#include "curve.h"
#include "fmt.h"
#include "toolkey.h"
#include "toolmeta.h"
#include "status.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define METATARGET_MAX_TIMEOUT_MS 600000

int metatarget_option(struct metatarget *target, const char *who, int option, const char *value)
{
    switch (option) {
    case METATARGET_OPT_STATE:
        if (fmt_into(target->state_dir, sizeof(target->state_dir), "%s", value) != 0)
            return cliargs_usage_error(who, "state directory name too long:", value);
        return CLIARGS_GO_ON;
    case METATARGET_OPT_META:
        if (fmt_into(target->endpoint, sizeof(target->endpoint), "%s", value) != 0)
            return cliargs_usage_error(who, "endpoint too long:", value);
        return CLIARGS_GO_ON;
    case METATARGET_OPT_TIMEOUT:
        if (util_parse_long(value, 1, METATARGET_MAX_TIMEOUT_MS, &target->timeout_ms) != 0)
            return cliargs_usage_error(who, "--timeout-ms wants 1..600000, got", value);
        return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

int metatarget_check(const struct metatarget *target, const char *who)
{
    if (target->state_dir[0] && target->endpoint[0])
        return cliargs_usage_error(who, "give --state or --meta, not both", NULL);
    return CLIARGS_GO_ON;
}

int metatarget_parse(const struct cliargs_command *command, struct metatarget *target, int argc,
                     char **argv, void *ctx, int *first_operand)
{
    int exit_code = cliargs_parse(command, argc, argv, ctx, first_operand);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    return metatarget_check(target, command->who);
}

int metatarget_resolve(struct metatarget *target, const char *who)
{
    if (target->endpoint[0])
        return 0;
    return clusterconf_find_meta(target->state_dir, target->endpoint, sizeof(target->endpoint),
                                 who);
}

int metatarget_parse_cluster(const char *value, size_t len, char *id, size_t id_cap, char *endpoint,
                             size_t endpoint_cap)
{
    const char *space = memchr(value, ' ', len);
    size_t endpoint_len;

    if (!space || (size_t)(space - value) != TS_CLUSTER_ID_HEX)
        return -EINVAL;
    for (size_t i = 0; i < TS_CLUSTER_ID_HEX; i++) {
        if (!isxdigit((unsigned char)value[i]))
            return -EINVAL;
    }
    endpoint_len = len - TS_CLUSTER_ID_HEX - 1;
    if (endpoint_len == 0 || memchr(space + 1, ' ', endpoint_len) ||
        memchr(space + 1, '\0', endpoint_len))
        return -EINVAL;
    if (id_cap <= TS_CLUSTER_ID_HEX || endpoint_cap <= endpoint_len)
        return -ENAMETOOLONG;
    memcpy(id, value, TS_CLUSTER_ID_HEX);
    id[TS_CLUSTER_ID_HEX] = '\0';
    memcpy(endpoint, space + 1, endpoint_len);
    endpoint[endpoint_len] = '\0';
    return 0;
}

/* Reads the path's cluster; 0, or 1 after printing why. */
static int metatarget_path_cluster(const char *path, char *id, size_t id_cap, char *endpoint,
                                   size_t endpoint_cap, const char *who)
{
    char value[TS_CLUSTER_ID_HEX + 1 + METATARGET_ENDPOINT_MAX];
    ssize_t len = getxattr(path, TS_CLUSTER_XATTR, value, sizeof(value));
    int saved = errno;
    struct stat st;

    if (len < 0 && stat(path, &st) != 0) {
        fprintf(stderr, "%s: %s: %s\n", who, path, strerror(errno));
        return 1;
    }
    if (len < 0 && (saved == ENODATA || saved == ENOTSUP)) {
        fprintf(stderr,
                "%s: %s is not on a Tessera mount (it has no %s attribute); give a path under "
                "the mount point of a cluster, e.g. the one `tessera up --mount DIR` made\n",
                who, path, TS_CLUSTER_XATTR);
        return 1;
    }
    if (len < 0) {
        fprintf(stderr, "%s: cannot read the %s attribute of %s: %s\n", who, TS_CLUSTER_XATTR, path,
                strerror(saved));
        return 1;
    }
    if (metatarget_parse_cluster(value, (size_t)len, id, id_cap, endpoint, endpoint_cap) != 0) {
        fprintf(stderr, "%s: %s: its %s attribute is not \"ID ENDPOINT\": %.*s\n", who, path,
                TS_CLUSTER_XATTR, (int)len, value);
        return 1;
    }
    return 0;
}

/*
 * Unless its key was named (--key, --state: toolkey.h), a command given a
 * path of a mount that uses keys takes the admin key of the mount's key
 * directory (TS_KEYS_XATTR), when this user can read it: the path names
 * its cluster, and so its keys. 0, or 1 after printing why that key is
 * unusable.
 */
static int metatarget_path_key(const char *path, const char *who)
{
    char dir[PATH_MAX];
    char key_path[PATH_MAX + 16];
    char why[512];
    ssize_t len;
    if (toolkey_named())
        return 0;
    len = getxattr(path, TS_KEYS_XATTR, dir, sizeof(dir) - 1);
    if (len <= 0)
        return 0; /* a mount without keys */
    dir[len] = '\0';
    snprintf(key_path, sizeof(key_path), "%s/admin.key", dir);
    if (access(key_path, F_OK) != 0)
        return 0; /* not this machine's admin: meta will not answer, and the error says so */
    if (curve_use_key(key_path, why, sizeof(why)) != 0) {
        fprintf(stderr, "%s: %s\n", who, why);
        return 1;
    }
    return 0;
}

int metatarget_resolve_path(struct metatarget *target, const char *path, const char *who)
{
    char file_id[TS_CLUSTER_ID_HEX + 1];
    char file_endpoint[METATARGET_ENDPOINT_MAX];
    char given_id[TS_CLUSTER_ID_HEX + 1];
    bool by_state = target->state_dir[0] != '\0';
    struct rpc_client *client;
    int exit_code;
    int status;

    exit_code = metatarget_path_cluster(path, file_id, sizeof(file_id), file_endpoint,
                                        sizeof(file_endpoint), who);
    if (exit_code == 0)
        exit_code = metatarget_path_key(path, who);
    if (exit_code != 0)
        return exit_code;
    if (!by_state && !target->endpoint[0]) {
        /* file_endpoint fits: both buffers are METATARGET_ENDPOINT_MAX */
        snprintf(target->endpoint, sizeof(target->endpoint), "%s", file_endpoint);
        return 0;
    }
    exit_code = metatarget_resolve(target, who);
    if (exit_code != 0)
        return exit_code;
    client = rpc_client_new(target->endpoint);
    status =
        client ? toolmeta_cluster_id(client, (int)target->timeout_ms, given_id, sizeof(given_id))
               : TS_ERR_INVAL;
    rpc_client_destroy(&client);
    if (status != TS_OK) {
        fprintf(stderr,
                "%s: cannot ask tessera-meta at %s (%s%s) which cluster it serves: %s%s%s\n", who,
                target->endpoint, by_state ? "--state " : "--meta",
                by_state ? target->state_dir : "", status_text(status),
                status == TS_ERR_TIMEDOUT && curve_enabled() ? "; or it does not know key " : "",
                status == TS_ERR_TIMEDOUT && curve_enabled() ? curve_key_path() : "");
        return 1;
    }
    if (strcmp(given_id, file_id) == 0)
        return 0;
    fprintf(stderr,
            "%s: %s is in cluster %s (meta %s), but %s %s names cluster %s (meta %s); "
            "leave out --state and --meta to use the file's cluster\n",
            who, path, file_id, file_endpoint, by_state ? "--state" : "--meta",
            by_state ? target->state_dir : target->endpoint, given_id, target->endpoint);
    return 1;
}
