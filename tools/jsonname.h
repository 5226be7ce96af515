/*
 * @file jsonname.h
 * File, directory and machine names in the tessera command's JSON output,
 * which is built with jansson (so quotes, backslashes and control bytes
 * are always escaped right). jansson refuses text that is not UTF-8, but a
 * POSIX name is any bytes but '/' and NUL. Such a name is written twice:
 * "KEY" with each byte that is not part of valid UTF-8 replaced by U+FFFD
 * (readable, and what a JSON reader can show), and "KEY_hex" with the
 * name's bytes in lower-case hex (lossless: a script can rebuild the exact
 * name and open the file). A valid UTF-8 name gets "KEY" only, so the
 * common case stays as plain as before. (Not Python's surrogate escapes:
 * lone surrogates are not valid JSON text for strict readers, jansson's
 * included.)
 */
#ifndef TESSERA_TOOLS_JSONNAME_H
#define TESSERA_TOOLS_JSONNAME_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Whether text[0..len) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
bool jsonname_valid_utf8(const char *text, size_t len);

/*
 * name as a JSON string, invalid bytes as U+FFFD; NULL name or out of
 * memory: NULL.
 */
json_t *jsonname_string(const char *name);

/* Sets key (and key_hex for a name that is not UTF-8) in object; 0 or -1. */
int jsonname_set(json_t *object, const char *key, const char *name);

/*
 * Prints root to out on one line (", " and ": " between items, as the
 * command printed before jansson, so line tools keep working) and a
 * newline; consumes root (NULL: -1). 0 or -1.
 */
int jsonname_print(FILE *out, json_t *root);

/*
 * For output streamed by hand (layout show's tiles: a file may have
 * millions): name encoded by jansson as a JSON string, and the member
 * `"key": "..."` (and `, "key_hex": "..."` for a name that is not UTF-8).
 * 0, or -1 when out of memory (nothing printed).
 */
int jsonname_fprint_string(FILE *out, const char *name);
int jsonname_fprint_member(FILE *out, const char *key, const char *name);

#endif
