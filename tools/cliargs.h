/*
 * @file cliargs.h
 * What every `tessera` subcommand does alike with its command line:
 * getopt_long over its option table, -h/--help, and usage errors, each one
 * line on stderr that names the command and points to its --help:
 *
 *   tessera status: unknown option --bogus (see tessera status --help)
 *
 * The exit codes every subcommand documents are CLIARGS_EXIT_OK (done),
 * CLIARGS_EXIT_FAILED (the work failed) and CLIARGS_EXIT_USAGE (the command
 * line is wrong). A subcommand keeps its own options, operands and texts.
 */
#ifndef TESSERA_TOOLS_CLIARGS_H
#define TESSERA_TOOLS_CLIARGS_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#define CLIARGS_EXIT_OK 0
#define CLIARGS_EXIT_FAILED 1
#define CLIARGS_EXIT_USAGE 2

/* From a parser or an option handler: no exit code yet, go on. */
#define CLIARGS_GO_ON (-1)
/* From an option handler: not an option of this command. */
#define CLIARGS_NOT_MINE (-2)

/* The getopt code -h and --help must have in a command's option table. */
#define CLIARGS_HELP 'h'

struct cliargs_command {
    const char *who;              /* "tessera status": names the command in every message */
    void (*usage)(FILE *out);     /* prints the --help text */
    const struct option *options; /* getopt_long's table, {"help", ..., CLIARGS_HELP} in it */
    /*
     * Takes one option: its getopt code and its value (NULL if it has
     * none). Returns CLIARGS_GO_ON, CLIARGS_NOT_MINE, or an exit code
     * (after cliargs_usage_error()).
     */
    int (*take)(void *ctx, int option, const char *value);
};

/*
 * Parses the options in argv (argv[0] is the command's name) up to the
 * first operand. Returns CLIARGS_GO_ON with *first_operand the index of
 * the first operand (argc if none); CLIARGS_EXIT_OK after printing the
 * usage to stdout for -h or --help; CLIARGS_EXIT_USAGE after a usage error
 * (an unknown option, an option without its value) or what take()
 * returned when it was not CLIARGS_GO_ON. Uses getopt's global state: one
 * thread, one parse at a time.
 */
int cliargs_parse(const struct cliargs_command *command, int argc, char **argv, void *ctx,
                  int *first_operand);

/* Prints "WHO: MESSAGE[ ARG] (see WHO --help)" on stderr; returns CLIARGS_EXIT_USAGE. */
int cliargs_usage_error(const char *who, const char *message, const char *arg);

/*
 * As cliargs_usage_error(), adding "(did you mean GUESS?)" after ARG when
 * util_closest_name() finds one in names (each with prefix before it, e.g.
 * "--" for long options).
 */
int cliargs_unknown_error(const char *who, const char *message, const char *arg,
                          const char *prefix, const char *const *names, size_t count);

/* For a command without operands: CLIARGS_GO_ON, or a usage error naming the first one. */
int cliargs_no_operands(const char *who, int argc, char **argv, int first_operand);

/*
 * The action named by argv[first_operand], one of actions[0..count):
 * CLIARGS_GO_ON with *action its index, or a usage error listing the
 * actions when it is missing or unknown.
 */
int cliargs_action(const char *who, const char *const *actions, size_t count, int argc, char **argv,
                   int first_operand, size_t *action);

#endif
