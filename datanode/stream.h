/*
 * @file stream.h
 * The datanode's tile stream (proto.h, TILE_STREAM): a TCP listener
 * beside the ZeroMQ socket, on the same address and a port the kernel
 * picks, and the connections mounts open to it. The datanode's one loop
 * polls them with everything else (stream_poll_items) and serves a
 * connection's requests when it is readable (stream_serve), so the
 * handlers' state stays single-threaded. A connection that sends a
 * request that does not decode, or stops taking an answer or sending a
 * write's bytes for STREAM_TIMEOUT_MS, is closed; past
 * STREAM_MAX_CONNECTIONS new ones are refused (closed at once: the mount
 * goes over ZeroMQ instead).
 */
#ifndef TESSERA_DATANODE_STREAM_H
#define TESSERA_DATANODE_STREAM_H

#include "handlers.h"

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#define STREAM_MAX_CONNECTIONS 256
#define STREAM_TIMEOUT_MS 2000

struct stream;

/*
 * Listens on the IPv4 address of ZeroMQ endpoint `endpoint` (util.h).
 * Returns 0; -EINVAL when the endpoint has no IPv4 address (the datanode
 * then goes without a stream), or another negative errno.
 */
int stream_open(const char *endpoint, struct stream **streamp);
void stream_close(struct stream **streamp);
uint16_t stream_port(const struct stream *stream);

/* Fills up to cap poll items (the listener, then each connection); returns how many. */
size_t stream_poll_items(const struct stream *stream, zmq_pollitem_t *items, size_t cap);
/* Accepts and serves what the items (as stream_poll_items filled them) say is ready. */
void stream_serve(struct stream *stream, const zmq_pollitem_t *items, size_t count,
                  struct handlers_context *context);

#endif
