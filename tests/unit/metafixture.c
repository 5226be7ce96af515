/*
 * @file metafixture.c
 * See metafixture.h. One copy of what every meta handler test needs, so
 * that a change of the request path (the header rpc_server_dispatch()
 * checks, the sender's routing id) is made in one place.
 */
#include "metafixture.h"

#include "handlers.h"
#include "handlers_exports.h"
#include "sessions.h"
#include "status.h"
#include "util.h"

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

void metafixture_remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int open_service(struct metafixture *f)
{
    if (service_open(f->dir, f->node_timeout_ms, &f->service) != 0)
        return -1;
    if (f->mount_lease_ms != 0)
        service_set_mount_lease(f->service, f->mount_lease_ms);
    /* One holder per tile unless a case asks for more (service->defaults.copies,
     * or a layout): most cases are about placement and moves of one holder. */
    f->service->defaults.copies = 1;
    return 0;
}

int metafixture_setup(void **state, const char *name, int64_t node_timeout_ms,
                      int64_t mount_lease_ms)
{
    struct metafixture *f = calloc(1, sizeof(*f));
    const char *tmp = getenv("TMPDIR");
    if (!f)
        return -1;
    f->node_timeout_ms = node_timeout_ms;
    f->mount_lease_ms = mount_lease_ms;
    f->reply = malloc(METAFIXTURE_PAYLOAD_CAP);
    f->request = malloc(METAFIXTURE_PAYLOAD_CAP);
    snprintf(f->dir, sizeof(f->dir), "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!f->reply || !f->request || !mkdtemp(f->dir)) {
        free(f->reply);
        free(f->request);
        free(f);
        return -1;
    }
    if (open_service(f) != 0) {
        metafixture_remove_tree(f->dir);
        free(f->reply);
        free(f->request);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

int metafixture_teardown(void **state)
{
    struct metafixture *f = *state;
    service_close(&f->service);
    metafixture_remove_tree(f->dir);
    free(f->reply);
    free(f->request);
    free(f);
    *state = NULL;
    return 0;
}

void metafixture_restart(struct metafixture *f)
{
    service_close(&f->service);
    assert_int_equal(open_service(f), 0);
}

void metafixture_reopen(struct metafixture *f)
{
    metafixture_restart(f);
    service_tick_at(f->service, util_monotonic_ms() + SESSIONS_DEFAULT_LEASE_MS);
}

void metafixture_send_as(struct metafixture *f, uint64_t mount)
{
    f->peer_len = 0;
    if (mount == 0)
        return;
    f->peer[0] = 'M';
    memcpy(f->peer + 1, &mount, sizeof(mount));
    memset(f->peer + 9, 0x5a, 4); /* the socket's serial */
    f->peer_len = sizeof(f->peer);
}

int metafixture_call(struct metafixture *f, uint16_t op, const void *payload, size_t len)
{
    struct rpc_request request;
    struct rpc_response response;
    int status;

    memset(&request, 0, sizeof(request));
    request.peer = f->peer_len ? f->peer : NULL;
    request.peer_len = f->peer_len;
    request.key_user = f->key_user ? f->key_user : "";
    request.header.magic = TS_PROTO_MAGIC;
    request.header.version = TS_PROTO_VERSION;
    request.header.type = op;
    request.header.request_id = 1;
    request.header.payload_bytes = (uint32_t)len;
    request.payload = payload;
    request.payload_len = len;
    memset(&response, 0, sizeof(response));
    response.payload = f->reply;
    response.payload_cap = METAFIXTURE_PAYLOAD_CAP;
    assert_non_null(handlers_table[op]);
    status = f->through_exports ? handlers_exports_gate(f->service, &request, &response)
                                : handlers_table[op](f->service, &request, &response);
    f->reply_len = response.payload_len;
    memcpy(f->error_text, response.error_text, sizeof(f->error_text));
    if (status == TS_OK)
        assert_true(response.payload_len <= response.payload_cap);
    return status;
}

size_t metafixture_encoded_length(int len)
{
    assert_true(len >= 0);
    return (size_t)len;
}

int metafixture_attr_call(struct metafixture *f, int status, struct ts_attr *attr)
{
    struct ts_attr_rep reply;
    if (status != TS_OK)
        return status;
    assert_int_equal(ts_attr_rep_decode(&reply, f->reply, f->reply_len), 0);
    if (attr)
        *attr = reply.attr;
    return status;
}

int metafixture_open_call(struct metafixture *f, int status, struct ts_attr *attr,
                          char *array_spec, size_t cap)
{
    struct ts_open_rep reply;
    if (status != TS_OK)
        return status;
    assert_int_equal(ts_open_rep_decode(&reply, f->reply, f->reply_len), 0);
    if (attr)
        *attr = reply.attr;
    if (array_spec) {
        assert_true(reply.array_spec.len < cap);
        memcpy(array_spec, reply.array_spec.ptr, reply.array_spec.len);
        array_spec[reply.array_spec.len] = '\0';
    }
    return status;
}

void metafixture_assert_attr_equal(const struct ts_attr *a, const struct ts_attr *b)
{
    assert_int_equal(a->ino, b->ino);
    assert_int_equal(a->mode, b->mode);
    assert_int_equal(a->nlink, b->nlink);
    assert_int_equal(a->uid, b->uid);
    assert_int_equal(a->gid, b->gid);
    assert_int_equal(a->rdev, b->rdev);
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->blocks, b->blocks);
    assert_int_equal(a->atime_sec, b->atime_sec);
    assert_int_equal(a->atime_nsec, b->atime_nsec);
    assert_int_equal(a->mtime_sec, b->mtime_sec);
    assert_int_equal(a->mtime_nsec, b->mtime_nsec);
    assert_int_equal(a->ctime_sec, b->ctime_sec);
    assert_int_equal(a->ctime_nsec, b->ctime_nsec);
    assert_int_equal(a->generation, b->generation);
    assert_int_equal(a->tile_bytes, b->tile_bytes);
    assert_int_equal(a->placement, b->placement);
    assert_int_equal(a->copies, b->copies);
    assert_int_equal(a->flags, b->flags);
}
