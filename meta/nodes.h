/*
 * @file nodes.h
 * The datanode registry. In LMDB (`nodes` table, key u32 BE id): what each
 * datanode last reported — machine, address, capacity, free and used bytes,
 * tile count. In memory (struct nodes_live): when each last sent a
 * heartbeat, which decides whether it is up. Liveness is deliberately not
 * persisted: after a meta restart every node is down until it heartbeats.
 */
#ifndef TESSERA_META_NODES_H
#define TESSERA_META_NODES_H

#include "store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NODES_MAX_TEXT 255 /* bytes of machine name or address */

struct nodes_record {
    uint32_t id;
    char machine[NODES_MAX_TEXT + 1];
    char address[NODES_MAX_TEXT + 1];
    uint64_t capacity;
    uint64_t free_bytes;
    uint64_t used_bytes;
    uint64_t tiles;
};

/* 0, -ENOENT if no such node, or a negative errno. */
int nodes_get(struct store_txn *txn, uint32_t id, struct nodes_record *record);
int nodes_put(struct store_txn *txn, const struct nodes_record *record);
/*
 * Every registered node in id order, in a malloc'd array the caller frees
 * (NULL when there are none). 0 or a negative errno.
 */
int nodes_list(struct store_txn *txn, struct nodes_record **records, size_t *count);

/* ---- liveness (in memory) ---------------------------------------------- */

struct nodes_live;

/* NULL when out of memory. */
struct nodes_live *nodes_live_new(int64_t timeout_ms);
void nodes_live_destroy(struct nodes_live **livep);
/* Records a heartbeat of node id at now_ms (monotonic). 0 or -ENOMEM. */
int nodes_live_beat(struct nodes_live *live, uint32_t id, int64_t now_ms);
/* Milliseconds since node id's last heartbeat, or -1 if none since start. */
int64_t nodes_live_age_ms(const struct nodes_live *live, uint32_t id, int64_t now_ms);
/* Whether node id heartbeat less than the timeout ago. */
bool nodes_live_is_up(const struct nodes_live *live, uint32_t id, int64_t now_ms);
/* Logs each node that went silent since the last call (once per outage). */
void nodes_live_check(struct nodes_live *live, int64_t now_ms);

#endif
