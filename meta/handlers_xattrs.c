/*
 * @file handlers_xattrs.c
 * SETXATTR, GETXATTR, LISTXATTR and REMOVEXATTR: the "user." attributes
 * kept in the xattrs table, and the two hints that are not plain records
 * but shape the file's layout, user.tessera.layout (the inode's layout) and
 * user.tessera.array (arrayhint.h). Also what the other handlers need of
 * the array hint: its inheritance by new inodes and an array file's
 * compiled layout (handlers_xattrs.h). Same shape as every handler
 * (handlers.c).
 */
#include "handlers_xattrs.h"

#include "arrayhint.h"
#include "handlers_i.h"
#include "inodes.h"
#include "layout.h"
#include "log.h"
#include "reply.h"
#include "service.h"
#include "status.h"
#include "store.h"
#include "tile.h"
#include "util.h"
#include "xattrs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- helpers ----------------------------------------------------------- */

/* Accepts only "user." attribute names, as the FUSE client promises. */
static int check_xattr_name(struct ts_str name)
{
    static const char prefix[] = "user.";
    const size_t prefix_len = sizeof(prefix) - 1;
    if (name.len > TS_MAX_XATTR_NAME)
        return TS_ERR_RANGE;
    if (name.len == 0 || memchr(name.ptr, '\0', name.len))
        return TS_ERR_INVAL;
    if (name.len < prefix_len || memcmp(name.ptr, prefix, prefix_len) != 0)
        return TS_ERR_NOTSUP;
    if (name.len == prefix_len)
        return TS_ERR_INVAL;
    return TS_OK;
}

/* ---- xattrs ------------------------------------------------------------- */

struct xattr_op {
    uint64_t ino;
    struct ts_str name;
    struct ts_str value;
    uint32_t flags;
    struct timespec now;
    struct rpc_response *response; /* GETXATTR encodes inside the txn */
    struct ts_writer names;        /* LISTXATTR */
};

/* Records an attribute change in the inode's ctime. */
static int xattr_touch(struct store_txn *txn, uint64_t ino, struct timespec now)
{
    struct inodes_record record;
    int status = handlers_load_inode(txn, ino, &record);
    if (status != TS_OK)
        return status;
    handlers_time_set(&record.attr.ctime_sec, &record.attr.ctime_nsec, now);
    return reply_store_status(inodes_put(txn, &record));
}

static int setxattr_body(struct store_txn *txn, void *arg)
{
    struct xattr_op *op = arg;
    struct ts_str existing;
    int status = xattr_touch(txn, op->ino, op->now);
    int err;
    if (status != TS_OK)
        return status;
    err = xattrs_get(txn, op->ino, op->name, &existing);
    if (err < 0 && err != -ENOENT)
        return reply_store_status(err);
    if ((op->flags & TS_XATTR_CREATE) && err == 0)
        return TS_ERR_EXIST;
    if ((op->flags & TS_XATTR_REPLACE) && err == -ENOENT)
        return TS_ERR_NODATA;
    return reply_store_status(xattrs_put(txn, op->ino, op->name, op->value));
}

/* ---- user.tessera.layout ---------------------------------------------- */

/*
 * The layout hint is not stored in the xattrs table: it is the layout in
 * the inode record, read and written here. It exists on every regular file
 * and directory (getxattr shows the effective layout) and is not listed by
 * LISTXATTR, so that copying a tree with its xattrs does not pin every
 * copied file to the layout its source happened to have.
 */

struct layout_op {
    struct service *service;
    uint64_t ino;
    struct layout given; /* what SETXATTR asked for */
    bool remove;         /* REMOVEXATTR: back to the defaults */
    uint32_t flags;      /* SETXATTR flags */
    struct timespec now;
    char text[64]; /* GETXATTR: the effective layout */
    char why[160]; /* why the change was refused */
};

static bool layout_xattr(struct ts_str name)
{
    return name.len == strlen(LAYOUT_XATTR) && memcmp(name.ptr, LAYOUT_XATTR, name.len) == 0;
}

static int layout_get_body(struct store_txn *txn, void *arg)
{
    struct layout_op *op = arg;
    struct inodes_record record;
    struct layout layout;
    int status = handlers_load_inode(txn, op->ino, &record);
    if (status != TS_OK)
        return status;
    if (!S_ISREG(record.attr.mode) && !S_ISDIR(record.attr.mode))
        return TS_ERR_NODATA;
    inodes_layout(&record, &op->service->defaults, &layout);
    return layout_format(&layout, op->text, sizeof(op->text)) < 0 ? TS_ERR_INTERNAL : TS_OK;
}

static bool layout_same(const struct layout *a, const struct layout *b)
{
    return a->tile_bytes == b->tile_bytes && a->copies == b->copies && a->placement == b->placement;
}

static int layout_set_body(struct store_txn *txn, void *arg)
{
    struct layout_op *op = arg;
    struct inodes_record record;
    struct ts_attr *attr = &record.attr;
    struct layout before;
    struct layout after;
    int status = handlers_load_inode(txn, op->ino, &record);
    if (status != TS_OK)
        return status;
    if (!S_ISREG(attr->mode) && !S_ISDIR(attr->mode))
        return op->remove ? TS_ERR_NODATA : TS_ERR_INVAL;
    if (op->flags & TS_XATTR_CREATE)
        return TS_ERR_EXIST; /* every file and directory has a layout */

    struct layout stored = {attr->tile_bytes, attr->copies, attr->placement, 0};
    if (op->remove) {
        bool dir = S_ISDIR(attr->mode);
        stored.tile_bytes = dir ? 0 : TILE_DEFAULT_BYTES;
        stored.copies = 0; /* the cluster's default */
        stored.placement = TS_PLACEMENT_DEFAULT;
    } else {
        layout_apply(&stored, &op->given);
    }
    inodes_layout(&record, &op->service->defaults, &before);
    attr->tile_bytes = stored.tile_bytes;
    attr->copies = stored.copies;
    attr->placement = stored.placement;
    inodes_layout(&record, &op->service->defaults, &after);
    /* A file's layout is fixed once it has tiles; setting the same one again is harmless. */
    if (S_ISREG(attr->mode) && record.tiles_allocated > 0) {
        if (layout_same(&before, &after))
            return TS_OK;
        snprintf(op->why, sizeof(op->why),
                 "the file already has %llu tiles; its layout is fixed (set it before the "
                 "first write, or on the directory)",
                 (unsigned long long)record.tiles_allocated);
        return TS_ERR_BUSY;
    }
    handlers_time_set(&attr->ctime_sec, &attr->ctime_nsec, op->now);
    return reply_store_status(inodes_put(txn, &record));
}

/* SETXATTR or REMOVEXATTR of user.tessera.layout; value is NULL for a removal. */
static int layout_set(struct service *service, uint64_t ino, const struct ts_str *value,
                      uint32_t flags, struct rpc_response *response)
{
    struct layout_op op;
    int status;

    memset(&op, 0, sizeof(op));
    op.service = service;
    op.ino = ino;
    op.flags = flags;
    op.remove = value == NULL;
    op.now = util_now();
    if (value && layout_parse(value->ptr, value->len, &op.given, op.why, sizeof(op.why)) != 0) {
        log_warn("setxattr %s on inode %llu refused: %s", LAYOUT_XATTR, (unsigned long long)ino,
                 op.why);
        snprintf(response->error_text, sizeof(response->error_text), "%s: %s", LAYOUT_XATTR,
                 op.why);
        return TS_ERR_INVAL;
    }
    status = store_write(service->store, layout_set_body, &op);
    if (status == TS_ERR_BUSY) {
        log_info("%s of inode %llu not changed: %s", LAYOUT_XATTR, (unsigned long long)ino, op.why);
        snprintf(response->error_text, sizeof(response->error_text), "%s: %s", LAYOUT_XATTR,
                 op.why);
    }
    return status;
}

static int layout_get(struct service *service, uint64_t ino, struct rpc_response *response)
{
    struct layout_op op;
    struct ts_getxattr_rep reply;
    int status;

    memset(&op, 0, sizeof(op));
    op.service = service;
    op.ino = ino;
    status = store_read(service->store, layout_get_body, &op);
    if (status != TS_OK)
        return status;
    reply.value = ts_str_of(op.text);
    return REPLY_ENCODE(getxattr_rep, &reply, response);
}

/* ---- user.tessera.array ----------------------------------------------- */

/*
 * The array hint (arrayhint.h). On a regular file it may be set, changed or
 * removed while the file is empty: size 0 and no tiles (setting the text
 * the file already has is harmless at any time); otherwise EBUSY. Setting it
 * stores the canonical text and sets TS_ATTR_ARRAY; removing it clears both
 * and makes the file linear again. On a directory it is kept for the files
 * created in it; GETXATTR there shows it resolved with the directory's tile
 * size, as a new file would get it. Like user.tessera.layout it is not
 * listed by LISTXATTR.
 */

struct array_op {
    struct service *service;
    uint64_t ino;
    struct ts_str value; /* SETXATTR: the text given */
    bool remove;         /* REMOVEXATTR */
    uint32_t flags;      /* SETXATTR flags */
    struct timespec now;
    struct arraylayout layout;
    char text[ARRAYSPEC_TEXT_MAX + 1]; /* GETXATTR: the effective text */
    char why[ARRAYHINT_WHY_MAX];       /* why the change was refused */
};

static bool array_xattr(struct ts_str name)
{
    return name.len == strlen(ARRAYHINT_XATTR) && memcmp(name.ptr, ARRAYHINT_XATTR, name.len) == 0;
}

/* The tile size new tiles (or a directory's new files) of record get. */
static uint32_t array_tile_bytes(const struct service *service, const struct inodes_record *record)
{
    struct layout layout;
    inodes_layout(record, &service->defaults, &layout);
    return layout.tile_bytes;
}

static int array_get_body(struct store_txn *txn, void *arg)
{
    struct array_op *op = arg;
    struct inodes_record record;
    size_t len;
    int status = handlers_load_inode(txn, op->ino, &record);
    int err;
    if (status != TS_OK)
        return status;
    if (!S_ISREG(record.attr.mode) && !S_ISDIR(record.attr.mode))
        return TS_ERR_NODATA;
    err = arrayhint_get(txn, op->ino, op->text, sizeof(op->text), &len);
    if (err == -ENOENT)
        return TS_ERR_NODATA;
    if (err < 0)
        return reply_store_status(err);
    if (S_ISREG(record.attr.mode))
        return TS_OK; /* already canonical */
    if (arrayhint_compile(op->text, len, array_tile_bytes(op->service, &record), &op->layout,
                          op->why, sizeof(op->why)) != 0 ||
        arrayspec_format(&op->layout.spec, op->text, sizeof(op->text)) < 0) {
        log_error("directory %llu: stored array layout '%s' does not compile: %s",
                  (unsigned long long)op->ino, op->text, op->why);
        return TS_ERR_INTERNAL;
    }
    return TS_OK;
}

static int array_set_body(struct store_txn *txn, void *arg)
{
    struct array_op *op = arg;
    struct inodes_record record;
    struct ts_attr *attr = &record.attr;
    char stored[ARRAYSPEC_TEXT_MAX + 1];
    char canonical[ARRAYSPEC_TEXT_MAX + 1];
    size_t stored_len = 0;
    int status = handlers_load_inode(txn, op->ino, &record);
    int err;
    if (status != TS_OK)
        return status;
    if (!S_ISREG(attr->mode) && !S_ISDIR(attr->mode)) {
        snprintf(op->why, sizeof(op->why), "only regular files and directories take one");
        return op->remove ? TS_ERR_NODATA : TS_ERR_INVAL;
    }
    err = arrayhint_get(txn, op->ino, stored, sizeof(stored), &stored_len);
    if (err < 0 && err != -ENOENT)
        return reply_store_status(err);
    bool had = err == 0;
    if (op->remove && !had)
        return TS_ERR_NODATA;
    if ((op->flags & TS_XATTR_CREATE) && had)
        return TS_ERR_EXIST;
    if ((op->flags & TS_XATTR_REPLACE) && !had)
        return TS_ERR_NODATA;

    const char *text = op->value.ptr;
    size_t len = op->value.len;
    if (!op->remove) {
        if (arrayhint_compile(op->value.ptr, op->value.len, array_tile_bytes(op->service, &record),
                              &op->layout, op->why, sizeof(op->why)) != 0)
            return TS_ERR_INVAL;
        if (S_ISREG(attr->mode)) {
            int canonical_len = arrayspec_format(&op->layout.spec, canonical, sizeof(canonical));
            if (canonical_len < 0)
                return TS_ERR_INTERNAL;
            text = canonical;
            len = (size_t)canonical_len;
        }
    }
    if (S_ISREG(attr->mode) && (attr->size != 0 || record.tiles_allocated != 0)) {
        if (!op->remove && had && stored_len == len && memcmp(stored, text, len) == 0)
            return TS_OK;
        snprintf(op->why, sizeof(op->why),
                 "the file already has data (%llu bytes, %llu tiles); its layout is fixed (set "
                 "it on an empty file before the first write, on the directory, or truncate the "
                 "file to 0 first)",
                 (unsigned long long)attr->size, (unsigned long long)record.tiles_allocated);
        return TS_ERR_BUSY;
    }
    err = op->remove ? arrayhint_delete(txn, op->ino) : arrayhint_put(txn, op->ino, text, len);
    if (err < 0)
        return reply_store_status(err);
    if (S_ISREG(attr->mode)) {
        if (op->remove)
            attr->flags &= ~TS_ATTR_ARRAY;
        else
            attr->flags |= TS_ATTR_ARRAY;
    }
    handlers_time_set(&attr->ctime_sec, &attr->ctime_nsec, op->now);
    return reply_store_status(inodes_put(txn, &record));
}

/* SETXATTR or REMOVEXATTR of user.tessera.array; value is NULL for a removal. */
static int array_set(struct service *service, uint64_t ino, const struct ts_str *value,
                     uint32_t flags, struct rpc_response *response)
{
    struct array_op *op = calloc(1, sizeof(*op));
    int status;

    if (!op)
        return TS_ERR_NOMEM;
    op->service = service;
    op->ino = ino;
    op->flags = flags;
    op->remove = value == NULL;
    if (value)
        op->value = *value;
    op->now = util_now();
    status = store_write(service->store, array_set_body, op);
    if ((status == TS_ERR_INVAL || status == TS_ERR_BUSY) && op->why[0]) {
        log_warn("%s %s on inode %llu refused: %s", op->remove ? "removexattr" : "setxattr",
                 ARRAYHINT_XATTR, (unsigned long long)ino, op->why);
        /* The reply's text is shorter than the log's: the start says what is wrong. */
        snprintf(response->error_text, sizeof(response->error_text), "%s: %.200s", ARRAYHINT_XATTR,
                 op->why);
    }
    free(op);
    return status;
}

static int array_get(struct service *service, uint64_t ino, struct rpc_response *response)
{
    struct array_op *op = calloc(1, sizeof(*op));
    struct ts_getxattr_rep reply;
    int status;

    if (!op)
        return TS_ERR_NOMEM;
    op->service = service;
    op->ino = ino;
    status = store_read(service->store, array_get_body, op);
    if (status == TS_OK) {
        reply.value = ts_str_of(op->text);
        status = REPLY_ENCODE(getxattr_rep, &reply, response);
    }
    free(op);
    return status;
}

int handlers_xattrs_array_inherit(struct store_txn *txn, struct service *service,
                                  struct inodes_record *created, uint64_t parent)
{
    char text[ARRAYSPEC_TEXT_MAX + 1];
    char why[ARRAYHINT_WHY_MAX];
    struct arraylayout *layout;
    size_t len;
    int err;

    if (!S_ISREG(created->attr.mode) && !S_ISDIR(created->attr.mode))
        return TS_OK;
    err = arrayhint_get(txn, parent, text, sizeof(text), &len);
    if (err == -ENOENT)
        return TS_OK;
    if (err < 0)
        return reply_store_status(err);
    if (S_ISDIR(created->attr.mode))
        return reply_store_status(arrayhint_put(txn, created->attr.ino, text, len));
    layout = malloc(sizeof(*layout));
    if (!layout)
        return TS_ERR_NOMEM;
    if (arrayhint_compile(text, len, array_tile_bytes(service, created), layout, why,
                          sizeof(why)) != 0) {
        log_error("directory %llu: stored array layout '%s' does not compile: %s",
                  (unsigned long long)parent, text, why);
        free(layout);
        return TS_ERR_INTERNAL;
    }
    int text_len = arrayspec_format(&layout->spec, text, sizeof(text));
    free(layout);
    if (text_len < 0)
        return TS_ERR_INTERNAL;
    created->attr.flags |= TS_ATTR_ARRAY;
    return reply_store_status(arrayhint_put(txn, created->attr.ino, text, (size_t)text_len));
}

int handlers_xattrs_array_load(struct store_txn *txn, uint64_t ino, struct arraylayout **layoutp)
{
    struct arraylayout *layout = malloc(sizeof(*layout));
    int err;
    *layoutp = NULL;
    if (!layout)
        return TS_ERR_NOMEM;
    err = arrayhint_load(txn, ino, layout);
    if (err < 0) {
        free(layout);
        if (err == -ENOENT)
            log_error("array file %llu has no array layout record", (unsigned long long)ino);
        return err == -ENOENT ? TS_ERR_INTERNAL : reply_store_status(err);
    }
    *layoutp = layout;
    return TS_OK;
}

int handlers_xattrs_set(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_setxattr_req message;
    struct xattr_op op;
    int status;

    if (ts_setxattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    status = check_xattr_name(message.name);
    if (status != TS_OK)
        return status;
    if (message.value.len > TS_MAX_XATTR_VALUE)
        return TS_ERR_RANGE;
    if ((message.flags & ~(TS_XATTR_CREATE | TS_XATTR_REPLACE)) != 0)
        return TS_ERR_INVAL;
    /* A directory's hints shape its new files: its lease holder's template. */
    status = handlers_lease_check(service, handlers_sender_mount(request), message.ino);
    if (status != TS_OK)
        return status;
    if (layout_xattr(message.name))
        return layout_set(service, message.ino, &message.value, message.flags, response);
    if (array_xattr(message.name))
        return array_set(service, message.ino, &message.value, message.flags, response);
    memset(&op, 0, sizeof(op));
    op.ino = message.ino;
    op.name = message.name;
    op.value = message.value;
    op.flags = message.flags;
    op.now = util_now();
    return store_write(service->store, setxattr_body, &op);
}

static int getxattr_body(struct store_txn *txn, void *arg)
{
    struct xattr_op *op = arg;
    struct inodes_record record;
    struct ts_getxattr_rep reply;
    int status = handlers_load_inode(txn, op->ino, &record);
    int err;
    if (status != TS_OK)
        return status;
    err = xattrs_get(txn, op->ino, op->name, &reply.value);
    if (err == -ENOENT)
        return TS_ERR_NODATA;
    if (err < 0)
        return reply_store_status(err);
    /* The value points into the map: encode before the transaction ends. */
    return REPLY_ENCODE(getxattr_rep, &reply, op->response);
}

int handlers_xattrs_get(void *ctx, const struct rpc_request *request, struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_getxattr_req message;
    struct xattr_op op;
    int status;

    if (ts_getxattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    status = check_xattr_name(message.name);
    if (status != TS_OK)
        return status;
    if (layout_xattr(message.name))
        return layout_get(service, message.ino, response);
    if (array_xattr(message.name))
        return array_get(service, message.ino, response);
    memset(&op, 0, sizeof(op));
    op.ino = message.ino;
    op.name = message.name;
    op.response = response;
    return store_read(service->store, getxattr_body, &op);
}

static int listxattr_body(struct store_txn *txn, void *arg)
{
    struct xattr_op *op = arg;
    struct inodes_record record;
    int status = handlers_load_inode(txn, op->ino, &record);
    int err;
    if (status != TS_OK)
        return status;
    err = xattrs_list(txn, op->ino, &op->names);
    if (err == -ERANGE)
        return TS_ERR_RANGE;
    return reply_store_status(err);
}

int handlers_xattrs_list(void *ctx, const struct rpc_request *request,
                         struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_listxattr_req message;
    struct ts_listxattr_rep reply;
    struct xattr_op op;
    int status;

    if (ts_listxattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    memset(&op, 0, sizeof(op));
    op.ino = message.ino;
    ts_writer_init(&op.names, service->scratch, SERVICE_SCRATCH_BYTES);
    status = store_read(service->store, listxattr_body, &op);
    if (status != TS_OK)
        return status;
    reply.names.ptr = (const char *)service->scratch;
    reply.names.len = (uint32_t)op.names.len;
    return REPLY_ENCODE(listxattr_rep, &reply, response);
}

static int removexattr_body(struct store_txn *txn, void *arg)
{
    struct xattr_op *op = arg;
    int status = xattr_touch(txn, op->ino, op->now);
    int err;
    if (status != TS_OK)
        return status;
    err = xattrs_delete(txn, op->ino, op->name);
    if (err == -ENOENT)
        return TS_ERR_NODATA;
    return reply_store_status(err);
}

int handlers_xattrs_remove(void *ctx, const struct rpc_request *request,
                           struct rpc_response *response)
{
    struct service *service = ctx;
    struct ts_removexattr_req message;
    struct xattr_op op;
    int status;

    if (ts_removexattr_req_decode(&message, request->payload, request->payload_len) != 0)
        return reply_bad_message(response, request->header.type);
    status = check_xattr_name(message.name);
    if (status == TS_OK)
        status = handlers_lease_check(service, handlers_sender_mount(request), message.ino);
    if (status != TS_OK)
        return status;
    if (layout_xattr(message.name))
        return layout_set(service, message.ino, NULL, 0, response);
    if (array_xattr(message.name))
        return array_set(service, message.ino, NULL, 0, response);
    memset(&op, 0, sizeof(op));
    op.ino = message.ino;
    op.name = message.name;
    op.now = util_now();
    return store_write(service->store, removexattr_body, &op);
}
