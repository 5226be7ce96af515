/*
 * @file reqmem.h
 * Memory shaped so that a FUSE request can be read straight into it: a
 * payload of a given size with room before it for the request's headers
 * and after it for the kernel's slack. The mount's write buffers and the
 * memory each FUSE thread reads requests into share this shape, so a write
 * of a whole tile can take the request's bytes by exchanging the two
 * (datapath_write) instead of copying a MiB.
 */
#ifndef TESSERA_REQMEM_H
#define TESSERA_REQMEM_H

#include <stddef.h>
#include <stdint.h>

/* Room before the payload: a request's headers are read in just before it. */
#define REQMEM_HEADROOM 4096u
/* Room after the payload: the kernel wants the read buffer to hold a whole
 * request, headers included, of up to max_write bytes of data. */
#define REQMEM_TAILROOM 4096u

/* Where a thread keeps reqmem memory that a request was read into, and
 * which a write of its data may take in exchange for memory of the same
 * shape and size (datapath_write). */
struct reqmem_slot {
    uint8_t **payload; /* *payload is replaced on exchange */
    size_t payload_bytes;
};

/* The payload of new memory for payload_bytes, or NULL if malloc fails.
 * Free it with reqmem_free; its pages are not touched here. */
uint8_t *reqmem_new(size_t payload_bytes);
/* Frees what reqmem_new returned; NULL is ignored. */
void reqmem_free(uint8_t *payload);

#endif
