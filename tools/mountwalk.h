/*
 * @file mountwalk.h
 * Walking a path in a Tessera mount, for the commands that act on every
 * file of a subtree (`tessera profile`, `tessera rebalance`): the inode
 * numbers stat(2) reports through the mount are meta's.
 */
#ifndef TESSERA_TOOLS_MOUNTWALK_H
#define TESSERA_TOOLS_MOUNTWALK_H

#include <stdint.h>
#include <sys/stat.h>

/*
 * Called for every entry: path as the walk reached it, its lstat. Returns
 * 0 to go on, anything else to stop the walk with that value.
 */
typedef int (*mountwalk_fn)(void *ctx, const char *path, const struct stat *st);

/*
 * Calls fn for root and, when root is a directory, everything below it,
 * directories before their contents, without following symbolic links or
 * leaving root's filesystem. Not reentrant (nftw has no context pointer).
 * Returns 0, fn's non-zero value, or -errno when root cannot be walked.
 * Entries that cannot be read are reported on stderr, prefixed by who,
 * and skipped.
 */
int mountwalk_run(const char *root, mountwalk_fn fn, void *ctx, const char *who);

/*
 * 0 when path is on a Tessera mount (it has the user.tessera.layout
 * attribute every Tessera file and directory shows), else exit code 1
 * after printing why, prefixed by who.
 */
int mountwalk_check(const char *path, const char *who);

/*
 * The tiles of the file at path, of size bytes and tile_bytes tiles: its
 * array layout's count when it has one (user.tessera.array), else its size
 * over its tile size. 0, or a negative errno (-EINVAL: the layout does not
 * parse).
 */
int mountwalk_tile_count(const char *path, uint64_t size, uint32_t tile_bytes, uint64_t *count);

#endif
