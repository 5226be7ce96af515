/*
 * @file submesh.h
 * Panda's FIND_submesh (seed 000, section 3.1): how many times to cut a disk
 * chunk along each dimension so that its subchunks hold at most `threshold`
 * bytes. Pure arithmetic; arraylayout.c applies the result to every chunk.
 */
#ifndef TESSERA_SUBMESH_H
#define TESSERA_SUBMESH_H

#include <stdbool.h>
#include <stdint.h>

/* ceil(n / p) for p >= 1: the HPF BLOCK size of n elements over p parts. */
static inline uint64_t submesh_block(uint64_t n, uint64_t p)
{
    return n / p + (n % p != 0);
}

/*
 * Finds the submesh of a chunk of extents chunk_extent[ndims] (the first,
 * largest chunk of the array), cutting only dimensions with split[d] set:
 * the array's BLOCK dimensions for "same distribution" subchunks, dimension
 * 0 alone for (BLOCK,*,...,*) ones.
 *
 * Panda's loop, with the size computed exactly: visiting the dimensions
 * round-robin from 0, it doubles submesh[d] of a dimension that may be split
 * and still has subchunks wider than one element, until the largest
 * subchunk, prod(ceil(chunk_extent[d] / submesh[d])) * element_bytes, is at
 * most `threshold`. (The paper halves its size estimate instead; the two
 * agree whenever extents are powers of two.)
 *
 * Departures from the paper, both so that a tile never exceeds the threshold
 * (tiles are single buffers and files): when no dimension may be split
 * (every split[d] false: the paper returns the chunk whole) or the split
 * dimensions run down to one element with the subchunk still too big, it
 * goes on halving the outermost dimension that is still wider than one
 * element, then the next — (BLOCK,*,...,*) cuts of what is left. A
 * threshold of at least element_bytes is therefore always met.
 *
 * Writes submesh[ndims] (each >= 1) and returns the bytes of the largest
 * subchunk.
 */
uint64_t submesh_find(uint32_t ndims, const uint64_t *chunk_extent, const bool *split,
                      uint32_t element_bytes, uint64_t threshold, uint64_t *submesh);

#endif
