/*
 * @file fsck.h
 * `tessera fsck PATH [--deep] [--repair]`: meta's tile map against the
 * datanodes, for every file under PATH (DESIGN.md "Replicas and
 * integrity").
 */
#ifndef TESSERA_TOOLS_FSCK_H
#define TESSERA_TOOLS_FSCK_H

#include "metatarget.h"

#include <stdint.h>

/* Exit codes as fsck(8)'s: 0 clean; 1 problems found, all fixed; 4 problems left. */
#define FSCK_EXIT_FIXED 1
#define FSCK_EXIT_LEFT 4

int fsck_main(int argc, char **argv);

/*
 * `tessera scrub PATH`: reads every replica of every file under path on
 * its datanode and checks it against its block checksums (a deep
 * TILE_CHECK: the datanode remembers a corrupt one and reports it to meta
 * in its heartbeat, which has it made again), at most bytes_per_sec (0: no
 * limit), and names each corrupt replica by the file's path ("corrupt: "
 * lines on stdout). Messages start with who. Returns 0 when every replica
 * was checked and is good, 1 otherwise.
 */
int fsck_scrub_path(const char *path, const struct metatarget *target, uint64_t bytes_per_sec,
                    const char *who);

#endif
