/*
 * @file arraylayout.c
 * Tiles of an array file and the byte mapping (see arraylayout.h).
 *
 * Both directions work on a grid: per axis, a tile position is a pair
 * (chunk k, piece j within the chunk), and a tile's box along the axis
 * follows from (k, j) by the HPF rule with no search. Tile indices are
 * chunk-major (chunks row-major, then pieces row-major inside the chunk), so
 * the index of the tile at positions (k[], j[]) is (walk_locate())
 *
 *   sum_d prod_{e<d} P(e, k_e) * k_d * pieces_d * after[d + 1]
 *     + row-major index of j[] over extents P(e, k_e)
 *
 * where P(e, k) is the piece count of chunk k along axis e: the chunks
 * before k_d along axis d are all full ones, and those after the first
 * differing axis range over all tiles of the later axes.
 *
 * The walk runs on the "bytes" grid, where a run is bounded only by the
 * current tile's box along the innermost axis; moving past a run is an
 * odometer step over (coordinate, chunk, piece), so the per-segment cost has
 * no division, and most steps (to the next piece of the same chunk on the
 * innermost axis) are tile + 1 with the same row inside the tile.
 */
#include "arraylayout.h"

#include <errno.h>
#include <string.h>

#include "submesh.h"

static bool is_last_chunk(const struct arraylayout_axis *axis, uint64_t chunk)
{
    return chunk + 1 == axis->chunks;
}

static uint64_t chunk_pieces(const struct arraylayout_axis *axis, uint64_t chunk)
{
    return is_last_chunk(axis, chunk) ? axis->last_pieces : axis->pieces;
}

/* The box [*low, *high) of piece `piece` of chunk `chunk` along an axis. */
static void piece_box(const struct arraylayout_axis *axis, uint64_t chunk, uint64_t piece,
                      uint64_t *low, uint64_t *high)
{
    uint64_t start = chunk * axis->chunk;
    bool last = is_last_chunk(axis, chunk);
    uint64_t width = last ? axis->last_piece : axis->piece;
    uint64_t chunk_end = last ? axis->extent : start + axis->chunk;
    *low = start + piece * width;
    *high = *low + width < chunk_end ? *low + width : chunk_end;
}

/* The chunk and piece holding coordinate x (< extent) along an axis. */
static void piece_of(const struct arraylayout_axis *axis, uint64_t x, uint64_t *chunk,
                     uint64_t *piece)
{
    *chunk = x / axis->chunk;
    uint64_t width = is_last_chunk(axis, *chunk) ? axis->last_piece : axis->piece;
    *piece = (x - *chunk * axis->chunk) / width;
}

static void axis_build(struct arraylayout_axis *axis, uint64_t extent, uint64_t mesh,
                       uint64_t submesh)
{
    axis->extent = extent;
    axis->chunk = submesh_block(extent, mesh);
    axis->chunks = submesh_block(extent, axis->chunk);
    axis->piece = submesh_block(axis->chunk, submesh);
    axis->pieces = submesh_block(axis->chunk, axis->piece);
    uint64_t last_extent = extent - (axis->chunks - 1) * axis->chunk;
    axis->last_piece = submesh_block(last_extent, submesh);
    axis->last_pieces = submesh_block(last_extent, axis->last_piece);
    axis->total = (axis->chunks - 1) * axis->pieces + axis->last_pieces;
}

/* Multiplies an axis's lengths by factor (folding finer units into it). */
static void axis_scale(struct arraylayout_axis *axis, uint64_t factor)
{
    axis->extent *= factor;
    axis->chunk *= factor;
    axis->piece *= factor;
    axis->last_piece *= factor;
}

static void grid_finish(struct arraylayout_grid *grid)
{
    grid->after[grid->dims] = 1;
    for (uint32_t d = grid->dims; d-- > 0;)
        grid->after[d] = grid->after[d + 1] * grid->axis[d].total;
}

/* Position of a tile from its index (the inverse of walk_locate()'s index);
 * tile must be below after[0]. */
static void grid_tile_position(const struct arraylayout_grid *grid, uint64_t tile, uint64_t *chunk,
                               uint64_t *piece)
{
    uint64_t prefix = 1;
    for (uint32_t d = 0; d < grid->dims; d++) {
        const struct arraylayout_axis *axis = &grid->axis[d];
        /* Tiles per full chunk along d, given the chunks fixed so far. */
        uint64_t slab = prefix * axis->pieces * grid->after[d + 1];
        /* The last chunk's slab may be thicker (see arraylayout.h): any
         * tile past the full ones is in it. */
        uint64_t k = tile / slab;
        if (k >= axis->chunks)
            k = axis->chunks - 1;
        tile -= k * slab;
        chunk[d] = k;
        prefix *= chunk_pieces(axis, k);
    }
    for (uint32_t d = grid->dims; d-- > 0;) {
        uint64_t pieces = chunk_pieces(&grid->axis[d], chunk[d]);
        piece[d] = tile % pieces;
        tile /= pieces;
    }
}

int arraylayout_init(struct arraylayout *layout, const struct arrayspec *spec, char *message,
                     size_t cap)
{
    uint64_t chunk_extent[ARRAYSPEC_MAX_DIMS];
    bool split[ARRAYSPEC_MAX_DIMS];
    int result = arrayspec_check(spec, message, cap);
    if (result != 0)
        return result;

    memset(layout, 0, sizeof(*layout));
    layout->spec = *spec;
    layout->array_bytes = arrayspec_bytes(spec);

    for (uint32_t d = 0; d < spec->ndims; d++) {
        chunk_extent[d] = submesh_block(spec->extent[d], spec->mesh[d]);
        if (spec->subchunk == ARRAYSPEC_SUBCHUNK_FIRST)
            split[d] = d == 0;
        else
            split[d] = spec->dist[d] == ARRAYSPEC_BLOCK;
    }
    layout->max_tile_bytes = (uint32_t)submesh_find(
        spec->ndims, chunk_extent, split, spec->element_bytes, spec->threshold, layout->submesh);

    struct arraylayout_grid *grid = &layout->grid;
    grid->dims = spec->ndims;
    for (uint32_t d = 0; d < spec->ndims; d++)
        axis_build(&grid->axis[d], spec->extent[d], spec->mesh[d], layout->submesh[d]);
    grid_finish(grid);
    layout->tile_count = grid->after[0];

    /* The bytes grid: fold single-tile dimensions into their predecessor,
     * then count the innermost axis in bytes. */
    struct arraylayout_grid *bytes = &layout->bytes;
    bytes->dims = 0;
    for (uint32_t d = 0; d < grid->dims; d++) {
        if (d > 0 && grid->axis[d].total == 1) {
            axis_scale(&bytes->axis[bytes->dims - 1], grid->axis[d].extent);
            continue;
        }
        bytes->axis[bytes->dims++] = grid->axis[d];
    }
    axis_scale(&bytes->axis[bytes->dims - 1], spec->element_bytes);
    grid_finish(bytes);
    layout->stride[bytes->dims - 1] = 1;
    for (uint32_t d = bytes->dims - 1; d-- > 0;)
        layout->stride[d] = layout->stride[d + 1] * bytes->axis[d + 1].extent;
    return 0;
}

uint32_t arraylayout_tile_bytes(const struct arraylayout *layout, uint64_t tile)
{
    uint64_t chunk[ARRAYSPEC_MAX_DIMS];
    uint64_t piece[ARRAYSPEC_MAX_DIMS];
    const struct arraylayout_grid *bytes = &layout->bytes;
    uint64_t size = 1;

    if (tile >= layout->tile_count)
        return 0;
    grid_tile_position(bytes, tile, chunk, piece);
    for (uint32_t d = 0; d < bytes->dims; d++) {
        uint64_t low, high;
        piece_box(&bytes->axis[d], chunk[d], piece[d], &low, &high);
        size *= high - low;
    }
    return (uint32_t)size;
}

int arraylayout_tile_info(const struct arraylayout *layout, uint64_t tile,
                          struct arraylayout_tile *info)
{
    const struct arraylayout_grid *grid = &layout->grid;

    if (tile >= layout->tile_count)
        return -EINVAL;
    memset(info, 0, sizeof(*info));
    grid_tile_position(grid, tile, info->chunk, info->subchunk);
    uint64_t elements = 1;
    for (uint32_t d = 0; d < grid->dims; d++) {
        uint64_t high;
        piece_box(&grid->axis[d], info->chunk[d], info->subchunk[d], &info->lower[d], &high);
        info->shape[d] = high - info->lower[d];
        elements *= info->shape[d];
    }
    info->bytes = (uint32_t)(elements * layout->spec.element_bytes);
    return 0;
}

int arraylayout_file_offset(const struct arraylayout *layout, uint64_t tile, uint32_t tile_offset,
                            uint64_t *file_offset)
{
    uint64_t chunk[ARRAYSPEC_MAX_DIMS];
    uint64_t piece[ARRAYSPEC_MAX_DIMS];
    uint64_t low[ARRAYSPEC_MAX_DIMS];
    uint64_t width[ARRAYSPEC_MAX_DIMS];
    const struct arraylayout_grid *bytes = &layout->bytes;
    uint64_t size = 1;

    if (tile >= layout->tile_count)
        return -EINVAL;
    grid_tile_position(bytes, tile, chunk, piece);
    for (uint32_t d = 0; d < bytes->dims; d++) {
        uint64_t high;
        piece_box(&bytes->axis[d], chunk[d], piece[d], &low[d], &high);
        width[d] = high - low[d];
        size *= width[d];
    }
    if (tile_offset >= size)
        return -EINVAL;
    uint64_t rest = tile_offset;
    uint64_t offset = 0;
    for (uint32_t d = bytes->dims; d-- > 0;) {
        offset += (low[d] + rest % width[d]) * layout->stride[d];
        rest /= width[d];
    }
    *file_offset = offset;
    return 0;
}

/*
 * Sets walk->tile and walk->row (the current position's row inside its
 * tile: its offset over all axes but the innermost, in innermost widths)
 * from the walk's coordinates, chunks and pieces; and what the innermost
 * axis's steps need: the first tile of the current chunk (chunk_base), the
 * product of the outer axes' piece counts in this chunk (outer_tiles) and
 * the row-major index of the outer pieces (outer_inside), so that
 * tile = chunk_base + outer_inside * P(inner, k) + piece[inner]
 * by the formula at the top of this file.
 */
static void walk_locate(struct arraylayout_walk *walk)
{
    const struct arraylayout_grid *bytes = &walk->layout->bytes;
    uint32_t inner = bytes->dims - 1;
    uint64_t row = 0, before = 0, prefix = 1, inside = 0;
    for (uint32_t d = 0; d < inner; d++) {
        const struct arraylayout_axis *axis = &bytes->axis[d];
        uint64_t pieces = chunk_pieces(axis, walk->chunk[d]);
        row = row * (walk->high[d] - walk->low[d]) + (walk->coord[d] - walk->low[d]);
        before += prefix * walk->chunk[d] * axis->pieces * bytes->after[d + 1];
        prefix *= pieces;
        inside = inside * pieces + walk->piece[d];
    }
    const struct arraylayout_axis *axis = &bytes->axis[inner];
    before += prefix * walk->chunk[inner] * axis->pieces;
    walk->row = row;
    walk->chunk_base = before;
    walk->outer_tiles = prefix;
    walk->outer_inside = inside;
    walk->tile = before + inside * chunk_pieces(axis, walk->chunk[inner]) + walk->piece[inner];
}

void arraylayout_walk_init(struct arraylayout_walk *walk, const struct arraylayout *layout,
                           uint64_t offset, uint64_t length)
{
    const struct arraylayout_grid *bytes = &layout->bytes;

    walk->layout = layout;
    walk->next_offset = offset;
    if (offset >= layout->array_bytes) {
        walk->end = offset;
        return;
    }
    walk->end = length > layout->array_bytes - offset ? layout->array_bytes : offset + length;
    uint64_t rest = offset;
    for (uint32_t d = 0; d < bytes->dims; d++) {
        const struct arraylayout_axis *axis = &bytes->axis[d];
        walk->coord[d] = rest / layout->stride[d];
        rest %= layout->stride[d];
        piece_of(axis, walk->coord[d], &walk->chunk[d], &walk->piece[d]);
        piece_box(axis, walk->chunk[d], walk->piece[d], &walk->low[d], &walk->high[d]);
    }
    walk_locate(walk);
}

/*
 * Moves the walk from the end of an innermost row of the array (coord ==
 * high == extent on the innermost axis) to the start of the next one: the
 * odometer wraps the innermost axis and carries into the outer ones, each
 * axis that moves getting its next piece; then the tile is found again.
 */
static void walk_carry(struct arraylayout_walk *walk)
{
    const struct arraylayout_grid *bytes = &walk->layout->bytes;

    for (uint32_t d = bytes->dims - 1;; d--) {
        const struct arraylayout_axis *axis = &bytes->axis[d];
        if (walk->coord[d] < walk->high[d])
            break;
        if (walk->high[d] < axis->extent) {
            if (walk->piece[d] + 1 < chunk_pieces(axis, walk->chunk[d])) {
                walk->piece[d]++;
            } else {
                walk->chunk[d]++;
                walk->piece[d] = 0;
            }
            piece_box(axis, walk->chunk[d], walk->piece[d], &walk->low[d], &walk->high[d]);
            break;
        }
        walk->coord[d] = 0;
        walk->chunk[d] = 0;
        walk->piece[d] = 0;
        piece_box(axis, 0, 0, &walk->low[d], &walk->high[d]);
        if (d == 0)
            break; /* past the array's end: only reached with the range done */
        walk->coord[d - 1]++;
    }
    walk_locate(walk);
}

/*
 * The loop behind both walk calls. The innermost axis's state lives in
 * locals, stored back on return: segments are written through a pointer the
 * compiler cannot prove apart from the walk. A step to the next piece along
 * the innermost axis keeps the row; reaching the array's extent on it is a
 * carry (walk_carry).
 */
size_t arraylayout_walk_fill(struct arraylayout_walk *walk, struct tile_segment *segments,
                             size_t cap)
{
    const struct arraylayout_grid *bytes = &walk->layout->bytes;
    const uint32_t inner = bytes->dims - 1;
    const struct arraylayout_axis *axis = &bytes->axis[inner];
    const uint64_t end = walk->end;
    uint64_t next = walk->next_offset;
    uint64_t coord = walk->coord[inner];
    uint64_t low = walk->low[inner];
    uint64_t high = walk->high[inner];
    uint64_t chunk = walk->chunk[inner];
    uint64_t piece = walk->piece[inner];
    uint64_t tile = walk->tile;
    uint64_t row = walk->row;
    uint64_t chunk_base = walk->chunk_base;
    size_t count = 0;

    while (count < cap && next < end) {
        uint64_t run = high - coord;
        if (run > end - next)
            run = end - next;
        struct tile_segment *segment = &segments[count++];
        segment->tile = tile;
        segment->tile_offset = (uint32_t)(row * (high - low) + (coord - low));
        segment->length = (uint32_t)run;
        segment->file_offset = next;
        next += run;
        coord += run;
        if (next >= end)
            break;
        if (high < axis->extent) {
            bool last = is_last_chunk(axis, chunk);
            if (piece + 1 < (last ? axis->last_pieces : axis->pieces)) {
                piece++;
                tile++;
            } else {
                /* The next chunk in row-major order: its tiles follow this
                 * (full, not last) chunk's outer_tiles * pieces ones. */
                chunk_base += walk->outer_tiles * axis->pieces;
                chunk++;
                piece = 0;
                last = is_last_chunk(axis, chunk);
                tile = chunk_base + walk->outer_inside * (last ? axis->last_pieces : axis->pieces);
            }
            uint64_t chunk_end = last ? axis->extent : (chunk + 1) * axis->chunk;
            low = high;
            high = low + (last ? axis->last_piece : axis->piece);
            if (high > chunk_end)
                high = chunk_end;
            continue;
        }
        walk->coord[inner] = coord;
        walk->high[inner] = high;
        walk_carry(walk);
        coord = walk->coord[inner];
        low = walk->low[inner];
        high = walk->high[inner];
        chunk = walk->chunk[inner];
        piece = walk->piece[inner];
        tile = walk->tile;
        row = walk->row;
        chunk_base = walk->chunk_base;
    }
    walk->next_offset = next;
    walk->coord[inner] = coord;
    walk->low[inner] = low;
    walk->high[inner] = high;
    walk->chunk[inner] = chunk;
    walk->piece[inner] = piece;
    walk->tile = tile;
    walk->row = row;
    walk->chunk_base = chunk_base;
    return count;
}

bool arraylayout_walk_next(struct arraylayout_walk *walk, struct tile_segment *segment)
{
    return arraylayout_walk_fill(walk, segment, 1) == 1;
}
