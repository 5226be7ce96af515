/*
 * @file metatarget.h
 * Which tessera-meta a subcommand talks to, and how long it waits: the
 * options --state DIR | --meta ENDPOINT and --timeout-ms MS that every
 * command asking meta takes, parsed and resolved in one place.
 *
 * A command lists METATARGET_LONG_OPTIONS among its options (cliargs.h),
 * hands each option to metatarget_option() before its own switch, parses
 * with metatarget_parse() (or calls metatarget_check() once parsing is
 * done), then calls metatarget_resolve().
 */
#ifndef TESSERA_TOOLS_METATARGET_H
#define TESSERA_TOOLS_METATARGET_H

#include "cliargs.h"

#include <getopt.h>
#include <limits.h>
#include <stddef.h>

#define METATARGET_ENDPOINT_MAX 512

/* The getopt codes of the three options. */
enum {
    METATARGET_OPT_STATE = 's',
    METATARGET_OPT_META = 'm',
    METATARGET_OPT_TIMEOUT = 't',
};

#define METATARGET_LONG_OPTIONS                                                                    \
    {"state", required_argument, NULL, METATARGET_OPT_STATE},                                      \
        {"meta", required_argument, NULL, METATARGET_OPT_META},                                    \
        {"timeout-ms", required_argument, NULL, METATARGET_OPT_TIMEOUT}

struct metatarget {
    char state_dir[PATH_MAX];                /* "" = not given */
    char endpoint[METATARGET_ENDPOINT_MAX]; /* "" = not given; set by metatarget_resolve() */
    long timeout_ms;                         /* for each reply */
};

/*
 * Takes getopt's `option` if it is one of the three, as a cliargs option
 * handler does: CLIARGS_GO_ON when taken, CLIARGS_NOT_MINE when it is not
 * one of them, CLIARGS_EXIT_USAGE after saying (`who` first) what its
 * value should be.
 */
int metatarget_option(struct metatarget *target, const char *who, int option, const char *value);

/*
 * After parsing: CLIARGS_GO_ON, or CLIARGS_EXIT_USAGE after saying that
 * --state and --meta were both given.
 */
int metatarget_check(const struct metatarget *target, const char *who);

/* cliargs_parse(), then metatarget_check() of target: what it returns. */
int metatarget_parse(const struct cliargs_command *command, struct metatarget *target, int argc,
                     char **argv, void *ctx, int *first_operand);

/*
 * Fills the endpoint from the state directory's cluster.conf unless --meta
 * gave it. Returns 0, or an exit code after printing why (`who` first).
 */
int metatarget_resolve(struct metatarget *target, const char *who);

/*
 * For a command that acts on a path in a mount: the path names its
 * cluster (its TS_CLUSTER_XATTR, "ID ENDPOINT"). Without --state and
 * --meta, the endpoint becomes the path's; with one of them, the meta it
 * names must say it serves the path's cluster (CLUSTER_ID), or the command
 * would show or move the tiles of another cluster's inode of the same
 * number. Returns 0, or exit code 1 after printing why (`who` first): the
 * path is not in a Tessera mount, or the clusters differ (both named).
 */
int metatarget_resolve_path(struct metatarget *target, const char *path, const char *who);

/*
 * Splits a TS_CLUSTER_XATTR value of len bytes (no NUL needed) into the
 * cluster id (TS_CLUSTER_ID_HEX hex digits) and the endpoint (one word).
 * Returns 0, -EINVAL if it is not of that form, -ENAMETOOLONG if a part
 * does not fit its buffer.
 */
int metatarget_parse_cluster(const char *value, size_t len, char *id, size_t id_cap, char *endpoint,
                             size_t endpoint_cap);

#endif
