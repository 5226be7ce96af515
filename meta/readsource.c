/*
 * @file readsource.c
 * See readsource.h. The copies of the range are kept in scan order, (tile,
 * node), so a tile's copies are found by binary search; the nodes of the
 * machine are few (the datanodes of one host), so they are a plain array.
 */
#include "readsource.h"

#include "copies.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct readsource_node {
    uint32_t id;
    bool up;
};

struct readsource {
    struct copies_entry *copies;
    size_t copy_count;
    size_t copy_cap;
    struct readsource_node *local; /* the datanodes of the asking machine */
    size_t local_count;
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
    source->local = calloc(count ? count : 1, sizeof(*source->local));
    if (!source->local) {
        free(nodes);
        return -ENOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        if (strlen(nodes[i].machine) != machine.len ||
            memcmp(nodes[i].machine, machine.ptr, machine.len) != 0)
            continue;
        source->local[source->local_count].id = nodes[i].id;
        source->local[source->local_count].up = nodes_live_is_up(live, nodes[i].id, now_ms);
        source->local_count++;
    }
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
    err = copies_scan(txn, ino, first, first + (count - 1), readsource_keep_copy, source);
    /* Without copies every tile reads from its primary: no need for the nodes. */
    if (err == 0 && machine.len > 0 && source->copy_count > 0)
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

static const struct readsource_node *readsource_local(const struct readsource *source,
                                                      uint32_t node)
{
    for (size_t i = 0; i < source->local_count; i++)
        if (source->local[i].id == node)
            return &source->local[i];
    return NULL;
}

void readsource_record(const struct readsource *source, uint64_t tile,
                       const struct tiles_entry *primary, struct ts_writer *writer)
{
    uint32_t copies = 0;
    uint32_t read_node = primary->node;
    uint64_t read_version = primary->version;

    if (primary->node != 0) {
        size_t at = readsource_first_copy(source, tile);
        bool chosen = readsource_local(source, primary->node) != NULL;
        for (size_t i = at; i < source->copy_count && source->copies[i].tile == tile; i++) {
            const struct copies_entry *copy = &source->copies[i];
            const struct readsource_node *local = readsource_local(source, copy->node);
            copies++;
            if (!chosen && local && local->up) {
                chosen = true;
                read_node = copy->node;
                read_version = copy->version;
            }
        }
    }
    struct ts_tile_map_rec record = {.node = primary->node,
                                     .version = primary->node ? primary->version : 0,
                                     .copies = copies,
                                     .read_node = read_node,
                                     .read_version = primary->node ? read_version : 0,
                                     .flags = primary->node ? primary->flags : 0};
    ts_tile_map_rec_write(writer, &record);
}

void readsource_free(struct readsource **sourcep)
{
    if (!sourcep || !*sourcep)
        return;
    free((*sourcep)->copies);
    free((*sourcep)->local);
    free(*sourcep);
    *sourcep = NULL;
}
