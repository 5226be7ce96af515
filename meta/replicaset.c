/*
 * @file replicaset.c
 * See replicaset.h: the two tables read and changed as one set.
 */
#include "replicaset.h"

#include "copies.h"
#include "garbage.h"

#include <errno.h>
#include <string.h>

static int replicaset_keep_copy(void *arg, const struct copies_entry *entry)
{
    struct replicaset *set = arg;
    if (set->count == TS_MAX_HOLDERS)
        return 1;
    set->holders[set->count].node = entry->node;
    set->holders[set->count].version = entry->version;
    set->count++;
    return 0;
}

int replicaset_get(struct store_txn *txn, uint64_t ino, uint64_t tile, struct replicaset *set)
{
    struct tiles_entry primary;
    memset(set, 0, sizeof(*set));
    int err = tiles_get(txn, ino, tile, &primary);
    if (err < 0)
        return err;
    set->flags = primary.flags;
    set->holders[0].node = primary.node;
    set->holders[0].version = primary.version;
    set->count = 1;
    err = copies_scan(txn, ino, tile, tile, replicaset_keep_copy, set);
    return err < 0 ? err : 0;
}

int replicaset_find(const struct replicaset *set, uint32_t node)
{
    for (size_t i = 0; i < set->count; i++) {
        if (set->holders[i].node == node)
            return (int)i;
    }
    return -1;
}

int replicaset_drop(struct store_txn *txn, uint64_t ino, uint64_t tile, uint32_t node,
                    uint64_t version, bool *dropped)
{
    struct replicaset set;
    *dropped = false;
    int err = replicaset_get(txn, ino, tile, &set);
    if (err == -ENOENT)
        return 0;
    if (err < 0)
        return err;
    int at = replicaset_find(&set, node);
    if (at < 0 || set.holders[at].version != version)
        return 0; /* replaced or dropped already: the caller's news is old */
    if (set.count == 1)
        return -EBUSY;
    if (at == 0) {
        /* The lowest-node replica (copies are in node order) is the primary now. */
        struct tiles_entry promoted = {set.holders[1].node, set.holders[1].version, set.flags};
        err = tiles_put(txn, ino, tile, &promoted);
        if (err == 0)
            err = copies_delete(txn, ino, tile, promoted.node);
    } else {
        err = copies_delete(txn, ino, tile, node);
    }
    if (err == 0) {
        struct garbage_record freed = {node, ino, tile, version};
        err = garbage_add(txn, &freed);
    }
    if (err == 0)
        *dropped = true;
    return err;
}
