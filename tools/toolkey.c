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

static bool toolkey_was_named;

bool toolkey_named(void)
{
    return toolkey_was_named;
}

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

/* Whether STATE/keys/admin.key exists; its path into out. */
static bool toolkey_admin_of(const char *state, char *out, size_t cap)
{
    snprintf(out, cap, "%s/keys/admin.key", state);
    return access(out, F_OK) == 0;
}

int toolkey_choose(const char *given, int argc, char **argv)
{
    char path[PATH_MAX + 32];
    char state[PATH_MAX];
    char why[512];
    const char *from_env = getenv("TESSERA_KEY");
    const char *state_flag = toolkey_state_in(argc, argv);

    if (given && *given) {
        snprintf(path, sizeof(path), "%s", given);
        toolkey_was_named = true;
    } else if (state_flag && toolkey_admin_of(state_flag, path, sizeof(path))) {
        toolkey_was_named = true;
    } else if (from_env && *from_env) {
        snprintf(path, sizeof(path), "%s", from_env);
    } else if (state_flag || clusterconf_default_state_dir(state, sizeof(state)) != 0 ||
               !toolkey_admin_of(state, path, sizeof(path))) {
        return 0; /* a cluster without keys */
    }
    if (curve_use_key(path, why, sizeof(why)) != 0) {
        fprintf(stderr, "tessera: %s\n", why);
        return CLIARGS_EXIT_FAILED;
    }
    return 0;
}
