/*
 * @file keys.h
 * The cluster's CURVE keys on disk: key pair files and the known-keys file.
 *
 * A key directory (`tessera keys init DIR`) holds:
 *   NAME.key    a member's key pair, mode 0600:  "public Z85" and "secret Z85" lines
 *   server.key  the pair every server socket (meta, datanodes) presents, mode 0600
 *   server.pub  its public half alone ("public Z85"), what clients need
 *   known_keys  every member's public key: "ROLE NAME Z85 [revoked]" per line
 * Z85 is ZeroMQ's text form of a 32-byte key (40 characters). Lines
 * starting with '#' and blank lines are ignored. A secret file readable or
 * writable by group or others is refused, never loaded.
 */
#ifndef TESSERA_KEYS_H
#define TESSERA_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define KEYS_Z85_LEN 40
#define KEYS_NAME_MAX 63
#define KEYS_ROLE_MAX 15
#define KEYS_KNOWN_FILE "known_keys"
#define KEYS_SERVER_PAIR_FILE "server.key"
#define KEYS_SERVER_PUBLIC_FILE "server.pub"

struct keys_pair {
    char public_z85[KEYS_Z85_LEN + 1];
    char secret_z85[KEYS_Z85_LEN + 1];
};

/* A fresh pair from zmq_curve_keypair(); 0 or -ENOTSUP (libzmq without CURVE). */
int keys_pair_generate(struct keys_pair *pair);

/*
 * Writes a new pair file at path, mode 0600 (O_EXCL: never over an
 * existing key). 0 or -errno.
 */
int keys_pair_write(const char *path, const struct keys_pair *pair);

/*
 * Reads a pair file. 0; -EPERM when group or others may read or write it
 * (why names the file and says `chmod 600`); -EINVAL when it is not a pair
 * file; -errno when it cannot be read. why gets the reason in every failure.
 */
int keys_pair_read(const char *path, struct keys_pair *pair, char *why, size_t why_cap);

/* Writes text to a new file at path with mode (O_EXCL), synced. 0 or -errno. */
int keys_write_new(const char *path, const char *text, mode_t mode);
/*
 * Reads path whole into a NUL-terminated buffer (*text, *len) the caller
 * frees. With secret, refuses (-EPERM) a file group or others may read or
 * write. 0 or -errno, why saying what is wrong in every failure.
 */
int keys_slurp(const char *path, bool secret, char **text, size_t *len, char *why,
               size_t why_cap);

/* Writes path with the public line only, mode 0644. 0 or -errno. */
int keys_public_write(const char *path, const char *public_z85);
/* Reads the "public" line of path (a pair or a public file). As keys_pair_read. */
int keys_public_read(const char *path, char public_z85[KEYS_Z85_LEN + 1], char *why,
                     size_t why_cap);

/*
 * Splits the line at *cursor (up to '\n' or end) into at most
 * KEYS_LINE_WORDS words, NUL-terminating them in place; advances *cursor.
 * Returns the number of words (0 for a blank or comment line, one whose
 * first word starts with '#'), or -1 for a line with more words than that.
 * The word format of every key file, and of meta's exports (exports.h).
 */
#define KEYS_LINE_WORDS 4
int keys_line_words(char **cursor, char *end, char **words);

/* The roles a key may have. */
bool keys_role_valid(const char *role);
/* 1..KEYS_NAME_MAX of [A-Za-z0-9._-], not starting with '.'. */
bool keys_name_valid(const char *name);
/* KEYS_Z85_LEN characters that zmq_z85_decode() accepts. */
bool keys_z85_valid(const char *text);

struct keys_entry {
    char role[KEYS_ROLE_MAX + 1];
    char name[KEYS_NAME_MAX + 1];
    char public_z85[KEYS_Z85_LEN + 1];
    bool revoked;
};

/* The known-keys file in memory. Zero-initialise; release with keys_known_clear(). */
struct keys_known {
    struct keys_entry *entries;
    size_t count;
    size_t cap;
};

/*
 * Parses a known-keys text of len bytes into known (emptied first). 0, or
 * -EINVAL with why naming the line and what is wrong with it (a bad role,
 * name or key, a name or key twice), -ENOMEM.
 */
int keys_known_parse(struct keys_known *known, const char *text, size_t len, char *why,
                     size_t why_cap);
/* Reads and parses path; as keys_known_parse, or -errno if unreadable. */
int keys_known_read(const char *path, struct keys_known *known, char *why, size_t why_cap);
/* Writes known to dir/known_keys whole or not at all (mode 0644). 0 or -errno. */
int keys_known_write(const char *dir, const struct keys_known *known);
/* Adds an entry; -EEXIST if the name or the key is already there, -EINVAL, -ENOMEM. */
int keys_known_add(struct keys_known *known, const char *role, const char *name,
                   const char *public_z85);
/* The entry of a key / a name, or NULL. */
const struct keys_entry *keys_known_find_key(const struct keys_known *known,
                                             const char *public_z85);
struct keys_entry *keys_known_find_name(struct keys_known *known, const char *name);
void keys_known_clear(struct keys_known *known);

#endif
