/*
 * @file tilestream.h
 * The mount's side of the datanodes' tile streams (proto.h,
 * TILE_STREAM). A read's bytes, checked on the datanode, go from its
 * page cache (sendfile) through the connection into a pipe (splice), and libfuse
 * splices the pipe into the kernel, which copies them into the file's
 * page cache: on the mount's side no copy but the kernel's (ZeroMQ's
 * took three). A write's bytes go from the mount's buffer to the socket
 * by page reference (vmsplice and splice through a pipe), and the
 * datanode receives them into a buffer of its own to check their CRC.
 *
 * Only datanodes on this machine are used so: over loopback a tile comes
 * in a few large pieces, while across a network link each packet is a
 * piece of its own, too many for a pipe to hold a tile (and there the
 * network card's copy is the one copy anyway). A datanode whose reply did
 * not fit all the same is read over ZeroMQ from then on.
 *
 * Each thread has its own pipes and its own connection to each datanode it
 * uses (one request at a time on each). A datanode's port is asked once
 * over ZeroMQ (TILE_STREAM), and again a while after its stream failed:
 * meanwhile tiles go over ZeroMQ. Thread-safe.
 */
#ifndef TESSERA_TILESTREAM_H
#define TESSERA_TILESTREAM_H

#include "nodedir.h"
#include "proto.h"

#include <stdbool.h>
#include <stdint.h>

/* A thread's pipe holds a whole reply: 1 MiB and pages for its pieces. */
#define TILESTREAM_PIPE_BYTES (2u << 20)
/* After a failure (or "no stream"), a datanode's stream rests this long. */
#define TILESTREAM_RETRY_MS 1000
/* Datanodes whose stream a thread keeps a connection to at once. */
#define TILESTREAM_THREAD_NODES 16

struct tilestream;

/*
 * Whether this process can make pipes of TILESTREAM_PIPE_BYTES. Beyond
 * /proc/sys/fs/pipe-max-size (1 MiB by default) that takes
 * CAP_SYS_RESOURCE, and libfuse's own pipe needs as much; so a root
 * process without it raises pipe-max-size to TILESTREAM_PIPE_BYTES (a
 * limit only: nothing is allocated until a pipe is made), and says so in
 * the log. False (logged): tiles go over ZeroMQ.
 */
bool tilestream_setup(void);

/* timeout_ms bounds each connect, send and receive. NULL: out of memory. */
struct tilestream *tilestream_new(struct nodedir *nodes, int timeout_ms);
/* Closes every thread's pipe and connections; no thread may use it any more. */
void tilestream_destroy(struct tilestream **streamsp);

/* The calling thread's pipe, made at first use. 0 or a negative errno. */
int tilestream_pipe(struct tilestream *streams, int *read_fd, int *write_fd);
/* Throws the thread's pipe away, with whatever bytes a failed reply left in it. */
void tilestream_pipe_reset(struct tilestream *streams);

/*
 * Reads request's range of a tile from datanode `node` into the thread's
 * pipe (tilestream_pipe first). reader_keeps: the bytes go on into the
 * kernel's page cache, so the datanode may drop them from its own
 * (TS_STREAM_READ_KEPT). 0: *status is the datanode's answer, and
 * with TS_OK *got bytes (at most request->length; the rest of the range
 * is a hole) are in the pipe. -EAGAIN: nothing was read, ask over ZeroMQ
 * (the node is on another machine, has no stream, or failed just now).
 * -EPIPE: the stream broke mid-answer: part of the bytes may be in the
 * pipe (reset it).
 */
int tilestream_read(struct tilestream *streams, uint32_t node,
                    const struct ts_tile_read_req *request, bool reader_keeps, int32_t *status,
                    uint32_t *got);

/*
 * As tilestream_read(), the bytes received into buf (request->length
 * bytes of room), for reads too short to be worth a pipe. -EAGAIN for a
 * failure mid-answer too.
 */
int tilestream_read_into(struct tilestream *streams, uint32_t node,
                         const struct ts_tile_read_req *request, bool reader_keeps, void *buf,
                         int32_t *status, uint32_t *got);

/*
 * Writes length bytes of data into a tile on datanode `node` (TILE_WRITE
 * over the stream: the bytes go by page reference, copied once, into the
 * datanode's file). data must stay unchanged until this returns. 0:
 * *status is the datanode's answer. -EAGAIN: the write may not have been
 * done, write over ZeroMQ (the node is on another machine, has no stream,
 * or the stream failed).
 */
int tilestream_write(struct tilestream *streams, uint32_t node,
                     const struct ts_tile_write_req *request, const void *data, uint32_t length,
                     int32_t *status);

#endif
