/*
 * @file exports.h
 * Which mount keys may mount the cluster, and how: meta's export table,
 * in the spirit of MooseFS's mfsexports.cfg. A small text file, by default
 * DATA/exports in meta's data directory (tessera-meta --exports FILE names
 * another), one rule per line (a line starting with '#' is a comment):
 *
 *   NAME    PATH   OPTIONS
 *   laptop  /      ro
 *   alice   /projects/a  rw
 *   *       /      rw,root_squash
 *
 * NAME is a mount key's name in known_keys, or `*` for any mount key; a
 * named rule wins over `*`. PATH is the directory the key may mount: `/`
 * (everything) or an absolute path such as /projects/a. A mount of a key
 * whose PATH is not `/` sees that directory as its root: meta reads its
 * inode 1 as the directory PATH names (resolved at each request, so a
 * rename of the directory moves the export to whatever PATH names then,
 * as with NFS exports by path), answers `..` of it with itself, and
 * refuses with TS_ERR_PERM (EPERM, as MooseFS's master does for an inode
 * outside a session's root) every request naming an inode not under it:
 * a file is under it when one of its links is (meta/subtree.h), an
 * unlinked file only while the sending mount holds it open. A rename or
 * link out of the subtree names a directory outside, so it is refused too.
 * A PATH that names nothing (or not a directory) refuses every request of
 * the key until it does. OPTIONS, comma-separated:
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

#define EXPORTS_PATH_MAX 1024

struct exports_rule {
    char name[KEYS_NAME_MAX + 1]; /* "*" for any mount key */
    char path[EXPORTS_PATH_MAX];  /* normalised: "/", or "/a/b" (no "//", no trailing "/") */
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
 * (a bad name, a path not absolute or with . or .., an unknown option,
 * a name twice),
 * -ENOMEM.
 */
int exports_parse(struct exports *exports, const char *text, size_t len, char *why, size_t why_cap);
/* Reads and parses path; -ENOENT (exports left empty, not present) when there is none. */
int exports_read(const char *path, struct exports *exports, char *why, size_t why_cap);
void exports_clear(struct exports *exports);

/* Whether rule exports a subtree rather than the whole namespace. */
bool exports_rule_subtree(const struct exports_rule *rule);

/*
 * The rule for a mount key's ZAP user id "mount:NAME": its named rule, else
 * `*`'s; NULL when the table is present and has neither (it may not
 * mount). Without a table, the default rule (rw, root not squashed).
 */
const struct exports_rule *exports_find(const struct exports *exports, const char *key_user);

#endif
