/*
 * @file fallocplan.h
 * What an fallocate(2) request does to a file, worked out before anything
 * is done (pure: unit-tested in tests/unit/test_fallocplan.c).
 *
 * Tessera supports mode 0 and FALLOC_FL_KEEP_SIZE (the size grows, or not;
 * space is checked, not reserved: tiles are allocated when written, as in
 * JuiceFS), FALLOC_FL_PUNCH_HOLE | KEEP_SIZE and FALLOC_FL_ZERO_RANGE (with
 * or without KEEP_SIZE). A punched or zeroed range of a linear file loses
 * its whole tiles (meta drops them: they read as a hole and their files are
 * deleted on the datanodes, see PUNCH in proto.h); the ends of the range
 * that only cover part of a tile get zeros written over them. An array
 * file's tiles are not byte ranges: its range is all written with zeros.
 * Other modes (COLLAPSE_RANGE, INSERT_RANGE, UNSHARE_RANGE) are
 * EOPNOTSUPP.
 */
#ifndef TESSERA_FALLOCPLAN_H
#define TESSERA_FALLOCPLAN_H

#include <stdbool.h>
#include <stdint.h>

struct fallocplan_range {
    uint64_t offset;
    uint64_t length;
};

struct fallocplan {
    bool drop; /* tiles first_tile..last_tile are dropped */
    uint64_t first_tile;
    uint64_t last_tile;
    struct fallocplan_range zero[2]; /* written with zeros, in this order */
    int zero_count;
    uint64_t new_size;    /* the size after the request */
    uint64_t space_bytes; /* bytes the cluster must have free (mode 0, KEEP_SIZE) */
};

/*
 * Plans fallocate(mode, offset, length) on a file of `size` bytes cut in
 * tiles of tile_bytes (array: an array file). 0, -EOPNOTSUPP for a mode
 * Tessera does not do, -EINVAL for a bad combination or length 0, -EFBIG
 * when offset + length overflows.
 */
int fallocplan_make(int mode, uint64_t offset, uint64_t length, uint64_t size, uint32_t tile_bytes,
                    bool array, struct fallocplan *plan);

#endif
