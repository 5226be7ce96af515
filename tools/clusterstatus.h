/*
 * @file clusterstatus.h
 * `tessera status`: asks tessera-meta for its datanodes (NODE_LIST) and the
 * filesystem totals (STATFS) and prints them as a table or as JSON.
 * (Named clusterstatus, not status, so that its header never shadows
 * common/status.h.)
 */
#ifndef TESSERA_TOOLS_CLUSTERSTATUS_H
#define TESSERA_TOOLS_CLUSTERSTATUS_H

/*
 * Runs `tessera status` with argv[0] = "status". Returns the exit code:
 * 0 ok, 1 meta unreachable or failing, 2 usage error.
 */
int clusterstatus_main(int argc, char **argv);

#endif
