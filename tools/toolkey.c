/*
 * @file toolkey.c
 * See toolkey.h. Looking for --state in argv before the command parses it
 * keeps every command's option table as it is: the key follows the
 * cluster the command is pointed at.
 */
#include "toolkey.h"

#include "cliargs.h"
#include "clusterconf.h"
#include "curve.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The command's --state value, or NULL. */
static const char *toolkey_state_in(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--state") == 0 && i + 1 < argc)
            return argv[i + 1];
        if (strncmp(argv[i], "--state=", 8) == 0)
            return argv[i] + 8;
    }
    return NULL;
}

int toolkey_choose(const char *given, int argc, char **argv)
{
    char path[PATH_MAX + 32];
    char state[PATH_MAX];
    char why[512];
    const char *from_env = getenv("TESSERA_KEY");
    const char *state_flag = toolkey_state_in(argc, argv);

    if (given && *given)
        snprintf(path, sizeof(path), "%s", given);
    else if (from_env && *from_env)
        snprintf(path, sizeof(path), "%s", from_env);
    else {
        if (state_flag)
            snprintf(state, sizeof(state), "%s", state_flag);
        else if (clusterconf_default_state_dir(state, sizeof(state)) != 0)
            return 0;
        snprintf(path, sizeof(path), "%s/keys/admin.key", state);
        if (access(path, F_OK) != 0)
            return 0;
    }
    if (curve_use_key(path, why, sizeof(why)) != 0) {
        fprintf(stderr, "tessera: %s\n", why);
        return CLIARGS_EXIT_FAILED;
    }
    return 0;
}
