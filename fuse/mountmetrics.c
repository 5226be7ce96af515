/*
 * @file mountmetrics.c
 * See mountmetrics.h. The counters are process-wide relaxed atomics, one
 * set per FUSE opcode below MOUNTMETRICS_OPCODES: the request threads add,
 * the metrics thread reads. The time is what the request thread spent in
 * the handler: the whole request for those answered there (lookups,
 * attributes, creates, writes into the write-behind buffer), the hand-off
 * only for reads answered later by the I/O threads.
 */
#include "mountmetrics.h"

#include <linux/fuse.h>
#include <stdio.h>
#include <string.h>

#define MOUNTMETRICS_OPCODES 64

static uint64_t mountmetrics_requests[MOUNTMETRICS_OPCODES];
static uint64_t mountmetrics_busy_ns[MOUNTMETRICS_OPCODES];
static uint64_t mountmetrics_read_bytes;  /* asked for by FUSE_READ */
static uint64_t mountmetrics_write_bytes; /* given by FUSE_WRITE */

/* The operations named in the output; others are counted as "other". */
static const char *const mountmetrics_names[MOUNTMETRICS_OPCODES] = {
    [FUSE_LOOKUP] = "lookup",
    [FUSE_FORGET] = "forget",
    [FUSE_GETATTR] = "getattr",
    [FUSE_SETATTR] = "setattr",
    [FUSE_READLINK] = "readlink",
    [FUSE_SYMLINK] = "symlink",
    [FUSE_MKNOD] = "mknod",
    [FUSE_MKDIR] = "mkdir",
    [FUSE_UNLINK] = "unlink",
    [FUSE_RMDIR] = "rmdir",
    [FUSE_RENAME] = "rename",
    [FUSE_LINK] = "link",
    [FUSE_OPEN] = "open",
    [FUSE_READ] = "read",
    [FUSE_WRITE] = "write",
    [FUSE_STATFS] = "statfs",
    [FUSE_RELEASE] = "release",
    [FUSE_FSYNC] = "fsync",
    [FUSE_SETXATTR] = "setxattr",
    [FUSE_GETXATTR] = "getxattr",
    [FUSE_LISTXATTR] = "listxattr",
    [FUSE_REMOVEXATTR] = "removexattr",
    [FUSE_FLUSH] = "flush",
    [FUSE_OPENDIR] = "opendir",
    [FUSE_READDIR] = "readdir",
    [FUSE_RELEASEDIR] = "releasedir",
    [FUSE_FSYNCDIR] = "fsyncdir",
    [FUSE_ACCESS] = "access",
    [FUSE_CREATE] = "create",
    [FUSE_BATCH_FORGET] = "batch_forget",
    [FUSE_FALLOCATE] = "fallocate",
    [FUSE_READDIRPLUS] = "readdirplus",
    [FUSE_RENAME2] = "rename2",
    [FUSE_LSEEK] = "lseek",
    [FUSE_COPY_FILE_RANGE] = "copy_file_range",
};

_Static_assert(MOUNTMETRICS_HEAD_BYTES >= sizeof(struct fuse_in_header) + sizeof(struct fuse_read_in),
               "the head a request thread copies holds what is read of it here");

void mountmetrics_note(const void *request, size_t size, int64_t elapsed_ns)
{
    struct fuse_in_header header;
    if (size < sizeof(header))
        return;
    memcpy(&header, request, sizeof(header));
    uint32_t op = header.opcode < MOUNTMETRICS_OPCODES ? header.opcode : 0;
    __atomic_fetch_add(&mountmetrics_requests[op], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&mountmetrics_busy_ns[op], elapsed_ns > 0 ? (uint64_t)elapsed_ns : 0,
                       __ATOMIC_RELAXED);
    /* fuse_read_in and fuse_write_in both begin fh, offset, size. */
    if ((header.opcode == FUSE_READ || header.opcode == FUSE_WRITE) &&
        size >= sizeof(header) + sizeof(struct fuse_read_in)) {
        struct fuse_read_in in;
        memcpy(&in, (const char *)request + sizeof(header), sizeof(in));
        __atomic_fetch_add(header.opcode == FUSE_READ ? &mountmetrics_read_bytes
                                                      : &mountmetrics_write_bytes,
                           in.size, __ATOMIC_RELAXED);
    }
}

void mountmetrics_collect(void *context, struct metrics_text *text)
{
    uint64_t requests[MOUNTMETRICS_OPCODES];
    uint64_t busy_ns[MOUNTMETRICS_OPCODES];
    uint64_t other_requests = 0, other_ns = 0;
    char labels[64];
    (void)context;

    for (size_t op = 0; op < MOUNTMETRICS_OPCODES; op++) {
        requests[op] = __atomic_load_n(&mountmetrics_requests[op], __ATOMIC_RELAXED);
        busy_ns[op] = __atomic_load_n(&mountmetrics_busy_ns[op], __ATOMIC_RELAXED);
        if (!mountmetrics_names[op]) {
            other_requests += requests[op];
            other_ns += busy_ns[op];
        }
    }
    metrics_text_family(text, "tessera_mount_requests_total", "counter",
                        "FUSE requests, by operation.");
    for (size_t op = 0; op < MOUNTMETRICS_OPCODES; op++) {
        if (!mountmetrics_names[op])
            continue;
        snprintf(labels, sizeof(labels), "op=\"%s\"", mountmetrics_names[op]);
        metrics_text_sample(text, "tessera_mount_requests_total", labels, (double)requests[op]);
    }
    metrics_text_sample(text, "tessera_mount_requests_total", "op=\"other\"",
                        (double)other_requests);
    metrics_text_family(text, "tessera_mount_request_seconds_total", "counter",
                        "Time the request threads spent on FUSE requests, by operation (reads "
                        "answered later by the I/O threads: the hand-off only).");
    for (size_t op = 0; op < MOUNTMETRICS_OPCODES; op++) {
        if (!mountmetrics_names[op])
            continue;
        snprintf(labels, sizeof(labels), "op=\"%s\"", mountmetrics_names[op]);
        metrics_text_sample(text, "tessera_mount_request_seconds_total", labels,
                            (double)busy_ns[op] / 1e9);
    }
    metrics_text_sample(text, "tessera_mount_request_seconds_total", "op=\"other\"",
                        (double)other_ns / 1e9);
    metrics_text_family(text, "tessera_mount_read_bytes_total", "counter",
                        "Bytes applications asked to read (FUSE_READ sizes).");
    metrics_text_sample(text, "tessera_mount_read_bytes_total", NULL,
                        (double)__atomic_load_n(&mountmetrics_read_bytes, __ATOMIC_RELAXED));
    metrics_text_family(text, "tessera_mount_written_bytes_total", "counter",
                        "Bytes applications wrote (FUSE_WRITE sizes).");
    metrics_text_sample(text, "tessera_mount_written_bytes_total", NULL,
                        (double)__atomic_load_n(&mountmetrics_write_bytes, __ATOMIC_RELAXED));
}
