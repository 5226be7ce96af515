/*
 * @file up.h
 * `tessera up`: starts a local cluster (cluster.h) and waits until every
 * daemon serves. Idempotent: a daemon whose pid file names a live process
 * running its binary is left alone and only the others are started, so
 * after a crash `tessera up --state S` restarts just what is missing, with
 * the same data directory and port.
 */
#ifndef TESSERA_TOOLS_UP_H
#define TESSERA_TOOLS_UP_H

/*
 * Runs `tessera up` with argv[0] = "up". Returns the exit code: 0 when
 * every daemon is ready, 1 on a runtime failure (after stopping what this
 * run started), 2 on a usage error.
 */
int up_main(int argc, char **argv);

#endif
