/*
 * @file arrayspec.h
 * The declared layout of an array file: what a user writes into the xattr
 * `user.tessera.array` (DESIGN.md "Layout of a file"). It names the element,
 * the array's shape, Panda's disk layout (a per-dimension distribution, BLOCK
 * or *, and a disk mesh), how disk chunks are cut into subchunks, and the
 * subchunk size threshold. arraylayout.h turns a spec into tiles.
 *
 * Text form (one line; tokens separated by blanks, i.e. spaces, tabs or
 * newlines, leading and trailing blanks ignored):
 *
 *   array    = element SP shape SP distrib *(SP option)
 *   element  = "i8" | "u8" | "i16" | "u16" | "i32" | "u32" | "f32"
 *            | "i64" | "u64" | "f64" | "c64" | "c128"      ; sizes 1 1 2 2 4 4 4 8 8 8 8 16
 *            | "b" 1*2DIGIT                                ; raw element of 1..16 bytes
 *   shape    = extent *("x" extent)                        ; 1..8 dimensions, row-major
 *   extent   = 1*DIGIT                                     ; >= 1
 *   distrib  = dist *("," dist)                            ; exactly one per dimension
 *   dist     = "BLOCK" | "*"                               ; BLOCK in any letter case
 *   option   = "mesh=" count *("x" count)                  ; one count >= 1 per BLOCK dim
 *            | "subchunk=" ("same" | "first")
 *            | "threshold=" size                           ; 4096, 64K, 1M, 1MiB, ...
 *
 * Each option may appear once, in any order. mesh= is required when the
 * distribution has a BLOCK dimension and refused when it has none. subchunk
 * defaults to "same" (Panda's "same distribution as the array": subchunks
 * are cut along the BLOCK dimensions) and "first" means Panda's
 * (BLOCK,*,...,*) subchunks, cut along dimension 0 only. threshold defaults
 * to 1 MiB and must lie between one element and ARRAYSPEC_THRESHOLD_MAX.
 * The whole array must hold at most INT64_MAX bytes. Dimensions are counted
 * from 0 (the slowest-varying) in messages.
 *
 * Example: "f32 512x512x512 BLOCK,BLOCK,BLOCK mesh=2x2x2 subchunk=same threshold=1M"
 * which is also the canonical form arrayspec_format() writes: every option
 * spelled out, so that getfattr shows the effective layout.
 */
#ifndef TESSERA_ARRAYSPEC_H
#define TESSERA_ARRAYSPEC_H

#include <stddef.h>
#include <stdint.h>

#define ARRAYSPEC_MAX_DIMS 8
#define ARRAYSPEC_MAX_ELEMENT_BYTES 16
#define ARRAYSPEC_DEFAULT_THRESHOLD (1u << 20)
/* Tiles never exceed the threshold, and a tile is one buffer in the client. */
#define ARRAYSPEC_THRESHOLD_MAX (1u << 30)
/* Longest text arrayspec_parse() accepts; arrayspec_format() always fits. */
#define ARRAYSPEC_TEXT_MAX 512
/* A message buffer of this size never truncates an arrayspec message. */
#define ARRAYSPEC_MESSAGE_MAX 256

/* Element types; ARRAYSPEC_RAW is "b<N>", an opaque element of N bytes. */
enum arrayspec_type {
    ARRAYSPEC_RAW = 0,
    ARRAYSPEC_I8,
    ARRAYSPEC_U8,
    ARRAYSPEC_I16,
    ARRAYSPEC_U16,
    ARRAYSPEC_I32,
    ARRAYSPEC_U32,
    ARRAYSPEC_F32,
    ARRAYSPEC_I64,
    ARRAYSPEC_U64,
    ARRAYSPEC_F64,
    ARRAYSPEC_C64,
    ARRAYSPEC_C128,
};

/* HPF distribution of one dimension over the disk mesh. */
enum arrayspec_dist {
    ARRAYSPEC_NONE = 0, /* "*": the dimension is not split into chunks */
    ARRAYSPEC_BLOCK = 1,
};

/* Shape of the subchunks a disk chunk is cut into (Panda section 3.1). */
enum arrayspec_subchunk {
    ARRAYSPEC_SUBCHUNK_SAME = 0,  /* the array's own distribution */
    ARRAYSPEC_SUBCHUNK_FIRST = 1, /* (BLOCK,*,...,*) */
};

struct arrayspec {
    enum arrayspec_type type;
    uint32_t element_bytes; /* 1..16; implied by type unless ARRAYSPEC_RAW */
    uint32_t ndims;         /* 1..ARRAYSPEC_MAX_DIMS */
    uint64_t extent[ARRAYSPEC_MAX_DIMS];
    enum arrayspec_dist dist[ARRAYSPEC_MAX_DIMS];
    /* Disk mesh, one entry per dimension: the chunk count requested along a
     * BLOCK dimension, always 1 along a * dimension. */
    uint64_t mesh[ARRAYSPEC_MAX_DIMS];
    enum arrayspec_subchunk subchunk;
    uint32_t threshold; /* largest subchunk in bytes */
};

/*
 * Parses the text form (len bytes at text, need not be NUL-terminated) into
 * *spec. Returns 0, or -EINVAL with *spec unspecified and a one-line message
 * saying what is wrong and what was expected written to message[cap] (always
 * NUL-terminated when cap > 0; message may be NULL when cap is 0).
 */
int arrayspec_parse(const char *text, size_t len, struct arrayspec *spec, char *message,
                    size_t cap);

/*
 * Checks a spec built in code the way arrayspec_parse() checks text: types
 * and element sizes agree, extents, distribution, mesh, subchunk mode and
 * threshold are in range and the array fits INT64_MAX bytes. Returns 0 or
 * -EINVAL with a message as above.
 */
int arrayspec_check(const struct arrayspec *spec, char *message, size_t cap);

/*
 * Writes the canonical text of a valid spec to out[cap], NUL-terminated.
 * Returns its length, -EINVAL for an invalid spec, or -ENOSPC if cap is too
 * small (ARRAYSPEC_TEXT_MAX always suffices).
 */
int arrayspec_format(const struct arrayspec *spec, char *out, size_t cap);

/* Bytes of one element of `type`, or 0 for ARRAYSPEC_RAW (size is free). */
uint32_t arrayspec_type_bytes(enum arrayspec_type type);

/* Total bytes of the array (the file's size); the spec must be valid. */
uint64_t arrayspec_bytes(const struct arrayspec *spec);

#endif
