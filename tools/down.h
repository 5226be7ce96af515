/*
 * @file down.h
 * `tessera down`: unmounts and stops the local cluster (cluster.h). The
 * data stays in the state directory for the next `tessera up`.
 */
#ifndef TESSERA_TOOLS_DOWN_H
#define TESSERA_TOOLS_DOWN_H

/*
 * Runs `tessera down` with argv[0] = "down". Returns 0 when nothing of the
 * cluster is left running (also when nothing was), 1 if something could
 * not be stopped or unmounted, 2 on a usage error.
 */
int down_main(int argc, char **argv);

#endif
