/*
 * @file configcmd.h
 * `tessera config check FILE`: checks a daemon's configuration file
 * (conffile.h) the way the daemon reads it.
 */
#ifndef TESSERA_TOOLS_CONFIGCMD_H
#define TESSERA_TOOLS_CONFIGCMD_H

/* Entry point of `tessera config`; argv[0] is "config". Returns the exit code. */
int configcmd_main(int argc, char **argv);

#endif
