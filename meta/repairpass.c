/*
 * @file repairpass.c
 * See repairpass.h.
 */
#include "repairpass.h"

void repairpass_count(struct repairpass_counts *counts, uint64_t ino, uint64_t bytes, int health)
{
    counts->tiles++;
    if (health == TS_DEGRADED) {
        counts->degraded_tiles++;
        counts->degraded_bytes += bytes;
    }
    if (health != TS_UNAVAILABLE)
        return;
    counts->unavailable_tiles++;
    for (uint32_t i = 0; i < counts->file_count; i++) {
        if (counts->files[i].ino == ino) {
            counts->files[i].tiles++;
            return;
        }
    }
    if (counts->file_count < TS_MAX_HEALTH_FILES)
        counts->files[counts->file_count++] = (struct repairpass_file){ino, 1};
}
