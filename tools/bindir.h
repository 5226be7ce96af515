/*
 * @file bindir.h
 * Finds the daemon binaries `tessera up` starts.
 *
 * Installed, they sit next to `tessera` in one bin directory. In a build
 * tree they are build/meta/tessera-meta, build/datanode/tessera-datanode
 * and build/fuse/tessera-mount while `tessera` is build/tools/tessera.
 * Search order:
 *   1. $TESSERA_BIN_DIR/NAME, then $TESSERA_BIN_DIR/SUBDIR/NAME (so it may
 *      name a bin directory or a build directory);
 *   2. the directory of /proc/self/exe: when it is build/tools of a build
 *      tree (its parent has meson-info/ or meta/tessera-meta), the build
 *      layout; otherwise DIR/NAME.
 */
#ifndef TESSERA_TOOLS_BINDIR_H
#define TESSERA_TOOLS_BINDIR_H

#include <stddef.h>

/*
 * Puts the path of the executable `name` ("tessera-meta",
 * "tessera-datanode" or "tessera-mount") in out. Returns 0, or -ENOENT
 * after printing "NAME not found in DIR; build with ninja -C build or set
 * TESSERA_BIN_DIR", or -ENAMETOOLONG.
 */
int bindir_find(const char *name, char *out, size_t cap);

#endif
