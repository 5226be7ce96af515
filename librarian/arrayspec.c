/*
 * @file arrayspec.c
 * The text form of an array layout (grammar in arrayspec.h). The parser is
 * strict: it refuses anything the grammar does not produce and says which
 * token is wrong and what it expected, because the message is what a user
 * sees from setfattr or `tessera layout set`. It works on a NUL-terminated
 * copy cut into tokens in place, so tokens can be printed back in messages.
 */
#include "arrayspec.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util.h"

static const struct {
    const char *name;
    enum arrayspec_type type;
    uint32_t bytes;
} type_table[] = {
    {"i8", ARRAYSPEC_I8, 1},   {"u8", ARRAYSPEC_U8, 1},   {"i16", ARRAYSPEC_I16, 2},
    {"u16", ARRAYSPEC_U16, 2}, {"i32", ARRAYSPEC_I32, 4}, {"u32", ARRAYSPEC_U32, 4},
    {"f32", ARRAYSPEC_F32, 4}, {"i64", ARRAYSPEC_I64, 8}, {"u64", ARRAYSPEC_U64, 8},
    {"f64", ARRAYSPEC_F64, 8}, {"c64", ARRAYSPEC_C64, 8}, {"c128", ARRAYSPEC_C128, 16},
};
#define TYPE_COUNT (sizeof(type_table) / sizeof(type_table[0]))
#define TYPE_NAMES "i8 u8 i16 u16 i32 u32 f32 i64 u64 f64 c64 c128 or b1..b16"

/* A valid text has at most 6 tokens; room for more lets a repeated option be
 * reported as such rather than as excess. */
#define TOKENS_MAX 16

static int fail(char *message, size_t cap, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes the message (if there is room for one) and returns -EINVAL. */
static int fail(char *message, size_t cap, const char *format, ...)
{
    if (message && cap > 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(message, cap, format, args);
        va_end(args);
    }
    return -EINVAL;
}

uint32_t arrayspec_type_bytes(enum arrayspec_type type)
{
    for (size_t i = 0; i < TYPE_COUNT; i++) {
        if (type_table[i].type == type)
            return type_table[i].bytes;
    }
    return 0;
}

static const char *type_name(enum arrayspec_type type)
{
    for (size_t i = 0; i < TYPE_COUNT; i++) {
        if (type_table[i].type == type)
            return type_table[i].name;
    }
    return NULL;
}

uint64_t arrayspec_bytes(const struct arrayspec *spec)
{
    uint64_t bytes = spec->element_bytes;
    for (uint32_t d = 0; d < spec->ndims; d++)
        bytes *= spec->extent[d];
    return bytes;
}

/*
 * Parses a decimal integer of [start, end) in 1..max, digits only (no sign,
 * no blanks, no leading '+'). Returns 0 or -EINVAL.
 */
static int parse_count(const char *start, const char *end, uint64_t max, uint64_t *value)
{
    uint64_t result = 0;
    if (start == end)
        return -EINVAL;
    for (const char *p = start; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        uint64_t digit = (uint64_t)(*p - '0');
        if (result > (max - digit) / 10)
            return -EINVAL;
        result = result * 10 + digit;
    }
    if (result == 0)
        return -EINVAL;
    *value = result;
    return 0;
}

static int parse_element(const char *token, struct arrayspec *spec, char *message, size_t cap)
{
    for (size_t i = 0; i < TYPE_COUNT; i++) {
        if (strcmp(token, type_table[i].name) == 0) {
            spec->type = type_table[i].type;
            spec->element_bytes = type_table[i].bytes;
            return 0;
        }
    }
    if (token[0] == 'b' && token[1] >= '0' && token[1] <= '9') {
        uint64_t bytes;
        if (parse_count(token + 1, token + strlen(token), UINT64_MAX, &bytes) != 0 ||
            bytes > ARRAYSPEC_MAX_ELEMENT_BYTES)
            return fail(message, cap, "element \"%s\": raw elements are b1..b16 (1 to 16 bytes)",
                        token);
        spec->type = ARRAYSPEC_RAW;
        spec->element_bytes = (uint32_t)bytes;
        return 0;
    }
    return fail(message, cap, "unknown element type \"%s\": expected %s", token, TYPE_NAMES);
}

/*
 * Splits token at `separator` into at most `max` counts in 1..limit. Errors
 * name the token as `what` and its entries as `entry` / `entries`
 * ("dimension 2", "dimensions").
 * Returns the count of entries or -EINVAL.
 */
static int parse_counts(const char *what, const char *entry, const char *entries, const char *token,
                        char separator, uint32_t max, uint64_t limit, uint64_t *out, char *message,
                        size_t cap)
{
    uint32_t count = 0;
    const char *start = token;
    for (;;) {
        const char *end = strchr(start, separator);
        if (!end)
            end = start + strlen(start);
        if (count == max)
            return fail(message, cap, "%s \"%s\" has more than %u %s", what, token, max, entries);
        if (parse_count(start, end, limit, &out[count]) != 0) {
            if (limit == UINT64_MAX)
                return fail(message, cap, "%s \"%s\": %s %u \"%.*s\" is not a positive integer",
                            what, token, entry, count, (int)(end - start), start);
            return fail(message, cap, "%s \"%s\": %s %u \"%.*s\" is not an integer in 1..%llu",
                        what, token, entry, count, (int)(end - start), start,
                        (unsigned long long)limit);
        }
        count++;
        if (*end == '\0')
            break;
        start = end + 1;
    }
    return (int)count;
}

static int parse_distribution(const char *token, struct arrayspec *spec, char *message, size_t cap)
{
    uint32_t count = 0;
    const char *start = token;
    for (;;) {
        const char *end = strchr(start, ',');
        if (!end)
            end = start + strlen(start);
        size_t len = (size_t)(end - start);
        if (count == spec->ndims)
            return fail(message, cap,
                        "distribution \"%s\" has more entries than the shape's %u dimensions",
                        token, spec->ndims);
        if (len == 1 && start[0] == '*') {
            spec->dist[count] = ARRAYSPEC_NONE;
        } else if (len == 5 && strncasecmp(start, "BLOCK", 5) == 0) {
            spec->dist[count] = ARRAYSPEC_BLOCK;
        } else {
            return fail(message, cap, "distribution entry %u \"%.*s\": expected BLOCK or *", count,
                        (int)len, start);
        }
        count++;
        if (*end == '\0')
            break;
        start = end + 1;
    }
    if (count != spec->ndims)
        return fail(message, cap, "distribution \"%s\" has %u %s but the shape has %u dimensions",
                    token, count, count == 1 ? "entry" : "entries", spec->ndims);
    return 0;
}

static uint32_t block_dims(const struct arrayspec *spec)
{
    uint32_t blocks = 0;
    for (uint32_t d = 0; d < spec->ndims; d++)
        blocks += spec->dist[d] == ARRAYSPEC_BLOCK;
    return blocks;
}

static int parse_mesh(const char *value, struct arrayspec *spec, char *message, size_t cap)
{
    uint64_t counts[ARRAYSPEC_MAX_DIMS];
    uint32_t blocks = block_dims(spec);
    if (blocks == 0)
        return fail(message, cap,
                    "mesh=%s given but the distribution has no BLOCK dimension to spread", value);
    int count = parse_counts("mesh", "entry", "entries", value, 'x', ARRAYSPEC_MAX_DIMS, UINT32_MAX,
                             counts, message, cap);
    if (count < 0)
        return count;
    if ((uint32_t)count != blocks)
        return fail(message, cap, "mesh has %d %s but the distribution has %u BLOCK %s", count,
                    count == 1 ? "entry" : "entries", blocks,
                    blocks == 1 ? "dimension" : "dimensions");
    uint32_t next = 0;
    for (uint32_t d = 0; d < spec->ndims; d++)
        spec->mesh[d] = spec->dist[d] == ARRAYSPEC_BLOCK ? counts[next++] : 1;
    return 0;
}

static int parse_threshold(const char *value, struct arrayspec *spec, char *message, size_t cap)
{
    uint64_t bytes;
    if (!isdigit((unsigned char)value[0]) || util_parse_size(value, &bytes) != 0)
        return fail(message, cap, "threshold \"%s\": expected a size such as 4096, 64K or 1M",
                    value);
    if (bytes < spec->element_bytes)
        return fail(message, cap, "threshold %s is smaller than one element (%u bytes)", value,
                    spec->element_bytes);
    if (bytes > ARRAYSPEC_THRESHOLD_MAX)
        return fail(message, cap, "threshold %s is above the limit of 1G", value);
    spec->threshold = (uint32_t)bytes;
    return 0;
}

/* Parses one "name=value" option; `seen` tracks options already given. */
static int parse_option(char *token, struct arrayspec *spec, unsigned *seen, char *message,
                        size_t cap)
{
    static const char *const names[] = {"mesh", "subchunk", "threshold"};
    char *equals = strchr(token, '=');
    unsigned which = 0;
    if (equals) {
        for (which = 0; which < 3; which++) {
            size_t len = strlen(names[which]);
            if ((size_t)(equals - token) == len && strncmp(token, names[which], len) == 0)
                break;
        }
    }
    if (!equals || which == 3)
        return fail(message, cap,
                    "unexpected \"%s\": expected an option mesh=, subchunk= or threshold=", token);
    if (*seen & (1u << which))
        return fail(message, cap, "option %s= given twice", names[which]);
    *seen |= 1u << which;
    const char *value = equals + 1;
    if (*value == '\0')
        return fail(message, cap, "option %s= has no value", names[which]);
    switch (which) {
    case 0: return parse_mesh(value, spec, message, cap);
    case 1:
        if (strcmp(value, "same") == 0) {
            spec->subchunk = ARRAYSPEC_SUBCHUNK_SAME;
        } else if (strcmp(value, "first") == 0) {
            spec->subchunk = ARRAYSPEC_SUBCHUNK_FIRST;
        } else {
            return fail(message, cap, "subchunk \"%s\": expected same or first", value);
        }
        return 0;
    default: return parse_threshold(value, spec, message, cap);
    }
}

int arrayspec_parse(const char *text, size_t len, struct arrayspec *spec, char *message, size_t cap)
{
    char copy[ARRAYSPEC_TEXT_MAX + 1];
    char *tokens[TOKENS_MAX];
    size_t token_count = 0;
    unsigned seen = 0;
    int result;

    if (message && cap > 0)
        message[0] = '\0';
    if (len > ARRAYSPEC_TEXT_MAX)
        return fail(message, cap, "array layout text is longer than %d bytes", ARRAYSPEC_TEXT_MAX);
    if (memchr(text, '\0', len))
        return fail(message, cap, "array layout text contains a NUL byte");
    memcpy(copy, text, len);
    copy[len] = '\0';
    for (char *p = copy; *p != '\0';) {
        if (isspace((unsigned char)*p)) {
            *p++ = '\0';
            continue;
        }
        if (token_count == TOKENS_MAX)
            return fail(message, cap,
                        "too many tokens: expected an element, a shape, a "
                        "distribution and up to 3 options");
        tokens[token_count++] = p;
        while (*p != '\0' && !isspace((unsigned char)*p))
            p++;
    }
    if (token_count == 0)
        return fail(message, cap,
                    "empty array layout: expected e.g. \"f32 512x512 BLOCK,BLOCK mesh=2x2\"");

    memset(spec, 0, sizeof(*spec));
    spec->subchunk = ARRAYSPEC_SUBCHUNK_SAME;
    spec->threshold = ARRAYSPEC_DEFAULT_THRESHOLD;
    for (uint32_t d = 0; d < ARRAYSPEC_MAX_DIMS; d++)
        spec->mesh[d] = 1;

    result = parse_element(tokens[0], spec, message, cap);
    if (result != 0)
        return result;
    if (token_count < 2)
        return fail(message, cap,
                    "missing the shape after \"%s\" (extents joined by x, e.g. "
                    "512x512)",
                    tokens[0]);
    result = parse_counts("shape", "dimension", "dimensions", tokens[1], 'x', ARRAYSPEC_MAX_DIMS,
                          UINT64_MAX, spec->extent, message, cap);
    if (result < 0)
        return result;
    spec->ndims = (uint32_t)result;
    if (token_count < 3)
        return fail(message, cap,
                    "missing the distribution after \"%s\" (BLOCK or * per dimension, joined "
                    "by commas, e.g. BLOCK,*)",
                    tokens[1]);
    result = parse_distribution(tokens[2], spec, message, cap);
    if (result != 0)
        return result;
    /* threshold= is checked against the element size, known by now; mesh=
     * against the distribution, also known: option order is free. */
    for (size_t i = 3; i < token_count; i++) {
        result = parse_option(tokens[i], spec, &seen, message, cap);
        if (result != 0)
            return result;
    }
    if (!(seen & 1u) && block_dims(spec) > 0)
        return fail(message, cap, "missing mesh= with one count per BLOCK dimension (%u here)",
                    block_dims(spec));
    return arrayspec_check(spec, message, cap);
}

int arrayspec_check(const struct arrayspec *spec, char *message, size_t cap)
{
    uint32_t type_bytes = arrayspec_type_bytes(spec->type);

    if (spec->type == ARRAYSPEC_RAW) {
        if (spec->element_bytes < 1 || spec->element_bytes > ARRAYSPEC_MAX_ELEMENT_BYTES)
            return fail(message, cap, "element size %u: raw elements have 1 to 16 bytes",
                        spec->element_bytes);
    } else if (type_bytes == 0) {
        return fail(message, cap, "unknown element type %d", (int)spec->type);
    } else if (type_bytes != spec->element_bytes) {
        return fail(message, cap, "element type %s has %u bytes, not %u", type_name(spec->type),
                    type_bytes, spec->element_bytes);
    }
    if (spec->ndims < 1 || spec->ndims > ARRAYSPEC_MAX_DIMS)
        return fail(message, cap, "%u dimensions: an array has 1 to %d", spec->ndims,
                    ARRAYSPEC_MAX_DIMS);
    uint64_t bytes = spec->element_bytes;
    for (uint32_t d = 0; d < spec->ndims; d++) {
        if (spec->extent[d] == 0)
            return fail(message, cap, "dimension %u: extent 0; extents are at least 1", d);
        if (bytes > (uint64_t)INT64_MAX / spec->extent[d])
            return fail(message, cap, "the array holds more than %lld bytes", (long long)INT64_MAX);
        bytes *= spec->extent[d];
        if (spec->dist[d] == ARRAYSPEC_NONE) {
            if (spec->mesh[d] != 1)
                return fail(message, cap,
                            "dimension %u: distribution * but mesh count %llu (must be 1)", d,
                            (unsigned long long)spec->mesh[d]);
        } else if (spec->dist[d] == ARRAYSPEC_BLOCK) {
            if (spec->mesh[d] < 1 || spec->mesh[d] > UINT32_MAX)
                return fail(message, cap, "dimension %u: mesh count %llu out of 1..%u", d,
                            (unsigned long long)spec->mesh[d], UINT32_MAX);
        } else {
            return fail(message, cap, "dimension %u: unknown distribution %d", d,
                        (int)spec->dist[d]);
        }
    }
    if (spec->subchunk != ARRAYSPEC_SUBCHUNK_SAME && spec->subchunk != ARRAYSPEC_SUBCHUNK_FIRST)
        return fail(message, cap, "unknown subchunk shape %d", (int)spec->subchunk);
    if (spec->threshold < spec->element_bytes)
        return fail(message, cap, "threshold %u is smaller than one element (%u bytes)",
                    spec->threshold, spec->element_bytes);
    if (spec->threshold > ARRAYSPEC_THRESHOLD_MAX)
        return fail(message, cap, "threshold %u is above the limit of 1G", spec->threshold);
    return 0;
}

/* Appends to out[cap] at *used; false once it no longer fits. */
static bool append(char *out, size_t cap, size_t *used, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

static bool append(char *out, size_t cap, size_t *used, const char *format, ...)
{
    va_list args;
    if (*used >= cap)
        return false;
    va_start(args, format);
    int written = vsnprintf(out + *used, cap - *used, format, args);
    va_end(args);
    if (written < 0 || (size_t)written >= cap - *used) {
        *used = cap;
        return false;
    }
    *used += (size_t)written;
    return true;
}

int arrayspec_format(const struct arrayspec *spec, char *out, size_t cap)
{
    size_t used = 0;
    bool ok = true;
    uint32_t blocks = 0;

    if (arrayspec_check(spec, NULL, 0) != 0)
        return -EINVAL;
    if (spec->type == ARRAYSPEC_RAW)
        ok = append(out, cap, &used, "b%u", spec->element_bytes);
    else
        ok = append(out, cap, &used, "%s", type_name(spec->type));
    for (uint32_t d = 0; ok && d < spec->ndims; d++)
        ok = append(out, cap, &used, "%c%llu", d == 0 ? ' ' : 'x',
                    (unsigned long long)spec->extent[d]);
    for (uint32_t d = 0; ok && d < spec->ndims; d++)
        ok = append(out, cap, &used, "%c%s", d == 0 ? ' ' : ',',
                    spec->dist[d] == ARRAYSPEC_BLOCK ? "BLOCK" : "*");
    for (uint32_t d = 0; ok && d < spec->ndims; d++) {
        if (spec->dist[d] != ARRAYSPEC_BLOCK)
            continue;
        ok = append(out, cap, &used, "%s%llu", blocks == 0 ? " mesh=" : "x",
                    (unsigned long long)spec->mesh[d]);
        blocks++;
    }
    if (ok)
        ok = append(out, cap, &used, " subchunk=%s",
                    spec->subchunk == ARRAYSPEC_SUBCHUNK_SAME ? "same" : "first");
    if (ok) {
        /* The largest binary unit that writes the threshold exactly. */
        uint32_t threshold = spec->threshold;
        if (threshold % (1u << 30) == 0)
            ok = append(out, cap, &used, " threshold=%uG", threshold >> 30);
        else if (threshold % (1u << 20) == 0)
            ok = append(out, cap, &used, " threshold=%uM", threshold >> 20);
        else if (threshold % (1u << 10) == 0)
            ok = append(out, cap, &used, " threshold=%uK", threshold >> 10);
        else
            ok = append(out, cap, &used, " threshold=%u", threshold);
    }
    if (!ok) {
        if (cap > 0)
            out[0] = '\0';
        return -ENOSPC;
    }
    return (int)used;
}
