/*
 * @file diskspace.c
 * See diskspace.h. A node starts a new disk unless an earlier node of the
 * same machine has its (non-zero) disk id; each disk's sums are capped by
 * the disk's own figures, taken as the largest any of its nodes reported
 * (their statvfs calls ran at slightly different times).
 */
#include "diskspace.h"

#include <stdbool.h>
#include <string.h>

static bool diskspace_same_disk(const struct diskspace_node *a, const struct diskspace_node *b)
{
    return a->disk_id != 0 && a->disk_id == b->disk_id &&
           strcmp(a->machine ? a->machine : "", b->machine ? b->machine : "") == 0;
}

static uint64_t diskspace_min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

void diskspace_sum(const struct diskspace_node *nodes, size_t count, struct diskspace_total *total)
{
    memset(total, 0, sizeof(*total));
    for (size_t first = 0; first < count; first++) {
        bool seen = false;
        for (size_t before = 0; before < first && !seen; before++)
            seen = diskspace_same_disk(&nodes[before], &nodes[first]);
        if (seen)
            continue; /* counted with the first node of its disk */
        uint64_t capacity = 0, free_bytes = 0, disk_bytes = 0, disk_free = 0;
        for (size_t i = first; i < count; i++) {
            if (i != first && !diskspace_same_disk(&nodes[first], &nodes[i]))
                continue;
            capacity += nodes[i].capacity;
            free_bytes += nodes[i].free_bytes;
            if (nodes[i].disk_bytes > disk_bytes)
                disk_bytes = nodes[i].disk_bytes;
            if (nodes[i].disk_free > disk_free)
                disk_free = nodes[i].disk_free;
        }
        if (nodes[first].disk_id != 0) {
            capacity = diskspace_min(capacity, disk_bytes);
            free_bytes = diskspace_min(free_bytes, disk_free);
        }
        total->capacity += capacity;
        total->free_bytes += free_bytes;
        total->disks++;
    }
}
