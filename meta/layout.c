/*
 * @file layout.c
 * See layout.h. The parser walks the text once, token by token, and never
 * needs it NUL-terminated: the xattr value arrives as bytes.
 */
#include "layout.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool layout_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool layout_word(const char *text, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(text, word, len) == 0;
}

const char *layout_placement_name(uint32_t placement)
{
    switch (placement) {
    case TS_PLACEMENT_ROUNDROBIN: return "roundrobin";
    case TS_PLACEMENT_STATIC: return "static";
    case TS_PLACEMENT_DYNAMIC: return "dynamic";
    default: return "default";
    }
}

int layout_placement_parse(const char *name, size_t len, uint32_t *placement)
{
    static const uint32_t policies[] = {TS_PLACEMENT_DEFAULT, TS_PLACEMENT_ROUNDROBIN,
                                        TS_PLACEMENT_STATIC, TS_PLACEMENT_DYNAMIC};
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        if (layout_word(name, len, layout_placement_name(policies[i]))) {
            *placement = policies[i];
            return 0;
        }
    }
    return -EINVAL;
}

/* Parses the leading decimal digits of text[len]; *used = how many. 0 or -EINVAL. */
static int layout_number(const char *text, size_t len, size_t *used, uint64_t *value)
{
    size_t i = 0;

    *value = 0;
    for (; i < len && text[i] >= '0' && text[i] <= '9'; i++) {
        if (*value > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        *value = *value * 10 + (uint64_t)(text[i] - '0');
    }
    *used = i;
    return i > 0 ? 0 : -EINVAL;
}

/* Parses a decimal number with an optional K/M (KiB/MiB) suffix; 0 or -EINVAL. */
static int layout_size(const char *text, size_t len, uint64_t *bytes)
{
    uint64_t value;
    size_t i;
    unsigned shift = 0;

    if (layout_number(text, len, &i, &value) != 0)
        return -EINVAL;
    if (i < len) {
        char unit = text[i++];
        if (unit == 'k' || unit == 'K')
            shift = 10;
        else if (unit == 'm' || unit == 'M')
            shift = 20;
        else
            return -EINVAL;
        if (len - i == 2 && text[i] == 'i' && text[i + 1] == 'B')
            i += 2;
        if (i != len)
            return -EINVAL;
    }
    if (value > (UINT64_MAX >> shift))
        return -EINVAL;
    *bytes = value << shift;
    return 0;
}

/* Parses one KEY=VALUE token into *layout; 0 or -EINVAL with why. */
static int layout_token(const char *token, size_t len, struct layout *layout, char *why, size_t cap)
{
    const char *equals = memchr(token, '=', len);
    size_t key_len = equals ? (size_t)(equals - token) : len;
    const char *value = equals ? equals + 1 : NULL;
    size_t value_len = equals ? len - key_len - 1 : 0;
    unsigned field;

    if (!equals) {
        snprintf(why, cap, "'%.*s' is not KEY=VALUE (keys: tile, copies, placement)", (int)len,
                 token);
        return -EINVAL;
    }
    if (value_len == 0) {
        snprintf(why, cap, "'%.*s' has no value", (int)len, token);
        return -EINVAL;
    }
    if (layout_word(token, key_len, "tile"))
        field = LAYOUT_GIVEN_TILE;
    else if (layout_word(token, key_len, "copies"))
        field = LAYOUT_GIVEN_COPIES;
    else if (layout_word(token, key_len, "placement"))
        field = LAYOUT_GIVEN_PLACEMENT;
    else {
        snprintf(why, cap, "unknown key '%.*s' (keys: tile, copies, placement)", (int)key_len,
                 token);
        return -EINVAL;
    }
    if (layout->given & field) {
        snprintf(why, cap, "'%.*s' is given twice", (int)key_len, token);
        return -EINVAL;
    }
    layout->given |= field;

    if (field == LAYOUT_GIVEN_PLACEMENT) {
        if (layout_placement_parse(value, value_len, &layout->placement) != 0) {
            snprintf(why, cap, "placement=%.*s: use default, roundrobin, static or dynamic",
                     (int)value_len, value);
            return -EINVAL;
        }
        return 0;
    }
    uint64_t number;
    if (field == LAYOUT_GIVEN_COPIES) {
        size_t used;
        if (layout_number(value, value_len, &used, &number) != 0 || used != value_len) {
            snprintf(why, cap, "copies=%.*s: not a number", (int)value_len, value);
            return -EINVAL;
        }
        if (number < 1 || number > LAYOUT_MAX_COPIES) {
            snprintf(why, cap, "copies=%.*s: 1 to %d copies per tile", (int)value_len,
                     value, LAYOUT_MAX_COPIES);
            return -EINVAL;
        }
        layout->copies = (uint32_t)number;
        return 0;
    }
    if (layout_size(value, value_len, &number) != 0) {
        snprintf(why, cap, "tile=%.*s: not a size (bytes, or a number with K or M)", (int)value_len,
                 value);
        return -EINVAL;
    }
    if (number < LAYOUT_MIN_TILE_BYTES || number > LAYOUT_MAX_TILE_BYTES ||
        number % LAYOUT_MIN_TILE_BYTES != 0) {
        snprintf(why, cap, "tile=%.*s: must be a multiple of 4K between 4K and %uM", (int)value_len,
                 value, LAYOUT_MAX_TILE_BYTES >> 20);
        return -EINVAL;
    }
    layout->tile_bytes = (uint32_t)number;
    return 0;
}

int layout_parse(const char *text, size_t len, struct layout *layout, char *why, size_t cap)
{
    size_t at = 0;

    memset(layout, 0, sizeof(*layout));
    if (cap > 0)
        why[0] = '\0';
    if (len > LAYOUT_TEXT_MAX) {
        snprintf(why, cap, "layout of %zu bytes: at most %d", len, LAYOUT_TEXT_MAX);
        return -EINVAL;
    }
    if (memchr(text, '\0', len)) {
        snprintf(why, cap, "layout contains a NUL byte");
        return -EINVAL;
    }
    while (at < len) {
        while (at < len && layout_blank(text[at]))
            at++;
        size_t start = at;
        while (at < len && !layout_blank(text[at]))
            at++;
        if (at > start && layout_token(text + start, at - start, layout, why, cap) != 0)
            return -EINVAL;
    }
    if (layout->given == 0) {
        snprintf(why, cap, "empty layout; e.g. tile=1M copies=1 placement=dynamic");
        return -EINVAL;
    }
    return 0;
}

void layout_apply(struct layout *into, const struct layout *from)
{
    if (from->given & LAYOUT_GIVEN_TILE)
        into->tile_bytes = from->tile_bytes;
    if (from->given & LAYOUT_GIVEN_COPIES)
        into->copies = from->copies;
    if (from->given & LAYOUT_GIVEN_PLACEMENT)
        into->placement = from->placement;
}

int layout_format(const struct layout *layout, char *out, size_t cap)
{
    char tile[24];
    int len;

    if (layout->tile_bytes != 0 && layout->tile_bytes % (1u << 20) == 0)
        snprintf(tile, sizeof(tile), "%" PRIu32 "M", layout->tile_bytes >> 20);
    else if (layout->tile_bytes != 0 && layout->tile_bytes % (1u << 10) == 0)
        snprintf(tile, sizeof(tile), "%" PRIu32 "K", layout->tile_bytes >> 10);
    else
        snprintf(tile, sizeof(tile), "%" PRIu32, layout->tile_bytes);
    len = snprintf(out, cap, "tile=%s copies=%" PRIu32 " placement=%s", tile, layout->copies,
                   layout_placement_name(layout->placement));
    if (len < 0 || (size_t)len >= cap)
        return -ENOSPC;
    return len;
}
