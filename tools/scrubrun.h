/*
 * @file scrubrun.h
 * `tessera scrub [--max-mbps R] [--node ID]`: has every datanode (or one)
 * check all its stored tiles against their block checksums now
 * (NODE_SCRUB), shows the progress, and names the corrupt tile files
 * found.
 */
#ifndef TESSERA_TOOLS_SCRUBRUN_H
#define TESSERA_TOOLS_SCRUBRUN_H

/*
 * Runs `tessera scrub` with argv[0] = "scrub". Returns the exit code: 0
 * every tile checked is good, 1 corrupt tiles were found (or a node could
 * not be checked: meta or a datanode unreachable or refusing), 2 usage
 * error.
 */
int scrubrun_main(int argc, char **argv);

#endif
