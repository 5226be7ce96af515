/*
 * @file subtree.c
 * See subtree.h. A directory has one parent, so past the first step (an
 * inode's links, possibly several) the walk is a single chain up.
 */
#include "subtree.h"

#include "dirents.h"
#include "parents.h"
#include "proto.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

struct subtree_walk {
    struct store_txn *txn;
    uint64_t top;
    uint32_t steps;
    uint32_t links; /* parents of the inode seen */
    bool under;
};

static int subtree_first_parent(void *arg, uint64_t parent, uint32_t count)
{
    (void)count;
    *(uint64_t *)arg = parent;
    return 1;
}

/* 1 when directory dir is walk->top or below it, 0 when not, or a negative errno. */
static int subtree_dir_under(struct subtree_walk *walk, uint64_t dir)
{
    while (walk->steps++ < SUBTREE_STEPS_MAX) {
        uint64_t parent = 0;
        if (dir == walk->top)
            return 1;
        if (dir == TS_ROOT_INO)
            return 0;
        int result = parents_scan(walk->txn, dir, subtree_first_parent, &parent);
        if (result < 0)
            return result;
        if (parent == 0)
            return 0; /* a directory removed while in use: under nothing */
        dir = parent;
    }
    return -ELOOP;
}

static int subtree_visit_link(void *arg, uint64_t parent, uint32_t count)
{
    struct subtree_walk *walk = arg;
    (void)count;
    walk->links++;
    int result = subtree_dir_under(walk, parent);
    if (result < 0)
        return result;
    walk->under = result == 1;
    return walk->under ? 1 : 0;
}

int subtree_place(struct store_txn *txn, uint64_t top, uint64_t ino, enum subtree_place *place)
{
    struct subtree_walk walk = {.txn = txn, .top = top};
    if (ino == top) {
        *place = SUBTREE_UNDER;
        return 0;
    }
    int result = parents_scan(txn, ino, subtree_visit_link, &walk);
    if (result < 0)
        return result;
    if (walk.under)
        *place = SUBTREE_UNDER;
    else if (walk.links == 0 && ino != TS_ROOT_INO)
        *place = SUBTREE_DETACHED;
    else
        *place = SUBTREE_OUTSIDE;
    return 0;
}

int subtree_resolve(struct store_txn *txn, const char *path, uint64_t *ino)
{
    uint64_t dir = TS_ROOT_INO;
    if (path[0] != '/')
        return -EINVAL;
    for (const char *at = path; *at;) {
        while (*at == '/')
            at++;
        size_t len = strcspn(at, "/");
        if (len == 0)
            break;
        if (len > TS_MAX_NAME)
            return -EINVAL;
        struct dirents_entry entry;
        struct ts_str name = {at, (uint32_t)len};
        int err = dirents_get(txn, dir, name, &entry);
        if (err < 0)
            return err;
        if (!S_ISDIR(entry.mode))
            return -ENOTDIR;
        dir = entry.ino;
        at += len;
    }
    *ino = dir;
    return 0;
}
