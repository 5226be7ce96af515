/*
 * @file writebehind.c
 * See writebehind.h and datapath_write in datapath.h.
 *
 * Writes (write-behind): a write fills the buffer of its tile (a linear file
 * keeps one or two, an array file up to MAX_WRITE_BUFFERS, since a
 * row-major writer fills many tiles at once); a buffer holds one contiguous
 * run of its tile. When it is full, when a write does not touch its run, or
 * when its slot is needed for another tile, it becomes a write job for the
 * worker pool. Up to
 * max_writes_in_flight jobs per file run at once, to all the datanodes in
 * parallel; each job sends its bytes to every holder of its tile at once
 * (fanned out from the mount over replica_workers), and a holder that
 * fails while another takes them leaves the tile's replica set
 * (write_replicated); buffers become jobs in the order they were taken for writing out
 * (whichever thread took them: a writer, a reader settling a tile, flush) and
 * two jobs for the same tile never run together, so writes to one tile land
 * in order. The buffer is handed to ZeroMQ without a copy and its
 * memory returns to the write budget when ZeroMQ has sent it. flush and
 * fsync wait for the file's jobs and report the first error. A writer that
 * finds the budget spent sends its file's other buffers first, then waits
 * while the reclaimer thread sends the idle ones of other open files: files
 * written a little at a time hold partial tiles until close, and enough of
 * them open at once would otherwise hold the whole budget for good.
 */
#include "writebehind.h"

#include "attrwriteback.h"
#include "crc32c.h"

#include "log.h"
#include "proto.h"
#include "tilecache.h"
#include "tilelocation.h"
#include "tileplace.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int dirty_remember(struct open_file *file, uint32_t node, uint64_t tile, uint64_t version)
{
    /* A tile written again is likely among the last entries, one per holder. */
    for (size_t back = 1; back <= TS_MAX_HOLDERS && back <= file->dirty_count; back++) {
        const struct dirty_tile *recent = &file->dirty[file->dirty_count - back];
        if (recent->node == node && recent->tile == tile && recent->version == version)
            return 0;
    }
    if (file->dirty_count == file->dirty_cap) {
        size_t new_cap = file->dirty_cap ? file->dirty_cap * 2 : 16;
        struct dirty_tile *grown = realloc(file->dirty, new_cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        file->dirty = grown;
        file->dirty_cap = new_cap;
    }
    file->dirty[file->dirty_count++] = (struct dirty_tile){node, tile, version};
    return 0;
}

static void record_error(struct open_file *file, int error)
{
    if (error != 0 && file->error == 0)
        file->error = error;
}

/*
 * One tile write. The buffer is handed to ZeroMQ without a copy, once per
 * try; the job and its buffer go when the last of the running job and the
 * sends ZeroMQ still holds lets go (refs), and the buffer's memory then
 * returns to the write budget.
 */
struct write_job {
    struct worker_job job;
    struct datapath *datapath;
    struct open_file *file;
    struct tile_location location;
    uint64_t tile;
    uint32_t offset;
    uint32_t length;
    uint8_t *buffer;         /* a whole tile buffer; [offset, offset + length) is sent */
    uint32_t buffer_bytes;   /* its size, from the write budget */
    uint64_t profiled_bytes; /* bytes of profiled requests in it (for local_bytes) */
    uint32_t crc;            /* CRC-32C of the bytes sent, once for every holder */
    atomic_int refs;
};

static void write_job_unref(struct write_job *job)
{
    if (atomic_fetch_sub(&job->refs, 1) != 1)
        return;
    /* ZeroMQ may let go after the file is gone: only the job is used here. */
    reqmem_free(job->buffer);
    budget_give(&job->datapath->write_budget, job->buffer_bytes);
    free(job);
}

/* ZeroMQ is done with one send of a buffer. */
static void write_buffer_free(void *data, void *hint)
{
    (void)data;
    write_job_unref(hint);
}

/* One more send of the buffer (rpc_data_owner.hold_fn): write_send's
 * caller holds the job throughout, so the buffer is still there. */
static void write_buffer_hold(void *hint)
{
    struct write_job *job = hint;
    atomic_fetch_add(&job->refs, 1);
}

/* Sends the job's bytes to one holder of the tile. Returns a status. */
static int write_send(struct write_job *job, const struct tile_holder *holder)
{
    uint8_t payload[128];
    struct rpc_reply reply;
    struct rpc_data_owner owner = {write_buffer_free, job, write_buffer_hold};
    /* The bytes' CRC-32C where they leave this machine's memory: any
     * change on the way to the datanode's file is refused there. */
    struct ts_tile_write_req request = {.ino = job->file->ino,
                                        .tile = job->tile,
                                        .version = holder->version,
                                        .offset = job->offset,
                                        .crc = job->crc,
                                        .token_expiry = holder->token_expiry,
                                        .token = {.ptr = (const char *)holder->token,
                                                  .len = holder->token_expiry ? TILETOKEN_MAC_BYTES : 0}};
    int len = ts_tile_write_req_encode(&request, payload, sizeof(payload));

    if (job->datapath->streams) {
        int32_t status = TS_OK;
        if (tilestream_write(job->datapath->streams, holder->node, &request,
                             job->buffer + job->offset, job->length, &status) == 0 &&
            status == TS_OK)
            return TS_OK;
        /* Anything else over ZeroMQ, whose answer says what it is. */
    }
    atomic_fetch_add(&job->refs, 1); /* ZeroMQ's, dropped by write_buffer_free */
    int status =
        nodedir_call_owned(job->datapath->nodes, holder->node, TS_OP_TILE_WRITE, payload,
                           (size_t)len, job->buffer + job->offset, job->length, &owner, &reply);
    rpc_reply_release(&reply);
    return status;
}

/* The sends of one write job to the holders of its tile, all at once. */
struct fanout {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int pending; /* sends still running on replica_workers */
};

/* One holder's send: the first runs on the job's own thread, the others on replica_workers. */
struct holder_send {
    struct worker_job job;
    struct write_job *write;
    struct fanout *fanout;
    struct tile_holder holder;
    int status;
};

static void holder_send_run(struct worker_job *worker_job)
{
    struct holder_send *send = (struct holder_send *)worker_job;
    struct fanout *fanout = send->fanout;
    send->status = write_send(send->write, &send->holder);
    pthread_mutex_lock(&fanout->lock);
    if (--fanout->pending == 0)
        pthread_cond_signal(&fanout->done);
    pthread_mutex_unlock(&fanout->lock);
}

/*
 * Which holders of *location a write goes to, into sends[] (their count
 * returned), and which it skips, into skipped[] (*skipped_count): the
 * holders meta counts as down are skipped unless no holder is up (then
 * all are tried: meta may be wrong, and a write that reaches none fails).
 */
static size_t write_targets(const struct tile_location *location, struct holder_send *sends,
                            struct tile_holder *skipped, size_t *skipped_count)
{
    size_t count = 0;
    size_t up = 0;
    *skipped_count = 0;
    for (uint32_t i = 0; i < location->holder_count; i++)
        up += location->holders[i].state != TS_REPLICA_DOWN;
    for (uint32_t i = 0; i < location->holder_count; i++) {
        if (up > 0 && location->holders[i].state == TS_REPLICA_DOWN)
            skipped[(*skipped_count)++] = location->holders[i];
        else
            sends[count++].holder = location->holders[i];
    }
    if (location->holder_count == 0 && location->node != 0) /* a record without holders */
        sends[count++].holder = (struct tile_holder){
            .node = location->node, .state = TS_REPLICA_UP, .version = location->version};
    return count;
}

/*
 * Sends the job's bytes to every holder in sends[0..count) in parallel (the
 * first from this thread) and waits for all of them: a tile is as slow as
 * its slowest holder, not the sum of them.
 */
static void write_fan_out(struct write_job *job, struct holder_send *sends, size_t count)
{
    struct fanout fanout = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    if (count == 0)
        return;
    fanout.pending = (int)count - 1;
    for (size_t i = 1; i < count; i++) {
        sends[i].job.run = holder_send_run;
        sends[i].write = job;
        sends[i].fanout = &fanout;
        workers_submit(job->datapath->replica_workers, &sends[i].job);
    }
    sends[0].status = write_send(job, &sends[0].holder);
    pthread_mutex_lock(&fanout.lock);
    while (fanout.pending > 0)
        pthread_cond_wait(&fanout.done, &fanout.lock);
    pthread_mutex_unlock(&fanout.lock);
    pthread_mutex_destroy(&fanout.lock);
    pthread_cond_destroy(&fanout.done);
}

static bool tile_is_being_written(const struct open_file *file, uint64_t tile)
{
    for (int i = 0; i < file->writes_in_flight; i++) {
        if (file->writing[i] == tile)
            return true;
    }
    return false;
}

/*
 * The job's write on every holder (DESIGN.md "Replicas and integrity").
 * STALE from any holder: the tile moved; the whole write is redone on the
 * set meta names now. Another failure of some holders while others took
 * the bytes: each failed (or skipped, down) holder is dropped from the set
 * (REPLICA_DROP) and the write succeeds. No holder took them, or a failed
 * holder could not be dropped (it would serve old bytes): the write fails.
 * written[] (*written_count) gets the holders that have the bytes.
 */
static int write_replicated(struct write_job *job, struct tile_location *location,
                            struct tile_holder *written, size_t *written_count, int *status)
{
    struct holder_send sends[TS_MAX_HOLDERS + 1];
    struct tile_holder skipped[TS_MAX_HOLDERS];
    struct stale_retry retry = {0};
    struct datapath *datapath = job->datapath;
    uint64_t ino = job->file->ino;

    for (;;) {
        size_t skipped_count;
        size_t count = write_targets(location, sends, skipped, &skipped_count);
        bool stale = false;
        int failure = TS_OK;
        write_fan_out(job, sends, count);
        *written_count = 0;
        for (size_t i = 0; i < count; i++) {
            if (sends[i].status == TS_OK)
                written[(*written_count)++] = sends[i].holder;
            else if (sends[i].status == TS_ERR_STALE)
                stale = true;
            else if (failure == TS_OK)
                failure = sends[i].status;
        }
        if (stale) {
            int error =
                tilelocation_relocate(datapath, ino, job->tile, TILE_ACCESS_WRITE, &retry, location);
            if (error != 0) {
                *status = TS_ERR_STALE;
                return error;
            }
            continue;
        }
        if (*written_count == 0) {
            *status = failure;
            return errno_of_status(failure);
        }
        *status = TS_OK;
        for (size_t i = 0; i < count; i++) {
            if (sends[i].status == TS_OK)
                continue;
            log_error("write of inode %llu tile %llu to datanode %u failed: %s; going on with "
                      "the tile's other holders",
                      (unsigned long long)ino, (unsigned long long)job->tile,
                      sends[i].holder.node, status_text(sends[i].status));
            int error = tilelocation_drop_holder(datapath, ino, job->tile, &sends[i].holder,
                                                 sends[i].status, location);
            if (error != 0)
                return error;
        }
        for (size_t i = 0; i < skipped_count; i++) {
            int error = tilelocation_drop_holder(datapath, ino, job->tile, &skipped[i],
                                                 TS_ERR_TIMEDOUT, location);
            if (error != 0)
                return error;
        }
        return 0;
    }
}

static void write_job_run(struct worker_job *worker_job)
{
    struct write_job *job = (struct write_job *)worker_job;
    struct open_file *file = job->file;
    struct datapath *datapath = job->datapath;
    uint64_t ino = file->ino;
    uint64_t tile = job->tile;
    uint64_t profiled_bytes = job->profiled_bytes;
    uint32_t counted_node = job->location.node; /* its tileplace load, taken at write-out */
    struct tile_location planned = job->location; /* as the file's cache had it */
    struct tile_location location = job->location;
    struct tile_holder written[TS_MAX_HOLDERS + 1];
    size_t written_count = 0;
    int status;

    job->crc = crc32c(0, job->buffer + job->offset, job->length);
    int error = write_replicated(job, &location, written, &written_count, &status);
    tileplace_load_change(datapath, counted_node, -1);
    write_job_unref(job); /* before file->lock: see the top */
    if (error != 0 && status != TS_OK && status != TS_ERR_STALE)
        log_error("write of inode %llu tile %llu failed on every holder: %s",
                  (unsigned long long)ino, (unsigned long long)tile, status_text(status));
    bool local = false;
    for (size_t i = 0; error == 0 && profiled_bytes > 0 && datapath->profile && i < written_count;
         i++)
        local = local || nodedir_is_local(datapath->nodes, written[i].node);

    pthread_mutex_lock(&file->lock);
    for (int i = 0; i < file->writes_in_flight; i++) {
        if (file->writing[i] == tile) {
            file->writing[i] = file->writing[--file->writes_in_flight];
            break;
        }
    }
    for (size_t i = 0; error == 0 && i < written_count; i++)
        error = dirty_remember(file, written[i].node, tile, written[i].version);
    tilelocation_replace(file, tile, &planned, &location);
    record_error(file, error);
    pthread_cond_broadcast(&file->changed);
    pthread_mutex_unlock(&file->lock);
    /* The file may be gone now; ino and the profile are not. */
    if (local) {
        struct profiler_counts delta = {.local_bytes = profiled_bytes};
        profiler_add(datapath->profile, ino, tile, &delta);
    }
}

/* The buffer holding tile `tile`, or NULL. */
static struct write_buffer *buffer_find(struct open_file *file, uint64_t tile)
{
    for (int i = 0; i < file->buffer_limit; i++) {
        if (file->buffers[i].used && file->buffers[i].tile == tile)
            return &file->buffers[i];
    }
    return NULL;
}

void writebehind_write_out(struct datapath *datapath, struct open_file *file,
                           struct write_buffer *buffer)
{
    struct tile_location location;
    int error;

    if (!buffer->used)
        return;
    struct write_job *job = calloc(1, sizeof(*job));
    if (!job) {
        record_error(file, -ENOMEM);
        return;
    }
    /* The bytes move to the job before any wait below releases file->lock:
     * a write arriving meanwhile gets a buffer of its own. */
    buffer->used = false;
    job->job.run = write_job_run;
    job->datapath = datapath;
    job->file = file;
    job->tile = buffer->tile;
    job->offset = buffer->low;
    job->length = buffer->high - buffer->low;
    job->buffer = buffer->data;
    job->buffer_bytes = file->tile_bytes;
    job->profiled_bytes = buffer->profiled_bytes;
    atomic_init(&job->refs, 1);
    buffer->data = NULL;
    buffer->profiled_bytes = 0;
    /* The write before, to the same tile, may move the tile: look it up after. */
    uint64_t ticket = file->writeout_next_ticket++;
    file->writeouts_waiting++;
    while (ticket != file->writeout_turn || file->writes_in_flight == MAX_WRITES_IN_FLIGHT ||
           tile_is_being_written(file, job->tile))
        pthread_cond_wait(&file->changed, &file->lock);
    error = tilelocation_get(datapath, file, job->tile, true, &location);
    if (error != 0)
        log_error("no tile for inode %llu tile %llu: %s", (unsigned long long)file->ino,
                  (unsigned long long)job->tile, strerror(-error));
    file->writeouts_waiting--;
    file->writeout_turn++;
    pthread_cond_broadcast(&file->changed);
    if (error != 0) {
        record_error(file, error); /* the bytes are lost: the error reports it */
        write_job_unref(job);
        return;
    }
    file->last_written_tile = job->tile;
    /* A read-ahead may have cached the tile's old bytes meanwhile. */
    tilecache_forget_range(datapath, file, job->tile, job->tile);
    job->location = location;
    file->writing[file->writes_in_flight++] = job->tile;
    tileplace_load_change(datapath, location.node, +1);
    workers_submit(datapath->workers, &job->job);
}

/* Writes out every buffer, lowest tile first (sequential allocation). */
static void buffers_write_out(struct datapath *datapath, struct open_file *file)
{
    for (;;) {
        struct write_buffer *lowest = NULL;
        for (int i = 0; i < file->buffer_limit; i++) {
            struct write_buffer *buffer = &file->buffers[i];
            if (buffer->used && (!lowest || buffer->tile < lowest->tile))
                lowest = buffer;
        }
        if (!lowest)
            return;
        writebehind_write_out(datapath, file, lowest);
    }
}

void writebehind_settle(struct datapath *datapath, struct open_file *file, uint64_t tile)
{
    struct write_buffer *buffer = buffer_find(file, tile);
    if (buffer)
        writebehind_write_out(datapath, file, buffer);
    while (file->writeouts_waiting > 0 || tile_is_being_written(file, tile))
        pthread_cond_wait(&file->changed, &file->lock);
}

/* Waits until no write job of the file runs. Called with file->lock held. */
static void writes_wait(struct open_file *file)
{
    while (file->writes_in_flight > 0 || file->writeouts_waiting > 0)
        pthread_cond_wait(&file->changed, &file->lock);
}

/* Takes the pending error, reporting it once. */
static int take_error(struct open_file *file)
{
    int error = file->error;
    file->error = 0;
    return error;
}

int writebehind_drain(struct datapath *datapath, struct open_file *file)
{
    buffers_write_out(datapath, file);
    writes_wait(file);
    return take_error(file);
}

bool writebehind_pending(const struct open_file *file)
{
    for (int i = 0; i < file->buffer_limit; i++) {
        if (file->buffers[i].used)
            return true;
    }
    return file->writes_in_flight > 0 || file->writeouts_waiting > 0;
}

bool writebehind_tile_unsent(struct open_file *file, uint64_t tile)
{
    return buffer_find(file, tile) || tile_is_being_written(file, tile);
}

void writebehind_free(struct datapath *datapath, struct open_file *file)
{
    for (int i = 0; i < MAX_WRITE_BUFFERS; i++) {
        if (file->buffers[i].data) {
            reqmem_free(file->buffers[i].data);
            budget_give(&datapath->write_budget, file->tile_bytes);
        }
    }
}

/* The file's least recently written buffer in use, or NULL. */
static struct write_buffer *buffer_oldest(struct open_file *file)
{
    struct write_buffer *oldest = NULL;
    for (int i = 0; i < file->buffer_limit; i++) {
        struct write_buffer *buffer = &file->buffers[i];
        if (buffer->used && (!oldest || buffer->last_use < oldest->last_use))
            oldest = buffer;
    }
    return oldest;
}

/*
 * A tile's worth of memory from the write budget, or NULL if malloc fails.
 * While the budget is short the file's own buffers go out first: the
 * reclaimer, which sends other files' buffers, cannot take this file's lock.
 * With none left it waits for the budget without the lock: the budget comes
 * back from write jobs, and every worker running one takes its file's lock
 * when it ends (write_job_run), so a writer waiting with the lock held would
 * stop the workers and with them the queued jobs that hold the budget (many
 * writers at a small --memory, replicas doubling the jobs, hung that way).
 * Called with file->lock held; may let it go meanwhile.
 */
static uint8_t *buffer_memory(struct datapath *datapath, struct open_file *file)
{
    while (!budget_try_take(&datapath->write_budget, file->tile_bytes)) {
        struct write_buffer *oldest = buffer_oldest(file);
        if (!oldest) {
            pthread_mutex_unlock(&file->lock);
            budget_take(&datapath->write_budget, file->tile_bytes);
            pthread_mutex_lock(&file->lock);
            break;
        }
        writebehind_write_out(datapath, file, oldest);
    }
    uint8_t *data = reqmem_new(file->tile_bytes);
    if (!data)
        budget_give(&datapath->write_budget, file->tile_bytes);
    return data;
}

/*
 * The buffer for a write to [low, high) of tile: the tile's own if the
 * write touches its run, else a fresh one (sending whatever stood in the
 * way). NULL on allocation failure. Called with file->lock held. Whatever
 * lets the lock go (a write-out waiting for a job slot, memory) is followed
 * by a fresh look: another writer may have taken the slot meanwhile.
 */
static struct write_buffer *buffer_for_write(struct datapath *datapath, struct open_file *file,
                                             uint64_t tile, uint32_t low, uint32_t high)
{
    uint8_t *memory = NULL; /* taken for the buffer, not yet in it */
    struct write_buffer *buffer;
    for (;;) {
        buffer = buffer_find(file, tile);
        if (buffer && low <= buffer->high && high >= buffer->low)
            break;
        if (buffer) {
            writebehind_write_out(datapath, file, buffer); /* not contiguous: send the old run */
            continue;
        }
        for (int i = 0; i < file->buffer_limit && !buffer; i++) {
            if (!file->buffers[i].used)
                buffer = &file->buffers[i];
        }
        if (!buffer) {
            writebehind_write_out(datapath, file, buffer_oldest(file));
            continue;
        }
        if (!buffer->data && !memory) {
            memory = buffer_memory(datapath, file);
            if (!memory)
                return NULL;
            continue;
        }
        if (!buffer->data) {
            buffer->data = memory;
            memory = NULL;
        }
        buffer->used = true;
        buffer->tile = tile;
        buffer->low = low;
        buffer->high = high;
        break;
    }
    if (memory) { /* a buffer with memory of its own came free meanwhile */
        reqmem_free(memory);
        budget_give(&datapath->write_budget, file->tile_bytes);
    }
    return buffer;
}

/*
 * Puts a segment of a write into its buffer. A segment that is a whole tile,
 * held in the request's own memory (request), is not copied: the buffer and
 * the request thread exchange their memory, both reqmem of the same size.
 */
static void buffer_fill(struct datapath *datapath, struct write_buffer *buffer, const char *bytes,
                        uint32_t low, uint32_t length, uint32_t tile_bytes,
                        const struct reqmem_slot *request)
{
    bool whole_tile = low == 0 && length == tile_bytes;
    if (whole_tile && request && request->payload_bytes == tile_bytes &&
        (const uint8_t *)bytes == *request->payload) {
        uint8_t *own = buffer->data;
        buffer->data = *request->payload;
        *request->payload = own;
        datapath->tiles_taken++;
        return;
    }
    memcpy(buffer->data + low, bytes, length);
    if (whole_tile)
        datapath->tiles_copied++;
}

ssize_t datapath_write(struct datapath *datapath, struct open_file *file, const char *buf,
                       size_t size, uint64_t offset, const struct reqmem_slot *request)
{
    struct filetiles_walk walk;
    struct tile_segment segment;
    struct profiler_batch batch;
    ssize_t result = (ssize_t)size;

    if (size > (uint64_t)INT64_MAX - offset)
        return -EFBIG;
    pthread_mutex_lock(&file->lock);
    bool profiled = file->profiled && datapath->profile;
    if (profiled)
        profiler_batch_init(&batch, file->ino, true);
    if (file->error != 0 || atomic_load(&file->lost)) {
        result = file->error != 0 ? file->error : -EIO;
        goto out;
    }
    if (file->layout.array && offset + size > file->layout.array->array_bytes) {
        result = -EFBIG; /* an array file has the size its layout declares */
        goto out;
    }
    file->generation++; /* tiles loaded before must not reach the page cache */
    filetiles_walk_init(&walk, &file->layout, offset, size);
    while (filetiles_walk_next(&walk, &segment)) {
        uint32_t low = segment.tile_offset;
        uint32_t high = segment.tile_offset + segment.length;
        tilecache_forget_range(datapath, file, segment.tile, segment.tile);
        struct write_buffer *buffer = buffer_for_write(datapath, file, segment.tile, low, high);
        if (!buffer) {
            result = -ENOMEM;
            goto out;
        }
        buffer_fill(datapath, buffer, buf + (segment.file_offset - offset), low, segment.length,
                    file->tile_bytes, request);
        if (profiled) {
            /* Whether these bytes are local is known when the buffer is sent. */
            profiler_batch_add(datapath->profile, &batch, segment.tile, segment.length, false);
            buffer->profiled_bytes += segment.length;
        }
        if (low < buffer->low)
            buffer->low = low;
        if (high > buffer->high)
            buffer->high = high;
        buffer->last_use = ++file->use_clock;
        buffer->written_ms = util_monotonic_ms();
        if (buffer->high - buffer->low == filetiles_tile_bytes(&file->layout, segment.tile))
            writebehind_write_out(datapath, file, buffer);
    }
    if (file->error != 0) {
        result = file->error;
        goto out;
    }
    if (offset + size > file->size)
        file->size = offset + size;
    file->size_dirty = true;
    file->writes_made++;
    file->mtime = util_now();
    attrwriteback_written(file);
out:
    pthread_mutex_unlock(&file->lock);
    if (profiled && result >= 0)
        profiler_batch_commit(datapath->profile, &batch);
    return result;
}
