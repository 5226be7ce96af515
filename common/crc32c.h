/*
 * @file crc32c.h
 * CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected, as in iSCSI, ext4
 * and SSE4.2's crc32 instruction): the checksum of a tile's bytes that
 * TILE_PULL and TILE_FENCE report (proto.h), so a relocation can tell that
 * the copy it made is the tile it fenced.
 *
 * crc32c(0, "123456789", 9) == 0xE3069283. The function is incremental:
 * crc32c(crc32c(0, a, la), b, lb) == crc32c(0, a||b, la + lb), so a file
 * can be summed piece by piece. It uses the CPU's crc32 instruction where
 * there is one (x86-64 with SSE4.2, chosen once at first use) and
 * slicing-by-8 tables otherwise. Thread-safe.
 */
#ifndef TESSERA_CRC32C_H
#define TESSERA_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Extends crc (0 to start) over len bytes of buf; buf may be NULL when len is 0. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* Whether crc32c() runs the CPU's crc32 instruction (SSE4.2), not the tables. */
bool crc32c_uses_instruction(void);

/*
 * The same with the portable tables whatever the CPU has: what crc32c()
 * runs without SSE4.2; exported so tests can hold both paths to one answer.
 */
uint32_t crc32c_portable(uint32_t crc, const void *buf, size_t len);

/*
 * The CRC of a||b from crc_a = crc32c(0, a, ...) and crc_b = crc32c(0, b,
 * len_b), without the bytes: what lets one pass over a write's bytes give
 * both the CRC of each 4 KiB block (kept beside the tile) and the CRC of
 * the whole payload (checked against the writer's). A len_b that is a
 * power of two (a whole block) costs 32 word operations; other lengths up
 * to one such product per bit set.
 */
uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b);

#endif
