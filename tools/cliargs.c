/*
 * @file cliargs.c
 * See cliargs.h. getopt_long runs with opterr off and a leading ':' in
 * its short options, so it reports an option without its value as ':' and
 * an unknown one as '?' instead of printing its own text, and every
 * message comes out in one form.
 */
#include "cliargs.h"

#include "util.h"

#include <stdbool.h>
#include <string.h>

int cliargs_usage_error(const char *who, const char *message, const char *arg)
{
    fprintf(stderr, "%s: %s%s%s (see %s --help)\n", who, message, arg ? " " : "", arg ? arg : "",
            who);
    return CLIARGS_EXIT_USAGE;
}

int cliargs_unknown_error(const char *who, const char *message, const char *arg,
                          const char *prefix, const char *const *names, size_t count)
{
    size_t skip = strlen(prefix);
    const char *guess = strncmp(arg, prefix, skip) == 0
                            ? util_closest_name(arg + skip, names, count)
                            : NULL;
    if (!guess)
        return cliargs_usage_error(who, message, arg);
    fprintf(stderr, "%s: %s %s (did you mean %s%s?) (see %s --help)\n", who, message, arg, prefix,
            guess, who);
    return CLIARGS_EXIT_USAGE;
}

/* The unknown option arg, with the closest of the command's long options. */
static int cliargs_unknown_option(const struct cliargs_command *command, const char *arg)
{
    const char *names[64];
    size_t count = 0;
    for (const struct option *o = command->options; o->name && count < 64; o++)
        names[count++] = o->name;
    /* "--name=value": the name is what was mistyped. */
    char name[64];
    snprintf(name, sizeof(name), "%s", arg);
    name[strcspn(name, "=")] = '\0';
    return cliargs_unknown_error(command->who, "unknown option", name, "--", names, count);
}

int cliargs_parse(const struct cliargs_command *command, int argc, char **argv, void *ctx,
                  int *first_operand)
{
    int option;

    *first_operand = argc;
    opterr = 0;
    optind = 1; /* a parse starts afresh, whatever ran before */
    for (;;) {
        option = getopt_long(argc, argv, ":h", command->options, NULL);
        if (option == -1)
            break;
        if (option == CLIARGS_HELP) {
            command->usage(stdout);
            return CLIARGS_EXIT_OK;
        }
        if (option == ':')
            return cliargs_usage_error(command->who, "missing value for", argv[optind - 1]);
        int taken = option == '?' ? CLIARGS_NOT_MINE : command->take(ctx, option, optarg);
        if (taken == CLIARGS_NOT_MINE)
            return cliargs_unknown_option(command, argv[optind - 1]);
        if (taken != CLIARGS_GO_ON)
            return taken;
    }
    *first_operand = optind;
    return CLIARGS_GO_ON;
}

int cliargs_no_operands(const char *who, int argc, char **argv, int first_operand)
{
    if (first_operand < argc)
        return cliargs_usage_error(who, "unexpected argument", argv[first_operand]);
    return CLIARGS_GO_ON;
}

/* "a, b or c" (with_or) or "a, b, c" into out. */
static void cliargs_list(const char *const *names, size_t count, bool with_or, char *out,
                         size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < count && used < cap; i++) {
        const char *separator = i == 0 ? "" : with_or && i + 1 == count ? " or " : ", ";
        int n = snprintf(out + used, cap - used, "%s%s", separator, names[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

int cliargs_action(const char *who, const char *const *actions, size_t count, int argc, char **argv,
                   int first_operand, size_t *action)
{
    char list[256];
    char message[300];

    if (first_operand >= argc) {
        cliargs_list(actions, count, true, list, sizeof(list));
        snprintf(message, sizeof(message), "missing action: %s", list);
        return cliargs_usage_error(who, message, NULL);
    }
    for (size_t i = 0; i < count; i++) {
        if (strcmp(argv[first_operand], actions[i]) == 0) {
            *action = i;
            return CLIARGS_GO_ON;
        }
    }
    cliargs_list(actions, count, false, list, sizeof(list));
    snprintf(message, sizeof(message), "unknown action (%s):", list);
    return cliargs_unknown_error(who, message, argv[first_operand], "", actions, count);
}
