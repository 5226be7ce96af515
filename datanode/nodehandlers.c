/*
 * @file nodehandlers.c
 * See nodehandlers.h. Handlers run under the context's lock (the loop holds it
 * while it handles ZeroMQ requests; the stream's threads take it), so the
 * counters and the store need no lock of their own. A handler never trusts
 * a count or length it has not checked against the frame: record arrays
 * must fill their blob exactly, and a read is bounded by TS_MAX_DATA_BYTES
 * before anything is allocated. Tile bytes arrive in the request's frame 1
 * and leave in the reply's frame 1; a read's buffer is handed to ZeroMQ,
 * not copied. TILE_PULL never does network work itself: it only asks the
 * puller, whose threads do (see puller.h for why).
 */
#include "nodehandlers.h"

#include "crc32c.h"
#include "directread.h"
#include "log.h"
#include "roles.h"
#include "scrub.h"
#include "status.h"
#include "tilecheck.h"
#include "tiletoken.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * A TILE_SYNC of at least this many tiles waits for each file's bytes and
 * then syncs the filesystem once, instead of one fsync (one disk cache
 * flush) per file.
 */
#define HANDLERS_SYNCFS_MIN_TILES 16

/* Answers a payload that does not decode; the text names the message. */
static int handlers_badmsg(struct rpc_response *response, const char *what)
{
    snprintf(response->error_text, sizeof(response->error_text),
             "malformed %s request (fields do not fill the frame exactly)", what);
    return TS_ERR_BADMSG;
}

/*
 * Turns a tilestore result into a reply status; failures other than the
 * expected ones (bad arguments, full disk) are logged, since only the
 * datanode's log can say which file failed.
 */
static int handlers_status(struct rpc_response *response, const char *op, uint64_t ino,
                           uint64_t tile, uint64_t version, int rc)
{
    if (rc == 0)
        return TS_OK;
    if (rc != -EINVAL && rc != -ENOSPC)
        log_warn("%s of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 " failed: %s", op, ino, tile,
                 version, strerror(-rc));
    snprintf(response->error_text, sizeof(response->error_text),
             "%s tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 " on datanode: %s", op, ino, tile, version,
             strerror(-rc));
    return status_from_errno(rc);
}

void nodehandlers_free_data(void *data, void *hint)
{
    (void)hint;
    free(data);
}

/* A read reply's buffer: counted against the memory cap if there is one. */
static void *handlers_reply_alloc(struct nodehandlers_context *context, size_t bytes)
{
    return context->replies ? replymem_alloc(context->replies, bytes) : malloc(bytes);
}

/* Frees a buffer from handlers_reply_alloc that no reply took. */
static void handlers_reply_free(const struct nodehandlers_context *context, void *buf)
{
    if (context->replies)
        replymem_free(buf, NULL);
    else
        free(buf);
}

/* The status a fence gives this access: see handlers_fenced(). */
static int handlers_fence_status(struct nodehandlers_context *context, uint64_t ino, uint64_t tile,
                                 uint64_t version, bool is_change, bool *moving)
{
    if (!context->fences)
        return TS_OK;
    enum fences_state state =
        fences_check(context->fences, ino, tile, version, util_monotonic_ms());
    *moving = state == FENCES_FROZEN;
    if (state == FENCES_RETIRED || (state == FENCES_FROZEN && is_change))
        return TS_ERR_STALE;
    return TS_OK;
}

/*
 * TS_OK, or TS_ERR_STALE with a text for the client when the tile file is
 * fenced against this access: retired files against everything, frozen
 * ones against changes (is_change).
 */
static int handlers_fenced(struct nodehandlers_context *context, struct rpc_response *response,
                           const char *op, uint64_t ino, uint64_t tile, uint64_t version,
                           bool is_change)
{
    bool moving = false;
    int status = handlers_fence_status(context, ino, tile, version, is_change, &moving);
    if (status != TS_OK)
        snprintf(response->error_text, sizeof(response->error_text),
                 "%s of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64
                 ": it %s; ask meta for its location again",
                 op, ino, tile, version,
                 moving ? "is being moved" : "has moved away from this datanode");
    return status;
}

static int handle_ping(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    struct ts_ping_rep reply = {.role = ts_str_of("datanode"),
                                .uptime_ms = (uint64_t)util_process_age_ms()};
    (void)ctx;
    if (request->payload_len != 0)
        return handlers_badmsg(response, "PING");
    int len = ts_ping_rep_encode(&reply, response->payload, response->payload_cap);
    if (len < 0)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    return TS_OK;
}

/*
 * Whether a write's bytes are those its writer summed (req->crc): bytes
 * changed on the way are refused before they reach the file, with a text
 * for the client.
 */
static bool handlers_crc_matches(struct nodehandlers_context *context,
                                 struct rpc_response *response,
                                 const struct ts_tile_write_req *req,
                                 const struct tilecrc_payload *sums)
{
    uint32_t crc = sums->whole;
    size_t len = sums->len;
    if (crc == req->crc)
        return true;
    context->stats.writes_refused_crc++;
    log_warn("write of %zu bytes to tile %" PRIu64 ".%" PRIu64 ".%" PRIu64
             " refused: its bytes sum to %08" PRIx32 ", the writer sent %08" PRIx32,
             len, req->ino, req->tile, req->version, crc, req->crc);
    if (response)
        snprintf(response->error_text, sizeof(response->error_text),
                 "write to tile %" PRIu64 ".%" PRIu64 ".%" PRIu64
                 ": the bytes that arrived do not match the writer's CRC-32C; nothing written",
                 req->ino, req->tile, req->version);
    return false;
}

/*
 * Whether a request (op: "read", "write", "truncate") of tile file (ino,
 * tile, version) from `who` (a ZAP user id, or what the tile stream knows
 * of its peer) presents meta's tile token for that file on this datanode
 * with `right` (tiletoken.h): TS_OK; TS_ERR_STALE for an expired token
 * (the client asks meta again and gets a fresh one); TS_ERR_PERM for none,
 * a forged one or one for another file, node or right; TS_ERR_BUSY before
 * meta has given this datanode its id. Why goes to error_text (NULL: the
 * tile stream, whose answers carry no text). Refusals are logged, the
 * first and then at each power of two, so a flood of forged requests
 * cannot flood the log. Without a tile secret every request passes, as
 * before tokens.
 */
static int handlers_token(struct nodehandlers_context *context, const char *who, uint32_t right,
                          char *error_text, size_t error_cap, const char *op, uint64_t ino,
                          uint64_t tile, uint64_t version, uint64_t expiry_ms, struct ts_str token)
{
    char ignored[8];
    if (!tiletoken_enabled())
        return TS_OK;
    if (!error_text) {
        error_text = ignored;
        error_cap = sizeof(ignored);
    }
    if (context->node_id == 0) {
        snprintf(error_text, error_cap,
                 "%s of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64
                 ": this datanode has no id from meta yet, so it cannot check tile tokens",
                 op, ino, tile, version);
        return TS_ERR_BUSY;
    }
    struct tiletoken_claim claim = {.ino = ino,
                                    .tile = tile,
                                    .version = version,
                                    .node = context->node_id,
                                    .rights = right,
                                    .expiry_ms = expiry_ms};
    int rc = tiletoken_check(&claim, (const uint8_t *)token.ptr, token.len, tiletoken_now_ms());
    if (rc == 0)
        return TS_OK;
    if (rc == -ETIME) {
        uint64_t expired = ++context->stats.tokens_expired;
        if ((expired & (expired - 1)) == 0)
            log_info("a %s of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 " from %s came with an "
                     "expired tile token: answered STALE, so it asks meta for a fresh one (%" PRIu64
                     " so far)",
                     op, ino, tile, version, who, expired);
        snprintf(error_text, error_cap,
                 "%s of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64
                 ": its tile token expired; ask meta for the tile again",
                 op, ino, tile, version);
        return TS_ERR_STALE;
    }
    uint64_t refused = right == TILETOKEN_READ ? ++context->stats.reads_refused_token
                                               : ++context->stats.changes_refused_token;
    if ((refused & (refused - 1)) == 0)
        log_warn("refused a %s of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64
                 " from %s: %s tile token for it on datanode %" PRIu32
                 " (%" PRIu64 " %s refused so far)",
                 op, ino, tile, version, who, token.len ? "not meta's" : "no", context->node_id,
                 refused, right == TILETOKEN_READ ? "reads" : "changes");
    snprintf(error_text, error_cap,
             "%s of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 " refused: no valid tile token from "
             "meta for this tile file on datanode %" PRIu32 " (meta did not %s, the token is "
             "forged or altered%s)%s",
             op, ino, tile, version, context->node_id,
             right == TILETOKEN_READ ? "give this key that file" : "allocate it here",
             right == TILETOKEN_READ ? "" : ", or the export is read-only",
             right == TILETOKEN_READ ? "; nothing read" : "; nothing changed");
    return TS_ERR_PERM;
}

/* handlers_token() for a request over ZeroMQ: who is its key. */
static int handlers_request_token(struct nodehandlers_context *context,
                                  const struct rpc_request *request, struct rpc_response *response,
                                  uint32_t right, const char *op, uint64_t ino, uint64_t tile,
                                  uint64_t version, uint64_t expiry_ms, struct ts_str token)
{
    char who[160];
    snprintf(who, sizeof(who), "key %s",
             request->key_user && request->key_user[0] ? request->key_user : "(none)");
    return handlers_token(context, who, right, response->error_text,
                          sizeof(response->error_text), op, ino, tile, version, expiry_ms, token);
}

/*
 * Whether a TILE_READ from this key needs a tile token: a mount's (and a
 * link without keys, which a cluster with a tile secret has only for
 * mounts) does; other datanodes' (TILE_PULL's source reads, repairs) and
 * meta's and admins' keys read by their role, which roles.c checked.
 */
static bool handlers_read_needs_token(const struct rpc_request *request)
{
    unsigned role = roles_of_user(request->key_user ? request->key_user : "");
    return (role & (ROLES_DATANODE | ROLES_META | ROLES_ADMIN)) == 0;
}

static int handle_tile_write(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct nodehandlers_context *context = ctx;
    struct ts_tile_write_req req;
    if (ts_tile_write_req_decode(&req, request->payload, request->payload_len) != 0)
        return handlers_badmsg(response, "TILE_WRITE");
    int allowed = handlers_request_token(context, request, response, TILETOKEN_WRITE, "write",
                                         req.ino, req.tile, req.version, req.token_expiry,
                                         req.token);
    if (allowed != TS_OK)
        return allowed;
    int fenced = handlers_fenced(context, response, "write", req.ino, req.tile, req.version, true);
    if (fenced != TS_OK)
        return fenced;
    /* One pass over the bytes: the writer's CRC checked, the blocks' kept. */
    struct tilecrc_payload sums;
    tilecrc_sum_payload(req.offset, request->data, request->data ? request->data_len : 0, &sums);
    if (!handlers_crc_matches(context, response, &req, &sums))
        return TS_ERR_CORRUPT;
    /* No frame 1 means no bytes: validated, nothing written. */
    int rc = diskio_write(context->disk, req.ino, req.tile, req.version, req.offset, request->data,
                          request->data ? request->data_len : 0, &sums);
    if (rc == 0)
        context->stats.bytes_written += request->data ? request->data_len : 0;
    return handlers_status(response, "write", req.ino, req.tile, req.version, rc);
}

/*
 * A read that found no bytes: TS_OK (a hole) when the tile has a file, or
 * TS_ERR_NOENT when it has none. No file is not always a hole: the file of
 * a dropped copy or a moved tile is deleted once meta queues it, and a file
 * can be lost, so a client asks meta again rather than take zeros: it
 * takes zeros only when meta still names this file and no holder ever
 * reported it (TS_TILE_STORED), and fails the read when one did.
 */
static int handlers_missing(struct nodehandlers_context *context, struct rpc_response *response,
                            const struct ts_tile_read_req *req)
{
    uint64_t size = 0;
    if (tilestore_size(context->store, req->ino, req->tile, req->version, &size) != -ENOENT)
        return TS_OK;
    snprintf(response->error_text, sizeof(response->error_text),
             "tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 " has no file on this datanode "
             "(never written, moved, dropped or lost): ask meta for its location again",
             req->ino, req->tile, req->version);
    return TS_ERR_NOENT;
}

/* Counts a TILE_READ's bytes for NODE_STATS. */
static void handlers_count_read(struct nodehandlers_context *context, uint64_t ino, uint64_t tile,
                                uint64_t bytes)
{
    context->stats.bytes_read += bytes;
    if (!context->stats.tiles_read)
        readset_new(TS_MAX_STATS_TILES, &context->stats.tiles_read); /* NULL: not listed */
    if (context->stats.tiles_read)
        readset_add(context->stats.tiles_read, ino, tile, bytes);
}

/*
 * Whether the warmer wants the tile of a small read read whole into the
 * page cache now (one request to the disk instead of many small ones).
 */
static bool handlers_warm_wanted(struct nodehandlers_context *context,
                                 const struct ts_tile_read_req *req)
{
    /* A throttled disk is timed per request: no reads behind its back. */
    return context->warmer && !diskio_throttled(context->disk) &&
           warmer_note(context->warmer, req->ino, req->tile, req->length, util_monotonic_ns());
}

/* Reads the whole tile file fd into the page cache, without waiting for it. */
static bool handlers_warm_file(int fd)
{
    return posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED) == 0;
}

/* After a small read over ZeroMQ: warms its tile if the warmer says so. */
static void handlers_warm(struct nodehandlers_context *context, const struct ts_tile_read_req *req)
{
    int fd = -1;
    uint64_t size = 0;
    if (!handlers_warm_wanted(context, req) ||
        tilestore_open_tile(context->store, req->ino, req->tile, req->version, &fd, &size) != 0)
        return;
    if (handlers_warm_file(fd))
        context->stats.tiles_warmed++;
    close(fd);
}

static int handle_tile_read(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    struct nodehandlers_context *context = ctx;
    struct ts_tile_read_req req;
    size_t got = 0;
    uint8_t *buf;
    int rc;

    if (ts_tile_read_req_decode(&req, request->payload, request->payload_len) != 0)
        return handlers_badmsg(response, "TILE_READ");
    if (req.length > TS_MAX_DATA_BYTES) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_READ of %" PRIu32 " bytes: at most %u per request", req.length,
                 TS_MAX_DATA_BYTES);
        return TS_ERR_INVAL;
    }
    /* A file this datanode does not have is answered "no file" (below)
     * before any token: no byte to protect, and a mount that reached a
     * new node at a wiped node's address (its token names the old id)
     * learns that the tile is lost there, not that it may not read it. */
    uint64_t present_size = 0;
    if (handlers_read_needs_token(request) &&
        tilestore_size(context->store, req.ino, req.tile, req.version, &present_size) !=
            -ENOENT) {
        rc = handlers_request_token(context, request, response, TILETOKEN_READ, "read", req.ino,
                                    req.tile, req.version, req.token_expiry, req.token);
        if (rc != TS_OK)
            return rc;
    }
    rc = handlers_fenced(context, response, "read", req.ino, req.tile, req.version, false);
    if (rc != TS_OK)
        return rc;
    if (req.length > HANDLERS_READ_CLAMP_BYTES) {
        uint64_t size = 0;
        rc = tilestore_size(context->store, req.ino, req.tile, req.version, &size);
        /* Other failures: the read below reports them. */
        if ((rc == 0 || rc == -ENOENT) && size <= req.offset)
            req.length = 0; /* all hole: no frame 1, as a read past the end gives */
        else if (rc == 0 && size - req.offset < req.length)
            req.length = (uint32_t)(size - req.offset);
    }
    if (req.length == 0) {
        rc = tilestore_read(context->store, req.ino, req.tile, req.version, req.offset, 0, NULL,
                            &got);
        return rc == 0 ? handlers_missing(context, response, &req) : handlers_status(
            response, "read", req.ino, req.tile, req.version, rc);
    }
    buf = handlers_reply_alloc(context, req.length);
    if (!buf)
        return TS_ERR_NOMEM;
    rc = diskio_read(context->disk, req.ino, req.tile, req.version, req.offset, req.length, buf,
                     &got);
    if (rc != 0 || got == 0) {
        /* A hole or a failure: no frame 1 at all. */
        handlers_reply_free(context, buf);
        return rc == 0 ? handlers_missing(context, response, &req)
                       : handlers_status(response, "read", req.ino, req.tile, req.version, rc);
    }
    struct ts_tile_read_rep reply = {.crc = crc32c(0, buf, got)};
    int len = ts_tile_read_rep_encode(&reply, response->payload, response->payload_cap);
    if (len < 0) {
        handlers_reply_free(context, buf);
        return TS_ERR_INTERNAL;
    }
    response->payload_len = (size_t)len;
    response->data = buf;
    response->data_len = got;
    response->data_free = context->replies ? replymem_free : nodehandlers_free_data;
    handlers_count_read(context, req.ino, req.tile, got);
    handlers_warm(context, &req);
    return TS_OK;
}

static int handle_tile_stream(void *ctx, const struct rpc_request *request,
                              struct rpc_response *response)
{
    struct nodehandlers_context *context = ctx;
    /* A throttled disk is timed over ZeroMQ only (handlers_stream_read). */
    bool off = diskio_throttled(context->disk);
    struct ts_tile_stream_rep reply = {
        .port = off ? 0 : context->stream_port,
        .local = ts_str_of(off || !context->stream_local ? "" : context->stream_local)};
    if (request->payload_len != 0)
        return handlers_badmsg(response, "TILE_STREAM");
    int len = ts_tile_stream_rep_encode(&reply, response->payload, response->payload_cap);
    if (len < 0)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    return TS_OK;
}

/* Sends a stream answer's head; false if the socket failed. */
static bool handlers_stream_head(int sock, int32_t status, uint32_t data_bytes)
{
    uint8_t head[TS_STREAM_REP_BYTES];
    ts_stream_rep_encode(status, data_bytes, head);
    int flags = MSG_NOSIGNAL | (status == TS_OK && data_bytes > 0 ? MSG_MORE : 0);
    return send(sock, head, sizeof(head), flags) == (ssize_t)sizeof(head);
}

/* A huge page: the buffer's size and alignment when buffer->huge_pages. */
#define HANDLERS_HUGE_PAGE_BYTES (2u << 20)

/*
 * Makes room for len bytes in the thread's buffer, which keeps nothing of
 * what it held; aligned for O_DIRECT (directread.h). False out of memory.
 */
static bool handlers_buffer_fit(struct nodehandlers_write_buffer *buffer, size_t len)
{
    if (buffer->cap >= len)
        return true;
    size_t cap = buffer->cap          ? buffer->cap
                 : buffer->huge_pages ? HANDLERS_HUGE_PAGE_BYTES
                                      : (1u << 20);
    while (cap < len)
        cap *= 2;
    void *grown = NULL;
    if (posix_memalign(&grown, buffer->huge_pages ? HANDLERS_HUGE_PAGE_BYTES : DIRECTREAD_ALIGN,
                       cap) != 0)
        return false;
    /* Huge pages where the kernel has them: an O_DIRECT read into 4 KiB
     * pages scattered in memory takes a disk request segment per page, and
     * a 1 MiB read was split in two requests (a virtio disk takes 254
     * segments), each waited for on a busy disk. */
    if (buffer->huge_pages)
        (void)madvise(grown, cap, MADV_HUGEPAGE);
    free(buffer->bytes);
    buffer->bytes = grown;
    buffer->cap = cap;
    return true;
}

/* Sends len bytes; false if the socket failed. */
static bool handlers_send_all(int sock, const uint8_t *bytes, size_t len)
{
    while (len > 0) {
        ssize_t put = send(sock, bytes, len, MSG_NOSIGNAL);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return false;
        bytes += put;
        len -= (size_t)put;
    }
    return true;
}

/* Sends count bytes of file_fd from offset; false if the socket failed or the file shrank. */
static bool handlers_send_file(int sock, int file_fd, uint64_t offset, size_t count)
{
    off_t at = (off_t)offset;
    while (count > 0) {
        ssize_t put = sendfile(sock, file_fd, &at, count);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return false; /* 0: the file shrank since it was checked */
        count -= (size_t)put;
    }
    return true;
}

/*
 * A cold read's bytes: the whole CRC blocks [span_start, span_start +
 * span_len) of the open tile read past the page cache into buf
 * (directread.h) and checked there. 0: buf holds req's range, checked;
 * -EAGAIN or another negative errno: read it through the page cache
 * instead (no O_DIRECT here, the file shrank, or a block did not check
 * out, which the locked path then judges).
 */
static int handlers_direct_check(const struct tilestore *store, const struct tilecrc_trust *trust,
                                 const struct ts_tile_read_req *req, uint32_t count, int file_fd,
                                 uint64_t size, uint64_t span_start, size_t span_len, uint8_t *buf)
{
    size_t got = 0;
    int rc = directread_read(file_fd, span_start, span_len, buf, &got);
    if (rc != 0)
        return rc;
    if (got < req->offset - span_start + count)
        return -EAGAIN; /* shorter than the file said: changed meanwhile */
    return tilestore_check_read_unlocked(store, trust, req->ino, req->tile, req->version, file_fd,
                                         size, span_start, buf, got);
}

/*
 * A plain read this short (a 4 KiB O_DIRECT read through the mount, say)
 * is read as whole CRC blocks into the thread's buffer, checked there and
 * sent from it: one pass over the page cache, where checking it and then
 * sendfile() took two.
 */
#define HANDLERS_SMALL_READ_BYTES (128u << 10)

/*
 * A short plain read's bytes: the whole CRC blocks [span_start, span_start
 * + span_len) of the held tile read through the page cache into buf and
 * checked there. 0: buf holds req's range, checked; -EAGAIN or another
 * negative errno: as handlers_direct_check().
 */
static int handlers_small_check(const struct tilestore *store, const struct tilecrc_trust *trust,
                                const struct ts_tile_read_req *req, uint32_t count,
                                const struct tilestore_held *held, uint64_t span_start,
                                size_t span_len, uint8_t *buf, struct tilecrc *loaded,
                                bool *did_load)
{
    size_t got = 0;
    int rc = util_pread_upto(held->fd, buf, span_len, span_start, &got);
    if (rc != 0)
        return rc;
    if (got < req->offset - span_start + count)
        return -EAGAIN; /* shorter than the file said: changed meanwhile */
    return tilestore_check_held_unlocked(store, trust, req->ino, req->tile, req->version, held,
                                         span_start, got, buf, got, loaded, did_load);
}

/*
 * One read of the tile stream: as TILE_READ, but anything other than
 * bytes or a hole (a fence, a missing file, a throttled disk, whose
 * timing the stream would dodge) is a bare status the client takes to
 * ZeroMQ. Called with the context's lock, which it drops while the bytes
 * are checked (the file is open by then: a retire or a truncate meanwhile
 * is seen as the file was) and while they go. The bytes are checked 64
 * KiB at a time through a buffer that stays in the CPU's cache, then sent
 * from the file with sendfile(), which hands the socket the page cache's
 * pages, not a copy (reading them into a 1 MiB buffer and sending that
 * cost a second copy; summing them through a mapping of the page cache
 * instead cost twice the CPU, page walks on a VM). Two kinds of reads go
 * through the thread's buffer instead: a kept read of cold bytes
 * (directread.h) and a short plain read (HANDLERS_SMALL_READ_BYTES). A
 * plain read's file is held between reads (tilestore_hold()); a kept
 * read's descriptor is its own. Only a range that does not check out
 * clean is read again under the lock, into the thread's buffer, and sent
 * from there. A write to the range between the
 * check and the send is sent as written: a read racing a write may see
 * either, as it may without checksums. The counters are updated before
 * the bytes go, so they are right by the time a client has its answer.
 * reader_keeps: the reader caches the bytes (TS_STREAM_READ_KEPT), so
 * they are left in *drop (nodehandlers.h).
 */
static int handlers_stream_read(struct nodehandlers_context *context,
                                const struct ts_tile_read_req *req, bool reader_keeps, int sock,
                                struct nodehandlers_write_buffer *buffer,
                                struct nodehandlers_drop_behind *drop)
{
    struct tilestore_held held = {.fd = -1};
    bool moving = false;
    bool from_buffer = false;
    int status = diskio_throttled(context->disk)
                     ? TS_ERR_BUSY
                     : handlers_fence_status(context, req->ino, req->tile, req->version, false,
                                             &moving);
    if (status == TS_OK) {
        /* A kept read's descriptor is its own: it may go past the page cache
         * (its O_DIRECT flag is the open file's) and is left for drop-behind. */
        int rc = reader_keeps
                     ? tilestore_open_tile(context->store, req->ino, req->tile, req->version,
                                           &held.fd, &held.size)
                     : tilestore_hold(context->store, req->ino, req->tile, req->version, &held);
        status = rc == 0 ? TS_OK : status_from_errno(-rc);
    }
    int file_fd = held.fd;
    uint64_t size = held.size;
    struct tilecrc loaded; /* the sidecar's CRCs, when a plain read loaded them */
    bool did_load = false;
    uint32_t count = size <= req->offset ? 0
                     : size - req->offset < req->length ? (uint32_t)(size - req->offset)
                                                         : req->length;
    int64_t start_ns = diskio_now_ns();
    const uint8_t *from_buffer_at = NULL; /* set with from_buffer */
    bool direct = false;
    if (status == TS_OK && count > 0) {
        /* Checked without the lock: other streams' requests go on. */
        struct tilecrc_trust trust;
        tilestore_trust(context->store, &trust);
        uint64_t span_start = 0;
        size_t span_len = 0;
        directread_span(size, req->offset, count, &span_start, &span_len);
        /* Past the page cache only bytes the reader keeps: the page cache
         * here is an O_DIRECT reader's only cache, and a kept read's pages
         * would be dropped. */
        bool cold = reader_keeps && directread_cold(file_fd, span_start, span_len) &&
                    handlers_buffer_fit(buffer, span_len);
        bool small = !reader_keeps && span_len <= HANDLERS_SMALL_READ_BYTES &&
                     handlers_buffer_fit(buffer, span_len);
        pthread_mutex_unlock(&context->lock);
        int rc = -EAGAIN;
        if (cold)
            rc = handlers_direct_check(context->store, &trust, req, count, file_fd, size,
                                       span_start, span_len, buffer->bytes);
        else if (small)
            rc = handlers_small_check(context->store, &trust, req, count, &held, span_start,
                                      span_len, buffer->bytes, &loaded, &did_load);
        if (rc == 0) {
            direct = cold;
            from_buffer = true;
            from_buffer_at = buffer->bytes + (req->offset - span_start);
        } else if (reader_keeps) {
            rc = tilestore_check_open_unlocked(context->store, &trust, req->ino, req->tile,
                                               req->version, file_fd, size, req->offset, count);
        } else {
            rc = tilestore_check_held_unlocked(context->store, &trust, req->ino, req->tile,
                                               req->version, &held, req->offset, count, NULL, 0,
                                               &loaded, &did_load);
        }
        pthread_mutex_lock(&context->lock);
        if (rc == -EAGAIN && !handlers_buffer_fit(buffer, count)) {
            rc = -ENOMEM;
        } else if (rc == -EAGAIN) {
            size_t got = 0;
            rc = tilestore_read(context->store, req->ino, req->tile, req->version, req->offset,
                                count, buffer->bytes, &got);
            count = (uint32_t)got; /* shorter: truncated meanwhile */
            from_buffer = true;
            from_buffer_at = buffer->bytes;
        }
        status = rc == 0 ? TS_OK : status_from_errno(-rc);
    }
    if (status != TS_OK) {
        tilestore_unhold(context->store, &held, did_load ? &loaded : NULL);
        return handlers_stream_head(sock, status, 0) ? status : -1;
    }
    handlers_count_read(context, req->ino, req->tile, count);
    if (direct)
        context->stats.reads_direct++;
    bool warm = handlers_warm_wanted(context, req);
    if (warm)
        context->stats.tiles_warmed++;

    pthread_mutex_unlock(&context->lock);
    int result = TS_OK;
    if (!handlers_stream_head(sock, TS_OK, count))
        result = -1;
    else if (from_buffer ? !handlers_send_all(sock, from_buffer_at, count)
                         : !handlers_send_file(sock, file_fd, req->offset, count))
        result = -1;
    if (result == TS_OK && warm)
        handlers_warm_file(file_fd);
    /* Bytes read past the page cache left none of it to drop. */
    if (result == TS_OK && reader_keeps && count > 0 && !direct) {
        *drop = (struct nodehandlers_drop_behind){.fd = file_fd, .offset = req->offset, .length = count};
        held.fd = -1;
    }
    pthread_mutex_lock(&context->lock);
    tilestore_unhold(context->store, &held, did_load ? &loaded : NULL);

    diskio_add_read(context->disk, start_ns, result == TS_OK ? count : 0);
    return result;
}

/*
 * One write of the tile stream: as TILE_WRITE, its bytes received into
 * memory already (data); a fence, a throttled disk or bytes that do not
 * match the writer's CRC are answered with their status, nothing written.
 */
static int handlers_stream_write(struct nodehandlers_context *context,
                                 const struct ts_tile_write_req *req, int sock, const uint8_t *data,
                                 const struct tilecrc_payload *sums)
{
    size_t len = sums->len;
    bool moving = false;
    int status = diskio_throttled(context->disk)
                     ? TS_ERR_BUSY
                     : handlers_fence_status(context, req->ino, req->tile, req->version, true,
                                             &moving);
    if (status == TS_OK && !handlers_crc_matches(context, NULL, req, sums))
        status = TS_ERR_CORRUPT;
    if (status == TS_OK) {
        int rc = diskio_receive(context->disk, req->ino, req->tile, req->version, req->offset,
                                data, len, sums);
        status = rc == 0 ? TS_OK : status_from_errno(-rc);
        if (rc == 0)
            context->stats.bytes_written += len;
    }
    return handlers_stream_head(sock, status, 0) ? status : -1;
}

/* Receives exactly len bytes (each piece within the socket's timeout); false if it fails. */
static bool handlers_receive_all(int sock, uint8_t *into, size_t len)
{
    while (len > 0) {
        ssize_t got = recv(sock, into, len, MSG_WAITALL);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        into += got;
        len -= (size_t)got;
    }
    return true;
}

/*
 * The reader's page cache on this machine holds these bytes. A second copy
 * would halve what the machine can cache, and on a VM whose freed memory
 * goes back to the host, fresh page cache costs more to fill than the disk
 * read (measured in the commit that added this).
 */
void nodehandlers_drop_behind(struct nodehandlers_drop_behind *drop, int sock)
{
    int unacknowledged = 0;
    if (drop->fd < 0)
        return;
    if (sock >= 0 && ioctl(sock, SIOCOUTQ, &unacknowledged) == 0 && unacknowledged > 0)
        return;
    posix_fadvise(drop->fd, (off_t)drop->offset, (off_t)drop->length, POSIX_FADV_DONTNEED);
    close(drop->fd);
    drop->fd = -1;
}

int nodehandlers_stream_request(struct nodehandlers_context *context, const uint8_t *request,
                                int sock, struct nodehandlers_write_buffer *buffer,
                                struct nodehandlers_drop_behind *drop)
{
    int64_t started_ns = util_monotonic_ns();
    struct ts_tile_read_req req;
    enum ts_stream_kind kind = TS_STREAM_READ;
    uint32_t crc = 0;
    int status = ts_stream_req_decode(&req, &kind, &crc, request);
    bool write = kind == TS_STREAM_WRITE;

    /* The reader asks again once it has the last answer, and its request
     * acknowledges the bytes. */
    nodehandlers_drop_behind(drop, -1);
    uint16_t op = write ? TS_OP_TILE_WRITE : TS_OP_TILE_READ;
    /* A write's bytes come off the socket before the lock, which then
     * waits only for the copy into the file, not for the client to send
     * (with the bytes taken under it, a datanode wrote one tile at a time,
     * however many clients streamed to it). */
    bool received = true;
    if (status == TS_OK && write) {
        /* Summed before the lock too, a block at a time as it comes in:
         * in the CPU's cache still (the whole write summed after it came
         * was another pass over memory). */
        received = handlers_buffer_fit(buffer, req.length);
        tilecrc_sum_begin(req.offset, req.length, &buffer->sums);
        while (received && buffer->sums.summed < req.length) {
            uint8_t *piece = buffer->bytes + buffer->sums.summed;
            received = handlers_receive_all(sock, piece, tilecrc_sum_next_len(&buffer->sums));
            if (received)
                tilecrc_sum_next(&buffer->sums, piece);
        }
    }

    pthread_mutex_lock(&context->lock);
    context->stats.requests[op]++;
    if (status != TS_OK || !received) {
        status = -1; /* no request, or its bytes broke off: the connection closes */
    } else if ((status = handlers_token(context, "a tile stream client",
                                        write ? TILETOKEN_WRITE : TILETOKEN_READ, NULL, 0,
                                        write ? "stream write" : "stream read", req.ino,
                                        req.tile, req.version, req.token_expiry, req.token)) !=
               TS_OK) {
        /* Every stream client is a mount: its requests carry their tokens. */
        status = handlers_stream_head(sock, status, 0) ? status : -1;
    } else if (write) {
        struct ts_tile_write_req write_req = {.ino = req.ino,
                                              .tile = req.tile,
                                              .version = req.version,
                                              .offset = req.offset,
                                              .crc = crc};
        status = handlers_stream_write(context, &write_req, sock, buffer->bytes, &buffer->sums);
    } else {
        status = handlers_stream_read(context, &req, kind == TS_STREAM_READ_KEPT, sock, buffer,
                                      drop);
    }
    if (status != TS_OK)
        context->stats.failures++;
    context->stats.busy_ns[op] += (uint64_t)(util_monotonic_ns() - started_ns);
    pthread_mutex_unlock(&context->lock);
    return status < 0 ? -1 : 0;
}

/* The next record of a TILE_SYNC, whose length the handler checked. */
static struct ts_tile_file_rec sync_record_next(struct ts_cursor *cursor)
{
    struct ts_tile_file_rec record;
    (void)ts_tile_file_rec_read(cursor, &record);
    return record;
}

/* Keeps the first failure as the answer. */
static void sync_note(struct rpc_response *response, int *first_status,
                      const struct ts_tile_file_rec *record, int rc)
{
    if (rc != 0 && *first_status == TS_OK)
        *first_status =
            handlers_status(response, "sync", record->ino, record->tile, record->version, rc);
}

static int handle_tile_sync(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    struct nodehandlers_context *context = ctx;
    struct ts_tile_sync_req req;
    struct ts_cursor cursor;
    int first_status = TS_OK;

    if (ts_tile_sync_req_decode(&req, request->payload, request->payload_len) != 0 ||
        (uint64_t)req.count * ts_tile_file_rec_bytes != req.tiles.len)
        return handlers_badmsg(response, "TILE_SYNC");
    /* Every tile even after a failure; the first failure is the answer.
     * The files' fsyncs wait for the disk, for hundreds of tiles maybe:
     * not with the handlers' lock, which every stream write needs (one
     * file's fsync stalled every other writer for half a second). They
     * only read tiles_fd; the names' sync after them uses the store's flags. */
    int64_t start_ns = diskio_now_ns();
    bool batched = req.count >= HANDLERS_SYNCFS_MIN_TILES;
    pthread_mutex_unlock(&context->lock);
    ts_cursor_init(&cursor, req.tiles.ptr, req.tiles.len);
    for (uint32_t i = 0; i < req.count; i++) {
        struct ts_tile_file_rec record = sync_record_next(&cursor);
        int rc = batched
                     ? tilestore_wait_file(context->store, record.ino, record.tile, record.version)
                     : tilestore_sync_file(context->store, record.ino, record.tile, record.version);
        sync_note(response, &first_status, &record, rc);
    }
    if (batched) {
        int rc = tilestore_sync_filesystem(context->store);
        if (rc != 0 && first_status == TS_OK) {
            ts_cursor_init(&cursor, req.tiles.ptr, req.tiles.len);
            struct ts_tile_file_rec record = sync_record_next(&cursor);
            sync_note(response, &first_status, &record, rc);
        }
    }
    pthread_mutex_lock(&context->lock);
    ts_cursor_init(&cursor, req.tiles.ptr, req.tiles.len);
    for (uint32_t i = 0; i < req.count; i++) {
        struct ts_tile_file_rec record = sync_record_next(&cursor);
        sync_note(response, &first_status, &record,
                  tilestore_sync_names(context->store, record.ino));
    }
    diskio_add_sync(context->disk, start_ns);
    return first_status;
}

static int handle_tile_truncate(void *ctx, const struct rpc_request *request,
                                struct rpc_response *response)
{
    struct nodehandlers_context *context = ctx;
    struct ts_tile_truncate_req req;
    if (ts_tile_truncate_req_decode(&req, request->payload, request->payload_len) != 0)
        return handlers_badmsg(response, "TILE_TRUNCATE");
    int allowed = handlers_request_token(context, request, response, TILETOKEN_WRITE,
                                         "truncate", req.ino, req.tile, req.version,
                                         req.token_expiry, req.token);
    if (allowed != TS_OK)
        return allowed;
    int fenced =
        handlers_fenced(context, response, "truncate", req.ino, req.tile, req.version, true);
    if (fenced != TS_OK)
        return fenced;
    int rc = tilestore_truncate(context->store, req.ino, req.tile, req.version, req.length);
    return handlers_status(response, "truncate", req.ino, req.tile, req.version, rc);
}

/* A TILE_PULL source: a tcp:// or ipc:// endpoint of printable characters. */
static bool handlers_valid_source(const char *source)
{
    if (strncmp(source, "tcp://", 6) != 0 && strncmp(source, "ipc://", 6) != 0)
        return false;
    if (source[6] == '\0')
        return false;
    for (const char *at = source; *at; at++) {
        if (*at <= ' ' || *at > '~')
            return false;
    }
    return true;
}

static int handlers_pull_reply(struct rpc_response *response, uint32_t state, uint64_t bytes,
                               uint32_t checksum)
{
    struct ts_tile_pull_rep reply = {.state = state, .bytes = bytes, .checksum = checksum};
    int len = ts_tile_pull_rep_encode(&reply, response->payload, response->payload_cap);
    if (len < 0)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    return TS_OK;
}

/*
 * TILE_PULL: where the pull of (ino, tile, new_version) stands, starting
 * it when it is unknown and the file is not there yet. A file already there
 * (a pull finished and forgotten, or before a restart) is a finished pull.
 */
static int handle_tile_pull(void *ctx, const struct rpc_request *request,
                            struct rpc_response *response)
{
    struct nodehandlers_context *context = ctx;
    struct ts_tile_pull_req req;
    struct puller_result result;
    char source[256];
    uint64_t bytes, capacity, free_bytes;
    uint32_t checksum;
    int rc;

    if (ts_tile_pull_req_decode(&req, request->payload, request->payload_len) != 0)
        return handlers_badmsg(response, "TILE_PULL");
    if (!context->puller) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "this datanode runs no pullers");
        return TS_ERR_NOTSUP;
    }
    if (req.ino == 0 || req.new_version == req.version) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_PULL of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 " into version %" PRIu64
                 ": %s",
                 req.ino, req.tile, req.version, req.new_version,
                 req.ino == 0 ? "inode 0 is no file" : "new_version must differ from version");
        return TS_ERR_INVAL;
    }
    if (ts_str_copy(req.source, source, sizeof(source)) != 0 || !handlers_valid_source(source)) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_PULL source '%.*s' is not a tcp:// or ipc:// endpoint of at most 255 "
                 "printable characters",
                 (int)(req.source.len > 100 ? 100 : req.source.len), req.source.ptr);
        return TS_ERR_INVAL;
    }
    struct puller_job job = {.ino = req.ino,
                             .tile = req.tile,
                             .version = req.version,
                             .new_version = req.new_version,
                             .source = source};
    puller_query(context->puller, &job, &result);
    switch (result.state) {
    case PULLER_RUNNING: return handlers_pull_reply(response, TS_PULL_RUNNING, 0, 0);
    case PULLER_DONE:
        return handlers_pull_reply(response, TS_PULL_DONE, result.bytes, result.checksum);
    case PULLER_FAILED:
        snprintf(response->error_text, sizeof(response->error_text), "%s", result.text);
        return result.status;
    case PULLER_UNKNOWN: break;
    }
    rc = tilestore_checksum(context->store, req.ino, req.tile, req.new_version, &bytes, &checksum);
    if (rc == 0)
        return handlers_pull_reply(response, TS_PULL_DONE, bytes, checksum);
    if (rc != -ENOENT)
        return handlers_status(response, "pull", req.ino, req.tile, req.new_version, rc);
    rc = tilestore_space(context->store, &capacity, &free_bytes);
    if (rc != 0)
        return handlers_status(response, "pull", req.ino, req.tile, req.new_version, rc);
    job.max_bytes = free_bytes;
    rc = puller_start(context->puller, &job);
    if (rc == -EBUSY) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "%u pulls are queued or running on this datanode, the most it takes; "
                 "ask again when some have finished",
                 puller_active(context->puller));
        return TS_ERR_BUSY;
    }
    if (rc != 0)
        return handlers_status(response, "pull", req.ino, req.tile, req.new_version, rc);
    log_debug("pull of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 " from %s as version %" PRIu64
              " queued",
              req.ino, req.tile, req.version, source, req.new_version);
    return handlers_pull_reply(response, TS_PULL_RUNNING, 0, 0);
}

/* TILE_FENCE: the fence changes, then the reply reports the file as it is now. */
static int handle_tile_fence(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct nodehandlers_context *context = ctx;
    struct ts_tile_fence_req req;
    struct ts_tile_fence_rep reply = {.bytes = 0, .checksum = 0};
    int rc = 0;

    if (ts_tile_fence_req_decode(&req, request->payload, request->payload_len) != 0)
        return handlers_badmsg(response, "TILE_FENCE");
    if (!context->fences) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "this datanode keeps no fences");
        return TS_ERR_NOTSUP;
    }
    if (req.action > TS_FENCE_RELINK || req.ino == 0) {
        snprintf(response->error_text, sizeof(response->error_text),
                 req.ino == 0 ? "TILE_FENCE of inode 0, which is no file"
                              : "TILE_FENCE action %" PRIu32
                                " is unknown; use 0 (lift), 1 (freeze), 2 (retire) or 3 (relink)",
                 req.action);
        return TS_ERR_INVAL;
    }
    if ((req.action == TS_FENCE_RELINK) !=
        (req.new_version != 0 && req.new_version != req.version)) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_FENCE: new_version %" PRIu64 " %s", req.new_version,
                 req.action == TS_FENCE_RELINK
                     ? "must name a version other than the file's (a relink)"
                     : "must be 0 but for a relink");
        return TS_ERR_INVAL;
    }
    if (req.action == TS_FENCE_RELINK &&
        fences_check(context->fences, req.ino, req.tile, req.version, util_monotonic_ms()) !=
            FENCES_FROZEN) {
        /* Unfrozen, the bytes linked could change before meta's commit names them. */
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_FENCE relink of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64
                 ": the file is not frozen (freeze it first) or is retired",
                 req.ino, req.tile, req.version);
        return TS_ERR_STALE;
    }
    switch (req.action) {
    case TS_FENCE_LIFT: fences_lift(context->fences, req.ino, req.tile, req.version); break;
    case TS_FENCE_FREEZE:
        rc = fences_freeze(context->fences, req.ino, req.tile, req.version, req.lease_ms,
                           util_monotonic_ms());
        if (rc == -EBUSY) {
            snprintf(response->error_text, sizeof(response->error_text),
                     "%u tile files are frozen on this datanode, the most it keeps; lift or "
                     "let expire some first",
                     FENCES_MAX_FROZEN);
            return TS_ERR_BUSY;
        }
        break;
    case TS_FENCE_RETIRE:
        rc = fences_retire(context->fences, req.ino, req.tile, req.version);
        break;
    case TS_FENCE_RELINK:
        rc = tilestore_relink(context->store, req.ino, req.tile, req.version, req.new_version);
        if (rc == -EEXIST) {
            snprintf(response->error_text, sizeof(response->error_text),
                     "tile %" PRIu64 ".%" PRIu64 ": version %" PRIu64
                     " is another file already; the relink was refused",
                     req.ino, req.tile, req.new_version);
            return TS_ERR_EXIST;
        }
        break;
    }
    if (rc != 0)
        return handlers_status(response, "fence", req.ino, req.tile, req.version, rc);
    log_debug("fence %s on tile %" PRIu64 ".%" PRIu64 ".%" PRIu64,
              req.action == TS_FENCE_LIFT     ? "lifted"
              : req.action == TS_FENCE_FREEZE ? "frozen"
              : req.action == TS_FENCE_RETIRE ? "retired"
                                              : "relinked",
              req.ino, req.tile, req.version);
    rc = tilestore_checksum(context->store, req.ino, req.tile,
                            req.action == TS_FENCE_RELINK ? req.new_version : req.version,
                            &reply.bytes, &reply.checksum);
    if (rc != 0 && rc != -ENOENT)
        return handlers_status(response, "fence", req.ino, req.tile, req.version, rc);
    int len = ts_tile_fence_rep_encode(&reply, response->payload, response->payload_cap);
    if (len < 0)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    return TS_OK;
}

static int handle_node_throttle(void *ctx, const struct rpc_request *request,
                                struct rpc_response *response)
{
    struct nodehandlers_context *context = ctx;
    struct ts_node_throttle req;
    struct ts_node_throttle reply;
    uint64_t before = diskio_throttle(context->disk);

    if (ts_node_throttle_decode(&req, request->payload, request->payload_len) != 0)
        return handlers_badmsg(response, "NODE_THROTTLE");
    if (req.bytes_per_sec > HANDLERS_MAX_THROTTLE_BYTES_PER_SEC ||
        (req.bytes_per_sec != 0 && req.bytes_per_sec < HANDLERS_MIN_THROTTLE_BYTES_PER_SEC)) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "throttle of %" PRIu64 " bytes/s: give %llu to %llu (or 0 for none)",
                 req.bytes_per_sec, HANDLERS_MIN_THROTTLE_BYTES_PER_SEC,
                 HANDLERS_MAX_THROTTLE_BYTES_PER_SEC);
        log_warn("refused NODE_THROTTLE of %" PRIu64 " bytes/s from %s: out of bounds",
                 req.bytes_per_sec,
                 request->key_user && request->key_user[0] ? request->key_user : "a peer");
        return TS_ERR_INVAL;
    }
    diskio_set_throttle(context->disk, req.bytes_per_sec);
    if (req.bytes_per_sec != before) {
        if (req.bytes_per_sec == 0)
            log_info("disk throttle off (was %.1f MB/s)", (double)before / 1e6);
        else
            log_info("disk throttle set to %.1f MB/s", (double)req.bytes_per_sec / 1e6);
    }
    reply.bytes_per_sec = diskio_throttle(context->disk);
    int len = ts_node_throttle_encode(&reply, response->payload, response->payload_cap);
    if (len < 0)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    return TS_OK;
}

/*
 * NODE_STATS. Its wrapper (below) has counted this request already, so it
 * is in the reply; a reset happens once the reply is encoded.
 */
static int handle_node_stats(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct nodehandlers_context *context = ctx;
    struct nodehandlers_stats *stats = &context->stats;
    struct ts_node_stats_req req;
    struct ts_node_stats_rep reply;
    struct ts_writer ops;
    struct ts_writer tiles;
    uint8_t op_records[TS_OP_MAX * ts_stats_op_rec_bytes];
    const struct readset_entry *entries = NULL;
    size_t tile_count = 0;
    uint8_t *tile_records;
    int len;

    if (ts_node_stats_req_decode(&req, request->payload, request->payload_len) != 0 ||
        req.reset > 1)
        return handlers_badmsg(response, "NODE_STATS");
    if (stats->tiles_read)
        entries = readset_entries(stats->tiles_read, &tile_count);
    tile_records = malloc(tile_count ? tile_count * ts_stats_tile_rec_bytes : 1);
    if (!tile_records)
        return TS_ERR_NOMEM;
    memset(&reply, 0, sizeof(reply));
    ts_writer_init(&ops, op_records, sizeof(op_records));
    for (uint32_t op = 0; op < TS_OP_MAX; op++) {
        uint64_t count = stats->requests[op];
        if (count == 0)
            continue;
        struct ts_stats_op_rec record = {.opcode = op, .count = count};
        ts_stats_op_rec_write(&ops, &record);
        reply.op_count++;
        reply.requests += count;
    }
    ts_writer_init(&tiles, tile_records, tile_count * ts_stats_tile_rec_bytes);
    for (size_t i = 0; i < tile_count; i++) {
        struct ts_stats_tile_rec record = {.ino = entries[i].ino,
                                           .tile = entries[i].tile,
                                           .reads = entries[i].reads,
                                           .bytes = entries[i].bytes};
        ts_stats_tile_rec_write(&tiles, &record);
    }
    reply.failures = stats->failures;
    reply.bytes_read = stats->bytes_read;
    reply.bytes_written = stats->bytes_written;
    reply.ops.ptr = (const char *)op_records;
    reply.ops.len = (uint32_t)ops.len;
    reply.tile_count = (uint32_t)tile_count;
    reply.tiles_dropped = stats->tiles_read ? readset_dropped(stats->tiles_read) : 0;
    reply.tiles.ptr = (const char *)tile_records;
    reply.tiles.len = (uint32_t)tiles.len;
    reply.tiles_reclaimed = stats->tiles_reclaimed;
    reply.bytes_reclaimed = stats->bytes_reclaimed;
    reply.reclaim_passes = stats->reclaim_passes;
    len = ts_node_stats_rep_encode(&reply, response->payload, response->payload_cap);
    free(tile_records);
    if (len < 0 || ops.failed || tiles.failed)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    if (req.reset) {
        struct readset *tiles_read = stats->tiles_read;
        memset(stats, 0, sizeof(*stats));
        if (tiles_read)
            readset_clear(tiles_read);
        stats->tiles_read = tiles_read;
    }
    return TS_OK;
}

/* NODE_SCRUB: starts a pass if asked, then reports the scrub as it stands. */
static int handle_node_scrub(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct nodehandlers_context *context = ctx;
    struct ts_node_scrub_req req;
    if (ts_node_scrub_req_decode(&req, request->payload, request->payload_len) != 0 ||
        req.action > TS_SCRUB_START)
        return handlers_badmsg(response, "NODE_SCRUB");
    if (!context->scrub) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "this datanode runs no scrub");
        return TS_ERR_NOTSUP;
    }
    if (req.action == TS_SCRUB_START) {
        uint64_t pass = scrub_request(context->scrub, req.bytes_per_sec);
        log_info("scrub: pass %" PRIu64 " asked for at %s", pass,
                 req.bytes_per_sec ? "the rate given" : "full speed");
    }
    struct scrub_report *report = malloc(sizeof(*report));
    uint8_t *records = malloc((size_t)TS_MAX_SCRUB_CORRUPT * ts_tile_file_rec_bytes);
    int status = TS_ERR_NOMEM;
    if (report && records) {
        struct ts_writer writer;
        scrub_report(context->scrub, report, true);
        ts_writer_init(&writer, records, (size_t)TS_MAX_SCRUB_CORRUPT * ts_tile_file_rec_bytes);
        for (uint32_t i = 0; i < report->finished_corrupt_count; i++)
            ts_tile_file_rec_write(&writer, &report->finished_corrupt[i]);
        struct ts_node_scrub_rep reply = {
            .corrupt_files = tilestore_corrupt_found(context->store),
            .scrub_running = report->running,
            .scrub_files = report->files,
            .scrub_bytes = report->bytes,
            .scrub_corrupt = report->corrupt,
            .scrub_rate = report->bytes_per_sec,
            .scrub_passes = report->passes,
            .total_bytes = report->total_bytes,
            .pass = report->pass,
            .finished_pass = report->finished_pass,
            .corrupt_count = report->finished_corrupt_count,
            .corrupt = {(const char *)records, (uint32_t)writer.len}};
        int len = ts_node_scrub_rep_encode(&reply, response->payload, response->payload_cap);
        status = len < 0 || writer.failed ? TS_ERR_INTERNAL : TS_OK;
        if (status == TS_OK)
            response->payload_len = (size_t)len;
    }
    free(records);
    free(report);
    return status;
}

/*
 * The table entries count the request before the real handler runs (so
 * NODE_STATS sees itself) and its failure after, so no handler can forget
 * to.
 */
#define HANDLERS_COUNTED(name, op)                                                                 \
    static int counted_##name(void *ctx, const struct rpc_request *request,                        \
                              struct rpc_response *response)                                       \
    {                                                                                              \
        struct nodehandlers_context *context = ctx;                                                    \
        int64_t started_ns = util_monotonic_ns();                                                  \
        context->stats.requests[op]++;                                                             \
        int status = handle_##name(ctx, request, response);                                        \
        /* A throttled disk's pace, off the loop: the reply waits, not the loop. */                \
        response->send_at_ns = diskio_take_reply_at(context->disk);                                \
        if (status != TS_OK)                                                                       \
            context->stats.failures++;                                                             \
        context->stats.busy_ns[op] += (uint64_t)(util_monotonic_ns() - started_ns);                \
        return status;                                                                             \
    }
HANDLERS_COUNTED(ping, TS_OP_PING)
HANDLERS_COUNTED(tile_write, TS_OP_TILE_WRITE)
HANDLERS_COUNTED(tile_read, TS_OP_TILE_READ)
HANDLERS_COUNTED(tile_sync, TS_OP_TILE_SYNC)
HANDLERS_COUNTED(tile_truncate, TS_OP_TILE_TRUNCATE)
HANDLERS_COUNTED(tile_stream, TS_OP_TILE_STREAM)
HANDLERS_COUNTED(tile_pull, TS_OP_TILE_PULL)
HANDLERS_COUNTED(tile_fence, TS_OP_TILE_FENCE)
HANDLERS_COUNTED(node_throttle, TS_OP_NODE_THROTTLE)
HANDLERS_COUNTED(node_stats, TS_OP_NODE_STATS)
HANDLERS_COUNTED(node_scrub, TS_OP_NODE_SCRUB)

static int handle_tile_check(void *ctx, const struct rpc_request *request,
                             struct rpc_response *response)
{
    struct nodehandlers_context *context = ctx;
    return tilecheck_handle(context->store, request, response);
}
HANDLERS_COUNTED(tile_check, TS_OP_TILE_CHECK)

const rpc_handler_fn nodehandlers_table[TS_OP_MAX] = {
    [TS_OP_PING] = counted_ping,
    [TS_OP_TILE_WRITE] = counted_tile_write,
    [TS_OP_TILE_READ] = counted_tile_read,
    [TS_OP_TILE_SYNC] = counted_tile_sync,
    [TS_OP_TILE_TRUNCATE] = counted_tile_truncate,
    [TS_OP_TILE_STREAM] = counted_tile_stream,
    [TS_OP_TILE_PULL] = counted_tile_pull,
    [TS_OP_TILE_FENCE] = counted_tile_fence,
    [TS_OP_NODE_THROTTLE] = counted_node_throttle,
    [TS_OP_NODE_STATS] = counted_node_stats,
    [TS_OP_NODE_SCRUB] = counted_node_scrub,
    [TS_OP_TILE_CHECK] = counted_tile_check,
};

void nodehandlers_log_stats(const struct nodehandlers_stats *stats)
{
    log_info("served: %" PRIu64 " PING, %" PRIu64 " TILE_WRITE (%" PRIu64 " bytes), %" PRIu64
             " TILE_READ (%" PRIu64 " bytes), %" PRIu64 " TILE_SYNC, %" PRIu64
             " TILE_TRUNCATE, %" PRIu64 " TILE_PULL, %" PRIu64 " TILE_FENCE; %" PRIu64
             " failed; %" PRIu64 " tiles warmed after small reads; %" PRIu64
             " stream reads past the page cache; %" PRIu64 " writes refused for a CRC mismatch",
             stats->requests[TS_OP_PING], stats->requests[TS_OP_TILE_WRITE], stats->bytes_written,
             stats->requests[TS_OP_TILE_READ], stats->bytes_read, stats->requests[TS_OP_TILE_SYNC],
             stats->requests[TS_OP_TILE_TRUNCATE], stats->requests[TS_OP_TILE_PULL],
             stats->requests[TS_OP_TILE_FENCE], stats->failures, stats->tiles_warmed,
             stats->reads_direct, stats->writes_refused_crc);
}

void nodehandlers_stats_fini(struct nodehandlers_stats *stats)
{
    readset_destroy(&stats->tiles_read);
    memset(stats, 0, sizeof(*stats));
}
