/*
 * @file nodehandlers.h
 * The datanode's request handlers, one per opcode, and the opcode-indexed
 * table given to rpc_server_new(). Every handler decodes its payload
 * strictly (a truncated payload or trailing bytes give TS_ERR_BADMSG), does
 * its tile I/O through diskio (timed, throttled, measured) or the tilestore
 * and answers with a status made by status_from_errno(). NODE_THROTTLE
 * sets the diskio throttle; NODE_STATS reports (and may reset) the
 * counters below.
 *
 * Relocation: TILE_PULL queues a background pull (puller.h) and answers
 * where it stands; TILE_FENCE freezes, lifts or retires a tile file
 * (fences.h) and answers with the file's bytes and CRC-32C. TILE_WRITE and
 * TILE_TRUNCATE of a frozen or retired file, and TILE_READ of a retired
 * one, answer TS_ERR_STALE with a text telling the client to ask meta for
 * the tile's location again.
 */
#ifndef TESSERA_NODEHANDLERS_H
#define TESSERA_NODEHANDLERS_H

#include "diskio.h"
#include "fences.h"
#include "proto.h"
#include "puller.h"
#include "readset.h"
#include "replymem.h"
#include "rpc.h"
#include "tilecrc.h"
#include "tilestore.h"
#include "warmer.h"

#include <pthread.h>
#include <stdint.h>

/*
 * What the datanode has served since it started or since the last
 * NODE_STATS with reset. All zero (tiles_read NULL) is a valid start.
 */
struct nodehandlers_stats {
    uint64_t requests[TS_OP_MAX]; /* handled requests per opcode, failed ones included */
    uint64_t busy_ns[TS_OP_MAX];  /* time serving them, summed (metrics: mean latency) */
    uint64_t failures;            /* requests answered with a non-zero status */
    uint64_t bytes_written;       /* tile bytes stored by TILE_WRITE */
    uint64_t bytes_read;          /* tile bytes sent by TILE_READ */
    uint64_t tiles_warmed;        /* tiles read ahead whole after small reads (warmer.h) */
    uint64_t reads_direct; /* stream reads of cold bytes past the page cache (directread.h) */
    uint64_t tiles_reclaimed;     /* unmapped tile files deleted by the reclaimer (reclaim.h) */
    uint64_t bytes_reclaimed;     /* ... and their bytes */
    uint64_t reclaim_passes;      /* the reclaimer's passes over DATA/tiles completed */
    uint64_t writes_refused_crc;  /* writes whose bytes did not match the writer's CRC */
    uint64_t changes_refused_token; /* writes and truncates without a valid tile token */
    uint64_t reads_refused_token;   /* mounts' reads without a valid tile token */
    uint64_t tokens_expired;        /* requests answered STALE for an expired token */
    /* The distinct tiles TILE_READ touched (TS_MAX_STATS_TILES of them);
     * made at the first read; if it cannot be, reads are not listed. */
    struct readset *tiles_read;
};

/*
 * The ctx every handler gets: the store it serves, the disk work in front
 * of it (reads, writes and syncs go through disk; truncates straight to the
 * store), its counters, and for relocation the fences and the puller
 * (either NULL: TILE_FENCE or TILE_PULL answer TS_ERR_NOTSUP; no fence is
 * checked without fences).
 */
struct nodehandlers_context {
    /* Held by whoever runs a handler: the loop while it handles ZeroMQ
     * requests and heartbeats, a stream thread while it serves a request
     * (but for moving a read's bytes). Everything below, and what the store,
     * disk, fences and warmer hold, is read and changed under it. */
    pthread_mutex_t lock;
    struct tilestore *store;
    struct diskio *disk;
    struct nodehandlers_stats stats;
    struct fences *fences;
    struct puller *puller;
    uint16_t stream_port; /* the tile stream's TCP port, 0: none (TILE_STREAM) */
    const char *stream_local; /* its local socket's abstract name, NULL or "": none */
    struct warmer *warmer; /* NULL: small reads warm no tile */
    struct replymem *replies; /* counts read replies in flight; NULL: not counted */
    struct scrub *scrub;      /* NULL: NODE_SCRUB answers TS_ERR_NOTSUP */
    /* The stream threads' buffers in huge pages (at least 2 MiB each): an
     * O_DIRECT read into them is one disk request. Set when --memory
     * leaves room for them. */
    bool stream_huge_pages;
    /* Meta's id for this datanode (0 until it has one): tile tokens
     * (tiletoken.h) name the datanode they let write, so a token for
     * another datanode's replica is refused here. */
    uint32_t node_id;
};

/* The largest throttle NODE_THROTTLE accepts: 1 TB/s (anything above is no throttle at all). */
#define HANDLERS_MAX_THROTTLE_BYTES_PER_SEC 1000000000000ull
/* The smallest: 1 MB/s, so a default tile's reply is held back about a
 * second (diskio.h: the loop goes on meanwhile; a slower "disk" would time
 * its clients out). */
#define HANDLERS_MIN_THROTTLE_BYTES_PER_SEC 1000000ull

/* A TILE_READ longer than this is first cut to what the file holds, so a
 * "whole tile" read (TS_MAX_DATA_BYTES, as a pull asks) allocates no more
 * than the tile's size. */
#define HANDLERS_READ_CLAMP_BYTES (64u << 10)

/* nodehandlers_table[op] for the datanode's opcodes, NULL for the rest. */
extern const rpc_handler_fn nodehandlers_table[TS_OP_MAX];

/*
 * Releases a TILE_READ reply's data buffer (the rpc_response data_free
 * callback; ZeroMQ calls it once the bytes are sent).
 */
void nodehandlers_free_data(void *data, void *hint);

/*
 * The bytes a stream read sent to a reader that keeps them in its page
 * cache (TS_STREAM_READ_KEPT), to be dropped from this machine's page cache
 * once the reader has taken them: pages still held by the socket (until
 * the reader acknowledges them) or by the reader's pipe cannot go. The
 * connection keeps one; fd < 0: none.
 */
struct nodehandlers_drop_behind {
    int fd;
    uint64_t offset;
    uint64_t length;
};

/*
 * Drops the bytes from the page cache and closes the file, once socket
 * sock (-1: do not wait) has had every byte it sent acknowledged; until
 * then drop stays as it is, to be tried again later.
 */
void nodehandlers_drop_behind(struct nodehandlers_drop_behind *drop, int sock);

/*
 * A stream thread's buffer for a write's or a read's bytes (grown as
 * needed, up to TS_MAX_DATA_BYTES; the thread frees bytes when it ends).
 * The bytes are checked against their CRC before they go to the file or
 * the reader, so they cannot be spliced from the socket into the file, or
 * sent from the file, as they were: one copy, measured in the commits
 * that made it.
 */
struct nodehandlers_write_buffer {
    uint8_t *bytes;
    size_t cap;
    bool huge_pages;             /* in 2 MiB huge pages (nodehandlers_context) */
    struct tilecrc_payload sums; /* of the bytes received last */
};

/*
 * Answers one request of the tile stream (proto.h, TILE_STREAM), taking
 * the context's lock (a stream thread calls it without):
 * `request` holds its TS_STREAM_REQ_BYTES bytes, a write's bytes follow on
 * socket sock (received whole into *buffer before the lock, each piece
 * within the socket's receive timeout, and checked against the request's
 * CRC-32C before any reaches the file), the answer goes to sock. Counted as a TILE_READ or TILE_WRITE. `drop` is the
 * connection's: a new request means the reader has taken the last answer,
 * so its bytes are dropped first, and a kept read leaves its own there.
 * Returns 0, or -1 when the connection must be closed: the request does
 * not decode, or the socket failed mid-request.
 */
int nodehandlers_stream_request(struct nodehandlers_context *context, const uint8_t *request,
                                int sock, struct nodehandlers_write_buffer *buffer,
                                struct nodehandlers_drop_behind *drop);

/* Logs the counters at info level, one line. */
void nodehandlers_log_stats(const struct nodehandlers_stats *stats);

/* Frees what the counters hold (the tiles read); they are zero again. */
void nodehandlers_stats_fini(struct nodehandlers_stats *stats);

#endif
