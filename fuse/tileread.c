/*
 * @file tileread.c
 * See tileread.h. A read goes to the tile's holders in meta's order, the
 * next one after each failure (failover: the application sees no error
 * while one holder answers). A datanode that has no file for a tile is
 * asked about once per read: meta says whether the tile moved, was never
 * written (a hole) or was written and is lost there (the next holder, and
 * EIO when none is left, never zeros).
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
 * TS_TILE_STORED no holder has reported the file yet, which is a tile
 * placed but never written (a hole) only if no other holder has it
 * either: a file lost before its datanode's next heartbeat reported it
 * looks the same from here. So the other holders are asked first (-EAGAIN:
 * read again), and it is a hole, 0, only when every one of them answered
 * "no file" (`other_failure`: a holder failed otherwise, whose error is
 * returned instead: it may have had the bytes). With TS_TILE_STORED a
 * holder reported the file, so this one lost it (deleted, a disk that
 * lost it, a data directory replaced): it is logged (file, tile, datanode
 * id and address) and the read moves on to the next holder; with none
 * left it fails with -EIO, never read as zeros. Takes no lock of the data
 * path.
 */
static int read_missing(struct datapath *datapath, uint64_t ino, uint64_t tile, uint32_t node,
                        struct tile_location *location, uint32_t *tried, int32_t other_failure)
{
    char endpoint[128];
    if (!(location->flags & TS_TILE_STORED)) {
        if (tilelocation_read_next(location, tried))
            return -EAGAIN;
        return other_failure == TS_OK ? 0 : errno_of_status(other_failure);
    }
    /* Another node may answer at its address now (nodedir_call refuses it then). */
    nodedir_suspect(datapath->nodes);
    nodedir_endpoint(datapath->nodes, node, endpoint, sizeof(endpoint));
    uint64_t version = location->read_version;
    if (tilelocation_read_next(location, tried)) {
        log_error("inode %llu tile %llu: datanode %u (%s) has no file for it (version %llu), "
                  "though the tile was written: its replica is lost there; reading the one "
                  "on datanode %u",
                  (unsigned long long)ino, (unsigned long long)tile, node, endpoint,
                  (unsigned long long)version, location->read_node);
        return -EAGAIN;
    }
    log_error("read of inode %llu tile %llu failed: datanode %u (%s) has no file for it "
              "(version %llu), though the tile was written, and no other holder could be read: "
              "the tile is lost (its files deleted, or the datanodes' data directories wiped or "
              "replaced); failing with EIO, not reading zeros",
              (unsigned long long)ino, (unsigned long long)tile, node, endpoint,
              (unsigned long long)version);
    return -EIO;
}

int tileread_fetch(struct datapath *datapath, uint64_t ino, uint64_t tile, uint32_t tile_offset,
                   uint32_t length, struct tile_location *location, struct rpc_reply *reply)
{
    struct stale_retry retry = {0};
    bool asked_missing = false;
    uint32_t tried = 0; /* holders (bits of location->holders) that failed this read */
    int32_t other_failure = TS_OK; /* a tried holder's failure other than "no file" */
    uint8_t payload[128]; /* the request with its tile token */

    for (;;) {
        uint32_t node;
        memset(reply, 0, sizeof(*reply));
        if (location->node == 0)
            return 0;
        struct ts_tile_read_req request =
            tilelocation_read_request(location, ino, tile, tile_offset, length, &node);
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
            tried = 0; /* another set, or the same one again: every holder may be tried */
            other_failure = TS_OK;
            continue;
        }
        if (status == TS_ERR_NOENT && !asked_missing) {
            /*
             * No file there: a tile placed but not written yet (a hole), a
             * holder or old place deleted after this mount cached it, or a
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
            if (!tilelocation_same_for(TILE_ACCESS_WRITE, location, &now)) {
                *location = now; /* another set: every holder may be tried */
                tried = 0;
                other_failure = TS_OK;
                continue;
            }
            /* The same holders: the failover keeps its place, the flags are meta's now. */
            location->flags = now.flags;
            status = TS_ERR_NOENT;
        }
        if (status == TS_ERR_NOENT) {
            /* Meta names this place now: read_missing() says what that means. */
            int error = read_missing(datapath, ino, tile, node, location, &tried, other_failure);
            if (error != -EAGAIN)
                return error;
            continue;
        }
        other_failure = status;
        if (tilelocation_read_next(location, &tried)) {
            log_warn("read of inode %llu tile %llu from datanode %u failed: %s; reading its "
                     "replica on datanode %u",
                     (unsigned long long)ino, (unsigned long long)tile, node, status_text(status),
                     location->read_node);
            continue;
        }
        log_error("read of inode %llu tile %llu from datanode %u failed: %s, and no other holder "
                  "could be read",
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
