/*
 * @file bindir.c
 * See bindir.h.
 */
#include "bindir.h"

#include "fmt.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where each daemon is built, relative to the build directory. */
static const struct {
    const char *name;
    const char *build_subdir;
} bindir_table[] = {
    {"tessera-meta", "meta"},
    {"tessera-datanode", "datanode"},
    {"tessera-mount", "fuse"},
};

static const char *bindir_subdir(const char *name)
{
    for (size_t i = 0; i < sizeof(bindir_table) / sizeof(bindir_table[0]); i++) {
        if (strcmp(bindir_table[i].name, name) == 0)
            return bindir_table[i].build_subdir;
    }
    return ".";
}

static int bindir_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int bindir_is_executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Fills dir with the directory holding this executable; 0 or -errno. */
static int bindir_self_dir(char *dir, size_t cap)
{
    ssize_t len = readlink("/proc/self/exe", dir, cap - 1);
    char *slash;
    if (len < 0)
        return -errno;
    if ((size_t)len >= cap - 1)
        return -ENAMETOOLONG;
    dir[len] = '\0';
    slash = strrchr(dir, '/');
    if (!slash)
        return -ENOENT;
    *slash = '\0';
    if (dir[0] == '\0')
        return fmt_into(dir, cap, "/");
    return 0;
}

/*
 * The directory to look in when TESSERA_BIN_DIR is not set: DIR/../SUBDIR
 * in a build tree, else DIR itself.
 */
static int bindir_default_dir(const char *subdir, char *out, size_t cap)
{
    char self_dir[PATH_MAX];
    char parent[PATH_MAX];
    char probe[PATH_MAX];
    char meta_probe[PATH_MAX];
    char *slash;
    int result = bindir_self_dir(self_dir, sizeof(self_dir));

    if (result != 0)
        return result;
    if (fmt_into(parent, sizeof(parent), "%s", self_dir) != 0)
        return -ENAMETOOLONG;
    slash = strrchr(parent, '/');
    if (slash && slash != parent)
        *slash = '\0';
    if (fmt_into(probe, sizeof(probe), "%s/meson-info", parent) != 0 ||
        fmt_into(meta_probe, sizeof(meta_probe), "%s/meta/tessera-meta", parent) != 0)
        return -ENAMETOOLONG;
    if (bindir_exists(probe) || bindir_exists(meta_probe))
        return fmt_into(out, cap, "%s/%s", parent, subdir);
    return fmt_into(out, cap, "%s", self_dir);
}

/* Tries DIR/NAME; 0 if it is an executable file, else -ENOENT. */
static int bindir_try(const char *dir, const char *name, char *out, size_t cap)
{
    if (fmt_into(out, cap, "%s/%s", dir, name) != 0)
        return -ENAMETOOLONG;
    return bindir_is_executable(out) ? 0 : -ENOENT;
}

int bindir_find(const char *name, char *out, size_t cap)
{
    const char *env_dir = getenv("TESSERA_BIN_DIR");
    const char *subdir = bindir_subdir(name);
    char dir[PATH_MAX];
    char build_dir[PATH_MAX];
    int result;

    if (env_dir && *env_dir) {
        if (bindir_try(env_dir, name, out, cap) == 0)
            return 0;
        if (fmt_into(build_dir, sizeof(build_dir), "%s/%s", env_dir, subdir) == 0 &&
            bindir_try(build_dir, name, out, cap) == 0)
            return 0;
        fprintf(stderr,
                "tessera: %s not found in %s (TESSERA_BIN_DIR) nor in %s; build with "
                "ninja -C build or fix TESSERA_BIN_DIR\n",
                name, env_dir, build_dir);
        return -ENOENT;
    }
    result = bindir_default_dir(subdir, dir, sizeof(dir));
    if (result != 0) {
        fprintf(stderr, "tessera: cannot find the directory of the tessera binary: %s\n",
                strerror(-result));
        return result;
    }
    if (bindir_try(dir, name, out, cap) == 0)
        return 0;
    fprintf(stderr,
            "tessera: %s not found in %s; build with ninja -C build or set "
            "TESSERA_BIN_DIR\n",
            name, dir);
    return -ENOENT;
}
