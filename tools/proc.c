/*
 * @file proc.c
 * See proc.h. The child side of proc_spawn() runs between fork and exec in
 * a process that may hold ZeroMQ threads, so it calls only
 * async-signal-safe functions; everything it needs (argv, the failure
 * message, the descriptors) is prepared before fork.
 */
#include "proc.h"

#include "fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define PROC_KILL_WAIT_MS 2000
#define PROC_POLL_MS 20
#define PROC_TAIL_BYTES 16384

void proc_sleep_ms(int ms)
{
    struct timespec delay = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&delay, NULL);
}

/* write() all of buf, ignoring failures (used only for log lines). */
static void proc_write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t written = write(fd, buf, len);
        if (written <= 0)
            return;
        buf += written;
        len -= (size_t)written;
    }
}

/* Appends "=== <time> tessera up: starting ARGV ===" to the log. */
static void proc_log_banner(int log_fd, char *const argv[])
{
    char line[2048];
    size_t len = 0;
    time_t now = time(NULL);
    struct tm local;

    localtime_r(&now, &local);
    len = strftime(line, sizeof(line), "=== %Y-%m-%d %H:%M:%S tessera up: starting", &local);
    for (size_t i = 0; argv[i] && len < sizeof(line); i++) {
        int written = snprintf(line + len, sizeof(line) - len, " %s", argv[i]);
        if (written < 0)
            break;
        len += (size_t)written;
    }
    if (len >= sizeof(line) - 6)
        len = sizeof(line) - 6;
    memcpy(line + len, " ===\n", 5);
    proc_write_all(log_fd, line, len + 5);
}

/*
 * Writes " (errno N)\n" without stdio or strerror, neither of which is safe
 * between fork and exec.
 */
static void proc_write_errno(int fd, int error)
{
    char text[32] = " (errno ";
    char digits[12];
    size_t len = strlen(text);
    size_t count = 0;

    do {
        digits[count++] = (char)('0' + error % 10);
        error /= 10;
    } while (error > 0 && count < sizeof(digits));
    while (count > 0)
        text[len++] = digits[--count];
    text[len++] = ')';
    text[len++] = '\n';
    proc_write_all(fd, text, len);
}

/* The child: never returns. Only async-signal-safe calls from here on. */
static void proc_child(char *const argv[], int null_fd, int log_fd, const char *exec_error,
                       size_t exec_error_len)
{
    if (setsid() < 0)
        _exit(127);
    if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 ||
        dup2(log_fd, STDERR_FILENO) < 0)
        _exit(127);
    /* Nothing of ours (ZeroMQ's sockets, the state lock) may leak in. */
    close_range(3, UINT_MAX, 0);
    execv(argv[0], argv);
    proc_write_all(STDERR_FILENO, exec_error, exec_error_len);
    proc_write_errno(STDERR_FILENO, errno);
    _exit(127);
}

int proc_spawn(char *const argv[], const char *log_path, pid_t *pid)
{
    char exec_error[PATH_MAX + 64];
    int null_fd;
    int log_fd;
    int result = 0;
    pid_t child;

    snprintf(exec_error, sizeof(exec_error), "tessera up: cannot execute %s", argv[0]);
    null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0)
        return -errno;
    log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        result = -errno;
        goto close_null;
    }
    proc_log_banner(log_fd, argv);
    child = fork();
    if (child < 0) {
        result = -errno;
        goto close_log;
    }
    if (child == 0)
        proc_child(argv, null_fd, log_fd, exec_error, strlen(exec_error));
    *pid = child;
close_log:
    close(log_fd);
close_null:
    close(null_fd);
    return result;
}

int proc_pidfile_read(const char *path, pid_t *pid)
{
    char text[32];
    long value;
    ssize_t len;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    *pid = 0;
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    len = read(fd, text, sizeof(text) - 1);
    if (len < 0) {
        int saved = errno;
        close(fd);
        return -saved;
    }
    close(fd);
    text[len] = '\0';
    text[strcspn(text, "\r\n")] = '\0';
    if (util_parse_long(text, 1, INT_MAX, &value) == 0)
        *pid = (pid_t)value;
    return 0;
}

int proc_pidfile_write(const char *path, pid_t pid)
{
    char temp_path[PATH_MAX];
    char text[32];
    int fd;
    int result = 0;
    int len = snprintf(text, sizeof(text), "%d\n", (int)pid);

    if (fmt_into(temp_path, sizeof(temp_path), "%s.tmp", path) != 0)
        return -ENAMETOOLONG;
    fd = open(temp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    if (write(fd, text, (size_t)len) != len)
        result = errno ? -errno : -EIO;
    if (close(fd) != 0 && result == 0)
        result = -errno;
    if (result == 0 && rename(temp_path, path) != 0)
        result = -errno;
    if (result != 0)
        unlink(temp_path);
    return result;
}

bool proc_is_running(pid_t pid, const char *name)
{
    char path[64];
    char cmdline[PATH_MAX];
    ssize_t len;
    int fd;

    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
        return false;
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    len = read(fd, cmdline, sizeof(cmdline) - 1);
    close(fd);
    if (len <= 0)
        return false;    /* a zombie or a kernel thread */
    cmdline[len] = '\0'; /* argv[0] ends at the first NUL */
    return strstr(cmdline, name) != NULL;
}

bool proc_is_dying(pid_t pid)
{
    char path[64];
    char line[256];
    unsigned long long mask;
    bool dying = false;
    FILE *status;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    status = fopen(path, "re");
    if (!status)
        return false;
    while (!dying && fgets(line, sizeof(line), status)) {
        if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
             sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
            (mask & (1ull << (SIGKILL - 1))))
            dying = true;
    }
    fclose(status);
    return dying;
}

bool proc_has_exited(pid_t pid, const char *name, int *wait_status)
{
    int status = 0;
    pid_t waited;

    *wait_status = -1;
    if (pid <= 0) /* waitpid would take any child */
        return true;
    waited = waitpid(pid, &status, WNOHANG);
    if (waited == pid) {
        *wait_status = status;
        return true;
    }
    if (waited == 0)
        return false;
    return !proc_is_running(pid, name); /* not our child */
}

void proc_describe_exit(int wait_status, char *out, size_t cap)
{
    if (wait_status < 0)
        snprintf(out, cap, "exited");
    else if (WIFEXITED(wait_status))
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(wait_status));
    else if (WIFSIGNALED(wait_status))
        snprintf(out, cap, "was killed by signal %d (%s)", WTERMSIG(wait_status),
                 strsignal(WTERMSIG(wait_status)));
    else
        snprintf(out, cap, "exited");
}

/* Signals every running target; marks them. */
static void proc_signal_all(struct proc_target *targets, size_t count, int signal_number,
                            bool *pending)
{
    int ignored;
    for (size_t i = 0; i < count; i++) {
        if (!pending[i])
            continue;
        if (proc_has_exited(targets[i].pid, targets[i].name, &ignored)) {
            pending[i] = false;
            targets[i].stopped = true;
            continue;
        }
        kill(targets[i].pid, signal_number);
    }
}

/* Waits until no target is pending or the deadline; returns how many remain. */
static size_t proc_wait_all(struct proc_target *targets, size_t count, bool *pending,
                            int timeout_ms)
{
    int64_t deadline = util_monotonic_ms() + timeout_ms;
    int ignored;
    for (;;) {
        size_t remaining = 0;
        for (size_t i = 0; i < count; i++) {
            if (pending[i] && proc_has_exited(targets[i].pid, targets[i].name, &ignored)) {
                pending[i] = false;
                targets[i].stopped = true;
            }
            remaining += pending[i];
        }
        if (remaining == 0 || util_monotonic_ms() >= deadline)
            return remaining;
        proc_sleep_ms(PROC_POLL_MS);
    }
}

int proc_stop(struct proc_target *targets, size_t count, int timeout_ms)
{
    bool *pending = calloc(count ? count : 1, sizeof(*pending));
    int result = 0;
    int ignored;

    if (!pending)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        targets[i].stopped = false;
        targets[i].killed = false;
        pending[i] =
            targets[i].pid > 0 && !proc_has_exited(targets[i].pid, targets[i].name, &ignored);
    }
    proc_signal_all(targets, count, SIGTERM, pending);
    if (proc_wait_all(targets, count, pending, timeout_ms) == 0)
        goto out;
    for (size_t i = 0; i < count; i++)
        targets[i].killed = pending[i];
    proc_signal_all(targets, count, SIGKILL, pending);
    if (proc_wait_all(targets, count, pending, PROC_KILL_WAIT_MS) != 0)
        result = -ETIMEDOUT;
out:
    free(pending);
    return result;
}

int proc_log_tail(const char *path, int lines, const char *indent, FILE *out)
{
    char buf[PROC_TAIL_BYTES + 1];
    struct stat st;
    off_t start;
    ssize_t len;
    char *begin;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        return -saved;
    }
    start = st.st_size > PROC_TAIL_BYTES ? st.st_size - PROC_TAIL_BYTES : 0;
    len = pread(fd, buf, PROC_TAIL_BYTES, start);
    close(fd);
    if (len < 0)
        return -EIO;
    while (len > 0 && buf[len - 1] == '\n')
        len--;
    buf[len] = '\0';
    begin = buf + len;
    for (int seen = 0; begin > buf; begin--) {
        if (begin[-1] == '\n' && ++seen == lines)
            break;
    }
    for (char *line = begin; *line;) {
        char *end = strchr(line, '\n');
        int line_len = end ? (int)(end - line) : (int)strlen(line);
        fprintf(out, "%s%.*s\n", indent, line_len, line);
        line += line_len + (end ? 1 : 0);
    }
    return 0;
}
