/*
 * @file test_sessions.c
 * Unit tests of mount sessions (meta/sessions.h): first the in-memory
 * bookkeeping alone, with times chosen by the test; then tessera-meta's
 * handlers against a real LMDB store in a fresh temporary directory per
 * case, requests sent as named mounts ('M' + mount id + serial, as
 * rpc_pool_set_name makes them) through handlers_table, and restarts and
 * lease expiries driven by service_tick_at().
 */
#include "metafixture.h"
#include "proto.h"
#include "service.h"
#include "sessionkeys.h"
#include "sessions.h"
#include "status.h"
#include "util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#define LEASE_MS 2000
#define MOUNT_A 0x1111111111111111ull
#define MOUNT_B 0x2222222222222222ull
#define NO_MOUNT 0ull /* a sender that does not name itself (a tool) */
#define TEST_NODE_TIMEOUT_MS 600000

/* ---- the bookkeeping alone --------------------------------------------- */

static uint64_t fingerprint_of(const uint64_t *inos, const uint32_t *counts, size_t count)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < count; i++)
        sum += counts[i] * ts_hold_mix(inos[i]);
    return sum;
}

static void test_counts_per_mount(void **state)
{
    (void)state;
    struct sessions *sessions = sessions_new(LEASE_MS);
    assert_non_null(sessions);
    assert_int_equal(sessions_open(sessions, MOUNT_A, 7, 0), 0);
    assert_int_equal(sessions_open(sessions, MOUNT_A, 7, 0), 0);
    assert_int_equal(sessions_open(sessions, MOUNT_B, 7, 0), 0);
    assert_int_equal(sessions_open_count(sessions, 7), 3);
    assert_int_equal(sessions_open(sessions, MOUNT_A, 0, 0), -EINVAL);

    /* A release counts down only what the releasing mount holds. */
    assert_false(sessions_release(sessions, MOUNT_B, 8));
    assert_false(sessions_release(sessions, NO_MOUNT, 7));
    assert_true(sessions_release(sessions, MOUNT_B, 7));
    assert_false(sessions_release(sessions, MOUNT_B, 7)); /* sent twice */
    assert_int_equal(sessions_open_count(sessions, 7), 2);
    assert_true(sessions_release(sessions, MOUNT_A, 7));
    assert_true(sessions_release(sessions, MOUNT_A, 7));
    assert_false(sessions_release(sessions, MOUNT_A, 7));
    assert_int_equal(sessions_open_count(sessions, 7), 0);
    sessions_destroy(&sessions);
    assert_null(sessions);
    sessions_destroy(NULL);
}

static void test_renew_compares_fingerprint(void **state)
{
    (void)state;
    struct sessions *sessions = sessions_new(LEASE_MS);
    uint64_t inos[] = {5, 9};
    uint32_t counts[] = {2, 1};
    uint64_t fingerprint = fingerprint_of(inos, counts, 2);

    /* Unknown: announce. */
    assert_int_equal(sessions_renew(sessions, MOUNT_A, 0, 0, 0), TS_SESSION_ANNOUNCE);
    assert_int_equal(sessions_open(sessions, MOUNT_A, 5, 0), 0);
    assert_int_equal(sessions_open(sessions, MOUNT_A, 5, 0), 0);
    assert_int_equal(sessions_open(sessions, MOUNT_A, 9, 0), 0);
    assert_int_equal(sessions_renew(sessions, MOUNT_A, 3, fingerprint, 10), TS_SESSION_OK);
    /* Same total, other inodes: the fingerprint tells. */
    uint64_t other_inos[] = {5, 10};
    assert_int_equal(
        sessions_renew(sessions, MOUNT_A, 3, fingerprint_of(other_inos, counts, 2), 10),
        TS_SESSION_ANNOUNCE);
    assert_int_equal(sessions_renew(sessions, MOUNT_A, 2, fingerprint, 10), TS_SESSION_ANNOUNCE);
    /* The announcement replaces; a following request adds. */
    struct sessions_freed freed = {0};
    uint64_t held[] = {5};
    uint32_t held_counts[] = {1};
    assert_int_equal(sessions_hold(sessions, MOUNT_A, true, held, held_counts, 1, 20, &freed), 0);
    /* Both dropped to no open on the way; the caller checks again (5 is held). */
    assert_int_equal(freed.count, 2);
    assert_int_equal(sessions_open_count(sessions, 5), 1);
    assert_int_equal(sessions_open_count(sessions, 9), 0);
    sessions_freed_clear(&freed);
    uint64_t more[] = {11};
    assert_int_equal(sessions_hold(sessions, MOUNT_A, false, more, held_counts, 1, 20, &freed), 0);
    assert_int_equal(freed.count, 0);
    uint64_t now_inos[] = {5, 11};
    uint32_t now_counts[] = {1, 1};
    assert_int_equal(
        sessions_renew(sessions, MOUNT_A, 2, fingerprint_of(now_inos, now_counts, 2), 30),
        TS_SESSION_OK);
    assert_int_equal(sessions_open_count(sessions, 5), 1);
    assert_int_equal(sessions_open_count(sessions, 9), 0);
    sessions_freed_clear(&freed);
    sessions_destroy(&sessions);
}

static void test_unrenewed_sessions_expire(void **state)
{
    (void)state;
    struct sessions *sessions = sessions_new(LEASE_MS);
    struct sessions_freed freed = {0};
    size_t ended = 0;
    uint64_t dropped = 0;

    assert_int_equal(sessions_open(sessions, MOUNT_A, 1, 0), 0);
    assert_int_equal(sessions_open(sessions, MOUNT_A, 2, 0), 0);
    assert_int_equal(sessions_open(sessions, MOUNT_B, 2, 0), 0);
    assert_int_equal(sessions_open(sessions, NO_MOUNT, 3, 0), 0);
    /* B renews, A does not. */
    assert_int_equal(sessions_renew(sessions, MOUNT_B, 1, ts_hold_mix(2), LEASE_MS - 1),
                     TS_SESSION_OK);
    assert_int_equal(sessions_expire(sessions, LEASE_MS - 1, &freed, &ended, &dropped), 0);
    assert_int_equal(ended, 0);
    assert_int_equal(sessions_expire(sessions, LEASE_MS, &freed, &ended, &dropped), 0);
    assert_int_equal(ended, 1);
    assert_int_equal(dropped, 2);
    assert_int_equal(freed.count, 1); /* 1; 2 is still B's */
    assert_int_equal(freed.inos[0], 1);
    assert_int_equal(sessions_open_count(sessions, 2), 1);
    assert_int_equal(sessions_count(sessions), 2); /* B and the anonymous holder */
    sessions_freed_clear(&freed);
    /* A comes back: unknown, it announces again. */
    assert_int_equal(sessions_renew(sessions, MOUNT_A, 2, 0, LEASE_MS), TS_SESSION_ANNOUNCE);
    /* Much later: B expired too; the anonymous holder never does. */
    assert_int_equal(sessions_expire(sessions, 100 * LEASE_MS, &freed, &ended, &dropped), 0);
    assert_int_equal(ended, 1);
    assert_int_equal(sessions_open_count(sessions, 2), 0);
    assert_int_equal(sessions_open_count(sessions, 3), 1);
    sessions_freed_clear(&freed);
    /* An unmount ends a session at once. */
    assert_int_equal(sessions_open(sessions, MOUNT_B, 4, 0), 0);
    assert_int_equal(sessions_end(sessions, MOUNT_B, &freed), 0);
    assert_int_equal(freed.count, 1);
    assert_int_equal(sessions_open_count(sessions, 4), 0);
    assert_int_equal(sessions_end(sessions, MOUNT_B, &freed), 0); /* twice: nothing */
    sessions_freed_clear(&freed);
    sessions_destroy(&sessions);
}

/* ---- the handlers, on a real store ------------------------------------- */

static int setup(void **state)
{
    return metafixture_setup(state, "test_sessions", TEST_NODE_TIMEOUT_MS, LEASE_MS);
}

static int teardown(void **state)
{
    return metafixture_teardown(state);
}

/* Calls op as mount (NO_MOUNT: an unnamed sender) with the encoded payload. */
static int call_as(struct metafixture *f, uint64_t mount, uint16_t op, size_t len)
{
    metafixture_send_as(f, mount);
    return metafixture_call(f, op, f->request, len);
}

#define CALL_AS(f, mount, op, name, message)                                                       \
    call_as((f), (mount), (op),                                                                    \
            metafixture_encoded_length(                                                            \
                ts_##name##_encode((message), (f)->request, METAFIXTURE_PAYLOAD_CAP)))

static uint64_t make_file(struct metafixture *f, const char *name)
{
    struct ts_mknod_req m = {
        .parent = TS_ROOT_INO, .name = ts_str_of(name), .mode = S_IFREG | 0644};
    struct ts_attr_rep reply;
    assert_int_equal(CALL_AS(f, MOUNT_A, TS_OP_MKNOD, mknod_req, &m), TS_OK);
    assert_int_equal(ts_attr_rep_decode(&reply, f->reply, f->reply_len), 0);
    return reply.attr.ino;
}

static int do_open(struct metafixture *f, uint64_t mount, uint64_t ino)
{
    struct ts_open_req m = {.ino = ino};
    return CALL_AS(f, mount, TS_OP_OPEN, open_req, &m);
}

static int do_release(struct metafixture *f, uint64_t mount, uint64_t ino)
{
    struct ts_release_req m = {.ino = ino};
    return CALL_AS(f, mount, TS_OP_RELEASE, release_req, &m);
}

static int do_unlink(struct metafixture *f, const char *name)
{
    struct ts_name_req m = {.parent = TS_ROOT_INO, .name = ts_str_of(name)};
    return CALL_AS(f, MOUNT_A, TS_OP_UNLINK, name_req, &m);
}

static bool exists(struct metafixture *f, uint64_t ino)
{
    struct ts_getattr_req m = {.ino = ino};
    int status = CALL_AS(f, NO_MOUNT, TS_OP_GETATTR, getattr_req, &m);
    assert_true(status == TS_OK || status == TS_ERR_NOENT);
    return status == TS_OK;
}

/* SESSION_RENEW as mount with the holds given; returns the reply's state. */
static uint32_t do_renew(struct metafixture *f, uint64_t mount, const uint64_t *inos,
                         const uint32_t *counts, size_t count)
{
    struct ts_session_renew_rep reply;
    uint64_t holds = 0;
    for (size_t i = 0; i < count; i++)
        holds += counts[i];
    struct ts_session_renew_req m = {.holds = holds,
                                     .fingerprint = fingerprint_of(inos, counts, count)};
    assert_int_equal(CALL_AS(f, mount, TS_OP_SESSION_RENEW, session_renew_req, &m), TS_OK);
    assert_int_equal(ts_session_renew_rep_decode(&reply, f->reply, f->reply_len), 0);
    assert_int_equal(reply.lease_ms, LEASE_MS);
    return reply.state;
}

/* SESSION_HOLDS (first) as mount; returns how many records came back lost. */
static uint32_t do_holds(struct metafixture *f, uint64_t mount, const uint64_t *inos,
                         const uint32_t *counts, size_t count, uint64_t *lost)
{
    uint8_t records[16 * ts_hold_rec_bytes];
    struct ts_session_holds_rep reply;
    struct ts_writer writer;
    struct ts_cursor cursor;
    assert_true(count <= 16);
    ts_writer_init(&writer, records, sizeof(records));
    for (size_t i = 0; i < count; i++) {
        struct ts_hold_rec record = {.ino = inos[i], .count = counts[i]};
        ts_hold_rec_write(&writer, &record);
    }
    struct ts_session_holds_req m = {
        .first = 1,
        .count = (uint32_t)count,
        .records = {(const char *)records, (uint32_t)(count * ts_hold_rec_bytes)}};
    assert_int_equal(CALL_AS(f, mount, TS_OP_SESSION_HOLDS, session_holds_req, &m), TS_OK);
    assert_int_equal(ts_session_holds_rep_decode(&reply, f->reply, f->reply_len), 0);
    ts_cursor_init(&cursor, reply.records.ptr, reply.records.len);
    for (uint32_t i = 0; i < reply.count; i++) {
        struct ts_hold_rec record;
        assert_int_equal(ts_hold_rec_read(&cursor, &record), 0);
        lost[i] = record.ino;
    }
    return reply.count;
}

/* Two mounts hold one unlinked file: it goes with the last of them. */
static void test_two_mounts_one_file(void **state)
{
    struct metafixture *f = *state;
    uint64_t file = make_file(f, "shared");
    assert_int_equal(do_open(f, MOUNT_A, file), TS_OK);
    assert_int_equal(do_open(f, MOUNT_B, file), TS_OK);
    assert_int_equal(do_unlink(f, "shared"), TS_OK);
    /* B's duplicate releases cannot take A's open. */
    assert_int_equal(do_release(f, MOUNT_B, file), TS_OK);
    assert_int_equal(do_release(f, MOUNT_B, file), TS_OK);
    assert_true(exists(f, file));
    assert_int_equal(do_release(f, MOUNT_A, file), TS_OK);
    assert_false(exists(f, file));
}

/* A killed mount stops renewing: its opens go, the file with them unless held. */
static void test_lease_expiry_reaps(void **state)
{
    struct metafixture *f = *state;
    uint64_t only_a = make_file(f, "a");
    uint64_t both = make_file(f, "b");
    int64_t now = util_monotonic_ms();
    assert_int_equal(do_open(f, MOUNT_A, only_a), TS_OK);
    assert_int_equal(do_open(f, MOUNT_A, both), TS_OK);
    assert_int_equal(do_open(f, MOUNT_B, both), TS_OK);
    assert_int_equal(do_unlink(f, "a"), TS_OK);
    assert_int_equal(do_unlink(f, "b"), TS_OK);
    int64_t a_last = util_monotonic_ms(); /* A's lease runs from its last open */
    /* Within the lease nothing happens. */
    service_tick_at(f->service, now + LEASE_MS / 2);
    assert_true(exists(f, only_a));
    /* B renews later than A's last open; at the tick A's lease is over, B's not. */
    util_sleep_ms(300);
    uint64_t b_inos[] = {both};
    uint32_t one[] = {1};
    int64_t b_renewed = util_monotonic_ms();
    assert_true(b_renewed - a_last >= 200);
    assert_int_equal(do_renew(f, MOUNT_B, b_inos, one, 1), TS_SESSION_OK);
    service_tick_at(f->service, b_renewed + LEASE_MS - 100);
    assert_false(exists(f, only_a));
    assert_true(exists(f, both));
    /* A's late release changes nothing; A must announce again. */
    assert_int_equal(do_release(f, MOUNT_A, both), TS_OK);
    assert_true(exists(f, both));
    assert_int_equal(do_renew(f, MOUNT_A, b_inos, one, 1), TS_SESSION_ANNOUNCE);
    uint64_t a_inos[] = {only_a, both};
    uint32_t ones[] = {1, 1};
    uint64_t lost[16];
    assert_int_equal(do_holds(f, MOUNT_A, a_inos, ones, 2, lost), 1);
    assert_int_equal(lost[0], only_a); /* deleted meanwhile: its I/O must fail */
    assert_int_equal(do_renew(f, MOUNT_A, b_inos, one, 1), TS_SESSION_OK);
    /* Both hold it now: it goes with the last release. */
    assert_int_equal(do_release(f, MOUNT_B, both), TS_OK);
    assert_true(exists(f, both));
    assert_int_equal(do_release(f, MOUNT_A, both), TS_OK);
    assert_false(exists(f, both));
}

/* A restart keeps orphans a lease; what a mount announces outlives it. */
static void test_restart_grace(void **state)
{
    struct metafixture *f = *state;
    uint64_t held = make_file(f, "held");
    uint64_t dropped = make_file(f, "dropped");
    uint64_t linked = make_file(f, "linked");
    assert_int_equal(do_open(f, MOUNT_A, held), TS_OK);
    assert_int_equal(do_open(f, MOUNT_A, held), TS_OK);
    assert_int_equal(do_open(f, MOUNT_A, dropped), TS_OK);
    assert_int_equal(do_open(f, MOUNT_B, linked), TS_OK);
    assert_int_equal(do_unlink(f, "held"), TS_OK);
    assert_int_equal(do_unlink(f, "dropped"), TS_OK);

    metafixture_restart(f);
    int64_t started = f->service->started_ms;
    service_tick_at(f->service, started + LEASE_MS / 2);
    /* The mounts' sessions start later than meta did, and outlive its grace. */
    util_sleep_ms(50);
    assert_true(exists(f, held));
    assert_true(exists(f, dropped));
    /* B, not announced yet, still holds "linked": an unlink in the grace keeps it. */
    assert_int_equal(do_unlink(f, "linked"), TS_OK);
    assert_true(exists(f, linked));
    /* A release from before the restart counts nothing down. */
    assert_int_equal(do_release(f, MOUNT_A, held), TS_OK);
    /* A announces (it had closed "dropped" while meta was down); B announces. */
    uint64_t a_inos[] = {held};
    uint32_t twice[] = {2};
    uint32_t once[] = {1};
    uint64_t lost[16];
    assert_int_equal(do_renew(f, MOUNT_A, a_inos, twice, 1), TS_SESSION_ANNOUNCE);
    assert_int_equal(do_holds(f, MOUNT_A, a_inos, twice, 1, lost), 0);
    assert_int_equal(do_renew(f, MOUNT_A, a_inos, twice, 1), TS_SESSION_OK);
    uint64_t b_inos[] = {linked};
    assert_int_equal(do_holds(f, MOUNT_B, b_inos, once, 1, lost), 0);
    /* The sweep a lease after the start: only what nobody announced goes. */
    service_tick_at(f->service, f->service->reap_after_ms);
    assert_true(exists(f, held));
    assert_false(exists(f, dropped));
    assert_true(exists(f, linked));
    assert_int_equal(do_release(f, MOUNT_A, held), TS_OK);
    assert_true(exists(f, held));
    assert_int_equal(do_release(f, MOUNT_A, held), TS_OK);
    assert_false(exists(f, held));
    /* An unmount ends B's session: its orphan goes at once. */
    struct ts_session_renew_req ending = {.ending = 1};
    assert_int_equal(CALL_AS(f, MOUNT_B, TS_OP_SESSION_RENEW, session_renew_req, &ending), TS_OK);
    assert_false(exists(f, linked));
}

static void test_session_requests_refused(void **state)
{
    struct metafixture *f = *state;
    struct ts_session_renew_req renew = {0};
    /* Only a named mount has a session. */
    assert_int_equal(CALL_AS(f, NO_MOUNT, TS_OP_SESSION_RENEW, session_renew_req, &renew),
                     TS_ERR_INVAL);
    /* A record count that does not match its bytes, an ino 0, a count 0. */
    uint8_t records[2 * ts_hold_rec_bytes] = {0};
    struct ts_session_holds_req holds = {
        .first = 1, .count = 2, .records = {(const char *)records, ts_hold_rec_bytes}};
    assert_int_equal(CALL_AS(f, MOUNT_A, TS_OP_SESSION_HOLDS, session_holds_req, &holds),
                     TS_ERR_BADMSG);
    holds.records.len = sizeof(records);
    assert_int_equal(CALL_AS(f, MOUNT_A, TS_OP_SESSION_HOLDS, session_holds_req, &holds),
                     TS_ERR_BADMSG);
    struct ts_hold_rec zero_count = {.ino = 5, .count = 0};
    struct ts_writer writer;
    ts_writer_init(&writer, records, sizeof(records));
    ts_hold_rec_write(&writer, &zero_count);
    holds.count = 1;
    holds.records.len = ts_hold_rec_bytes;
    assert_int_equal(CALL_AS(f, MOUNT_A, TS_OP_SESSION_HOLDS, session_holds_req, &holds),
                     TS_ERR_BADMSG);
    assert_int_equal(call_as(f, MOUNT_A, TS_OP_SESSION_HOLDS, 3), TS_ERR_BADMSG);
    assert_int_equal(call_as(f, MOUNT_A, TS_OP_SESSION_RENEW, 3), TS_ERR_BADMSG);
}

/*
 * A mount session id is its first key's (sessionkeys.h): another mount key
 * naming it in its routing id is refused everything meta's gate lets
 * through, its RELEASE of the owner's open and its SESSION_HOLDS included,
 * and the owner's opens stay counted; the owner and the other key's own id
 * go on working. Without keys (no CURVE) there is nothing to bind.
 */
static void test_session_ids_bound_to_keys(void **state)
{
    struct metafixture *f = *state;
    f->through_exports = true;
    f->key_user = "mount:alice";
    uint64_t ino = make_file(f, "hers");
    assert_int_equal(do_open(f, MOUNT_A, ino), TS_OK);
    assert_int_equal(do_renew(f, MOUNT_A, &ino, (const uint32_t[]){1}, 1), TS_SESSION_OK);

    f->key_user = "mount:mallory";
    assert_int_equal(do_release(f, MOUNT_A, ino), TS_ERR_PERM);
    assert_non_null(strstr(f->error_text, "belongs to another key"));
    struct ts_session_holds_req holds = {.first = 1};
    assert_int_equal(CALL_AS(f, MOUNT_A, TS_OP_SESSION_HOLDS, session_holds_req, &holds),
                     TS_ERR_PERM);
    struct ts_getattr_req getattr = {.ino = ino};
    assert_int_equal(CALL_AS(f, MOUNT_A, TS_OP_GETATTR, getattr_req, &getattr), TS_ERR_PERM);
    assert_int_equal(sessions_holds(f->service->sessions, MOUNT_A, ino), 1);
    /* Her own id works; the owner's goes on working. */
    assert_int_equal(CALL_AS(f, MOUNT_B, TS_OP_GETATTR, getattr_req, &getattr), TS_OK);
    f->key_user = "mount:alice";
    assert_int_equal(CALL_AS(f, MOUNT_B, TS_OP_GETATTR, getattr_req, &getattr), TS_ERR_PERM);
    assert_int_equal(do_release(f, MOUNT_A, ino), TS_OK);
    assert_int_equal(sessions_holds(f->service->sessions, MOUNT_A, ino), 0);
    /* Links without keys (and unnamed senders) bind nothing. */
    f->key_user = NULL;
    assert_int_equal(CALL_AS(f, MOUNT_A, TS_OP_GETATTR, getattr_req, &getattr), TS_OK);
    f->key_user = "admin:ops";
    assert_int_equal(CALL_AS(f, NO_MOUNT, TS_OP_GETATTR, getattr_req, &getattr), TS_OK);
    assert_int_equal(sessionkeys_count(f->service->session_keys), 2);
}

/* The table itself: a binding per id, room for SESSIONKEYS_MAX in use,
 * idle ids forgotten only when room is needed. */
static void test_sessionkeys_table(void **state)
{
    (void)state;
    char owner[128] = "";
    struct sessionkeys *keys = sessionkeys_new();
    assert_non_null(keys);
    for (uint64_t mount = 1; mount <= SESSIONKEYS_MAX; mount++)
        assert_int_equal(sessionkeys_claim(keys, mount, mount % 2 ? "mount:a" : "mount:b", 1000,
                                           owner, sizeof(owner)),
                         0);
    assert_int_equal(sessionkeys_count(keys), SESSIONKEYS_MAX);
    for (uint64_t mount = 1; mount <= SESSIONKEYS_MAX; mount += 997) {
        const char *theirs = mount % 2 ? "mount:a" : "mount:b";
        const char *other = mount % 2 ? "mount:b" : "mount:a";
        assert_int_equal(sessionkeys_claim(keys, mount, theirs, 2000, owner, sizeof(owner)), 0);
        assert_int_equal(sessionkeys_claim(keys, mount, other, 2000, owner, sizeof(owner)),
                         -EPERM);
        assert_string_equal(owner, theirs);
    }
    /* Full of ids in use: a new one waits; once they idle, it gets room. */
    assert_int_equal(
        sessionkeys_claim(keys, SESSIONKEYS_MAX + 1, "mount:c", 3000, owner, sizeof(owner)),
        -ENOSPC);
    /* Id 1 was used at 2000: kept; those idle since 1000 go. */
    int64_t later = 1000 + SESSIONKEYS_IDLE_MS + 1;
    assert_int_equal(
        sessionkeys_claim(keys, SESSIONKEYS_MAX + 1, "mount:c", later, owner, sizeof(owner)), 0);
    assert_int_equal(sessionkeys_claim(keys, 1, "mount:b", later, owner, sizeof(owner)), -EPERM);
    assert_int_equal(sessionkeys_claim(keys, 2, "mount:c", later, owner, sizeof(owner)), 0);
    assert_int_equal(sessionkeys_claim(keys, SESSIONKEYS_MAX + 1, "mount:a", later, owner,
                                       sizeof(owner)),
                     -EPERM);
    sessionkeys_destroy(&keys);
    assert_null(keys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_per_mount),
        cmocka_unit_test(test_renew_compares_fingerprint),
        cmocka_unit_test(test_unrenewed_sessions_expire),
        cmocka_unit_test_setup_teardown(test_two_mounts_one_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_expiry_reaps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_grace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_requests_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_ids_bound_to_keys, setup, teardown),
        cmocka_unit_test(test_sessionkeys_table),
    };
    return cmocka_run_group_tests_name("sessions", tests, NULL, NULL);
}
