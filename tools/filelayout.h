/*
 * @file filelayout.h
 * `tessera layout`: a file's layout hints and its tile map.
 *
 *   tessera layout set FILE SPEC     set user.tessera.array (SPEC like
 *                                    "f32 512x512 BLOCK,BLOCK mesh=2x2"), or
 *                                    user.tessera.layout when SPEC is
 *                                    KEY=VALUE tokens ("tile=4M")
 *   tessera layout unset FILE        remove user.tessera.array
 *   tessera layout [show] FILE [--json]
 *                                    the effective layout, the tile count and
 *                                    each tile: node, version, bytes, and its
 *                                    box of indices (array files) or byte
 *                                    range (linear files)
 *
 * Hints are set and read through the mount with the xattr system calls, as
 * setfattr/getfattr would; the tile map comes from tessera-meta (TILE_MAP,
 * found like `tessera status` finds it), for the inode stat(2) reports.
 */
#ifndef TESSERA_TOOLS_FILELAYOUT_H
#define TESSERA_TOOLS_FILELAYOUT_H

/*
 * Runs `tessera layout` with argv[0] = "layout". Returns the exit code: 0
 * ok, 1 refused or unreachable, 2 usage error.
 */
int filelayout_main(int argc, char **argv);

#endif
