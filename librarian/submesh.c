/*
 * @file submesh.c
 * FIND_submesh (see submesh.h). Terminates because every doubling leaves a
 * dimension's subchunk extent strictly smaller or stops visiting it: a
 * dimension is doubled only while ceil(extent / submesh) > 1.
 */
#include "submesh.h"

static uint64_t subchunk_bytes(uint32_t ndims, const uint64_t *chunk_extent, uint32_t element_bytes,
                               const uint64_t *submesh)
{
    uint64_t bytes = element_bytes;
    for (uint32_t d = 0; d < ndims; d++)
        bytes *= submesh_block(chunk_extent[d], submesh[d]);
    return bytes;
}

static bool splittable(const uint64_t *chunk_extent, const uint64_t *submesh, uint32_t d)
{
    return submesh_block(chunk_extent[d], submesh[d]) > 1;
}

uint64_t submesh_find(uint32_t ndims, const uint64_t *chunk_extent, const bool *split,
                      uint32_t element_bytes, uint64_t threshold, uint64_t *submesh)
{
    uint64_t size;
    uint32_t idle = 0; /* dimensions visited in a row without a cut */

    for (uint32_t d = 0; d < ndims; d++)
        submesh[d] = 1;
    size = subchunk_bytes(ndims, chunk_extent, element_bytes, submesh);

    /* The paper's loop: round-robin over the dimensions that may be split. */
    for (uint32_t d = 0; size > threshold && idle < ndims; d = (d + 1) % ndims) {
        if (split[d] && splittable(chunk_extent, submesh, d)) {
            submesh[d] *= 2;
            size = subchunk_bytes(ndims, chunk_extent, element_bytes, submesh);
            idle = 0;
        } else {
            idle++;
        }
    }

    /* Still too big: halve what is left, outermost dimension first. */
    for (uint32_t d = 0; d < ndims && size > threshold; d++) {
        while (size > threshold && splittable(chunk_extent, submesh, d)) {
            submesh[d] *= 2;
            size = subchunk_bytes(ndims, chunk_extent, element_bytes, submesh);
        }
    }
    return size;
}
