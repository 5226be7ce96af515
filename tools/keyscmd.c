/*
 * @file keyscmd.c
 * See keyscmd.h. The key directory is --dir DIR, else STATE/keys of
 * --state STATE or of the default state directory (where `tessera up`
 * makes its cluster's keys); `init` also takes it as its operand.
 */
#include "keyscmd.h"

#include "cliargs.h"
#include "clusterconf.h"
#include "fmt.h"
#include "keysdir.h"
#include "tiletoken.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define KEYSCMD_WHO "tessera keys"

struct keyscmd_options {
    const char *dir;
    const char *state;
    const char *role;
};

static void keyscmd_usage(FILE *out)
{
    fprintf(out, "Usage: tessera keys init [DIR]\n"
                 "       tessera keys add --role meta|datanode|mount|admin NAME\n"
                 "       tessera keys list\n"
                 "       tessera keys revoke NAME\n"
                 "       tessera keys rotate-tile-secret\n"
                 "Options: --dir DIR (the key directory), or --state STATE (its STATE/keys);\n"
                 "default: the default state directory's keys, which `tessera up` makes.\n"
                 "\n"
                 "Every member of a cluster has a key pair (DIR/NAME.key, mode 0600) and its\n"
                 "public key in DIR/known_keys; meta and the datanodes let in only those keys\n"
                 "(CURVE), and reread known_keys when it changes. A revoked key is refused at\n"
                 "its next connection, and its live connections get 'operation not permitted'.\n"
                 "Give each daemon its key with --key DIR/NAME.key; it finds server.pub (and,\n"
                 "for meta and datanodes, server.key and known_keys) beside it.\n"
                 "  init    makes DIR with the server key and the keys of meta and admin\n"
                 "  add     makes NAME.key and registers it with its role\n"
                 "  list    shows every key, its role and whether it is revoked\n"
                 "  revoke  refuses NAME's key from now on (its name stays taken)\n"
                 "  rotate-tile-secret  a new secret for tile write tokens in DIR/tile.secret,\n"
                 "          the old one kept as previous (datanodes accept both): copy the\n"
                 "          file to every datanode's key directory, then to meta's\n");
}

static int keyscmd_take(void *ctx, int option, const char *value)
{
    struct keyscmd_options *options = ctx;
    switch (option) {
    case 'd': options->dir = value; return CLIARGS_GO_ON;
    case 's': options->state = value; return CLIARGS_GO_ON;
    case 'r': options->role = value; return CLIARGS_GO_ON;
    default: return CLIARGS_NOT_MINE;
    }
}

/* The key directory the options name, into out. 0 or an exit code. */
static int keyscmd_dir(const struct keyscmd_options *options, char *out, size_t cap)
{
    char state[PATH_MAX];
    if (options->dir)
        return fmt_into(out, cap, "%s", options->dir) == 0
                   ? 0
                   : cliargs_usage_error(KEYSCMD_WHO, "directory name too long:", options->dir);
    if (options->state)
        snprintf(state, sizeof(state), "%s", options->state);
    else if (clusterconf_default_state_dir(state, sizeof(state)) != 0)
        return CLIARGS_EXIT_FAILED;
    if (fmt_into(out, cap, "%s/keys", state) != 0)
        return cliargs_usage_error(KEYSCMD_WHO, "state directory name too long:", state);
    return 0;
}

int keyscmd_main(int argc, char **argv)
{
    static const struct option long_options[] = {
        {"dir", required_argument, NULL, 'd'},
        {"state", required_argument, NULL, 's'},
        {"role", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, CLIARGS_HELP},
        {NULL, 0, NULL, 0},
    };
    static const struct cliargs_command command = {KEYSCMD_WHO, keyscmd_usage, long_options,
                                                   keyscmd_take};
    static const char *const actions[] = {"init", "add", "list", "revoke", "rotate-tile-secret"};
    struct keyscmd_options options = {0};
    char dir[PATH_MAX];
    size_t action;
    int operand;
    int exit_code;
    int operands_wanted;

    /* Options may come after the action and its operand too. */
    exit_code = cliargs_parse(&command, argc, argv, &options, &operand);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    exit_code = cliargs_action(KEYSCMD_WHO, actions, 5, argc, argv, operand, &action);
    if (exit_code != CLIARGS_GO_ON)
        return exit_code;
    operands_wanted = action == 0 || action == 2 || action == 4 ? 0 : 1;
    if (action == 0 && operand + 1 < argc && !options.dir)
        options.dir = argv[++operand];
    if (argc - operand - 1 != operands_wanted)
        return cliargs_usage_error(KEYSCMD_WHO,
                                   operands_wanted ? "wants one NAME after" : "wants nothing after",
                                   actions[action]);
    if (action == 1 && !options.role)
        return cliargs_usage_error(KEYSCMD_WHO, "add wants --role meta|datanode|mount|admin", NULL);
    exit_code = keyscmd_dir(&options, dir, sizeof(dir));
    if (exit_code != 0)
        return exit_code;
    switch (action) {
    case 0:
        if (keysdir_init(dir, KEYSCMD_WHO) != 0)
            return CLIARGS_EXIT_FAILED;
        printf("keys of a new cluster in %s: meta.key, admin.key, server.key, server.pub, "
               "known_keys, tile.secret\n",
               dir);
        return CLIARGS_EXIT_OK;
    case 1:
        if (keysdir_add(dir, options.role, argv[operand + 1], KEYSCMD_WHO) != 0)
            return CLIARGS_EXIT_FAILED;
        printf("%s/%s.key made and known as %s\n", dir, argv[operand + 1], options.role);
        return CLIARGS_EXIT_OK;
    case 2: return keysdir_list(dir, KEYSCMD_WHO) == 0 ? CLIARGS_EXIT_OK : CLIARGS_EXIT_FAILED;
    case 4:
        if (keysdir_tile_secret(dir, true, KEYSCMD_WHO) != 0)
            return CLIARGS_EXIT_FAILED;
        printf("%s/%s has a new current secret; meta and the datanodes reread it within a "
               "second\n",
               dir, TILETOKEN_FILE);
        return CLIARGS_EXIT_OK;
    default:
        if (keysdir_revoke(dir, argv[operand + 1], KEYSCMD_WHO) != 0)
            return CLIARGS_EXIT_FAILED;
        printf("%s revoked: meta and the datanodes refuse it within a second\n", argv[operand + 1]);
        return CLIARGS_EXIT_OK;
    }
}
