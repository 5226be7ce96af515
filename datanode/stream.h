/*
 * @file stream.h
 * The datanode's tile stream (proto.h, TILE_STREAM): a TCP listener
 * beside the ZeroMQ socket, on the same address and a port the kernel
 * picks, and the connections mounts open to it. Beside it, a Unix stream
 * socket in the abstract namespace (STREAM_LOCAL_PREFIX, the process id
 * and the port) for mounts on this machine: streams only ever serve
 * those, and loopback TCP costs them about twice the CPU of the copy
 * itself (ACKs, segments, timers) where a Unix socket hands the pages
 * over. Abstract names belong to the network namespace, as the TCP
 * address does, so a mount that can reach one is on this "machine".
 *
 * Threads: the datanode's loop polls the listener (stream_poll_items) and
 * accepts (stream_serve); each new connection goes to the one of
 * STREAM_THREADS threads that has the fewest, which polls it and serves
 * its requests from then on. So the loop never waits on a stream's bytes,
 * a connection that stalls holds up only its own thread's others, and up
 * to STREAM_THREADS tiles go out at once (one blocked send no longer
 * stops every other reader of the node). Requests are served through
 * nodehandlers_stream_request(), which takes the handlers' lock for
 * everything but moving a read's bytes and taking a write's bytes off the
 * socket (into the thread's buffer, where their CRC is checked first).
 *
 * A connection that sends a request that does not decode, or stops taking
 * an answer or sending a write's bytes for STREAM_TIMEOUT_MS, is closed;
 * past STREAM_MAX_CONNECTIONS new ones are refused (closed at once: the
 * mount goes over ZeroMQ instead).
 *
 * Trust: the local socket serves only processes of the datanode's own uid
 * or root (SO_PEERCRED at accept; an abstract socket has no file mode).
 * TCP carries no credentials: a datanode with keys calls
 * stream_refuse_tcp() and serves streams on the local socket only. One
 * peer (a process, or a TCP address) holds at most STREAM_MAX_PER_PEER
 * connections, and a connection silent for STREAM_IDLE_MS is closed (a
 * mount opens a new one when it next needs it). Refusals are logged.
 */
#ifndef TESSERA_DATANODE_STREAM_H
#define TESSERA_DATANODE_STREAM_H

#include "nodehandlers.h"

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#define STREAM_MAX_CONNECTIONS 256
/* Connections one peer may hold: a mount's threads (FUSE, I/O, sync) fit,
 * and more than half the slots stay free for everyone else. */
#define STREAM_MAX_PER_PEER 96
/* A connection that sends nothing for this long is closed. */
#define STREAM_IDLE_MS 30000
/* The abstract Unix socket name's start (proto.h, TILE_STREAM's `local`). */
#define STREAM_LOCAL_PREFIX "tessera-stream."
#define STREAM_TIMEOUT_MS 2000
/* Threads serving connections: enough to keep a disk's queue and the
 * loopback busy, few enough that a 2-CPU machine is not swamped. */
#define STREAM_THREADS 4

struct stream;

/*
 * Listens on the IPv4 address of ZeroMQ endpoint `endpoint` (util.h) and
 * starts the threads, which serve requests with `context` (it must
 * outlive the stream; its lock initialised), and on the local Unix socket
 * (without it, logged, mounts here use TCP). Returns 0; -EINVAL when the
 * endpoint has no IPv4 address (the datanode then goes without a
 * stream), or another negative errno.
 */
int stream_open(const char *endpoint, struct nodehandlers_context *context, struct stream **streamp);
/* Stops the threads (a request in progress ends first, within
 * STREAM_TIMEOUT_MS) and closes every connection. Call it without the
 * handlers' lock. NULL or *streamp NULL: nothing. */
void stream_close(struct stream **streamp);
uint16_t stream_port(const struct stream *stream);
/* From now on TCP connections are closed at accept (logged): a datanode
 * with keys serves its stream to local, credential-checked processes only.
 * The loop's; call before serving. */
void stream_refuse_tcp(struct stream *stream);
/* Closes connections silent for idle_ms from now on (<= 0: STREAM_IDLE_MS). For tests. */
void stream_set_idle_ms(struct stream *stream, int idle_ms);
/* The local socket's abstract name (without its leading NUL); "" when none. */
const char *stream_local_name(const struct stream *stream);

/* Listeners stream_poll_items() may fill. */
#define STREAM_POLL_ITEMS 2
/* The loop's side. Fills items with the listeners (TCP, then the local
 * socket if any, as cap allows); returns how many. */
size_t stream_poll_items(const struct stream *stream, zmq_pollitem_t *items, size_t cap);
/* Accepts what the listeners' items (as stream_poll_items filled them) say is waiting. */
void stream_serve(struct stream *stream, const zmq_pollitem_t *items, size_t count);
/* Connections open now, those a thread has yet to take up included. */
size_t stream_connections(const struct stream *stream);

#endif
