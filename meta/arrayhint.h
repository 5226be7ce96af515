/*
 * @file arrayhint.h
 * The array hint `user.tessera.array` (DESIGN.md "Layout of a file";
 * librarian/arrayspec.h gives its text form): how meta checks it, resolves
 * its defaults and keeps it.
 *
 * Where it lives: a record in the xattrs table under the name
 * ARRAYHINT_RECORD, which lies outside the "user." namespace, so that no
 * plain xattr request can reach it and LISTXATTR does not list it (as
 * user.tessera.layout, it is a layout, not data a copy should carry). A
 * regular file's record holds the canonical text (arrayspec_format(), every
 * option spelled out) and its inode has TS_ATTR_ARRAY in attr.flags, so
 * every attr reply tells the client to fetch the text at open. A
 * directory's record holds the text as the user gave it (checked), and its
 * inode has no flag: new files resolve it for themselves.
 *
 * The threshold rule: when the text has no `threshold=`, the subchunk size
 * limit is the file's tile size (user.tessera.layout tile=, default 1M) at
 * the moment the hint binds to the file: when it is set on the file, or
 * when the file is created in a directory that carries it. So set
 * user.tessera.layout before user.tessera.array. A threshold above the
 * largest tile a datanode takes (LAYOUT_MAX_TILE_BYTES) is refused.
 */
#ifndef TESSERA_META_ARRAYHINT_H
#define TESSERA_META_ARRAYHINT_H

#include "arraylayout.h"
#include "store.h"

#include <stddef.h>
#include <stdint.h>

#define ARRAYHINT_XATTR "user.tessera.array"
#define ARRAYHINT_RECORD "tessera.array"
/* Enough for any message arrayhint_compile() writes. */
#define ARRAYHINT_WHY_MAX (ARRAYSPEC_MESSAGE_MAX + 64)

/*
 * Parses text[len] (need not be NUL-terminated), takes tile_bytes as the
 * threshold if the text gives none, checks the threshold against the
 * largest tile and compiles the layout into *layout. Returns 0, or -EINVAL
 * with a one-line reason in why[cap].
 */
int arrayhint_compile(const char *text, size_t len, uint32_t tile_bytes, struct arraylayout *layout,
                      char *why, size_t cap);

/*
 * Reads ino's record into text[cap] (NUL-terminated); *len gets its length.
 * Returns 0, -ENOENT if ino has none, -EIO if it does not fit (a record
 * meta wrote always fits ARRAYSPEC_TEXT_MAX + 1), or a negative errno.
 */
int arrayhint_get(struct store_txn *txn, uint64_t ino, char *text, size_t cap, size_t *len);

/*
 * The compiled layout of an array file (one with TS_ATTR_ARRAY). Returns 0,
 * -ENOENT if it has no record, -EIO (logged) if the record does not compile:
 * the store is damaged, or a negative errno.
 */
int arrayhint_load(struct store_txn *txn, uint64_t ino, struct arraylayout *layout);

/* Stores text as ino's record. 0 or a negative errno. */
int arrayhint_put(struct store_txn *txn, uint64_t ino, const char *text, size_t len);

/* Removes ino's record. 0, -ENOENT if it had none, or a negative errno. */
int arrayhint_delete(struct store_txn *txn, uint64_t ino);

#endif
