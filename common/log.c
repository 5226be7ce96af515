/*
 * @file log.c
 * See log.h. The line is built in a local buffer and written with one
 * write(), so lines from different threads never interleave.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char log_program[32] = "tessera";
static enum log_level log_max_level = LOG_LEVEL_INFO;

static const char *const log_level_names[] = {"error", "warn", "info", "debug"};

void log_init(const char *program, enum log_level level)
{
    snprintf(log_program, sizeof(log_program), "%s", program);
    log_max_level = level;
}

int log_level_parse(const char *text, enum log_level *level)
{
    for (int i = 0; i <= LOG_LEVEL_DEBUG; i++) {
        if (strcmp(text, log_level_names[i]) == 0) {
            *level = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

void log_write(enum log_level level, const char *format, ...)
{
    char line[1024];
    struct timespec now;
    struct tm local;
    size_t len;
    va_list args;

    if (level > log_max_level)
        return;
    clock_gettime(CLOCK_REALTIME, &now);
    localtime_r(&now.tv_sec, &local);
    len = strftime(line, sizeof(line), "%Y-%m-%d %H:%M:%S", &local);
    len += (size_t)snprintf(line + len, sizeof(line) - len, ".%03ld %s[%d] %s: ",
                            now.tv_nsec / 1000000, log_program, (int)getpid(),
                            log_level_names[level]);
    va_start(args, format);
    int written = vsnprintf(line + len, sizeof(line) - len, format, args);
    va_end(args);
    if (written < 0)
        written = 0;
    len += (size_t)written;
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored; /* nowhere to report a failed log write */
}
