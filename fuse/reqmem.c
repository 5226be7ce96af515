/*
 * @file reqmem.c
 * Memory with headroom and tailroom around a payload (see reqmem.h). The
 * allocation starts REQMEM_HEADROOM bytes before the payload it hands out.
 */
#include "reqmem.h"

#include <stdlib.h>

uint8_t *reqmem_new(size_t payload_bytes)
{
    if (payload_bytes > SIZE_MAX - REQMEM_HEADROOM - REQMEM_TAILROOM)
        return NULL;
    /* Plain malloc, not posix_memalign: page-aligned payloads would read no
     * faster, and aligned chunks fragmented the heap (the mount peaked at
     * 343 MiB under a 64 MiB cap in test_memory_cap). */
    uint8_t *start = malloc(REQMEM_HEADROOM + payload_bytes + REQMEM_TAILROOM);
    return start ? start + REQMEM_HEADROOM : NULL;
}

void reqmem_free(uint8_t *payload)
{
    if (payload)
        free(payload - REQMEM_HEADROOM);
}
