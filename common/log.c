/*
 * @file log.c
 * See log.h. The line is built in a local buffer and written with one
 * write(), so lines from different threads never interleave.
 *
 * A log file (--log-file) is opened onto stderr itself (dup2), so that
 * whatever else writes to stderr (libraries, sanitizers) lands in it too;
 * reopening after a rotation is open() and dup2() over fd 2, both
 * async-signal-safe, so a SIGHUP handler may call log_reopen() directly
 * and a thread writing meanwhile writes whole lines to one file or the
 * other.
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char log_program[32] = "tessera";
static enum log_level log_max_level = LOG_LEVEL_INFO;

static const char *const log_level_names[] = {"error", "warn", "info", "debug"};
static char log_path[PATH_MAX]; /* "" while logging to the inherited stderr */

/* Opens log_path onto stderr. 0 or -errno; async-signal-safe. */
static int log_open_path(void)
{
    int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        return -errno;
    if (fd != STDERR_FILENO) {
        int rc = dup2(fd, STDERR_FILENO) < 0 ? -errno : 0;
        close(fd);
        return rc;
    }
    return 0;
}

int log_set_file(const char *path)
{
    char cwd[PATH_MAX];
    if (!*path)
        return -EINVAL;
    /* Absolute: a reopen after the daemon changed directory (chdir "/") finds it. */
    if (path[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL) {
        int len = snprintf(log_path, sizeof(log_path), "%s/%s", cwd, path);
        if (len < 0 || (size_t)len >= sizeof(log_path))
            return -ENAMETOOLONG;
    } else {
        if (strlen(path) >= sizeof(log_path))
            return -ENAMETOOLONG;
        memcpy(log_path, path, strlen(path) + 1);
    }
    int rc = log_open_path();
    if (rc != 0)
        log_path[0] = '\0';
    return rc;
}

bool log_has_file(void)
{
    return log_path[0] != '\0';
}

int log_reopen(void)
{
    int saved = errno; /* a signal handler must leave errno as it found it */
    int rc = log_path[0] ? log_open_path() : 0;
    errno = saved;
    return rc;
}

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
    /* ISO 8601 with the zone, e.g. 2026-11-28T02:03:49.325+01:00: what journald,
     * logrotate'd archives and `date -d` read without guessing the zone. */
    long offset_min = local.tm_gmtoff / 60;
    char sign = offset_min < 0 ? '-' : '+';
    if (offset_min < 0)
        offset_min = -offset_min;
    len = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &local);
    len += (size_t)snprintf(
        line + len, sizeof(line) - len, ".%03ld%c%02ld:%02ld %s[%d] %s: ", now.tv_nsec / 1000000,
        sign, offset_min / 60, offset_min % 60, log_program, (int)getpid(), log_level_names[level]);
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
