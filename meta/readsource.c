/*
 * @file readsource.c
 * See readsource.h. The replicas of the range are kept in scan order,
 * (tile, node), so a tile's replicas are found by binary search, and so
 * are the nodes (nodes_list() answers them in id order).
 */
#include "readsource.h"

#include "copies.h"
#include "tiletoken.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct readsource_node {
    uint32_t id;
    bool up;
    bool local; /* on the asking machine */
    uint64_t read_bytes_per_sec;
};

struct readsource {
    struct copies_entry *copies;
    size_t copy_count;
    size_t copy_cap;
    struct readsource_node *nodes; /* every registered node, id order */
    size_t node_count;
    uint64_t ino;
    bool spread; /* the asker named its machine: a mount (readsource_spread) */
    uint32_t token_rights; /* readsource_grant(); 0: no tokens */
    uint64_t token_expiry_ms;
};

static int readsource_keep_copy(void *arg, const struct copies_entry *entry)
{
    struct readsource *source = arg;
    if (source->copy_count == source->copy_cap) {
        size_t cap = source->copy_cap ? source->copy_cap * 2 : 16;
        struct copies_entry *grown = realloc(source->copies, cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        source->copies = grown;
        source->copy_cap = cap;
    }
    source->copies[source->copy_count++] = *entry;
    return 0;
}

static int readsource_load_nodes(struct store_txn *txn, struct readsource *source,
                                 const struct nodes_live *live, int64_t now_ms,
                                 struct ts_str machine)
{
    struct nodes_record *nodes;
    size_t count;
    int err = nodes_list(txn, &nodes, &count);
    if (err < 0)
        return err;
    source->nodes = calloc(count ? count : 1, sizeof(*source->nodes));
    if (!source->nodes) {
        free(nodes);
        return -ENOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        struct readsource_node *node = &source->nodes[i];
        node->id = nodes[i].id;
        node->up = nodes_live_is_up(live, nodes[i].id, now_ms);
        node->local = machine.len > 0 && strlen(nodes[i].machine) == machine.len &&
                      memcmp(nodes[i].machine, machine.ptr, machine.len) == 0;
        node->read_bytes_per_sec = nodes[i].read_bytes_per_sec;
    }
    source->node_count = count;
    free(nodes);
    return 0;
}

int readsource_load(struct store_txn *txn, const struct nodes_live *live, int64_t now_ms,
                    uint64_t ino, uint64_t first, uint32_t count, struct ts_str machine,
                    struct readsource **sourcep)
{
    struct readsource *source;
    int err;

    *sourcep = NULL;
    if (count == 0)
        return -EINVAL;
    source = calloc(1, sizeof(*source));
    if (!source)
        return -ENOMEM;
    source->ino = ino;
    source->spread = machine.len > 0;
    err = copies_scan(txn, ino, first, first + (count - 1), readsource_keep_copy, source);
    if (err == 0)
        err = readsource_load_nodes(txn, source, live, now_ms, machine);
    if (err < 0) {
        readsource_free(&source);
        return err;
    }
    *sourcep = source;
    return 0;
}

/* Index of the first copy of tile (or of a later tile), by binary search. */
static size_t readsource_first_copy(const struct readsource *source, uint64_t tile)
{
    size_t low = 0;
    size_t high = source->copy_count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (source->copies[middle].tile < tile)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

/* The node's entry (the nodes are in id order), or NULL: a node meta does not know. */
static const struct readsource_node *readsource_node(const struct readsource *source, uint32_t id)
{
    size_t low = 0;
    size_t high = source->node_count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (source->nodes[middle].id < id)
            low = middle + 1;
        else
            high = middle;
    }
    return low < source->node_count && source->nodes[low].id == id ? &source->nodes[low] : NULL;
}

/* A holder with what orders it: rank (0 local and up, 1 up, 2 down), speed, place in the set. */
struct readsource_holder {
    uint32_t node;
    uint64_t version;
    int rank;
    uint64_t speed;
    size_t order;
};

static bool readsource_before(const struct readsource_holder *a, const struct readsource_holder *b)
{
    if (a->rank != b->rank)
        return a->rank < b->rank;
    if (a->rank == 1 && a->speed != b->speed)
        return a->speed > b->speed;
    return a->order < b->order;
}

static void readsource_add(const struct readsource *source, struct readsource_holder *holders,
                           size_t *count, uint32_t node, uint64_t version)
{
    const struct readsource_node *known = readsource_node(source, node);
    struct readsource_holder holder = {node, version, 2, 0, *count};
    if (known && known->up) {
        holder.rank = known->local ? 0 : 1;
        holder.speed = known->read_bytes_per_sec;
    }
    /* Insertion sort: a tile has a handful of holders. */
    size_t at = *count;
    while (at > 0 && readsource_before(&holder, &holders[at - 1])) {
        holders[at] = holders[at - 1];
        at--;
    }
    holders[at] = holder;
    (*count)++;
}

/* A well-mixed 64-bit value of (ino, tile) (splitmix64's finaliser). */
static uint64_t readsource_mix(uint64_t ino, uint64_t tile)
{
    uint64_t x = ino * 0x9e3779b97f4a7c15ULL ^ (tile + 0x632be59bd9b4e019ULL);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/*
 * Spreads a file's remote reads over its holders: the remote up holders
 * at least half as fast as the fastest of them (holders[] is sorted, so
 * they are a run at the start of rank 1) are rotated by a hash of (ino,
 * tile). Ordering them by speed alone sent every machine's reads of every
 * tile to the one node whose disk measured fastest: on 8 shaped hosts, 8
 * readers of 8 copies=2 files made two nodes upload 105 MB each while
 * three uploaded under 21 MB, and the reads took 2.4x their links' time.
 * The same tile always goes to the same holder (its page cache serves
 * again); a holder less than half as fast stays behind them. Only for a
 * mount (an asker that names its machine): tools and tests that name none
 * keep the primary first among equals.
 */
static void readsource_spread(const struct readsource *source, uint64_t tile,
                              struct readsource_holder *holders, size_t count)
{
    size_t first = 0;
    while (first < count && holders[first].rank == 0)
        first++;
    size_t end = first;
    while (end < count && holders[end].rank == 1 &&
           holders[end].speed >= holders[first].speed / 2)
        end++;
    size_t run = end - first;
    if (run < 2)
        return;
    size_t shift = (size_t)(readsource_mix(source->ino, tile) % run);
    struct readsource_holder rotated[TS_MAX_HOLDERS];
    for (size_t i = 0; i < run; i++)
        rotated[i] = holders[first + (i + shift) % run];
    memcpy(&holders[first], rotated, run * sizeof(*rotated));
}

void readsource_record(const struct readsource *source, uint64_t tile,
                       const struct tiles_entry *primary, struct ts_writer *writer)
{
    struct readsource_holder holders[TS_MAX_HOLDERS];
    size_t count = 0;

    if (primary->node != 0) {
        readsource_add(source, holders, &count, primary->node, primary->version);
        size_t at = readsource_first_copy(source, tile);
        for (size_t i = at; i < source->copy_count && source->copies[i].tile == tile &&
                            count < TS_MAX_HOLDERS;
             i++)
            readsource_add(source, holders, &count, source->copies[i].node,
                           source->copies[i].version);
        if (source->spread)
            readsource_spread(source, tile, holders, count);
    }
    struct ts_tile_map_rec record = {.node = primary->node,
                                     .version = primary->node ? primary->version : 0,
                                     .holders = (uint32_t)count,
                                     .read_node = count ? holders[0].node : 0,
                                     .read_version = count ? holders[0].version : 0,
                                     .flags = primary->node ? primary->flags : 0};
    ts_tile_map_rec_write(writer, &record);
    for (size_t i = 0; i < count; i++) {
        uint8_t mac[TILETOKEN_MAC_BYTES];
        struct ts_replica_rec holder = {.node = holders[i].node,
                                        .version = holders[i].version,
                                        .state = holders[i].rank == 2 ? TS_REPLICA_DOWN
                                                                      : TS_REPLICA_UP};
        struct tiletoken_claim claim = {.ino = source->ino,
                                        .tile = tile,
                                        .version = holders[i].version,
                                        .node = holders[i].node,
                                        .rights = source->token_rights,
                                        .expiry_ms = source->token_expiry_ms};
        if (source->token_rights && tiletoken_sign(&claim, mac) == 0) {
            holder.token_expiry = claim.expiry_ms;
            holder.token = (struct ts_str){.ptr = (const char *)mac, .len = sizeof(mac)};
        }
        ts_replica_rec_write(writer, &holder);
    }
}

void readsource_grant(struct readsource *source, uint32_t rights)
{
    source->token_rights = tiletoken_enabled() ? rights : 0;
    source->token_expiry_ms = tiletoken_now_ms() + tiletoken_lifetime_ms();
}

void readsource_free(struct readsource **sourcep)
{
    if (!sourcep || !*sourcep)
        return;
    free((*sourcep)->copies);
    free((*sourcep)->nodes);
    free(*sourcep);
    *sourcep = NULL;
}
