/*
 * @file filecommit.c
 * See filecommit.h. flush writes the file's buffers out, waits for its
 * write jobs and commits; fsync has every datanode written to since the
 * last fsync sync those tiles (TILE_SYNC, all datanodes in parallel on
 * the sync threads) before its commit asks meta for durability too.
 */
#include "filecommit.h"

#include "attrwriteback.h"

#include "log.h"
#include "metaclient.h"
#include "proto.h"
#include "status.h"
#include "tilecache.h"
#include "tilelocation.h"
#include "writebehind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void filecommit_note(struct datapath *datapath, const struct ts_attr *attr)
{
    attrguard_record(datapath->guard, attr);
    if (datapath->committed)
        datapath->committed(datapath->committed_context, attr->ino);
}

int filecommit_wait(struct datapath *datapath, struct open_file *file)
{
    while (file->committing) {
        pthread_cond_wait(&file->changed, &file->lock);
        /* The wait let the lock go: bytes written meanwhile go out first,
         * so that no size reaches meta ahead of its bytes. */
        int error = writebehind_drain(datapath, file);
        if (error != 0)
            return error;
    }
    return 0;
}

bool filecommit_fold(const struct open_file *file, struct ts_setattr_req *change)
{
    if (!file->size_dirty)
        return false;
    change->min_size = file->size;
    change->commit_mtime_sec = file->mtime.tv_sec;
    change->commit_mtime_nsec = (uint32_t)file->mtime.tv_nsec;
    return true;
}

void filecommit_folded(struct datapath *datapath, struct open_file *file, const struct ts_attr *attr)
{
    file->size_dirty = false;
    tilecache_size_learned(datapath, file, attr->size);
}

/*
 * Sends the changes attribute write-back holds (attrwriteback.h) in one
 * SETATTR with this mount's commit folded in (proto.h), the lock held
 * throughout. Returns 0 or an errno; on failure they stay held.
 */
static int held_attrs_send(struct datapath *datapath, struct open_file *file)
{
    struct ts_setattr_req change = {.ino = file->ino};
    struct ts_setattr_rep reply;
    struct ts_setattr_req held = file->attrs_pending;
    attrwriteback_into(file, &change);
    bool commits = filecommit_fold(file, &change);
    int status = metaclient_setattr(datapath->meta, &change, &reply);
    if (status != TS_OK) {
        file->attrs_pending = held;
        log_warn("inode %llu: mode, owner or times set while open not saved: %s",
                 (unsigned long long)file->ino, status_text(status));
        return errno_of_status(status);
    }
    filecommit_note(datapath, &reply.attr);
    attrwriteback_learn(file, &reply.attr);
    if (commits)
        filecommit_folded(datapath, file, &reply.attr);
    return 0;
}

int filecommit_size(struct datapath *datapath, struct open_file *file, int sync)
{
    struct ts_attr attr;
    int error = filecommit_wait(datapath, file);
    if (error != 0)
        return error;
    if (attrwriteback_pending(file)) {
        error = held_attrs_send(datapath, file);
        if (error != 0)
            return error;
    }
    if (!file->size_dirty && !sync)
        return 0;
    /* What is committed is taken now; the COMMIT goes with the lock let go,
     * so that writes and reads of the file go on meanwhile. */
    uint64_t size = file->size;
    struct timespec mtime = file->mtime;
    bool dirty = file->size_dirty;
    uint64_t writes_made = file->writes_made;
    file->committing = true;
    pthread_mutex_unlock(&file->lock);
    int status = metaclient_commit(datapath->meta, file->ino, size, dirty ? &mtime : NULL, sync,
                                   &attr);
    pthread_mutex_lock(&file->lock);
    file->committing = false;
    pthread_cond_broadcast(&file->changed);
    if (status != TS_OK)
        return errno_of_status(status);
    /* Recorded before size_dirty is cleared: an attribute reply being put
     * together meanwhile finds the size here or is refused as older. */
    if (dirty)
        filecommit_note(datapath, &attr);
    attrwriteback_learn(file, &attr);
    /* A write that came meanwhile is still to commit, and its size, newer
     * than the answer, stays (unless meta knows a larger one). */
    if (file->writes_made == writes_made) {
        file->size_dirty = false;
        tilecache_size_learned(datapath, file, attr.size);
    } else if (attr.size > file->size) {
        tilecache_size_learned(datapath, file, attr.size);
    }
    return 0;
}

/* One TILE_SYNC request: all tiles of one datanode. */
struct sync_job {
    struct worker_job job;
    struct datapath *datapath;
    uint32_t node;
    uint8_t *payload;
    size_t payload_len;
    int status;
    /* completion: shared by the sync jobs of one fsync */
    pthread_mutex_t *lock;
    pthread_cond_t *done;
    int *pending;
};

static void sync_job_run(struct worker_job *worker_job)
{
    struct sync_job *job = (struct sync_job *)worker_job;
    struct rpc_reply reply;
    job->status = nodedir_call(job->datapath->nodes, job->node, TS_OP_TILE_SYNC, job->payload,
                               job->payload_len, NULL, 0, &reply);
    rpc_reply_release(&reply);
    pthread_mutex_lock(job->lock);
    (*job->pending)--;
    pthread_cond_broadcast(job->done);
    pthread_mutex_unlock(job->lock);
}

/* Encodes a TILE_SYNC request for the dirty tiles on `node`. */
static int sync_job_prepare(struct open_file *file, uint32_t node, struct sync_job *job)
{
    size_t count = 0;
    for (size_t i = 0; i < file->dirty_count; i++)
        count += file->dirty[i].node == node;
    size_t records_len = count * ts_tile_file_rec_bytes;
    uint8_t *records = malloc(records_len + 1);
    job->payload_len = records_len + 16;
    job->payload = malloc(job->payload_len);
    if (!records || !job->payload) {
        free(records);
        return -ENOMEM;
    }
    struct ts_writer writer;
    ts_writer_init(&writer, records, records_len);
    for (size_t i = 0; i < file->dirty_count; i++) {
        if (file->dirty[i].node != node)
            continue;
        struct ts_tile_file_rec record = {
            .ino = file->ino, .tile = file->dirty[i].tile, .version = file->dirty[i].version};
        ts_tile_file_rec_write(&writer, &record);
    }
    struct ts_tile_sync_req request = {.count = (uint32_t)count,
                                       .tiles = {(const char *)records, (uint32_t)writer.len}};
    int len = ts_tile_sync_req_encode(&request, job->payload, job->payload_len);
    free(records);
    if (len < 0)
        return -EINVAL;
    job->payload_len = (size_t)len;
    job->node = node;
    return 0;
}

/* Whether some node other than nodes[failed] synced `tile` of the file. */
static bool sync_tile_kept_elsewhere(const struct open_file *file, const uint32_t *nodes,
                                     const struct sync_job *jobs, size_t node_count,
                                     size_t failed, uint64_t tile)
{
    for (size_t i = 0; i < file->dirty_count; i++) {
        const struct dirty_tile *dirty = &file->dirty[i];
        if (dirty->tile != tile || dirty->node == nodes[failed])
            continue;
        for (size_t n = 0; n < node_count; n++) {
            if (nodes[n] == dirty->node && jobs[n].payload && jobs[n].status == TS_OK)
                return true;
        }
    }
    return false;
}

/*
 * The TILE_SYNC of nodes[failed] failed (DESIGN.md "Replicas and
 * integrity"): each of its tiles that another holder synced loses this
 * holder (REPLICA_DROP: it may not have the bytes durable, so no reader may
 * be served them) and the fsync goes on; a tile no other holder synced
 * fails it. Returns 0 or the fsync's error.
 */
static int sync_failed_node(struct datapath *datapath, struct open_file *file,
                            const uint32_t *nodes, const struct sync_job *jobs, size_t node_count,
                            size_t failed)
{
    int status = jobs[failed].status;
    for (size_t i = 0; i < file->dirty_count; i++) {
        const struct dirty_tile *dirty = &file->dirty[i];
        if (dirty->node != nodes[failed])
            continue;
        if (!sync_tile_kept_elsewhere(file, nodes, jobs, node_count, failed, dirty->tile)) {
            log_error("sync of inode %llu tile %llu failed on datanode %u, its only holder "
                      "written: %s",
                      (unsigned long long)file->ino, (unsigned long long)dirty->tile,
                      dirty->node, status_text(status));
            return errno_of_status(status);
        }
        struct tile_holder holder = {
            .node = dirty->node, .state = TS_REPLICA_UP, .version = dirty->version};
        struct tile_location location;
        log_error("sync of inode %llu tile %llu failed on datanode %u: %s; the tile's other "
                  "holders have it",
                  (unsigned long long)file->ino, (unsigned long long)dirty->tile, dirty->node,
                  status_text(status));
        int error = tilelocation_drop_holder(datapath, file->ino, dirty->tile, &holder, status,
                                             &location);
        if (error != 0)
            return error;
        tilelocation_remember(file, dirty->tile, &location);
    }
    return 0;
}

/*
 * Has every datanode sync the tiles written to it since the last fsync, all
 * nodes in parallel. Called with file->lock held (no writes in flight).
 */
static int sync_dirty_tiles(struct datapath *datapath, struct open_file *file)
{
    uint32_t nodes[64];
    size_t node_count = 0;
    struct sync_job jobs[64];
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t done = PTHREAD_COND_INITIALIZER;
    int pending = 0;
    int result = 0;

    for (size_t i = 0; i < file->dirty_count; i++) {
        size_t known = 0;
        while (known < node_count && nodes[known] != file->dirty[i].node)
            known++;
        if (known == node_count && node_count < 64)
            nodes[node_count++] = file->dirty[i].node;
    }
    memset(jobs, 0, sizeof(jobs));
    for (size_t n = 0; n < node_count; n++) {
        if (sync_job_prepare(file, nodes[n], &jobs[n]) != 0) {
            result = -ENOMEM;
            break;
        }
        jobs[n].job.run = sync_job_run;
        jobs[n].datapath = datapath;
        jobs[n].lock = &lock;
        jobs[n].done = &done;
        jobs[n].pending = &pending;
        pthread_mutex_lock(&lock);
        pending++;
        pthread_mutex_unlock(&lock);
        workers_submit(datapath->sync_workers, &jobs[n].job);
    }
    pthread_mutex_lock(&lock);
    while (pending > 0)
        pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
    for (size_t n = 0; n < node_count; n++) {
        /* STALE: a tile moved since it was written; the move's pull stored
         * it synced on its new datanode. */
        if (result == 0 && jobs[n].payload && jobs[n].status != TS_OK &&
            jobs[n].status != TS_ERR_STALE)
            result = sync_failed_node(datapath, file, nodes, jobs, node_count, n);
        free(jobs[n].payload);
    }
    if (result == 0)
        file->dirty_count = 0;
    return result;
}

/*
 * flush (sync 0) and fsync (sync 1): writes out the file's buffers and
 * waits for its write jobs; fsync then has the datanodes sync the tiles;
 * both commit. Returns the first error pending or met.
 */
static int write_out_and_commit(struct datapath *datapath, struct open_file *file, int sync)
{
    int result;
    if (atomic_load(&file->lost))
        return -EIO;
    pthread_mutex_lock(&file->lock);
    result = writebehind_drain(datapath, file);
    if (result == 0 && sync)
        result = sync_dirty_tiles(datapath, file);
    if (result == 0)
        result = filecommit_size(datapath, file, sync);
    pthread_mutex_unlock(&file->lock);
    return result;
}

int datapath_flush(struct datapath *datapath, struct open_file *file)
{
    return write_out_and_commit(datapath, file, 0);
}

int datapath_fsync(struct datapath *datapath, struct open_file *file)
{
    return write_out_and_commit(datapath, file, 1);
}
