/*
 * @file fuzz_tilestream.c
 * libFuzzer target: one request of the datanode's tile stream, answered by
 * nodehandlers_stream_request() (the function a stream thread calls), on a
 * real tile store (fuzzdatanode.h).
 *
 * An input is the TS_STREAM_REQ_BYTES-byte request and then the bytes the
 * peer sends after it (a write's bytes, or anything); they wait in one end
 * of a socket pair whose sending side is then shut, so a request asking for
 * more bytes than came meets the end of the stream, as with a peer that
 * hangs up. A thread drains the answers. The handler must neither crash
 * nor read outside its buffers (ASan), and must return 0 or -1.
 */
#include "fuzzdatanode.h"
#include "proto.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* More than a socket pair buffers would block the writer before the drain
 * thread starts; the stream's requests carry at most this much inline in
 * a fuzzing run anyway. */
#define FUZZ_TILESTREAM_MAX_INPUT (96u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads what the handler answers until the handler's end closes. */
static void *fuzz_tilestream_drain(void *arg)
{
    int fd = *(int *)arg;
    uint8_t sink[1 << 16];
    while (read(fd, sink, sizeof(sink)) > 0)
        ;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct nodehandlers_write_buffer buffer; /* kept, as a stream thread keeps it */
    struct nodehandlers_context *context = fuzzdatanode_context("fuzz_tilestream");
    struct nodehandlers_drop_behind drop = {.fd = -1};
    struct timeval timeout = {.tv_sec = 1};
    pthread_t drainer;
    int pair[2];
    int rc;

    if (size < TS_STREAM_REQ_BYTES || size > FUZZ_TILESTREAM_MAX_INPUT)
        return -1;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
        perror("fuzz_tilestream: socketpair");
        abort();
    }
    /* As stream.c sets them on an accepted connection. */
    int big = (int)FUZZ_TILESTREAM_MAX_INPUT * 2;
    setsockopt(pair[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    setsockopt(pair[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(pair[0], SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    size_t rest = size - TS_STREAM_REQ_BYTES;
    if (rest > 0 && write(pair[1], data + TS_STREAM_REQ_BYTES, rest) != (ssize_t)rest) {
        perror("fuzz_tilestream: write");
        abort();
    }
    shutdown(pair[1], SHUT_WR);
    if (pthread_create(&drainer, NULL, fuzz_tilestream_drain, &pair[1]) != 0)
        abort();

    rc = nodehandlers_stream_request(context, data, pair[0], &buffer, &drop);
    nodehandlers_drop_behind(&drop, -1);

    close(pair[0]); /* the drain thread sees the end */
    pthread_join(drainer, NULL);
    close(pair[1]);
    if (rc != 0 && rc != -1) {
        fprintf(stderr, "fuzz_tilestream: nodehandlers_stream_request returned %d\n", rc);
        abort();
    }
    return 0;
}
