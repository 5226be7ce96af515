/*
 * @file fusemount.c
 * See fusemount.h. Mountpoints in mountinfo escape space, tab, newline and
 * backslash as \ooo octal; they are unescaped before comparing.
 */
#include "fusemount.h"

#include "fmt.h"
#include "proc.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FUSEMOUNT_RETRY_MS 100
/* Linux 6.8's mount id that is never reused; glibc 2.36 predates it. */
#define FUSEMOUNT_STATX_MNT_ID_UNIQUE 0x00004000U

extern char **environ;

int fusemount_canonical_path(const char *path, char *out, size_t cap)
{
    char copy[PATH_MAX];
    char parent[PATH_MAX];
    const char *base;
    char *slash;
    size_t len;

    if (fmt_into(copy, sizeof(copy), "%s", path) != 0)
        return -ENAMETOOLONG;
    len = strlen(copy);
    while (len > 1 && copy[len - 1] == '/')
        copy[--len] = '\0';
    slash = strrchr(copy, '/');
    if (!slash)
        return realpath(".", parent) ? fmt_into(out, cap, "%s/%s", parent, copy) : -errno;
    if (slash == copy) /* "/name" or "/" */
        return fmt_into(out, cap, "%s", copy);
    *slash = '\0';
    base = slash + 1;
    if (!realpath(copy, parent))
        return -errno;
    if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return realpath(path, out) ? 0 : -errno;
    return fmt_into(out, cap, "%s%s%s", parent, strcmp(parent, "/") == 0 ? "" : "/", base);
}

/* Undoes mountinfo's \ooo escapes in place. */
static void fusemount_unescape(char *text)
{
    char *out = text;
    for (char *in = text; *in;) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '7' && in[2] >= '0' && in[2] <= '7' &&
            in[3] >= '0' && in[3] <= '7') {
            *out++ = (char)(((in[1] - '0') << 6) | ((in[2] - '0') << 3) | (in[3] - '0'));
            in += 4;
        } else {
            *out++ = *in++;
        }
    }
    *out = '\0';
}

/* Cuts the next space-separated field off *rest; NULL at the end of the line. */
static char *fusemount_next_field(char **rest)
{
    char *field = *rest;
    char *space;
    if (!field || !*field)
        return NULL;
    space = strchr(field, ' ');
    if (space) {
        *space = '\0';
        *rest = space + 1;
    } else {
        *rest = NULL;
    }
    return field;
}

/*
 * True when one mountinfo line is a fuse* mount at mountpoint; then *source
 * points at its source (fsname), unescaped, inside line. Line:
 * "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE ...".
 */
static bool fusemount_line_matches(char *line, const char *mountpoint, char **source)
{
    char *rest = line;
    char *field = fusemount_next_field(&rest);
    char *mount_field = NULL;

    for (int index = 0; field; index++) {
        if (index == 4)
            mount_field = field;
        if (index > 5 && strcmp(field, "-") == 0)
            break;
        field = fusemount_next_field(&rest);
    }
    if (!field || !mount_field)
        return false;
    field = fusemount_next_field(&rest); /* the filesystem type */
    if (!field || strncmp(field, "fuse", 4) != 0)
        return false;
    *source = fusemount_next_field(&rest);
    if (!*source)
        *source = field + strlen(field); /* "" */
    fusemount_unescape(*source);
    fusemount_unescape(mount_field);
    return strcmp(mount_field, mountpoint) == 0;
}

int fusemount_source(const char *mountpoint, char *source, size_t cap)
{
    FILE *file = fopen("/proc/self/mountinfo", "re");
    char *line = NULL;
    size_t line_cap = 0;
    int found = 0;

    if (!file)
        return -errno;
    /* Every line: a mount stacked on another one comes after it. */
    while (getline(&line, &line_cap, file) >= 0) {
        char *line_source;
        line[strcspn(line, "\n")] = '\0';
        if (fusemount_line_matches(line, mountpoint, &line_source)) {
            found = 1;
            if (source && cap > 0)
                snprintf(source, cap, "%s", line_source);
        }
    }
    free(line);
    fclose(file);
    return found;
}

int fusemount_is_mounted(const char *mountpoint)
{
    return fusemount_source(mountpoint, NULL, 0);
}

int fusemount_mount_id(const char *path, uint64_t *id)
{
    struct statx st;

    /* DONT_SYNC: the attributes the kernel has, so a dead FUSE mount answers too. */
    if (statx(AT_FDCWD, path, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT,
              FUSEMOUNT_STATX_MNT_ID_UNIQUE | STATX_MNT_ID, &st) != 0)
        return -errno;
    if (!(st.stx_mask & (FUSEMOUNT_STATX_MNT_ID_UNIQUE | STATX_MNT_ID)))
        return -ENOTSUP;
    *id = st.stx_mnt_id;
    return 0;
}

bool fusemount_is_stale(const char *mountpoint)
{
    struct stat st;
    return stat(mountpoint, &st) != 0 && errno == ENOTCONN;
}

/*
 * Runs `fusermount3 FLAGS MOUNTPOINT`, with its output thrown away when
 * quiet. Returns 0 if it exited with 0, else -EIO.
 */
static int fusemount_run(const char *flags, const char *mountpoint, bool quiet)
{
    char *argv[] = {"fusermount3", (char *)flags, (char *)mountpoint, NULL};
    posix_spawn_file_actions_t actions;
    pid_t child;
    int status = 0;
    int result;

    if (posix_spawn_file_actions_init(&actions) != 0)
        return -ENOMEM;
    if (quiet) {
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    }
    result = posix_spawnp(&child, "fusermount3", &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (result != 0) {
        fprintf(stderr, "tessera: cannot run fusermount3: %s (is fuse3 installed?)\n",
                strerror(result));
        return -EIO;
    }
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR)
            return -EIO;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

int fusemount_detach(const char *mountpoint)
{
    return fusemount_run("-uz", mountpoint, false);
}

int fusemount_unmount(const char *mountpoint, int timeout_ms)
{
    int64_t deadline = util_monotonic_ms() + timeout_ms;

    while (fusemount_is_mounted(mountpoint) == 1) {
        if (fusemount_run("-u", mountpoint, true) == 0)
            return 0;
        if (util_monotonic_ms() >= deadline) {
            fprintf(stderr, "tessera: %s stays busy; detaching it lazily (fusermount3 -uz)\n",
                    mountpoint);
            fusemount_detach(mountpoint);
            break;
        }
        proc_sleep_ms(FUSEMOUNT_RETRY_MS);
    }
    return fusemount_is_mounted(mountpoint) == 1 ? -EBUSY : 0;
}
