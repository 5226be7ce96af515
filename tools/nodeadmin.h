/*
 * @file nodeadmin.h
 * `tessera node`: administration of one datanode, found by its id in
 * meta's NODE_LIST and reached at the address it advertises.
 *
 *   tessera node throttle ID R|off   cap (or uncap) its disk I/O at R MB/s
 *   tessera node stats ID [--json] [--reset]
 *                                    what it served: requests per opcode,
 *                                    bytes, the distinct tiles it read
 */
#ifndef TESSERA_TOOLS_NODEADMIN_H
#define TESSERA_TOOLS_NODEADMIN_H

/*
 * Runs `tessera node` with argv[0] = "node". Returns the exit code: 0 ok,
 * 1 meta or the datanode unreachable or refusing, 2 usage error.
 */
int nodeadmin_main(int argc, char **argv);

#endif
