/*
 * @file heartbeat.c
 * See heartbeat.h. One heartbeat is in flight at most. Its request is
 * framed with the public codec (ts_header_encode, ts_heartbeat_req_encode)
 * and its reply checked as rpc_client checks one: header, reply flag,
 * opcode, request id, a single frame, then a strict decode.
 *
 * The deleted list holds the garbage tiles removed since meta last
 * acknowledged a heartbeat. A heartbeat carries the whole list; only its
 * acknowledgement clears it, so a lost request or reply just repeats the
 * confirmation (meta treats it as idempotent). New garbage arrives only in
 * an acknowledged reply, so the list never holds more than one reply's
 * garbage: TS_MAX_GARBAGE records.
 *
 * The created list works the same way: up to TS_MAX_CREATED records taken
 * from the tile store (tilestore_take_created()) when the list is empty,
 * sent with every heartbeat until one is acknowledged, then dropped. A
 * restart loses the unacknowledged ones only to report them again, as the
 * store queues every file it finds at open. The corrupt list (tile files
 * that failed their checksums, tilestore_take_corrupt()) works the same
 * way; a restart forgets the unacknowledged ones until they are found
 * again.
 *
 * Meta refuses the heartbeats of a data directory that is not the one its
 * node.id's node registered with (identity.h): the datanode logs meta's
 * reason and stops (heartbeat_refused()), as an HDFS datanode stops on a
 * storage that does not belong to its cluster, rather than serve as a node
 * whose tiles it does not have.
 *
 * Garbage is deleted on the serving thread, between requests, in the
 * background of the datanode's work: each reply's share is cut at
 * GARBAGE_SLICE_MS and at GARBAGE_TILES_PER_SEC, and the rest comes back
 * in the next reply. That one is asked for at once while the datanode is
 * idle, and at the next regular heartbeat while it serves requests
 * (heartbeat_note_busy), so deleting a big file never holds up, or
 * competes much with, the writes and reads of the files that stay. Only
 * when the disk is short of space do deletions go as fast as they can.
 */
#include "heartbeat.h"

#include "curve.h"
#include "identity.h"
#include "log.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define HEARTBEAT_PAYLOAD_CAP                                                                      \
    (1024 + TS_MAX_GARBAGE * ts_tile_file_rec_bytes + TS_MAX_CREATED * ts_tile_file_rec_bytes)
/* The longest one reply's garbage is deleted for before requests are
 * served again. Deleting the 512 tiles a 2 GiB file left on each of 4
 * datanodes took about a second on a busy disk, during which every write
 * to the datanode waited. */
#define GARBAGE_SLICE_MS 10
/* How long after its last request the datanode counts as idle. */
#define GARBAGE_IDLE_AFTER_MS 200
/* Deletions per second (of up to a tile each), and as many in one burst.
 * Deleting frees disk blocks, and a file system mounted with online discard
 * (ext4 -o discard) trims them as it commits: 4 GiB of tiles deleted in
 * 2 s halved the 4-stream write that came right after (fio, 692-733
 * against 1,301-1,428 MB/s on the same disk without discard; 886 at 64
 * deletions per second, 1,136-1,268 at 16). Spread out, as Ceph's
 * osd_delete_sleep and MooseFS's chunk deletion limits do. */
#define GARBAGE_TILES_PER_SEC 16.0
/* Below this share of the capacity free, deletions are not spread out. */
#define GARBAGE_LOW_SPACE_PERCENT 10

struct heartbeat {
    char meta_endpoint[256];
    char data_dir[4096];
    char machine[TS_MAX_NAME + 1];
    char address[256];
    char metrics[256]; /* "" none */
    struct tilestore *store;
    heartbeat_load_fn load;
    void *load_arg;

    uint32_t node_id;
    bool node_id_unsaved; /* meta gave an id that is not yet in node.id */

    void *socket;          /* DEALER to meta; NULL until needed */
    uint64_t in_flight_id; /* request id awaiting its reply, 0 = none */
    uint64_t next_request_id;
    int64_t sent_ms;            /* when the request in flight was sent */
    int64_t due_ms;             /* when the next request is sent */
    uint32_t deleted_in_flight; /* deleted records the request in flight carries */
    int64_t busy_ms;            /* when a request was last served (heartbeat_note_busy) */
    double delete_allowance;    /* deletions allowed now (GARBAGE_TILES_PER_SEC) */
    int64_t allowance_ms;       /* when delete_allowance was last topped up */
    bool space_low;             /* under GARBAGE_LOW_SPACE_PERCENT free at the last heartbeat */

    uint8_t *deleted; /* records: u64 ino, u64 tile, u64 version */
    uint32_t deleted_count;
    uint8_t *created; /* the same records, of tile files made (see above) */
    uint32_t created_count;
    uint8_t *corrupt; /* the same records, of corrupt tile files found (as created) */
    uint32_t corrupt_count;
    uint64_t incarnation; /* the data directory's identity (identity.h) */
    bool refused;         /* meta refused this data directory: stop */

    uint8_t *frame;    /* header + payload of the request being sent */
    bool meta_failing; /* a failure was logged; log the recovery */
    uint64_t acknowledged;
};

/* ---- node.id ---------------------------------------------------------- */

/* Reads DATA/node.id into *node_id (0 if missing); 0 or -errno. */
static int heartbeat_read_node_id(const char *data_dir, uint32_t *node_id)
{
    char path[4200];
    char text[32];
    ssize_t len;
    long value;
    int fd;

    *node_id = 0;
    snprintf(path, sizeof(path), "%s/node.id", data_dir);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        int rc = -errno;
        log_error("cannot read %s: %s", path, strerror(errno));
        return rc;
    }
    len = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (len < 0) {
        log_error("cannot read %s: %s", path, strerror(errno));
        return -EIO;
    }
    text[len] = '\0';
    if (len > 0 && text[len - 1] == '\n')
        text[len - 1] = '\0';
    if (util_parse_long(text, 1, UINT32_MAX, &value) != 0) {
        log_error("%s does not hold a node number (1..%" PRIu32 "); fix it, or remove it "
                  "to register as a new node",
                  path, UINT32_MAX);
        return -EINVAL;
    }
    *node_id = (uint32_t)value;
    return 0;
}

/* Writes DATA/node.id whole or not at all (util_write_file_durably). */
static int heartbeat_save_node_id(const char *data_dir, uint32_t node_id)
{
    char text[16];
    int len = snprintf(text, sizeof(text), "%" PRIu32 "\n", node_id);
    return util_write_file_durably(data_dir, "node.id", text, (size_t)len);
}

/* ---- lifecycle -------------------------------------------------------- */

static int heartbeat_copy(char *out, size_t cap, const char *text)
{
    if (!text || strlen(text) >= cap)
        return -ENAMETOOLONG;
    memcpy(out, text, strlen(text) + 1);
    return 0;
}

int heartbeat_new(const struct heartbeat_config *config, struct tilestore *store,
                  struct heartbeat **heartbeatp)
{
    struct heartbeat *heartbeat = calloc(1, sizeof(*heartbeat));
    int rc = -ENOMEM;

    *heartbeatp = NULL;
    if (!heartbeat)
        return -ENOMEM;
    if (heartbeat_copy(heartbeat->meta_endpoint, sizeof(heartbeat->meta_endpoint),
                       config->meta_endpoint) != 0 ||
        heartbeat_copy(heartbeat->data_dir, sizeof(heartbeat->data_dir), config->data_dir) != 0 ||
        heartbeat_copy(heartbeat->machine, sizeof(heartbeat->machine), config->machine) != 0 ||
        heartbeat_copy(heartbeat->address, sizeof(heartbeat->address), config->address) != 0 ||
        heartbeat_copy(heartbeat->metrics, sizeof(heartbeat->metrics),
                       config->metrics ? config->metrics : "") != 0) {
        rc = -ENAMETOOLONG;
        goto fail;
    }
    heartbeat->store = store;
    heartbeat->load = config->load;
    heartbeat->load_arg = config->load_arg;
    heartbeat->next_request_id = 1;
    heartbeat->due_ms = 0; /* the first heartbeat goes out at once */
    heartbeat->deleted = malloc((size_t)TS_MAX_GARBAGE * ts_tile_file_rec_bytes);
    heartbeat->created = malloc((size_t)TS_MAX_CREATED * ts_tile_file_rec_bytes);
    heartbeat->corrupt = malloc((size_t)TS_MAX_CREATED * ts_tile_file_rec_bytes);
    heartbeat->frame = malloc(TS_HEADER_BYTES + HEARTBEAT_PAYLOAD_CAP);
    if (!heartbeat->deleted || !heartbeat->created || !heartbeat->corrupt ||
        !heartbeat->frame)
        goto fail;
    rc = heartbeat_read_node_id(config->data_dir, &heartbeat->node_id);
    if (rc != 0)
        goto fail;
    bool made = false;
    rc = identity_load(config->data_dir, &heartbeat->incarnation, &made);
    if (rc != 0)
        goto fail;
    if (made && heartbeat->node_id != 0)
        log_warn("%s/identity was missing beside node.id (node %" PRIu32 "): made identity "
                 "%016" PRIx64 "; meta takes it only if node %" PRIu32 " registered without "
                 "one (a directory older than identities)",
                 config->data_dir, heartbeat->node_id, heartbeat->incarnation, heartbeat->node_id);
    else if (made)
        log_info("new data directory %s: identity %016" PRIx64, config->data_dir,
                 heartbeat->incarnation);
    *heartbeatp = heartbeat;
    return 0;
fail:
    heartbeat_destroy(&heartbeat);
    return rc;
}

static void heartbeat_close_socket(struct heartbeat *heartbeat)
{
    if (heartbeat->socket)
        zmq_close(heartbeat->socket);
    heartbeat->socket = NULL;
    heartbeat->in_flight_id = 0;
}

void heartbeat_destroy(struct heartbeat **heartbeatp)
{
    if (!heartbeatp || !*heartbeatp)
        return;
    struct heartbeat *heartbeat = *heartbeatp;
    heartbeat_close_socket(heartbeat);
    free(heartbeat->deleted);
    free(heartbeat->created);
    free(heartbeat->corrupt);
    free(heartbeat->frame);
    free(heartbeat);
    *heartbeatp = NULL;
}

void *heartbeat_socket(const struct heartbeat *heartbeat)
{
    return heartbeat->in_flight_id ? heartbeat->socket : NULL;
}

long heartbeat_wait_ms(const struct heartbeat *heartbeat, int64_t now_ms)
{
    int64_t until =
        heartbeat->in_flight_id ? heartbeat->sent_ms + HEARTBEAT_TIMEOUT_MS : heartbeat->due_ms;
    if (until <= now_ms)
        return 0;
    return (long)(until - now_ms);
}

void heartbeat_note_busy(struct heartbeat *heartbeat, int64_t now_ms)
{
    heartbeat->busy_ms = now_ms;
}

bool heartbeat_refused(const struct heartbeat *heartbeat)
{
    return heartbeat->refused;
}

uint32_t heartbeat_node_id(const struct heartbeat *heartbeat)
{
    return heartbeat->node_id;
}

uint64_t heartbeat_acknowledged(const struct heartbeat *heartbeat)
{
    return heartbeat->acknowledged;
}

/* ---- one round -------------------------------------------------------- */

/* Logs the first of a run of failures; the rest go to debug. */
static void heartbeat_failed(struct heartbeat *heartbeat, const char *why)
{
    if (!heartbeat->meta_failing)
        log_warn("heartbeat to meta at %s failed: %s; retrying quietly", heartbeat->meta_endpoint,
                 why);
    else
        log_debug("heartbeat to meta at %s failed: %s", heartbeat->meta_endpoint, why);
    heartbeat->meta_failing = true;
}

static void *heartbeat_open_socket(const char *endpoint)
{
    void *socket = zmq_socket(rpc_context(), ZMQ_DEALER);
    int zero = 0;
    int64_t max_message = TS_MAX_FRAME_BYTES;
    if (!socket)
        return NULL;
    /* Unsent heartbeats are worthless once abandoned: never keep them. */
    zmq_setsockopt(socket, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(socket, ZMQ_MAXMSGSIZE, &max_message, sizeof(max_message));
    if (curve_apply_client(socket) != 0 || zmq_connect(socket, endpoint) != 0) {
        zmq_close(socket);
        return NULL;
    }
    return socket;
}

/* Builds and sends the next heartbeat; on failure schedules a retry. */
static void heartbeat_send(struct heartbeat *heartbeat, int64_t now_ms)
{
    uint64_t tiles = 0, used_bytes = 0, capacity = 0, free_bytes = 0;
    uint64_t disk_id = 0, disk_bytes = 0, disk_free = 0;
    uint8_t *payload = heartbeat->frame + TS_HEADER_BYTES;
    struct heartbeat_load load = {0};

    if (heartbeat->load)
        heartbeat->load(heartbeat->load_arg, &load);
    tilestore_usage(heartbeat->store, &tiles, &used_bytes);
    if (tilestore_space(heartbeat->store, &capacity, &free_bytes) != 0)
        log_debug("statvfs of the data directory failed; reporting no space");
    else
        (void)tilestore_disk(heartbeat->store, &disk_id, &disk_bytes, &disk_free);
    heartbeat->space_low = free_bytes < capacity / 100 * GARBAGE_LOW_SPACE_PERCENT;
    if (heartbeat->created_count == 0)
        heartbeat->created_count =
            tilestore_take_created(heartbeat->store, heartbeat->created, TS_MAX_CREATED);
    if (heartbeat->corrupt_count == 0)
        heartbeat->corrupt_count =
            tilestore_take_corrupt(heartbeat->store, heartbeat->corrupt, TS_MAX_CREATED);
    struct ts_heartbeat_req req = {
        .node_id = heartbeat->node_id,
        .machine = ts_str_of(heartbeat->machine),
        .address = ts_str_of(heartbeat->address),
        .capacity = capacity,
        .free_bytes = free_bytes,
        .used_bytes = used_bytes,
        .tiles = tiles,
        .read_bytes_per_sec = load.read_bytes_per_sec,
        .write_bytes_per_sec = load.write_bytes_per_sec,
        .queue_depth = load.queue_depth,
        .throttle_bytes_per_sec = load.throttle_bytes_per_sec,
        .deleted_count = heartbeat->deleted_count,
        .deleted = {(const char *)heartbeat->deleted,
                    heartbeat->deleted_count * ts_tile_file_rec_bytes},
        .incarnation = heartbeat->incarnation,
        .created_count = heartbeat->created_count,
        .created = {(const char *)heartbeat->created,
                    heartbeat->created_count * ts_tile_file_rec_bytes},
        .corrupt_count = heartbeat->corrupt_count,
        .corrupt = {(const char *)heartbeat->corrupt,
                    heartbeat->corrupt_count * ts_tile_file_rec_bytes},
        .scrub_running = load.scrub_running,
        .scrub_files = load.scrub_files,
        .scrub_bytes = load.scrub_bytes,
        .scrub_corrupt = load.scrub_corrupt,
        .scrub_rate = load.scrub_rate,
        .scrub_passes = load.scrub_passes,
        .disk_id = disk_id,
        .disk_bytes = disk_bytes,
        .disk_free = disk_free,
        .metrics = ts_str_of(heartbeat->metrics),
    };
    int len = ts_heartbeat_req_encode(&req, payload, HEARTBEAT_PAYLOAD_CAP);
    struct ts_header header = {
        .magic = TS_PROTO_MAGIC,
        .version = TS_PROTO_VERSION,
        .type = TS_OP_HEARTBEAT,
        .request_id = heartbeat->next_request_id++,
        .payload_bytes = len > 0 ? (uint32_t)len : 0,
    };

    heartbeat->due_ms = now_ms + HEARTBEAT_INTERVAL_MS;
    if (len < 0) { /* cannot happen: the buffer fits the largest heartbeat */
        log_error("heartbeat does not fit its buffer");
        return;
    }
    if (!heartbeat->socket)
        heartbeat->socket = heartbeat_open_socket(heartbeat->meta_endpoint);
    if (!heartbeat->socket) {
        heartbeat_failed(heartbeat, zmq_strerror(zmq_errno()));
        return;
    }
    ts_header_encode(&header, heartbeat->frame);
    if (zmq_send(heartbeat->socket, heartbeat->frame, TS_HEADER_BYTES + (size_t)len, ZMQ_DONTWAIT) <
        0) {
        heartbeat_failed(heartbeat, zmq_strerror(zmq_errno()));
        heartbeat_close_socket(heartbeat);
        return;
    }
    heartbeat->in_flight_id = header.request_id;
    heartbeat->deleted_in_flight = heartbeat->deleted_count;
    heartbeat->sent_ms = now_ms;
}

/*
 * Deletes the garbage tiles of a reply, for GARBAGE_SLICE_MS at most (at
 * least one tile) and as many as the allowance lets (unless space is low);
 * returns how many were confirmed.
 */
static uint32_t heartbeat_collect_garbage(struct heartbeat *heartbeat,
                                          const struct ts_heartbeat_rep *rep)
{
    struct ts_cursor cursor;
    uint32_t confirmed = 0;
    uint32_t failed = 0;
    int first_error = 0;
    int64_t now_ms = util_monotonic_ms();
    int64_t slice_end_ms = now_ms + GARBAGE_SLICE_MS;

    heartbeat->delete_allowance +=
        (double)(now_ms - heartbeat->allowance_ms) * GARBAGE_TILES_PER_SEC / 1000.0;
    if (heartbeat->delete_allowance > GARBAGE_TILES_PER_SEC)
        heartbeat->delete_allowance = GARBAGE_TILES_PER_SEC;
    heartbeat->allowance_ms = now_ms;

    ts_cursor_init(&cursor, rep->garbage.ptr, rep->garbage.len);
    for (uint32_t i = 0; i < rep->garbage_count; i++) {
        struct ts_tile_file_rec record;
        (void)ts_tile_file_rec_read(&cursor, &record); /* the caller checked the length */
        if (heartbeat->deleted_count >= TS_MAX_GARBAGE ||
            (i > 0 && util_monotonic_ms() >= slice_end_ms) ||
            (!heartbeat->space_low && heartbeat->delete_allowance < 1.0))
            break; /* unconfirmed garbage comes back in a later reply */
        heartbeat->delete_allowance -= 1.0;
        int rc = tilestore_delete(heartbeat->store, record.ino, record.tile, record.version);
        /* An invalid record names no file that could exist: confirm it too. */
        if (rc != 0 && rc != -EINVAL) {
            if (failed == 0)
                first_error = rc;
            failed++;
            continue;
        }
        struct ts_writer deleted;
        ts_writer_init(&deleted,
                       heartbeat->deleted +
                           (size_t)heartbeat->deleted_count * ts_tile_file_rec_bytes,
                       ts_tile_file_rec_bytes);
        ts_tile_file_rec_write(&deleted, &record);
        heartbeat->deleted_count++;
        confirmed++;
    }
    if (failed > 0)
        log_warn("could not delete %" PRIu32 " of %" PRIu32 " garbage tiles (first: %s); "
                 "meta will ask again",
                 failed, rep->garbage_count, strerror(-first_error));
    if (confirmed > 0)
        log_debug("deleted %" PRIu32 " garbage tiles", confirmed);
    return confirmed;
}

/* Acts on an acknowledged heartbeat: node id, confirmations, garbage. */
static void heartbeat_acknowledge(struct heartbeat *heartbeat, const struct ts_heartbeat_rep *rep,
                                  int64_t now_ms)
{
    if (rep->node_id != heartbeat->node_id) {
        if (heartbeat->node_id != 0)
            log_warn("meta now calls this datanode node %" PRIu32 " (it was node %" PRIu32
                     "); keeping the new id",
                     rep->node_id, heartbeat->node_id);
        else
            log_info("meta registered this datanode as node %" PRIu32, rep->node_id);
        heartbeat->node_id = rep->node_id;
        heartbeat->node_id_unsaved = true;
    }
    if (heartbeat->node_id_unsaved) {
        int rc = heartbeat_save_node_id(heartbeat->data_dir, heartbeat->node_id);
        if (rc == 0)
            heartbeat->node_id_unsaved = false;
        else
            log_error("cannot save node id %" PRIu32 " in %s/node.id: %s (retrying)",
                      heartbeat->node_id, heartbeat->data_dir, strerror(-rc));
    }

    /* Meta has the confirmations this heartbeat carried; keep only later ones. */
    uint32_t kept = heartbeat->deleted_count - heartbeat->deleted_in_flight;
    memmove(heartbeat->deleted,
            heartbeat->deleted + (size_t)heartbeat->deleted_in_flight * ts_tile_file_rec_bytes,
            (size_t)kept * ts_tile_file_rec_bytes);
    heartbeat->deleted_count = kept;
    heartbeat->deleted_in_flight = 0;
    /* The created list changes only while no heartbeat is in flight. */
    heartbeat->created_count = 0;
    heartbeat->corrupt_count = 0;

    /* While idle, confirm deletions at once, so a big delete drains at
     * meta's pace; while busy, at the next regular heartbeat. */
    if (heartbeat_collect_garbage(heartbeat, rep) > 0 &&
        now_ms - heartbeat->busy_ms >= GARBAGE_IDLE_AFTER_MS &&
        (heartbeat->space_low || heartbeat->delete_allowance >= 1.0))
        heartbeat->due_ms = now_ms;

    if (heartbeat->meta_failing)
        log_info("meta at %s answers heartbeats again", heartbeat->meta_endpoint);
    heartbeat->meta_failing = false;
    heartbeat->acknowledged++;
}

/*
 * Receives one message from the socket. Returns 1 if it was the reply to
 * the request in flight (handled, good or bad), 0 if it was something to
 * skip, -1 if nothing was there.
 */
static int heartbeat_receive(struct heartbeat *heartbeat, int64_t now_ms)
{
    struct ts_header header;
    struct ts_heartbeat_rep rep;
    char why[300];
    zmq_msg_t frame;
    int more = 0;
    size_t more_len = sizeof(more);
    bool extra_frames = false;
    int status;

    zmq_msg_init(&frame);
    if (zmq_msg_recv(&frame, heartbeat->socket, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&frame);
        return -1;
    }
    zmq_getsockopt(heartbeat->socket, ZMQ_RCVMORE, &more, &more_len);
    while (more) { /* a heartbeat reply is one frame: drop the rest */
        zmq_msg_t extra;
        extra_frames = true;
        zmq_msg_init(&extra);
        if (zmq_msg_recv(&extra, heartbeat->socket, ZMQ_DONTWAIT) < 0)
            more = 0;
        else
            zmq_getsockopt(heartbeat->socket, ZMQ_RCVMORE, &more, &more_len);
        zmq_msg_close(&extra);
    }

    const uint8_t *data = zmq_msg_data(&frame);
    status = ts_header_decode(&header, data, zmq_msg_size(&frame));
    /* Only a header that decoded has a payload length that can be trusted. */
    bool header_ok = status == TS_OK;
    if (status == TS_OK && header.request_id != heartbeat->in_flight_id) {
        zmq_msg_close(&frame);
        return 0; /* not ours (cannot happen with one socket per request) */
    }
    if (status == TS_OK && (extra_frames || header.data_bytes != 0 ||
                            !(header.flags & TS_FLAG_REPLY) || header.type != TS_OP_HEARTBEAT))
        status = TS_ERR_BADMSG;
    if (status == TS_OK)
        status = header.status;

    heartbeat->in_flight_id = 0;
    if (status != TS_OK) {
        struct ts_error error;
        if (header_ok && header.status != TS_OK &&
            ts_error_decode(&error, data + TS_HEADER_BYTES, header.payload_bytes) == 0)
            snprintf(why, sizeof(why), "meta answered: %.*s", (int)error.text.len, error.text.ptr);
        else
            snprintf(why, sizeof(why), "%s", status_text(status));
        if (header_ok && header.status == TS_ERR_STALE) {
            log_error("meta refuses this datanode (data directory %s, identity %016" PRIx64
                      ", node.id %" PRIu32 "): %s",
                      heartbeat->data_dir, heartbeat->incarnation, heartbeat->node_id, why);
            heartbeat->refused = true;
        } else {
            heartbeat_failed(heartbeat, why);
        }
    } else if (ts_heartbeat_rep_decode(&rep, data + TS_HEADER_BYTES, header.payload_bytes) != 0 ||
               rep.garbage_count > TS_MAX_GARBAGE ||
               (uint64_t)rep.garbage_count * ts_tile_file_rec_bytes != rep.garbage.len ||
               rep.node_id == 0) {
        heartbeat_failed(heartbeat, "malformed reply from meta");
    } else {
        heartbeat_acknowledge(heartbeat, &rep, now_ms);
    }
    zmq_msg_close(&frame);
    return 1;
}

void heartbeat_tick(struct heartbeat *heartbeat, int64_t now_ms)
{
    if (heartbeat->in_flight_id) {
        int events = 0;
        size_t events_len = sizeof(events);
        /* ZMQ_EVENTS, not the poll result: ZeroMQ readiness is edge-triggered. */
        while (heartbeat->in_flight_id &&
               zmq_getsockopt(heartbeat->socket, ZMQ_EVENTS, &events, &events_len) == 0 &&
               (events & ZMQ_POLLIN)) {
            if (heartbeat_receive(heartbeat, now_ms) < 0)
                break;
        }
        if (heartbeat->in_flight_id && now_ms - heartbeat->sent_ms >= HEARTBEAT_TIMEOUT_MS) {
            char why[64];
            snprintf(why, sizeof(why), "no reply within %d ms (meta down?)", HEARTBEAT_TIMEOUT_MS);
            heartbeat_failed(heartbeat, why);
            /* Lazy Pirate: never reuse a socket that has a request in flight. */
            heartbeat_close_socket(heartbeat);
            heartbeat->due_ms = now_ms; /* retry now: a second has passed already */
        }
    }
    if (!heartbeat->in_flight_id && now_ms >= heartbeat->due_ms)
        heartbeat_send(heartbeat, now_ms);
}
