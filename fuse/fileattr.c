/*
 * @file fileattr.c
 * Attributes through the data path (datapath.h): setattr, open(O_TRUNC)
 * and punch, which write out and commit what is pending before meta
 * changes the file (a truncation carries the commit in its own request),
 * and
 * the settling of attribute replies with what this mount has not
 * committed yet.
 */
#include "datapath_i.h"

#include "attrwriteback.h"

#include "filecommit.h"
#include "log.h"
#include "metaclient.h"
#include "nodedir.h"
#include "openfiles.h"
#include "pagestore.h"
#include "proto.h"
#include "tilecache.h"
#include "tilelocation.h"
#include "writebehind.h"

#include <string.h>

/* Cuts one holder's file of the tile to `length` bytes. Returns a status. */
static int cut_holder(struct datapath *datapath, uint64_t ino, uint64_t tile, uint32_t length,
                      const struct tile_holder *holder)
{
    struct rpc_reply node_reply;
    uint8_t payload[128];
    struct ts_tile_truncate_req request = {
        .ino = ino,
        .tile = tile,
        .version = holder->version,
        .length = length,
        .token_expiry = holder->token_expiry,
        .token = {.ptr = (const char *)holder->token, .len = holder->token_expiry ? TILETOKEN_MAC_BYTES : 0}};
    int len = ts_tile_truncate_req_encode(&request, payload, sizeof(payload));
    int status = nodedir_call(datapath->nodes, holder->node, TS_OP_TILE_TRUNCATE, payload,
                              (size_t)len, NULL, 0, &node_reply);
    rpc_reply_release(&node_reply);
    return status;
}

/*
 * Cuts the tile the new end falls in, as meta's SETATTR reply says, on
 * every holder (meta is asked for them): a replica left uncut would keep
 * the bytes cut off and show them if the file grows. A holder that fails
 * while another was cut leaves the replica set (REPLICA_DROP); none cut is
 * the error. A tile that moves is followed.
 */
static int cut_tile(struct datapath *datapath, uint64_t ino, const struct ts_setattr_rep *reply)
{
    struct stale_retry retry = {0};
    struct tile_location location = {.node = reply->cut_node, .version = reply->cut_version};
    int status = TS_OK;

    if (reply->cut_node == 0)
        return 0;
    status = metaclient_tile_map(datapath->meta, ino, reply->cut_tile, 1, 0, 0, &location);
    if (status != TS_OK) {
        /* Without the holders a replica could keep the cut bytes: fail loudly. */
        log_error("truncate of inode %llu tile %llu: meta could not name its holders: %s",
                  (unsigned long long)ino, (unsigned long long)reply->cut_tile,
                  status_text(status));
        return errno_of_status(status);
    }
    for (;;) {
        int statuses[TS_MAX_HOLDERS];
        uint32_t cut = 0;
        bool stale = false;
        if (location.node == 0)
            return 0; /* the tile went meanwhile: nothing to cut */
        status = TS_OK;
        for (uint32_t i = 0; i < location.holder_count; i++) {
            statuses[i] = cut_holder(datapath, ino, reply->cut_tile, reply->cut_bytes,
                                     &location.holders[i]);
            cut += statuses[i] == TS_OK;
            stale = stale || statuses[i] == TS_ERR_STALE;
            if (statuses[i] != TS_OK && status == TS_OK)
                status = statuses[i];
        }
        if (stale) {
            int error = tilelocation_relocate(datapath, ino, reply->cut_tile,
                                              TILE_ACCESS_TRUNCATE, &retry, &location);
            if (error != 0)
                return error;
            continue;
        }
        if (cut == 0) {
            log_error("truncate of inode %llu tile %llu failed on every holder: %s",
                      (unsigned long long)ino, (unsigned long long)reply->cut_tile,
                      status_text(status));
            return errno_of_status(status);
        }
        struct tile_location before = location;
        for (uint32_t i = 0; i < before.holder_count; i++) {
            if (statuses[i] == TS_OK)
                continue;
            int error = tilelocation_drop_holder(datapath, ino, reply->cut_tile,
                                                 &before.holders[i], statuses[i], &location);
            if (error != 0)
                return error;
        }
        return 0;
    }
}

/*
 * The first half of a change meta makes to ino's attributes, for a file
 * open here (*filep, NULL if it is not; left locked and referenced for
 * truncation_end): its buffers written out, and with `size`, no store into
 * the page cache racing the kernel's truncation of it (a store past the new
 * end would grow the file again). Returns 0 or the writes' error.
 */
static int truncation_begin(struct datapath *datapath, uint64_t ino, bool size,
                            struct open_file **filep)
{
    struct open_file *file = openfiles_get(datapath, ino);
    *filep = file;
    if (!file)
        return 0;
    pthread_mutex_lock(&file->lock);
    if (size) {
        file->generation++;
        pagestore_wait(datapath, file);
    }
    int result = writebehind_drain(datapath, file);
    if (result == 0) /* the change must reach meta after a COMMIT on its way */
        result = filecommit_wait(datapath, file);
    return result;
}

/*
 * The second half: with attr (meta's answer; NULL when the change failed),
 * the file takes meta's mode, and with `size` meta's size, and forgets the
 * locations and cached tiles from the tile the end falls in (cut, its
 * copies dropped). Unlocks and puts the file.
 */
static void truncation_end(struct datapath *datapath, struct open_file *file,
                           const struct ts_attr *attr, bool size)
{
    if (!file)
        return;
    if (attr) {
        file->mode = attr->mode;
        attrwriteback_learn(file, attr);
    }
    if (attr && size) {
        file->size_dirty = false; /* meta took this mount's size with the change */
        file->size = attr->size;
        if (!file->layout.array)
            tilelocation_forget_from(file, attr->size / file->tile_bytes);
        else
            tilelocation_forget_all(file);
        tilecache_forget_range(datapath, file, 0, UINT64_MAX);
    }
    pthread_mutex_unlock(&file->lock);
    openfiles_put(datapath, file);
}

int datapath_setattr(struct datapath *datapath, const struct ts_setattr_req *request,
                     struct ts_attr *attr)
{
    struct ts_setattr_req change = *request;
    struct ts_setattr_rep reply;
    struct open_file *file;
    bool size = (request->valid & TS_SET_SIZE) != 0;

    /* A change of a file this mount created and has open waits for its commit. */
    struct open_file *held = openfiles_get(datapath, request->ino);
    if (held) {
        pthread_mutex_lock(&held->lock);
        bool kept = attrwriteback_hold(held, request, attr);
        pthread_mutex_unlock(&held->lock);
        openfiles_put(datapath, held);
        if (kept)
            return 0;
    }
    int result = truncation_begin(datapath, request->ino, size, &file);
    /* What was held goes first; this request's own fields win. */
    struct ts_setattr_req held_before = {0};
    if (result == 0 && file) {
        held_before = file->attrs_pending;
        attrwriteback_into(file, &change);
    }
    /* This mount's COMMIT travels with the change (proto.h): one round trip
     * where `tar` and `touch` after a write took two. The file stays locked
     * until the answer, so no write comes between. */
    bool commits = result == 0 && file && filecommit_fold(file, &change);
    if (result == 0)
        result = errno_of_status(metaclient_setattr(datapath->meta, &change, &reply));
    bool changed = result == 0;
    if (changed)
        filecommit_note(datapath, &reply.attr);
    if (file && !changed && held_before.valid) /* not sent: still to send */
        file->attrs_pending = held_before;
    if (changed && commits && !size) /* a size change settles it in truncation_end */
        filecommit_folded(datapath, file, &reply.attr);
    if (changed && size)
        result = cut_tile(datapath, request->ino, &reply);
    if (result == 0)
        *attr = reply.attr;
    /* Meta's size holds even when the cut failed. */
    truncation_end(datapath, file, changed ? &reply.attr : NULL, size);
    return result;
}

int datapath_open_truncating(struct datapath *datapath, uint64_t ino, uint32_t flags,
                             uint32_t truncate, struct ts_attr *attr, char **array_spec)
{
    struct open_file *file;
    *array_spec = NULL;
    int result = truncation_begin(datapath, ino, true, &file);
    /* Truncating to 0 drops every tile: this mount's uncommitted size and
     * mtime would only be replaced, so no COMMIT goes first. */
    if (result == 0)
        result = errno_of_status(
            metaclient_open(datapath->meta, ino, flags, truncate, attr, array_spec));
    if (result == 0)
        filecommit_note(datapath, attr);
    truncation_end(datapath, file, result == 0 ? attr : NULL, true);
    return result;
}

int datapath_punch(struct datapath *datapath, struct open_file *file, uint64_t first_tile,
                   uint64_t last_tile, struct ts_attr *attr)
{
    pthread_mutex_lock(&file->lock);
    /* As a truncation: no store into the page cache may race it. */
    file->generation++;
    pagestore_wait(datapath, file);
    int result = writebehind_drain(datapath, file);
    if (result == 0)
        result = filecommit_size(datapath, file, 0);
    if (result == 0)
        result = errno_of_status(
            metaclient_punch(datapath->meta, file->ino, first_tile, last_tile, attr));
    if (result == 0) {
        filecommit_note(datapath, attr);
        attrwriteback_learn(file, attr);
        attrwriteback_written(file); /* meta set mtime now: later than a held one */
        tilelocation_forget_range(file, first_tile, last_tile);
        tilecache_forget_range(datapath, file, first_tile, last_tile);
        /* Their files are garbage now: nothing of them to sync at fsync. */
        size_t kept = 0;
        for (size_t i = 0; i < file->dirty_count; i++)
            if (file->dirty[i].tile < first_tile || file->dirty[i].tile > last_tile)
                file->dirty[kept++] = file->dirty[i];
        file->dirty_count = kept;
    }
    pthread_mutex_unlock(&file->lock);
    return result;
}

/* Puts over attr the size and mtime of data this mount has not committed. */
static void overlay_unwritten(struct datapath *datapath, struct ts_attr *attr)
{
    struct open_file *file = openfiles_get(datapath, attr->ino);
    if (file) {
        pthread_mutex_lock(&file->lock);
        if (file->size_dirty) {
            if (file->size > attr->size)
                attr->size = file->size;
            attr->mtime_sec = file->mtime.tv_sec;
            attr->mtime_nsec = (uint32_t)file->mtime.tv_nsec;
        }
        attrwriteback_overlay(file, attr); /* held after the writes: later */
        pthread_mutex_unlock(&file->lock);
        openfiles_put(datapath, file);
    }
}

void datapath_file_created(struct datapath *datapath, struct open_file *file,
                           const struct ts_attr *attr, uint32_t uid, bool early)
{
    pthread_mutex_lock(&file->lock);
    attrwriteback_created(datapath, file, attr, uid, early);
    pthread_mutex_unlock(&file->lock);
}

bool datapath_settle_attr(struct datapath *datapath, struct ts_attr *attr)
{
    /* The open file first, the guard after: a commit that comes between
     * the two is recorded before the file stops holding the size, and
     * then refuses attr as older. */
    overlay_unwritten(datapath, attr);
    return attrguard_admit(datapath->guard, attr);
}

void datapath_settle_fresh(struct datapath *datapath, struct ts_attr *attr)
{
    overlay_unwritten(datapath, attr);
    attrguard_record(datapath->guard, attr);
}
