/*
 * @file metatarget.h
 * Which tessera-meta a subcommand talks to, and how long it waits: the
 * options --state DIR | --meta ENDPOINT and --timeout-ms MS that every
 * command asking meta takes, parsed and resolved in one place.
 *
 * A command lists METATARGET_LONG_OPTIONS among its getopt_long options,
 * hands each option to metatarget_option() before its own switch, calls
 * metatarget_check() once parsing is done, then metatarget_resolve().
 */
#ifndef TESSERA_TOOLS_METATARGET_H
#define TESSERA_TOOLS_METATARGET_H

#include <getopt.h>
#include <limits.h>

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
 * Takes getopt's `option` if it is one of the three: returns 1 when taken,
 * 0 when it is not one of them, -1 when its value is bad (*why then says
 * what is wanted; the caller prints it with the value).
 */
int metatarget_option(struct metatarget *target, int option, const char *arg, const char **why);

/* After parsing: NULL, or the usage error to print (both --state and --meta). */
const char *metatarget_check(const struct metatarget *target);

/*
 * Fills the endpoint from the state directory's cluster.conf unless --meta
 * gave it. Returns 0, or an exit code after printing why (`who` first).
 */
int metatarget_resolve(struct metatarget *target, const char *who);

#endif
