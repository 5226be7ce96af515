/*
 * @file keysdir.h
 * A cluster's key directory (layout in common/keys.h): made, added to and
 * revoked in by `tessera keys` and by `tessera up` for its local cluster.
 * Every function returns 0 or a negative errno after printing why on
 * stderr, prefixed by `who`.
 */
#ifndef TESSERA_TOOLS_KEYSDIR_H
#define TESSERA_TOOLS_KEYSDIR_H

#include <stdbool.h>

/*
 * Makes dir (mode 0700) with the server pair, known_keys and the pairs of
 * "meta" (role meta) and "admin" (role admin). -EEXIST if dir already has
 * a known_keys file.
 */
int keysdir_init(const char *dir, const char *who);

/*
 * Makes dir/NAME.key (mode 0600) and lists its public key in known_keys
 * with role. -EEXIST if the name is known (revoked names stay taken).
 */
int keysdir_add(const char *dir, const char *role, const char *name, const char *who);

/* Marks NAME's key revoked in known_keys. -ENOENT if the name is unknown. */
int keysdir_revoke(const char *dir, const char *name, const char *who);

/* Prints known_keys as a table (role, name, key, state). */
int keysdir_list(const char *dir, const char *who);

/* Whether dir/known_keys exists. */
bool keysdir_exists(const char *dir);

/*
 * Makes DIR/tile.secret (common/tiletoken.h) when it is missing; with
 * rotate, a fresh current secret and the old one kept as previous. 0 or
 * -errno after printing why, prefixed with who.
 */
int keysdir_tile_secret(const char *dir, bool rotate, const char *who);

#endif
