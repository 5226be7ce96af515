/*
 * @file test_applylock.c
 * Unit tests of the rebalance apply lease: the pure logic of
 * meta/applylock.c at given times (take, renew, refuse another holder,
 * lapse, release, clamping), and APPLY_LOCK through meta's real handler
 * (metafixture.h): a second taker is told the first holder, a release
 * frees it, control bytes in a description are not passed on, a bad
 * action or token 0 is refused.
 */
#include "applylock.h"
#include "metafixture.h"
#include "proto.h"
#include "service.h"
#include "status.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define LEASE_MS 15000

static void test_take_renew_refuse(void **state)
{
    struct applylock lock = {0};
    (void)state;

    assert_true(applylock_take(&lock, 7, "alice@a pid 1", LEASE_MS, 10, 0, 1000, 500));
    assert_true(lock.held);
    assert_int_equal(lock.since_sec, 500);
    assert_int_equal(applylock_left_ms(&lock, 1000), LEASE_MS);
    /* Another token is refused and changes nothing. */
    assert_false(applylock_take(&lock, 8, "bob@b pid 2", LEASE_MS, 3, 0, 2000, 501));
    assert_string_equal(lock.holder, "alice@a pid 1");
    assert_int_equal(lock.token, 7);
    /* The holder renews: progress moves, since stays, the lease starts again. */
    assert_true(applylock_take(&lock, 7, "alice@a pid 1", LEASE_MS, 10, 4, 5000, 504));
    assert_int_equal(lock.steps_done, 4);
    assert_int_equal(lock.since_sec, 500);
    assert_int_equal(applylock_left_ms(&lock, 5000), LEASE_MS);
    /* Not renewed: still held a moment before the lease ends, free at its end. */
    assert_false(applylock_take(&lock, 8, "bob", LEASE_MS, 0, 0, 5000 + LEASE_MS - 1, 600));
    assert_true(applylock_take(&lock, 8, "bob", LEASE_MS, 0, 0, 5000 + LEASE_MS, 600));
    assert_string_equal(lock.holder, "bob");
    assert_int_equal(lock.since_sec, 600);
    /* The lapsed holder's renewal is refused now that bob holds it. */
    assert_false(applylock_take(&lock, 7, "alice", LEASE_MS, 10, 5, 5000 + LEASE_MS + 1, 601));
}

static void test_release_and_bounds(void **state)
{
    struct applylock lock = {0};
    (void)state;

    assert_false(applylock_take(&lock, 0, "zero token", LEASE_MS, 0, 0, 0, 0));
    assert_false(lock.held);
    assert_true(applylock_take(&lock, 3, "x", 1, 0, 0, 0, 0));
    assert_int_equal(lock.lease_ms, APPLYLOCK_MIN_LEASE_MS);
    assert_true(applylock_take(&lock, 3, "x", UINT32_MAX, 0, 0, 0, 0));
    assert_int_equal(lock.lease_ms, APPLYLOCK_MAX_LEASE_MS);
    assert_false(applylock_release(&lock, 4, 10));
    assert_true(lock.held);
    assert_true(applylock_release(&lock, 3, 10));
    assert_false(lock.held);
    assert_int_equal(applylock_left_ms(&lock, 10), 0);
    assert_false(applylock_release(&lock, 3, 11));
    /* A free lock is taken by a renewal too (meta restarted under a running apply). */
    assert_true(applylock_take(&lock, 3, "x", LEASE_MS, 9, 9, 20, 0));
}

/* APPLY_LOCK through the handler; the decoded reply into *reply (strings in f->reply). */
static int apply_lock(struct metafixture *f, uint32_t action, uint64_t token, const char *holder,
                      struct ts_apply_lock_rep *reply)
{
    struct ts_apply_lock_req request = {.action = action,
                                        .token = token,
                                        .lease_ms = LEASE_MS,
                                        .steps_total = 12,
                                        .steps_done = 3,
                                        .holder = ts_str_of(holder)};
    int status = CALL(f, TS_OP_APPLY_LOCK, apply_lock_req, &request);
    if (status == TS_OK)
        assert_int_equal(ts_apply_lock_rep_decode(reply, f->reply, f->reply_len), 0);
    return status;
}

static void test_handler(void **state)
{
    struct metafixture *f = *state;
    struct ts_apply_lock_rep reply;

    assert_int_equal(apply_lock(f, TS_APPLY_LOCK_QUERY, 0, "", &reply), TS_OK);
    assert_int_equal(reply.held, 0);
    assert_int_equal(apply_lock(f, TS_APPLY_LOCK_TAKE, 11, "alice@a\npid\t1", &reply), TS_OK);
    assert_int_equal(reply.granted, 1);
    assert_int_equal(reply.held, 1);
    assert_int_equal(reply.steps_total, 12);
    assert_true(reply.left_ms > 0 && reply.left_ms <= LEASE_MS);
    assert_true(reply.holder.len == strlen("alice@a?pid?1") &&
                memcmp(reply.holder.ptr, "alice@a?pid?1", reply.holder.len) == 0);
    /* A second taker learns who holds it. */
    assert_int_equal(apply_lock(f, TS_APPLY_LOCK_TAKE, 12, "bob@b pid 2", &reply), TS_OK);
    assert_int_equal(reply.granted, 0);
    assert_int_equal(reply.held, 1);
    assert_int_equal(reply.steps_done, 3);
    assert_memory_equal(reply.holder.ptr, "alice@a?pid?1", reply.holder.len);
    /* Only the holder releases. */
    assert_int_equal(apply_lock(f, TS_APPLY_LOCK_RELEASE, 12, "", &reply), TS_OK);
    assert_int_equal(reply.granted, 0);
    assert_int_equal(reply.held, 1);
    assert_int_equal(apply_lock(f, TS_APPLY_LOCK_RELEASE, 11, "", &reply), TS_OK);
    assert_int_equal(reply.granted, 1);
    assert_int_equal(reply.held, 0);
    assert_int_equal(apply_lock(f, TS_APPLY_LOCK_TAKE, 12, "bob@b pid 2", &reply), TS_OK);
    assert_int_equal(reply.granted, 1);
    /* Refusals. */
    assert_int_equal(apply_lock(f, 3, 12, "", &reply), TS_ERR_INVAL);
    assert_int_equal(apply_lock(f, TS_APPLY_LOCK_TAKE, 0, "", &reply), TS_ERR_INVAL);
    uint8_t bytes[3] = {1, 2, 3};
    assert_int_equal(metafixture_call(f, TS_OP_APPLY_LOCK, bytes, sizeof(bytes)), TS_ERR_BADMSG);
}

static int setup(void **state)
{
    return metafixture_setup(state, "test_applylock", 3000, 0);
}

static int teardown(void **state)
{
    return metafixture_teardown(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_take_renew_refuse),
        cmocka_unit_test(test_release_and_bounds),
        cmocka_unit_test_setup_teardown(test_handler, setup, teardown),
    };
    return cmocka_run_group_tests_name("applylock", tests, NULL, NULL);
}
