/*
 * @file util.c
 * See util.h.
 */
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int64_t util_monotonic_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

void util_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec pause = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR)
        continue;
}

int64_t util_monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static int64_t util_started_ms;

/* Runs before main(): the process's start on the monotonic clock. */
__attribute__((constructor)) static void util_note_start(void)
{
    util_started_ms = util_monotonic_ms();
}

int64_t util_process_age_ms(void) { return util_monotonic_ms() - util_started_ms; }

struct timespec util_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now;
}

void util_timespec_add_ms(struct timespec *at, int64_t ms)
{
    at->tv_sec += (time_t)(ms / 1000);
    at->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (at->tv_nsec >= 1000000000L) {
        at->tv_sec++;
        at->tv_nsec -= 1000000000L;
    }
}

struct timespec util_monotonic_deadline(int64_t ms)
{
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    util_timespec_add_ms(&at, ms);
    return at;
}

void util_cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

int util_parse_size(const char *text, uint64_t *bytes)
{
    char *end = NULL;
    unsigned long long value;
    unsigned shift = 0;

    if (!text || !*text || *text == '-')
        return -EINVAL;
    errno = 0;
    value = strtoull(text, &end, 10);
    if (errno != 0 || end == text)
        return -EINVAL;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: return -EINVAL;
    }
    if (*end == 'i' || *end == 'B')
        end++;
    if (*end == 'B')
        end++;
    if (*end != '\0' || (shift && value > (ULLONG_MAX >> shift)))
        return -EINVAL;
    *bytes = (uint64_t)value << shift;
    return 0;
}

int util_parse_long(const char *text, long min, long max, long *value)
{
    char *end = NULL;
    long parsed;
    if (!text || !*text)
        return -EINVAL;
    errno = 0;
    parsed = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || parsed < min || parsed > max)
        return -EINVAL;
    *value = parsed;
    return 0;
}

int util_mkdir_p(const char *path, unsigned mode)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST)
            return -errno;
        buf[i] = saved;
    }
    return 0;
}

int util_pread_upto(int fd, void *buf, size_t len, uint64_t offset, size_t *got)
{
    *got = 0;
    while (*got < len) {
        ssize_t n = pread(fd, (char *)buf + *got, len - *got, (off_t)(offset + *got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break; /* the end of the file */
        *got += (size_t)n;
    }
    return 0;
}

int util_fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int result = 0;
    if (fd < 0)
        return -errno;
    if (fsync(fd) != 0)
        result = -errno;
    close(fd);
    return result;
}

int util_write_file_durably(const char *dir, const char *name, const void *data, size_t len)
{
    char path[4200];
    char tmp_path[4200];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
        (size_t)snprintf(tmp_path, sizeof(tmp_path), "%s/%s.tmp", dir, name) >= sizeof(tmp_path))
        return -ENAMETOOLONG;
    int rc = 0;
    int fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    ssize_t written = write(fd, data, len);
    if (written < 0)
        rc = -errno;
    else if ((size_t)written != len)
        rc = -EIO;
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    close(fd);
    if (rc == 0 && rename(tmp_path, path) != 0)
        rc = -errno;
    if (rc == 0)
        rc = util_fsync_dir(dir);
    if (rc != 0)
        unlink(tmp_path);
    return rc;
}

void util_machine_name(char *out, size_t cap)
{
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    char *dot = strchr(host, '.');
    if (dot)
        *dot = '\0';
    snprintf(out, cap, "%s", host);
}

int util_endpoint_ipv4(const char *endpoint, struct in_addr *address)
{
    char host[64];
    const char *colon;
    size_t len;

    if (strncmp(endpoint, "tcp://", 6) != 0)
        return -EINVAL;
    endpoint += 6;
    colon = strrchr(endpoint, ':');
    len = colon ? (size_t)(colon - endpoint) : 0;
    if (len == 0 || len >= sizeof(host))
        return -EINVAL;
    memcpy(host, endpoint, len);
    host[len] = '\0';
    if (strcmp(host, "*") == 0) {
        address->s_addr = htonl(INADDR_ANY);
        return 0;
    }
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    return inet_pton(AF_INET, host, address) == 1 ? 0 : -EINVAL;
}

socklen_t util_abstract_address(const char *name, struct sockaddr_un *address)
{
    size_t len = strnlen(name, sizeof(address->sun_path) - 1);
    *address = (struct sockaddr_un){.sun_family = AF_UNIX};
    memcpy(address->sun_path + 1, name, len);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

int util_pipe_open(int fds[2], int bytes, bool size_required)
{
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fds[0] = fds[1] = -1;
        return -errno;
    }
    if (fcntl(fds[0], F_SETPIPE_SZ, bytes) < 0 && size_required) {
        int error = -errno;
        util_pipe_close(fds);
        return error;
    }
    return 0;
}

void util_pipe_close(int fds[2])
{
    for (int i = 0; i < 2; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        fds[i] = -1;
    }
}

ssize_t util_splice_from_socket(int sock, int pipe_fd, size_t len, bool poll_when_empty,
                                int timeout_ms)
{
    size_t taken = 0;
    bool waited = false; /* poll() said the socket has bytes since the last splice */
    while (taken < len) {
        ssize_t moved = splice(sock, NULL, pipe_fd, NULL, len - taken, SPLICE_F_NONBLOCK);
        if (moved < 0 && errno == EINTR)
            continue;
        if (moved < 0 && errno == EAGAIN) {
            if (!poll_when_empty || waited)
                break; /* the pipe is full */
            struct pollfd readable = {.fd = sock, .events = POLLIN};
            int ready = poll(&readable, 1, timeout_ms);
            if (ready < 0 && errno == EINTR)
                continue;
            if (ready != 1)
                return -1;
            waited = true;
            continue;
        }
        if (moved <= 0)
            return -1;
        waited = false;
        taken += (size_t)moved;
    }
    return (ssize_t)taken;
}

/* Edit distance with swaps of neighbours (optimal string alignment), words of up to 63 bytes. */
static size_t util_edit_distance(const char *a, const char *b)
{
    enum { MAX = 64 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAX || lb >= MAX)
        return MAX;
    size_t d[MAX][MAX];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

const char *util_closest_name(const char *word, const char *const *names, size_t count)
{
    size_t limit = strlen(word) / 3 > 1 ? strlen(word) / 3 : 1;
    const char *best = NULL;
    size_t best_distance = limit + 1;
    bool tie = false;
    for (size_t i = 0; i < count; i++) {
        size_t distance = util_edit_distance(word, names[i]);
        if (distance < best_distance) {
            best = names[i];
            best_distance = distance;
            tie = false;
        } else if (distance == best_distance && best && strcmp(best, names[i]) != 0) {
            tie = true;
        }
    }
    return tie ? NULL : best;
}

const char *util_closest_long_option(const struct option *options, const char *arg)
{
    const char *names[128];
    size_t count = 0;
    char name[64];
    if (strncmp(arg, "--", 2) != 0)
        return NULL;
    snprintf(name, sizeof(name), "%s", arg + 2);
    name[strcspn(name, "=")] = '\0'; /* "--name=value": the name is what was mistyped */
    for (const struct option *o = options; o->name && count < 128; o++)
        names[count++] = o->name;
    return util_closest_name(name, names, count);
}
