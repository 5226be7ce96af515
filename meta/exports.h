/*
 * @file exports.h
 * Which mount keys may mount the cluster, and how: meta's export table,
 * in the spirit of MooseFS's mfsexports.cfg. A small text file, by default
 * DATA/exports in meta's data directory (tessera-meta --exports FILE names
 * another), one rule per line (a line starting with '#' is a comment):
 *
 *   NAME    PATH   OPTIONS
 *   laptop  /      ro
 *   *       /      rw,root_squash
 *
 * NAME is a mount key's name in known_keys, or `*` for any mount key; a
 * named rule wins over `*`. PATH is the subtree the key may mount: only
 * `/` for now (meta keeps no parent of a regular file, so it cannot tell
 * cheaply whether an inode lies under a subtree; a line naming another
 * path is refused rather than enforced halfway). OPTIONS, comma-separated:
 * `ro` or `rw` (default), `root_squash` (uid and gid 0 in the owners the
 * mount sends become EXPORTS_NOBODY) or `no_root_squash` (default).
 *
 * With a file, a mount key without a rule may not mount at all. Without
 * one, every mount key mounts / read-write with root not squashed, as
 * before exports. Only requests from mount keys are subject to exports.
 */
#ifndef TESSERA_META_EXPORTS_H
#define TESSERA_META_EXPORTS_H

#include "keys.h"

#include <stdbool.h>
#include <stddef.h>

#define EXPORTS_FILE "exports"
#define EXPORTS_NOBODY 65534u

struct exports_rule {
    char name[KEYS_NAME_MAX + 1]; /* "*" for any mount key */
    bool read_only;
    bool root_squash;
};

/* The table in memory. Zero-initialise; release with exports_clear(). */
struct exports {
    bool present; /* read from a file (else: the default rule for everyone) */
    struct exports_rule *rules;
    size_t count;
};

/*
 * Parses an exports text of len bytes into exports (emptied first; present
 * set). 0, or -EINVAL with why naming the line and what is wrong with it
 * (a bad name, a path other than /, an unknown option, a name twice),
 * -ENOMEM.
 */
int exports_parse(struct exports *exports, const char *text, size_t len, char *why, size_t why_cap);
/* Reads and parses path; -ENOENT (exports left empty, not present) when there is none. */
int exports_read(const char *path, struct exports *exports, char *why, size_t why_cap);
void exports_clear(struct exports *exports);

/*
 * The rule for a mount key's ZAP user id "mount:NAME": its named rule, else
 * `*`'s; NULL when the table is present and has neither (it may not
 * mount). Without a table, the default rule (rw, root not squashed).
 */
const struct exports_rule *exports_find(const struct exports *exports, const char *key_user);

#endif
