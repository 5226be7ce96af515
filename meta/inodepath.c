/*
 * @file inodepath.c
 * See inodepath.h. Each pass scans the whole dirents table and, for every
 * inode still being resolved, notes the entry naming it; the path grows
 * from the right ("name", then "dir/name") until its parent is the root.
 */
#include "inodepath.h"

#include "proto.h"

#include <errno.h>
#include <string.h>

#define INODEPATH_LEVELS 64
#define INODEPATH_ROOT 1

struct inodepath_want {
    uint64_t at;  /* the inode whose name is looked for next; 0 = done */
    bool found;   /* this pass found a name for `at` */
    uint64_t parent;
    char name[TS_MAX_NAME + 1];
};

struct inodepath_pass {
    struct inodepath_want *wants;
    size_t count;
};

static int inodepath_visit(void *arg, const MDB_val *key, const MDB_val *value)
{
    struct inodepath_pass *pass = arg;
    struct ts_cursor cursor;

    if (key->mv_size < 8 || key->mv_size > 8 + TS_MAX_NAME)
        return 0;
    ts_cursor_init(&cursor, value->mv_data, value->mv_size);
    uint64_t child = ts_cursor_u64(&cursor);
    if (cursor.failed)
        return 0;
    for (size_t i = 0; i < pass->count; i++) {
        struct inodepath_want *want = &pass->wants[i];
        if (want->at != child || want->found)
            continue;
        const uint8_t *bytes = key->mv_data;
        uint64_t parent = 0;
        for (int b = 0; b < 8; b++)
            parent = parent << 8 | bytes[b];
        want->found = true;
        want->parent = parent;
        memcpy(want->name, bytes + 8, key->mv_size - 8);
        want->name[key->mv_size - 8] = '\0';
    }
    return 0;
}

/* Puts "/name" in front of path (which holds a path or ""). false if too long. */
static bool inodepath_prepend(char *path, const char *name)
{
    size_t name_len = strlen(name);
    size_t path_len = strlen(path);
    if (1 + name_len + path_len + 1 > INODEPATH_MAX)
        return false;
    memmove(path + 1 + name_len, path, path_len + 1);
    path[0] = '/';
    memcpy(path + 1, name, name_len);
    return true;
}

int inodepath_find(struct store_txn *txn, const uint64_t *inos, size_t count,
                   char (*paths)[INODEPATH_MAX])
{
    struct inodepath_want wants[64];
    struct inodepath_pass pass = {wants, count};

    if (count > 64)
        return -EINVAL;
    for (size_t i = 0; i < count; i++) {
        wants[i] = (struct inodepath_want){.at = inos[i]};
        paths[i][0] = '\0';
    }
    for (int level = 0; level < INODEPATH_LEVELS; level++) {
        bool pending = false;
        for (size_t i = 0; i < count; i++) {
            wants[i].found = false;
            pending = pending || wants[i].at != 0;
        }
        if (!pending)
            return 0;
        static const uint8_t first_key[8]; /* LMDB takes no empty key */
        int err = store_scan(txn, STORE_DIRENTS, first_key, sizeof(first_key), inodepath_visit,
                             &pass);
        if (err < 0)
            return err;
        for (size_t i = 0; i < count; i++) {
            struct inodepath_want *want = &wants[i];
            if (want->at == 0)
                continue;
            if (!want->found || !inodepath_prepend(paths[i], want->name)) {
                paths[i][0] = '\0'; /* no name (unlinked) or too deep */
                want->at = 0;
                continue;
            }
            want->at = want->parent == INODEPATH_ROOT ? 0 : want->parent;
        }
    }
    for (size_t i = 0; i < count; i++) {
        if (wants[i].at != 0)
            paths[i][0] = '\0';
    }
    return 0;
}
