/*
 * @file metafixture.h
 * The fixture of the unit tests that run tessera-meta's real handlers
 * (test_handlers.c, test_handlers_relocation.c,
 * test_handlers_leases_batches.c, test_sessions.c): a
 * real LMDB store and service in a fresh temporary directory per case,
 * requests encoded with the generated ts_*_encode and handed to the
 * handler through handlers_table exactly as rpc_server_dispatch() would
 * after checking the header, replies left for the generated ts_*_decode.
 *
 * Every function fails the running cmocka case on an unexpected error,
 * except metafixture_setup(), which returns -1 as a cmocka setup does.
 */
#ifndef TESSERA_TESTS_METAFIXTURE_H
#define TESSERA_TESTS_METAFIXTURE_H

#include "proto.h"
#include "service.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* Room for any request or reply payload: a whole frame but its header. */
#define METAFIXTURE_PAYLOAD_CAP (TS_MAX_FRAME_BYTES - TS_HEADER_BYTES)

struct metafixture {
    char dir[PATH_MAX]; /* the store's temporary directory */
    struct service *service;
    int64_t node_timeout_ms; /* given to service_open() */
    int64_t mount_lease_ms;  /* 0: the service's default */
    uint8_t *request;        /* METAFIXTURE_PAYLOAD_CAP bytes: CALL encodes here */
    uint8_t *reply;          /* METAFIXTURE_PAYLOAD_CAP bytes: the last reply */
    size_t reply_len;
    char error_text[256]; /* the last reply's text */
    uint8_t peer[13];     /* the sender's routing id ('M' + mount id + serial) */
    size_t peer_len;      /* 0: an unnamed sender (a tool) */
    const char *key_user; /* the sender's key ("ROLE:NAME"); NULL: none (no CURVE) */
    bool through_exports; /* calls go through the export gate (handlers_exports.h), as meta's */
};

/*
 * A cmocka setup: *state becomes a fixture with a service open on a new
 * store in $TMPDIR (else /tmp)/<name>.XXXXXX; mount_lease_ms 0 keeps the
 * service's default lease. 0, or -1 with nothing left behind.
 */
int metafixture_setup(void **state, const char *name, int64_t node_timeout_ms,
                      int64_t mount_lease_ms);

/* Deletes directory dir and everything below it (a store of the test's own). */
void metafixture_remove_tree(const char *dir);

/* A cmocka teardown: closes the service, deletes the directory, frees the fixture. */
int metafixture_teardown(void **state);

/*
 * Closes and reopens the store, as a restart of meta would; restart leaves
 * meta in its first mount lease, when no orphan is deleted.
 */
void metafixture_restart(struct metafixture *f);

/* As metafixture_restart(), and a mount lease later: no mount announced anything. */
void metafixture_reopen(struct metafixture *f);

/* Sends the next requests as mount `mount` (0: unnamed, as a tool). */
void metafixture_send_as(struct metafixture *f, uint64_t mount);

/*
 * Calls op's handler with payload as the current sender; the reply is in
 * f->reply, f->reply_len and f->error_text. Returns the handler's status.
 */
int metafixture_call(struct metafixture *f, uint16_t op, const void *payload, size_t len);

/* An encoder's result, which must not be a failure (-1). */
size_t metafixture_encoded_length(int len);

/* Encodes message with ts_<name>_encode into f->request and calls op with it. */
#define CALL(f, op, name, message)                                                                 \
    metafixture_call((f), (op), (f)->request,                                                      \
                     metafixture_encoded_length(                                                   \
                         ts_##name##_encode((message), (f)->request, METAFIXTURE_PAYLOAD_CAP)))

/* An ATTR_REP call: on TS_OK decodes the reply's attributes into *attr (if not NULL). */
int metafixture_attr_call(struct metafixture *f, int status, struct ts_attr *attr);
/* As metafixture_attr_call, for OPEN's reply: attributes and the array
 * text (into array_spec[cap], NUL-terminated; may be NULL). */
int metafixture_open_call(struct metafixture *f, int status, struct ts_attr *attr,
                          char *array_spec, size_t cap);

/* Asserts two attributes are equal field by field: struct padding is not part of the contract. */
void metafixture_assert_attr_equal(const struct ts_attr *a, const struct ts_attr *b);

#endif
