/*
 * @file fileattr.c
 * Attributes through the data path (datapath.h): setattr and punch, which
 * write out and commit what is pending before meta changes the file, and
 * the settling of attribute replies with what this mount has not
 * committed yet.
 */
#include "datapath_i.h"

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

/*
 * Cuts the tile the new end falls in, as meta's SETATTR reply says. The
 * tile's read copies would keep the bytes cut off: they are dropped first
 * (meta is asked whether there are any). A tile that moves is followed.
 */
static int cut_tile(struct datapath *datapath, uint64_t ino, const struct ts_setattr_rep *reply)
{
    struct rpc_reply node_reply;
    struct stale_retry retry = {0};
    struct tile_location location = {.node = reply->cut_node, .version = reply->cut_version};
    uint8_t payload[64];
    int status;
    int error = 0;

    if (reply->cut_node == 0)
        return 0;
    if (metaclient_tile_map(datapath->meta, ino, reply->cut_tile, 1, 0, 0, &location) != TS_OK)
        location = (struct tile_location){.node = reply->cut_node, .version = reply->cut_version};
    for (;;) {
        if (location.node == 0)
            return 0; /* the tile went meanwhile: nothing to cut */
        if (location.copies > 0) {
            error = tilelocation_uncopy(datapath, ino, reply->cut_tile, &location);
            if (error != 0)
                return error;
        }
        struct ts_tile_truncate_req request = {.ino = ino,
                                               .tile = reply->cut_tile,
                                               .version = location.version,
                                               .length = reply->cut_bytes};
        int len = ts_tile_truncate_req_encode(&request, payload, sizeof(payload));
        status = nodedir_call(datapath->nodes, location.node, TS_OP_TILE_TRUNCATE, payload,
                              (size_t)len, NULL, 0, &node_reply);
        rpc_reply_release(&node_reply);
        if (status != TS_ERR_STALE)
            break;
        error = tilelocation_relocate(datapath, ino, reply->cut_tile, TILE_ACCESS_TRUNCATE, &retry,
                                      &location);
        if (error != 0)
            return error;
    }
    if (status != TS_OK)
        log_error("truncate of inode %llu tile %llu on datanode %u failed: %s",
                  (unsigned long long)ino, (unsigned long long)reply->cut_tile, location.node,
                  status_text(status));
    return errno_of_status(status);
}

int datapath_setattr(struct datapath *datapath, const struct ts_setattr_req *request,
                     struct ts_attr *attr)
{
    struct ts_setattr_rep reply;
    struct open_file *file;
    int result = 0;

    file = openfiles_get(datapath, request->ino);
    if (file) {
        pthread_mutex_lock(&file->lock);
        if (request->valid & TS_SET_SIZE) {
            /* No store into the page cache may race the kernel's truncation
             * of it (a store past the new end would grow the file again). */
            file->generation++;
            pagestore_wait(datapath, file);
        }
        result = writebehind_drain(datapath, file);
        if (result == 0)
            result = filecommit_size(datapath, file, 0);
    }
    if (result == 0)
        result = errno_of_status(metaclient_setattr(datapath->meta, request, &reply));
    if (result == 0) {
        filecommit_note(datapath, &reply.attr);
        if (file)
            file->mode = reply.attr.mode;
    }
    if (result == 0 && (request->valid & TS_SET_SIZE)) {
        result = cut_tile(datapath, request->ino, &reply);
        if (file) {
            file->size = reply.attr.size;
            /* From the tile the end falls in: cut, its copies dropped. */
            if (!file->layout.array)
                tilelocation_forget_from(file, reply.attr.size / file->tile_bytes);
            else
                tilelocation_forget_all(file);
            tilecache_forget_range(datapath, file, 0, UINT64_MAX);
        }
    }
    if (result == 0)
        *attr = reply.attr;
    if (file) {
        pthread_mutex_unlock(&file->lock);
        openfiles_put(datapath, file);
    }
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
        pthread_mutex_unlock(&file->lock);
        openfiles_put(datapath, file);
    }
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
