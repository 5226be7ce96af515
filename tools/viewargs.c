/*
 * @file viewargs.c
 * See viewargs.h. cliargs needs the command's name in a static table
 * (its messages name it), so the table is filled per call.
 */
#include "viewargs.h"

#include "cliargs.h"

#include <getopt.h>

struct viewargs_parse_ctx {
    const char *who;
    struct viewargs *args;
};

static int viewargs_take(void *ctx, int option, const char *value)
{
    struct viewargs_parse_ctx *parse = ctx;
    int taken = metatarget_option(&parse->args->target, parse->who, option, value);
    if (taken != CLIARGS_NOT_MINE)
        return taken;
    if (option != 'j')
        return CLIARGS_NOT_MINE;
    parse->args->json = true;
    return CLIARGS_GO_ON;
}

int viewargs_parse(const char *who, void (*usage)(FILE *out), long timeout_ms, int argc,
                   char **argv, struct viewargs *args)
{
    static const struct option long_options[] = {
        METATARGET_LONG_OPTIONS,
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    const struct cliargs_command command = {who, usage, long_options, viewargs_take};
    struct viewargs_parse_ctx parse = {who, args};
    int operands;

    *args = (struct viewargs){.target.timeout_ms = timeout_ms};
    int exit_code = metatarget_parse(&command, &args->target, argc, argv, &parse, &operands);
    if (exit_code == CLIARGS_GO_ON)
        exit_code = cliargs_no_operands(who, argc, argv, operands);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    exit_code = metatarget_resolve(&args->target, who);
    return exit_code == 0 ? CLIARGS_GO_ON : exit_code;
}
