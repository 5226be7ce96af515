/*
 * @file placement.c
 * See placement.h. Usability is re-checked tile by tile, because every
 * placed tile uses up some of its node's free space.
 */
#include "placement.h"

#include "staticalloc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

__extension__ typedef unsigned __int128 placement_wide;

static bool placement_usable(const struct placement_node *node, uint32_t tile_bytes)
{
    return node->up && node->free_bytes >= tile_bytes;
}

/* The failure when no node is usable: nodes up but full, or none up. */
static int placement_none_usable(const struct placement_node *nodes, size_t node_count)
{
    for (size_t i = 0; i < node_count; i++) {
        if (nodes[i].up)
            return -ENOSPC;
    }
    return -ENODEV;
}

/* Books one tile on a node: less free space, more backlog. */
static void placement_take(struct placement_node *node, uint32_t tile_bytes)
{
    node->free_bytes -= tile_bytes; /* usable: free_bytes >= tile_bytes */
    node->backlog_bytes = node->backlog_bytes > UINT64_MAX - tile_bytes
                              ? UINT64_MAX
                              : node->backlog_bytes + tile_bytes;
}

static int placement_roundrobin(struct placement_node *nodes, size_t node_count, uint64_t ino,
                                uint64_t first_tile, uint32_t tile_bytes, size_t count,
                                uint32_t *out)
{
    for (size_t t = 0; t < count; t++) {
        size_t usable = 0;
        for (size_t i = 0; i < node_count; i++)
            usable += placement_usable(&nodes[i], tile_bytes);
        if (usable == 0)
            return placement_none_usable(nodes, node_count);
        size_t rank = (size_t)((first_tile + t + ino) % usable);
        for (size_t i = 0; i < node_count; i++) {
            if (!placement_usable(&nodes[i], tile_bytes))
                continue;
            if (rank == 0) {
                out[t] = nodes[i].id;
                placement_take(&nodes[i], tile_bytes);
                break;
            }
            rank--;
        }
    }
    return 0;
}

/*
 * The usable nodes as staticalloc queues (map[k] = index in nodes), with
 * unmeasured speeds replaced by the average measured one. Returns how many.
 */
static size_t placement_queues(const struct placement_node *nodes, size_t node_count,
                               uint32_t tile_bytes, struct staticalloc_node *queues, size_t *map)
{
    size_t usable = 0;
    size_t measured = 0;
    placement_wide speed_sum = 0; /* no sum of u64 speeds overflows it */

    for (size_t i = 0; i < node_count; i++) {
        if (!placement_usable(&nodes[i], tile_bytes))
            continue;
        map[usable] = i;
        queues[usable].bytes_per_sec = nodes[i].write_bytes_per_sec;
        queues[usable].backlog_bytes = nodes[i].backlog_bytes;
        if (nodes[i].write_bytes_per_sec > 0) {
            speed_sum += nodes[i].write_bytes_per_sec;
            measured++;
        }
        usable++;
    }
    uint64_t average = measured ? (uint64_t)(speed_sum / measured) : 1; /* a mean of u64s */
    if (average == 0)
        average = 1;
    for (size_t k = 0; k < usable; k++) {
        if (queues[k].bytes_per_sec == 0)
            queues[k].bytes_per_sec = average;
    }
    return usable;
}

static int placement_static(struct placement_node *nodes, size_t node_count, uint64_t ino,
                            uint64_t first_tile, uint32_t tile_bytes, size_t count, uint32_t *out)
{
    struct staticalloc_node *queues = calloc(node_count ? node_count : 1, sizeof(*queues));
    size_t *map = calloc(node_count ? node_count : 1, sizeof(*map));
    size_t usable = 0;
    bool stale = true;
    int rc = 0;

    if (!queues || !map) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t t = 0; t < count; t++) {
        if (stale) {
            usable = placement_queues(nodes, node_count, tile_bytes, queues, map);
            stale = false;
        }
        if (usable == 0) {
            rc = placement_none_usable(nodes, node_count);
            goto out;
        }
        size_t first = (size_t)((ino % usable + (first_tile + t) % usable) % usable);
        size_t k = staticalloc_pick(queues, usable, tile_bytes, first);
        struct placement_node *node = &nodes[map[k]];
        out[t] = node->id;
        placement_take(node, tile_bytes);
        /* A node that just filled up leaves the queues. */
        stale = !placement_usable(node, tile_bytes);
    }
out:
    free(queues);
    free(map);
    return rc;
}

int placement_choose(enum placement_policy policy, struct placement_node *nodes, size_t node_count,
                     uint64_t ino, uint64_t first_tile, uint32_t tile_bytes, size_t count,
                     uint32_t *out)
{
    if (policy == PLACEMENT_STATIC)
        return placement_static(nodes, node_count, ino, first_tile, tile_bytes, count, out);
    return placement_roundrobin(nodes, node_count, ino, first_tile, tile_bytes, count, out);
}

/*
 * The machine of each holder (holder_machines[h]; known[h] false for a
 * holder not among nodes): looked up once per replica chosen, so checking
 * every node against the holders costs nodes x holders, not nodes^2 x
 * holders (a TILE_MAP of 4096 tiles over a thousand nodes stalled meta).
 */
static void placement_holder_machines(const struct placement_node *nodes, size_t node_count,
                                      const uint32_t *holders, size_t holder_count,
                                      uint32_t *holder_machines, bool *known)
{
    for (size_t h = 0; h < holder_count; h++) {
        known[h] = false;
        for (size_t i = 0; i < node_count && !known[h]; i++) {
            if (nodes[i].id == holders[h]) {
                holder_machines[h] = nodes[i].machine;
                known[h] = true;
            }
        }
    }
}

/* Whether node is on the machine of one of the holders, or is one. */
static bool placement_near_holders(const struct placement_node *node, const uint32_t *holders,
                                   const uint32_t *holder_machines, const bool *known,
                                   size_t holder_count, bool *is_holder)
{
    bool near = false;
    *is_holder = false;
    for (size_t h = 0; h < holder_count; h++) {
        if (holders[h] == node->id)
            *is_holder = true;
        if (known[h] && holder_machines[h] == node->machine)
            near = true;
    }
    return near || *is_holder;
}

int placement_choose_replicas(struct placement_node *nodes, size_t node_count, uint64_t ino,
                              uint64_t tile, uint32_t tile_bytes, const uint32_t *held,
                              size_t held_count, size_t wanted, uint32_t *out)
{
    size_t holder_count = held_count + wanted;
    uint32_t *holders = calloc(holder_count ? holder_count : 1, sizeof(*holders));
    uint32_t *holder_machines = calloc(holder_count ? holder_count : 1, sizeof(*holder_machines));
    bool *known = calloc(holder_count ? holder_count : 1, sizeof(*known));
    struct placement_node *eligible = calloc(node_count ? node_count : 1, sizeof(*eligible));
    struct staticalloc_node *queues = calloc(node_count ? node_count : 1, sizeof(*queues));
    size_t *map = calloc(node_count ? node_count : 1, sizeof(*map));
    size_t *index = calloc(node_count ? node_count : 1, sizeof(*index));
    size_t chosen = 0;
    int rc;

    if (!holders || !holder_machines || !known || !eligible || !queues || !map || !index) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t h = 0; h < held_count; h++)
        holders[h] = held[h];
    while (chosen < wanted) {
        /* Distinct machines first; failing that, distinct datanodes. */
        size_t usable = 0;
        placement_holder_machines(nodes, node_count, holders, held_count + chosen,
                                  holder_machines, known);
        for (int tier = 0; tier < 2 && usable == 0; tier++) {
            size_t count = 0;
            for (size_t i = 0; i < node_count; i++) {
                bool is_holder;
                bool near = placement_near_holders(&nodes[i], holders, holder_machines, known,
                                                   held_count + chosen, &is_holder);
                if (is_holder || (tier == 0 && near))
                    continue;
                index[count] = i;
                eligible[count++] = nodes[i];
            }
            usable = placement_queues(eligible, count, tile_bytes, queues, map);
        }
        if (usable == 0)
            break; /* under-replicated: fewer usable nodes than copies */
        size_t first = (size_t)((ino % usable + tile % usable) % usable);
        size_t k = staticalloc_pick(queues, usable, tile_bytes, first);
        struct placement_node *node = &nodes[index[map[k]]];
        out[chosen] = node->id;
        holders[held_count + chosen] = node->id;
        placement_take(node, tile_bytes);
        chosen++;
    }
    rc = (int)chosen;
out:
    free(holders);
    free(holder_machines);
    free(known);
    free(eligible);
    free(queues);
    free(map);
    free(index);
    return rc;
}

int placement_choose_named(uint32_t named, struct placement_node *nodes, size_t node_count,
                           uint64_t ino, uint64_t first_tile, uint32_t tile_bytes, size_t count,
                           uint32_t *out)
{
    struct placement_node *node = NULL;
    size_t t = 0;

    for (size_t i = 0; i < node_count && !node; i++) {
        if (nodes[i].id == named)
            node = &nodes[i];
    }
    if (!node)
        return -ENOENT;
    while (t < count && placement_usable(node, tile_bytes)) {
        out[t++] = named;
        placement_take(node, tile_bytes);
    }
    if (t == count)
        return 0;
    return placement_static(nodes, node_count, ino, first_tile + t, tile_bytes, count - t, out + t);
}
