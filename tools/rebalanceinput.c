/*
 * @file rebalanceinput.c
 * See rebalanceinput.h. Machine names are interned (one strdup per name),
 * so the planner's structs can point at them for as long as the input
 * lives, however the arrays holding them grow.
 */
#include "rebalanceinput.h"

#include "arraylayout.h"
#include "arrayspec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void rebalanceinput_init(struct rebalanceinput *input)
{
    memset(input, 0, sizeof(*input));
}

void rebalanceinput_release(struct rebalanceinput *input)
{
    for (size_t i = 0; i < input->name_count; i++)
        free(input->names[i]);
    for (size_t i = 0; i < input->file_count; i++) {
        free(input->files[i].path);
        free(input->files[i].profiled);
        free(input->files[i].layout);
    }
    free(input->arrays);
    free(input->names);
    free(input->nodes);
    free(input->accesses);
    free(input->tiles);
    free(input->holder_versions);
    free(input->files);
    free(input->seen);
    rebalanceinput_init(input);
}

/* Makes room for one more element in *array (capacity *cap); 0 or -ENOMEM. */
static int rebalanceinput_grow(void **array, size_t *cap, size_t used, size_t size)
{
    if (used < *cap)
        return 0;
    size_t new_cap = *cap ? *cap * 2 : 64;
    void *grown = realloc(*array, new_cap * size);
    if (!grown)
        return -ENOMEM;
    *array = grown;
    *cap = new_cap;
    return 0;
}

/* The interned copy of name; NULL when out of memory. */
static const char *rebalanceinput_intern(struct rebalanceinput *input, const char *name)
{
    for (size_t i = 0; i < input->name_count; i++) {
        if (strcmp(input->names[i], name) == 0)
            return input->names[i];
    }
    if (rebalanceinput_grow((void **)&input->names, &input->name_cap, input->name_count,
                            sizeof(*input->names)) != 0)
        return NULL;
    char *copy = strdup(name);
    if (!copy)
        return NULL;
    input->names[input->name_count++] = copy;
    return copy;
}

/*
 * The disk speed the planner should count on: what the node measured, but
 * never more than its throttle. A node measures its disk only while it
 * does I/O, so a throttle set since (tessera node throttle) is known
 * before the measurement catches up with it.
 */
static uint64_t rebalanceinput_disk_rate(uint64_t measured, uint64_t throttle)
{
    if (throttle == 0)
        return measured;
    return measured == 0 || measured > throttle ? throttle : measured;
}

int rebalanceinput_set_nodes(struct rebalanceinput *input, const struct toolmeta_node *nodes,
                             size_t count)
{
    free(input->nodes);
    input->nodes = NULL;
    input->node_count = 0;
    if (count == 0)
        return 0;
    input->nodes = calloc(count, sizeof(*input->nodes));
    if (!input->nodes)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        struct plan_node *node = &input->nodes[i];
        node->id = nodes[i].id;
        node->machine = nodes[i].machine[0] ? rebalanceinput_intern(input, nodes[i].machine) : NULL;
        if (nodes[i].machine[0] && !node->machine)
            return -ENOMEM;
        node->up = nodes[i].state == TS_NODE_UP;
        node->read_bytes_per_sec =
            rebalanceinput_disk_rate(nodes[i].read_bytes_per_sec, nodes[i].throttle_bytes_per_sec);
        node->write_bytes_per_sec =
            rebalanceinput_disk_rate(nodes[i].write_bytes_per_sec, nodes[i].throttle_bytes_per_sec);
        node->free_bytes = nodes[i].free_bytes;
    }
    input->node_count = count;
    return 0;
}

/* ---- inode -> file index ------------------------------------------------ */

static size_t rebalanceinput_slot(const struct rebalanceinput *input, uint64_t ino)
{
    /* Fibonacci hashing spreads consecutive inode numbers. */
    size_t slot = (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) & (input->seen_cap - 1);
    while (input->seen[slot].ino != 0 && input->seen[slot].ino != ino)
        slot = (slot + 1) & (input->seen_cap - 1);
    return slot;
}

/* Records ino -> file; 0, -EEXIST or -ENOMEM. */
static int rebalanceinput_remember(struct rebalanceinput *input, uint64_t ino, size_t file)
{
    if ((input->file_count + 1) * 2 > input->seen_cap) {
        size_t old_cap = input->seen_cap;
        struct rebalanceinput_seen *old = input->seen;
        size_t new_cap = old_cap ? old_cap * 2 : 64;
        input->seen = calloc(new_cap, sizeof(*input->seen));
        if (!input->seen) {
            input->seen = old;
            return -ENOMEM;
        }
        input->seen_cap = new_cap;
        for (size_t i = 0; i < old_cap; i++) {
            if (old[i].ino != 0)
                input->seen[rebalanceinput_slot(input, old[i].ino)] = old[i];
        }
        free(old);
    }
    size_t slot = rebalanceinput_slot(input, ino);
    if (input->seen[slot].ino == ino)
        return -EEXIST;
    input->seen[slot].ino = ino;
    input->seen[slot].file = file;
    return 0;
}

const struct rebalanceinput_file *rebalanceinput_file_of(const struct rebalanceinput *input,
                                                         uint64_t ino)
{
    if (input->seen_cap == 0 || ino == 0)
        return NULL;
    size_t slot = rebalanceinput_slot(input, ino);
    return input->seen[slot].ino == ino ? &input->files[input->seen[slot].file] : NULL;
}

/* ---- files and their profiles ------------------------------------------- */

static int rebalanceinput_compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The file's distinct profiled tiles, sorted. */
static int rebalanceinput_profiled(struct rebalanceinput_file *file,
                                   const struct toolmeta_access *records, size_t count)
{
    size_t distinct = 0;

    if (count == 0)
        return 0;
    file->profiled = malloc(count * sizeof(*file->profiled));
    if (!file->profiled)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++)
        file->profiled[i] = records[i].tile;
    qsort(file->profiled, count, sizeof(*file->profiled), rebalanceinput_compare_u64);
    for (size_t i = 0; i < count; i++) {
        if (distinct == 0 || file->profiled[distinct - 1] != file->profiled[i])
            file->profiled[distinct++] = file->profiled[i];
    }
    file->profiled_count = distinct;
    return 0;
}

int rebalanceinput_add_file(struct rebalanceinput *input, const char *path,
                            const struct ts_attr *attr, const struct toolmeta_access *records,
                            size_t count, size_t *index)
{
    struct rebalanceinput_file *file;
    int rc;

    if (rebalanceinput_file_of(input, attr->ino))
        return -EEXIST;
    rc = rebalanceinput_grow((void **)&input->files, &input->file_cap, input->file_count,
                             sizeof(*input->files));
    if (rc != 0)
        return rc;
    file = &input->files[input->file_count];
    memset(file, 0, sizeof(*file));
    file->path = strdup(path);
    if (!file->path)
        return -ENOMEM;
    file->ino = attr->ino;
    file->size = attr->size;
    file->tile_bytes = attr->tile_bytes;
    file->copies = attr->copies;
    file->array = (attr->flags & TS_ATTR_ARRAY) != 0;
    file->first_tile_entry = input->tile_count;
    rc = rebalanceinput_profiled(file, records, count);
    if (rc == 0)
        rc = rebalanceinput_remember(input, attr->ino, input->file_count);
    if (rc != 0) {
        free(file->path);
        free(file->profiled);
        return rc;
    }
    for (size_t i = 0; i < count; i++) {
        rc = rebalanceinput_grow((void **)&input->accesses, &input->access_cap, input->access_count,
                                 sizeof(*input->accesses));
        const char *machine = rc == 0 ? rebalanceinput_intern(input, records[i].machine) : NULL;
        if (!machine) {
            /* The file stays (its inode is remembered); its profile is cut short. */
            input->file_count++;
            return -ENOMEM;
        }
        struct plan_access *access = &input->accesses[input->access_count++];
        access->ino = attr->ino;
        access->tile = records[i].tile;
        access->machine = machine;
        access->reads = records[i].reads;
        access->writes = records[i].writes;
        access->bytes_read = records[i].bytes_read;
        access->bytes_written = records[i].bytes_written;
        access->first_access_ns = records[i].first_access_ns;
    }
    *index = input->file_count++;
    return 0;
}

/* Tiles a linear file has (UINT64_MAX for array files: no bound known here). */
static uint64_t rebalanceinput_tile_limit(const struct rebalanceinput_file *file)
{
    if (file->array || file->tile_bytes == 0)
        return UINT64_MAX;
    return file->size / file->tile_bytes + (file->size % file->tile_bytes != 0);
}

int rebalanceinput_ranges(const struct rebalanceinput *input, size_t index,
                          struct rebalanceinput_range **ranges, size_t *count)
{
    const struct rebalanceinput_file *file = &input->files[index];
    uint64_t limit = rebalanceinput_tile_limit(file);
    struct rebalanceinput_range *array = NULL;
    size_t used = 0;

    *ranges = NULL;
    *count = 0;
    if (file->profiled_count == 0)
        return 0;
    array = calloc(file->profiled_count, sizeof(*array));
    if (!array)
        return -ENOMEM;
    for (size_t i = 0; i < file->profiled_count;) {
        uint64_t first = file->profiled[i];
        if (first >= limit)
            break; /* sorted: the rest is past the end too */
        uint64_t span = limit - first < TS_MAX_TILES_PER_MAP ? limit - first : TS_MAX_TILES_PER_MAP;
        /* Only as far as the last profiled tile in reach. */
        uint64_t last = first;
        while (i < file->profiled_count && file->profiled[i] < first + span)
            last = file->profiled[i++];
        array[used].first = first;
        array[used].count = (uint32_t)(last - first + 1);
        used++;
    }
    *ranges = array;
    *count = used;
    return 0;
}

static bool rebalanceinput_is_profiled(const struct rebalanceinput_file *file, uint64_t tile)
{
    return bsearch(&tile, file->profiled, file->profiled_count, sizeof(*file->profiled),
                   rebalanceinput_compare_u64) != NULL;
}

/* The bytes tile `tile` holds; 0 when past the end of a linear file. */
static uint64_t rebalanceinput_tile_bytes(const struct rebalanceinput_file *file, uint64_t tile)
{
    if (file->array)
        return file->tile_bytes;
    uint64_t offset = tile * file->tile_bytes;
    if (offset >= file->size)
        return 0;
    return file->size - offset < file->tile_bytes ? file->size - offset : file->tile_bytes;
}

int rebalanceinput_add_tiles(struct rebalanceinput *input, size_t index, uint64_t first,
                             const struct ts_tile_map_rec *records, uint32_t count,
                             bool *has_copies)
{
    struct rebalanceinput_file *file = &input->files[index];

    for (uint32_t i = 0; i < count; i++) {
        uint64_t tile = first + i;
        uint64_t bytes = rebalanceinput_tile_bytes(file, tile);
        if (records[i].node == 0 || bytes == 0 || !rebalanceinput_is_profiled(file, tile))
            continue;
        if (input->tile_count >= input->tile_cap) {
            size_t cap = input->tile_cap ? input->tile_cap * 2 : 256;
            struct plan_tile *tiles = realloc(input->tiles, cap * sizeof(*tiles));
            if (!tiles)
                return -ENOMEM;
            input->tiles = tiles;
            uint64_t(*versions)[PLAN_MAX_COPIES] =
                realloc(input->holder_versions, cap * sizeof(*versions));
            if (!versions)
                return -ENOMEM;
            input->holder_versions = versions;
            input->tile_cap = cap;
        }
        struct plan_tile *entry = &input->tiles[input->tile_count];
        memset(entry, 0, sizeof(*entry));
        memset(input->holder_versions[input->tile_count], 0, sizeof(uint64_t) * PLAN_MAX_COPIES);
        entry->ino = file->ino;
        entry->tile = tile;
        entry->version = records[i].version;
        entry->tile_bytes = bytes;
        entry->min_copies = file->copies;
        entry->node_count = 1;
        entry->nodes[0] = records[i].node;
        input->holder_versions[input->tile_count][0] = records[i].version;
        input->tile_count++;
        file->tile_entries++;
        if (records[i].holders > 1)
            *has_copies = true;
    }
    return 0;
}

/* The map entry of (file, tile), or SIZE_MAX. */
static size_t rebalanceinput_find_tile(const struct rebalanceinput *input,
                                       const struct rebalanceinput_file *file, uint64_t tile)
{
    size_t low = file->first_tile_entry, high = file->first_tile_entry + file->tile_entries;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (input->tiles[middle].tile < tile)
            low = middle + 1;
        else
            high = middle;
    }
    if (low < file->first_tile_entry + file->tile_entries && input->tiles[low].tile == tile)
        return low;
    return SIZE_MAX;
}

int rebalanceinput_add_holders(struct rebalanceinput *input, size_t index,
                               const struct toolmeta_holder *holders, size_t count)
{
    const struct rebalanceinput_file *file = &input->files[index];

    for (size_t i = 0; i < count; i++) {
        const struct toolmeta_holder *holder = &holders[i];
        size_t entry_index = rebalanceinput_find_tile(input, file, holder->tile);
        if (holder->node == 0 || entry_index == SIZE_MAX)
            continue;
        struct plan_tile *entry = &input->tiles[entry_index];
        bool known = false;
        for (uint32_t h = 0; h < entry->node_count; h++)
            known = known || entry->nodes[h] == holder->node;
        if (known || entry->node_count >= PLAN_MAX_COPIES)
            continue;
        input->holder_versions[entry_index][entry->node_count] = holder->version;
        entry->nodes[entry->node_count++] = holder->node;
    }
    return 0;
}

void rebalanceinput_views(const struct rebalanceinput *input, struct plan_cluster *cluster,
                          struct plan_profile *profile, struct plan_tilemap *map)
{
    cluster->nodes = input->nodes;
    cluster->node_count = input->node_count;
    cluster->network_bytes_per_sec = 0;
    profile->accesses = input->accesses;
    profile->count = input->access_count;
    map->tiles = input->tiles;
    map->count = input->tile_count;
}

int rebalanceinput_steps(const struct rebalanceinput *input, const struct plan *plan,
                         struct relocate_step **steps, size_t *count)
{
    struct relocate_step *array = NULL;

    *steps = NULL;
    *count = 0;
    if (plan->action_count == 0)
        return 0;
    array = calloc(plan->action_count, sizeof(*array));
    if (!array)
        return -ENOMEM;
    for (size_t i = 0; i < plan->action_count; i++) {
        const struct plan_action *action = &plan->actions[i];
        relocate_step_from_action(action, &array[i]);
        const struct rebalanceinput_file *file = rebalanceinput_file_of(input, action->ino);
        size_t entry_index = file ? rebalanceinput_find_tile(input, file, action->tile) : SIZE_MAX;
        if (entry_index == SIZE_MAX)
            continue;
        const struct plan_tile *entry = &input->tiles[entry_index];
        for (uint32_t h = 0; h < entry->node_count; h++) {
            if (entry->nodes[h] == action->from_node)
                array[i].version = input->holder_versions[entry_index][h];
        }
    }
    *steps = array;
    *count = plan->action_count;
    return 0;
}

const char *rebalanceinput_node_machine(const struct rebalanceinput *input, uint32_t id)
{
    for (size_t i = 0; i < input->node_count; i++) {
        if (input->nodes[i].id == id)
            return input->nodes[i].machine ? input->nodes[i].machine : "-";
    }
    return "?";
}

int rebalanceinput_set_array(struct rebalanceinput *input, size_t index, const char *text)
{
    struct rebalanceinput_file *file = &input->files[index];
    struct arrayspec spec;
    char why[ARRAYSPEC_MESSAGE_MAX];
    struct arraylayout *layout;

    if (file->layout || arrayspec_parse(text, strlen(text), &spec, why, sizeof(why)) != 0)
        return -EINVAL;
    layout = malloc(sizeof(*layout));
    if (!layout)
        return -ENOMEM;
    if (arraylayout_init(layout, &spec, why, sizeof(why)) != 0) {
        free(layout);
        return -EINVAL;
    }
    if (rebalanceinput_grow((void **)&input->arrays, &input->array_cap, input->array_count,
                            sizeof(*input->arrays)) != 0) {
        free(layout);
        return -ENOMEM;
    }
    /* Each layout has its own allocation: the pointer survives the arrays' growth. */
    file->layout = layout;
    input->arrays[input->array_count++] = (struct plan_array_file){file->ino, layout};
    return 0;
}

void rebalanceinput_array_options(const struct rebalanceinput *input, struct plan_options *options)
{
    options->arrays = input->arrays;
    options->array_count = input->array_count;
}
