/* Builds pass -D_GNU_SOURCE too; the guard keeps the file standalone without a redefinition. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define _FILE_OFFSET_BITS 64
/*
 * @file posix_test.c
 * POSIX conformance runner for a mounted Tessera filesystem (or any directory).
 *
 * Usage: posix_test DIR [TEST_NAME...]
 *
 * Each test is one `static int test_<name>(const char *dir)` in the table `tests[]`. It gets a
 * fresh, empty directory DIR/t-<name>-<pid>, checks one area of POSIX behaviour with the CHECK
 * macros and returns 0 (pass), -1 (fail, the reason is in `failure_text`) or TEST_SKIP. The
 * runner removes the directory afterwards and prints one TAP line per test, so meson's
 * `protocol: 'tap'` shows each result. The design follows libfuse's test/test_syscalls.c.
 *
 * Every test runs in a forked child. A filesystem under development can crash a test (SIGBUS
 * from a mapping) or hang it, and the runner must still report the others; a child killed by
 * a signal or by the per-test alarm is reported as a failure. Because the child exits right
 * after the test, a failed CHECK may return early without closing descriptors, freeing
 * buffers or unmapping: the kernel cleans up. The parent removes the test directory only
 * after the child has exited, so no leftover descriptor keeps an unlinked file alive.
 *
 * Where POSIX allows a choice, the expected errno is Linux's (ENOTEMPTY rather than EEXIST for
 * a non-empty directory, EISDIR for unlink() of a directory), because programs on Tessera's
 * clients are written against Linux.
 *
 * Environment: POSIX_TEST_SKIP=name,name reports those tests as skipped; POSIX_TEST_BIG=1
 * also runs the slow tests (readdir_100k).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

/* A test returns this (with a reason in failure_text) when it cannot run here. */
#define TEST_SKIP 77

/* Exit status of a test child that skipped; 0 is pass, anything else a failure. */
#define EXIT_SKIP 77

/* Per-test alarm in the child: a hung FUSE request must not stall the whole run forever. */
#define TEST_TIMEOUT_SECONDS 600
#define BIG_TEST_TIMEOUT_SECONDS 3600

/*
 * DIR must leave room under PATH_MAX for the test subdirectory, a 256-byte name and a few
 * nested components, so that path_in() can never truncate.
 */
#define MAX_DIR_LENGTH 2048

/* The unprivileged user and group the permission test switches to ("nobody" on Debian). */
#define NOBODY_ID 65534

#define KiB ((uint64_t)1024)
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

/* What the first failed check said; the parent prints it after "not ok N - name # ". */
static char failure_text[1024];

static void fail_at(const char *file, int line, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Records a failure at file:line. The first failure wins: when a helper has already said what
 * went wrong, the caller's CHECK only appends its own location, which gives a short back trace
 * ("x.c:10: byte at offset 5 is ... <- x.c:99").
 */
static void fail_at(const char *file, int line, const char *format, ...)
{
    const char *slash = strrchr(file, '/');
    size_t used = strlen(failure_text);
    va_list args;
    int written;

    if (slash != NULL)
        file = slash + 1;
    if (used > 0) {
        snprintf(failure_text + used, sizeof(failure_text) - used, " <- %s:%d", file, line);
        return;
    }
    written = snprintf(failure_text, sizeof(failure_text), "%s:%d: ", file, line);
    if (written < 0 || (size_t)written >= sizeof(failure_text))
        return;
    va_start(args, format);
    vsnprintf(failure_text + written, sizeof(failure_text) - (size_t)written, format, args);
    va_end(args);
}

/* The symbolic name of an errno value, for messages; "E?" for ones this file never expects. */
static const char *errno_name(int error)
{
    static const struct {
        int value;
        const char *name;
    } names[] = {
        {EPERM, "EPERM"},
        {ENOENT, "ENOENT"},
        {EIO, "EIO"},
        {EBADF, "EBADF"},
        {EACCES, "EACCES"},
        {EBUSY, "EBUSY"},
        {EEXIST, "EEXIST"},
        {EXDEV, "EXDEV"},
        {ENOTDIR, "ENOTDIR"},
        {EISDIR, "EISDIR"},
        {EINVAL, "EINVAL"},
        {EFBIG, "EFBIG"},
        {ENOSPC, "ENOSPC"},
        {EROFS, "EROFS"},
        {EMLINK, "EMLINK"},
        {ERANGE, "ERANGE"},
        {ENAMETOOLONG, "ENAMETOOLONG"},
        {ENOSYS, "ENOSYS"},
        {ENOTEMPTY, "ENOTEMPTY"},
        {ELOOP, "ELOOP"},
        {ENODATA, "ENODATA"},
        {EOPNOTSUPP, "EOPNOTSUPP"},
        {E2BIG, "E2BIG"},
        {EAGAIN, "EAGAIN"},
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (names[i].value == error)
            return names[i].name;
    }
    return "E?";
}

/* Records why a call that should have failed with `expected` did something else. */
static void fail_errno_at(const char *file, int line, const char *expression, intmax_t result,
                          int error, int expected)
{
    if (result != -1) {
        fail_at(file, line, "%s: expected %s, but it returned %jd", expression,
                errno_name(expected), result);
    } else {
        fail_at(file, line, "%s: expected %s, got %s (%s)", expression, errno_name(expected),
                errno_name(error), strerror(error));
    }
}

/* Fails the test unless expr is true; the message carries strerror(errno) of the last call. */
#define CHECK(expr)                                                                                \
    do {                                                                                           \
        if (!(expr)) {                                                                             \
            fail_at(__FILE__, __LINE__, "%s: %s", #expr, strerror(errno));                         \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* Fails the test unless two integers are equal; the message shows both values. */
#define CHECK_EQ(actual, expected)                                                                 \
    do {                                                                                           \
        intmax_t actual_ = (intmax_t)(actual);                                                     \
        int errno_ = errno;                                                                        \
        intmax_t expected_ = (intmax_t)(expected);                                                 \
        if (actual_ != expected_) {                                                                \
            fail_at(__FILE__, __LINE__, "%s == %s: got %jd%s%s%s, expected %jd", #actual,          \
                    #expected, actual_, actual_ == -1 ? " (" : "",                                 \
                    actual_ == -1 ? strerror(errno_) : "", actual_ == -1 ? ")" : "", expected_);   \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* Fails the test unless expr (a call returning -1 on error) fails with errno `expected`. */
#define CHECK_ERRNO(expr, expected)                                                                \
    do {                                                                                           \
        errno = 0;                                                                                 \
        intmax_t result_ = (intmax_t)(expr);                                                       \
        int errno_ = errno;                                                                        \
        if (result_ != -1 || errno_ != (expected)) {                                               \
            fail_errno_at(__FILE__, __LINE__, #expr, result_, errno_, (expected));                 \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* Fails the test with a formatted message. */
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fail_at(__FILE__, __LINE__, __VA_ARGS__);                                                  \
        return -1;                                                                                 \
    } while (0)

/* ---------------------------------------------------------------------------------------- */
/* Helpers. Each returns 0 or -1 after recording the failure, so tests wrap them in CHECK.  */
/* ---------------------------------------------------------------------------------------- */

/*
 * Writes "dir/name" into out, which has PATH_MAX bytes, and returns out. main() rejects a DIR
 * long enough to make this truncate, so truncation is a bug in this file and aborts.
 */
static char *path_in(char *out, const char *dir, const char *name)
{
    int written = snprintf(out, PATH_MAX, "%s/%s", dir, name);

    if (written < 0 || written >= PATH_MAX) {
        fprintf(stderr, "posix_test: path too long: %s/%s\n", dir, name);
        abort();
    }
    return out;
}

/*
 * The byte a test file holds at `offset` for a given seed. It is a hash of the offset rather
 * than a repeating sequence, so a block written or read at the wrong place never matches by
 * accident, whatever the block or tile size.
 */
static unsigned char pattern_byte(uint64_t offset, uint32_t seed)
{
    uint64_t x = offset * UINT64_C(0x9E3779B97F4A7C15) + seed;

    x ^= x >> 31;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 29;
    return (unsigned char)x;
}

static void fill_pattern(unsigned char *buffer, size_t length, uint64_t offset, uint32_t seed)
{
    for (size_t i = 0; i < length; i++)
        buffer[i] = pattern_byte(offset + i, seed);
}

/*
 * Compares `length` bytes read from file offset `file_offset` with what the test expects and
 * names the first byte that differs.
 */
static int check_bytes(const unsigned char *got, const unsigned char *expected, size_t length,
                       uint64_t file_offset)
{
    if (memcmp(got, expected, length) == 0)
        return 0;
    for (size_t i = 0; i < length; i++) {
        if (got[i] != expected[i]) {
            FAIL("byte at offset %" PRIu64 " is 0x%02x, expected 0x%02x", file_offset + i, got[i],
                 expected[i]);
        }
    }
    return 0;
}

/* Checks that `length` bytes read from file offset `file_offset` are all zero. */
static int check_zeros(const unsigned char *got, size_t length, uint64_t file_offset)
{
    for (size_t i = 0; i < length; i++) {
        if (got[i] != 0) {
            FAIL("byte at offset %" PRIu64 " is 0x%02x, expected 0 (hole or truncated region)",
                 file_offset + i, got[i]);
        }
    }
    return 0;
}

/* Writes all of data at the current offset of fd, continuing after short writes. */
static int write_full(int fd, const void *data, size_t length)
{
    const unsigned char *bytes = data;
    size_t done = 0;

    while (done < length) {
        ssize_t written = write(fd, bytes + done, length - done);
        CHECK(written > 0);
        done += (size_t)written;
    }
    return 0;
}

/* Reads exactly length bytes at the current offset of fd, continuing after short reads. */
static int read_full(int fd, void *data, size_t length)
{
    unsigned char *bytes = data;
    size_t done = 0;

    while (done < length) {
        ssize_t got = read(fd, bytes + done, length - done);
        CHECK(got != -1);
        if (got == 0)
            FAIL("end of file after %zu of %zu bytes", done, length);
        done += (size_t)got;
    }
    return 0;
}

/* Creates or truncates path (mode 0644) and fills it with data. */
static int write_file(const char *path, const void *data, size_t length)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    CHECK(fd >= 0);
    CHECK(write_full(fd, data, length) == 0);
    CHECK(close(fd) == 0);
    return 0;
}

/*
 * Checks that fd's file is exactly `length` bytes equal to `expected`: fstat size, a read()
 * from the start, and nothing readable past the end. Moves the file offset.
 */
static int check_fd_content(int fd, const unsigned char *expected, size_t length)
{
    unsigned char chunk[64 * 1024];
    struct stat st;
    size_t offset = 0;

    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_size, length);
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    while (offset < length) {
        size_t want = length - offset < sizeof(chunk) ? length - offset : sizeof(chunk);
        ssize_t got = read(fd, chunk, want);

        CHECK(got != -1);
        if (got == 0)
            FAIL("end of file at offset %zu, size is %zu", offset, length);
        CHECK(check_bytes(chunk, expected + offset, (size_t)got, offset) == 0);
        offset += (size_t)got;
    }
    CHECK_EQ(read(fd, chunk, 1), 0);
    return 0;
}

/* check_fd_content() through a fresh descriptor, i.e. after the writer closed the file. */
static int check_file_content(const char *path, const void *expected, size_t length)
{
    int fd = open(path, O_RDONLY);

    CHECK(fd >= 0);
    CHECK(check_fd_content(fd, expected, length) == 0);
    CHECK(close(fd) == 0);
    return 0;
}

/*
 * Lists directory `path`: *entries gets the number of entries other than "." and "..", and
 * *found whether `name` is one of them (name may be NULL).
 */
static int list_directory(const char *path, const char *name, int *entries, bool *found)
{
    DIR *stream = opendir(path);
    struct dirent *entry;

    CHECK(stream != NULL);
    *entries = 0;
    if (found != NULL)
        *found = false;
    for (;;) {
        errno = 0;
        entry = readdir(stream);
        if (entry == NULL)
            break;
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        (*entries)++;
        if (name != NULL && strcmp(entry->d_name, name) == 0)
            *found = true;
    }
    CHECK_EQ(errno, 0);
    CHECK(closedir(stream) == 0);
    return 0;
}

static bool timespec_equal(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool timespec_after(struct timespec a, struct timespec b)
{
    return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

/* Sets both atime and mtime of path to seconds.nanoseconds. */
static int set_times(const char *path, time_t seconds, long nanoseconds)
{
    struct timespec times[2] = {{seconds, nanoseconds}, {seconds, nanoseconds}};

    CHECK(utimensat(AT_FDCWD, path, times, 0) == 0);
    return 0;
}

/* A timestamp far in the past that "now" is always after; tests set it and watch it change. */
#define OLD_TIME 1000000000

/* Fails unless the stat timestamp `ts` equals OLD_TIME exactly. */
#define CHECK_OLD_TIME(ts)                                                                         \
    do {                                                                                           \
        CHECK_EQ((ts).tv_sec, OLD_TIME);                                                           \
        CHECK_EQ((ts).tv_nsec, 0);                                                                 \
    } while (0)

/*
 * Waits until the wall clock is more than a second past `moment`. Only used when a filesystem
 * keeps timestamps too coarse to see two back-to-back changes; the wait is then at most ~2 s.
 */
static void wait_past(struct timespec moment)
{
    struct timespec now;
    struct timespec step = {0, 10 * 1000 * 1000};

    for (;;) {
        clock_gettime(CLOCK_REALTIME, &now);
        if (now.tv_sec > moment.tv_sec + 1)
            return;
        nanosleep(&step, NULL);
    }
}

static int runner_fail(const char *format, ...) __attribute__((format(printf, 1, 2)));

/*
 * Records a failure of the runner itself (fork, a crash, a timeout) and returns -1. Unlike
 * FAIL it adds no file:line, which would point into the runner rather than at a test.
 */
static int runner_fail(const char *format, ...)
{
    va_list args;

    va_start(args, format);
    vsnprintf(failure_text, sizeof(failure_text), format, args);
    va_end(args);
    return -1;
}

/*
 * Runs body(arg) in a child process and waits for it. Returns the body's result: 0, -1 or
 * TEST_SKIP, with the child's failure_text copied into ours. A child killed by a signal (the
 * alarm after timeout_seconds, 0 for none) or exiting oddly (a sanitizer report) counts as -1.
 */
static int run_child(int (*body)(const char *), const char *arg, unsigned timeout_seconds)
{
    int pipe_fds[2];
    int status;
    pid_t pid;
    size_t used = 0;

    failure_text[0] = '\0';
    if (pipe(pipe_fds) != 0)
        return runner_fail("pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == -1) {
        int error = errno;

        close(pipe_fds[0]);
        close(pipe_fds[1]);
        return runner_fail("fork: %s", strerror(error));
    }
    if (pid == 0) {
        int result;

        close(pipe_fds[0]);
        if (timeout_seconds > 0)
            alarm(timeout_seconds);
        result = body(arg);
        /* The message is far below PIPE_BUF, so this write neither blocks nor splits. */
        if (write(pipe_fds[1], failure_text, strlen(failure_text)) < 0)
            _exit(1);
        _exit(result == 0 ? 0 : result == TEST_SKIP ? EXIT_SKIP : 1);
    }
    close(pipe_fds[1]);

    /*
     * Wait first, then read without blocking: a grandchild that inherited the write end and
     * hangs would otherwise keep the read from ever seeing end of file.
     */
    while (waitpid(pid, &status, 0) == -1) {
        if (errno != EINTR) {
            close(pipe_fds[0]);
            return runner_fail("waitpid: %s", strerror(errno));
        }
    }
    fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
    while (used < sizeof(failure_text) - 1) {
        ssize_t got = read(pipe_fds[0], failure_text + used, sizeof(failure_text) - 1 - used);
        if (got <= 0)
            break;
        used += (size_t)got;
    }
    failure_text[used] = '\0';
    close(pipe_fds[0]);

    if (WIFSIGNALED(status)) {
        if (WTERMSIG(status) == SIGALRM)
            return runner_fail("timed out after %u seconds", timeout_seconds);
        return runner_fail("killed by signal %d (%s)", WTERMSIG(status),
                           strsignal(WTERMSIG(status)));
    }
    if (WEXITSTATUS(status) == 0)
        return 0;
    if (WEXITSTATUS(status) == EXIT_SKIP)
        return TEST_SKIP;
    if (used == 0)
        return runner_fail("exited with status %d without a message (see stderr)",
                           WEXITSTATUS(status));
    return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* open() and creation flags                                                                */
/* ---------------------------------------------------------------------------------------- */

static int test_create_excl(const char *dir)
{
    char path[PATH_MAX], link_path[PATH_MAX];
    struct stat st;
    int fd;

    path_in(path, dir, "file");
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0640);
    CHECK(fd >= 0);
    CHECK(fstat(fd, &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_mode & 07777, 0640);
    CHECK_EQ(st.st_uid, geteuid());
    CHECK_EQ(st.st_size, 0);
    CHECK(close(fd) == 0);

    CHECK_ERRNO(open(path, O_WRONLY | O_CREAT | O_EXCL, 0640), EEXIST);
    CHECK_ERRNO(open(path, O_RDWR | O_CREAT | O_EXCL, 0600), EEXIST);

    /* O_EXCL must not follow a symlink, even a dangling one: that is what makes it safe. */
    path_in(link_path, dir, "dangling");
    CHECK(symlink("missing-target", link_path) == 0);
    CHECK_ERRNO(open(link_path, O_WRONLY | O_CREAT | O_EXCL, 0640), EEXIST);
    return 0;
}

static int test_open_trunc(const char *dir)
{
    char path[PATH_MAX];
    unsigned char data[100];
    struct stat st;
    int fd;

    path_in(path, dir, "file");
    fill_pattern(data, sizeof(data), 0, 1);
    CHECK(write_file(path, data, sizeof(data)) == 0);

    fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0);
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_size, 0);
    CHECK_EQ(write(fd, "xy", 2), 2);
    CHECK(close(fd) == 0);
    /* Only the two new bytes: nothing of the old 100 may show up behind them. */
    CHECK(check_file_content(path, "xy", 2) == 0);

    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK(check_fd_content(fd, NULL, 0) == 0);
    CHECK(close(fd) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_size, 0);
    return 0;
}

/*
 * Truncations of a file this mount is still writing (its writes not yet
 * committed to meta): ftruncate below what was written, then growing again,
 * must read zeros past the cut, never the bytes written there; open(O_TRUNC)
 * from another descriptor empties it, and the writer's close must not grow
 * it back.
 */
static int test_truncate_while_writing(const char *dir)
{
    char path[PATH_MAX];
    unsigned char data[5000];
    unsigned char expected[6000];
    struct stat st;

    path_in(path, dir, "writing");
    fill_pattern(data, sizeof(data), 0, 7);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(pwrite(fd, data, sizeof(data), 0), (ssize_t)sizeof(data));
    CHECK(ftruncate(fd, 3000) == 0);
    CHECK(ftruncate(fd, 6000) == 0);
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_size, 6000);
    memcpy(expected, data, 3000);
    memset(expected + 3000, 0, sizeof(expected) - 3000);
    CHECK(check_fd_content(fd, expected, sizeof(expected)) == 0);
    CHECK(close(fd) == 0);
    CHECK(check_file_content(path, expected, sizeof(expected)) == 0);

    /* open(O_TRUNC) while another descriptor has writes in flight. */
    int writer = open(path, O_WRONLY);
    CHECK(writer >= 0);
    CHECK_EQ(pwrite(writer, data, sizeof(data), 2 << 20), (ssize_t)sizeof(data));
    int truncating = open(path, O_WRONLY | O_TRUNC);
    CHECK(truncating >= 0);
    CHECK(fstat(truncating, &st) == 0);
    CHECK_EQ(st.st_size, 0);
    CHECK(close(truncating) == 0);
    CHECK(close(writer) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_size, 0);
    CHECK(check_file_content(path, NULL, 0) == 0);
    return 0;
}

static int test_open_append(const char *dir)
{
    char path[PATH_MAX];
    int fd, other_fd;

    path_in(path, dir, "file");
    CHECK(write_file(path, "abc", 3) == 0);

    fd = open(path, O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, "def", 3), 3);
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    CHECK_EQ(write(fd, "ghi", 3), 3);
    /* Each append write moves the offset to the new end of file. */
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 9);
    CHECK(check_file_content(path, "abcdefghi", 9) == 0);

    /* Two appenders never overwrite each other, whatever end of file each saw last. */
    other_fd = open(path, O_WRONLY | O_APPEND);
    CHECK(other_fd >= 0);
    CHECK_EQ(write(other_fd, "1", 1), 1);
    CHECK_EQ(write(fd, "2", 1), 1);
    CHECK_EQ(write(other_fd, "3", 1), 1);
    CHECK(close(other_fd) == 0);
    CHECK(close(fd) == 0);
    CHECK(check_file_content(path, "abcdefghi123", 12) == 0);
    return 0;
}

static int test_open_missing(const char *dir)
{
    char missing[PATH_MAX], missing_child[PATH_MAX], file[PATH_MAX], file_child[PATH_MAX];

    path_in(missing, dir, "missing");
    path_in(missing_child, dir, "missing/child");
    path_in(file, dir, "file");
    path_in(file_child, dir, "file/child");

    CHECK_ERRNO(open(missing, O_RDONLY), ENOENT);
    CHECK_ERRNO(open(missing, O_WRONLY), ENOENT);
    CHECK_ERRNO(open(missing_child, O_RDONLY), ENOENT);
    CHECK_ERRNO(open(missing_child, O_WRONLY | O_CREAT, 0644), ENOENT);
    CHECK_ERRNO(access(missing, F_OK), ENOENT);

    /* A regular file used as a directory in the middle of a path. */
    CHECK(write_file(file, "x", 1) == 0);
    CHECK_ERRNO(open(file_child, O_RDONLY), ENOTDIR);
    CHECK_ERRNO(open(file_child, O_WRONLY | O_CREAT, 0644), ENOTDIR);
    return 0;
}

static int test_open_dir_wronly(const char *dir)
{
    char sub[PATH_MAX];
    char byte;
    struct stat st;
    int fd;

    path_in(sub, dir, "sub");
    CHECK(mkdir(sub, 0755) == 0);
    CHECK_ERRNO(open(sub, O_WRONLY), EISDIR);
    CHECK_ERRNO(open(sub, O_RDWR), EISDIR);
    CHECK_ERRNO(open(sub, O_WRONLY | O_CREAT, 0644), EISDIR);

    fd = open(sub, O_RDONLY);
    CHECK(fd >= 0);
    CHECK(fstat(fd, &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK_ERRNO(read(fd, &byte, 1), EISDIR);
    CHECK(close(fd) == 0);
    return 0;
}

static int test_open_directory_file(const char *dir)
{
    char file[PATH_MAX], sub[PATH_MAX], link_path[PATH_MAX];
    int fd;

    path_in(file, dir, "file");
    path_in(sub, dir, "sub");
    path_in(link_path, dir, "link");
    CHECK(write_file(file, "x", 1) == 0);
    CHECK(mkdir(sub, 0755) == 0);
    CHECK(symlink("file", link_path) == 0);

    CHECK_ERRNO(open(file, O_RDONLY | O_DIRECTORY), ENOTDIR);
    CHECK_ERRNO(open(link_path, O_RDONLY | O_DIRECTORY), ENOTDIR);
    CHECK_ERRNO(open(link_path, O_RDONLY | O_NOFOLLOW), ELOOP);

    fd = open(sub, O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0);
    CHECK(close(fd) == 0);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Data: read, write, offsets, holes, truncation                                            */
/* ---------------------------------------------------------------------------------------- */

/* Writes that start at odd offsets and cross page and 64 KiB boundaries; none overlap. */
static const struct {
    off_t offset;
    size_t length;
} odd_extents[] = {
    {4093, 7}, {8190, 4099}, {65535, 3}, {131071, 65539}, {1048573, 9},
};

static int rw_offsets_check(int fd, unsigned char *expected, size_t size)
{
    unsigned char small[16];

    CHECK_EQ(write(fd, "0123456789", 10), 10);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 10);
    /* pwrite() and pread() leave the file offset alone. */
    CHECK_EQ(pwrite(fd, "abc", 3, 3), 3);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 10);
    CHECK_EQ(pread(fd, small, 4, 5), 4);
    CHECK(memcmp(small, "c678", 4) == 0);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 10);
    memcpy(expected, "012abc6789", 10);

    for (size_t i = 0; i < sizeof(odd_extents) / sizeof(odd_extents[0]); i++) {
        unsigned char *region = expected + odd_extents[i].offset;

        fill_pattern(region, odd_extents[i].length, (uint64_t)odd_extents[i].offset, 2);
        CHECK_EQ(pwrite(fd, region, odd_extents[i].length, odd_extents[i].offset),
                 odd_extents[i].length);
    }
    for (size_t i = 0; i < sizeof(odd_extents) / sizeof(odd_extents[0]); i++) {
        size_t length = odd_extents[i].length;
        unsigned char *got = malloc(length);

        CHECK(got != NULL);
        CHECK_EQ(pread(fd, got, length, odd_extents[i].offset), length);
        CHECK(check_bytes(got, expected + odd_extents[i].offset, length,
                          (uint64_t)odd_extents[i].offset) == 0);
        free(got);
    }

    /* read() continues from an lseek() position; SEEK_END counts from the size. */
    CHECK_EQ(lseek(fd, 5, SEEK_SET), 5);
    CHECK_EQ(read(fd, small, 3), 3);
    CHECK(memcmp(small, "c67", 3) == 0);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 8);
    CHECK_EQ(lseek(fd, -2, SEEK_END), size - 2);
    CHECK_EQ(read(fd, small, sizeof(small)), 2);
    CHECK_EQ(read(fd, small, sizeof(small)), 0);
    CHECK_EQ(pread(fd, small, sizeof(small), (off_t)size + 100), 0);

    /* The whole file, holes included, through this descriptor and through a new one. */
    CHECK(check_fd_content(fd, expected, size) == 0);
    return 0;
}

static int test_rw_offsets(const char *dir)
{
    const size_t last = sizeof(odd_extents) / sizeof(odd_extents[0]) - 1;
    const size_t size = (size_t)odd_extents[last].offset + odd_extents[last].length;
    char path[PATH_MAX];
    unsigned char *expected;
    int fd;

    path_in(path, dir, "file");
    expected = calloc(1, size);
    CHECK(expected != NULL);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK(rw_offsets_check(fd, expected, size) == 0);
    CHECK(close(fd) == 0);
    CHECK(check_file_content(path, expected, size) == 0);
    free(expected);
    return 0;
}

static int test_sparse_5g(const char *dir)
{
    /* 5 GiB + 3 is 1 GiB + 3 modulo 4 GiB: a 32-bit offset anywhere would put data there. */
    const off_t far = (off_t)(5 * GiB + 3);
    const off_t wrapped = (off_t)(GiB + 3);
    char path[PATH_MAX];
    unsigned char buffer[8192];
    struct stat st;
    int fd;

    path_in(path, dir, "file");
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(pwrite(fd, "tessera", 7, far), 7);
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_size, far + 7);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_size, far + 7);

    CHECK_EQ(pread(fd, buffer, 4096, 0), 4096);
    CHECK(check_zeros(buffer, 4096, 0) == 0);
    CHECK_EQ(pread(fd, buffer, 16, wrapped - 8), 16);
    CHECK(check_zeros(buffer, 16, (uint64_t)wrapped - 8) == 0);
    /* Across the 4 GiB boundary. */
    CHECK_EQ(pread(fd, buffer, 8192, (off_t)(4 * GiB - 4096)), 8192);
    CHECK(check_zeros(buffer, 8192, 4 * GiB - 4096) == 0);
    /* The end of the hole, the data, then end of file: a short read of 16 + 7 bytes. */
    CHECK_EQ(pread(fd, buffer, 32, far - 16), 23);
    CHECK(check_zeros(buffer, 16, (uint64_t)far - 16) == 0);
    CHECK(memcmp(buffer + 16, "tessera", 7) == 0);
    CHECK_EQ(pread(fd, buffer, 32, far + 7), 0);
    CHECK(close(fd) == 0);

    /* Again through a new descriptor, after close() flushed whatever was cached. */
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(pread(fd, buffer, 7, far), 7);
    CHECK(memcmp(buffer, "tessera", 7) == 0);
    CHECK_EQ(pread(fd, buffer, 7, wrapped), 7);
    CHECK(check_zeros(buffer, 7, (uint64_t)wrapped) == 0);
    CHECK(close(fd) == 0);
    return 0;
}

static int test_sparse_hole(const char *dir)
{
    const off_t second = (off_t)(MiB + 7);
    const size_t size = (size_t)second + 4096;
    char path[PATH_MAX];
    unsigned char *expected;
    int fd;

    path_in(path, dir, "file");
    expected = calloc(1, size);
    CHECK(expected != NULL);
    fill_pattern(expected, 4096, 0, 3);
    fill_pattern(expected + second, 4096, (uint64_t)second, 3);

    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(pwrite(fd, expected, 4096, 0), 4096);
    CHECK_EQ(pwrite(fd, expected + second, 4096, second), 4096);
    CHECK(check_fd_content(fd, expected, size) == 0);
    CHECK(close(fd) == 0);
    CHECK(check_file_content(path, expected, size) == 0);
    free(expected);
    return 0;
}

/* The steps of test_truncate(), with the model of the file kept in `expected`. */
static int truncate_check(const char *path, unsigned char *expected, size_t size)
{
    struct stat st;
    int fd;

    fill_pattern(expected, size, 0, 4);
    CHECK(write_file(path, expected, size) == 0);

    /* Shrink to an odd size by path, then grow back: the cut-off bytes must read as zeros. */
    CHECK(truncate(path, 33333) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_size, 33333);
    CHECK(check_file_content(path, expected, 33333) == 0);
    CHECK(truncate(path, (off_t)size) == 0);
    memset(expected + 33333, 0, size - 33333);
    CHECK(check_file_content(path, expected, size) == 0);

    /* Shrink by descriptor, then grow by writing far past the end. */
    fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, 1001) == 0);
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_size, 1001);
    CHECK_EQ(pwrite(fd, "x", 1, 50000), 1);
    memset(expected + 1001, 0, 50000 - 1001);
    expected[50000] = 'x';
    CHECK(check_fd_content(fd, expected, 50001) == 0);
    CHECK(close(fd) == 0);
    CHECK(check_file_content(path, expected, 50001) == 0);

    /* To zero and back up with ftruncate(). */
    fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, 0) == 0);
    CHECK(ftruncate(fd, 4097) == 0);
    memset(expected, 0, 4097);
    CHECK(check_fd_content(fd, expected, 4097) == 0);
    CHECK(close(fd) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_size, 4097);

    CHECK_ERRNO(truncate(path, -1), EINVAL);
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_ERRNO(ftruncate(fd, 10), EINVAL);
    CHECK(close(fd) == 0);
    return 0;
}

static int test_truncate(const char *dir)
{
    const size_t size = 100000;
    char path[PATH_MAX];
    unsigned char *expected = malloc(size);

    CHECK(expected != NULL);
    path_in(path, dir, "file");
    CHECK(truncate_check(path, expected, size) == 0);
    free(expected);
    return 0;
}

static int test_unlink_open(const char *dir)
{
    char path[PATH_MAX];
    char buffer[32];
    struct stat st;
    int entries;
    bool found;
    int fd;

    path_in(path, dir, "file");
    CHECK(write_file(path, "before", 6) == 0);
    fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    CHECK(unlink(path) == 0);

    /* The name is gone at once ... */
    CHECK_ERRNO(stat(path, &st), ENOENT);
    CHECK_ERRNO(open(path, O_RDONLY), ENOENT);
    CHECK(list_directory(dir, "file", &entries, &found) == 0);
    CHECK(!found);

    /* ... but the open file still works. */
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_nlink, 0);
    CHECK_EQ(st.st_size, 6);
    CHECK_EQ(pwrite(fd, "after", 5, 6), 5);
    CHECK_EQ(pread(fd, buffer, sizeof(buffer), 0), 11);
    CHECK(memcmp(buffer, "beforeafter", 11) == 0);
    CHECK(ftruncate(fd, 8) == 0);
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_size, 8);
    CHECK(check_fd_content(fd, (const unsigned char *)"beforeaf", 8) == 0);
    CHECK(close(fd) == 0);

    CHECK_ERRNO(stat(path, &st), ENOENT);
    CHECK(list_directory(dir, "file", &entries, &found) == 0);
    CHECK(!found);
    /* A new file under the old name is a different, empty file. */
    CHECK(write_file(path, "", 0) == 0);
    CHECK(check_file_content(path, "", 0) == 0);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* rename()                                                                                 */
/* ---------------------------------------------------------------------------------------- */

static int test_rename_file(const char *dir)
{
    char a[PATH_MAX], b[PATH_MAX];
    struct stat before, after;

    path_in(a, dir, "a");
    path_in(b, dir, "b");
    CHECK(write_file(a, "contents", 8) == 0);
    CHECK(stat(a, &before) == 0);

    CHECK(rename(a, b) == 0);
    CHECK_ERRNO(stat(a, &after), ENOENT);
    CHECK(stat(b, &after) == 0);
    CHECK_EQ(after.st_ino, before.st_ino);
    CHECK_EQ(after.st_nlink, 1);
    CHECK(check_file_content(b, "contents", 8) == 0);

    /* Renaming a name onto itself does nothing. */
    CHECK(rename(b, b) == 0);
    CHECK(check_file_content(b, "contents", 8) == 0);
    CHECK_ERRNO(rename(a, b), ENOENT);
    return 0;
}

static int test_rename_replace(const char *dir)
{
    char a[PATH_MAX], b[PATH_MAX], b_link[PATH_MAX];
    struct stat a_before, b_before, st;
    char buffer[4];
    int old_target_fd, entries;

    path_in(a, dir, "a");
    path_in(b, dir, "b");
    path_in(b_link, dir, "b-link");
    CHECK(write_file(a, "AAA", 3) == 0);
    CHECK(write_file(b, "B", 1) == 0);
    /* A second name for the target shows that rename drops exactly one link of it. */
    CHECK(link(b, b_link) == 0);
    CHECK(stat(a, &a_before) == 0);
    CHECK(stat(b, &b_before) == 0);
    CHECK_EQ(b_before.st_nlink, 2);
    old_target_fd = open(b, O_RDONLY);
    CHECK(old_target_fd >= 0);

    CHECK(rename(a, b) == 0);
    CHECK_ERRNO(stat(a, &st), ENOENT);
    CHECK(stat(b, &st) == 0);
    CHECK_EQ(st.st_ino, a_before.st_ino);
    CHECK_EQ(st.st_nlink, 1);
    CHECK(check_file_content(b, "AAA", 3) == 0);

    CHECK(stat(b_link, &st) == 0);
    CHECK_EQ(st.st_ino, b_before.st_ino);
    CHECK_EQ(st.st_nlink, 1);
    CHECK(check_file_content(b_link, "B", 1) == 0);

    /* The replaced file stays readable through a descriptor opened before the rename. */
    CHECK_EQ(pread(old_target_fd, buffer, sizeof(buffer), 0), 1);
    CHECK_EQ(buffer[0], 'B');
    CHECK(close(old_target_fd) == 0);

    CHECK(list_directory(dir, NULL, &entries, NULL) == 0);
    CHECK_EQ(entries, 2);
    return 0;
}

static int test_rename_across_dirs(const char *dir)
{
    char d1[PATH_MAX], d2[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
    struct stat before, st;
    int entries;
    bool found;

    path_in(d1, dir, "d1");
    path_in(d2, dir, "d2");
    path_in(from, dir, "d1/f");
    path_in(to, dir, "d2/g");
    CHECK(mkdir(d1, 0755) == 0);
    CHECK(mkdir(d2, 0755) == 0);
    CHECK(write_file(from, "moved", 5) == 0);
    CHECK(stat(from, &before) == 0);

    CHECK(rename(from, to) == 0);
    CHECK_ERRNO(stat(from, &st), ENOENT);
    CHECK(stat(to, &st) == 0);
    CHECK_EQ(st.st_ino, before.st_ino);
    CHECK(check_file_content(to, "moved", 5) == 0);
    CHECK(list_directory(d1, NULL, &entries, NULL) == 0);
    CHECK_EQ(entries, 0);
    CHECK(list_directory(d2, "g", &entries, &found) == 0);
    CHECK_EQ(entries, 1);
    CHECK(found);
    /* Moving a file does not change the link counts of the directories. */
    CHECK(stat(d1, &st) == 0);
    CHECK_EQ(st.st_nlink, 2);
    CHECK(stat(d2, &st) == 0);
    CHECK_EQ(st.st_nlink, 2);
    return 0;
}

static int test_rename_dir(const char *dir)
{
    char p1[PATH_MAX], p2[PATH_MAX], sub[PATH_MAX], moved[PATH_MAX], renamed[PATH_MAX];
    char moved_file[PATH_MAX], moved_parent[PATH_MAX], file[PATH_MAX];
    struct stat before, st, p2_st;

    path_in(p1, dir, "p1");
    path_in(p2, dir, "p2");
    path_in(sub, dir, "p1/sub");
    path_in(file, dir, "p1/sub/file");
    path_in(moved, dir, "p2/moved");
    path_in(moved_file, dir, "p2/moved/file");
    path_in(moved_parent, dir, "p2/moved/..");
    path_in(renamed, dir, "p2/renamed");
    CHECK(mkdir(p1, 0755) == 0);
    CHECK(mkdir(p2, 0755) == 0);
    CHECK(mkdir(sub, 0755) == 0);
    CHECK(write_file(file, "inside", 6) == 0);
    CHECK(stat(sub, &before) == 0);
    CHECK(stat(p1, &st) == 0);
    CHECK_EQ(st.st_nlink, 3);

    CHECK(rename(sub, moved) == 0);
    CHECK_ERRNO(stat(sub, &st), ENOENT);
    CHECK(stat(moved, &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK_EQ(st.st_ino, before.st_ino);
    CHECK(check_file_content(moved_file, "inside", 6) == 0);

    /* The moved directory's ".." now points at its new parent, which gains that link. */
    CHECK(stat(p1, &st) == 0);
    CHECK_EQ(st.st_nlink, 2);
    CHECK(stat(p2, &p2_st) == 0);
    CHECK_EQ(p2_st.st_nlink, 3);
    CHECK(stat(moved_parent, &st) == 0);
    CHECK_EQ(st.st_ino, p2_st.st_ino);

    /* Within one parent: the count stays. */
    CHECK(rename(moved, renamed) == 0);
    CHECK(stat(p2, &st) == 0);
    CHECK_EQ(st.st_nlink, 3);
    CHECK(stat(renamed, &st) == 0);
    CHECK_EQ(st.st_ino, before.st_ino);
    return 0;
}

static int test_rename_dir_over_empty(const char *dir)
{
    char a[PATH_MAX], b[PATH_MAX], a_file[PATH_MAX], b_file[PATH_MAX];
    struct stat before, st;

    path_in(a, dir, "a");
    path_in(b, dir, "b");
    path_in(a_file, dir, "a/file");
    path_in(b_file, dir, "b/file");
    CHECK(mkdir(a, 0755) == 0);
    CHECK(mkdir(b, 0755) == 0);
    CHECK(write_file(a_file, "x", 1) == 0);
    CHECK(stat(a, &before) == 0);

    CHECK(rename(a, b) == 0);
    CHECK_ERRNO(stat(a, &st), ENOENT);
    CHECK(stat(b, &st) == 0);
    CHECK_EQ(st.st_ino, before.st_ino);
    CHECK(check_file_content(b_file, "x", 1) == 0);
    /* The replaced empty directory's ".." link to dir is gone with it. */
    CHECK(stat(dir, &st) == 0);
    CHECK_EQ(st.st_nlink, 3);
    return 0;
}

static int test_rename_dir_over_nonempty(const char *dir)
{
    char a[PATH_MAX], b[PATH_MAX], b_file[PATH_MAX];
    struct stat st;

    path_in(a, dir, "a");
    path_in(b, dir, "b");
    path_in(b_file, dir, "b/file");
    CHECK(mkdir(a, 0755) == 0);
    CHECK(mkdir(b, 0755) == 0);
    CHECK(write_file(b_file, "keep", 4) == 0);

    CHECK_ERRNO(rename(a, b), ENOTEMPTY);
    CHECK(stat(a, &st) == 0);
    CHECK(check_file_content(b_file, "keep", 4) == 0);
    return 0;
}

static int test_rename_dir_into_self(const char *dir)
{
    char a[PATH_MAX], a_sub[PATH_MAX], into_sub[PATH_MAX], into_self[PATH_MAX];
    struct stat st;

    path_in(a, dir, "a");
    path_in(a_sub, dir, "a/sub");
    path_in(into_sub, dir, "a/sub/x");
    path_in(into_self, dir, "a/x");
    CHECK(mkdir(a, 0755) == 0);
    CHECK(mkdir(a_sub, 0755) == 0);

    CHECK_ERRNO(rename(a, into_sub), EINVAL);
    CHECK_ERRNO(rename(a, into_self), EINVAL);
    CHECK(stat(a_sub, &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    return 0;
}

static int test_rename_type_mismatch(const char *dir)
{
    char file[PATH_MAX], sub[PATH_MAX];
    struct stat st;

    path_in(file, dir, "file");
    path_in(sub, dir, "sub");
    CHECK(write_file(file, "x", 1) == 0);
    CHECK(mkdir(sub, 0755) == 0);

    CHECK_ERRNO(rename(file, sub), EISDIR);
    CHECK_ERRNO(rename(sub, file), ENOTDIR);
    CHECK(stat(sub, &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK(check_file_content(file, "x", 1) == 0);
    return 0;
}

static int test_rename_hardlinks(const char *dir)
{
    char a[PATH_MAX], b[PATH_MAX];
    struct stat st;

    path_in(a, dir, "a");
    path_in(b, dir, "b");
    CHECK(write_file(a, "same", 4) == 0);
    CHECK(link(a, b) == 0);

    /* POSIX: when both names are the same file, rename() succeeds and does nothing. */
    CHECK(rename(a, b) == 0);
    CHECK(stat(a, &st) == 0);
    CHECK_EQ(st.st_nlink, 2);
    CHECK(stat(b, &st) == 0);
    CHECK_EQ(st.st_nlink, 2);
    return 0;
}

/* renameat2(RENAME_NOREPLACE) through syscall(): older glibc has no wrapper. */
static int rename_noreplace(const char *from, const char *to)
{
#ifdef SYS_renameat2
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
#else
    errno = ENOSYS;
    return -1;
#endif
}

static int test_rename_noreplace(const char *dir)
{
    char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], d1[PATH_MAX], d2[PATH_MAX];
    struct stat st;

    path_in(a, dir, "a");
    path_in(b, dir, "b");
    path_in(c, dir, "c");
    path_in(d1, dir, "d1");
    path_in(d2, dir, "d2");
    CHECK(write_file(a, "A", 1) == 0);
    CHECK(write_file(b, "B", 1) == 0);

    CHECK_ERRNO(rename_noreplace(a, b), EEXIST);
    CHECK(check_file_content(a, "A", 1) == 0);
    CHECK(check_file_content(b, "B", 1) == 0);

    /* To a free name it must work: EINVAL or ENOSYS here means the flag is not supported. */
    CHECK(rename_noreplace(a, c) == 0);
    CHECK_ERRNO(stat(a, &st), ENOENT);
    CHECK(check_file_content(c, "A", 1) == 0);

    CHECK(mkdir(d1, 0755) == 0);
    CHECK(mkdir(d2, 0755) == 0);
    CHECK_ERRNO(rename_noreplace(d1, d2), EEXIST);
    CHECK(stat(d1, &st) == 0);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Directories                                                                              */
/* ---------------------------------------------------------------------------------------- */

static int test_mkdir_exists(const char *dir)
{
    char sub[PATH_MAX], file[PATH_MAX], orphan[PATH_MAX];
    struct stat st;

    path_in(sub, dir, "sub");
    path_in(file, dir, "file");
    path_in(orphan, dir, "missing/sub");
    CHECK(mkdir(sub, 0750) == 0);
    CHECK(stat(sub, &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK_EQ(st.st_mode & 07777, 0750);
    CHECK_EQ(st.st_uid, geteuid());
    CHECK_EQ(st.st_nlink, 2);

    CHECK_ERRNO(mkdir(sub, 0755), EEXIST);
    CHECK(write_file(file, "x", 1) == 0);
    CHECK_ERRNO(mkdir(file, 0755), EEXIST);
    CHECK_ERRNO(mkdir(orphan, 0755), ENOENT);
    return 0;
}

static int test_rmdir_nonempty(const char *dir)
{
    char sub[PATH_MAX], file[PATH_MAX], inner[PATH_MAX];
    struct stat st;

    path_in(sub, dir, "sub");
    path_in(file, dir, "sub/file");
    path_in(inner, dir, "sub/inner");
    CHECK(mkdir(sub, 0755) == 0);
    CHECK(write_file(file, "x", 1) == 0);
    CHECK_ERRNO(rmdir(sub), ENOTEMPTY);

    CHECK(unlink(file) == 0);
    CHECK(mkdir(inner, 0755) == 0);
    CHECK_ERRNO(rmdir(sub), ENOTEMPTY);

    CHECK(rmdir(inner) == 0);
    CHECK(rmdir(sub) == 0);
    CHECK_ERRNO(stat(sub, &st), ENOENT);
    CHECK_ERRNO(rmdir(sub), ENOENT);
    return 0;
}

static int test_rmdir_notdir(const char *dir)
{
    char file[PATH_MAX], sub[PATH_MAX];
    struct stat st;

    path_in(file, dir, "file");
    path_in(sub, dir, "sub");
    CHECK(write_file(file, "x", 1) == 0);
    CHECK(mkdir(sub, 0755) == 0);

    CHECK_ERRNO(rmdir(file), ENOTDIR);
    /* The mirror case: Linux answers unlink() of a directory with EISDIR. */
    CHECK_ERRNO(unlink(sub), EISDIR);
    CHECK(stat(file, &st) == 0);
    CHECK(stat(sub, &st) == 0);
    return 0;
}

static int test_dir_nlink(const char *dir)
{
    char path[PATH_MAX];
    char name[16];
    struct stat st;

    CHECK(stat(dir, &st) == 0);
    CHECK_EQ(st.st_nlink, 2);
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "sub%d", i);
        CHECK(mkdir(path_in(path, dir, name), 0755) == 0);
    }
    /* Files do not count: only a subdirectory's ".." links to its parent. */
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof(name), "file%d", i);
        CHECK(write_file(path_in(path, dir, name), "x", 1) == 0);
    }
    CHECK(stat(dir, &st) == 0);
    CHECK_EQ(st.st_nlink, 2 + 3);

    CHECK(rmdir(path_in(path, dir, "sub1")) == 0);
    CHECK(stat(dir, &st) == 0);
    CHECK_EQ(st.st_nlink, 2 + 2);
    return 0;
}

/* Creates empty files dir/f000000 ... dir/f<count - 1>. */
static int create_numbered_files(const char *dir, unsigned count)
{
    char path[PATH_MAX];
    char name[16];

    for (unsigned i = 0; i < count; i++) {
        int fd;

        snprintf(name, sizeof(name), "f%06u", i);
        fd = open(path_in(path, dir, name), O_WRONLY | O_CREAT | O_EXCL, 0644);
        CHECK(fd >= 0);
        CHECK(close(fd) == 0);
    }
    return 0;
}

/* The index of a name made by create_numbered_files(), or -1 for any other name. */
static long numbered_file_index(const char *name)
{
    long index = 0;

    if (name[0] != 'f' || strlen(name) != 7)
        return -1;
    for (int i = 1; i < 7; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        index = index * 10 + (name[i] - '0');
    }
    return index;
}

/*
 * Reads the directory made by create_numbered_files() twice (the second time after
 * rewinddir()) and checks that each pass returns every file exactly once, "." and ".." once
 * each, nothing else, and sensible d_type and d_ino. `seen` has count bytes.
 */
static int readdir_exact(const char *dir, unsigned count, unsigned char *seen)
{
    char path[PATH_MAX];
    DIR *stream;

    CHECK(create_numbered_files(dir, count) == 0);
    stream = opendir(dir);
    CHECK(stream != NULL);
    for (int pass = 0; pass < 2; pass++) {
        unsigned dots = 0, dot_dots = 0, files = 0;
        struct dirent *entry;

        memset(seen, 0, count);
        for (;;) {
            long index;

            errno = 0;
            entry = readdir(stream);
            if (entry == NULL)
                break;
            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) {
                if (entry->d_name[1] == '\0')
                    dots++;
                else
                    dot_dots++;
                CHECK(entry->d_type == DT_DIR || entry->d_type == DT_UNKNOWN);
                continue;
            }
            index = numbered_file_index(entry->d_name);
            if (index < 0 || index >= (long)count)
                FAIL("pass %d: unexpected entry \"%s\"", pass, entry->d_name);
            if (seen[index])
                FAIL("pass %d: \"%s\" returned twice", pass, entry->d_name);
            seen[index] = 1;
            files++;
            CHECK(entry->d_type == DT_REG || entry->d_type == DT_UNKNOWN);
            /* d_ino is the file's serial number; spot-check it against stat(). */
            if (index % 97 == 0) {
                struct stat st;

                CHECK(lstat(path_in(path, dir, entry->d_name), &st) == 0);
                CHECK_EQ(entry->d_ino, st.st_ino);
            }
        }
        CHECK_EQ(errno, 0);
        CHECK_EQ(dots, 1);
        CHECK_EQ(dot_dots, 1);
        if (files != count) {
            for (unsigned i = 0; i < count; i++) {
                if (!seen[i])
                    FAIL("pass %d: %u of %u files returned, f%06u missing", pass, files, count, i);
            }
        }
        rewinddir(stream);
    }
    CHECK(closedir(stream) == 0);
    return 0;
}

static int readdir_test(const char *dir, unsigned count)
{
    unsigned char *seen = malloc(count);

    CHECK(seen != NULL);
    CHECK(readdir_exact(dir, count, seen) == 0);
    free(seen);
    return 0;
}

static int test_readdir_1000(const char *dir)
{
    return readdir_test(dir, 1000);
}

static int test_readdir_100k(const char *dir)
{
    return readdir_test(dir, 100000);
}

/* States of a file in test_readdir_unlink(). */
enum { FILE_PRESENT, FILE_SEEN, FILE_REMOVED_UNSEEN };

/*
 * Reads a directory of `count` files while unlinking: every returned file at once, and now and
 * then one from the far end that was not returned yet. POSIX leaves open whether removed files
 * still show up, but every file that was never removed must be returned, the loop must end,
 * and afterwards the directory must be empty.
 */
static int readdir_unlink_check(const char *dir, unsigned count, unsigned char *state)
{
    char path[PATH_MAX];
    char name[16];
    unsigned calls = 0, removed_early = 0, next_victim = count - 1;
    struct dirent *entry;
    DIR *stream;
    int entries;

    CHECK(create_numbered_files(dir, count) == 0);
    memset(state, FILE_PRESENT, count);
    stream = opendir(dir);
    CHECK(stream != NULL);
    for (;;) {
        long index;

        errno = 0;
        entry = readdir(stream);
        if (entry == NULL)
            break;
        if (++calls > 4 * count)
            FAIL("readdir() returned %u entries for %u files: it does not terminate", calls, count);
        index = numbered_file_index(entry->d_name);
        if (index < 0)
            continue; /* "." or ".." */
        if (index >= (long)count)
            FAIL("unexpected entry \"%s\"", entry->d_name);
        if (state[index] == FILE_PRESENT) {
            CHECK(unlink(path_in(path, dir, entry->d_name)) == 0);
            state[index] = FILE_SEEN;
        }
        if (calls % 10 == 0) {
            while (next_victim > 0 && state[next_victim] != FILE_PRESENT)
                next_victim--;
            if (state[next_victim] == FILE_PRESENT) {
                snprintf(name, sizeof(name), "f%06u", next_victim);
                CHECK(unlink(path_in(path, dir, name)) == 0);
                state[next_victim] = FILE_REMOVED_UNSEEN;
                removed_early++;
            }
        }
    }
    CHECK_EQ(errno, 0);
    CHECK(closedir(stream) == 0);
    CHECK(removed_early > 0);

    for (unsigned i = 0; i < count; i++) {
        if (state[i] == FILE_PRESENT)
            FAIL("f%06u was never removed but readdir() skipped it", i);
    }
    CHECK(list_directory(dir, NULL, &entries, NULL) == 0);
    CHECK_EQ(entries, 0);
    return 0;
}

static int test_readdir_unlink(const char *dir)
{
    /* Enough entries to need several getdents() calls and FUSE readdir requests. */
    const unsigned count = 3000;
    unsigned char *state = malloc(count);

    CHECK(state != NULL);
    CHECK(readdir_unlink_check(dir, count, state) == 0);
    free(state);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Attributes: stat, timestamps, chmod, chown                                               */
/* ---------------------------------------------------------------------------------------- */

static int test_stat_file(const char *dir)
{
    char path[PATH_MAX], sub[PATH_MAX], link_path[PATH_MAX];
    unsigned char data[12345];
    struct stat st, path_st;
    int fd;

    path_in(path, dir, "file");
    path_in(sub, dir, "sub");
    path_in(link_path, dir, "link");
    fill_pattern(data, sizeof(data), 0, 5);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
    CHECK(fd >= 0);
    CHECK(write_full(fd, data, sizeof(data)) == 0);
    CHECK(fsync(fd) == 0);

    CHECK(fstat(fd, &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_mode & S_IFMT, S_IFREG);
    CHECK_EQ(st.st_size, sizeof(data));
    CHECK_EQ(st.st_nlink, 1);
    CHECK(st.st_blocks > 0);
    CHECK(st.st_blksize > 0);
    CHECK(stat(path, &path_st) == 0);
    CHECK_EQ(path_st.st_ino, st.st_ino);
    CHECK_EQ(path_st.st_dev, st.st_dev);
    CHECK_EQ(path_st.st_size, sizeof(data));
    CHECK(close(fd) == 0);

    CHECK(mkdir(sub, 0755) == 0);
    CHECK(stat(sub, &st) == 0);
    CHECK_EQ(st.st_mode & S_IFMT, S_IFDIR);
    CHECK_EQ(st.st_nlink, 2);
    CHECK(st.st_ino != path_st.st_ino);

    CHECK(symlink("file", link_path) == 0);
    CHECK(lstat(link_path, &st) == 0);
    CHECK_EQ(st.st_mode & S_IFMT, S_IFLNK);
    CHECK(stat(link_path, &st) == 0);
    CHECK_EQ(st.st_mode & S_IFMT, S_IFREG);
    CHECK_EQ(st.st_ino, path_st.st_ino);
    return 0;
}

/* Sets explicit times with every nanosecond digit in use and checks they come back exactly. */
static int test_utimens_nsec(const char *dir)
{
    /* The second value is after 2038: it needs 64-bit seconds everywhere on the way. */
    const struct timespec path_times[2] = {{1234567890, 123456789}, {1234567891, 987654321}};
    const struct timespec fd_times[2] = {{4102444800, 999999999}, {4102444801, 1}};
    char path[PATH_MAX];
    struct stat st;
    int fd;

    path_in(path, dir, "file");
    CHECK(write_file(path, "x", 1) == 0);
    CHECK(utimensat(AT_FDCWD, path, path_times, 0) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_atim.tv_sec, 1234567890);
    CHECK_EQ(st.st_atim.tv_nsec, 123456789);
    CHECK_EQ(st.st_mtim.tv_sec, 1234567891);
    CHECK_EQ(st.st_mtim.tv_nsec, 987654321);

    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    CHECK(futimens(fd, fd_times) == 0);
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_atim.tv_sec, 4102444800);
    CHECK_EQ(st.st_atim.tv_nsec, 999999999);
    CHECK_EQ(st.st_mtim.tv_sec, 4102444801);
    CHECK_EQ(st.st_mtim.tv_nsec, 1);
    CHECK(close(fd) == 0);
    /* And again through a fresh lookup, not the attributes cached for this descriptor. */
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_mtim.tv_sec, 4102444801);
    CHECK_EQ(st.st_mtim.tv_nsec, 1);
    return 0;
}

/* mtime and ctime move on write and truncate, atime does not move on write. No sleeping: the
 * times start at OLD_TIME, so any update is visible. */
static int test_mtime_on_write(const char *dir)
{
    const struct timespec old = {OLD_TIME, 0};
    char path[PATH_MAX];
    struct stat st;
    int fd;

    path_in(path, dir, "file");
    CHECK(write_file(path, "x", 1) == 0);
    CHECK(set_times(path, OLD_TIME, 0) == 0);

    fd = open(path, O_WRONLY);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, "data", 4), 4);
    CHECK(close(fd) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK(timespec_after(st.st_mtim, old));
    CHECK(timespec_after(st.st_ctim, old));
    CHECK_OLD_TIME(st.st_atim);

    CHECK(set_times(path, OLD_TIME, 0) == 0);
    CHECK(truncate(path, 2) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK(timespec_after(st.st_mtim, old));

    /* A read does not touch mtime. */
    CHECK(set_times(path, OLD_TIME, 0) == 0);
    CHECK(check_file_content(path, "da", 2) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_OLD_TIME(st.st_mtim);
    return 0;
}

/* Creating, removing or renaming an entry changes the directory's mtime. */
static int test_dir_mtime(const char *dir)
{
    const struct timespec old = {OLD_TIME, 0};
    char sub[PATH_MAX], file[PATH_MAX], renamed[PATH_MAX];
    struct stat st;

    path_in(sub, dir, "sub");
    path_in(file, dir, "sub/file");
    path_in(renamed, dir, "sub/renamed");
    CHECK(mkdir(sub, 0755) == 0);

    CHECK(set_times(sub, OLD_TIME, 0) == 0);
    CHECK(write_file(file, "x", 1) == 0);
    CHECK(stat(sub, &st) == 0);
    CHECK(timespec_after(st.st_mtim, old));

    CHECK(set_times(sub, OLD_TIME, 0) == 0);
    CHECK(rename(file, renamed) == 0);
    CHECK(stat(sub, &st) == 0);
    CHECK(timespec_after(st.st_mtim, old));

    CHECK(set_times(sub, OLD_TIME, 0) == 0);
    CHECK(unlink(renamed) == 0);
    CHECK(stat(sub, &st) == 0);
    CHECK(timespec_after(st.st_mtim, old));
    return 0;
}

static int test_ctime_on_chmod(const char *dir)
{
    char path[PATH_MAX];
    struct stat before, after;

    path_in(path, dir, "file");
    CHECK(write_file(path, "x", 1) == 0);
    CHECK(set_times(path, OLD_TIME, 0) == 0);
    CHECK(stat(path, &before) == 0);

    CHECK(chmod(path, 0600) == 0);
    CHECK(stat(path, &after) == 0);
    if (timespec_equal(after.st_ctim, before.st_ctim)) {
        /* Timestamps coarser than two back-to-back calls: let the clock move, try again. */
        wait_past(before.st_ctim);
        CHECK(chmod(path, 0640) == 0);
        CHECK(stat(path, &after) == 0);
    }
    if (!timespec_after(after.st_ctim, before.st_ctim)) {
        FAIL("ctime did not advance on chmod: %jd.%09ld before, %jd.%09ld after",
             (intmax_t)before.st_ctim.tv_sec, before.st_ctim.tv_nsec,
             (intmax_t)after.st_ctim.tv_sec, after.st_ctim.tv_nsec);
    }
    /* chmod changes the inode, not the data: mtime and atime stay. */
    CHECK_OLD_TIME(after.st_mtim);
    CHECK_OLD_TIME(after.st_atim);
    return 0;
}

static int test_chmod(const char *dir)
{
    char path[PATH_MAX], sub[PATH_MAX], link_path[PATH_MAX];
    struct stat st;
    int fd;

    path_in(path, dir, "file");
    path_in(sub, dir, "sub");
    path_in(link_path, dir, "link");
    CHECK(write_file(path, "x", 1) == 0);
    CHECK(mkdir(sub, 0755) == 0);
    CHECK(symlink("file", link_path) == 0);

    CHECK(chmod(path, 0640) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_mode, S_IFREG | 0640);

    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    CHECK(fchmod(fd, 0604) == 0);
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_mode, S_IFREG | 0604);
    CHECK(close(fd) == 0);

    CHECK(chmod(path, 04755) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_mode, S_IFREG | 04755);

    /* chmod() follows a symlink to its target. */
    CHECK(chmod(link_path, 0600) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_mode, S_IFREG | 0600);
    CHECK(lstat(link_path, &st) == 0);
    CHECK(S_ISLNK(st.st_mode));

    CHECK(chmod(sub, 01777) == 0);
    CHECK(stat(sub, &st) == 0);
    CHECK_EQ(st.st_mode, S_IFDIR | 01777);
    CHECK(chmod(sub, 0) == 0);
    CHECK(stat(sub, &st) == 0);
    CHECK_EQ(st.st_mode, S_IFDIR | 0);
    CHECK(chmod(sub, 0755) == 0);
    return 0;
}

static int test_chown(const char *dir)
{
    char path[PATH_MAX], link_path[PATH_MAX];
    struct stat st;
    int fd;

    path_in(path, dir, "file");
    path_in(link_path, dir, "link");
    CHECK(write_file(path, "x", 1) == 0);
    CHECK(symlink("file", link_path) == 0);

    /* To the owner it already has, and "no change" (-1), work for anyone. */
    CHECK(chown(path, geteuid(), getegid()) == 0);
    CHECK(chown(path, (uid_t)-1, (gid_t)-1) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_uid, geteuid());
    CHECK_EQ(st.st_gid, getegid());
    if (geteuid() != 0)
        return 0;

    CHECK(chown(path, 1234, 5678) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_uid, 1234);
    CHECK_EQ(st.st_gid, 5678);
    CHECK(chown(path, (uid_t)-1, 0) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_uid, 1234);
    CHECK_EQ(st.st_gid, 0);

    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    CHECK(fchown(fd, 0, 0) == 0);
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_uid, 0);
    CHECK_EQ(st.st_gid, 0);
    CHECK(close(fd) == 0);

    /* lchown() changes the link itself, not its target. */
    CHECK(lchown(link_path, 1234, 5678) == 0);
    CHECK(lstat(link_path, &st) == 0);
    CHECK_EQ(st.st_uid, 1234);
    CHECK_EQ(st.st_gid, 5678);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_uid, 0);

    /* Linux clears set-user-ID and set-group-ID on chown of a file, even for root. */
    CHECK(chmod(path, 06755) == 0);
    CHECK(chown(path, 1234, 5678) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_mode & 07777, 0755);
    CHECK(chown(path, 0, 0) == 0);
    return 0;
}

static int test_utimens_now_omit(const char *dir)
{
    const struct timespec old_atime = {OLD_TIME, 111}, old_mtime = {OLD_TIME + 1, 222};
    const struct timespec old[2] = {old_atime, old_mtime};
    const struct timespec omit_atime[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    const struct timespec omit_mtime[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    const struct timespec omit_both[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
    char path[PATH_MAX];
    struct stat st, before;

    path_in(path, dir, "file");
    CHECK(write_file(path, "x", 1) == 0);

    CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
    CHECK(utimensat(AT_FDCWD, path, omit_atime, 0) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK(timespec_equal(st.st_atim, old_atime));
    CHECK(timespec_after(st.st_mtim, old_mtime));

    CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
    CHECK(utimensat(AT_FDCWD, path, omit_mtime, 0) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK(timespec_after(st.st_atim, old_atime));
    CHECK(timespec_equal(st.st_mtim, old_mtime));

    CHECK(stat(path, &before) == 0);
    CHECK(utimensat(AT_FDCWD, path, omit_both, 0) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK(timespec_equal(st.st_atim, before.st_atim));
    CHECK(timespec_equal(st.st_mtim, before.st_mtim));

    /* NULL means both now. */
    CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
    CHECK(utimensat(AT_FDCWD, path, NULL, 0) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK(timespec_after(st.st_atim, old_atime));
    CHECK(timespec_after(st.st_mtim, old_mtime));
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Names: symlinks, hard links, name length                                                 */
/* ---------------------------------------------------------------------------------------- */

static int test_symlink(const char *dir)
{
    char target_path[PATH_MAX], link_path[PATH_MAX];
    char target[201], buffer[300];
    struct stat target_st, st;
    size_t used = 0;

    /* A 200-byte relative target that still resolves: "././.../target". */
    while (used < 200 - strlen("target")) {
        memcpy(target + used, "./", 2);
        used += 2;
    }
    memcpy(target + used, "target", sizeof("target"));
    CHECK_EQ(strlen(target), 200);

    path_in(target_path, dir, "target");
    path_in(link_path, dir, "link");
    CHECK(write_file(target_path, "data", 4) == 0);
    CHECK(stat(target_path, &target_st) == 0);
    CHECK(symlink(target, link_path) == 0);

    CHECK_EQ(readlink(link_path, buffer, sizeof(buffer)), 200);
    CHECK(memcmp(buffer, target, 200) == 0);
    /* A short buffer truncates silently; readlink() does not add a terminating NUL. */
    memset(buffer, '#', sizeof(buffer));
    CHECK_EQ(readlink(link_path, buffer, 50), 50);
    CHECK(memcmp(buffer, target, 50) == 0);
    CHECK_EQ(buffer[50], '#');

    CHECK(lstat(link_path, &st) == 0);
    CHECK(S_ISLNK(st.st_mode));
    CHECK_EQ(st.st_size, 200);
    CHECK(stat(link_path, &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_ino, target_st.st_ino);
    CHECK(check_file_content(link_path, "data", 4) == 0);

    CHECK_ERRNO(symlink(target, link_path), EEXIST);
    CHECK_ERRNO(readlink(target_path, buffer, sizeof(buffer)), EINVAL);
    return 0;
}

static int test_symlink_dangling(const char *dir)
{
    char link_path[PATH_MAX], target_path[PATH_MAX];
    struct stat st;
    int fd;

    path_in(link_path, dir, "link");
    path_in(target_path, dir, "missing");
    CHECK(symlink("missing", link_path) == 0);
    CHECK_ERRNO(stat(link_path, &st), ENOENT);
    CHECK_ERRNO(open(link_path, O_RDONLY), ENOENT);
    CHECK(lstat(link_path, &st) == 0);
    CHECK(S_ISLNK(st.st_mode));

    /* O_CREAT without O_EXCL follows the link and creates its target. */
    fd = open(link_path, O_WRONLY | O_CREAT, 0644);
    CHECK(fd >= 0);
    CHECK(close(fd) == 0);
    CHECK(stat(target_path, &st) == 0);
    CHECK(S_ISREG(st.st_mode));

    /* unlink() removes the link, never the target. */
    CHECK(unlink(link_path) == 0);
    CHECK_ERRNO(lstat(link_path, &st), ENOENT);
    CHECK(stat(target_path, &st) == 0);
    return 0;
}

static int test_hardlink(const char *dir)
{
    char a[PATH_MAX], b[PATH_MAX], sub[PATH_MAX], sub_link[PATH_MAX];
    struct stat a_st, b_st;
    int fd;

    path_in(a, dir, "a");
    path_in(b, dir, "b");
    path_in(sub, dir, "sub");
    path_in(sub_link, dir, "sub-link");
    CHECK(write_file(a, "first", 5) == 0);
    CHECK(link(a, b) == 0);

    CHECK(stat(a, &a_st) == 0);
    CHECK(stat(b, &b_st) == 0);
    CHECK_EQ(a_st.st_nlink, 2);
    CHECK_EQ(b_st.st_nlink, 2);
    CHECK_EQ(a_st.st_ino, b_st.st_ino);
    CHECK_EQ(a_st.st_dev, b_st.st_dev);

    /* One file: a write through one name is read through the other. */
    fd = open(b, O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, "+more", 5), 5);
    CHECK(close(fd) == 0);
    CHECK(check_file_content(a, "first+more", 10) == 0);

    CHECK_ERRNO(link(a, b), EEXIST);
    CHECK(mkdir(sub, 0755) == 0);
    CHECK_ERRNO(link(sub, sub_link), EPERM);

    CHECK(unlink(a) == 0);
    CHECK_ERRNO(stat(a, &a_st), ENOENT);
    CHECK(stat(b, &b_st) == 0);
    CHECK_EQ(b_st.st_nlink, 1);
    CHECK(check_file_content(b, "first+more", 10) == 0);
    return 0;
}

/*
 * Drops the kernel's cached names and inodes, so that the next lookups reach the filesystem
 * (and a client-side cache of names, like Tessera's statahead, has to answer them). Returns
 * false where that is not allowed (not root): the caller then only runs with the kernel's
 * caches warm.
 */
static bool drop_kernel_names(void)
{
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
    bool dropped;

    if (fd < 0)
        return false;
    dropped = write(fd, "2\n", 2) == 2;
    close(fd);
    return dropped;
}

/* stat() of dir/w<index>: size and link count as expected. */
static int check_walked(const char *dir, int index, off_t size, nlink_t nlink)
{
    char name[32], path[PATH_MAX];
    struct stat st;

    snprintf(name, sizeof(name), "w%03d", index);
    CHECK(stat(path_in(path, dir, name), &st) == 0);
    CHECK_EQ(st.st_size, size);
    CHECK_EQ(st.st_nlink, nlink);
    CHECK(S_ISREG(st.st_mode));
    return 0;
}

/* The changes test_statahead_walk makes, one per round, to w<20 + round>. */
enum walk_change {
    WALK_TRUNCATE,
    WALK_CHMOD,
    WALK_APPEND,
    WALK_LINK,
    WALK_UNLINK_OTHER_NAME,
    WALK_UNLINK,
    WALK_CHANGES
};

static int walk_change(const char *dir, int index, enum walk_change change)
{
    char name[32], path[PATH_MAX], other[PATH_MAX];
    static const char data[100];
    int fd;

    snprintf(name, sizeof(name), "w%03d", index);
    path_in(path, dir, name);
    snprintf(name, sizeof(name), "w%03d-link", index);
    path_in(other, dir, name);
    switch (change) {
    case WALK_TRUNCATE: CHECK(truncate(path, 5000) == 0); break;
    case WALK_CHMOD: CHECK(chmod(path, 0600) == 0); break;
    case WALK_APPEND:
        fd = open(path, O_WRONLY | O_APPEND);
        CHECK(fd >= 0);
        CHECK(write_full(fd, data, sizeof(data)) == 0);
        CHECK(close(fd) == 0);
        break;
    case WALK_LINK: CHECK(link(path, other) == 0); break;
    case WALK_UNLINK_OTHER_NAME:
        CHECK(link(path, other) == 0);
        CHECK(stat(path, &(struct stat){0}) == 0);
        CHECK(unlink(other) == 0);
        break;
    case WALK_UNLINK: CHECK(unlink(path) == 0); break;
    case WALK_CHANGES: break;
    }
    return 0;
}

/* What stat() of w<index> must show after `change`. */
static int walk_check(const char *dir, int index, enum walk_change change)
{
    char name[32], path[PATH_MAX];
    struct stat st;

    snprintf(name, sizeof(name), "w%03d", index);
    path_in(path, dir, name);
    switch (change) {
    case WALK_TRUNCATE: return check_walked(dir, index, 5000, 1);
    case WALK_CHMOD:
        CHECK(stat(path, &st) == 0);
        CHECK_EQ(st.st_mode & 07777, 0600);
        return 0;
    case WALK_APPEND: return check_walked(dir, index, index + 100, 1);
    case WALK_LINK: return check_walked(dir, index, index, 2);
    case WALK_UNLINK_OTHER_NAME: return check_walked(dir, index, index, 1);
    case WALK_UNLINK: CHECK_ERRNO(stat(path, &st), ENOENT); return 0;
    case WALK_CHANGES: break;
    }
    return 0;
}

/*
 * A walk of a directory (stat of every name in order, as ls -l, rsync or rm -r do) sees every
 * change made through this mount, even when its lookups are answered from entries read
 * ahead: each round reads ahead past a name, changes that name, and walks on to it (the first
 * changed name of a walk is the one a stale read-ahead would show). Then the directory's own
 * times after a create and an unlink are those the server stamped on the touched inode.
 */
static int test_statahead_walk(const char *dir)
{
    enum { FILES = 300 };
    char name[32], path[PATH_MAX], other[PATH_MAX];
    static char data[FILES];
    struct stat st, dir_st;
    int fd;

    memset(data, 'w', sizeof(data));
    for (int i = 0; i < FILES; i++) {
        snprintf(name, sizeof(name), "w%03d", i);
        CHECK(write_file(path_in(path, dir, name), data, (size_t)i) == 0);
    }
    for (int round = 0; round < 2; round++) {
        drop_kernel_names();
        for (int i = 0; i < FILES; i++)
            CHECK(check_walked(dir, i, i, 1) == 0);
    }
    for (int change = 0; change < WALK_CHANGES; change++) {
        int changed = 20 + change;
        drop_kernel_names();
        for (int i = 0; i < 10; i++)
            CHECK(check_walked(dir, i, i, 1) == 0);
        CHECK(walk_change(dir, changed, (enum walk_change)change) == 0);
        drop_kernel_names();
        for (int i = 0; i < changed; i++)
            if (i < 20)
                CHECK(check_walked(dir, i, i, 1) == 0);
        CHECK(walk_check(dir, changed, (enum walk_change)change) == 0);
    }

    /* Renames: both names as they now are. */
    CHECK(rename(path_in(path, dir, "w040"), path_in(other, dir, "w040r")) == 0);
    CHECK(rename(path_in(path, dir, "w041"), path_in(other, dir, "w042")) == 0);
    drop_kernel_names();
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof(name), "w%03d", i);
        if (i == 40 || i == 41 || i == 20 + WALK_UNLINK)
            CHECK_ERRNO(stat(path_in(path, dir, name), &st), ENOENT);
        else if (i == 42)
            CHECK(check_walked(dir, i, 41, 1) == 0);
        else if (i < 20 || i >= 30)
            CHECK(check_walked(dir, i, i, 1) == 0);
    }
    CHECK(stat(path_in(path, dir, "w040r"), &st) == 0);
    CHECK_EQ(st.st_size, 40);

    /* The directory's times after a change are exactly the server's: the same as the
     * ctime it gave the inode the change touched (no data: a write would change it). */
    fd = open(path_in(path, dir, "new"), O_WRONLY | O_CREAT | O_EXCL, 0644);
    CHECK(fd >= 0);
    CHECK(close(fd) == 0);
    CHECK(stat(dir, &dir_st) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(dir_st.st_mtim.tv_sec, st.st_ctim.tv_sec);
    CHECK_EQ(dir_st.st_mtim.tv_nsec, st.st_ctim.tv_nsec);
    CHECK(link(path, path_in(other, dir, "new-link")) == 0);
    CHECK(unlink(other) == 0);
    CHECK(stat(dir, &dir_st) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_nlink, 1);
    CHECK_EQ(dir_st.st_mtim.tv_sec, st.st_ctim.tv_sec);
    CHECK_EQ(dir_st.st_mtim.tv_nsec, st.st_ctim.tv_nsec);
    CHECK_EQ(dir_st.st_nlink, 2);
    CHECK(mkdir(path_in(path, dir, "newdir"), 0755) == 0);
    CHECK(stat(dir, &dir_st) == 0);
    CHECK_EQ(dir_st.st_nlink, 3);
    return 0;
}

/* Names created after a walk looked them up (absent) are found, and names removed are gone. */
static int test_statahead_negative(const char *dir)
{
    enum { FILES = 200 };
    char name[32], path[PATH_MAX];
    struct stat st;
    int fd;

    /* Missing names looked up in order, as before each create(2) of a batch. */
    for (int i = 0; i < FILES; i++) {
        snprintf(name, sizeof(name), "n%03d", i);
        CHECK_ERRNO(stat(path_in(path, dir, name), &st), ENOENT);
    }
    for (int i = 0; i < FILES; i += 2) {
        snprintf(name, sizeof(name), "n%03d", i);
        fd = open(path_in(path, dir, name), O_WRONLY | O_CREAT | O_EXCL, 0644);
        CHECK(fd >= 0);
        CHECK(close(fd) == 0);
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < FILES; i++) {
            snprintf(name, sizeof(name), "n%03d", i);
            if (i % 2 == 0)
                CHECK(stat(path_in(path, dir, name), &st) == 0);
            else
                CHECK_ERRNO(stat(path_in(path, dir, name), &st), ENOENT);
        }
        drop_kernel_names();
    }
    /* O_CREAT without O_EXCL opens what exists; with it, EEXIST. */
    fd = open(path_in(path, dir, "n000"), O_WRONLY | O_CREAT, 0644);
    CHECK(fd >= 0);
    CHECK(close(fd) == 0);
    CHECK_ERRNO(open(path_in(path, dir, "n002"), O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
    for (int i = 0; i < FILES; i += 2) {
        snprintf(name, sizeof(name), "n%03d", i);
        CHECK(unlink(path_in(path, dir, name)) == 0);
    }
    drop_kernel_names();
    for (int i = 0; i < FILES; i++) {
        snprintf(name, sizeof(name), "n%03d", i);
        CHECK_ERRNO(stat(path_in(path, dir, name), &st), ENOENT);
    }
    return 0;
}

/* ls -l: names with attributes in one go (readdirplus) agree with stat(). */
static int test_readdir_stat(const char *dir)
{
    enum { FILES = 150 };
    char name[32], path[PATH_MAX];
    static char data[FILES];
    off_t sizes[FILES];
    int seen = 0;
    DIR *stream;
    struct dirent *entry;

    memset(data, 'r', sizeof(data));
    for (int i = 0; i < FILES; i++) {
        snprintf(name, sizeof(name), "r%03d", i);
        CHECK(write_file(path_in(path, dir, name), data, (size_t)i) == 0);
        sizes[i] = i;
    }
    CHECK(mkdir(path_in(path, dir, "sub"), 0700) == 0);
    for (int round = 0; round < 2; round++) {
        drop_kernel_names();
        stream = opendir(dir);
        CHECK(stream != NULL);
        seen = 0;
        while ((entry = readdir(stream)) != NULL) {
            struct stat st;
            int index;
            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
                continue;
            CHECK(fstatat(dirfd(stream), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0);
            CHECK_EQ(st.st_ino, entry->d_ino);
            if (strcmp(entry->d_name, "sub") == 0) {
                CHECK(S_ISDIR(st.st_mode));
                CHECK_EQ(st.st_mode & 07777, 0700);
                CHECK_EQ(entry->d_type, DT_DIR);
            } else {
                CHECK(sscanf(entry->d_name, "r%d", &index) == 1);
                CHECK(index >= 0 && index < FILES);
                CHECK_EQ(st.st_size, sizes[index]);
                CHECK_EQ(entry->d_type, DT_REG);
            }
            seen++;
        }
        CHECK(closedir(stream) == 0);
        CHECK_EQ(seen, FILES + 1);
        /* Sizes changed between two listings are seen by the second. */
        CHECK(truncate(path_in(path, dir, "r005"), 50) == 0);
        sizes[5] = 50;
    }
    return 0;
}

static int test_name_max(const char *dir)
{
    char name[NAME_MAX + 2];
    char path[PATH_MAX], short_path[PATH_MAX];
    struct stat st;
    int entries;
    bool found;
    int fd;

    memset(name, 'n', NAME_MAX);
    name[NAME_MAX] = '\0';
    path_in(path, dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    CHECK(fd >= 0);
    CHECK(close(fd) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK(list_directory(dir, name, &entries, &found) == 0);
    CHECK(found);
    CHECK(unlink(path) == 0);
    CHECK(mkdir(path, 0755) == 0);
    CHECK(rmdir(path) == 0);

    name[NAME_MAX] = 'n';
    name[NAME_MAX + 1] = '\0';
    path_in(path, dir, name);
    path_in(short_path, dir, "short");
    CHECK(write_file(short_path, "x", 1) == 0);
    CHECK_ERRNO(open(path, O_WRONLY | O_CREAT, 0644), ENAMETOOLONG);
    CHECK_ERRNO(mkdir(path, 0755), ENAMETOOLONG);
    CHECK_ERRNO(stat(path, &st), ENAMETOOLONG);
    CHECK_ERRNO(rename(short_path, path), ENAMETOOLONG);
    CHECK_ERRNO(link(short_path, path), ENAMETOOLONG);
    CHECK_ERRNO(symlink("short", path), ENAMETOOLONG);
    CHECK(list_directory(dir, NULL, &entries, NULL) == 0);
    CHECK_EQ(entries, 1);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Durability, space, extended attributes                                                   */
/* ---------------------------------------------------------------------------------------- */

static int test_fsync(const char *dir)
{
    char path[PATH_MAX];
    unsigned char data[65537];
    int fd, dir_fd;

    path_in(path, dir, "file");
    fill_pattern(data, sizeof(data), 0, 6);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
    CHECK(fd >= 0);
    CHECK(write_full(fd, data, sizeof(data)) == 0);
    CHECK(fsync(fd) == 0);
    CHECK_EQ(pwrite(fd, "x", 1, 3), 1);
    data[3] = 'x';
    CHECK(fdatasync(fd) == 0);
    CHECK(fsync(fd) == 0); /* nothing dirty any more */
    CHECK(close(fd) == 0);
    CHECK(check_file_content(path, data, sizeof(data)) == 0);

    /* Read-only descriptors and directories can be synced too (rename durability needs it). */
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    CHECK(fsync(fd) == 0);
    CHECK(close(fd) == 0);
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
    CHECK(dir_fd >= 0);
    CHECK(fsync(dir_fd) == 0);
    CHECK(close(dir_fd) == 0);
    return 0;
}

static int test_statfs(const char *dir)
{
    struct statvfs by_path, by_fd;
    int fd;

    CHECK(statvfs(dir, &by_path) == 0);
    CHECK(by_path.f_bsize > 0);
    CHECK(by_path.f_frsize > 0);
    CHECK(by_path.f_blocks > 0);
    CHECK(by_path.f_bfree <= by_path.f_blocks);
    CHECK(by_path.f_bavail <= by_path.f_bfree);
    CHECK(by_path.f_ffree <= by_path.f_files);

    fd = open(dir, O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0);
    CHECK(fstatvfs(fd, &by_fd) == 0);
    CHECK_EQ(by_fd.f_bsize, by_path.f_bsize);
    CHECK_EQ(by_fd.f_blocks, by_path.f_blocks);
    CHECK(close(fd) == 0);
    return 0;
}

/* Whether the NUL-separated listxattr() output holds `name`. */
static bool xattr_list_has(const char *list, ssize_t length, const char *name)
{
    ssize_t at = 0;

    while (at < length) {
        if (strcmp(list + at, name) == 0)
            return true;
        at += (ssize_t)strlen(list + at) + 1;
    }
    return false;
}

static int test_xattr_basic(const char *dir)
{
    char path[PATH_MAX], sub[PATH_MAX];
    char value[64], list[1024];
    ssize_t length;

    path_in(path, dir, "file");
    path_in(sub, dir, "sub");
    CHECK(write_file(path, "x", 1) == 0);
    CHECK(mkdir(sub, 0755) == 0);

    CHECK(setxattr(path, "user.tessera.a", "value1", 6, 0) == 0);
    CHECK(setxattr(path, "user.tessera.b", "", 0, 0) == 0);
    CHECK_EQ(getxattr(path, "user.tessera.a", value, sizeof(value)), 6);
    CHECK(memcmp(value, "value1", 6) == 0);
    CHECK_EQ(getxattr(path, "user.tessera.b", value, sizeof(value)), 0);

    length = listxattr(path, list, sizeof(list));
    CHECK(length > 0);
    CHECK(xattr_list_has(list, length, "user.tessera.a"));
    CHECK(xattr_list_has(list, length, "user.tessera.b"));

    /* Replacing with a longer value, then removing. */
    CHECK(setxattr(path, "user.tessera.a", "a longer value", 14, 0) == 0);
    CHECK_EQ(getxattr(path, "user.tessera.a", value, sizeof(value)), 14);
    CHECK(memcmp(value, "a longer value", 14) == 0);
    CHECK(removexattr(path, "user.tessera.a") == 0);
    CHECK_ERRNO(getxattr(path, "user.tessera.a", value, sizeof(value)), ENODATA);
    length = listxattr(path, list, sizeof(list));
    CHECK(length >= 0);
    CHECK(!xattr_list_has(list, length, "user.tessera.a"));
    CHECK(xattr_list_has(list, length, "user.tessera.b"));

    /* Directories carry them too (Tessera keeps layout hints there). */
    CHECK(setxattr(sub, "user.tessera.dir", "d", 1, 0) == 0);
    CHECK_EQ(getxattr(sub, "user.tessera.dir", value, sizeof(value)), 1);
    CHECK_EQ(value[0], 'd');
    return 0;
}

static int test_xattr_flags(const char *dir)
{
    char path[PATH_MAX];
    char value[16];

    path_in(path, dir, "file");
    CHECK(write_file(path, "x", 1) == 0);

    CHECK_ERRNO(getxattr(path, "user.missing", value, sizeof(value)), ENODATA);
    CHECK_ERRNO(removexattr(path, "user.missing"), ENODATA);
    CHECK_ERRNO(setxattr(path, "user.missing", "v", 1, XATTR_REPLACE), ENODATA);

    CHECK(setxattr(path, "user.k", "one", 3, XATTR_CREATE) == 0);
    CHECK_ERRNO(setxattr(path, "user.k", "two", 3, XATTR_CREATE), EEXIST);
    CHECK_EQ(getxattr(path, "user.k", value, sizeof(value)), 3);
    CHECK(memcmp(value, "one", 3) == 0);
    CHECK(setxattr(path, "user.k", "three", 5, XATTR_REPLACE) == 0);
    CHECK_EQ(getxattr(path, "user.k", value, sizeof(value)), 5);
    CHECK(memcmp(value, "three", 5) == 0);
    return 0;
}

static int test_xattr_large(const char *dir)
{
    char path[PATH_MAX];
    /*
     * Close to 4 KiB but not quite: ext4 without the ea_inode feature keeps all of a file's
     * xattrs in one 4 KiB block, so a full 4096-byte value does not fit on a local disk.
     */
    unsigned char value[4000], got[4000];
    char list[256];
    ssize_t needed;

    path_in(path, dir, "file");
    CHECK(write_file(path, "x", 1) == 0);
    fill_pattern(value, sizeof(value), 0, 7);

    CHECK(setxattr(path, "user.big", value, sizeof(value), 0) == 0);
    /* Size 0 asks for the length without copying. */
    CHECK_EQ(getxattr(path, "user.big", NULL, 0), sizeof(value));
    CHECK_EQ(getxattr(path, "user.big", got, sizeof(got)), sizeof(value));
    CHECK(check_bytes(got, value, sizeof(value), 0) == 0);
    CHECK_ERRNO(getxattr(path, "user.big", got, sizeof(got) - 1), ERANGE);
    CHECK_ERRNO(getxattr(path, "user.big", got, 1), ERANGE);

    needed = listxattr(path, NULL, 0);
    CHECK(needed >= (ssize_t)sizeof("user.big"));
    CHECK(needed <= (ssize_t)sizeof(list));
    CHECK_EQ(listxattr(path, list, sizeof(list)), needed);
    CHECK_ERRNO(listxattr(path, list, 1), ERANGE);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* mmap and large transfers                                                                 */
/* ---------------------------------------------------------------------------------------- */

static int test_mmap_write(const char *dir)
{
    const size_t size = 3 * MiB;
    char path[PATH_MAX];
    unsigned char *map, *expected;
    int fd;

    path_in(path, dir, "file");
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, (off_t)size) == 0);
    map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(map != MAP_FAILED);
    fill_pattern(map, size, 0, 8);
    CHECK(msync(map, size, MS_SYNC) == 0);
    CHECK(munmap(map, size) == 0);
    CHECK(close(fd) == 0);

    expected = malloc(size);
    CHECK(expected != NULL);
    fill_pattern(expected, size, 0, 8);
    CHECK(check_file_content(path, expected, size) == 0);
    free(expected);
    return 0;
}

static int mmap_read_check(const char *path, const unsigned char *expected, size_t size,
                           unsigned char *from_read)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t mapped = (size + page - 1) / page * page;
    unsigned char *map;
    int fd;

    CHECK(write_file(path, expected, size) == 0);
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    CHECK(read_full(fd, from_read, size) == 0);
    map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(map != MAP_FAILED);
    CHECK(check_bytes(map, from_read, size, 0) == 0);
    CHECK(check_bytes(map, expected, size, 0) == 0);
    /* The rest of the last page, past end of file, reads as zeros. */
    CHECK(check_zeros(map + size, mapped - size, size) == 0);
    CHECK(munmap(map, size) == 0);

    /* Writing to a private mapping never reaches the file. */
    map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    CHECK(map != MAP_FAILED);
    memset(map, 0xAA, size);
    CHECK(munmap(map, size) == 0);
    CHECK(close(fd) == 0);
    CHECK(check_file_content(path, expected, size) == 0);
    return 0;
}

static int test_mmap_read(const char *dir)
{
    /* Not a multiple of the page size, so the last page is partly past end of file. */
    const size_t size = 100003;
    char path[PATH_MAX];
    unsigned char *expected = malloc(size), *from_read = malloc(size);

    CHECK(expected != NULL && from_read != NULL);
    fill_pattern(expected, size, 0, 9);
    CHECK(mmap_read_check(path_in(path, dir, "file"), expected, size, from_read) == 0);
    free(expected);
    free(from_read);
    return 0;
}

/*
 * A write-only handle writes past the page cache (O_WRONLY opens are direct
 * I/O in the mount): a reader's cached pages and its shared mapping must
 * still show every write once write() has returned, odd offsets included.
 */
static int test_write_only_coherent(const char *dir)
{
    const size_t size = 3 * MiB + 12345;
    static const struct { size_t offset, length; } writes[] = {
        {0, 1}, {4095, 2}, {MiB - 7, 4096 * 3 + 1}, {2 * MiB, MiB}, {3 * MiB + 12340, 5}};
    char path[PATH_MAX];
    unsigned char *expected = malloc(size), *got = malloc(size), *fresh = malloc(MiB);
    const unsigned char *map;
    int reader, writer;

    CHECK(expected != NULL && got != NULL && fresh != NULL);
    fill_pattern(expected, size, 0, 21);
    CHECK(write_file(path_in(path, dir, "file"), expected, size) == 0);
    reader = open(path, O_RDONLY);
    CHECK(reader >= 0);
    CHECK(read_full(reader, got, size) == 0); /* now in the page cache */
    map = mmap(NULL, size, PROT_READ, MAP_SHARED, reader, 0);
    CHECK(map != MAP_FAILED);
    CHECK(check_bytes(map, expected, size, 0) == 0);
    writer = open(path, O_WRONLY);
    CHECK(writer >= 0);
    for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
        fill_pattern(fresh, writes[i].length, writes[i].offset, 22 + (uint32_t)i);
        CHECK_EQ(pwrite(writer, fresh, writes[i].length, (off_t)writes[i].offset),
                 (ssize_t)writes[i].length);
        memcpy(expected + writes[i].offset, fresh, writes[i].length);
        CHECK_EQ(pread(reader, got, size, 0), (ssize_t)size);
        CHECK(check_bytes(got, expected, size, 0) == 0);
        CHECK(check_bytes(map, expected, size, 0) == 0);
    }
    /* Appending through a write-only handle grows what the reader sees. */
    CHECK(close(writer) == 0);
    writer = open(path, O_WRONLY | O_APPEND);
    CHECK(writer >= 0);
    CHECK_EQ(write(writer, "tail", 4), 4);
    CHECK(close(writer) == 0);
    CHECK_EQ(pread(reader, got, 8, (off_t)size - 4), 8);
    CHECK(memcmp(got, expected + size - 4, 4) == 0 && memcmp(got + 4, "tail", 4) == 0);
    CHECK(munmap((void *)map, size) == 0);
    CHECK(close(reader) == 0);
    free(expected);
    free(got);
    free(fresh);
    return 0;
}

#define BIG_IO_SIZE (8 * MiB)

static int big_io_single_check(const char *path, unsigned char *data, unsigned char *got)
{
    int fd;

    fill_pattern(data, BIG_IO_SIZE, 0, 10);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, data, BIG_IO_SIZE), BIG_IO_SIZE);
    CHECK_EQ(pread(fd, got, BIG_IO_SIZE, 0), BIG_IO_SIZE);
    CHECK(check_bytes(got, data, BIG_IO_SIZE, 0) == 0);
    CHECK(close(fd) == 0);
    CHECK(check_file_content(path, data, BIG_IO_SIZE) == 0);
    return 0;
}

/*
 * Writes 8 MiB in pieces of 1 byte to 4 MiB (mostly odd sizes, so they straddle pages and
 * tiles), then reads it back in pieces of other odd sizes.
 */
static int big_io_odd_check(const char *path, unsigned char *data, unsigned char *got)
{
    static const size_t write_sizes[] = {1,    2,      3,      7, 511,        4095,
                                         4097, 65537,  131071, 3, 1048577,    4 * MiB,
                                         17,   262143, 999999, 1, 2 * MiB + 1};
    static const size_t read_sizes[] = {4096, 1, 8191, 65537, 3, 1048575, 2 * MiB + 5, 77};
    size_t done = 0;
    int fd;

    fill_pattern(data, BIG_IO_SIZE, 0, 11);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    CHECK(fd >= 0);
    for (size_t i = 0; done < BIG_IO_SIZE; i++) {
        size_t length = write_sizes[i % (sizeof(write_sizes) / sizeof(write_sizes[0]))];

        if (length > BIG_IO_SIZE - done)
            length = BIG_IO_SIZE - done;
        CHECK_EQ(write(fd, data + done, length), length);
        done += length;
    }
    CHECK(close(fd) == 0);

    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    done = 0;
    for (size_t i = 0; done < BIG_IO_SIZE; i++) {
        size_t length = read_sizes[i % (sizeof(read_sizes) / sizeof(read_sizes[0]))];

        if (length > BIG_IO_SIZE - done)
            length = BIG_IO_SIZE - done;
        CHECK(read_full(fd, got + done, length) == 0);
        CHECK(check_bytes(got + done, data + done, length, done) == 0);
        done += length;
    }
    CHECK_EQ(read(fd, got, 1), 0);
    CHECK(close(fd) == 0);
    return 0;
}

static int test_big_io(const char *dir)
{
    char single[PATH_MAX], odd[PATH_MAX];
    unsigned char *data = malloc(BIG_IO_SIZE), *got = malloc(BIG_IO_SIZE);

    CHECK(data != NULL && got != NULL);
    CHECK(big_io_single_check(path_in(single, dir, "single"), data, got) == 0);
    CHECK(big_io_odd_check(path_in(odd, dir, "odd"), data, got) == 0);
    free(data);
    free(got);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Permissions                                                                              */
/* ---------------------------------------------------------------------------------------- */

/*
 * The unprivileged half of test_permissions(), run in a child of the test: switches to
 * uid/gid NOBODY_ID and checks what it may and may not do with root's files in `dir`.
 */
static int permissions_as_nobody(const char *dir)
{
    char own[PATH_MAX], public_file[PATH_MAX], secret[PATH_MAX], locked_new[PATH_MAX];
    char locked_dir[PATH_MAX], locked_file[PATH_MAX], stolen[PATH_MAX];
    const struct timespec times[2] = {{OLD_TIME, 0}, {OLD_TIME, 0}};
    struct stat st;
    int fd;

    /* Supplementary groups go first: root's groups would otherwise still grant access. */
    if (setgroups(0, NULL) != 0 || setgid(NOBODY_ID) != 0 || setuid(NOBODY_ID) != 0) {
        snprintf(failure_text, sizeof(failure_text), "cannot switch to uid %d: %s", NOBODY_ID,
                 strerror(errno));
        return TEST_SKIP;
    }
    CHECK_EQ(geteuid(), NOBODY_ID);
    CHECK_EQ(getegid(), NOBODY_ID);
    if (stat(dir, &st) != 0) {
        snprintf(failure_text, sizeof(failure_text),
                 "uid %d cannot reach the test directory (%s): DIR and its parents need o+x, "
                 "a FUSE mount needs allow_other",
                 NOBODY_ID, strerror(errno));
        return TEST_SKIP;
    }

    path_in(own, dir, "own");
    path_in(public_file, dir, "public");
    path_in(secret, dir, "secret");
    path_in(locked_dir, dir, "locked/dir");
    path_in(locked_file, dir, "locked/file");
    path_in(locked_new, dir, "locked/new");
    path_in(stolen, dir, "stolen");

    /* Control: in the 0777 directory it can create, and the file is its own. */
    fd = open(own, O_WRONLY | O_CREAT | O_EXCL, 0644);
    CHECK(fd >= 0);
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_uid, NOBODY_ID);
    CHECK_EQ(st.st_gid, NOBODY_ID);
    CHECK(close(fd) == 0);
    fd = open(public_file, O_RDONLY);
    CHECK(fd >= 0);
    CHECK(close(fd) == 0);

    CHECK_ERRNO(open(secret, O_RDONLY), EACCES);
    CHECK_ERRNO(open(public_file, O_WRONLY), EACCES);
    CHECK_ERRNO(open(public_file, O_WRONLY | O_TRUNC), EACCES);
    CHECK_ERRNO(open(locked_new, O_WRONLY | O_CREAT, 0644), EACCES);
    CHECK_ERRNO(mkdir(locked_dir, 0755), EACCES);
    CHECK_ERRNO(unlink(locked_file), EACCES);
    CHECK_ERRNO(rename(locked_file, stolen), EACCES);
    /* Only the owner may change the mode, the owner or explicit times. */
    CHECK_ERRNO(chmod(public_file, 0666), EPERM);
    CHECK_ERRNO(chown(own, 0, (gid_t)-1), EPERM);
    CHECK_ERRNO(utimensat(AT_FDCWD, public_file, times, 0), EPERM);
    return 0;
}

/* As a non-root owner: mode bits bind the owner too. */
static int permissions_as_owner(const char *dir)
{
    char file[PATH_MAX], locked[PATH_MAX], locked_new[PATH_MAX];

    path_in(file, dir, "file");
    path_in(locked, dir, "locked");
    path_in(locked_new, dir, "locked/new");
    CHECK(write_file(file, "x", 1) == 0);
    CHECK(chmod(file, 0) == 0);
    CHECK_ERRNO(open(file, O_RDONLY), EACCES);
    CHECK(chmod(file, 0644) == 0);
    CHECK(mkdir(locked, 0555) == 0);
    CHECK_ERRNO(open(locked_new, O_WRONLY | O_CREAT, 0644), EACCES);
    CHECK(chmod(locked, 0755) == 0);
    return 0;
}

static int test_permissions(const char *dir)
{
    char secret[PATH_MAX], public_file[PATH_MAX], locked[PATH_MAX], locked_file[PATH_MAX];

    if (geteuid() != 0)
        return permissions_as_owner(dir);

    path_in(secret, dir, "secret");
    path_in(public_file, dir, "public");
    path_in(locked, dir, "locked");
    path_in(locked_file, dir, "locked/file");
    CHECK(write_file(secret, "s", 1) == 0);
    CHECK(chmod(secret, 0600) == 0);
    CHECK(write_file(public_file, "p", 1) == 0);
    CHECK(chmod(public_file, 0644) == 0);
    CHECK(mkdir(locked, 0755) == 0);
    CHECK(chmod(locked, 0755) == 0);
    CHECK(write_file(locked_file, "f", 1) == 0);
    /* The child must be able to create its own file here; the rest stays root's. */
    CHECK(chmod(dir, 0777) == 0);
    return run_child(permissions_as_nobody, dir, 0);
}

/*
 * fallocate(2): mode 0 and KEEP_SIZE, PUNCH_HOLE and ZERO_RANGE against a
 * model of the file, a punched whole tile freeing its space (st_blocks),
 * and EOPNOTSUPP for the modes Tessera does not do.
 */
static int test_fallocate(const char *dir)
{
    char path[PATH_MAX];
    struct stat st;
    size_t size = 3 * MiB + MiB / 2;
    unsigned char *model = calloc(8 * MiB, 1);
    CHECK(model != NULL);
    fill_pattern(model, size, 0, 7);
    path_in(path, dir, "file");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(pwrite(fd, model, size, 0), (ssize_t)size);
    CHECK(fsync(fd) == 0);

    CHECK(fallocate(fd, 0, 5 * MiB, MiB) == 0); /* grows the file: zeros */
    size = 6 * MiB;
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_size, (off_t)size);
    CHECK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 7 * MiB, MiB) == 0);
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_size, (off_t)size);
    CHECK(check_fd_content(fd, model, size) == 0);

    CHECK(fstat(fd, &st) == 0);
    blkcnt_t blocks_before = st.st_blocks;
    /* Tiles 1 and 2 whole, parts of 0 and 3 (default 1 MiB tiles). */
    CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, MiB / 2, 3 * MiB) == 0);
    memset(model + MiB / 2, 0, 3 * MiB);
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_size, (off_t)size);
    CHECK(check_fd_content(fd, model, size) == 0);
    if (!(st.st_blocks < blocks_before)) {
        snprintf(failure_text, sizeof(failure_text),
                 "punching two whole tiles left st_blocks at %jd (was %jd)", (intmax_t)st.st_blocks,
                 (intmax_t)blocks_before);
        free(model);
        close(fd);
        return -1;
    }

    CHECK(fallocate(fd, FALLOC_FL_ZERO_RANGE, 100, 200) == 0);
    memset(model + 100, 0, 200);
    /* Across the end, growing the file. */
    fill_pattern(model + size, MiB, size, 9);
    CHECK_EQ(pwrite(fd, model + size, MiB, (off_t)size), MiB);
    size += MiB;
    CHECK(fallocate(fd, FALLOC_FL_ZERO_RANGE, (off_t)size - 1000, 5000) == 0);
    memset(model + size - 1000, 0, 5000);
    size += 4000;
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_size, (off_t)size);
    CHECK(check_fd_content(fd, model, size) == 0);
    CHECK(close(fd) == 0);
    CHECK(check_file_content(path, model, size) == 0); /* and after close, from meta */

    fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    CHECK_ERRNO(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, MiB), EOPNOTSUPP); /* needs KEEP_SIZE */
    CHECK(close(fd) == 0);
    free(model);
    return 0;
}

/*
 * open(O_TRUNC) of an existing file marks mtime and ctime for update even
 * when it was empty already (POSIX open(): "the last data modification and
 * last file status change timestamps"): make's stamp rules rely on it.
 */
static int test_open_trunc_times(const char *dir)
{
    char path[PATH_MAX];
    const struct timespec times[2] = {{OLD_TIME, 0}, {OLD_TIME, 0}};
    struct stat st;
    int fd;

    path_in(path, dir, "stamp");
    CHECK(write_file(path, "", 0) == 0);
    CHECK(utimensat(AT_FDCWD, path, times, 0) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_OLD_TIME(st.st_mtim);
    time_t before = time(NULL);
    fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0);
    CHECK(close(fd) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_size, 0);
    CHECK(st.st_mtim.tv_sec >= before - 1);
    CHECK(st.st_ctim.tv_sec >= before - 1);
    return 0;
}

/* The files test_kill_privileges' child writes, and the mode each must end with. */
static const struct privileged_case {
    const char *name;
    mode_t mode;     /* set by root before the child runs */
    mode_t expected; /* after the child's write or truncation */
} privileged_cases[] = {
    {"append", 06777, 0777},   /* O_WRONLY | O_APPEND: past the page cache */
    {"rdwr", 06777, 0777},     /* O_RDWR: through the page cache */
    {"otrunc", 06777, 0777},   /* open(O_TRUNC) alone */
    {"ftruncate", 06777, 0777},
    {"nogx", 02767, 02767},    /* set-group-ID without group execute is a lock mark */
};

static int privileged_as_nobody(const char *dir)
{
    char path[PATH_MAX];
    struct stat st;

    if (setgroups(0, NULL) != 0 || setgid(NOBODY_ID) != 0 || setuid(NOBODY_ID) != 0) {
        snprintf(failure_text, sizeof(failure_text), "cannot switch to uid %d: %s", NOBODY_ID,
                 strerror(errno));
        return TEST_SKIP;
    }
    for (size_t i = 0; i < sizeof(privileged_cases) / sizeof(privileged_cases[0]); i++) {
        const struct privileged_case *c = &privileged_cases[i];
        int fd;
        path_in(path, dir, c->name);
        if (strcmp(c->name, "append") == 0 || strcmp(c->name, "nogx") == 0) {
            fd = open(path, O_WRONLY | O_APPEND);
            CHECK(fd >= 0);
            CHECK_EQ(write(fd, "x", 1), 1);
        } else if (strcmp(c->name, "rdwr") == 0) {
            fd = open(path, O_RDWR);
            CHECK(fd >= 0);
            CHECK_EQ(pwrite(fd, "x", 1, 0), 1);
        } else if (strcmp(c->name, "otrunc") == 0) {
            fd = open(path, O_WRONLY | O_TRUNC);
            CHECK(fd >= 0);
        } else {
            fd = open(path, O_WRONLY);
            CHECK(fd >= 0);
            CHECK(ftruncate(fd, 1) == 0);
        }
        CHECK(close(fd) == 0);
        CHECK(stat(path, &st) == 0);
        if ((st.st_mode & 07777) != c->expected) {
            snprintf(failure_text, sizeof(failure_text), "%s: mode %o after a write by uid %d, "
                     "expected %o", c->name, (unsigned)(st.st_mode & 07777), NOBODY_ID,
                     (unsigned)c->expected);
            return -1;
        }
    }
    return 0;
}

/*
 * A write or truncation by a caller without CAP_FSETID clears set-user-ID,
 * and set-group-ID where group execute is set, as a local filesystem does;
 * root's writes keep them, chown clears them.
 */
static int test_kill_privileges(const char *dir)
{
    char path[PATH_MAX];
    struct stat st;

    if (geteuid() != 0)
        return TEST_SKIP; /* needs a second user */
    for (size_t i = 0; i < sizeof(privileged_cases) / sizeof(privileged_cases[0]); i++) {
        path_in(path, dir, privileged_cases[i].name);
        CHECK(write_file(path, "hello", 5) == 0);
        CHECK(chmod(path, privileged_cases[i].mode) == 0);
    }
    CHECK(chmod(dir, 0777) == 0);
    int result = run_child(privileged_as_nobody, dir, 0);
    if (result != 0)
        return result;
    path_in(path, dir, "root");
    CHECK(write_file(path, "hello", 5) == 0);
    CHECK(chmod(path, 06777) == 0);
    int fd = open(path, O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, "x", 1), 1);
    CHECK(close(fd) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_mode & 07777, 06777); /* CAP_FSETID keeps them */
    CHECK(chown(path, NOBODY_ID, NOBODY_ID) == 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ(st.st_mode & 07777, 0777);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Runner                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static const struct test_case {
    const char *name;
    int (*run)(const char *dir);
    bool big; /* slow: only with POSIX_TEST_BIG=1 */
} tests[] = {
    {"create_excl", test_create_excl, false},
    {"open_trunc", test_open_trunc, false},
    {"truncate_while_writing", test_truncate_while_writing, false},
    {"open_append", test_open_append, false},
    {"open_trunc_times", test_open_trunc_times, false},
    {"kill_privileges", test_kill_privileges, false},
    {"fallocate", test_fallocate, false},
    {"open_missing", test_open_missing, false},
    {"open_dir_wronly", test_open_dir_wronly, false},
    {"open_directory_file", test_open_directory_file, false},
    {"rw_offsets", test_rw_offsets, false},
    {"sparse_5g", test_sparse_5g, false},
    {"sparse_hole", test_sparse_hole, false},
    {"truncate", test_truncate, false},
    {"unlink_open", test_unlink_open, false},
    {"rename_file", test_rename_file, false},
    {"rename_replace", test_rename_replace, false},
    {"rename_across_dirs", test_rename_across_dirs, false},
    {"rename_dir", test_rename_dir, false},
    {"rename_dir_over_empty", test_rename_dir_over_empty, false},
    {"rename_dir_over_nonempty", test_rename_dir_over_nonempty, false},
    {"rename_dir_into_self", test_rename_dir_into_self, false},
    {"rename_type_mismatch", test_rename_type_mismatch, false},
    {"rename_hardlinks", test_rename_hardlinks, false},
    {"rename_noreplace", test_rename_noreplace, false},
    {"mkdir_exists", test_mkdir_exists, false},
    {"rmdir_nonempty", test_rmdir_nonempty, false},
    {"rmdir_notdir", test_rmdir_notdir, false},
    {"dir_nlink", test_dir_nlink, false},
    {"readdir_1000", test_readdir_1000, false},
    {"readdir_unlink", test_readdir_unlink, false},
    {"readdir_100k", test_readdir_100k, true},
    {"stat_file", test_stat_file, false},
    {"utimens_nsec", test_utimens_nsec, false},
    {"mtime_on_write", test_mtime_on_write, false},
    {"dir_mtime", test_dir_mtime, false},
    {"ctime_on_chmod", test_ctime_on_chmod, false},
    {"chmod", test_chmod, false},
    {"chown", test_chown, false},
    {"utimens_now_omit", test_utimens_now_omit, false},
    {"symlink", test_symlink, false},
    {"symlink_dangling", test_symlink_dangling, false},
    {"hardlink", test_hardlink, false},
    {"statahead_walk", test_statahead_walk, false},
    {"statahead_negative", test_statahead_negative, false},
    {"readdir_stat", test_readdir_stat, false},
    {"name_max", test_name_max, false},
    {"fsync", test_fsync, false},
    {"statfs", test_statfs, false},
    {"xattr_basic", test_xattr_basic, false},
    {"xattr_flags", test_xattr_flags, false},
    {"xattr_large", test_xattr_large, false},
    {"mmap_write", test_mmap_write, false},
    {"mmap_read", test_mmap_read, false},
    {"write_only_coherent", test_write_only_coherent, false},
    {"big_io", test_big_io, false},
    {"permissions", test_permissions, false},
};

#define TEST_COUNT (sizeof(tests) / sizeof(tests[0]))

/* Whether `name` is one of the comma-separated items of `list`. */
static bool name_in_list(const char *list, const char *name)
{
    size_t name_length = strlen(name);
    const char *item = list;

    while (item != NULL && *item != '\0') {
        const char *comma = strchr(item, ',');
        size_t item_length = comma != NULL ? (size_t)(comma - item) : strlen(item);

        if (item_length == name_length && memcmp(item, name, name_length) == 0)
            return true;
        item = comma != NULL ? comma + 1 : NULL;
    }
    return false;
}

/* The first error met while removing a test directory; nftw() callbacks get no user data. */
static char removal_error[512];

static int make_removable(const char *path, const struct stat *st, int type, struct FTW *walk)
{
    (void)walk;
    /* A test may leave a directory without search or write permission for its owner. */
    if (type == FTW_D || type == FTW_DNR)
        chmod(path, (st->st_mode & 07777) | S_IRWXU);
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *walk)
{
    (void)st;
    (void)type;
    (void)walk;
    if (remove(path) != 0 && removal_error[0] == '\0')
        snprintf(removal_error, sizeof(removal_error), "remove %.400s: %s", path, strerror(errno));
    return 0;
}

/* Removes the tree at path. Returns 0, or -1 with the reason in removal_error. */
static int remove_tree(const char *path)
{
    removal_error[0] = '\0';
    nftw(path, make_removable, 16, FTW_PHYS);
    if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && removal_error[0] == '\0')
        snprintf(removal_error, sizeof(removal_error), "walk %.400s: %s", path, strerror(errno));
    return removal_error[0] == '\0' ? 0 : -1;
}

/*
 * Runs one test in DIR/t-<name>-<pid> and prints its TAP line. Returns true if it passed or
 * was skipped.
 */
static bool run_test(const char *base_dir, const struct test_case *test, size_t number)
{
    const char *skip_list = getenv("POSIX_TEST_SKIP");
    const char *big = getenv("POSIX_TEST_BIG");
    char dir[PATH_MAX];
    int result;

    if (skip_list != NULL && name_in_list(skip_list, test->name)) {
        printf("ok %zu - %s # SKIP listed in POSIX_TEST_SKIP\n", number, test->name);
        return true;
    }
    if (test->big && (big == NULL || strcmp(big, "1") != 0)) {
        printf("ok %zu - %s # SKIP slow, set POSIX_TEST_BIG=1 to run\n", number, test->name);
        return true;
    }

    snprintf(dir, sizeof(dir), "%s/t-%s-%ld", base_dir, test->name, (long)getpid());
    if (mkdir(dir, 0755) != 0) {
        printf("not ok %zu - %s # mkdir %s: %s\n", number, test->name, dir, strerror(errno));
        return false;
    }
    result = run_child(test->run, dir, test->big ? BIG_TEST_TIMEOUT_SECONDS : TEST_TIMEOUT_SECONDS);
    /* A test that already failed keeps its own message; a cleanup failure is a failure too. */
    if (remove_tree(dir) != 0 && result != -1) {
        snprintf(failure_text, sizeof(failure_text), "cleanup: %s", removal_error);
        result = -1;
    }

    if (result == 0) {
        printf("ok %zu - %s\n", number, test->name);
        return true;
    }
    if (result == TEST_SKIP) {
        printf("ok %zu - %s # SKIP %s\n", number, test->name, failure_text);
        return true;
    }
    printf("not ok %zu - %s # %s\n", number, test->name, failure_text);
    return false;
}

static void usage(FILE *out)
{
    fprintf(out, "Usage: posix_test DIR [TEST_NAME...]\n"
                 "       posix_test --list\n"
                 "       posix_test --help\n"
                 "\n"
                 "Runs POSIX conformance tests, each in a fresh subdirectory of DIR, and prints\n"
                 "the results as TAP. With TEST_NAME arguments only those tests run, in that\n"
                 "order. --list prints the test names.\n"
                 "\n"
                 "Environment:\n"
                 "  POSIX_TEST_SKIP=a,b  report tests a and b as skipped\n"
                 "  POSIX_TEST_BIG=1     also run the slow tests (readdir_100k)\n"
                 "\n"
                 "Exit status: 0 if no test failed, 1 if one did, 2 on a usage error.\n");
}

static const struct test_case *find_test(const char *name)
{
    for (size_t i = 0; i < TEST_COUNT; i++) {
        if (strcmp(tests[i].name, name) == 0)
            return &tests[i];
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const struct test_case **selected;
    const char *base_dir;
    size_t selected_count = 0;
    size_t failures = 0;
    struct stat st;

    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < TEST_COUNT; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    if (argv[1][0] == '-') {
        fprintf(stderr, "posix_test: unknown option %s\n", argv[1]);
        usage(stderr);
        return 2;
    }

    base_dir = argv[1];
    if (strlen(base_dir) > MAX_DIR_LENGTH) {
        fprintf(stderr, "posix_test: DIR is longer than %d bytes\n", MAX_DIR_LENGTH);
        return 2;
    }
    if (stat(base_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "posix_test: %s is not a directory\n", base_dir);
        return 2;
    }

    selected = calloc(argc > 2 ? (size_t)(argc - 2) : TEST_COUNT, sizeof(*selected));
    if (selected == NULL) {
        fprintf(stderr, "posix_test: out of memory\n");
        return 2;
    }
    if (argc > 2) {
        for (int i = 2; i < argc; i++) {
            selected[selected_count] = find_test(argv[i]);
            if (selected[selected_count] == NULL) {
                fprintf(stderr, "posix_test: no test named %s (see --list)\n", argv[i]);
                free(selected);
                return 2;
            }
            selected_count++;
        }
    } else {
        for (size_t i = 0; i < TEST_COUNT; i++)
            selected[selected_count++] = &tests[i];
    }

    /* Modes in the tests are exact; a umask from the caller must not change them. */
    umask(022);
    printf("1..%zu\n", selected_count);
    for (size_t i = 0; i < selected_count; i++) {
        if (!run_test(base_dir, selected[i], i + 1))
            failures++;
        fflush(stdout);
    }
    free(selected);
    return failures == 0 ? 0 : 1;
}
