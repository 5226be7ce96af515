/*
 * @file util.h
 * Small helpers shared by the daemons and tools: clocks, sizes, directories.
 * None of them knows about any daemon's state.
 */
#ifndef TESSERA_UTIL_H
#define TESSERA_UTIL_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t util_monotonic_ms(void);
/* Sleeps ms milliseconds (none if ms <= 0), through signals. */
void util_sleep_ms(int64_t ms);
/* Nanoseconds of CLOCK_MONOTONIC. */
int64_t util_monotonic_ns(void);
/* Milliseconds since this process started (since the library was loaded). */
int64_t util_process_age_ms(void);
/* The wall clock with nanoseconds. */
struct timespec util_now(void);
/* Moves *at ms milliseconds later (ms >= 0): a deadline for pthread_cond_timedwait. */
void util_timespec_add_ms(struct timespec *at, int64_t ms);
/* CLOCK_MONOTONIC now plus ms: a deadline for a condition from util_cond_init_monotonic(). */
struct timespec util_monotonic_deadline(int64_t ms);
/* A condition whose timed waits count on CLOCK_MONOTONIC (wall clock steps do not matter). */
void util_cond_init_monotonic(pthread_cond_t *cond);
/*
 * Parses "4096", "64K", "1M", "2G" (binary units) into bytes.
 * Returns 0, or -EINVAL if malformed or out of range.
 */
int util_parse_size(const char *text, uint64_t *bytes);
/* Parses a decimal integer in [min, max]; returns 0 or -EINVAL. */
int util_parse_long(const char *text, long min, long max, long *value);
/* mkdir -p with mode; returns 0 or -errno. */
int util_mkdir_p(const char *path, unsigned mode);
/* fsyncs a directory (after creating or removing an entry); 0 or -errno. */
int util_fsync_dir(const char *path);
/*
 * Writes dir/name whole or not at all, durably: through dir/name.tmp,
 * fsync, rename, fsync of dir (a crash leaves the old file or the new one).
 * 0 or -errno (-EIO for a short write: the disk is full).
 */
int util_write_file_durably(const char *dir, const char *name, const void *data, size_t len);
/* The machine name: the hostname, shortened at the first dot. */
void util_machine_name(char *out, size_t cap);

/*
 * The IPv4 address of a ZeroMQ TCP endpoint ("tcp://HOST:PORT", HOST a
 * dotted quad, "localhost" or "*", which gives INADDR_ANY). Returns 0, or
 * -EINVAL for anything else (ipc://, a host name, IPv6): the caller then
 * goes without whatever wanted a plain socket to that host.
 */
int util_endpoint_ipv4(const char *endpoint, struct in_addr *address);

/*
 * The address of Unix socket `name` in the abstract namespace (a NUL, then
 * the name, without one at its end); returns its length for bind() or
 * connect(). name is shorter than sizeof(address->sun_path) - 1.
 */
socklen_t util_abstract_address(const char *name, struct sockaddr_un *address);

/*
 * Reads len bytes at offset into buf, as many preads as it takes (a signal
 * or a short read is not the end), stopping early only at the end of the
 * file. *got: the bytes read. 0, or a negative errno (*got then says how
 * far it came). Not for O_DIRECT descriptors: past the end of the file
 * they stop at an unaligned offset, where the next pread fails.
 */
int util_pread_upto(int fd, void *buf, size_t len, uint64_t offset, size_t *got);

/*
 * A pipe (O_CLOEXEC) of `bytes` (F_SETPIPE_SZ). 0, or a negative errno
 * with both fds -1; a pipe that cannot be made that large is closed and
 * fails when size_required, else kept at the size the kernel gave it.
 */
int util_pipe_open(int fds[2], int bytes, bool size_required);
/* Closes a pipe (either end may be closed already: -1) and marks both ends -1. */
void util_pipe_close(int fds[2]);

/*
 * Splices up to len bytes from socket sock into a pipe, never waiting for
 * room in the pipe: a pipe holds a number of buffers, not of bytes, and
 * each piece the socket delivered takes one. SPLICE_F_NONBLOCK is for the
 * pipe; TCP still waits for bytes (up to its receive timeout), a Unix
 * socket does not: with poll_when_empty an EAGAIN may mean "no bytes yet",
 * so poll() waits for them (timeout_ms), and only an EAGAIN right after
 * that means a full pipe; without it any EAGAIN does. Returns the bytes
 * moved (fewer than len: the pipe is full), or -1 on a failure, a timeout
 * or the socket's end.
 */
ssize_t util_splice_from_socket(int sock, int pipe_fd, size_t len, bool poll_when_empty,
                                int timeout_ms);

/*
 * The one of names[0..count) a mistyped word most likely meant: the
 * closest by edit distance (insertions, deletions, substitutions and
 * swaps of two neighbours), if within a third of the word's length (at
 * least 1) and no other name is as close; else NULL. "stauts" -> "status".
 * For "did you mean" in every program's usage errors.
 */
const char *util_closest_name(const char *word, const char *const *names, size_t count);

/* util_closest_name() over a getopt_long table, for arg "--mistyped[=value]". */
struct option;
const char *util_closest_long_option(const struct option *options, const char *arg);

#endif
