/*
 * @file xattrs.h
 * The `xattrs` table: extended attributes. Key: u64 BE ino + the name bytes
 * (so an inode's attributes are one cursor range); value: the raw bytes.
 * Names and values are checked by the caller (namespace, lengths). Clients
 * reach only "user." names (handlers.c); a name outside that namespace is a
 * record meta keeps for itself (arrayhint.h), never listed.
 */
#ifndef TESSERA_META_XATTRS_H
#define TESSERA_META_XATTRS_H

#include "proto.h"
#include "store.h"

#include <stdint.h>

/*
 * Looks an attribute up; *value points into the map and is valid until the
 * transaction ends. 0, -ENOENT if missing, or a negative errno.
 */
int xattrs_get(struct store_txn *txn, uint64_t ino, struct ts_str name, struct ts_str *value);
/* Adds or replaces. 0 or a negative errno. */
int xattrs_put(struct store_txn *txn, uint64_t ino, struct ts_str name, struct ts_str value);
/* 0, -ENOENT if missing, or a negative errno. */
int xattrs_delete(struct store_txn *txn, uint64_t ino, struct ts_str name);
/* Removes every attribute of ino. 0 or a negative errno. */
int xattrs_delete_all(struct store_txn *txn, uint64_t ino);
/*
 * Appends each "user." name of ino followed by a NUL to `out`. Returns 0, -ERANGE
 * if `out` is too small, or a negative errno.
 */
int xattrs_list(struct store_txn *txn, uint64_t ino, struct ts_writer *out);

#endif
