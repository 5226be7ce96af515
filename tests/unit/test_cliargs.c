/*
 * @file test_cliargs.c
 * Unit tests of the `tessera` subcommands' argument helper
 * (tools/cliargs.c): options reach the command's handler with their
 * values, --help exits 0, an unknown option, a missing value or an option
 * the handler refuses exits 2, operands and actions are found.
 */
#include "cliargs.h"
#include "util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

struct seen {
    bool json;
    const char *name;
};

static int usages;

static void usage(FILE *out)
{
    (void)out;
    usages++;
}

static int take(void *ctx, int option, const char *value)
{
    struct seen *seen = ctx;
    switch (option) {
    case 'j': seen->json = true; return CLIARGS_GO_ON;
    case 'n':
        if (strcmp(value, "bad") == 0)
            return cliargs_usage_error("test", "--name cannot be", value);
        seen->name = value;
        return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

static const struct option options[] = {
    {"json", no_argument, NULL, 'j'},          {"name", required_argument, NULL, 'n'},
    {"other", no_argument, NULL, 'o'}, /* in the table, but take() does not know it */
    {"help", no_argument, NULL, CLIARGS_HELP}, {NULL, 0, NULL, 0},
};
static const struct cliargs_command command = {"test", usage, options, take};

/* Runs cliargs_parse over the NULL-terminated words. */
static int parse(struct seen *seen, int *operands, char **words)
{
    int argc = 0;
    while (words[argc])
        argc++;
    memset(seen, 0, sizeof(*seen));
    return cliargs_parse(&command, argc, words, seen, operands);
}

static void test_options_and_operands(void **state)
{
    (void)state;
    struct seen seen;
    int operands = -1;
    char *words[] = {"test", "--json", "--name", "x", "show", "path", NULL};
    assert_int_equal(parse(&seen, &operands, words), CLIARGS_GO_ON);
    assert_true(seen.json);
    assert_string_equal(seen.name, "x");
    assert_int_equal(operands, 4);
    assert_int_equal(cliargs_no_operands("test", 6, words, operands), CLIARGS_EXIT_USAGE);
    assert_int_equal(cliargs_no_operands("test", 6, words, 6), CLIARGS_GO_ON);

    char *none[] = {"test", NULL};
    assert_int_equal(parse(&seen, &operands, none), CLIARGS_GO_ON);
    assert_int_equal(operands, 1);
}

static void test_help_and_errors(void **state)
{
    (void)state;
    struct seen seen;
    int operands;
    char *help[] = {"test", "--json", "--help", "--bogus", NULL};
    usages = 0;
    assert_int_equal(parse(&seen, &operands, help), CLIARGS_EXIT_OK);
    assert_int_equal(usages, 1);
    char *short_help[] = {"test", "-h", NULL};
    assert_int_equal(parse(&seen, &operands, short_help), CLIARGS_EXIT_OK);

    char *unknown[] = {"test", "--bogus", NULL};
    assert_int_equal(parse(&seen, &operands, unknown), CLIARGS_EXIT_USAGE);
    char *not_taken[] = {"test", "--other", NULL};
    assert_int_equal(parse(&seen, &operands, not_taken), CLIARGS_EXIT_USAGE);
    char *missing[] = {"test", "--name", NULL};
    assert_int_equal(parse(&seen, &operands, missing), CLIARGS_EXIT_USAGE);
    char *refused[] = {"test", "--name", "bad", NULL};
    assert_int_equal(parse(&seen, &operands, refused), CLIARGS_EXIT_USAGE);
    assert_int_equal(usages, 2);
}

static void test_actions(void **state)
{
    (void)state;
    static const char *const actions[] = {"start", "stop", "show"};
    char *words[] = {"test", "stop", "frob", NULL};
    size_t action = 99;
    assert_int_equal(cliargs_action("test", actions, 3, 3, words, 1, &action), CLIARGS_GO_ON);
    assert_int_equal(action, 1);
    assert_int_equal(cliargs_action("test", actions, 3, 3, words, 2, &action), CLIARGS_EXIT_USAGE);
    assert_int_equal(cliargs_action("test", actions, 3, 3, words, 3, &action), CLIARGS_EXIT_USAGE);
}

/* "Did you mean": the closest name within a third of the word's length, none on a tie. */
static void test_closest_names(void **state)
{
    (void)state;
    static const char *const commands[] = {"up", "down", "status", "node", "health", "fsck",
                                           "scrub", "layout", "profile", "rebalance"};
    const size_t count = sizeof(commands) / sizeof(commands[0]);
    assert_string_equal(util_closest_name("stauts", commands, count), "status");
    assert_string_equal(util_closest_name("rebalnce", commands, count), "rebalance");
    assert_string_equal(util_closest_name("scrub", commands, count), "scrub");
    assert_string_equal(util_closest_name("uo", commands, count), "up");
    assert_null(util_closest_name("xyz", commands, count));
    assert_null(util_closest_name("hlth", commands, count)); /* 2 edits in 4 letters: too far */
    static const char *const tied[] = {"cat", "car"};
    assert_null(util_closest_name("ca", tied, 2));

    static const struct option options[] = {{"json", no_argument, NULL, 'j'},
                                            {"meta", required_argument, NULL, 'm'},
                                            {NULL, 0, NULL, 0}};
    assert_string_equal(util_closest_long_option(options, "--jsno"), "json");
    assert_string_equal(util_closest_long_option(options, "--mtea=tcp://x"), "meta");
    assert_null(util_closest_long_option(options, "-j"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_and_operands),
        cmocka_unit_test(test_help_and_errors),
        cmocka_unit_test(test_actions),
        cmocka_unit_test(test_closest_names),
    };
    return cmocka_run_group_tests_name("cliargs", tests, NULL, NULL);
}
