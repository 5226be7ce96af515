/*
 * @file log.h
 * Logging to stderr, one line per event: time, program, level, message.
 * Thread-safe (one write() per line).
 */
#ifndef TESSERA_LOG_H
#define TESSERA_LOG_H

enum log_level { LOG_LEVEL_ERROR = 0, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_init(const char *program, enum log_level level);
/* "error", "warn", "info" or "debug"; returns -1 if unknown. */
int log_level_parse(const char *text, enum log_level *level);
void log_write(enum log_level level, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

#define log_error(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_write(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_write(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_write(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
