/*
 * @file tilecheck.c
 * See tilecheck.h. A shallow check is a stat per file; a deep one reads
 * the file and checks every block against its checksum (tilestore_verify)
 * and so costs its bytes of disk time: fsck asks for it only with --deep.
 */
#include "tilecheck.h"

#include "proto.h"
#include "status.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

/* The verdict on one file. */
static void tilecheck_file(struct tilestore *store, uint32_t deep,
                           const struct ts_tile_file_rec *file, struct ts_tile_check_rec *verdict)
{
    uint64_t bytes = 0;
    int err;
    if (deep) {
        err = tilestore_verify(store, file->ino, file->tile, file->version, 0, UINT64_MAX, &bytes);
    } else {
        err = tilestore_size(store, file->ino, file->tile, file->version, &bytes);
    }
    if (err == 0)
        *verdict = (struct ts_tile_check_rec){TS_CHECK_OK, bytes};
    else if (err == -ENOENT)
        *verdict = (struct ts_tile_check_rec){TS_CHECK_MISSING, 0};
    else /* -EBADMSG: a block fails its checksum; an I/O error is no better */
        *verdict = (struct ts_tile_check_rec){TS_CHECK_CORRUPT, bytes};
}

int tilecheck_handle(struct tilestore *store, const struct rpc_request *request,
                     struct rpc_response *response)
{
    struct ts_tile_check_req req;
    struct ts_tile_check_rep reply;
    struct ts_cursor files;
    struct ts_writer verdicts;
    static uint8_t records[TS_MAX_CHECK_FILES * 12]; /* the loop's: handlers run one at a time */

    if (ts_tile_check_req_decode(&req, request->payload, request->payload_len) != 0 ||
        (uint64_t)req.count * ts_tile_file_rec_bytes != req.files.len) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "malformed TILE_CHECK request (fields do not fill the frame exactly)");
        return TS_ERR_BADMSG;
    }
    if (req.count > TS_MAX_CHECK_FILES || req.deep > 1) {
        snprintf(response->error_text, sizeof(response->error_text),
                 "TILE_CHECK: count must be 0..%u and deep 0 or 1 (count %u, deep %u)",
                 TS_MAX_CHECK_FILES, req.count, req.deep);
        return TS_ERR_INVAL;
    }
    ts_cursor_init(&files, req.files.ptr, req.files.len);
    ts_writer_init(&verdicts, records, sizeof(records));
    for (uint32_t i = 0; i < req.count; i++) {
        struct ts_tile_file_rec file;
        struct ts_tile_check_rec verdict;
        (void)ts_tile_file_rec_read(&files, &file); /* the length was checked */
        tilecheck_file(store, req.deep, &file, &verdict);
        ts_tile_check_rec_write(&verdicts, &verdict);
    }
    if (verdicts.failed)
        return TS_ERR_INTERNAL;
    reply.count = req.count;
    reply.verdicts.ptr = (const char *)records;
    reply.verdicts.len = (uint32_t)verdicts.len;
    int len = ts_tile_check_rep_encode(&reply, response->payload, response->payload_cap);
    if (len < 0)
        return TS_ERR_INTERNAL;
    response->payload_len = (size_t)len;
    return TS_OK;
}
