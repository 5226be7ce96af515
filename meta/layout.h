/*
 * @file layout.h
 * The layout hint `user.tessera.layout` (DESIGN.md "Layout of a file"):
 * parsing the text a user sets and writing the effective layout a user
 * reads back. Pure text handling; the rules about when a layout may change
 * live in handlers.c.
 *
 * Text form: tokens separated by blanks (spaces, tabs, newlines), leading
 * and trailing blanks ignored, each token KEY=VALUE, each key at most once,
 * at least one token:
 *
 *   tile=SIZE        subchunk size: bytes, or a number with K or M (binary
 *                    units, "KiB"/"MiB" also accepted), a multiple of 4 KiB
 *                    between LAYOUT_MIN_TILE_BYTES and LAYOUT_MAX_TILE_BYTES
 *   copies=N         datanodes holding each tile (replicas), 1..LAYOUT_MAX_COPIES
 *                    (default = the cluster's, tessera-meta --copies)
 *   placement=P      default | roundrobin | static | dynamic
 *                    (default = the cluster's, tessera-meta --placement)
 *
 * Keys not given keep their current value, so "placement=static" changes
 * only the policy. Example, also the form layout_format() writes:
 * "tile=1M copies=1 placement=dynamic".
 */
#ifndef TESSERA_META_LAYOUT_H
#define TESSERA_META_LAYOUT_H

#include "proto.h"

#include <stddef.h>
#include <stdint.h>

#define LAYOUT_XATTR "user.tessera.layout"
#define LAYOUT_MIN_TILE_BYTES 4096u
#define LAYOUT_MAX_TILE_BYTES TS_MAX_DATA_BYTES
#define LAYOUT_MAX_COPIES TS_MAX_COPIES
#define LAYOUT_TEXT_MAX 256 /* longest text layout_parse() accepts */

/* Which fields a parsed text gave. */
#define LAYOUT_GIVEN_TILE 0x1u
#define LAYOUT_GIVEN_COPIES 0x2u
#define LAYOUT_GIVEN_PLACEMENT 0x4u

struct layout {
    uint32_t tile_bytes;
    uint32_t copies;
    uint32_t placement; /* enum ts_placement */
    unsigned given;     /* LAYOUT_GIVEN_* (layout_parse) */
};

/* What a file that names no placement or copies gets (tessera-meta
 * --placement, --copies). */
struct layout_defaults {
    uint32_t placement; /* enum ts_placement, never TS_PLACEMENT_DEFAULT */
    uint32_t copies;    /* 1..LAYOUT_MAX_COPIES */
};

/*
 * Parses text[len] (not NUL-terminated) into *layout, setting `given` for
 * each key present and leaving the other fields 0. Returns 0, or -EINVAL
 * with a one-line reason in why[cap] ("copies=9: 1 to 4 copies per
 * tile", ...).
 */
int layout_parse(const char *text, size_t len, struct layout *layout, char *why, size_t cap);

/* Copies the fields `from` gave into *into. */
void layout_apply(struct layout *into, const struct layout *from);

/*
 * Writes "tile=1M copies=1 placement=dynamic" for the layout into out[cap];
 * returns the length (without NUL), or -ENOSPC if cap is too small (64
 * bytes always suffice).
 */
int layout_format(const struct layout *layout, char *out, size_t cap);

/* "roundrobin", "static", "dynamic", or "default" for anything else. */
const char *layout_placement_name(uint32_t placement);
/* Parses a policy name as above; 0 or -EINVAL. */
int layout_placement_parse(const char *name, size_t len, uint32_t *placement);

#endif
