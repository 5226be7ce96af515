/*
 * @file fsck.h
 * `tessera fsck PATH [--deep] [--repair]`: meta's tile map against the
 * datanodes, for every file under PATH (DESIGN.md "Replicas and
 * integrity").
 */
#ifndef TESSERA_TOOLS_FSCK_H
#define TESSERA_TOOLS_FSCK_H

/* Exit codes as fsck(8)'s: 0 clean; 1 problems found, all fixed; 4 problems left. */
#define FSCK_EXIT_FIXED 1
#define FSCK_EXIT_LEFT 4

int fsck_main(int argc, char **argv);

#endif
