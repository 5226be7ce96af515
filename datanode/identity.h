/*
 * @file identity.h
 * The identity of a datanode's data directory: a random non-zero 64-bit
 * number (its incarnation) made the first time a datanode uses the
 * directory and kept in DATA/identity. The datanode sends it in every
 * heartbeat and meta records it with the node, so a directory that was
 * wiped, or another node's, is never taken for the node whose tiles it
 * held (HDFS keeps a storage ID in each data directory for the same
 * reason). node.id says which node a directory claims to be; the identity
 * says whether it is the same directory.
 */
#ifndef TESSERA_DATANODE_IDENTITY_H
#define TESSERA_DATANODE_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What DATA/identity holds: 16 lowercase hex digits and a newline. */
#define IDENTITY_TEXT_BYTES 17

/*
 * Parses len bytes of an identity file: exactly 16 hex digits, optionally
 * followed by one newline, not all zero. 0 and *incarnation, or -EINVAL.
 */
int identity_parse(const char *text, size_t len, uint64_t *incarnation);

/*
 * The identity of data_dir into *incarnation: read from DATA/identity, or,
 * when the file is missing, made (getrandom), written and synced
 * (temporary file, fsync, rename, fsync of the directory), with *created
 * set. A file that does not parse is -EINVAL (logged, with the fix): it is
 * never replaced silently, since a new identity disowns the tiles there.
 * 0 or a negative errno.
 */
int identity_load(const char *data_dir, uint64_t *incarnation, bool *created);

/*
 * Called before the tile store opens (and would make DATA/tiles): -ESTALE,
 * logged with the fix, when data_dir has a node.id or an identity but no
 * tiles directory. A datanode makes DATA/tiles before it ever registers or
 * makes its identity, so such a directory lost every tile it held; left
 * alone it would come back as its node with nothing in it. 0 otherwise,
 * or a negative errno.
 */
int identity_check_tiles(const char *data_dir);

#endif
