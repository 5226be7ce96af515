/*
 * Unit tests of array layouts: the text form (librarian/arrayspec.c),
 * FIND_submesh (librarian/submesh.c) and the tiling and byte mapping
 * (librarian/arraylayout.c).
 *
 * The property test checks the mapping against a reference written the
 * slow, obvious way: cut each dimension into explicit intervals, enumerate
 * the tiles chunk by chunk, and give every element of every tile its tile
 * and offset. TESSERA_TEST_SEED=<n> replays one seed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arraylayout.h"
#include "arrayspec.h"
#include "submesh.h"

#define MIB (1u << 20)
#define KIB (1u << 10)

static void layout_from_text(struct arraylayout *layout, const char *text)
{
    struct arrayspec spec;
    char message[ARRAYSPEC_MESSAGE_MAX];
    int result = arrayspec_parse(text, strlen(text), &spec, message, sizeof(message));
    if (result != 0)
        fail_msg("\"%s\": %s", text, message);
    assert_int_equal(arraylayout_init(layout, &spec, message, sizeof(message)), 0);
}

/* ---- the paper's examples ---------------------------------------------- */

/*
 * Figure 2 of seed 000: "Assume a 32 MB array is distributed across 8
 * compute nodes (4x2 mesh) with a (BLOCK, BLOCK) in-memory distribution.
 * [...] The left-hand side uses natural chunking. That is, the disk mesh is
 * 4x2 and the on-disk distribution (BLOCK, BLOCK). In this case, the size of
 * each disk chunk is 4 MB, larger than the predefined threshold (1 MB). The
 * algorithm cuts each chunk in half along both dimensions and generates 32
 * subchunks of size 1 MB."
 *
 * The paper gives no shape; the figure draws a square, and a square 32 MiB
 * array is 2048 x 2048 doubles.
 */
static void test_figure2_natural_chunking(void **state)
{
    (void)state;
    struct arraylayout layout;
    struct arraylayout_tile info;
    layout_from_text(&layout, "f64 2048x2048 BLOCK,BLOCK mesh=4x2");

    assert_int_equal(layout.array_bytes, 32 * MIB);
    assert_int_equal(layout.submesh[0], 2);
    assert_int_equal(layout.submesh[1], 2);
    assert_int_equal(arraylayout_tile_count(&layout), 32);
    for (uint64_t tile = 0; tile < 32; tile++) {
        assert_int_equal(arraylayout_tile_bytes(&layout, tile), MIB);
        assert_int_equal(arraylayout_tile_info(&layout, tile, &info), 0);
        /* Chunk-major: 4 subchunks per chunk, chunks row-major on the 4x2 mesh. */
        uint64_t chunk = tile / 4, sub = tile % 4;
        assert_int_equal(info.chunk[0], chunk / 2);
        assert_int_equal(info.chunk[1], chunk % 2);
        assert_int_equal(info.subchunk[0], sub / 2);
        assert_int_equal(info.subchunk[1], sub % 2);
        assert_int_equal(info.lower[0], (chunk / 2) * 512 + (sub / 2) * 256);
        assert_int_equal(info.lower[1], (chunk % 2) * 1024 + (sub % 2) * 512);
        assert_int_equal(info.shape[0], 256);
        assert_int_equal(info.shape[1], 512);
        assert_int_equal(info.bytes, MIB);
    }
    assert_int_equal(arraylayout_tile_info(&layout, 32, &info), -EINVAL);
    assert_int_equal(arraylayout_tile_bytes(&layout, 32), 0);
}

/*
 * Figure 2, right-hand side: "The right-hand side stores the array in
 * traditional row-major order. The disk mesh is 2 and the on-disk
 * distribution (BLOCK, *). In this case, the size of each disk chunk is
 * 16 MB, larger than 1 MB. The algorithm subdivides the chunk along the
 * first dimension (according to the distribution) four times and generates
 * 32 (1 MB) subchunks."
 */
static void test_figure2_row_major(void **state)
{
    (void)state;
    static const char *const texts[] = {"f64 2048x2048 BLOCK,* mesh=2",
                                        "f64 2048x2048 BLOCK,* mesh=2 subchunk=first"};
    for (size_t i = 0; i < 2; i++) {
        struct arraylayout layout;
        struct arraylayout_walk walk;
        struct tile_segment segment;
        layout_from_text(&layout, texts[i]);
        assert_int_equal(layout.submesh[0], 16); /* halved four times */
        assert_int_equal(layout.submesh[1], 1);
        assert_int_equal(arraylayout_tile_count(&layout), 32);
        /* Tile t is rows [64t, 64t + 64): the file in order, 1 MiB apiece. */
        arraylayout_walk_init(&walk, &layout, 0, UINT64_MAX);
        for (uint64_t tile = 0; tile < 32; tile++) {
            assert_true(arraylayout_walk_next(&walk, &segment));
            assert_int_equal(segment.tile, tile);
            assert_int_equal(segment.tile_offset, 0);
            assert_int_equal(segment.length, MIB);
            assert_int_equal(segment.file_offset, tile * MIB);
        }
        assert_false(arraylayout_walk_next(&walk, &segment));
    }
}

/* (BLOCK,*,...,*) subchunks of the natural 4x2 chunks: dimension 0 only. */
static void test_figure2_natural_first_subchunks(void **state)
{
    (void)state;
    struct arraylayout layout;
    struct arraylayout_tile info;
    layout_from_text(&layout, "f64 2048x2048 BLOCK,BLOCK mesh=4x2 subchunk=first");
    assert_int_equal(layout.submesh[0], 4);
    assert_int_equal(layout.submesh[1], 1);
    assert_int_equal(arraylayout_tile_count(&layout), 32);
    assert_int_equal(arraylayout_tile_info(&layout, 5, &info), 0);
    /* Chunk (0, 1), its second subchunk: rows 128..255, columns 1024..2047. */
    assert_int_equal(info.lower[0], 128);
    assert_int_equal(info.lower[1], 1024);
    assert_int_equal(info.shape[0], 128);
    assert_int_equal(info.shape[1], 1024);
    assert_int_equal(info.bytes, MIB);
}

/* Section 4's array: 512^3 floats, (BLOCK,BLOCK,BLOCK) on 2x2x2. */
static void test_paper_cube(void **state)
{
    (void)state;
    struct arraylayout layout;
    struct arraylayout_tile info;
    layout_from_text(&layout, "f32 512x512x512 BLOCK,BLOCK,BLOCK mesh=2x2x2");
    for (int d = 0; d < 3; d++)
        assert_int_equal(layout.submesh[d], 4);
    assert_int_equal(arraylayout_tile_count(&layout), 512);
    assert_int_equal(layout.max_tile_bytes, MIB);
    assert_int_equal(arraylayout_tile_info(&layout, 511, &info), 0);
    for (int d = 0; d < 3; d++) {
        assert_int_equal(info.lower[d], 448);
        assert_int_equal(info.shape[d], 64);
        assert_int_equal(info.chunk[d], 1);
        assert_int_equal(info.subchunk[d], 3);
    }
}

/* ---- edge chunks and FIND_submesh's corners ---------------------------- */

static void assert_axis_boxes(const char *text, const uint64_t *lower, size_t count)
{
    struct arraylayout layout;
    struct arraylayout_tile info;
    layout_from_text(&layout, text);
    assert_int_equal(arraylayout_tile_count(&layout), count);
    for (size_t tile = 0; tile < count; tile++) {
        assert_int_equal(arraylayout_tile_info(&layout, tile, &info), 0);
        assert_int_equal(info.lower[0], lower[tile]);
        assert_int_equal(info.lower[0] + info.shape[0], lower[tile + 1]);
    }
}

static void test_edge_chunks(void **state)
{
    (void)state;
    /* 10 over 4: chunks of ceil(10/4) = 3: 3,3,3,1; each cut in two by BLOCK: 2,1. */
    static const uint64_t ten[] = {0, 2, 3, 5, 6, 8, 9, 10};
    assert_axis_boxes("u8 10 BLOCK mesh=4 threshold=2", ten, 7);
    /* 5 over 4: blocks of 2: 2,2,1 — a fourth chunk would start past the end. */
    static const uint64_t five[] = {0, 2, 4, 5};
    assert_axis_boxes("u8 5 BLOCK mesh=4", five, 3);
    /* A mesh larger than the extent: one element per chunk. */
    static const uint64_t three[] = {0, 1, 2, 3};
    assert_axis_boxes("u8 3 BLOCK mesh=8", three, 3);
    /* 33 over 4: chunks 9,9,9,6; submesh 8 (9 -> 5 -> 3 -> 2 elements) cuts the
     * full chunks into 2,2,2,2,1 and the last into six 1s: a thicker slab. */
    static const uint64_t thirty_three[] = {0,  2,  4,  6,  8,  9,  11, 13, 15, 17, 18,
                                            20, 22, 24, 26, 27, 28, 29, 30, 31, 32, 33};
    assert_axis_boxes("u8 33 BLOCK mesh=4 threshold=2", thirty_three, 21);
    /* 7 elements of 16 bytes, threshold 48: chunk 7 -> 4 -> 2 elements. */
    static const uint64_t seven[] = {0, 2, 4, 6, 7};
    assert_axis_boxes("c128 7 BLOCK mesh=1 threshold=48", seven, 4);
}

static void test_submesh_corners(void **state)
{
    (void)state;
    uint64_t submesh[3];
    uint64_t extent[3] = {4, 1000, 3};
    bool split[3] = {true, false, false};
    /* Dimension 0 runs out at 1 element (16000 bytes left): the fallback
     * halves dimension 1, the outermost wider than one element, 4 times. */
    assert_int_equal(submesh_find(3, extent, split, 4, 1000, submesh), 63 * 3 * 4);
    assert_int_equal(submesh[0], 4);
    assert_int_equal(submesh[1], 16);
    assert_int_equal(submesh[2], 1);
    /* Nothing may be split (all '*'): the same fallback, not one 12000-byte tile. */
    bool none[3] = {false, false, false};
    assert_int_equal(submesh_find(3, extent, none, 1, 1000, submesh), 1 * 250 * 3);
    assert_int_equal(submesh[0], 4);
    assert_int_equal(submesh[1], 4);
    /* Under the threshold already: untouched. */
    assert_int_equal(submesh_find(3, extent, split, 1, 12000, submesh), 12000);
    assert_int_equal(submesh[0] * submesh[1] * submesh[2], 1);
    /* Threshold of one element: everything down to single elements. */
    assert_int_equal(submesh_find(3, extent, split, 8, 8, submesh), 8);
}

/* All '*' still gets tiles under the threshold, cut across rows. */
static void test_no_distribution(void **state)
{
    (void)state;
    struct arraylayout layout;
    struct arraylayout_walk walk;
    struct tile_segment segment;
    layout_from_text(&layout, "u16 100x30 *,* threshold=1000");
    /* 100 rows of 60 bytes; halving rows: 100 -> 50 -> 25 -> 13 rows = 780 bytes. */
    assert_int_equal(layout.submesh[0], 8);
    assert_int_equal(arraylayout_tile_count(&layout), 8);
    assert_int_equal(arraylayout_tile_bytes(&layout, 7), 9 * 60);
    /* Whole rows: tiles are consecutive runs of the file. */
    arraylayout_walk_init(&walk, &layout, 0, 6000);
    for (uint64_t tile = 0; tile < 8; tile++) {
        assert_true(arraylayout_walk_next(&walk, &segment));
        assert_int_equal(segment.tile, tile);
        assert_int_equal(segment.file_offset, tile * 780);
    }
    assert_false(arraylayout_walk_next(&walk, &segment));
}

/* A small 2-D case checked by hand, with an unaligned range. */
static void test_walk_by_hand(void **state)
{
    (void)state;
    struct arraylayout layout;
    struct arraylayout_walk walk;
    struct tile_segment segment;
    uint64_t file_offset;
    /* 4x6 i16 (12-byte rows) on a 2x2 mesh: four 2x3 tiles of 12 bytes. */
    layout_from_text(&layout, "i16 4x6 BLOCK,BLOCK mesh=2x2 threshold=12");
    assert_int_equal(arraylayout_tile_count(&layout), 4);
    /* Bytes 5..29: row 0 from the middle of element 2, row 1, row 2 start. */
    arraylayout_walk_init(&walk, &layout, 5, 25);
    const struct tile_segment expected[] = {
        {0, 5, 1, 5},  /* row 0, second byte of element 2: tile 0 */
        {1, 0, 6, 6},  /* row 0, elements 3..5: tile 1 */
        {0, 6, 6, 12}, /* row 1, elements 0..2: tile 0 */
        {1, 6, 6, 18}, /* row 1, elements 3..5: tile 1 */
        {2, 0, 6, 24}, /* row 2, elements 0..2: tile 2 (chunk (1,0)) */
    };
    for (size_t i = 0; i < 5; i++) {
        assert_true(arraylayout_walk_next(&walk, &segment));
        assert_int_equal(segment.tile, expected[i].tile);
        assert_int_equal(segment.tile_offset, expected[i].tile_offset);
        assert_int_equal(segment.length, expected[i].length);
        assert_int_equal(segment.file_offset, expected[i].file_offset);
    }
    assert_false(arraylayout_walk_next(&walk, &segment));

    assert_int_equal(arraylayout_file_offset(&layout, 3, 7, &file_offset), 0);
    assert_int_equal(file_offset, 2 * 12 + 6 + 12 + 1); /* row 3, element 3, byte 1 */
    assert_int_equal(arraylayout_file_offset(&layout, 3, 12, &file_offset), -EINVAL);
    assert_int_equal(arraylayout_file_offset(&layout, 4, 0, &file_offset), -EINVAL);

    /* Past the end: clamped; at or after it: nothing. */
    arraylayout_walk_init(&walk, &layout, 46, 100);
    assert_true(arraylayout_walk_next(&walk, &segment));
    assert_int_equal(segment.tile, 3);
    assert_int_equal(segment.tile_offset, 10);
    assert_int_equal(segment.length, 2);
    assert_false(arraylayout_walk_next(&walk, &segment));
    arraylayout_walk_init(&walk, &layout, 48, 1);
    assert_false(arraylayout_walk_next(&walk, &segment));
    arraylayout_walk_init(&walk, &layout, UINT64_MAX, UINT64_MAX);
    assert_false(arraylayout_walk_next(&walk, &segment));
    arraylayout_walk_init(&walk, &layout, 3, 0);
    assert_false(arraylayout_walk_next(&walk, &segment));
}

/* ---- the text form ------------------------------------------------------ */

static void test_parse_good(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *canonical;
    } cases[] = {
        {"f32 512x512x512 BLOCK,BLOCK,BLOCK mesh=2x2x2",
         "f32 512x512x512 BLOCK,BLOCK,BLOCK mesh=2x2x2 subchunk=same threshold=1M"},
        {"  u8 10 * \n", "u8 10 * subchunk=same threshold=1M"},
        {"c128 3x4x5 block,*,Block threshold=64K subchunk=first mesh=3x2",
         "c128 3x4x5 BLOCK,*,BLOCK mesh=3x2 subchunk=first threshold=64K"},
        {"b12 7x9 *,BLOCK mesh=4 threshold=100",
         "b12 7x9 *,BLOCK mesh=4 subchunk=same threshold=100"},
        {"b1\t1x2x3x4x5x6x7x8 BLOCK,*,*,*,*,*,*,BLOCK mesh=1x8 threshold=1MiB",
         "b1 1x2x3x4x5x6x7x8 BLOCK,*,*,*,*,*,*,BLOCK mesh=1x8 subchunk=same threshold=1M"},
        {"f64 2048x2048 BLOCK,* mesh=2 threshold=1G",
         "f64 2048x2048 BLOCK,* mesh=2 subchunk=same threshold=1G"},
        {"i16 4 BLOCK mesh=4294967295 threshold=2", "i16 4 BLOCK mesh=4294967295 "
                                                    "subchunk=same threshold=2"},
        {"u64 1073741823x1073741823 *,* threshold=1536",
         "u64 1073741823x1073741823 *,* subchunk=same threshold=1536"},
        {"i8 1 *", "i8 1 * subchunk=same threshold=1M"},
        {"u16 1 *", "u16 1 * subchunk=same threshold=1M"},
        {"i32 1 *", "i32 1 * subchunk=same threshold=1M"},
        {"u32 1 *", "u32 1 * subchunk=same threshold=1M"},
        {"i64 1 *", "i64 1 * subchunk=same threshold=1M"},
        {"c64 1 * threshold=8", "c64 1 * subchunk=same threshold=8"},
        {"b16 2 * threshold=16", "b16 2 * subchunk=same threshold=16"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct arrayspec spec, again;
        char message[ARRAYSPEC_MESSAGE_MAX];
        char text[ARRAYSPEC_TEXT_MAX];
        int result =
            arrayspec_parse(cases[i].text, strlen(cases[i].text), &spec, message, sizeof(message));
        if (result != 0)
            fail_msg("\"%s\" refused: %s", cases[i].text, message);
        result = arrayspec_format(&spec, text, sizeof(text));
        assert_int_equal(result, (int)strlen(cases[i].canonical));
        assert_string_equal(text, cases[i].canonical);
        /* The canonical form parses back to the same spec. */
        assert_int_equal(arrayspec_parse(text, strlen(text), &again, message, sizeof(message)), 0);
        assert_memory_equal(&spec, &again, sizeof(spec));
        /* Too small a buffer: -ENOSPC, empty string. */
        assert_int_equal(arrayspec_format(&spec, text, strlen(cases[i].canonical)), -ENOSPC);
        assert_string_equal(text, "");
    }
}

static void test_parse_bad(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *message;
    } cases[] = {
        {"", "empty array layout: expected e.g. \"f32 512x512 BLOCK,BLOCK mesh=2x2\""},
        {" \t ", "empty array layout: expected e.g. \"f32 512x512 BLOCK,BLOCK mesh=2x2\""},
        {"f31 4 *", "unknown element type \"f31\": expected i8 u8 i16 u16 i32 u32 f32 i64 u64 "
                    "f64 c64 c128 or b1..b16"},
        {"F32 4 *", "unknown element type \"F32\": expected i8 u8 i16 u16 i32 u32 f32 i64 u64 "
                    "f64 c64 c128 or b1..b16"},
        {"b0 4 *", "element \"b0\": raw elements are b1..b16 (1 to 16 bytes)"},
        {"b17 4 *", "element \"b17\": raw elements are b1..b16 (1 to 16 bytes)"},
        {"b4x 4 *", "element \"b4x\": raw elements are b1..b16 (1 to 16 bytes)"},
        {"f32", "missing the shape after \"f32\" (extents joined by x, e.g. 512x512)"},
        {"f32 512", "missing the distribution after \"512\" (BLOCK or * per dimension, joined "
                    "by commas, e.g. BLOCK,*)"},
        {"f32 512x0 *,*", "shape \"512x0\": dimension 1 \"0\" is not a positive integer"},
        {"f32 512xx2 *,*,*", "shape \"512xx2\": dimension 1 \"\" is not a positive integer"},
        {"f32 -5 *", "shape \"-5\": dimension 0 \"-5\" is not a positive integer"},
        {"f32 +5 *", "shape \"+5\": dimension 0 \"+5\" is not a positive integer"},
        {"f32 18446744073709551616 *",
         "shape \"18446744073709551616\": dimension 0 \"18446744073709551616\" is not a "
         "positive integer"},
        {"f32 1x1x1x1x1x1x1x1x1 *", "shape \"1x1x1x1x1x1x1x1x1\" has more than 8 dimensions"},
        {"f32 4x4 BLOCK", "distribution \"BLOCK\" has 1 entry but the shape has 2 dimensions"},
        {"f32 4x4 BLOCK,*,*",
         "distribution \"BLOCK,*,*\" has more entries than the shape's 2 dimensions"},
        {"f32 4x4 BLOK,*", "distribution entry 0 \"BLOK\": expected BLOCK or *"},
        {"f32 4x4 BLOCK,", "distribution entry 1 \"\": expected BLOCK or *"},
        {"f32 4x4 BLOCK,BLOCK mesh=2x2x2",
         "mesh has 3 entries but the distribution has 2 BLOCK dimensions"},
        {"f32 4x4x4 BLOCK,*,* mesh=2x2",
         "mesh has 2 entries but the distribution has 1 BLOCK dimension"},
        {"f32 4x4 BLOCK,BLOCK", "missing mesh= with one count per BLOCK dimension (2 here)"},
        {"f32 4x4 *,* mesh=2", "mesh=2 given but the distribution has no BLOCK dimension to "
                               "spread"},
        {"f32 4x4 BLOCK,* mesh=0", "mesh \"0\": entry 0 \"0\" is not an integer in 1..4294967295"},
        {"f32 4x4 BLOCK,* mesh=4294967296",
         "mesh \"4294967296\": entry 0 \"4294967296\" is not an integer in 1..4294967295"},
        {"f32 4x4 BLOCK,* mesh=2,2", "mesh \"2,2\": entry 0 \"2,2\" is not an integer in "
                                     "1..4294967295"},
        {"f32 4x4 BLOCK,* mesh=2 mesh=2", "option mesh= given twice"},
        {"f32 4x4 BLOCK,* mesh=2 subchunk=natural", "subchunk \"natural\": expected same or first"},
        {"f32 4x4 BLOCK,* mesh=2 threshold=2", "threshold 2 is smaller than one element (4 "
                                               "bytes)"},
        {"f32 4x4 BLOCK,* mesh=2 threshold=2G", "threshold 2G is above the limit of 1G"},
        {"f32 4x4 BLOCK,* mesh=2 threshold=1Q",
         "threshold \"1Q\": expected a size such as 4096, 64K or 1M"},
        {"f32 4x4 BLOCK,* mesh=2 threshold=-1",
         "threshold \"-1\": expected a size such as 4096, 64K or 1M"},
        {"f32 4x4 BLOCK,* mesh=2 threshold=", "option threshold= has no value"},
        {"f32 4x4 BLOCK,* mesh=2 color=red",
         "unexpected \"color=red\": expected an option mesh=, subchunk= or threshold="},
        {"f32 4x4 BLOCK,* mesh=2 mesh",
         "unexpected \"mesh\": expected an option mesh=, subchunk= or threshold="},
        {"f32 4x4 BLOCK,* mesh = 2",
         "unexpected \"mesh\": expected an option mesh=, subchunk= or threshold="},
        {"u64 4294967296x4294967296 *,*", "the array holds more than 9223372036854775807 "
                                          "bytes"},
        {"u8 a b c d e f g h i j k l m n o p q",
         "too many tokens: expected an element, a shape, a distribution and up to 3 options"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct arrayspec spec;
        char message[ARRAYSPEC_MESSAGE_MAX];
        int result =
            arrayspec_parse(cases[i].text, strlen(cases[i].text), &spec, message, sizeof(message));
        if (result != -EINVAL || strcmp(message, cases[i].message) != 0)
            fail_msg("\"%s\": got %d \"%s\", expected \"%s\"", cases[i].text, result, message,
                     cases[i].message);
    }
}

static void test_parse_raw_bytes(void **state)
{
    (void)state;
    struct arrayspec spec;
    char message[ARRAYSPEC_MESSAGE_MAX];
    char text[ARRAYSPEC_TEXT_MAX + 2];

    /* Not NUL-terminated: only len bytes count. */
    assert_int_equal(
        arrayspec_parse("u8 4 * threshold=1Mjunk", 19, &spec, message, sizeof(message)), 0);
    assert_int_equal(spec.threshold, MIB);
    assert_int_equal(arrayspec_parse("u8 4\0 *", 7, &spec, message, sizeof(message)), -EINVAL);
    assert_string_equal(message, "array layout text contains a NUL byte");
    memset(text, ' ', sizeof(text));
    memcpy(text, "u8 4 *", 6);
    assert_int_equal(arrayspec_parse(text, ARRAYSPEC_TEXT_MAX, &spec, message, sizeof(message)), 0);
    assert_int_equal(arrayspec_parse(text, ARRAYSPEC_TEXT_MAX + 1, &spec, message, sizeof(message)),
                     -EINVAL);
    assert_string_equal(message, "array layout text is longer than 512 bytes");
    /* A short message buffer truncates; none at all is allowed. */
    assert_int_equal(arrayspec_parse("f31 4 *", 7, &spec, message, 8), -EINVAL);
    assert_string_equal(message, "unknown");
    assert_int_equal(arrayspec_parse("f31 4 *", 7, &spec, NULL, 0), -EINVAL);
}

static void test_check_built_spec(void **state)
{
    (void)state;
    char message[ARRAYSPEC_MESSAGE_MAX];
    struct arraylayout layout;
    struct arrayspec spec = {.type = ARRAYSPEC_F32,
                             .element_bytes = 4,
                             .ndims = 2,
                             .extent = {8, 8},
                             .dist = {ARRAYSPEC_BLOCK, ARRAYSPEC_NONE},
                             .mesh = {2, 1},
                             .subchunk = ARRAYSPEC_SUBCHUNK_SAME,
                             .threshold = 64};
    assert_int_equal(arrayspec_check(&spec, message, sizeof(message)), 0);
    assert_int_equal(arraylayout_init(&layout, &spec, message, sizeof(message)), 0);
    spec.element_bytes = 8;
    assert_int_equal(arrayspec_check(&spec, message, sizeof(message)), -EINVAL);
    assert_string_equal(message, "element type f32 has 4 bytes, not 8");
    assert_int_equal(arraylayout_init(&layout, &spec, message, sizeof(message)), -EINVAL);
    spec.element_bytes = 4;
    spec.mesh[1] = 3;
    assert_int_equal(arrayspec_check(&spec, message, sizeof(message)), -EINVAL);
    assert_string_equal(message, "dimension 1: distribution * but mesh count 3 (must be 1)");
    spec.mesh[1] = 1;
    spec.ndims = 9;
    assert_int_equal(arrayspec_check(&spec, message, sizeof(message)), -EINVAL);
    assert_string_equal(message, "9 dimensions: an array has 1 to 8");
    spec.ndims = 2;
    spec.extent[1] = 0;
    assert_int_equal(arrayspec_check(&spec, message, sizeof(message)), -EINVAL);
    assert_string_equal(message, "dimension 1: extent 0; extents are at least 1");
    char text[ARRAYSPEC_TEXT_MAX];
    assert_int_equal(arrayspec_format(&spec, text, sizeof(text)), -EINVAL);
}

/* ---- the randomized property test -------------------------------------- */

/* splitmix64: small, good enough, and the same everywhere. */
static uint64_t random_next(uint64_t *seed)
{
    uint64_t z = (*seed += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [low, high]. */
static uint64_t random_between(uint64_t *seed, uint64_t low, uint64_t high)
{
    return low + random_next(seed) % (high - low + 1);
}

#define REF_MAX_ELEMENTS 6000
#define REF_MAX_PIECES 64 /* per dimension: extents stay below this */

/* One dimension cut into explicit intervals, the slow way. */
struct ref_axis {
    size_t chunks;
    size_t pieces_in[REF_MAX_PIECES]; /* per chunk */
    uint64_t low[REF_MAX_PIECES][REF_MAX_PIECES];
    uint64_t high[REF_MAX_PIECES][REF_MAX_PIECES];
};

struct ref {
    uint64_t elements;
    uint32_t element_bytes;
    uint64_t tile_count;
    uint64_t submesh[ARRAYSPEC_MAX_DIMS];
    struct ref_axis axis[ARRAYSPEC_MAX_DIMS];
    uint64_t tile_of[REF_MAX_ELEMENTS];   /* per element */
    uint64_t offset_of[REF_MAX_ELEMENTS]; /* element's index inside its tile */
    uint64_t tile_elements[REF_MAX_ELEMENTS];
    struct arraylayout_tile tile_info[REF_MAX_ELEMENTS];
};

struct property_state {
    struct ref ref;
    uint64_t seed;
};

static int property_setup(void **state)
{
    struct property_state *property = calloc(1, sizeof(*property));
    if (!property)
        return -1;
    const char *seed = getenv("TESSERA_TEST_SEED");
    property->seed = seed ? strtoull(seed, NULL, 10) : 20240605;
    *state = property;
    return 0;
}

static int property_teardown(void **state)
{
    free(*state);
    return 0;
}

/* FIND_submesh as the paper writes it, plus the documented fallback. */
static void ref_submesh(const struct arrayspec *spec, uint64_t *submesh)
{
    uint64_t chunk[ARRAYSPEC_MAX_DIMS];
    bool split[ARRAYSPEC_MAX_DIMS];
    uint32_t n = spec->ndims;
    for (uint32_t d = 0; d < n; d++) {
        chunk[d] = (spec->extent[d] + spec->mesh[d] - 1) / spec->mesh[d];
        split[d] =
            spec->subchunk == ARRAYSPEC_SUBCHUNK_FIRST ? d == 0 : spec->dist[d] == ARRAYSPEC_BLOCK;
        submesh[d] = 1;
    }
#define REF_SIZE(out)                                                                              \
    do {                                                                                           \
        out = spec->element_bytes;                                                                 \
        for (uint32_t e = 0; e < n; e++)                                                           \
            out *= (chunk[e] + submesh[e] - 1) / submesh[e];                                       \
    } while (0)
    uint64_t size;
    REF_SIZE(size);
    bool progress = true;
    while (size > spec->threshold && progress) {
        progress = false;
        for (uint32_t i = 0; i < n && size > spec->threshold; i++) {
            if (split[i] && (chunk[i] + submesh[i] - 1) / submesh[i] > 1) {
                submesh[i] *= 2;
                REF_SIZE(size);
                progress = true;
            }
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        while (size > spec->threshold && (chunk[i] + submesh[i] - 1) / submesh[i] > 1) {
            submesh[i] *= 2;
            REF_SIZE(size);
        }
    }
#undef REF_SIZE
}

static void ref_build(struct ref *ref, const struct arrayspec *spec)
{
    uint32_t n = spec->ndims;
    ref->element_bytes = spec->element_bytes;
    ref->elements = 1;
    for (uint32_t d = 0; d < n; d++)
        ref->elements *= spec->extent[d];
    ref_submesh(spec, ref->submesh);

    /* Intervals: chunks of ceil(n/p) from 0 while they start inside; each
     * chunk cut into pieces of ceil(c/s) while they start inside it. */
    for (uint32_t d = 0; d < n; d++) {
        struct ref_axis *axis = &ref->axis[d];
        uint64_t extent = spec->extent[d];
        uint64_t block = (extent + spec->mesh[d] - 1) / spec->mesh[d];
        axis->chunks = 0;
        for (uint64_t start = 0; start < extent; start += block) {
            uint64_t end = start + block < extent ? start + block : extent;
            uint64_t width = (end - start + ref->submesh[d] - 1) / ref->submesh[d];
            size_t pieces = 0;
            for (uint64_t low = start; low < end; low += width) {
                axis->low[axis->chunks][pieces] = low;
                axis->high[axis->chunks][pieces] = low + width < end ? low + width : end;
                pieces++;
            }
            axis->pieces_in[axis->chunks++] = pieces;
        }
    }

    /* Tiles chunk by chunk (row-major chunk positions), pieces row-major inside. */
    uint64_t chunk[ARRAYSPEC_MAX_DIMS] = {0};
    uint64_t tile = 0;
    for (;;) {
        uint64_t piece[ARRAYSPEC_MAX_DIMS] = {0};
        for (;;) {
            struct arraylayout_tile *info = &ref->tile_info[tile];
            memset(info, 0, sizeof(*info));
            uint64_t elements = 1;
            for (uint32_t d = 0; d < n; d++) {
                info->chunk[d] = chunk[d];
                info->subchunk[d] = piece[d];
                info->lower[d] = ref->axis[d].low[chunk[d]][piece[d]];
                info->shape[d] = ref->axis[d].high[chunk[d]][piece[d]] - info->lower[d];
                elements *= info->shape[d];
            }
            info->bytes = (uint32_t)(elements * spec->element_bytes);
            ref->tile_elements[tile] = elements;
            /* Every element of the box, row-major inside the tile. */
            for (uint64_t local = 0; local < elements; local++) {
                uint64_t rest = local, flat = 0, stride = 1;
                for (uint32_t d = n; d-- > 0;) {
                    uint64_t x = info->lower[d] + rest % info->shape[d];
                    rest /= info->shape[d];
                    flat += x * stride;
                    stride *= spec->extent[d];
                }
                ref->tile_of[flat] = tile;
                ref->offset_of[flat] = local;
            }
            tile++;
            uint32_t d = n;
            while (d-- > 0) {
                if (++piece[d] < ref->axis[d].pieces_in[chunk[d]])
                    break;
                piece[d] = 0;
            }
            if (d == UINT32_MAX)
                break;
        }
        uint32_t d = n;
        while (d-- > 0) {
            if (++chunk[d] < ref->axis[d].chunks)
                break;
            chunk[d] = 0;
        }
        if (d == UINT32_MAX)
            break;
    }
    ref->tile_count = tile;
}

static void random_spec(uint64_t *seed, struct arrayspec *spec)
{
    static const enum arrayspec_type types[] = {ARRAYSPEC_RAW, ARRAYSPEC_I8,  ARRAYSPEC_U16,
                                                ARRAYSPEC_F32, ARRAYSPEC_I32, ARRAYSPEC_F64,
                                                ARRAYSPEC_C64, ARRAYSPEC_C128};
    memset(spec, 0, sizeof(*spec));
    spec->type = types[random_between(seed, 0, 7)];
    spec->element_bytes = spec->type == ARRAYSPEC_RAW ? (uint32_t)random_between(seed, 1, 16)
                                                      : arrayspec_type_bytes(spec->type);
    spec->ndims = (uint32_t)random_between(seed, 1, ARRAYSPEC_MAX_DIMS);
    uint64_t elements;
    do {
        elements = 1;
        for (uint32_t d = 0; d < spec->ndims; d++) {
            /* Many dimensions: small extents, some 1s; few: up to 60. */
            uint64_t max = spec->ndims <= 2 ? 60 : spec->ndims <= 4 ? 9 : 4;
            spec->extent[d] = random_between(seed, 1, max);
            elements *= spec->extent[d];
        }
    } while (elements > REF_MAX_ELEMENTS);
    for (uint32_t d = 0; d < spec->ndims; d++) {
        spec->dist[d] = random_between(seed, 0, 2) ? ARRAYSPEC_BLOCK : ARRAYSPEC_NONE;
        /* Small meshes (big chunks to subchunk, uneven edges) and meshes up
         * to a little past the extent (chunks that must vanish). */
        uint64_t mesh_max = random_between(seed, 0, 1) ? 4 : spec->extent[d] + 2;
        spec->mesh[d] = spec->dist[d] == ARRAYSPEC_BLOCK ? random_between(seed, 1, mesh_max) : 1;
    }
    spec->subchunk =
        random_between(seed, 0, 3) ? ARRAYSPEC_SUBCHUNK_SAME : ARRAYSPEC_SUBCHUNK_FIRST;
    uint64_t bytes = elements * spec->element_bytes;
    switch (random_between(seed, 0, 5)) {
    case 0: spec->threshold = ARRAYSPEC_DEFAULT_THRESHOLD; break;
    case 1: spec->threshold = spec->element_bytes; break;
    default: {
        /* Log-uniform between one element and the whole array. */
        uint64_t high = bytes > spec->element_bytes ? bytes : spec->element_bytes;
        uint64_t threshold = spec->element_bytes;
        uint64_t doublings = random_between(seed, 0, 20);
        while (doublings-- > 0 && threshold * 2 <= high)
            threshold *= 2;
        threshold += random_between(seed, 0, threshold);
        spec->threshold = (uint32_t)threshold;
    }
    }
}

static void check_range(const struct arraylayout *layout, const struct ref *ref, uint64_t offset,
                        uint64_t length, const char *text)
{
    struct arraylayout_walk walk;
    struct tile_segment segment, previous = {0};
    uint64_t array_bytes = ref->elements * ref->element_bytes;
    uint64_t expected_end = offset >= array_bytes
                                ? offset
                                : (length > array_bytes - offset ? array_bytes : offset + length);
    uint64_t position = offset;
    size_t count = 0;

    arraylayout_walk_init(&walk, layout, offset, length);
    while (arraylayout_walk_next(&walk, &segment)) {
        if (segment.file_offset != position || segment.length == 0)
            fail_msg("%s: range %llu+%llu: segment %zu at %llu length %u, expected at %llu", text,
                     (unsigned long long)offset, (unsigned long long)length, count,
                     (unsigned long long)segment.file_offset, segment.length,
                     (unsigned long long)position);
        for (uint32_t i = 0; i < segment.length; i++) {
            uint64_t byte = segment.file_offset + i;
            uint64_t element = byte / ref->element_bytes;
            uint64_t tile = ref->tile_of[element];
            uint64_t tile_offset =
                ref->offset_of[element] * ref->element_bytes + byte % ref->element_bytes;
            if (segment.tile != tile || segment.tile_offset + i != tile_offset)
                fail_msg("%s: byte %llu mapped to tile %llu offset %llu, reference says tile "
                         "%llu offset %llu",
                         text, (unsigned long long)byte, (unsigned long long)segment.tile,
                         (unsigned long long)(segment.tile_offset + i), (unsigned long long)tile,
                         (unsigned long long)tile_offset);
        }
        /* Maximal: a segment never continues its predecessor. */
        if (count > 0 && segment.tile == previous.tile &&
            segment.tile_offset == previous.tile_offset + previous.length)
            fail_msg("%s: segment %zu (tile %llu offset %u) continues the one before", text, count,
                     (unsigned long long)segment.tile, segment.tile_offset);
        previous = segment;
        position += segment.length;
        count++;
    }
    if (position != expected_end)
        fail_msg("%s: range %llu+%llu ended at %llu, expected %llu", text,
                 (unsigned long long)offset, (unsigned long long)length,
                 (unsigned long long)position, (unsigned long long)expected_end);
}

/* Batches of a few segments reproduce the one-by-one walk. */
static void check_fill(const struct arraylayout *layout, uint64_t offset, uint64_t length,
                       size_t cap)
{
    struct arraylayout_walk one, batch;
    struct tile_segment segment, segments[7];
    size_t got;
    arraylayout_walk_init(&one, layout, offset, length);
    arraylayout_walk_init(&batch, layout, offset, length);
    while ((got = arraylayout_walk_fill(&batch, segments, cap)) > 0) {
        for (size_t i = 0; i < got; i++) {
            assert_true(arraylayout_walk_next(&one, &segment));
            assert_memory_equal(&segment, &segments[i], sizeof(segment));
        }
    }
    assert_false(arraylayout_walk_next(&one, &segment));
}

/* How often the generated layouts hit the cases worth testing. */
struct coverage {
    int layouts;
    int subchunked;      /* several tiles, each at most half the threshold */
    int multi_dim_tiles; /* tiles cut along two or more dimensions */
    int fewer_chunks;    /* a dimension with fewer chunks than its mesh count */
    int thick_last;      /* a last chunk cut into more pieces than a full one */
    int fallback;        /* FIND_submesh cut a dimension the subchunk shape keeps whole */
};

static void count_coverage(const struct arraylayout *layout, struct coverage *coverage)
{
    const struct arrayspec *spec = &layout->spec;
    int tiled_dims = 0;
    bool fewer = false, thick = false, fallback = false;
    for (uint32_t d = 0; d < spec->ndims; d++) {
        const struct arraylayout_axis *axis = &layout->grid.axis[d];
        bool split =
            spec->subchunk == ARRAYSPEC_SUBCHUNK_FIRST ? d == 0 : spec->dist[d] == ARRAYSPEC_BLOCK;
        tiled_dims += axis->total > 1;
        fewer |= axis->chunks < spec->mesh[d];
        thick |= axis->chunks > 1 && axis->last_pieces > axis->pieces;
        fallback |= !split && layout->submesh[d] > 1;
    }
    coverage->layouts++;
    coverage->subchunked += layout->tile_count > 1 && layout->max_tile_bytes <= spec->threshold / 2;
    coverage->multi_dim_tiles += tiled_dims >= 2;
    coverage->fewer_chunks += fewer;
    coverage->thick_last += thick;
    coverage->fallback += fallback;
}

static void print_coverage(const char *what, const struct coverage *coverage)
{
    printf("# %s: %d layouts, %d subchunked, %d tiled in 2+ dimensions, %d with fewer chunks "
           "than mesh, %d with a thicker last chunk, %d cut past the subchunk shape\n",
           what, coverage->layouts, coverage->subchunked, coverage->multi_dim_tiles,
           coverage->fewer_chunks, coverage->thick_last, coverage->fallback);
}

/*
 * Checks one layout against the reference: submesh, tile count, every
 * tile's box, size and inverse mapping byte by byte, then the forward
 * mapping of the whole file and of `ranges` random ranges (some unaligned,
 * some past the end, one unbounded), and batched walks.
 */
static void check_layout(struct ref *ref, const struct arrayspec *spec, uint64_t *seed, int ranges,
                         struct coverage *coverage)
{
    struct arraylayout layout;
    char text[ARRAYSPEC_TEXT_MAX];
    char message[ARRAYSPEC_MESSAGE_MAX];
    uint64_t ignored;

    assert_true(arrayspec_format(spec, text, sizeof(text)) > 0);
    if (arraylayout_init(&layout, spec, message, sizeof(message)) != 0)
        fail_msg("%s: %s", text, message);
    ref_build(ref, spec);
    count_coverage(&layout, coverage);

    for (uint32_t d = 0; d < spec->ndims; d++) {
        if (layout.submesh[d] != ref->submesh[d])
            fail_msg("%s: submesh[%u] = %llu, reference %llu", text, d,
                     (unsigned long long)layout.submesh[d], (unsigned long long)ref->submesh[d]);
    }
    if (arraylayout_tile_count(&layout) != ref->tile_count)
        fail_msg("%s: %llu tiles, reference %llu", text,
                 (unsigned long long)arraylayout_tile_count(&layout),
                 (unsigned long long)ref->tile_count);
    uint32_t largest = 0;
    for (uint64_t tile = 0; tile < ref->tile_count; tile++) {
        struct arraylayout_tile info;
        assert_int_equal(arraylayout_tile_info(&layout, tile, &info), 0);
        if (memcmp(&info, &ref->tile_info[tile], sizeof(info)) != 0)
            fail_msg("%s: tile %llu box differs from the reference", text,
                     (unsigned long long)tile);
        uint32_t bytes = arraylayout_tile_bytes(&layout, tile);
        assert_int_equal(bytes, ref->tile_elements[tile] * spec->element_bytes);
        assert_true(bytes <= spec->threshold);
        if (bytes > largest)
            largest = bytes;
        /* Inverse mapping, byte by byte, and one past the tile. */
        for (uint32_t offset = 0; offset < bytes; offset++) {
            uint64_t file_offset;
            assert_int_equal(arraylayout_file_offset(&layout, tile, offset, &file_offset), 0);
            uint64_t element = file_offset / spec->element_bytes;
            uint64_t back =
                ref->offset_of[element] * spec->element_bytes + file_offset % spec->element_bytes;
            if (ref->tile_of[element] != tile || back != offset)
                fail_msg("%s: tile %llu offset %u maps back to file offset %llu", text,
                         (unsigned long long)tile, offset, (unsigned long long)file_offset);
        }
        assert_int_equal(arraylayout_file_offset(&layout, tile, bytes, &ignored), -EINVAL);
    }
    assert_int_equal(largest, layout.max_tile_bytes);
    assert_int_equal(arraylayout_file_offset(&layout, ref->tile_count, 0, &ignored), -EINVAL);

    uint64_t array_bytes = layout.array_bytes;
    check_range(&layout, ref, 0, array_bytes, text);
    for (int i = 0; i < ranges; i++) {
        uint64_t offset = random_between(seed, 0, array_bytes);
        uint64_t length = random_between(seed, 0, array_bytes - offset + 3);
        if (i == 0)
            length = UINT64_MAX;
        check_range(&layout, ref, offset, length, text);
    }
    check_fill(&layout, random_between(seed, 0, array_bytes), array_bytes,
               (size_t)random_between(seed, 1, 7));
}

static void test_property_against_reference(void **state)
{
    struct property_state *property = *state;
    struct coverage coverage = {0};
    uint64_t seed = property->seed;
    char what[64];

    for (int round = 0; round < 3000; round++) {
        struct arrayspec spec;
        random_spec(&seed, &spec);
        check_layout(&property->ref, &spec, &seed, 8, &coverage);
    }
    snprintf(what, sizeof(what), "random, seed %llu", (unsigned long long)property->seed);
    print_coverage(what, &coverage);
    assert_true(coverage.subchunked > 100 && coverage.multi_dim_tiles > 100);
    assert_true(coverage.fewer_chunks > 100 && coverage.fallback > 100);
}

/*
 * Every small 1-D and a grid of 2-D layouts: uneven edges in all their
 * forms, including the rare thicker last chunk random shapes seldom hit.
 */
static void test_sweep_against_reference(void **state)
{
    struct property_state *property = *state;
    struct coverage coverage = {0};
    uint64_t seed = property->seed;
    static const uint64_t rows[] = {5, 9, 13, 33};
    static const uint64_t columns[] = {3, 10, 33};

    for (uint64_t extent = 1; extent <= 40; extent++) {
        for (uint64_t mesh = 1; mesh <= 6; mesh++) {
            for (uint32_t threshold = 1; threshold <= extent; threshold++) {
                struct arrayspec spec = {.type = ARRAYSPEC_U8,
                                         .element_bytes = 1,
                                         .ndims = 1,
                                         .extent = {extent},
                                         .dist = {ARRAYSPEC_BLOCK},
                                         .mesh = {mesh},
                                         .threshold = threshold};
                check_layout(&property->ref, &spec, &seed, 2, &coverage);
            }
        }
    }
    for (size_t r = 0; r < 4; r++) {
        for (size_t c = 0; c < 3; c++) {
            for (uint64_t mesh = 1; mesh <= 25; mesh++) {
                for (uint32_t threshold = 2; threshold <= 32; threshold += 2) {
                    struct arrayspec spec = {.type = ARRAYSPEC_I16,
                                             .element_bytes = 2,
                                             .ndims = 2,
                                             .extent = {rows[r], columns[c]},
                                             .dist = {ARRAYSPEC_BLOCK, ARRAYSPEC_BLOCK},
                                             .mesh = {1 + (mesh - 1) / 5, 1 + (mesh - 1) % 5},
                                             .subchunk =
                                                 (enum arrayspec_subchunk)(threshold % 4 == 0),
                                             .threshold = threshold};
                    check_layout(&property->ref, &spec, &seed, 2, &coverage);
                }
            }
        }
    }
    print_coverage("sweep", &coverage);
    assert_true(coverage.thick_last > 50);
}

/* ---- performance, reported not asserted --------------------------------- */

static double seconds_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void measure(const char *text, uint64_t offset, uint64_t length)
{
    struct arraylayout layout;
    struct arraylayout_walk walk;
    struct tile_segment segments[256];
    uint64_t count = 0, bytes = 0;
    size_t got;
    const int repeats = 20;
    double best = 1e9;

    layout_from_text(&layout, text);
    for (int r = 0; r < repeats; r++) {
        double start = seconds_now();
        count = 0;
        bytes = 0;
        arraylayout_walk_init(&walk, &layout, offset, length);
        while ((got = arraylayout_walk_fill(&walk, segments, 256)) > 0) {
            count += got;
            bytes += segments[got - 1].length; /* keep the work observable */
        }
        double elapsed = seconds_now() - start;
        if (elapsed < best)
            best = elapsed;
    }
    assert_true(bytes > 0);
    printf("# %s, %llu bytes at %llu: %llu segments in %.3f ms (%.1f ns/segment)\n", text,
           (unsigned long long)length, (unsigned long long)offset, (unsigned long long)count,
           best * 1e3, best * 1e9 / (double)count);
}

static void test_performance_report(void **state)
{
    (void)state;
    measure("f32 512x512x512 BLOCK,BLOCK,BLOCK mesh=2x2x2", 0, 64ull * MIB);
    measure("f32 512x512x512 BLOCK,BLOCK,BLOCK mesh=2x2x2", 12345, 64ull * MIB);
    measure("f32 512x512x512 BLOCK,BLOCK,BLOCK mesh=2x2x2", 100 * MIB + 3, MIB);
    measure("f32 512x512x512 BLOCK,BLOCK,BLOCK mesh=2x2x2 subchunk=first", 0, 64ull * MIB);
    measure("f32 512x512x512 BLOCK,*,* mesh=8", 0, 64ull * MIB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_figure2_natural_chunking),
        cmocka_unit_test(test_figure2_row_major),
        cmocka_unit_test(test_figure2_natural_first_subchunks),
        cmocka_unit_test(test_paper_cube),
        cmocka_unit_test(test_edge_chunks),
        cmocka_unit_test(test_submesh_corners),
        cmocka_unit_test(test_no_distribution),
        cmocka_unit_test(test_walk_by_hand),
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_parse_raw_bytes),
        cmocka_unit_test(test_check_built_spec),
        cmocka_unit_test_setup_teardown(test_property_against_reference, property_setup,
                                        property_teardown),
        cmocka_unit_test_setup_teardown(test_sweep_against_reference, property_setup,
                                        property_teardown),
        cmocka_unit_test(test_performance_report),
    };
    return cmocka_run_group_tests_name("arraylayout", tests, NULL, NULL);
}
