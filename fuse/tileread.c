/*
 * @file tileread.c
 * See tileread.h. A datanode that has no file for a tile is asked about
 * once per read: meta says whether the tile moved, was never written (a
 * hole) or was written and is lost there (EIO, never zeros).
 */
#include "tileread.h"

#include "log.h"
#include "metaclient.h"
#include "nodedir.h"
#include "proto.h"
#include "tilelocation.h"

#include <errno.h>
#include <string.h>

/*
 * A datanode had no file for a tile at the place meta names for it now
 * (read from `node`, the tile's read source in *location). Without
 * TS_TILE_STORED the tile was placed but never written: a hole, 0. With
 * it, a holder reported the file, so this one lost it (deleted, a disk
 * that lost it, a data directory replaced): a lost copy is logged and
 * given up for the primary (-EAGAIN: read again), a lost primary is
 * logged (file, tile, datanode id and address) and fails with -EIO, never
 * read as zeros. Takes no lock of the data path.
 */
static int read_missing(struct datapath *datapath, uint64_t ino, uint64_t tile, uint32_t node,
                        struct tile_location *location)
{
    char endpoint[128];
    if (!(location->flags & TS_TILE_STORED))
        return 0;
    /* Another node may answer at its address now (nodedir_call refuses it then). */
    nodedir_suspect(datapath->nodes);
    nodedir_endpoint(datapath->nodes, node, endpoint, sizeof(endpoint));
    if (node != location->node) {
        log_error("inode %llu tile %llu: its read copy on datanode %u (%s) has no file, though "
                  "the tile was written: the copy is lost there; reading the primary on "
                  "datanode %u",
                  (unsigned long long)ino, (unsigned long long)tile, node, endpoint,
                  location->node);
        location->read_node = location->node;
        location->read_version = location->version;
        return -EAGAIN;
    }
    log_error("read of inode %llu tile %llu failed: datanode %u (%s) has no file for it "
              "(version %llu), though the tile was written: the tile is lost there (its file "
              "deleted, or the datanode's data directory wiped or replaced); failing with EIO, "
              "not reading zeros",
              (unsigned long long)ino, (unsigned long long)tile, node, endpoint,
              (unsigned long long)location->version);
    return -EIO;
}

int tileread_fetch(struct datapath *datapath, uint64_t ino, uint64_t tile, uint32_t tile_offset,
                   uint32_t length, struct tile_location *location, struct rpc_reply *reply)
{
    struct stale_retry retry = {0};
    bool asked_missing = false;
    uint8_t payload[64];

    for (;;) {
        uint32_t node;
        uint64_t version;
        memset(reply, 0, sizeof(*reply));
        if (location->node == 0)
            return 0;
        tilelocation_read_source(location, &node, &version);
        struct ts_tile_read_req request = {
            .ino = ino, .tile = tile, .version = version, .offset = tile_offset, .length = length};
        int len = ts_tile_read_req_encode(&request, payload, sizeof(payload));
        int status = nodedir_call(datapath->nodes, node, TS_OP_TILE_READ, payload, (size_t)len,
                                  NULL, 0, reply);
        if (status == TS_OK && reply->data_len > length)
            status = TS_ERR_BADMSG;
        if (status == TS_OK)
            return 0;
        rpc_reply_release(reply);
        if (status == TS_ERR_STALE) {
            int error =
                tilelocation_relocate(datapath, ino, tile, TILE_ACCESS_READ, &retry, location);
            if (error != 0)
                return error;
            continue;
        }
        if (status == TS_ERR_NOENT && !asked_missing) {
            /*
             * No file there: a tile placed but not written yet (a hole), a
             * copy or old place deleted after this mount cached it, or a
             * lost file. Meta tells which: another place is retried; at the
             * same place it says whether a holder ever reported the file
             * (cached records may predate that report).
             */
            struct tile_location now;
            asked_missing = true;
            status = metaclient_tile_map(datapath->meta, ino, tile, 1, 0, 0, &now);
            if (status != TS_OK)
                return errno_of_status(status);
            memset(reply, 0, sizeof(*reply));
            bool same = tilelocation_same_for(TILE_ACCESS_READ, location, &now);
            *location = now;
            if (!same)
                continue;
            status = TS_ERR_NOENT;
        }
        if (status == TS_ERR_NOENT) {
            /* Meta names this place now: read_missing() says what that means. */
            int error = read_missing(datapath, ino, tile, node, location);
            if (error != -EAGAIN)
                return error;
            continue;
        }
        if (node != location->node) {
            log_warn("read of inode %llu tile %llu from its copy on datanode %u failed: %s; "
                     "reading the primary on datanode %u",
                     (unsigned long long)ino, (unsigned long long)tile, node, status_text(status),
                     location->node);
            location->read_node = location->node;
            location->read_version = location->version;
            continue;
        }
        log_error("read of inode %llu tile %llu from datanode %u failed: %s",
                  (unsigned long long)ino, (unsigned long long)tile, node, status_text(status));
        return errno_of_status(status);
    }
}

bool tileread_is_local(struct datapath *datapath, const struct tile_location *location)
{
    uint32_t node;
    uint64_t version;
    if (location->node == 0)
        return false;
    tilelocation_read_source(location, &node, &version);
    return nodedir_is_local(datapath->nodes, node);
}
