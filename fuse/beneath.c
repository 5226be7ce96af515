/*
 * @file beneath.c
 * See beneath.h. The order of the steps is the point: the new mount exists
 * beneath the dead one before the dead one goes, so at every instant a
 * lookup of the mountpoint lands in one of the two FUSE mounts. Making the
 * bare directory unwritable instead (chmod 000) does not stop root, and
 * chattr +i depends on the filesystem under the mountpoint; neither is
 * needed when the directory is never uncovered.
 *
 * The dead mount is detached through a descriptor opened on it before the
 * new mount went under it (umount2 of /proc/self/fd/N names exactly that
 * mount), so if something else removed it meanwhile, the new mount is not
 * detached by mistake.
 */
#include "beneath.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

/* linux/mount.h of Linux 6.5; glibc 2.36's sys/mount.h predates it. */
#ifndef MOVE_MOUNT_BENEATH
#define MOVE_MOUNT_BENEATH 0x00000200
#endif

/* Copies the value of "key=value" into out; -EINVAL if it does not fit. */
static int beneath_copy_value(const char *value, size_t len, char *out, size_t cap)
{
    if (len == 0 || len >= cap)
        return -EINVAL;
    memcpy(out, value, len);
    out[len] = '\0';
    return 0;
}

/* Applies one option of length len; see beneath_parse_options(). */
static int beneath_parse_one(const char *option, size_t len, struct beneath_options *out)
{
    static const struct {
        const char *name;
        unsigned long set, clear;
    } flags[] = {
        {"ro", MOUNT_ATTR_RDONLY, 0},       {"rw", 0, MOUNT_ATTR_RDONLY},
        {"nosuid", MOUNT_ATTR_NOSUID, 0},   {"suid", 0, MOUNT_ATTR_NOSUID},
        {"nodev", MOUNT_ATTR_NODEV, 0},     {"dev", 0, MOUNT_ATTR_NODEV},
        {"noexec", MOUNT_ATTR_NOEXEC, 0},   {"exec", 0, MOUNT_ATTR_NOEXEC},
        {"noatime", MOUNT_ATTR_NOATIME, 0},
    };
    const char *equals = memchr(option, '=', len);
    size_t name_len = equals ? (size_t)(equals - option) : len;
    const char *value = equals ? equals + 1 : NULL;
    size_t value_len = equals ? len - name_len - 1 : 0;

    if (len == 0)
        return 0;
    if (value && name_len == 6 && memcmp(option, "fsname", 6) == 0)
        return beneath_copy_value(value, value_len, out->source, sizeof(out->source));
    if (value && name_len == 7 && memcmp(option, "subtype", 7) == 0)
        return beneath_copy_value(value, value_len, out->subtype, sizeof(out->subtype));
    if (value && name_len == 8 && memcmp(option, "max_read", 8) == 0) {
        if (strspn(value, "0123456789") < value_len)
            return -EINVAL;
        return beneath_copy_value(value, value_len, out->max_read, sizeof(out->max_read));
    }
    if (!value && len == 19 && memcmp(option, "default_permissions", 19) == 0) {
        out->default_permissions = true;
        return 0;
    }
    if (!value && len == 11 && memcmp(option, "allow_other", 11) == 0) {
        out->allow_other = true;
        return 0;
    }
    for (size_t i = 0; !value && i < sizeof(flags) / sizeof(flags[0]); i++) {
        if (strlen(flags[i].name) == len && memcmp(option, flags[i].name, len) == 0) {
            out->mount_attributes = (out->mount_attributes | flags[i].set) & ~flags[i].clear;
            return 0;
        }
    }
    return -ENOTSUP;
}

int beneath_parse_options(const char *options, struct beneath_options *out)
{
    memset(out, 0, sizeof(*out));
    out->mount_attributes = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    for (const char *option = options; option && *option;) {
        const char *comma = strchr(option, ',');
        size_t len = comma ? (size_t)(comma - option) : strlen(option);
        int result;

        /* libfuse's "\," escapes are not worth supporting here */
        if (memchr(option, '\\', len))
            return -ENOTSUP;
        result = beneath_parse_one(option, len, out);
        if (result != 0)
            return result;
        option = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* fsconfig() of one string, logged on failure; 0 or -errno. */
static int beneath_set(int fs_fd, const char *key, const char *value)
{
    if (fsconfig(fs_fd, value ? FSCONFIG_SET_STRING : FSCONFIG_SET_FLAG, key, value, 0) == 0)
        return 0;
    int saved = errno;
    log_warn("fsconfig %s%s%s: %s", key, value ? "=" : "", value ? value : "", strerror(saved));
    return -saved;
}

/* Makes a detached FUSE mount on a new /dev/fuse connection. 0 or -errno. */
static int beneath_make_mount(const struct beneath_options *options, int *mount_fd, int *fuse_fd)
{
    char number[32];
    int result;
    int fs_fd;

    *fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (*fuse_fd < 0) {
        result = -errno;
        log_warn("cannot open /dev/fuse: %s", strerror(-result));
        return result;
    }
    fs_fd = fsopen("fuse", FSOPEN_CLOEXEC);
    if (fs_fd < 0) {
        result = -errno;
        log_warn("fsopen fuse: %s", strerror(-result));
        goto close_fuse;
    }
    snprintf(number, sizeof(number), "%d", *fuse_fd);
    result = beneath_set(fs_fd, "fd", number);
    if (result == 0)
        result = beneath_set(fs_fd, "source", options->source[0] ? options->source : "tessera");
    if (result == 0 && options->subtype[0])
        result = beneath_set(fs_fd, "subtype", options->subtype);
    if (result == 0)
        result = beneath_set(fs_fd, "rootmode", "40000"); /* S_IFDIR, as libfuse passes it */
    snprintf(number, sizeof(number), "%u", (unsigned)getuid());
    if (result == 0)
        result = beneath_set(fs_fd, "user_id", number);
    snprintf(number, sizeof(number), "%u", (unsigned)getgid());
    if (result == 0)
        result = beneath_set(fs_fd, "group_id", number);
    if (result == 0 && options->max_read[0])
        result = beneath_set(fs_fd, "max_read", options->max_read);
    if (result == 0 && options->default_permissions)
        result = beneath_set(fs_fd, "default_permissions", NULL);
    if (result == 0 && options->allow_other)
        result = beneath_set(fs_fd, "allow_other", NULL);
    if (result == 0 && fsconfig(fs_fd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0) {
        result = -errno;
        log_warn("cannot create the FUSE filesystem: %s", strerror(-result));
    }
    if (result == 0) {
        *mount_fd = fsmount(fs_fd, FSMOUNT_CLOEXEC, (unsigned)options->mount_attributes);
        if (*mount_fd < 0) {
            result = -errno;
            log_warn("fsmount: %s", strerror(-result));
        }
    }
    close(fs_fd);
    if (result == 0)
        return 0;
close_fuse:
    close(*fuse_fd);
    *fuse_fd = -1;
    return result;
}

int beneath_replace(const char *mountpoint, const char *options, int *fuse_fd)
{
    struct beneath_options parsed;
    char dead_path[64];
    int mount_fd = -1;
    int dead_fd;
    int result = beneath_parse_options(options, &parsed);

    *fuse_fd = -1;
    if (result != 0) {
        log_warn("-o %s: an option cannot be passed to the kernel directly", options);
        return result;
    }
    /* The mount on top now: the dead one, looked up without asking it anything. */
    dead_fd = open(mountpoint, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dead_fd < 0) {
        result = -errno;
        log_warn("cannot open %s: %s", mountpoint, strerror(-result));
        return result;
    }
    result = beneath_make_mount(&parsed, &mount_fd, fuse_fd);
    if (result != 0)
        goto close_dead;
    if (move_mount(mount_fd, "", dead_fd, "",
                   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH | MOVE_MOUNT_BENEATH) != 0) {
        result = -errno;
        log_warn("cannot mount beneath the dead mount at %s: %s%s", mountpoint, strerror(-result),
                 result == -EINVAL ? " (needs Linux 6.5)" : "");
        close(*fuse_fd);
        *fuse_fd = -1;
        goto close_mount;
    }
    snprintf(dead_path, sizeof(dead_path), "/proc/self/fd/%d", dead_fd);
    if (umount2(dead_path, MNT_DETACH) != 0)
        log_warn("the dead mount on top of %s was gone already (%s)", mountpoint, strerror(errno));
    log_info("mounted beneath the dead mount at %s and detached it", mountpoint);
close_mount:
    close(mount_fd);
close_dead:
    close(dead_fd);
    return result;
}

void beneath_unmount(const char *mountpoint, int fuse_fd)
{
    struct pollfd poll_fd = {.fd = fuse_fd, .events = 0};

    /* POLLERR: the connection was aborted, the filesystem is unmounted. */
    if (fuse_fd < 0 || (poll(&poll_fd, 1, 0) == 1 && (poll_fd.revents & POLLERR)))
        return;
    if (umount2(mountpoint, MNT_DETACH) != 0)
        log_warn("cannot unmount %s: %s", mountpoint, strerror(errno));
}
