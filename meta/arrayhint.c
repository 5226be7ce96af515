/*
 * @file arrayhint.c
 * See arrayhint.h. The parser itself is librarian/arrayspec.c; what is
 * meta's is the threshold default and the size cap of a tile, and the
 * record in the xattrs table.
 */
#include "arrayhint.h"

#include "layout.h"
#include "log.h"
#include "xattrs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool arrayhint_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Whether one of the blank-separated tokens of text[len] starts "threshold=". */
static bool arrayhint_gives_threshold(const char *text, size_t len)
{
    static const char key[] = "threshold=";
    const size_t key_len = sizeof(key) - 1;
    size_t at = 0;

    while (at < len) {
        while (at < len && arrayhint_blank(text[at]))
            at++;
        size_t start = at;
        while (at < len && !arrayhint_blank(text[at]))
            at++;
        if (at - start >= key_len && memcmp(text + start, key, key_len) == 0)
            return true;
    }
    return false;
}

int arrayhint_compile(const char *text, size_t len, uint32_t tile_bytes, struct arraylayout *layout,
                      char *why, size_t cap)
{
    struct arrayspec spec;

    if (arrayspec_parse(text, len, &spec, why, cap) != 0)
        return -EINVAL;
    if (!arrayhint_gives_threshold(text, len))
        spec.threshold = tile_bytes ? tile_bytes : ARRAYSPEC_DEFAULT_THRESHOLD;
    if (spec.threshold > LAYOUT_MAX_TILE_BYTES) {
        snprintf(why, cap, "threshold=%" PRIu32 ": a tile holds at most %uM", spec.threshold,
                 LAYOUT_MAX_TILE_BYTES >> 20);
        return -EINVAL;
    }
    if (arraylayout_init(layout, &spec, why, cap) != 0)
        return -EINVAL;
    return 0;
}

int arrayhint_get(struct store_txn *txn, uint64_t ino, char *text, size_t cap, size_t *len)
{
    struct ts_str value;
    int err = xattrs_get(txn, ino, ts_str_of(ARRAYHINT_RECORD), &value);
    if (err < 0)
        return err;
    if (value.len >= cap)
        return -EIO;
    memcpy(text, value.ptr, value.len);
    text[value.len] = '\0';
    *len = value.len;
    return 0;
}

int arrayhint_load(struct store_txn *txn, uint64_t ino, struct arraylayout *layout)
{
    char text[ARRAYSPEC_TEXT_MAX + 1];
    char why[ARRAYHINT_WHY_MAX];
    size_t len;
    int err = arrayhint_get(txn, ino, text, sizeof(text), &len);
    if (err < 0)
        return err;
    /* A file's record is canonical: its threshold is always given. */
    if (arrayhint_compile(text, len, 0, layout, why, sizeof(why)) != 0) {
        log_error("inode %" PRIu64 ": stored array layout '%s' does not compile: %s", ino, text,
                  why);
        return -EIO;
    }
    return 0;
}

int arrayhint_put(struct store_txn *txn, uint64_t ino, const char *text, size_t len)
{
    struct ts_str value = {.ptr = text, .len = (uint32_t)len};
    return xattrs_put(txn, ino, ts_str_of(ARRAYHINT_RECORD), value);
}

int arrayhint_delete(struct store_txn *txn, uint64_t ino)
{
    return xattrs_delete(txn, ino, ts_str_of(ARRAYHINT_RECORD));
}
