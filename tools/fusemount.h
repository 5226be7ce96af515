/*
 * @file fusemount.h
 * The FUSE mountpoint of a local cluster as the kernel sees it: is a FUSE
 * filesystem mounted there (from /proc/self/mountinfo), is it a stale
 * mount whose daemon died (stat fails with ENOTCONN), and unmounting with
 * fusermount3.
 */
#ifndef TESSERA_TOOLS_FUSEMOUNT_H
#define TESSERA_TOOLS_FUSEMOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * An absolute path for `path` as mountinfo spells it: the parent is
 * resolved with realpath() and the last component appended, so it works on
 * a stale mountpoint that cannot be stat'ed. Returns 0 or -errno.
 */
int fusemount_canonical_path(const char *path, char *out, size_t cap);

/*
 * 1 if a filesystem whose type starts with "fuse" is mounted exactly at
 * mountpoint (canonical, see above), 0 if not, -errno if mountinfo cannot
 * be read.
 */
int fusemount_is_mounted(const char *mountpoint);

/*
 * Like fusemount_is_mounted(); when it returns 1 and source is not NULL,
 * also copies the source (the fsname: "tessera:ENDPOINT" for a Tessera
 * mount) of the topmost FUSE mount there into source, cut to cap.
 */
int fusemount_source(const char *mountpoint, char *source, size_t cap);

/*
 * The id of the mount on top of path (a mountpoint), without asking a FUSE
 * daemon anything (statx AT_STATX_DONT_SYNC): unique for the machine's
 * uptime from Linux 6.8 (STATX_MNT_ID_UNIQUE), before that the mountinfo id,
 * which a later mount may reuse. Returns 0 or -errno.
 */
int fusemount_mount_id(const char *path, uint64_t *id);

/* True when stat(mountpoint) fails with ENOTCONN: a FUSE mount whose daemon died. */
bool fusemount_is_stale(const char *mountpoint);

/*
 * Lazily detaches a stale mount (`fusermount3 -uz`). Returns 0 or -EIO
 * (fusermount3's message is on stderr).
 */
int fusemount_detach(const char *mountpoint);

/*
 * Unmounts: `fusermount3 -u` retried every 100 ms while the mount is busy,
 * up to timeout_ms, then `fusermount3 -uz`. Returns 0 when nothing is
 * mounted there any more, else -EBUSY.
 */
int fusemount_unmount(const char *mountpoint, int timeout_ms);

#endif
