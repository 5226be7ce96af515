/*
 * @file puller.c
 * See puller.h. The jobs live in one fixed array of slots (queue_limit +
 * finished_limit) under one mutex; worker threads wait on a condition
 * variable for queued slots and take the oldest (by sequence number).
 *
 * Invariants (under lock):
 * - a slot is FREE, QUEUED, RUNNING, DONE or FAILED; only the loop thread
 *   frees a slot, and never a RUNNING one, so a worker's slot stays its own
 *   while it works without the lock;
 * - at most one slot per file (ino, tile, new_version) is not FREE, so no
 *   two workers ever stage the same tile (tilestore_install()'s rule);
 * - a DONE slot's file is counted in the tilestore exactly once: `counted`
 *   is set by puller_collect() when it does so.
 * - a file meta deletes as garbage while it is being pulled (a move aborted
 *   before its pull finished) must not survive the pull: the tilestore's
 *   delete hook (puller_on_delete) fails a queued job, marks a running one
 *   `deleted` (puller_collect() then counts and deletes its file), and
 *   forgets a finished one (counting it first if needed, since the delete
 *   that called the hook uncounts it).
 */
#include "puller.h"

#include "crc32c.h"
#include "log.h"
#include "proto.h"
#include "rpc.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define PULLER_ENDPOINT_MAX 256

enum puller_slot_state { SLOT_FREE = 0, SLOT_QUEUED, SLOT_RUNNING, SLOT_DONE, SLOT_FAILED };

struct puller_slot {
    enum puller_slot_state state;
    uint64_t ino;
    uint64_t tile;
    uint64_t version;
    uint64_t new_version;
    uint64_t max_bytes;
    char source[PULLER_ENDPOINT_MAX];
    uint64_t sequence; /* arrival order: workers take the lowest */
    /* Set by the worker when the job ends: */
    uint64_t bytes;
    uint32_t checksum;
    int status;
    char text[PULLER_TEXT_MAX];
    int64_t finished_ms;
    bool counted;   /* DONE and counted in the tilestore */
    bool installed; /* DONE with a file made (not a source without one) */
    bool deleted; /* RUNNING when meta's garbage deletion named its file */
};

struct puller {
    struct tilestore *store;
    struct puller_config config;
    pthread_mutex_t lock; /* protects everything below but stopping's reads */
    pthread_cond_t work;  /* signalled when a job is queued or the puller stops */
    struct puller_slot *slots;
    unsigned slot_count;
    uint64_t next_sequence;
    atomic_bool stopping; /* set under lock (for the waits), read anywhere */
    int event_fd;
    pthread_t *threads;
    unsigned threads_started;
    bool hooked; /* puller_on_delete is the store's delete hook */
    /* Meta's datanode addresses (NODE_LIST) as last asked, shared by the
     * threads: see puller_source_registered(). */
    pthread_mutex_t sources_lock; /* protects the four below */
    char (*sources)[PULLER_ENDPOINT_MAX];
    size_t source_count;
    int64_t sources_fetched_ms;
    bool sources_valid;
    atomic_uint_fast64_t node_list_calls;
};

/* A worker thread's connections, one rpc_client per source. */
struct puller_clients {
    struct {
        char endpoint[PULLER_ENDPOINT_MAX];
        struct rpc_client *client;
        uint64_t used; /* last use, in this thread's call count */
    } entries[PULLER_CLIENTS_PER_THREAD];
    uint64_t calls;
    struct rpc_client *meta; /* to config.meta_endpoint, made on first use */
};

void puller_config_default(struct puller_config *config)
{
    config->threads = PULLER_THREADS;
    config->queue_limit = PULLER_QUEUE_LIMIT;
    config->finished_limit = PULLER_FINISHED_LIMIT;
    config->finished_keep_ms = PULLER_FINISHED_KEEP_MS;
    config->ping_timeout_ms = PULLER_PING_TIMEOUT_MS;
    config->read_timeout_ms = PULLER_READ_TIMEOUT_MS;
    config->meta_endpoint[0] = '\0';
}

/* ---- worker side ------------------------------------------------------ */

/* The client for endpoint, connecting (and evicting the least used) as needed. */
static struct rpc_client *puller_client(struct puller_clients *clients, const char *endpoint)
{
    unsigned victim = 0;

    clients->calls++;
    for (unsigned i = 0; i < PULLER_CLIENTS_PER_THREAD; i++) {
        if (clients->entries[i].client && strcmp(clients->entries[i].endpoint, endpoint) == 0) {
            clients->entries[i].used = clients->calls;
            return clients->entries[i].client;
        }
        if (!clients->entries[i].client)
            victim = i;
        else if (clients->entries[victim].client &&
                 clients->entries[i].used < clients->entries[victim].used)
            victim = i;
    }
    rpc_client_destroy(&clients->entries[victim].client);
    clients->entries[victim].client = rpc_client_new(endpoint);
    if (!clients->entries[victim].client)
        return NULL;
    snprintf(clients->entries[victim].endpoint, sizeof(clients->entries[victim].endpoint), "%s",
             endpoint);
    clients->entries[victim].used = clients->calls;
    return clients->entries[victim].client;
}

static void puller_clients_fini(struct puller_clients *clients)
{
    for (unsigned i = 0; i < PULLER_CLIENTS_PER_THREAD; i++)
        rpc_client_destroy(&clients->entries[i].client);
    rpc_client_destroy(&clients->meta);
}

/* Whether source is in the cached list; caller holds sources_lock. */
static bool puller_sources_contain(const struct puller *puller, const char *source)
{
    for (size_t i = 0; i < puller->source_count; i++) {
        if (strcmp(puller->sources[i], source) == 0)
            return true;
    }
    return false;
}

/*
 * Asks meta for its node list and makes it the cache. TS_OK, or why meta
 * could not say (text in why; the cache is left as it was).
 */
static int puller_sources_fetch(struct puller *puller, struct puller_clients *clients, char *why,
                                size_t cap)
{
    struct rpc_reply reply;
    struct ts_node_list_rep list;
    struct ts_cursor cursor;

    if (!clients->meta)
        clients->meta = rpc_client_new(puller->config.meta_endpoint);
    if (!clients->meta) {
        snprintf(why, cap, "cannot reach meta at %.80s", puller->config.meta_endpoint);
        return TS_ERR_IO;
    }
    atomic_fetch_add(&puller->node_list_calls, 1);
    int status = rpc_client_call(clients->meta, TS_OP_NODE_LIST, NULL, 0, NULL, 0,
                                 puller->config.ping_timeout_ms, &reply);
    if (status == TS_OK && ts_node_list_rep_decode(&list, reply.payload, reply.payload_len) != 0)
        status = TS_ERR_BADMSG;
    char(*addresses)[PULLER_ENDPOINT_MAX] = NULL;
    size_t count = 0;
    if (status == TS_OK && list.count > 0) {
        if (!ts_records_fit(list.count, list.nodes.len, ts_node_list_rec_bytes))
            status = TS_ERR_BADMSG;
        else if (!(addresses = calloc(list.count, sizeof(*addresses))))
            status = TS_ERR_NOMEM;
    }
    if (status == TS_OK) {
        ts_cursor_init(&cursor, list.nodes.ptr, list.nodes.len);
        for (uint32_t i = 0; i < list.count; i++) {
            struct ts_node_list_rec node;
            if (ts_node_list_rec_read(&cursor, &node) != 0) {
                status = TS_ERR_BADMSG;
                break;
            }
            /* An address too long to be a pull's source cannot match one: left out. */
            if (ts_str_copy(node.address, addresses[count], sizeof(addresses[count])) == 0)
                count++;
        }
    }
    rpc_reply_release(&reply);
    if (status != TS_OK) {
        free(addresses);
        snprintf(why, cap, "meta's node list: %s", status_text(status));
        return status;
    }
    pthread_mutex_lock(&puller->sources_lock);
    free(puller->sources);
    puller->sources = addresses;
    puller->source_count = count;
    puller->sources_fetched_ms = util_monotonic_ms();
    puller->sources_valid = true;
    pthread_mutex_unlock(&puller->sources_lock);
    return TS_OK;
}

/*
 * Whether source is the address of a datanode meta lists (NODE_LIST): a
 * pull copies only from a member of the cluster, never from whatever
 * endpoint a request names. TS_OK, TS_ERR_PERM when it is not one, or
 * why meta could not say (text in why).
 *
 * The list is cached for PULLER_SOURCES_FRESH_MS, so a repair of thousands
 * of tiles asks meta a handful of times, not once a tile. A source not in
 * the cache (a datanode registered since, or no datanode at all) makes it
 * be asked again at once: a new datanode is never refused for a stale
 * cache, and a removed one stays a source for at most
 * PULLER_SOURCES_FRESH_MS (its replicas are being made elsewhere anyway).
 */
static int puller_source_registered(struct puller *puller, struct puller_clients *clients,
                                    const char *source, char *why, size_t cap)
{
    pthread_mutex_lock(&puller->sources_lock);
    bool fresh = puller->sources_valid &&
                 util_monotonic_ms() - puller->sources_fetched_ms < PULLER_SOURCES_FRESH_MS;
    bool found = fresh && puller_sources_contain(puller, source);
    pthread_mutex_unlock(&puller->sources_lock);
    if (found)
        return TS_OK;
    int status = puller_sources_fetch(puller, clients, why, cap);
    if (status != TS_OK)
        return status;
    pthread_mutex_lock(&puller->sources_lock);
    found = puller_sources_contain(puller, source);
    pthread_mutex_unlock(&puller->sources_lock);
    if (found)
        return TS_OK;
    snprintf(why, cap, "%.80s is not the address of a datanode meta knows", source);
    return TS_ERR_PERM;
}

uint64_t puller_node_list_calls(struct puller *puller)
{
    return atomic_load(&puller->node_list_calls);
}

/* Sets a failure outcome on the (worker-owned) copy of a job. */
__attribute__((format(printf, 3, 4))) static void puller_fail(struct puller_slot *job, int status,
                                                              const char *format, ...)
{
    va_list args;
    job->status = status;
    va_start(args, format);
    vsnprintf(job->text, sizeof(job->text), format, args);
    va_end(args);
}

/* Does one pull; fills job's outcome (status TS_OK, bytes, checksum, or a failure). */
static void puller_run(struct puller *puller, struct puller_clients *clients,
                       struct puller_slot *job)
{
    char file[80];
    char source_text[128];
    uint8_t payload[64];
    struct rpc_reply reply;
    struct ts_tile_read_req read_req = {
        .ino = job->ino,
        .tile = job->tile,
        .version = job->version,
        .offset = 0,
        /* The whole tile whatever its size: the source sends only what its file holds. */
        .length = TS_MAX_DATA_BYTES};
    struct rpc_client *client;
    int len, status;

    snprintf(file, sizeof(file), "%" PRIu64 ".%" PRIu64 ".%" PRIu64, job->ino, job->tile,
             job->version);
    job->status = TS_OK;
    job->installed = false;
    if (puller->config.meta_endpoint[0] != '\0') {
        status = puller_source_registered(puller, clients, job->source, source_text,
                                          sizeof(source_text));
        if (status == TS_ERR_PERM)
            log_warn("refused to pull tile %s: %s", file, source_text);
        if (status != TS_OK) {
            puller_fail(job, status, "source refused: %s", source_text);
            return;
        }
    }
    client = puller_client(clients, job->source);
    if (!client) {
        puller_fail(job, TS_ERR_INVAL, "cannot connect to source %s: not a usable endpoint",
                    job->source);
        return;
    }
    status = rpc_client_call(client, TS_OP_PING, NULL, 0, NULL, 0, puller->config.ping_timeout_ms,
                             &reply);
    rpc_reply_release(&reply);
    if (status == TS_ERR_TIMEDOUT) {
        puller_fail(job, status,
                    "source %s did not answer within %d ms (datanode down or unreachable?)",
                    job->source, puller->config.ping_timeout_ms);
        return;
    }
    if (status != TS_OK) {
        puller_fail(job, status, "source %s failed a PING: %s", job->source, status_text(status));
        return;
    }
    len = ts_tile_read_req_encode(&read_req, payload, sizeof(payload));
    if (len < 0) {
        puller_fail(job, TS_ERR_INTERNAL, "cannot encode TILE_READ");
        return;
    }
    status = rpc_client_call(client, TS_OP_TILE_READ, payload, (size_t)len, NULL, 0,
                             puller->config.read_timeout_ms, &reply);
    if (status == TS_ERR_NOENT) {
        /*
         * The source has no file for it: a tile placed but never written,
         * or one the source lost. Either way nothing is stored here: an
         * empty file would read as a hole, and a lost tile must stay an
         * error. The tile moves without bytes (0 bytes, checksum 0, as the
         * source's fence reports a missing file), and meta's record says
         * which it is (TS_TILE_STORED).
         */
        rpc_reply_release(&reply);
        log_warn("pull of tile %s: source %s has no file for it; storing nothing (a tile never "
                 "written moves as a hole; one written stays lost, and reads of it fail)",
                 file, job->source);
        job->installed = false;
        job->bytes = 0;
        job->checksum = 0;
        return;
    }
    if (status != TS_OK) {
        rpc_reply_error_text(&reply, source_text, sizeof(source_text));
        rpc_reply_release(&reply);
        if (status == TS_ERR_TIMEDOUT)
            puller_fail(job, status, "source %s did not send tile %s within %d ms", job->source,
                        file, puller->config.read_timeout_ms);
        else
            puller_fail(job, status, "source %s could not read tile %s: %s", job->source, file,
                        source_text[0] ? source_text : status_text(status));
        return;
    }
    const uint8_t *data = reply.data;
    size_t bytes = reply.data ? reply.data_len : 0;
    /* The source checked its blocks before sending (a corrupt source answers
     * TS_ERR_CORRUPT above); what arrived must be what it checked. */
    struct ts_tile_read_rep sent;
    uint32_t arrived = crc32c(0, data, bytes);
    if (ts_tile_read_rep_decode(&sent, reply.payload, reply.payload_len) != 0 ||
        sent.crc != arrived) {
        rpc_reply_release(&reply);
        puller_fail(job, TS_ERR_CORRUPT,
                    "tile %s from %s arrived with CRC-32C %08" PRIx32
                    ", not the one its source sent; not stored",
                    file, job->source, arrived);
        return;
    }
    if (bytes > job->max_bytes) {
        rpc_reply_release(&reply);
        puller_fail(job, TS_ERR_NOSPC,
                    "tile %s from %s has %zu bytes; this datanode has room for %" PRIu64, file,
                    job->source, bytes, job->max_bytes);
        return;
    }
    int rc = tilestore_install(puller->store, job->ino, job->tile, job->new_version, data, bytes);
    if (rc == 0)
        job->checksum = arrived;
    rpc_reply_release(&reply);
    if (rc == -EEXIST) {
        puller_fail(job, TS_ERR_EXIST,
                    "tile file %" PRIu64 ".%" PRIu64 ".%" PRIu64
                    " appeared here while it was pulled (written meanwhile?); not overwritten",
                    job->ino, job->tile, job->new_version);
        return;
    }
    if (rc != 0) {
        puller_fail(job, status_from_errno(rc), "storing tile %s pulled from %s failed: %s", file,
                    job->source, strerror(-rc));
        return;
    }
    job->bytes = bytes;
    job->installed = true;
}

/* The oldest queued slot, or NULL (under lock). */
static struct puller_slot *puller_next_queued(struct puller *puller)
{
    struct puller_slot *oldest = NULL;
    for (unsigned i = 0; i < puller->slot_count; i++) {
        struct puller_slot *slot = &puller->slots[i];
        if (slot->state == SLOT_QUEUED && (!oldest || slot->sequence < oldest->sequence))
            oldest = slot;
    }
    return oldest;
}

static void *puller_thread(void *arg)
{
    struct puller *puller = arg;
    struct puller_clients clients;
    const uint64_t one = 1;

    memset(&clients, 0, sizeof(clients));
    pthread_mutex_lock(&puller->lock);
    for (;;) {
        struct puller_slot *slot = NULL;
        while (!puller->stopping && !(slot = puller_next_queued(puller)))
            pthread_cond_wait(&puller->work, &puller->lock);
        if (puller->stopping)
            break;
        slot->state = SLOT_RUNNING;
        struct puller_slot job = *slot;
        pthread_mutex_unlock(&puller->lock);

        int64_t started_ms = util_monotonic_ms();
        puller_run(puller, &clients, &job);
        if (job.status != TS_OK && atomic_load(&puller->stopping))
            log_info("pull of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64
                     " abandoned: the datanode is stopping",
                     job.ino, job.tile, job.version);
        else if (job.status == TS_OK)
            log_info("pulled tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 " from %s as version %" PRIu64
                     ": %" PRIu64 " bytes, crc32c %08" PRIx32 ", %" PRId64 " ms",
                     job.ino, job.tile, job.version, job.source, job.new_version, job.bytes,
                     job.checksum, util_monotonic_ms() - started_ms);
        else
            log_warn("pull of tile %" PRIu64 ".%" PRIu64 ".%" PRIu64 " failed: %s", job.ino,
                     job.tile, job.version, job.text);

        pthread_mutex_lock(&puller->lock);
        slot->bytes = job.bytes;
        slot->checksum = job.checksum;
        slot->status = job.status;
        memcpy(slot->text, job.text, sizeof(slot->text));
        slot->finished_ms = util_monotonic_ms();
        slot->counted = false;
        slot->installed = job.installed;
        slot->state = job.status == TS_OK ? SLOT_DONE : SLOT_FAILED;
        if (write(puller->event_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            log_warn("cannot signal a finished pull: %s", strerror(errno));
    }
    pthread_mutex_unlock(&puller->lock);
    puller_clients_fini(&clients);
    return NULL;
}

/* ---- loop side -------------------------------------------------------- */

static void puller_on_delete(void *arg, uint64_t ino, uint64_t tile, uint64_t version);

int puller_new(struct tilestore *store, const struct puller_config *config, struct puller **pullerp)
{
    struct puller *puller;
    int rc;

    *pullerp = NULL;
    puller = calloc(1, sizeof(*puller));
    if (!puller)
        return -ENOMEM;
    puller->store = store;
    if (config)
        puller->config = *config;
    else
        puller_config_default(&puller->config);
    puller->event_fd = -1;
    pthread_mutex_init(&puller->lock, NULL);
    pthread_mutex_init(&puller->sources_lock, NULL);
    pthread_cond_init(&puller->work, NULL);
    puller->slot_count = puller->config.queue_limit + puller->config.finished_limit;
    puller->slots = calloc(puller->slot_count ? puller->slot_count : 1, sizeof(*puller->slots));
    puller->threads =
        calloc(puller->config.threads ? puller->config.threads : 1, sizeof(*puller->threads));
    if (!puller->slots || !puller->threads) {
        rc = -ENOMEM;
        goto fail;
    }
    puller->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (puller->event_fd < 0) {
        rc = -errno;
        goto fail;
    }
    for (unsigned i = 0; i < puller->config.threads; i++) {
        rc = pthread_create(&puller->threads[i], NULL, puller_thread, puller);
        if (rc != 0) {
            rc = -rc;
            goto fail;
        }
        puller->threads_started++;
    }
    tilestore_set_delete_hook(store, puller_on_delete, puller);
    puller->hooked = true;
    *pullerp = puller;
    return 0;
fail:
    puller_destroy(&puller);
    return rc;
}

void puller_destroy(struct puller **pullerp)
{
    if (!pullerp || !*pullerp)
        return;
    struct puller *puller = *pullerp;
    pthread_mutex_lock(&puller->lock);
    atomic_store(&puller->stopping, true);
    pthread_cond_broadcast(&puller->work);
    pthread_mutex_unlock(&puller->lock);
    for (unsigned i = 0; i < puller->threads_started; i++)
        pthread_join(puller->threads[i], NULL);
    if (puller->hooked)
        tilestore_set_delete_hook(puller->store, NULL, NULL);
    if (puller->event_fd >= 0)
        close(puller->event_fd);
    pthread_cond_destroy(&puller->work);
    pthread_mutex_destroy(&puller->lock);
    pthread_mutex_destroy(&puller->sources_lock);
    free(puller->sources);
    free(puller->threads);
    free(puller->slots);
    free(puller);
    *pullerp = NULL;
}

int puller_event_fd(const struct puller *puller)
{
    return puller->event_fd;
}

static bool puller_slot_finished(const struct puller_slot *slot)
{
    return slot->state == SLOT_DONE || slot->state == SLOT_FAILED;
}

/* Forgets finished slots past their time, then the oldest beyond the limit (under lock). */
static void puller_forget_old(struct puller *puller, int64_t now_ms)
{
    unsigned finished = 0;
    for (unsigned i = 0; i < puller->slot_count; i++) {
        struct puller_slot *slot = &puller->slots[i];
        if (!puller_slot_finished(slot) || (slot->state == SLOT_DONE && !slot->counted))
            continue;
        if (now_ms - slot->finished_ms >= puller->config.finished_keep_ms)
            slot->state = SLOT_FREE;
        else
            finished++;
    }
    while (finished > puller->config.finished_limit) {
        struct puller_slot *oldest = NULL;
        for (unsigned i = 0; i < puller->slot_count; i++) {
            struct puller_slot *slot = &puller->slots[i];
            if (puller_slot_finished(slot) && (slot->state != SLOT_DONE || slot->counted) &&
                (!oldest || slot->finished_ms < oldest->finished_ms))
                oldest = slot;
        }
        if (!oldest)
            break;
        oldest->state = SLOT_FREE;
        finished--;
    }
}

/* The slot making job's file, or NULL (under lock). */
static struct puller_slot *puller_find(struct puller *puller, const struct puller_job *job)
{
    for (unsigned i = 0; i < puller->slot_count; i++) {
        struct puller_slot *slot = &puller->slots[i];
        if (slot->state != SLOT_FREE && slot->ino == job->ino && slot->tile == job->tile &&
            slot->new_version == job->new_version)
            return slot;
    }
    return NULL;
}

void puller_collect(struct puller *puller)
{
    uint64_t events;

    /* Drained first: a job that ends after this read signals again. */
    while (read(puller->event_fd, &events, sizeof(events)) > 0)
        ;
    for (;;) {
        struct puller_slot garbage = {.state = SLOT_FREE};
        pthread_mutex_lock(&puller->lock);
        for (unsigned i = 0; i < puller->slot_count; i++) {
            struct puller_slot *slot = &puller->slots[i];
            if (slot->state != SLOT_DONE || slot->counted)
                continue;
            if (slot->installed)
                tilestore_count_installed(puller->store, slot->ino, slot->tile, slot->new_version,
                                          slot->bytes);
            slot->counted = true;
            if (slot->deleted) {
                /* Garbage before it was finished: the file goes, the job fails. */
                garbage = *slot;
                slot->state = SLOT_FAILED;
                slot->status = TS_ERR_NOENT;
                snprintf(slot->text, sizeof(slot->text),
                         "tile file %" PRIu64 ".%" PRIu64 ".%" PRIu64
                         " was deleted by meta (garbage) while it was pulled",
                         slot->ino, slot->tile, slot->new_version);
                break;
            }
        }
        if (garbage.state == SLOT_FREE)
            puller_forget_old(puller, util_monotonic_ms());
        pthread_mutex_unlock(&puller->lock);
        if (garbage.state == SLOT_FREE)
            break;
        /* Outside the lock: the delete calls puller_on_delete(). */
        int rc = tilestore_delete(puller->store, garbage.ino, garbage.tile, garbage.new_version);
        if (rc != 0)
            log_warn("cannot delete pulled tile %" PRIu64 ".%" PRIu64 ".%" PRIu64
                     ", garbage since: %s",
                     garbage.ino, garbage.tile, garbage.new_version, strerror(-rc));
    }
}

/* The tilestore's delete hook (loop thread): see the invariants above. */
static void puller_on_delete(void *arg, uint64_t ino, uint64_t tile, uint64_t version)
{
    struct puller *puller = arg;
    struct puller_job job = {.ino = ino, .tile = tile, .new_version = version};

    pthread_mutex_lock(&puller->lock);
    struct puller_slot *slot = puller_find(puller, &job);
    if (slot) {
        switch (slot->state) {
        case SLOT_QUEUED:
            slot->state = SLOT_FAILED;
            slot->status = TS_ERR_NOENT;
            slot->finished_ms = util_monotonic_ms();
            snprintf(slot->text, sizeof(slot->text),
                     "tile file %" PRIu64 ".%" PRIu64 ".%" PRIu64
                     " was deleted by meta (garbage) before it was pulled",
                     ino, tile, version);
            break;
        case SLOT_RUNNING: slot->deleted = true; break;
        case SLOT_DONE:
            if (!slot->counted && slot->installed)
                tilestore_count_installed(puller->store, slot->ino, slot->tile, slot->new_version,
                                          slot->bytes);
            slot->state = SLOT_FREE;
            break;
        case SLOT_FREE:
        case SLOT_FAILED: break;
        }
    }
    pthread_mutex_unlock(&puller->lock);
}

void puller_query(struct puller *puller, const struct puller_job *job, struct puller_result *result)
{
    struct puller_slot *slot;

    memset(result, 0, sizeof(*result));
    puller_collect(puller);
    pthread_mutex_lock(&puller->lock);
    slot = puller_find(puller, job);
    if (!slot) {
        result->state = PULLER_UNKNOWN;
    } else if (slot->version != job->version) {
        result->state = PULLER_FAILED;
        result->status = TS_ERR_BUSY;
        snprintf(result->text, sizeof(result->text),
                 "tile file %" PRIu64 ".%" PRIu64 ".%" PRIu64
                 " is pulled here from version %" PRIu64 " (not %" PRIu64 ") at %.80s",
                 slot->ino, slot->tile, slot->new_version, slot->version, job->version,
                 slot->source);
    } else if (slot->state == SLOT_DONE) {
        result->state = PULLER_DONE;
        result->bytes = slot->bytes;
        result->checksum = slot->checksum;
    } else if (slot->state == SLOT_FAILED) {
        result->state = PULLER_FAILED;
        result->status = slot->status;
        memcpy(result->text, slot->text, sizeof(result->text));
        slot->state = SLOT_FREE; /* reported once; asking again retries */
    } else {
        result->state = PULLER_RUNNING;
    }
    pthread_mutex_unlock(&puller->lock);
}

/* Jobs queued or running (under lock). */
static unsigned puller_count_active(const struct puller *puller)
{
    unsigned active = 0;
    for (unsigned i = 0; i < puller->slot_count; i++) {
        if (puller->slots[i].state == SLOT_QUEUED || puller->slots[i].state == SLOT_RUNNING)
            active++;
    }
    return active;
}

unsigned puller_active(struct puller *puller)
{
    pthread_mutex_lock(&puller->lock);
    unsigned active = puller_count_active(puller);
    pthread_mutex_unlock(&puller->lock);
    return active;
}

int puller_start(struct puller *puller, const struct puller_job *job)
{
    struct puller_slot *free_slot = NULL;
    int rc = 0;

    pthread_mutex_lock(&puller->lock);
    if (puller_find(puller, job) || strlen(job->source) >= PULLER_ENDPOINT_MAX) {
        rc = -EINVAL;
        goto out;
    }
    if (puller_count_active(puller) >= puller->config.queue_limit) {
        rc = -EBUSY;
        goto out;
    }
    for (unsigned i = 0; i < puller->slot_count && !free_slot; i++) {
        if (puller->slots[i].state == SLOT_FREE)
            free_slot = &puller->slots[i];
    }
    if (!free_slot) {
        /* Every other slot holds a finished job not yet collected; make room. */
        for (unsigned i = 0; i < puller->slot_count; i++) {
            struct puller_slot *slot = &puller->slots[i];
            if (slot->state == SLOT_FAILED || (slot->state == SLOT_DONE && slot->counted)) {
                if (!free_slot || slot->finished_ms < free_slot->finished_ms)
                    free_slot = slot;
            }
        }
        if (!free_slot) {
            rc = -EBUSY;
            goto out;
        }
    }
    memset(free_slot, 0, sizeof(*free_slot));
    free_slot->state = SLOT_QUEUED;
    free_slot->ino = job->ino;
    free_slot->tile = job->tile;
    free_slot->version = job->version;
    free_slot->new_version = job->new_version;
    free_slot->max_bytes = job->max_bytes;
    snprintf(free_slot->source, sizeof(free_slot->source), "%s", job->source);
    free_slot->sequence = puller->next_sequence++;
    pthread_cond_signal(&puller->work);
out:
    pthread_mutex_unlock(&puller->lock);
    return rc;
}
