/*
 * @file toolkey.h
 * Which key pair the `tessera` command itself uses on its links (curve.h).
 */
#ifndef TESSERA_TOOLS_TOOLKEY_H
#define TESSERA_TOOLS_TOOLKEY_H

/*
 * Before a command runs: `tessera --key FILE COMMAND` (given, NULL if
 * not), else $TESSERA_KEY, else STATE/keys/admin.key if it exists, STATE
 * being the command's --state (found in argv) or the default state
 * directory; else no key (plain ZeroMQ, for a cluster without keys).
 * Returns 0, or CLIARGS_EXIT_FAILED after printing why the key is unusable.
 */
int toolkey_choose(const char *given, int argc, char **argv);

#endif
