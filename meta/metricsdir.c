/*
 * @file metricsdir.c
 * See metricsdir.h. A plain array searched linearly: a cluster has tens
 * to a few thousand daemons, and each entry is touched once a second at
 * most (a heartbeat), so a hash would buy nothing measurable.
 */
#include "metricsdir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct metricsdir {
    struct metricsdir_entry *entries;
    size_t count;
    size_t cap;
};

struct metricsdir *metricsdir_new(void)
{
    return calloc(1, sizeof(struct metricsdir));
}

void metricsdir_destroy(struct metricsdir **dirp)
{
    if (!dirp || !*dirp)
        return;
    free((*dirp)->entries);
    free(*dirp);
    *dirp = NULL;
}

static struct metricsdir_entry *metricsdir_find(struct metricsdir *dir, uint32_t kind, uint64_t id)
{
    for (size_t i = 0; i < dir->count; i++)
        if (dir->entries[i].kind == kind && dir->entries[i].id == id)
            return &dir->entries[i];
    return NULL;
}

/* Removes entries[index], keeping the others in order. */
static void metricsdir_remove_at(struct metricsdir *dir, size_t index)
{
    memmove(&dir->entries[index], &dir->entries[index + 1],
            (dir->count - index - 1) * sizeof(dir->entries[0]));
    dir->count--;
}

int metricsdir_note(struct metricsdir *dir, uint32_t kind, uint64_t id, struct ts_str machine,
                    struct ts_str address, int64_t now_ms)
{
    if (address.len == 0) {
        metricsdir_forget(dir, kind, id);
        return 0;
    }
    if (machine.len >= sizeof(dir->entries[0].machine) ||
        address.len >= sizeof(dir->entries[0].address))
        return -ENAMETOOLONG;
    struct metricsdir_entry *entry = metricsdir_find(dir, kind, id);
    if (!entry) {
        if (dir->count >= TS_MAX_METRICS_ENDPOINTS)
            return -ENOSPC;
        if (dir->count == dir->cap) {
            size_t cap = dir->cap ? dir->cap * 2 : 16;
            struct metricsdir_entry *grown = realloc(dir->entries, cap * sizeof(*grown));
            if (!grown)
                return -ENOMEM;
            dir->entries = grown;
            dir->cap = cap;
        }
        entry = &dir->entries[dir->count++];
        entry->kind = kind;
        entry->id = id;
    }
    memcpy(entry->machine, machine.ptr, machine.len);
    entry->machine[machine.len] = '\0';
    memcpy(entry->address, address.ptr, address.len);
    entry->address[address.len] = '\0';
    entry->seen_ms = now_ms;
    return 0;
}

void metricsdir_forget(struct metricsdir *dir, uint32_t kind, uint64_t id)
{
    struct metricsdir_entry *entry = metricsdir_find(dir, kind, id);
    if (entry)
        metricsdir_remove_at(dir, (size_t)(entry - dir->entries));
}

const struct metricsdir_entry *metricsdir_fresh(struct metricsdir *dir, int64_t now_ms,
                                                int64_t fresh_ms, size_t *count)
{
    size_t i = 0;
    while (i < dir->count) {
        if (now_ms - dir->entries[i].seen_ms > fresh_ms)
            metricsdir_remove_at(dir, i);
        else
            i++;
    }
    *count = dir->count;
    return dir->entries;
}
