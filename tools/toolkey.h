/*
 * @file toolkey.h
 * Which key pair the `tessera` command itself uses on its links (curve.h).
 */
#ifndef TESSERA_TOOLS_TOOLKEY_H
#define TESSERA_TOOLS_TOOLKEY_H

#include <stdbool.h>

/*
 * Before a command runs, the first of: `tessera --key FILE COMMAND`
 * (given, NULL if not); STATE/keys/admin.key of the command's --state
 * (found in argv) if it exists; $TESSERA_KEY; admin.key of the default
 * state directory's keys if it exists; else no key (plain ZeroMQ, for a
 * cluster without keys). Returns 0, or CLIARGS_EXIT_FAILED after printing
 * why the key is unusable.
 */
int toolkey_choose(const char *given, int argc, char **argv);

/*
 * Whether the key was named for this command (--key, or --state's): a
 * path's own cluster (metatarget.c) may not replace it.
 */
bool toolkey_named(void);

#endif
