/*
 * @file profile.h
 * `tessera profile`: access profiles of a subtree of the mount.
 *
 *   tessera profile start|stop|reset PATH   PROFILE_SET on every file and
 *                                           directory under PATH (START on
 *                                           a directory also profiles what
 *                                           is created in it later)
 *   tessera profile show PATH [--json] [--svg FILE]
 *                                           per file: tiles, machines,
 *                                           reads, writes, bytes, local vs
 *                                           remote; JSON with every
 *                                           record; an SVG heat map
 *
 * Inodes are found by walking PATH through the mount (stat(2)); meta is
 * found like `tessera status` finds it.
 */
#ifndef TESSERA_TOOLS_PROFILE_H
#define TESSERA_TOOLS_PROFILE_H

/*
 * Runs `tessera profile` with argv[0] = "profile". Returns the exit code:
 * 0 ok, 1 refused or unreachable, 2 usage error.
 */
int profile_main(int argc, char **argv);

#endif
