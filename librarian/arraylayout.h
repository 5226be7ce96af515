/*
 * @file arraylayout.h
 * The tiles of an array file and the mapping between the file's bytes and
 * theirs (DESIGN.md "Layout of a file", Panda section 3.1).
 *
 * The file is the array in row-major order. Its declared layout
 * (arrayspec.h) splits each dimension into disk chunks by HPF BLOCK, then
 * FIND_submesh (submesh.h) cuts every chunk into subchunks; each subchunk is
 * a tile: a hyper-rectangle of the array stored contiguously, row-major
 * inside the tile, as one tile file on a datanode.
 *
 * Edge rule (HPF BLOCK, everywhere): n indices over p parts go in blocks of
 * ceil(n / p), the last block smaller; blocks that would start at or past n
 * do not exist. Chunks along dimension d are BLOCK(extent[d], mesh[d]); each
 * chunk, of extent c along d, is cut into BLOCK(c, submesh[d]) subchunks:
 * the submesh FIND_submesh computed for the first (largest) chunk is applied
 * to every chunk, as the paper does. So only the last chunk along a
 * dimension can be thinner, and only the last subchunk within a chunk; a
 * dimension can have fewer chunks than its mesh count (extent 10 over mesh
 * 4: chunks 3,3,3,1; extent 5 over 4: 2,2,1, three chunks); and a thin last
 * chunk can hold more, thinner subchunks than a full one (extent 33 over
 * mesh 4 with submesh 8: full chunks of 9 cut 2,2,2,2,1, the last of 6 cut
 * 1,1,1,1,1,1). The tiles form a grid: the Cartesian product of one
 * partition of [0, extent[d]) per dimension.
 *
 * Tile order (tile indices 0..count-1): disk chunks in row-major order of
 * their mesh position; within a chunk, its subchunks in row-major order of
 * their position in the chunk's submesh. The tiles of one disk chunk are
 * consecutive, as Panda numbers subchunks. When tiles span whole rows of
 * the array (Figure 2's (BLOCK,*) layout), tile order is file order.
 *
 * Everything here is arithmetic on a struct arraylayout the caller owns:
 * no allocation, no locks; any number of threads may read one layout.
 */
#ifndef TESSERA_ARRAYLAYOUT_H
#define TESSERA_ARRAYLAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arrayspec.h"
#include "tile.h"

/* How one axis is cut into tiles. Counts are >= 1. */
struct arraylayout_axis {
    uint64_t extent;      /* length of the axis */
    uint64_t chunk;       /* extent of a full disk chunk: ceil(extent / mesh) */
    uint64_t chunks;      /* disk chunks that exist: ceil(extent / chunk) */
    uint64_t piece;       /* tile extent in a full chunk: ceil(chunk / submesh) */
    uint64_t pieces;      /* tiles per full chunk: ceil(chunk / piece) */
    uint64_t last_piece;  /* the same two for the last chunk, whose extent */
    uint64_t last_pieces; /* is extent - (chunks - 1) * chunk */
    uint64_t total;       /* tiles along the axis: (chunks - 1) * pieces + last_pieces */
};

/* A grid of tiles: axes with tile counts; after[d] = prod(total[d..dims-1]). */
struct arraylayout_grid {
    uint32_t dims;
    struct arraylayout_axis axis[ARRAYSPEC_MAX_DIMS];
    uint64_t after[ARRAYSPEC_MAX_DIMS + 1];
};

/*
 * A compiled layout. Fields are read-only after arraylayout_init(); callers
 * use the functions below rather than the grids.
 */
struct arraylayout {
    struct arrayspec spec;
    uint64_t submesh[ARRAYSPEC_MAX_DIMS]; /* FIND_submesh's cut counts */
    uint64_t array_bytes;                 /* the file's full size */
    uint64_t tile_count;
    uint32_t max_tile_bytes; /* <= spec.threshold */
    /* The tiles over the array's dimensions, in elements. */
    struct arraylayout_grid grid;
    /* The same tiles over the file's bytes: the last axis counts bytes, and
     * every dimension with a single tile along it is folded into the one
     * before it (the tiles span it whole, so its index never changes the
     * tile). A run of the walk then never crosses the innermost axis. */
    struct arraylayout_grid bytes;
    uint64_t stride[ARRAYSPEC_MAX_DIMS]; /* file bytes per step on bytes.axis[d] */
};

/* One tile as `tessera layout` shows it. */
struct arraylayout_tile {
    uint64_t lower[ARRAYSPEC_MAX_DIMS];    /* first array index along each dimension */
    uint64_t shape[ARRAYSPEC_MAX_DIMS];    /* extent along each dimension */
    uint64_t chunk[ARRAYSPEC_MAX_DIMS];    /* its disk chunk's mesh position */
    uint64_t subchunk[ARRAYSPEC_MAX_DIMS]; /* its position in the chunk's submesh */
    uint32_t bytes;
};

/*
 * Compiles a spec: checks it (arrayspec_check), runs FIND_submesh and builds
 * the grids. Returns 0, or -EINVAL with a message as arrayspec_check().
 */
int arraylayout_init(struct arraylayout *layout, const struct arrayspec *spec, char *message,
                     size_t cap);

/* Number of tiles (>= 1). */
static inline uint64_t arraylayout_tile_count(const struct arraylayout *layout)
{
    return layout->tile_count;
}

/* Bytes of tile `tile` (1..spec.threshold), or 0 if there is no such tile. */
uint32_t arraylayout_tile_bytes(const struct arraylayout *layout, uint64_t tile);

/* Fills *info for tile `tile`; returns 0, or -EINVAL if there is no such tile. */
int arraylayout_tile_info(const struct arraylayout *layout, uint64_t tile,
                          struct arraylayout_tile *info);

/*
 * The inverse mapping: the file offset of byte `tile_offset` of tile
 * `tile`. Returns 0, or -EINVAL if there is no such tile or the offset is
 * not below its size.
 */
int arraylayout_file_offset(const struct arraylayout *layout, uint64_t tile, uint32_t tile_offset,
                            uint64_t *file_offset);

/*
 * Walks the segments of file bytes [offset, offset + length) in file order,
 * like tile_walk (common/tile.h), filling struct tile_segment: the tile, the
 * offset inside it, the length, and file_offset, so that the piece's place
 * in the caller's buffer for the range is file_offset - offset. Each segment
 * is a maximal run: the bytes are contiguous in the file and in the tile,
 * and the next segment does not continue it. Ranges need not be aligned to
 * elements. A segment's length and tile offset are below the threshold.
 * Bytes past the end of the array belong to no tile: the walk stops at the
 * layout's array_bytes, and the caller sees the shortfall.
 *
 * Cost: O(dims) divisions at init; per segment a few additions and one
 * multiplication, O(dims) multiply-adds where a run ends an innermost row of
 * the array; no division and no allocation. The walk keeps a pointer to the
 * layout, which must outlive it.
 */
struct arraylayout_walk {
    const struct arraylayout *layout;
    uint64_t next_offset;
    uint64_t end;
    /* Position of next_offset on layout->bytes, and its tile's box. */
    uint64_t coord[ARRAYSPEC_MAX_DIMS];
    uint64_t chunk[ARRAYSPEC_MAX_DIMS];
    uint64_t piece[ARRAYSPEC_MAX_DIMS];
    uint64_t low[ARRAYSPEC_MAX_DIMS];
    uint64_t high[ARRAYSPEC_MAX_DIMS];
    uint64_t tile; /* the tile holding next_offset */
    uint64_t row;  /* next_offset's row in it, in widths of the innermost axis */
    /* For steps along the innermost axis (see walk_locate()). */
    uint64_t chunk_base;
    uint64_t outer_tiles;
    uint64_t outer_inside;
};

void arraylayout_walk_init(struct arraylayout_walk *walk, const struct arraylayout *layout,
                           uint64_t offset, uint64_t length);
/* Fills segment with the next run; returns false when the range is done. */
bool arraylayout_walk_next(struct arraylayout_walk *walk, struct tile_segment *segment);
/*
 * Fills up to cap segments; returns how many (0 once the range is done).
 * Call again to continue where it stopped.
 */
size_t arraylayout_walk_fill(struct arraylayout_walk *walk, struct tile_segment *segments,
                             size_t cap);

#endif
