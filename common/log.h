/*
 * @file log.h
 * Logging to stderr, one line per event: time (ISO 8601, milliseconds and
 * zone), program[pid], level, message. Thread-safe (one write() per line).
 * With log_set_file(), stderr is that file, reopened by log_reopen() (on
 * SIGHUP, after logrotate moved it).
 */
#ifndef TESSERA_LOG_H
#define TESSERA_LOG_H

#include <stdbool.h>

enum log_level { LOG_LEVEL_ERROR = 0, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_init(const char *program, enum log_level level);
/* "error", "warn", "info" or "debug"; returns -1 if unknown. */
int log_level_parse(const char *text, enum log_level *level);
void log_write(enum log_level level, const char *format, ...) __attribute__((format(printf, 2, 3)));

/*
 * Appends to path (created 0640 if missing) from now on, as stderr: 0, or
 * -errno with stderr unchanged. Call before any thread starts.
 */
int log_set_file(const char *path);

/* Whether log_set_file() succeeded: stderr is the log file. */
bool log_has_file(void);

/*
 * Opens the log file's path again (a new file after a rotation): 0, or
 * -errno and the old file is kept. Async-signal-safe; keeps errno. Does
 * nothing without a log file.
 */
int log_reopen(void);

#define log_error(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_write(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_write(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_write(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
