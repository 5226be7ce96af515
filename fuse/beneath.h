/*
 * @file beneath.h
 * Replacing a dead FUSE mount without ever leaving its directory bare.
 *
 * When a mount process dies, its mount stays in the kernel (stat fails with
 * ENOTCONN). Detaching it and then mounting anew leaves the directory
 * underneath visible in between, and a writer's files, fsync and all, land
 * on the local disk there, hidden once the new mount covers them. Instead
 * the new mount is made with the kernel's mount API (fsopen, fsmount) and
 * put *beneath* the dead one (move_mount with MOVE_MOUNT_BENEATH, Linux 6.5),
 * and only then is the dead one on top detached: a path lookup finds the
 * dead mount (ENOTCONN) or the new one, never the bare directory. It needs
 * CAP_SYS_ADMIN; the mount's /dev/fuse descriptor is then handed to libfuse
 * as "/dev/fd/N".
 */
#ifndef TESSERA_FUSE_BENEATH_H
#define TESSERA_FUSE_BENEATH_H

#include <stdbool.h>
#include <stddef.h>

/* The -o options a mount made by hand understands, as beneath_parse_options() finds them. */
struct beneath_options {
    char source[256];  /* fsname=, shown as the mount's source */
    char subtype[64];  /* subtype=, the type becomes fuse.SUBTYPE */
    char max_read[16]; /* max_read=, digits only */
    bool default_permissions;
    bool allow_other;
    unsigned long mount_attributes; /* MOUNT_ATTR_* from ro, nosuid, nodev, noexec, noatime */
};

/*
 * Parses a libfuse -o option list ("a,b=c,..."), the defaults being those
 * of libfuse (nosuid, nodev). Returns 0, or -ENOTSUP for an option this
 * module cannot pass to the kernel itself (the caller then mounts the
 * ordinary way), or -EINVAL for a value that does not fit.
 */
int beneath_parse_options(const char *options, struct beneath_options *out);

/*
 * Mounts a new FUSE filesystem with `options` beneath the dead mount on
 * top of mountpoint, then detaches the dead one. On success returns 0 and
 * the new connection's /dev/fuse descriptor in *fuse_fd, for libfuse as
 * "/dev/fd/N". Fails, with nothing mounted and the dead mount still in
 * place, with -ENOTSUP (options, see above), -EPERM (not privileged) or
 * -EINVAL (a kernel before 6.5, or mountpoint not the top of a mount);
 * the reason is logged.
 */
int beneath_replace(const char *mountpoint, const char *options, int *fuse_fd);

/*
 * What libfuse's unmount does for a mount it made, for one made here, which
 * libfuse does not know the mountpoint of: detaches mountpoint unless the
 * connection on fuse_fd is already gone (then something else unmounted it
 * and whatever is there now is not ours).
 */
void beneath_unmount(const char *mountpoint, int fuse_fd);

#endif
