/*
 * @file repairplan.c
 * See repairplan.h.
 */
#include "repairplan.h"

#include <string.h>

enum holder_class { HOLDER_GOOD, HOLDER_WAITED, HOLDER_REPLACED };

/* Health values, as enum ts_health in proto.h (librarian does not include it). */
enum { HEALTH_OK = 0, HEALTH_DEGRADED = 1, HEALTH_UNAVAILABLE = 2 };
enum { ADMIN_ACTIVE = 0 };

static struct repairplan_node *node_find(struct repairplan_node *nodes, size_t count, uint32_t id)
{
    for (size_t i = 0; i < count; i++) {
        if (nodes[i].id == id)
            return &nodes[i];
    }
    return NULL;
}

static enum holder_class holder_classify(const struct repairplan_node *node,
                                         int64_t replace_after_ms)
{
    if (!node || node->admin != ADMIN_ACTIVE)
        return HOLDER_REPLACED;
    if (node->up)
        return HOLDER_GOOD;
    return node->down_ms < replace_after_ms ? HOLDER_WAITED : HOLDER_REPLACED;
}

static bool machine_taken(const char *machine, const char *const *taken, size_t count)
{
    if (!machine || machine[0] == '\0')
        return false;
    for (size_t i = 0; i < count; i++) {
        if (taken[i] && strcmp(taken[i], machine) == 0)
            return true;
    }
    return false;
}

/* Seconds-ish finish time of bytes more on node, as a comparable fraction. */
static bool finishes_before(const struct repairplan_node *a, const struct repairplan_node *b,
                            uint64_t bytes)
{
    /* (pa + bytes) / wa < (pb + bytes) / wb, in 128-bit to keep it exact. */
    unsigned __int128 wa = a->write_bytes_per_sec ? a->write_bytes_per_sec : 1;
    unsigned __int128 wb = b->write_bytes_per_sec ? b->write_bytes_per_sec : 1;
    unsigned __int128 left = ((unsigned __int128)a->planned_bytes + bytes) * wb;
    unsigned __int128 right = ((unsigned __int128)b->planned_bytes + bytes) * wa;
    if (left != right)
        return left < right;
    return a->id < b->id;
}

static bool is_holder(const struct repairplan_tile *tile, uint32_t id)
{
    for (size_t i = 0; i < tile->holder_count; i++) {
        if (tile->holders[i].node == id)
            return true;
    }
    return false;
}

void repairplan_tile(struct repairplan_node *nodes, size_t node_count,
                     const struct repairplan_tile *tile, int64_t replace_after_ms,
                     struct repairplan_step *steps, struct repairplan_verdict *verdict)
{
    const char *taken[REPAIRPLAN_MAX_STEPS + 16];
    size_t taken_count = 0;
    uint32_t chosen[REPAIRPLAN_MAX_STEPS];
    size_t chosen_count = 0;
    const struct repairplan_holder *source = NULL;
    const struct repairplan_node *source_node = NULL;
    bool source_good = false;
    size_t up = 0;

    memset(verdict, 0, sizeof(*verdict));
    for (size_t i = 0; i < tile->holder_count && i < 16; i++) {
        struct repairplan_node *node = node_find(nodes, node_count, tile->holders[i].node);
        enum holder_class class = holder_classify(node, replace_after_ms);
        if (class == HOLDER_GOOD)
            verdict->good++;
        else if (class == HOLDER_WAITED)
            verdict->waited++;
        if (class != HOLDER_REPLACED)
            taken[taken_count++] = node ? node->machine : NULL;
        if (!node || !node->up)
            continue;
        up++;
        bool good = class == HOLDER_GOOD;
        /* Good replicas first, then the fastest reader. */
        if (!source || (good && !source_good) ||
            (good == source_good && node->read_bytes_per_sec > source_node->read_bytes_per_sec)) {
            source = &tile->holders[i];
            source_node = node;
            source_good = good;
        }
    }
    if (verdict->good >= tile->copies)
        verdict->health = HEALTH_OK;
    else
        verdict->health = up == 0 ? HEALTH_UNAVAILABLE : HEALTH_DEGRADED;

    size_t kept = verdict->good + verdict->waited;
    size_t need = kept < tile->copies ? tile->copies - kept : 0;
    if (need > REPAIRPLAN_MAX_STEPS - 16)
        need = REPAIRPLAN_MAX_STEPS - 16;
    for (size_t n = 0; source && n < need; n++) {
        struct repairplan_node *best = NULL;
        bool best_new_machine = false;
        for (size_t i = 0; i < node_count; i++) {
            struct repairplan_node *candidate = &nodes[i];
            bool already = false;
            for (size_t c = 0; c < chosen_count; c++)
                already = already || chosen[c] == candidate->id;
            if (!candidate->up || candidate->admin != ADMIN_ACTIVE || already ||
                is_holder(tile, candidate->id) || candidate->free_bytes < tile->tile_bytes)
                continue;
            bool new_machine = !machine_taken(candidate->machine, taken, taken_count);
            if (!best || (new_machine && !best_new_machine) ||
                (new_machine == best_new_machine &&
                 finishes_before(candidate, best, tile->tile_bytes))) {
                best = candidate;
                best_new_machine = new_machine;
            }
        }
        if (!best)
            break;
        best->planned_bytes += tile->tile_bytes;
        chosen[chosen_count++] = best->id;
        taken[taken_count++] = best->machine;
        steps[verdict->steps++] = (struct repairplan_step){
            .kind = REPAIRPLAN_COPY,
            .from_node = source->node,
            .version = source->version,
            .to_node = best->id,
        };
    }
    /* Replaced replicas go once the others reach copies without them. */
    if (kept + chosen_count < tile->copies)
        return;
    for (size_t i = 0; i < tile->holder_count && i < 16; i++) {
        struct repairplan_node *node = node_find(nodes, node_count, tile->holders[i].node);
        if (holder_classify(node, replace_after_ms) != HOLDER_REPLACED)
            continue;
        steps[verdict->steps++] = (struct repairplan_step){
            .kind = REPAIRPLAN_DROP,
            .from_node = tile->holders[i].node,
            .version = tile->holders[i].version,
            .to_node = 0,
            .node_down = !node || !node->up,
        };
    }
}
