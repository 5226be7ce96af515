/*
 * @file fmt.h
 * Checked string formatting for the tessera command: paths and messages are
 * built with snprintf only, and a result that did not fit is an error the
 * caller sees, never a silently truncated path.
 */
#ifndef TESSERA_TOOLS_FMT_H
#define TESSERA_TOOLS_FMT_H

#include <stddef.h>
#include <stdint.h>

/*
 * snprintf into out (cap bytes including the NUL). Returns 0, or
 * -ENAMETOOLONG if the text did not fit (out then holds a truncated string).
 */
int fmt_into(char *out, size_t cap, const char *format, ...) __attribute__((format(printf, 3, 4)));

/*
 * A byte count for people: "0B", "512B", "1.5K", "20M", "1.5G" (binary
 * units; one decimal below 10). Always NUL-terminates when cap > 0.
 */
void fmt_size(uint64_t bytes, char *out, size_t cap);

#endif
