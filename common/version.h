/*
 * @file version.h
 * What every program prints for --version: the project's version (meson's
 * project version), the git revision it was built from (or "unknown"
 * outside a git tree) and the wire protocol version, so an operator can
 * tell at once whether two machines run builds that can talk.
 */
#ifndef TESSERA_VERSION_H
#define TESSERA_VERSION_H

#include <stdio.h>

/* "0.1.0 (revision 6efa128, protocol 5)". */
const char *version_text(void);

/* Prints "PROGRAM VERSION_TEXT\n" to out. */
void version_print(FILE *out, const char *program);

#endif
